/* Plan files: the format's bytes against an independent encoder, round trips of every strategy
 * x storage x mode on the public models' records, every prefix and thousands of byte flips of
 * real files (a clear error or a valid, canonical file; never a crash), fingerprint mismatches
 * naming the model, policies, the writer's refusals, and host allocation failures. */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"
#include "support/tg_tools_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/crc32.h"
#include "planfile/plan_file_internal.h"
#include "tangram/model.h"
#include "tangram/plan_file.h"

static const char *const k_models[] = {"face_detection_short_range", "hand_landmark_lite", "pose_landmark_lite",
                                       "selfie_segmentation"};

/* The storages a plan file is tested with and the record CSV of each (texture arrays and 3D
 * textures have the same extents). */
static const struct {
  tg_storage storage;
  const char *suffix;
} k_storages[] = {{TG_STORAGE_BUFFER, "buffer"},
                  {TG_STORAGE_TEXTURE_2D, "tex2"},
                  {TG_STORAGE_TEXTURE_ARRAY, "tex3"},
                  {TG_STORAGE_TEXTURE_3D, "tex3"}};

static tg_record_set *load(const char *model, const char *suffix) {
  char rel[256];
  snprintf(rel, sizeof rel, "records/%s.%s.csv", model, suffix);
  return tg_test_load_records(rel);
}

static tg_plan_file_desc desc_for(const tg_record_set *set, const tg_plan *plan, tg_storage storage,
                                  tg_strategy strategy, uint64_t alignment, const char *source) {
  tg_plan_file_desc d = {
      .plan = plan, .records = set->records, .names = (const char *const *)set->names,
      .record_count = set->count, .dims = set->dims, .storage = storage, .precision = TG_PRECISION_FP32,
      .policy = TG_POLICY_SERIAL, .strategy = strategy, .alignment = alignment, .source = source
  };
  return d;
}

static void write_ok(const tg_plan_file_desc *d, uint8_t **data, size_t *size) {
  tg_error_info err = {{0}};
  tg_status st = tg_plan_file_write(d, NULL, (void **)data, size, &err);
  if (st != TG_OK) fail_msg("write: %s: %s", tg_status_name(st), err.message);
}

static tg_plan_file *parse_ok(const uint8_t *data, size_t size) {
  tg_plan_file *f = NULL;
  tg_error_info err = {{0}};
  tg_status st = tg_plan_file_parse(data, size, "test.tgplan", NULL, &f, &err);
  if (st != TG_OK) fail_msg("parse: %s: %s", tg_status_name(st), err.message);
  return f;
}

/* Everything written comes back: records, names, metadata, the plan's arrays. */
static void assert_same(const tg_plan_file_desc *d, const tg_plan_file *f) {
  /* A file with a section (in-place pairs, arenas or a cap, limits) is version 2, else 1. */
  int sections = d->plan->in_place_count > 0 || d->limits != NULL ||
                 (d->plan->mode == TG_MODE_OFFSETS && (d->plan->max_allocation > 0 || d->plan->arena_count > 1));
  assert_int_equal(f->version, sections ? TG_PLAN_FILE_VERSION : 1u);
  assert_int_equal(f->storage, d->storage);
  assert_int_equal(f->precision, d->precision);
  assert_int_equal(f->policy, d->policy);
  assert_int_equal(f->strategy, d->strategy);
  assert_int_equal(f->alignment, d->alignment);
  assert_int_equal(f->flags, d->flags);
  assert_string_equal(f->source, d->source ? d->source : "");
  const tg_record_set *s = f->records;
  assert_int_equal(s->dims, d->dims);
  assert_int_equal(s->count, d->record_count);
  for (size_t r = 0; r < s->count; ++r) {
    assert_memory_equal(&s->records[r].size, &d->records[r].size, sizeof(tg_extent));
    assert_int_equal(s->records[r].first_task, d->records[r].first_task);
    assert_int_equal(s->records[r].last_task, d->records[r].last_task);
    assert_int_equal(s->records[r].alignment, d->records[r].alignment);
    const char *want = d->names ? d->names[r] : NULL;
    if (want == NULL) assert_null(s->names[r]);
    else assert_string_equal(s->names[r], want);
  }
  const tg_plan *a = d->plan, *b = f->plan;
  assert_int_equal(b->mode, a->mode);
  assert_int_equal(b->dims, a->dims);
  assert_int_equal(b->strategy, a->strategy);
  assert_int_equal(b->fit, a->fit);
  assert_int_equal(b->record_count, a->record_count);
  assert_int_equal(b->object_count, a->object_count);
  assert_int_equal(b->total, a->total);
  if (a->mode == TG_MODE_OBJECTS) {
    if (a->record_count) assert_memory_equal(b->object_of, a->object_of, a->record_count * sizeof *a->object_of);
    if (a->object_count)
      assert_memory_equal(b->object_sizes, a->object_sizes, a->object_count * sizeof *a->object_sizes);
  } else if (a->record_count) {
    assert_memory_equal(b->offset_of, a->offset_of, a->record_count * sizeof *a->offset_of);
  }
  uint8_t fp[TG_FINGERPRINT_BYTES];
  assert_int_equal(tg_records_fingerprint(d->records, d->names, d->record_count, d->dims, fp), TG_OK);
  assert_memory_equal(fp, f->fingerprint, sizeof fp);
}

/* Writing what was read gives the same bytes: a file the reader accepts is in canonical form
 * (a version-1 file is rewritten as the current version: not compared). */
static void assert_rewrites_identically(const tg_plan_file *f, const uint8_t *data, size_t size) {
  if (f->version != TG_PLAN_FILE_VERSION) return;
  tg_plan_file_desc d;
  tg__plan_file_describe(f, &d);
  uint8_t *again = NULL;
  size_t again_size = 0;
  write_ok(&d, &again, &again_size);
  assert_int_equal(again_size, size);
  assert_memory_equal(again, data, size);
  tg_plan_file_free_data(NULL, again);
}

/* ---- the format, byte for byte ---- */


/* tests/planfile/golden_plan_file.py encodes this file from docs/plan-files.md alone
 * (`golden_plan_file.py 1`): a plan without sections is written, and read, as version 1. */
