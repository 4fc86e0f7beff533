#define _POSIX_C_SOURCE 200809L
#include "support/tg_backend_cases.h"

#include "support/tg_test.h"

#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

const char *const tg_test_gpu_models[TG_TEST_GPU_MODEL_COUNT] = {
    "selfie_segmentation", "face_detection_short_range", "hand_landmark_lite", "pose_landmark_lite"};
const tg_storage tg_test_gpu_storages[TG_TEST_GPU_STORAGE_COUNT] = {TG_STORAGE_BUFFER, TG_STORAGE_TEXTURE_2D,
                                                                   TG_STORAGE_TEXTURE_ARRAY, TG_STORAGE_TEXTURE_3D};

tg_model_records *tg_test_model_records(const tg_test_model *m, tg_storage storage, tg_precision precision,
                                        const tg_device_limits *limits) {
  tg_model_records *mr = NULL;
  tg_error_info err = {{0}};
  if (tg_model_records_create(m->model->graph, m->lifetimes, storage, precision, limits, NULL, &mr, &err) != TG_OK)
    fail_msg("%s: records: %s", m->name, err.message);
  return mr;
}

tg_device *tg_test_open_backend(const tg_device_options *opt) {
  tg_device *d = NULL;
  tg_error_info err = {{0}};
  if (tg_device_open(opt, NULL, &d, NULL, NULL, &err) != TG_OK) {
    if (tg_test_in_ci()) fail_msg("%s: %s", tg_backend_name(opt->backend), err.message);
    print_message("%s: not available (%s)\n", tg_backend_name(opt->backend), err.message);
    return NULL;
  }
  return d;
}

void tg_test_probe(const char *self, const char *flag, const char *mode, char *const *extra_env, char *out,
                   size_t size) {
  size_t n = 0;
  while (environ[n]) ++n;
  size_t extra = 0;
  while (extra_env[extra]) ++extra;
  char **env = calloc(n + extra + 1, sizeof *env);
  assert_non_null(env);
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    int replaced = 0;
    for (char *const *e = extra_env; *e; ++e) {
      size_t len = strcspn(*e, "=");
      if (strncmp(environ[i], *e, len + 1) == 0) replaced = 1;
    }
    if (!replaced) env[k++] = environ[i];
  }
  for (char *const *e = extra_env; *e; ++e) env[k++] = *e;
  env[k] = NULL;
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  char *argv[] = {(char *)self, (char *)flag, (char *)mode, NULL};
  pid_t pid;
  assert_int_equal(posix_spawn(&pid, self, &fa, NULL, argv, env), 0);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  size_t got = 0;
  ssize_t r;
  while (got + 1 < size && (r = read(fds[0], out + got, size - 1 - got)) > 0) got += (size_t)r;
  out[got] = '\0';
  close(fds[0]);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) fail_msg("probe failed:\n%s", out);
  free(env);
}

int tg_test_run_probe(tg_backend_kind backend, const char *mode) {
  tg_device_options opt = {0};
  opt.backend = strcmp(mode, "auto") == 0 ? TG_BACKEND_AUTO : backend;
  tg_device *d = NULL;
  tg_error_info err = {{0}};
  tg_backend_skip skipped[TG_BACKEND_COUNT];
  size_t nskipped = 0;
  tg_status st = tg_device_open(&opt, NULL, &d, skipped, &nskipped, &err);
  printf("status=%s\n", tg_status_name(st));
  if (st != TG_OK) printf("reason=%s\n", err.message);
  for (size_t i = 0; i < nskipped; ++i)
    printf("skipped %s %s: %s\n", tg_backend_name(skipped[i].backend), tg_status_name(skipped[i].status),
           skipped[i].reason);
  if (d) printf("chose %s\n", tg_backend_name(tg_device_get_info(d)->backend));
  tg_device_close(d);
  return 0;
}

const tg_record_set *tg_test_planned_records(tg_device *d, const tg_record_set *set, const tg_tensor_resource *res,
                                             tg_precision precision, tg_mode mode, tg_record_set **arena) {
  *arena = NULL;
  if (mode != TG_MODE_OFFSETS) return set;
  assert_int_equal(tg_device_compute_arena_records(d, res, set->records, set->count, precision, NULL, arena), TG_OK);
  return *arena;
}