static const char k_golden_v1_hex[] =
    "895447504c414e0a010000000100000064010000000000000100000000000000060000000400000000000000000000000100"
    "000000000000010000000000000003000000000000000200000000000000960000000000000096452c6c815d9afab316c9a6"
    "32a94922a730ab74ab8161a7877dbd173433e5fc0b0000000000000074696e792e74666c6974656400000000000000010000"
    "0000000000010000000000000000000000000000000000000001000000010000000000000032000000000000000100000000"
    "000000010000000000000000000000000000000100000002000000ffffffff00000000640000000000000001000000000000"
    "00010000000000000000000000000000000200000003000000080000000000000061636f6e762f6f75740000000001000000"
    "0000000064000000000000000100000000000000010000000000000032000000000000000100000000000000010000000000"
    "000076bb69b8";

static void tiny(tg_usage_record rec[3], const char *names[3], tg_plan **plan) {
  rec[0] = (tg_usage_record){{100, 1, 1}, 0, 1, 0};
  rec[1] = (tg_usage_record){{50, 1, 1}, 1, 2, 0};
  rec[2] = (tg_usage_record){{100, 1, 1}, 2, 3, 0};
  names[0] = "a";
  names[1] = NULL;
  names[2] = "conv/out";
  assert_int_equal(tg_plan_create(TG_MODE_OBJECTS, 1, 3, 2, NULL, plan), TG_OK);
  (*plan)->strategy = TG_STRATEGY_GREEDY_BY_SIZE;
  (*plan)->object_of[0] = 0;
  (*plan)->object_of[1] = 1;
  (*plan)->object_of[2] = 0;
  (*plan)->object_sizes[0] = (tg_extent){100, 1, 1};
  (*plan)->object_sizes[1] = (tg_extent){50, 1, 1};
  (*plan)->total = 150;
}

static tg_plan_file_desc tiny_desc(const tg_usage_record *rec, const char **names, const tg_plan *plan) {
  tg_plan_file_desc d = {
      .plan = plan, .records = rec, .names = names, .record_count = 3, .dims = 1,
      .storage = TG_STORAGE_BUFFER, .precision = TG_PRECISION_FP16, .policy = TG_POLICY_SERIAL,
      .strategy = TG_STRATEGY_BEST, .alignment = 1, .flags = TG_PLAN_FILE_IO_PLANNED,
      .source = "tiny.tflite"
  };
  return d;
}

static void golden_bytes(void **state) {
  (void)state;
  tg_usage_record rec[3];
  const char *names[3];
  tg_plan *plan = NULL;
  tiny(rec, names, &plan);
  tg_plan_file_desc d = tiny_desc(rec, names, plan);
  uint8_t *data = NULL;
  size_t size = 0;
  write_ok(&d, &data, &size);
  char *hex = malloc(2 * size + 1);
  assert_non_null(hex);
  for (size_t i = 0; i < size; ++i) snprintf(hex + 2 * i, 3, "%02x", data[i]);
  assert_string_equal(hex, k_golden_v1_hex); /* no section: written as version 1 */
  free(hex);
  tg_plan_file *f = parse_ok(data, size);
  assert_same(&d, f);
  assert_null(f->records->names[1]);
  tg_plan_file_destroy(f);
  tg_plan_file_free_data(NULL, data);
  tg_plan_destroy(plan);
}

/* A version-1 file loads: the same records and plan, version 1. */
static void version_1_file_loads(void **state) {
  (void)state;
  size_t size = strlen(k_golden_v1_hex) / 2;
  uint8_t *data = malloc(size);
  assert_non_null(data);
  for (size_t i = 0; i < size; ++i) {
    unsigned v;
    assert_int_equal(sscanf(k_golden_v1_hex + 2 * i, "%2x", &v), 1);
    data[i] = (uint8_t)v;
  }
  assert_int_equal(data[TG__PF_VERSION], 1);
  tg_plan_file *f = parse_ok(data, size);
  assert_int_equal(f->version, 1);
  assert_int_equal(f->has_limits, 0);
  assert_int_equal(f->plan->max_allocation, 0);
  assert_int_equal(f->plan->total, 150);
  assert_int_equal(f->plan->object_of[2], 0);
  assert_string_equal(f->records->names[2], "conv/out");
  tg_plan_file_destroy(f);
  free(data);
}

/* Offsets plans of several arenas, with their cap and the limits they were made under, come
 * back as written; the sections are checked (an unknown tag, a wrong length). */
static void arenas_and_limits_round_trip(void **state) {
  (void)state;
  static const char *const models[] = {"pose_landmark_lite", "selfie_segmentation", "hand_landmark_lite"};
  tg_device_limits limits = tg_device_limits_default();
  limits.max_texture_2d_width = 64;
  for (size_t m = 0; m < 3; ++m) {
    tg_record_set *set = load(models[m], "buffer");
    uint64_t largest = 0;
    for (size_t r = 0; r < set->count; ++r)
      if (set->records[r].size.w > largest) largest = set->records[r].size.w;
    for (int with_limits = 0; with_limits < 2; ++with_limits) {
      tg_plan *plan = NULL;
      tg_bounds b;
      assert_int_equal(tg_bounds_compute(set->records, set->count, 1, NULL, &b), TG_OK);
      const uint64_t cap = 2 * largest < b.peak_live ? 2 * largest : largest;
      tg_plan_options o = {.mode = TG_MODE_OFFSETS, .strategy = TG_STRATEGY_GREEDY_BY_SIZE, .alignment = 256,
                           .max_allocation = cap};
      assert_int_equal(tg_plan_compute(set->records, set->count, 1, &o, NULL, &plan), TG_OK);
      assert_true(plan->arena_count > 1);
      tg_plan_file_desc d = desc_for(set, plan, TG_STORAGE_BUFFER, TG_STRATEGY_GREEDY_BY_SIZE, 256, models[m]);
      d.limits = with_limits ? &limits : NULL;
      uint8_t *data = NULL;
      size_t size = 0;
      write_ok(&d, &data, &size);
      tg_plan_file *f = parse_ok(data, size);
      assert_same(&d, f);
      assert_int_equal(f->plan->max_allocation, cap);
      assert_int_equal(f->plan->arena_count, plan->arena_count);
      assert_memory_equal(f->plan->arena_sizes, plan->arena_sizes, plan->arena_count * sizeof *plan->arena_sizes);
      assert_memory_equal(f->plan->arena_of, plan->arena_of, set->count * sizeof *plan->arena_of);
      assert_int_equal(f->has_limits, with_limits);
      if (with_limits) assert_memory_equal(&f->limits, &limits, sizeof limits);
      assert_rewrites_identically(f, data, size);
      tg_plan_file_destroy(f);
      /* The first section's tag changed: refused, naming it. */
      size_t sec = size - 4 - (with_limits ? 12 + 64 : 0) - (12 + 16 + 8 * plan->arena_count + 4 * set->count);
      assert_memory_equal(data + sec, "ARNA", 4);
      memcpy(data + sec, "XYZW", 4);
      tg__plan_file_reseal(data, size);
      f = NULL;
      tg_error_info err = {{0}};
      assert_int_equal(tg_plan_file_parse(data, size, "test.tgplan", NULL, &f, &err), TG_ERROR_PARSE);
      assert_non_null(strstr(err.message, "unknown section 'XYZW'"));
      memcpy(data + sec, "ARNA", 4);
      /* An arena over the cap: the validator refuses the plan. */
      data[sec + 12] = 1, data[sec + 13] = 0, data[sec + 14] = 0, data[sec + 15] = 0;
      for (int i = 4; i < 8; ++i) data[sec + 12 + i] = 0;
      tg__plan_file_reseal(data, size);
      assert_int_equal(tg_plan_file_parse(data, size, "test.tgplan", NULL, &f, &err), TG_ERROR_INVALID_PLAN);
      assert_non_null(strstr(err.message, "exceed the allocation cap 1"));
      tg_plan_file_free_data(NULL, data);
      tg_plan_destroy(plan);
    }
    tg_record_set_destroy(set);
  }
}

/* ---- round trips ---- */

static void round_trip_every_strategy_storage_mode(void **state) {
  (void)state;
  size_t trips = 0;
  for (size_t m = 0; m < sizeof k_models / sizeof k_models[0]; ++m)
    for (size_t s = 0; s < sizeof k_storages / sizeof k_storages[0]; ++s) {
      tg_record_set *set = load(k_models[m], k_storages[s].suffix);
      for (int mode = 0; mode <= 1; ++mode) {
        if (mode == TG_MODE_OFFSETS && set->dims != 1) continue;
        for (int sg = 0; sg < TG_STRATEGY_COUNT; ++sg) {
          if (!tg_strategy_applies((tg_strategy)sg, (tg_mode)mode, set->dims)) continue;
          int fits = mode == TG_MODE_OFFSETS && sg == TG_STRATEGY_GREEDY_IN_ORDER ? 3 : 1;
          for (int fit = 0; fit < fits; ++fit) {
            tg_plan_options o = {
                .mode = (tg_mode)mode, .strategy = (tg_strategy)sg, .fit = (tg_fit)fit,
                .alignment = mode == TG_MODE_OFFSETS ? (uint64_t)64 << (trips % 3) : 0
            };
            tg_plan *plan = NULL;
            assert_int_equal(tg_plan_compute(set->records, set->count, set->dims, &o, NULL, &plan), TG_OK);
            tg_plan_file_desc d = desc_for(set, plan, k_storages[s].storage, (tg_strategy)sg, o.alignment, k_models[m]);
            d.precision = (tg_precision)(trips % 2);
            d.policy = (tg_policy)(trips % TG_POLICY_COUNT);
            d.flags = trips % 2 ? TG_PLAN_FILE_IO_PLANNED : 0;
            uint8_t *data = NULL;
            size_t size = 0;
            write_ok(&d, &data, &size);
            tg_plan_file *f = parse_ok(data, size);
            assert_same(&d, f);
            tg_test_assert_valid(f->records->records, f->records->count, f->records->dims, f->plan, f->alignment, NULL);
            tg_error_info err = {{0}};
            if (tg_plan_file_match(f, set->records, (const char *const *)set->names, set->count, set->dims, NULL, NULL,
                                   &err) != TG_OK)
              fail_msg("match: %s", err.message);
            assert_rewrites_identically(f, data, size);
            tg_plan_file_destroy(f);
            tg_plan_file_free_data(NULL, data);
            tg_plan_destroy(plan);
            ++trips;
          }
        }
      }
      tg_record_set_destroy(set);
    }
  /* 4 models: buffers 9 objects strategies (the first six, best, beam, greedy-coloring) + 11
   * offsets (naive, greedy-in-order x 3 fits, by-breadth, by-size, best, beam, allocation-tree,
   * greedy-by-conflicts, hill-climb); three texture storages 8 objects strategies each (no
   * greedy-coloring: 1D only). */
  assert_int_equal(trips, 4 * (9 + 11 + 3 * 8));
  print_message("%zu round trips, every plan identical and valid after reading\n", trips);
}

/* Empty plans, 3D objects and records without names survive too. */
static void round_trip_edge_cases(void **state) {
  (void)state;
  for (int mode = 0; mode <= 1; ++mode) {
    tg_plan *plan = NULL;
    assert_int_equal(tg_plan_compute(NULL, 0, 1, &(tg_plan_options){.mode = (tg_mode)mode}, NULL, &plan), TG_OK);
    tg_plan_file_desc d = {.plan = plan, .dims = 1, .strategy = TG_STRATEGY_NAIVE};
    uint8_t *data = NULL;
    size_t size = 0;
    write_ok(&d, &data, &size);
    assert_int_equal(size, TG__PLAN_FILE_HEADER_BYTES + TG__PLAN_FILE_CHECKSUM_BYTES);
    tg_plan_file *f = parse_ok(data, size);
    assert_same(&d, f);
    tg_plan_file_destroy(f);
    tg_plan_file_free_data(NULL, data);
    tg_plan_destroy(plan);
  }
  tg_test_rng rng = {42};
  tg_usage_record rec[200];
  tg_test_random_spec spec = {3, 200, 60, 10, 40, 0, 0};
  tg_test_random_records(&rng, &spec, rec);
  tg_plan *plan = NULL;
  assert_int_equal(
      tg_plan_compute(rec, 200, 3, &(tg_plan_options){.strategy = TG_STRATEGY_GREEDY_BY_SIZE}, NULL, &plan), TG_OK);
  tg_plan_file_desc d = {
      .plan = plan, .records = rec, .record_count = 200, .dims = 3, .storage = TG_STORAGE_TEXTURE_3D,
      .strategy = TG_STRATEGY_GREEDY_BY_SIZE
  };
  uint8_t *data = NULL;
  size_t size = 0;
  write_ok(&d, &data, &size);
  tg_plan_file *f = parse_ok(data, size);
  assert_same(&d, f);
  for (size_t r = 0; r < 200; ++r) assert_null(f->records->names[r]);
  tg_plan_file_destroy(f);
  tg_plan_file_free_data(NULL, data);
  tg_plan_destroy(plan);
}