tg_plan *tg_test_plan_for_device(tg_device *d, const tg_record_set *set, const tg_tensor_resource *res,
                                 tg_precision precision, tg_mode mode, const tg_share_relation *relation, int aligned,
                                 tg_record_set **arena) {
  const tg_record_set *planned = tg_test_planned_records(d, set, res, precision, mode, arena);
  tg_plan_options opt = {0};
  opt.mode = mode;
  opt.strategy = TG_STRATEGY_BEST;
  opt.relation = relation;
  opt.alignment = aligned && mode == TG_MODE_OFFSETS ? tg_device_get_info(d)->buffer_alignment : 0;
  tg_plan *plan = NULL;
  tg_status st = tg_plan_compute(planned->records, planned->count, planned->dims, &opt, NULL, &plan);
  if (st != TG_OK) fail_msg("plan: %s", tg_status_string(st));
  tg_test_assert_valid(planned->records, planned->count, planned->dims, plan, opt.alignment, relation);
  return plan;
}

void tg_test_break_plan(tg_plan *plan, const tg_record_set *set, const tg_record_set *arena, size_t *victim,
                        size_t *intruder) {
  *victim = *intruder = set->count;
  for (size_t a = 0; a < set->count && *intruder == set->count; ++a) {
    const tg_usage_record *A = &set->records[a];
    if (A->last_task <= A->first_task) continue;
    for (size_t b = 0; b < set->count; ++b) {
      const tg_usage_record *B = &set->records[b];
      /* B is written strictly before A's last read: an op's reads and writes of aliased memory
       * would be a race inside the op, not an overwrite the check can name. */
      if (b != a && B->first_task > A->first_task && B->first_task < A->last_task) {
        *victim = a;
        *intruder = b;
        break;
      }
    }
  }
  assert_true(*victim < set->count);
  if (plan->mode == TG_MODE_OBJECTS) {
    uint32_t k = plan->object_of[*victim];
    plan->object_of[*intruder] = k;
    tg_extent *o = &plan->object_sizes[k];
    const tg_extent *b = &set->records[*intruder].size;
    if (b->w > o->w) o->w = b->w;
    if (b->h > o->h) o->h = b->h;
    if (b->d > o->d) o->d = b->d;
    plan->total = 0;
    for (size_t j = 0; j < plan->object_count; ++j)
      plan->total += plan->object_sizes[j].w * plan->object_sizes[j].h * plan->object_sizes[j].d;
  } else {
    plan->offset_of[*intruder] = plan->offset_of[*victim];
    uint64_t end = plan->offset_of[*intruder] + arena->records[*intruder].size.w;
    if (end > plan->total) plan->total = end;
  }
}

uint64_t tg_test_expected_bytes(const tg_plan *plan, const tg_record_set *set, tg_precision precision) {
  if (plan->mode == TG_MODE_OFFSETS || set->dims == 1) return plan->total;
  return plan->total * tg_precision_texel_bytes(precision);
}

const char *tg_test_record_name(const tg_record_set *set, size_t r) {
  return set->names && set->names[r] ? set->names[r] : "?";
}

tg_status tg_test_two_images_in_one_object(tg_device *d, const tg_usage_record recs[2], tg_plan **plan,
                                           tg_realization **z, tg_error_info *err) {
  *plan = tg_test_one_object_plan(2, 2, (tg_extent){8, 8, 1});
  tg_tensor_resource res[2];
  for (int r = 0; r < 2; ++r) {
    const tg_extent e = recs[r].size;
    res[r] = (tg_tensor_resource){TG_STORAGE_TEXTURE_2D, e, e.w * e.h * 16};
  }
  tg_realize_desc desc = {*plan, recs, 2, 2, res, TG_PRECISION_FP32, 1};
  *z = NULL;
  return tg_realization_create(d, &desc, NULL, z, err);
}

void tg_test_shared_image_regions(tg_device *d, uint64_t mismatches[2]) {
  const tg_usage_record recs[2] = {{{8, 4, 1}, 0, 2, 0}, {{4, 8, 1}, 1, 1, 0}};
  tg_plan *plan = NULL;
  tg_realization *z = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(tg_test_two_images_in_one_object(d, recs, &plan, &z, &err), TG_OK);
  tg_check_result result = {0, mismatches, 0};
  assert_int_equal(tg_realization_check(z, NULL, &result, &err), TG_OK);
  /* Record 1 covers texels x<4, y<4 of record 0's region. */
  assert_int_equal(result.corrupted_records, 1);
  assert_true(mismatches[0] > 48 && mismatches[0] <= 64);
  tg_realization_destroy(z);
  tg_plan_destroy(plan);
}