/* ---- damaged files ---- */

typedef struct sample {
  uint8_t *data;
  size_t size;
} sample;

/* Real files: the tiny golden one, hand's 3D objects plan, pose's buffer offsets plan
 * (alignment 256), face's buffer objects plan. */
#define SAMPLES 4
static size_t samples(sample out[SAMPLES]) {
  tg_usage_record rec[3];
  const char *names[3];
  tg_plan *plan = NULL;
  tiny(rec, names, &plan);
  tg_plan_file_desc d = tiny_desc(rec, names, plan);
  write_ok(&d, &out[0].data, &out[0].size);
  tg_plan_destroy(plan);
  struct {
    const char *model, *suffix;
    tg_storage storage;
    tg_mode mode;
    uint64_t alignment;
  } k[] = {{"hand_landmark_lite", "tex3", TG_STORAGE_TEXTURE_3D, TG_MODE_OBJECTS, 0},
           {"pose_landmark_lite", "buffer", TG_STORAGE_BUFFER, TG_MODE_OFFSETS, 256},
           {"face_detection_short_range", "buffer", TG_STORAGE_BUFFER, TG_MODE_OBJECTS, 0}};
  for (size_t i = 0; i < 3; ++i) {
    tg_record_set *set = load(k[i].model, k[i].suffix);
    tg_plan_options o = {.mode = k[i].mode, .strategy = TG_STRATEGY_BEST, .alignment = k[i].alignment};
    assert_int_equal(tg_plan_compute(set->records, set->count, set->dims, &o, NULL, &plan), TG_OK);
    d = desc_for(set, plan, k[i].storage, TG_STRATEGY_BEST, k[i].alignment, k[i].model);
    write_ok(&d, &out[1 + i].data, &out[1 + i].size);
    tg_plan_destroy(plan);
    tg_record_set_destroy(set);
  }
  return SAMPLES;
}

/* A refusal: the status of a bad file, a message naming the file, no output. */
static void assert_refused(tg_status st, const tg_plan_file *f, const tg_error_info *err, int allow_invalid_plan) {
  if (!(st == TG_ERROR_PARSE || (allow_invalid_plan && st == TG_ERROR_INVALID_PLAN)))
    fail_msg("status %s: %s", tg_status_name(st), err->message);
  assert_null(f);
  if (strncmp(err->message, "test.tgplan: ", 13) != 0 || strlen(err->message) < 25)
    fail_msg("message does not name the file and the problem: '%s'", err->message);
}

static void every_prefix_is_refused(void **state) {
  (void)state;
  sample s[SAMPLES];
  size_t n = samples(s), checked = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i == 2) { /* pose's 24 KB: the others cover every section at a third of the cost */
      tg_plan_file_free_data(NULL, s[i].data);
      continue;
    }
    for (size_t len = 0; len < s[i].size; ++len) {
      tg_plan_file *f = NULL;
      tg_error_info err = {{0}};
      /* On the heap at exactly `len` bytes, so ASan sees any read past the end. */
      uint8_t *prefix = malloc(len ? len : 1);
      assert_non_null(prefix);
      memcpy(prefix, s[i].data, len);
      tg_status st = tg_plan_file_parse(prefix, len, "test.tgplan", NULL, &f, &err);
      assert_refused(st, f, &err, 0);
      if (len >= TG__PLAN_FILE_HEADER_BYTES + TG__PLAN_FILE_CHECKSUM_BYTES && strstr(err.message, "truncated") == NULL) fail_msg("prefix %zu: '%s'", len, err.message);
      /* The same prefix with its length field and checksum made consistent: the sections'
       * own bounds must catch it. */
      tg__plan_file_reseal(prefix, len);
      memset(&err, 0, sizeof err);
      st = tg_plan_file_parse(prefix, len, "test.tgplan", NULL, &f, &err);
      assert_refused(st, f, &err, 0);
      free(prefix);
      checked += 2;
    }
    tg_plan_file_free_data(NULL, s[i].data);
  }
  print_message("%zu prefixes refused with a message\n", checked);
}

/* Random byte changes: as they are (the checksum catches every one), and resealed (length,
 * fingerprint and checksum recomputed, so that the field checks, the fingerprint or the
 * validator must catch them). A resealed file the reader accepts must be valid and canonical. */
static void byte_flips_are_refused_or_valid(void **state) {
  (void)state;
  sample s[SAMPLES];
  size_t n = samples(s);
  size_t rounds = tg_test_quick() ? 2000 : 10000;
  size_t raw_refused = 0, accepted = 0, parse_refused = 0, invalid_refused = 0;
  tg_test_rng rng = {7};
  for (size_t round = 0; round < rounds; ++round) {
    const sample *base = &s[round % n];
    uint8_t *d = malloc(base->size);
    assert_non_null(d);
    memcpy(d, base->data, base->size);
    size_t flips = (size_t)tg_test_rng_range(&rng, 1, 4);
    for (size_t k = 0; k < flips; ++k) {
      /* Half the changes hit the header, where most fields are. */
      size_t at = tg_test_rng_range(&rng, 0, 1) ? (size_t)tg_test_rng_range(&rng, 0, 127)
                                                 : (size_t)tg_test_rng_range(&rng, 0, base->size - 1);
      uint8_t x = (uint8_t)tg_test_rng_range(&rng, 1, 255);
      if (tg_test_rng_range(&rng, 0, 3) == 0) x = (uint8_t)(1u << tg_test_rng_range(&rng, 0, 7));
      d[at] ^= x;
    }
    int changed = memcmp(d, base->data, base->size) != 0;
    tg_plan_file *f = NULL;
    tg_error_info err = {{0}};
    tg_status st = tg_plan_file_parse(d, base->size, "test.tgplan", NULL, &f, &err);
    if (changed) {
      assert_refused(st, f, &err, 0);
      ++raw_refused;
    } else {
      assert_int_equal(st, TG_OK);
      tg_plan_file_destroy(f);
    }
    tg__plan_file_reseal(d, base->size);
    f = NULL;
    memset(&err, 0, sizeof err);
    st = tg_plan_file_parse(d, base->size, "test.tgplan", NULL, &f, &err);
    if (st == TG_OK) {
      tg_test_assert_valid(f->records->records, f->records->count, f->records->dims, f->plan, f->alignment, NULL);
      assert_rewrites_identically(f, d, base->size);
      tg_plan_file_destroy(f);
      ++accepted;
    } else {
      assert_refused(st, f, &err, 1);
      if (st == TG_ERROR_PARSE) ++parse_refused;
      else ++invalid_refused;
    }
    free(d);
  }
  for (size_t i = 0; i < n; ++i) tg_plan_file_free_data(NULL, s[i].data);
  print_message("%zu changed files: %zu refused as they were; resealed: %zu refused as malformed, %zu as invalid "
                "plans, %zu accepted (valid and canonical)\n",
                rounds, raw_refused, parse_refused, invalid_refused, accepted);
  /* The resealed changes reached every layer of checks. */
  assert_true(raw_refused >= rounds - 10);
  assert_true(parse_refused > rounds / 4);
  assert_true(invalid_refused > 0);
  assert_true(accepted > 0);
}