void tg_test_buffer_resources(const tg_usage_record *recs, size_t n, tg_tensor_resource *res) {
  for (size_t r = 0; r < n; ++r)
    res[r] = (tg_tensor_resource){TG_STORAGE_BUFFER, {recs[r].size.w, 1, 1}, recs[r].size.w};
}

void tg_test_walk_buffers(tg_usage_record recs[4], tg_tensor_resource res[4]) {
  static const tg_usage_record k_recs[4] = {
      {{256, 1, 1}, 0, 1, 0}, {{512, 1, 1}, 1, 2, 0}, {{256, 1, 1}, 2, 3, 0}, {{64, 1, 1}, 0, 3, 0}};
  memcpy(recs, k_recs, sizeof k_recs);
  tg_test_buffer_resources(recs, 4, res);
}

tg_status tg_test_walk_realise_check(tg_device *d, const tg_plan *plan, const tg_usage_record *recs,
                                     const tg_tensor_resource *res, const tg_allocator *alloc) {
  tg_realization *z = NULL;
  tg_realize_desc desc = {plan, recs, 4, 1, res, TG_PRECISION_FP32, 0};
  tg_status st = tg_realization_create(d, &desc, alloc, &z, NULL);
  for (int ooo = 0; ooo < 2 && st == TG_OK; ++ooo) {
    static const uint32_t w0[] = {0}, w1[] = {1}, w2[] = {2};
    const uint32_t *lists[4] = {NULL, w0, w1, w2};
    uint32_t counts[4] = {0, 1, 1, 1};
    tg_check_desc cd = {NULL, NULL, ooo, 4, ooo ? counts : NULL, ooo ? lists : NULL};
    tg_check_result r = {0, NULL, 0};
    st = tg_realization_check(z, &cd, &r, NULL);
    if (st == TG_OK) assert_int_equal(r.corrupted_records, 0);
  }
  tg_realization_destroy(z);
  return st;
}

tg_realization_stats tg_test_realization_counts(const tg_realization *z, const tg_plan *plan, size_t records) {
  tg_realization_stats stats;
  tg_realization_get_stats(z, &stats);
  assert_int_equal(stats.allocations, plan->mode == TG_MODE_OBJECTS ? plan->object_count : 1);
  assert_int_equal(stats.views, records);
  return stats;
}

void tg_test_check_clean(tg_realization *z) {
  tg_check_result r = {0, NULL, 0};
  tg_error_info err = {{0}};
  if (tg_realization_check(z, NULL, &r, &err) != TG_OK) fail_msg("check: %s", err.message);
  assert_int_equal(r.corrupted_records, 0);
  tg_realization_destroy(z);
}

void tg_test_op_waits_build(const tg_waits *w, int with_reuse, tg_test_op_waits *out) {
  size_t n = w->op_count;
  out->op_count = n;
  out->counts = calloc(n ? n : 1, sizeof *out->counts);
  out->lists = calloc(n ? n : 1, sizeof *out->lists);
  size_t total = w->after_start[n] + (with_reuse ? w->reuse_edge_count : 0);
  out->storage = calloc(total ? total : 1, sizeof *out->storage);
  assert_true(out->counts && out->lists && out->storage);
  size_t k = 0;
  for (size_t o = 0; o < n; ++o) {
    out->lists[o] = out->storage + k;
    for (size_t i = w->after_start[o]; i < w->after_start[o + 1]; ++i) out->storage[k++] = w->after[i];
    if (with_reuse)
      for (size_t i = w->reuse_start[o]; i < w->reuse_start[o + 1]; ++i) out->storage[k++] = w->reuse_edges[i].after;
    out->counts[o] = (uint32_t)(out->storage + k - out->lists[o]);
  }
}

void tg_test_op_waits_free(tg_test_op_waits *w) {
  free(w->counts);
  free((void *)w->lists);
  free(w->storage);
}