/* Specific damage, each refused with its own message. */
static void damaged_fields_named(void **state) {
  (void)state;
  sample s[SAMPLES];
  samples(s);
  const sample *pose = &s[2];
  struct {
    size_t at;
    uint32_t value;
    int width; /* 4 or 8 bytes */
    const char *message;
  } cases[] = {
      {TG__PF_VERSION, 3, 4, "format version 3; this library reads versions 1 and 2"},
      {TG__PF_VERSION, 2, 4, "version 2 without sections"},
      {TG__PF_DIMS, 4, 4, "dims 4 is not 1, 2 or 3"},
      {TG__PF_MODE, 7, 4, "mode 7 is not objects (0) or offsets (1)"},
      {TG__PF_STORAGE, 2, 4, "storage texture_2d gives 2D records, not 1D"},
      {TG__PF_PRECISION, 9, 4, "precision 9"},
      {TG__PF_POLICY, 3, 4, "policy 3 is not a policy"},
      {TG__PF_FLAGS, 6, 4, "flags 0x6 has unknown bits"},
      {TG__PF_RECORD_COUNT, 125, 8, "record 124: reserved field is"},
      {TG__PF_RECORD_COUNT, 10000, 8, "record table of 10000 records needs 48 bytes each, only"},
      {TG__PF_RECORD_COUNT, 0xFFFFFFFFu, 8, "4294967295 records exceed the limit"},
      {TG__PF_OBJECT_COUNT, 2, 8, "an offsets plan of 124 records has 2 objects"},
      {TG__PF_SOURCE_BYTES, 100000, 4, "source name of 100000 bytes exceeds 4096"},
      {TG__PF_TOTAL, 5, 8, "the plan is invalid for its records"},
      {TG__PF_ALIGNMENT, 1u << 20, 8, "the plan is invalid for its records"},
      {TG__PF_RESERVED, 1, 4, "reserved field is 1"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    uint8_t *d = malloc(pose->size);
    assert_non_null(d);
    memcpy(d, pose->data, pose->size);
    for (int b = 0; b < cases[i].width; ++b) d[cases[i].at + (size_t)b] = b < 4 ? (uint8_t)(cases[i].value >> (8 * b)) : 0;
    tg__plan_file_reseal(d, pose->size);
    tg_plan_file *f = NULL;
    tg_error_info err = {{0}};
    tg_status st = tg_plan_file_parse(d, pose->size, "test.tgplan", NULL, &f, &err);
    assert_refused(st, f, &err, 1);
    if (strstr(err.message, cases[i].message) == NULL)
      fail_msg("case %zu: '%s' lacks '%s'", i, err.message, cases[i].message);
    free(d);
  }
  /* Not resealed: the integrity checks speak first. */
  uint8_t *d = malloc(pose->size + 1);
  assert_non_null(d);
  memcpy(d, pose->data, pose->size);
  tg_plan_file *f = NULL;
  tg_error_info err = {{0}};
  d[pose->size - 100] ^= 1;
  assert_int_equal(tg_plan_file_parse(d, pose->size, "test.tgplan", NULL, &f, &err), TG_ERROR_PARSE);
  assert_non_null(strstr(err.message, "checksum mismatch"));
  d[pose->size - 100] ^= 1;
  d[pose->size] = 0;
  assert_int_equal(tg_plan_file_parse(d, pose->size + 1, "test.tgplan", NULL, &f, &err), TG_ERROR_PARSE);
  assert_non_null(strstr(err.message, "trailing data"));
  d[0] = 'X';
  assert_int_equal(tg_plan_file_parse(d, pose->size, "test.tgplan", NULL, &f, &err), TG_ERROR_PARSE);
  assert_non_null(strstr(err.message, "not a Tangram plan file"));
  /* A record edited and resealed: its own check, or the fingerprint, names it. */
  memcpy(d, pose->data, pose->size);
  size_t rec5 = TG__PLAN_FILE_HEADER_BYTES + strlen("pose_landmark_lite") + 5 * TG__PLAN_FILE_RECORD_BYTES;
  d[rec5 + 32] = 0xFF; /* first task of record 5 after its last */
  tg__plan_file_reseal(d, pose->size);
  assert_int_equal(tg_plan_file_parse(d, pose->size, "test.tgplan", NULL, &f, &err), TG_ERROR_PARSE);
  assert_non_null(strstr(err.message, "record 5: first task 255 is after last task"));
  memcpy(d, pose->data, pose->size);
  d[rec5] ^= 0x40; /* size of record 5, fingerprint left as it was */
  uint32_t crc = tg__crc32(d, pose->size - 4);
  for (int b = 0; b < 4; ++b) d[pose->size - 4 + (size_t)b] = (uint8_t)(crc >> (8 * b));
  assert_int_equal(tg_plan_file_parse(d, pose->size, "test.tgplan", NULL, &f, &err), TG_ERROR_PARSE);
  assert_non_null(strstr(err.message, "fingerprint does not match the file's records"));
  free(d);
  for (size_t i = 0; i < SAMPLES; ++i) tg_plan_file_free_data(NULL, s[i].data);
}

/* ---- matching a model ---- */

static void fingerprint_mismatch_names_the_model(void **state) {
  (void)state;
  tg_record_set *pose = load("pose_landmark_lite", "buffer");
  tg_record_set *hand = load("hand_landmark_lite", "buffer");
  tg_plan *plan = NULL;
  tg_plan_options o = {.strategy = TG_STRATEGY_BEST};
  assert_int_equal(tg_plan_compute(pose->records, pose->count, 1, &o, NULL, &plan), TG_OK);
  tg_plan_file_desc d = desc_for(pose, plan, TG_STORAGE_BUFFER, TG_STRATEGY_BEST, 0, "models/pose_landmark_lite.tflite");
  uint8_t *data = NULL;
  size_t size = 0;
  write_ok(&d, &data, &size);
  tg_plan_file *f = parse_ok(data, size);
  tg_error_info err = {{0}};
  tg_status st = tg_plan_file_match(f, hand->records, (const char *const *)hand->names, hand->count, 1, NULL, NULL, &err);
  assert_int_equal(st, TG_ERROR_INVALID_PLAN);
  print_message("%s\n", err.message);
  tg_expect_all(err.message, "made for 'models/pose_landmark_lite.tflite' (124 records, buffer fp32",
                "not for these 61 records", "first difference at record 0", NULL);
  /* One byte more in one record, a renamed record, or the names left out: refused too. */
  tg_usage_record *copy = malloc(pose->count * sizeof *copy);
  assert_non_null(copy);
  memcpy(copy, pose->records, pose->count * sizeof *copy);
  copy[17].size.w += 1;
  st = tg_plan_file_match(f, copy, (const char *const *)pose->names, pose->count, 1, NULL, NULL, &err);
  assert_int_equal(st, TG_ERROR_INVALID_PLAN);
  assert_non_null(strstr(err.message, "first difference at record 17"));
  copy[17].size.w -= 1;
  assert_int_equal(tg_plan_file_match(f, copy, (const char *const *)pose->names, pose->count, 1, NULL, NULL, &err), TG_OK);
  st = tg_plan_file_match(f, copy, NULL, pose->count, 1, NULL, NULL, &err);
  assert_int_equal(st, TG_ERROR_INVALID_PLAN);
  assert_non_null(strstr(err.message, "'(unnamed)'"));
  char *saved = pose->names[3];
  pose->names[3] = (char *)"renamed";
  st = tg_plan_file_match(f, pose->records, (const char *const *)pose->names, pose->count, 1, NULL, NULL, &err);
  pose->names[3] = saved;
  assert_int_equal(st, TG_ERROR_INVALID_PLAN);
  assert_non_null(strstr(err.message, "first difference at record 3"));
  st = tg_plan_file_match(f, pose->records, (const char *const *)pose->names, pose->count - 1, 1, NULL, NULL, &err);
  assert_int_equal(st, TG_ERROR_INVALID_PLAN);
  assert_non_null(strstr(err.message, "not for these 123 records"));
  /* Another dimensionality. */
  tg_record_set *tex = load("pose_landmark_lite", "tex2");
  st = tg_plan_file_match(f, tex->records, (const char *const *)tex->names, tex->count, 2, NULL, NULL, &err);
  assert_int_equal(st, TG_ERROR_INVALID_PLAN);
  assert_non_null(strstr(err.message, "these records are 2D, the plan's 1D"));
  free(copy);
  tg_record_set_destroy(tex);
  tg_plan_file_destroy(f);
  tg_plan_file_free_data(NULL, data);
  tg_plan_destroy(plan);
  tg_record_set_destroy(hand);
  tg_record_set_destroy(pose);
}

/* A plan made under the parallel-safe policy of a real model's graph: matching with that
 * relation passes; matching with a relation that lets nothing share refuses it. */
static void policies_on_a_model(void **state) {
  (void)state;
  const char *path = tg_test_cached_model("selfie_segmentation.tflite");
  tg_model *model = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(tg_model_load(path, NULL, &model, &err), TG_OK);
  tg_lifetimes *lt = NULL;
  tg_lifetime_options lo = {0};
  assert_int_equal(tg_graph_compute_lifetimes(model->graph, &lo, NULL, &lt, &err), TG_OK);
  tg_device_limits limits = tg_device_limits_default();
  tg_model_records *mr = NULL;
  assert_int_equal(tg_model_records_create(model->graph, lt, TG_STORAGE_TEXTURE_2D, TG_PRECISION_FP16, &limits, NULL,
                                           &mr, &err),
                   TG_OK);
  tg_schedule *sched = NULL;
  assert_int_equal(tg_schedule_create(model->graph, NULL, NULL, &sched, &err), TG_OK);
  const tg_record_set *set = mr->records;
  for (int pol = 0; pol < TG_POLICY_COUNT; ++pol) {
    tg_policy_relation *rel = NULL;
    assert_int_equal(tg_policy_relation_create(sched, (tg_policy)pol, mr->tensor_of, set->count, NULL, &rel), TG_OK);
    const tg_share_relation *relation = tg_policy_relation_get(rel);
    tg_plan_options o = {.strategy = TG_STRATEGY_BEST, .relation = relation};
    tg_plan *plan = NULL;
    assert_int_equal(tg_plan_compute(set->records, set->count, set->dims, &o, NULL, &plan), TG_OK);
    tg_plan_file_desc d = desc_for(set, plan, TG_STORAGE_TEXTURE_2D, TG_STRATEGY_BEST, 0, path);
    d.precision = TG_PRECISION_FP16;
    d.policy = (tg_policy)pol;
    uint8_t *data = NULL;
    size_t size = 0;
    write_ok(&d, &data, &size);
    tg_plan_file *f = parse_ok(data, size);
    assert_same(&d, f);
    if (tg_plan_file_match(f, set->records, (const char *const *)set->names, set->count, set->dims, relation, NULL,
                           &err) != TG_OK)
      fail_msg("%s: %s", tg_policy_name((tg_policy)pol), err.message);
    tg_share_relation never = {tg_test_share_never, NULL, NULL, 0, NULL};
    assert_int_equal(tg_plan_file_match(f, set->records, (const char *const *)set->names, set->count, set->dims,
                                        &never, NULL, &err),
                     TG_ERROR_INVALID_PLAN);
    assert_non_null(strstr(err.message, "breaks the reuse rule given here"));
    tg_plan_file_destroy(f);
    tg_plan_file_free_data(NULL, data);
    tg_plan_destroy(plan);
    tg_policy_relation_destroy(rel);
  }
  tg_schedule_destroy(sched);
  tg_model_records_destroy(mr);
  tg_lifetimes_destroy(lt);
  tg_model_destroy(model);
}

/* ---- the writer's refusals ---- */

static void writer_refuses_bad_descriptions(void **state) {
  (void)state;
  tg_usage_record rec[3];
  const char *names[3];
  tg_plan *plan = NULL;
  tiny(rec, names, &plan);
  uint8_t *data = (uint8_t *)1;
  size_t size = 1;
  tg_error_info err = {{0}};
  struct {
    tg_status status;
    const char *message;
  } want[] = {
      {TG_ERROR_INVALID_PLAN, "not writing an invalid plan"},
      {TG_ERROR_INVALID_ARGUMENT, "the plan has 3 records, the description 2"},
      {TG_ERROR_INVALID_ARGUMENT, "storage texture_2d gives 2D records, not 1D"},
      {TG_ERROR_INVALID_ARGUMENT, "out of range"},
      {TG_ERROR_INVALID_ARGUMENT, "flags 0x80 has unknown bits"},
      {TG_ERROR_INVALID_ARGUMENT, "record 1: first task 3 is after last task 2"},
      {TG_ERROR_INVALID_ARGUMENT, "the source name has 5000 bytes, more than 4096"},
      {TG_ERROR_INVALID_ARGUMENT, "the plan is 1D, the records 2D"},
  };
  char long_source[5001];
  memset(long_source, 'm', 5000);
  long_source[5000] = '\0';
  for (size_t i = 0; i < sizeof want / sizeof want[0]; ++i) {
    tg_plan_file_desc d = tiny_desc(rec, names, plan);
    tg_usage_record bad[3];
    memcpy(bad, rec, sizeof bad);
    switch (i) {
      case 0: plan->object_of[1] = 0; break; /* records 0 and 1 overlap at task 1 */
      case 1: d.record_count = 2; break;
      case 2: d.storage = TG_STORAGE_TEXTURE_2D; break;
      case 3: d.policy = (tg_policy)7; break;
      case 4: d.flags = 0x80; break;
      case 5: bad[1].first_task = 3; d.records = bad; break;
      case 6: d.source = long_source; break;
      case 7: d.dims = 2; break;
    }
    tg_status st = tg_plan_file_write(&d, NULL, (void **)&data, &size, &err);
    plan->object_of[1] = 1;
    assert_int_equal(st, want[i].status);
    assert_null(data);
    assert_int_equal(size, 0);
    if (strstr(err.message, want[i].message) == NULL) fail_msg("case %zu: '%s' lacks '%s'", i, err.message, want[i].message);
  }
  assert_int_equal(tg_plan_file_write(NULL, NULL, (void **)&data, &size, &err), TG_ERROR_INVALID_ARGUMENT);
  tg_plan_file *f = (tg_plan_file *)1;
  assert_int_equal(tg_plan_file_parse(NULL, 5, NULL, NULL, &f, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_null(f);
  assert_int_equal(tg_records_fingerprint(rec, NULL, 3, 0, (uint8_t[32]){0}), TG_ERROR_INVALID_ARGUMENT);
  tg_plan_file_destroy(NULL);
  tg_plan_file_free_data(NULL, NULL);
  tg_plan_destroy(plan);
}

static void save_and_load_files(void **state) {
  (void)state;
  tg_usage_record rec[3];
  const char *names[3];
  tg_plan *plan = NULL;
  tiny(rec, names, &plan);
  tg_plan_file_desc d = tiny_desc(rec, names, plan);
  char path[64];
  snprintf(path, sizeof path, "/tmp/tg_test_plan_file_%ld.tgplan", (long)getpid());
  tg_error_info err = {{0}};
  assert_int_equal(tg_plan_file_save(&d, path, NULL, &err), TG_OK);
  tg_plan_file *f = NULL;
  assert_int_equal(tg_plan_file_load(path, NULL, &f, &err), TG_OK);
  assert_same(&d, f);
  tg_plan_file_destroy(f);
  remove(path);
  assert_int_equal(tg_plan_file_load(path, NULL, &f, &err), TG_ERROR_IO);
  assert_null(f);
  assert_non_null(strstr(err.message, path));
  assert_int_equal(tg_plan_file_save(&d, "/nonexistent-dir/x.tgplan", NULL, &err), TG_ERROR_IO);
  assert_non_null(strstr(err.message, "/nonexistent-dir/x.tgplan: cannot create"));
  /* A file that is something else entirely. */
  char model[1024];
  if (tg_test_model_path(model, sizeof model, "hand_landmark_lite.tflite")) {
    assert_int_equal(tg_plan_file_load(model, NULL, &f, &err), TG_ERROR_PARSE);
    assert_non_null(strstr(err.message, "not a Tangram plan file"));
  }
  tg_plan_destroy(plan);
}

/* ---- host allocation failures ---- */

static void allocation_failures_are_clean(void **state) {
  (void)state;
  tg_record_set *set = load("face_detection_short_range", "tex2");
  tg_plan *plan = NULL;
  assert_int_equal(tg_plan_compute(set->records, set->count, 2, &(tg_plan_options){.strategy = TG_STRATEGY_BEST}, NULL,
                                   &plan),
                   TG_OK);
  tg_plan_file_desc d = desc_for(set, plan, TG_STORAGE_TEXTURE_2D, TG_STRATEGY_BEST, 0, "face");
  uint8_t *good = NULL;
  size_t good_size = 0;
  write_ok(&d, &good, &good_size);
  uint64_t n;
  for (n = 1;; ++n) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, n);
    void *data = NULL;
    size_t size = 0;
    tg_error_info err = {{0}};
    tg_status st = tg_plan_file_write(&d, &fa.base, &data, &size, &err);
    if (st == TG_OK) {
      assert_int_equal(size, good_size);
      assert_memory_equal(data, good, size);
      tg_plan_file_free_data(&fa.base, data);
      assert_int_equal(fa.live_blocks, 0);
      break;
    }
    assert_int_equal(st, TG_ERROR_OUT_OF_HOST_MEMORY);
    assert_null(data);
    assert_int_equal(fa.live_blocks, 0);
  }
  uint64_t write_points = n - 1;
  for (n = 1;; ++n) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, n);
    tg_plan_file *f = NULL;
    tg_error_info err = {{0}};
    tg_status st = tg_plan_file_parse(good, good_size, "test.tgplan", &fa.base, &f, &err);
    if (st != TG_OK) assert_null(f);
    if (st == TG_OK) {
      st = tg_plan_file_match(f, set->records, (const char *const *)set->names, set->count, 2,
                              &(tg_share_relation){tg_test_share_always, NULL, NULL, 0, NULL}, &fa.base, &err);
      tg_plan_file_destroy(f);
      assert_int_equal(fa.live_blocks, 0);
      if (st == TG_OK) break;
    }
    assert_int_equal(st, TG_ERROR_OUT_OF_HOST_MEMORY);
    assert_int_equal(fa.live_blocks, 0);
  }
  print_message("%llu write and %llu read+match allocation failure points, each clean\n",
                (unsigned long long)write_points, (unsigned long long)(n - 1));
  assert_true(write_points >= 1 && n > 5);
  tg_plan_file_free_data(NULL, good);
  tg_plan_destroy(plan);
  tg_record_set_destroy(set);
}


/* Version 2: the in-place pairs travel in an INPL section; a damaged section, an unknown tag and
 * a pair whose input is still read later are refused, each with its reason. */
static void in_place_section(void **state) {
  (void)state;
  /* r0 -> r1 at op 1 (in place), r1 -> r2 at op 2 (a view), r3 live throughout. */
  tg_usage_record rec[4] = {{{64, 1, 1}, 0, 1, 0}, {{64, 1, 1}, 1, 2, 0}, {{64, 1, 1}, 2, 3, 0}, {{32, 1, 1}, 0, 3, 0}};
  const tg_in_place_pair pairs[2] = {{1, 0, 1, 0}, {2, 1, 2, 1}};
  for (int mode = 0; mode < 2; ++mode) {
    tg_plan_options o = {0};
    o.mode = (tg_mode)mode;
    o.strategy = TG_STRATEGY_GREEDY_BY_SIZE;
    o.in_place = pairs;
    o.in_place_count = 2;
    tg_plan *plan = NULL;
    assert_int_equal(tg_plan_compute(rec, 4, 1, &o, NULL, &plan), TG_OK);
    assert_int_equal(plan->total, 96);
    assert_int_equal(plan->in_place_count, 2);
    tg_record_set set = {1, 4, rec, NULL, *tg_allocator_default()};
    tg_plan_file_desc d = desc_for(&set, plan, TG_STORAGE_BUFFER, TG_STRATEGY_GREEDY_BY_SIZE, 0, "pairs");
    uint8_t *data = NULL;
    size_t size = 0;
    write_ok(&d, &data, &size);
    assert_int_equal(data[TG__PF_VERSION], 2);
    tg_plan_file *f = parse_ok(data, size);
    assert_same(&d, f);
    assert_int_equal(f->plan->in_place_count, 2);
    for (size_t i = 0; i < 2; ++i) {
      assert_int_equal(f->plan->in_place[i].op, pairs[i].op);
      assert_int_equal(f->plan->in_place[i].input, pairs[i].input);
      assert_int_equal(f->plan->in_place[i].output, pairs[i].output);
      assert_int_equal(f->plan->in_place[i].view, pairs[i].view);
    }
    tg_plan_file_destroy(f);
    /* The INPL section is the last 12 + 8 + 2 * 24 bytes before the checksum. */
    const size_t sec = size - 4 - (12 + 8 + 48);
    assert_memory_equal(data + sec, "INPL", 4);
    struct {
      size_t at;
      uint8_t value;
      const char *message;
    } cases[] = {{sec, 'X', "unknown section 'XNPL'"},
                 {sec + 4, 200, "runs past the end"},
                 {sec + 12, 3, "pairs do not fit"},
                 {sec + 20 + 24 + 8, 3, "still read after op 2"}}; /* pair 1's input: record 3 */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
      uint8_t *c = malloc(size);
      assert_non_null(c);
      memcpy(c, data, size);
      c[cases[i].at] = cases[i].value;
      tg__plan_file_reseal(c, size);
      tg_plan_file *g = NULL;
      tg_error_info err = {{0}};
      tg_status st = tg_plan_file_parse(c, size, "test.tgplan", NULL, &g, &err);
      assert_null(g);
      assert_true(st == TG_ERROR_PARSE || st == TG_ERROR_INVALID_PLAN);
      if (strstr(err.message, cases[i].message) == NULL)
        fail_msg("case %zu: '%s' lacks '%s'", i, err.message, cases[i].message);
      free(c);
    }
    tg_plan_file_free_data(NULL, data);
    tg_plan_destroy(plan);
  }
}

TG_TEST_MAIN(cmocka_unit_test(golden_bytes), cmocka_unit_test(version_1_file_loads),
             cmocka_unit_test(arenas_and_limits_round_trip),
             cmocka_unit_test(round_trip_every_strategy_storage_mode),
             cmocka_unit_test(round_trip_edge_cases), cmocka_unit_test(every_prefix_is_refused),
             cmocka_unit_test(byte_flips_are_refused_or_valid),
             cmocka_unit_test(damaged_fields_named), cmocka_unit_test(in_place_section),
             cmocka_unit_test(fingerprint_mismatch_names_the_model),
             cmocka_unit_test(policies_on_a_model),
             cmocka_unit_test(writer_refuses_bad_descriptions),
             cmocka_unit_test(save_and_load_files), cmocka_unit_test(allocation_failures_are_clean))
