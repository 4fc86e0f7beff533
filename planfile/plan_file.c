/* Plan files: writer, reader and the records fingerprint. The layout is in
 * plan_file_internal.h and docs/plan-files.md; every multi-byte field is little-endian. */
#include "planfile/plan_file_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/crc32.h"
#include "core/internal.h"
#include "core/sha256.h"

static const uint8_t k_magic[8] = {0x89, 'T', 'G', 'P', 'L', 'A', 'N', '\n'};

#define HEADER TG__PLAN_FILE_HEADER_BYTES
#define RECORD TG__PLAN_FILE_RECORD_BYTES
#define CHECKSUM TG__PLAN_FILE_CHECKSUM_BYTES
#define NO_NAME TG__PLAN_FILE_NO_NAME
#define KNOWN_FLAGS TG_PLAN_FILE_IO_PLANNED

#define put_u32 tg__pf_put_u32
#define put_u64 tg__pf_put_u64
#define get_u32 tg__pf_get_u32
#define get_u64 tg__pf_get_u64

/* ---- tagged sections (version 2): [u32 tag][u64 payload bytes][payload] ---- */

#define TAG_ARENAS TAG('A', 'R', 'N', 'A') /* allocation cap, arena sizes, each record's arena */
#define TAG_LIMITS TAG('L', 'I', 'M', 'S') /* the device limits the records were made under */
#define SECTION_HEAD TG__PF_SECTION_HEAD
#define LIMIT_FIELDS 8u

static int has_arenas_section(const tg_plan *p) {
  return p->mode == TG_MODE_OFFSETS && (p->max_allocation > 0 || p->arena_count > 1);
}

/* ARNA payload: u64 cap, u64 arena count K, K x u64 arena sizes, then (K > 1) n x u32 arena. */
static size_t arenas_bytes(const tg_plan *p) {
  size_t k = p->arena_count > 1 ? p->arena_count : 0;
  return 16 + 8 * k + (k ? 4 * p->record_count : 0);
}

static size_t write_arenas(uint8_t *b, const tg_plan *p) {
  size_t len = arenas_bytes(p), k = p->arena_count > 1 ? p->arena_count : 0;
  put_u32(b, TAG_ARENAS);
  put_u64(b + 4, len);
  uint8_t *q = b + SECTION_HEAD;
  put_u64(q, p->max_allocation);
  put_u64(q + 8, k);
  for (size_t i = 0; i < k; ++i) put_u64(q + 16 + 8 * i, p->arena_sizes[i]);
  for (size_t r = 0; k && r < p->record_count; ++r) put_u32(q + 16 + 8 * k + 4 * r, p->arena_of[r]);
  return SECTION_HEAD + len;
}

/* Reads an ARNA payload into `p` (an offsets plan of `n` records); TG_ERROR_PARSE naming the
 * file when malformed. */
static tg_status arna_read(const uint8_t *q, uint64_t len, tg_plan *p, size_t n, const char *name,
                           tg_error_info *err) {
  if (p->mode != TG_MODE_OFFSETS) return tg__error(err, TG_ERROR_PARSE, "%s: section ARNA in an objects plan", name);
  if (len < 16)
    return tg__error(err, TG_ERROR_PARSE, "%s: section ARNA of %llu bytes, less than its 16-byte head", name,
                     (unsigned long long)len);
  uint64_t cap = get_u64(q), k = get_u64(q + 8);
  if (k == 1 || k > n || (k && (len - 16) / 8 < k) || len != 16 + 8 * k + (k ? 4 * (uint64_t)n : 0))
    return tg__error(err, TG_ERROR_PARSE, "%s: section ARNA: %llu arenas for %zu records do not match its %llu bytes",
                     name, (unsigned long long)k, n, (unsigned long long)len);
  p->max_allocation = cap;
  if (k == 0) return TG_OK;
  tg_allocator a = p->alloc;
  p->arena_sizes = tg__calloc(&a, (size_t)k, sizeof *p->arena_sizes);
  p->arena_of = tg__calloc(&a, n, sizeof *p->arena_of);
  if (p->arena_sizes == NULL || p->arena_of == NULL)
    return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", name);
  p->arena_count = (size_t)k;
  for (size_t i = 0; i < k; ++i) p->arena_sizes[i] = get_u64(q + 16 + 8 * i);
  for (size_t r = 0; r < n; ++r) p->arena_of[r] = get_u32(q + 16 + 8 * k + 4 * r);
  return TG_OK; /* arena ids and sizes: the validator checks them */
}

/* LIMS payload: the eight tg_device_limits fields in declaration order, u64 each. */
static size_t write_limits(uint8_t *b, const tg_device_limits *l) {
  const uint64_t v[LIMIT_FIELDS] = {l->max_buffer_bytes,     l->max_image_buffer_texels, l->max_texture_2d_width,
                                    l->max_texture_2d_height, l->max_texture_3d_width,    l->max_texture_3d_height,
                                    l->max_texture_3d_depth,  l->max_texture_array_layers};
  put_u32(b, TAG_LIMITS);
  put_u64(b + 4, 8 * LIMIT_FIELDS);
  for (unsigned i = 0; i < LIMIT_FIELDS; ++i) put_u64(b + SECTION_HEAD + 8 * i, v[i]);
  return SECTION_HEAD + 8 * LIMIT_FIELDS;
}

static tg_status lims_read(const uint8_t *q, uint64_t len, tg_device_limits *l, const char *name,
                           tg_error_info *err) {
  if (len != 8 * LIMIT_FIELDS)
    return tg__error(err, TG_ERROR_PARSE, "%s: section LIMS of %llu bytes, not %u", name, (unsigned long long)len,
                     8 * LIMIT_FIELDS);
  uint64_t *f[LIMIT_FIELDS] = {&l->max_buffer_bytes,     &l->max_image_buffer_texels, &l->max_texture_2d_width,
                               &l->max_texture_2d_height, &l->max_texture_3d_width,    &l->max_texture_3d_height,
                               &l->max_texture_3d_depth,  &l->max_texture_array_layers};
  for (unsigned i = 0; i < LIMIT_FIELDS; ++i) *f[i] = get_u64(q + 8 * i);
  return TG_OK;
}

/* A tag as text for messages: its four characters when printable, else hex. */
static void tag_text(uint32_t tag, char out[16]) {
  int printable = 1;
  for (int i = 0; i < 4; ++i) {
    unsigned c = (tag >> (8 * i)) & 0xFFu;
    printable &= c >= 0x20 && c < 0x7F;
  }
  if (printable)
    snprintf(out, 16, "'%c%c%c%c'", (char)(tag & 0xFF), (char)(tag >> 8 & 0xFF), (char)(tag >> 16 & 0xFF),
             (char)(tag >> 24 & 0xFF));
  else
    snprintf(out, 16, "0x%08x", tag);
}

/* ---- fingerprint ---- */

/* One record of the fingerprint stream: w, h, d, alignment (u64), first, last (u32), the name's
 * length (u64; UINT64_MAX without a name), the name's bytes. */
static void fp_record(tg__sha256 *s, tg_extent size, uint64_t alignment, uint32_t first,
                      uint32_t last, const void *name, uint64_t name_length) {
  uint8_t e[48];
  put_u64(e, size.w);
  put_u64(e + 8, size.h);
  put_u64(e + 16, size.d);
  put_u64(e + 24, alignment);
  put_u32(e + 32, first);
  put_u32(e + 36, last);
  put_u64(e + 40, name_length);
  tg__sha256_update(s, e, sizeof e);
  if (name != NULL && name_length != UINT64_MAX) tg__sha256_update(s, name, (size_t)name_length);
}

/* INPL: the plan's in-place pairs. */
#define TAG_INPL TAG('I', 'N', 'P', 'L')
#define INPL_PAIR 24u        /* u32 op, u32 view, u64 input, u64 output */

static size_t inpl_bytes(const tg_plan *p) {
  return p->in_place_count ? SECTION_HEAD + 8 + INPL_PAIR * p->in_place_count : 0;
}

static size_t inpl_write(uint8_t *b, const tg_plan *p) {
  if (p->in_place_count == 0) return 0;
  put_u32(b, TAG_INPL);
  put_u64(b + 4, 8 + (uint64_t)INPL_PAIR * p->in_place_count);
  put_u64(b + SECTION_HEAD, p->in_place_count);
  uint8_t *e = b + SECTION_HEAD + 8;
  for (size_t i = 0; i < p->in_place_count; ++i, e += INPL_PAIR) {
    put_u32(e, p->in_place[i].op);
    put_u32(e + 4, p->in_place[i].view ? 1u : 0u);
    put_u64(e + 8, p->in_place[i].input);
    put_u64(e + 16, p->in_place[i].output);
  }
  return inpl_bytes(p);
}

/* The INPL payload: u64 count, then the pairs; the validator checks them against the records. */
static tg_status inpl_read(const uint8_t *d, uint64_t len, size_t record_count, tg_plan *p, const char *name,
                           tg_error_info *err) {
  if (p->in_place_count != 0)
    return tg__error(err, TG_ERROR_PARSE, "%s: section INPL: appears twice", name);
  if (len < 8) return tg__error(err, TG_ERROR_PARSE, "%s: section INPL: %llu bytes, too short", name, (unsigned long long)len);
  uint64_t n = get_u64(d);
  if (n == 0) return tg__error(err, TG_ERROR_PARSE, "%s: section INPL: no pairs (written without the section)", name);
  if (n > record_count || (len - 8) / INPL_PAIR != n || (len - 8) % INPL_PAIR != 0)
    return tg__error(err, TG_ERROR_PARSE, "%s: section INPL: %llu pairs do not fit %llu bytes (or exceed %zu records)",
                     name, (unsigned long long)n, (unsigned long long)len, record_count);
  tg_in_place_pair *pairs = tg__calloc(&p->alloc, n ? (size_t)n : 1, sizeof *pairs);
  if (pairs == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", name);
  for (size_t i = 0; i < (size_t)n; ++i) {
    const uint8_t *e = d + 8 + INPL_PAIR * i;
    uint32_t view = get_u32(e + 4);
    uint64_t in = get_u64(e + 8), out = get_u64(e + 16);
    if (view > 1 || in >= record_count || out >= record_count) {
      tg__free(&p->alloc, pairs);
      return tg__error(err, TG_ERROR_PARSE, "%s: section INPL: pair %zu: view flag %u or records %llu -> %llu out of range",
                       name, i, view, (unsigned long long)in, (unsigned long long)out);
    }
    pairs[i] = (tg_in_place_pair){get_u32(e), (size_t)in, (size_t)out, (int)view};
  }
  tg__free(&p->alloc, p->in_place);
  p->in_place = pairs;
  p->in_place_count = (size_t)n;
  return TG_OK;
}

static void fp_begin(tg__sha256 *s, uint32_t dims, uint64_t count) {
  uint8_t b[12];
  put_u32(b, dims);
  put_u64(b + 4, count);
  tg__sha256_init(s);
  tg__sha256_update(s, b, sizeof b);
}

tg_status tg_records_fingerprint(const tg_usage_record *records, const char *const *names,
                                 size_t count, uint32_t dims, uint8_t out[TG_FINGERPRINT_BYTES]) {
  if (out == NULL || (count && records == NULL) || dims < 1 || dims > 3) return TG_ERROR_INVALID_ARGUMENT;
  tg__sha256 s;
  fp_begin(&s, dims, count);
  for (size_t r = 0; r < count; ++r) {
    const char *name = names ? names[r] : NULL;
    const tg_usage_record *rec = &records[r];
    fp_record(&s, rec->size, rec->alignment, rec->first_task, rec->last_task, name,
              name ? (uint64_t)strlen(name) : UINT64_MAX);
  }
  tg__sha256_final(&s, out);
  return TG_OK;
}

/* ---- checks shared by the writer and the reader ---- */

/* What the planner and every reader require of a record (tg_records_parse_csv's rules). */
static int record_problem(const tg_usage_record *r, uint32_t dims, char *why, size_t why_size) {
  uint64_t v;
  if (r->first_task > r->last_task)
    snprintf(why, why_size, "first task %u is after last task %u", r->first_task, r->last_task);
  else if (r->last_task > TG_MAX_TASK)
    snprintf(why, why_size, "last task %u exceeds %u", r->last_task, TG_MAX_TASK);
  else if ((dims < 2 && r->size.h != 1) || (dims < 3 && r->size.d != 1))
    snprintf(why, why_size, "extent %llux%llux%llu has an unused dimension other than 1",
             (unsigned long long)r->size.w, (unsigned long long)r->size.h, (unsigned long long)r->size.d);
  else if (tg_extent_volume(r->size, &v) != TG_OK)
    snprintf(why, why_size, "extent %llux%llux%llu overflows 64 bits", (unsigned long long)r->size.w,
             (unsigned long long)r->size.h, (unsigned long long)r->size.d);
  else
    return 0;
  return 1;
}

/* The enums and counts both sides agree on; NULL when all is well, else what is wrong (static
 * text or `buf`). */
static const char *header_problem(uint32_t dims, uint32_t mode, uint32_t strategy, uint32_t plan_strategy,
                                  uint32_t fit, uint32_t storage, uint32_t precision, uint32_t policy,
                                  uint32_t flags, char *buf, size_t buf_size) {
  if (dims < 1 || dims > 3) snprintf(buf, buf_size, "dims %u is not 1, 2 or 3", dims);
  else if (mode > TG_MODE_OFFSETS) snprintf(buf, buf_size, "mode %u is not objects (0) or offsets (1)", mode);
  else if (strategy >= TG_STRATEGY_COUNT) snprintf(buf, buf_size, "strategy %u is not a strategy (0..%d)", strategy, TG_STRATEGY_COUNT - 1);
  else if (plan_strategy >= TG_STRATEGY_COUNT)
    snprintf(buf, buf_size, "the plan's strategy %u is not a strategy (0..%d)", plan_strategy, TG_STRATEGY_COUNT - 1);
  else if (fit > TG_FIT_WORST) snprintf(buf, buf_size, "fit %u is not best (0), first (1) or worst (2)", fit);
  else if (storage >= TG_STORAGE_COUNT) snprintf(buf, buf_size, "storage %u is not a storage (0..%d)", storage, TG_STORAGE_COUNT - 1);
  else if (precision >= TG_PRECISION_COUNT) snprintf(buf, buf_size, "precision %u is not fp32 (0) or fp16 (1)", precision);
  else if (policy >= TG_POLICY_COUNT) snprintf(buf, buf_size, "policy %u is not a policy (0..%d)", policy, TG_POLICY_COUNT - 1);
  else if (flags & ~(uint32_t)KNOWN_FLAGS) snprintf(buf, buf_size, "flags 0x%x has unknown bits", flags);
  else if (mode == TG_MODE_OFFSETS && dims != 1) snprintf(buf, buf_size, "offsets mode with %uD records (offsets need 1D)", dims);
  else if (tg_storage_dims((tg_storage)storage) != dims)
    snprintf(buf, buf_size, "storage %s gives %uD records, not %uD", tg_storage_name((tg_storage)storage),
             tg_storage_dims((tg_storage)storage), dims);
  else
    return NULL;
  return buf;
}

/* ---- writer ---- */

tg_status tg_plan_file_write(const tg_plan_file_desc *desc, const tg_allocator *alloc, void **data,
                             size_t *size, tg_error_info *err) {
  if (data) *data = NULL;
  if (size) *size = 0;
  if (desc == NULL || data == NULL || size == NULL || desc->plan == NULL ||
      (desc->record_count && desc->records == NULL))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "plan file: NULL description, plan, records or output");
  alloc = tg__alloc_or_default(alloc);
  const tg_plan *p = desc->plan;
  size_t n = desc->record_count;
  char why[200];
  if (p->record_count != n)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "plan file: the plan has %zu records, the description %zu",
                     p->record_count, n);
  if (p->dims != desc->dims)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "plan file: the plan is %uD, the records %uD", p->dims, desc->dims);
  if ((unsigned)desc->storage >= TG_STORAGE_COUNT || (unsigned)desc->precision >= TG_PRECISION_COUNT ||
      (unsigned)desc->policy >= TG_POLICY_COUNT || (unsigned)desc->strategy >= TG_STRATEGY_COUNT ||
      (unsigned)p->strategy >= TG_STRATEGY_COUNT || (unsigned)p->fit > TG_FIT_WORST || (unsigned)p->mode > TG_MODE_OFFSETS)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                     "plan file: storage %d, precision %d, policy %d, strategy %d, the plan's strategy %d, "
                     "fit %d or mode %d is out of range", (int)desc->storage, (int)desc->precision,
                     (int)desc->policy, (int)desc->strategy, (int)p->strategy, (int)p->fit, (int)p->mode);
  const char *bad = header_problem(desc->dims, (uint32_t)p->mode, (uint32_t)desc->strategy, (uint32_t)p->strategy,
                                   (uint32_t)p->fit, (uint32_t)desc->storage, (uint32_t)desc->precision,
                                   (uint32_t)desc->policy, desc->flags, why, sizeof why);
  if (bad) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "plan file: %s", bad);
  if (n > TG_MAX_RECORDS)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "plan file: %zu records exceed the readers' limit of %zu", n,
                     TG_MAX_RECORDS);
  const char *source = desc->source ? desc->source : "";
  size_t source_len = strlen(source);
  if (source_len > TG_PLAN_FILE_MAX_SOURCE)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "plan file: the source name has %zu bytes, more than %u",
                     source_len, TG_PLAN_FILE_MAX_SOURCE);
  if (p->mode == TG_MODE_OBJECTS ? (p->object_count && p->object_sizes == NULL) || (n && p->object_of == NULL)
                                 : (n && p->offset_of == NULL) || p->object_count != (n ? 1u : 0u))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "plan file: the plan lacks its arrays or has %zu objects",
                     p->object_count);
  /* Sizes: header, source, record table, names, plan, checksum. */
  size_t names_total = 0, total = HEADER + source_len, part;
  for (size_t r = 0; r < n; ++r) {
    if (record_problem(&desc->records[r], desc->dims, why, sizeof why))
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "plan file: record %zu: %s", r, why);
    const char *nm = desc->names ? desc->names[r] : NULL;
    if (nm == NULL) continue;
    size_t len = strlen(nm);
    if (len > TG_PLAN_FILE_MAX_NAME)
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "plan file: record %zu's name has %zu bytes, more than %u", r,
                       len, TG_PLAN_FILE_MAX_NAME);
    names_total += len; /* at most TG_MAX_RECORDS * TG_PLAN_FILE_MAX_NAME: no overflow */
  }
  int ok = tg__mul_size(n, RECORD, &part) && (total += part) >= part && (total += names_total) >= names_total;
  if (p->mode == TG_MODE_OBJECTS) {
    size_t objs;
    ok = ok && tg__mul_size(n, 4, &part) && (total += part) >= part && tg__mul_size(p->object_count, 24, &objs) &&
         (total += objs) >= objs;
  } else {
    ok = ok && tg__mul_size(n, 8, &part) && (total += part) >= part;
  }
  const size_t inpl = inpl_bytes(p);
  ok = ok && (total += inpl) >= inpl;
  if (has_arenas_section(p)) {
    if (p->arena_count > 1 && (p->arena_of == NULL || p->arena_sizes == NULL))
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "plan file: the plan has %zu arenas but not their arrays",
                       p->arena_count);
    size_t a = arenas_bytes(p); /* at most 16 + 12 n: n is bounded by TG_MAX_RECORDS */
    ok = ok && (total += SECTION_HEAD + a) >= a;
  }
  if (desc->limits) ok = ok && (total += SECTION_HEAD + 8 * LIMIT_FIELDS) >= SECTION_HEAD;
  /* A file with a section is version 2; without one, version 1 (what older readers load). */
  const int sections = inpl > 0 || has_arenas_section(p) || desc->limits != NULL || desc->range != NULL;
  ok = ok && (total += CHECKSUM) >= CHECKSUM;
  if (!ok) return tg__error(err, TG_ERROR_OVERFLOW, "plan file: the file would not fit in memory");
  tg_error_info verr = {{0}};
  tg_status st = tg_plan_validate(desc->records, n, desc->dims, p, desc->alignment, NULL, alloc, &verr);
  if (st == TG_ERROR_INVALID_PLAN)
    return tg__error(err, st, "plan file: not writing an invalid plan: %s", verr.message);
  if (st != TG_OK) return tg__error(err, st, "plan file: validating the plan: %s", tg_status_string(st));
  tg__pf_range_out range;
  memset(&range, 0, sizeof range);
  if (desc->range != NULL) {
    if ((st = tg__pf_range_prepare(desc, alloc, &range, err)) != TG_OK) return st;
    if ((total += range.bytes) < range.bytes) {
      tg__pf_range_out_free(&range, alloc);
      return tg__error(err, TG_ERROR_OVERFLOW, "plan file: the file would not fit in memory");
    }
  }

  uint8_t *b = tg__calloc(alloc, total, 1);
  if (b == NULL) {
    tg__pf_range_out_free(&range, alloc);
    return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "plan file: out of memory (%zu bytes)", total);
  }
  memcpy(b + TG__PF_MAGIC, k_magic, sizeof k_magic);
  put_u32(b + TG__PF_VERSION, sections ? TG_PLAN_FILE_VERSION : 1u);
  put_u32(b + TG__PF_FLAGS, desc->flags);
  put_u64(b + TG__PF_FILE_BYTES, total);
  put_u32(b + TG__PF_DIMS, desc->dims);
  put_u32(b + TG__PF_MODE, (uint32_t)p->mode);
  put_u32(b + TG__PF_STRATEGY, (uint32_t)desc->strategy);
  put_u32(b + TG__PF_PLAN_STRATEGY, (uint32_t)p->strategy);
  put_u32(b + TG__PF_FIT, (uint32_t)p->fit);
  put_u32(b + TG__PF_STORAGE, (uint32_t)desc->storage);
  put_u32(b + TG__PF_PRECISION, (uint32_t)desc->precision);
  put_u32(b + TG__PF_POLICY, (uint32_t)desc->policy);
  put_u64(b + TG__PF_ALIGNMENT, desc->alignment);
  put_u64(b + TG__PF_RECORD_COUNT, n);
  put_u64(b + TG__PF_OBJECT_COUNT, p->object_count);
  put_u64(b + TG__PF_TOTAL, p->total);
  tg_records_fingerprint(desc->records, desc->names, n, desc->dims, b + TG__PF_FINGERPRINT);
  put_u32(b + TG__PF_SOURCE_BYTES, (uint32_t)source_len);
  size_t at = HEADER;
  memcpy(b + at, source, source_len);
  at += source_len;
  size_t name_at = at + n * RECORD;
  for (size_t r = 0; r < n; ++r, at += RECORD) {
    const tg_usage_record *rec = &desc->records[r];
    put_u64(b + at, rec->size.w);
    put_u64(b + at + 8, rec->size.h);
    put_u64(b + at + 16, rec->size.d);
    put_u64(b + at + 24, rec->alignment);
    put_u32(b + at + 32, rec->first_task);
    put_u32(b + at + 36, rec->last_task);
    const char *nm = desc->names ? desc->names[r] : NULL;
    size_t len = nm ? strlen(nm) : 0;
    put_u32(b + at + 40, nm ? (uint32_t)len : NO_NAME);
    if (len) memcpy(b + name_at, nm, len);
    name_at += len;
  }
  at = name_at;
  if (p->mode == TG_MODE_OBJECTS) {
    for (size_t r = 0; r < n; ++r, at += 4) put_u32(b + at, p->object_of[r]);
    for (size_t k = 0; k < p->object_count; ++k, at += 24) {
      put_u64(b + at, p->object_sizes[k].w);
      put_u64(b + at + 8, p->object_sizes[k].h);
      put_u64(b + at + 16, p->object_sizes[k].d);
    }
  } else {
    for (size_t r = 0; r < n; ++r, at += 8) put_u64(b + at, p->offset_of[r]);
  }
  at += inpl_write(b + at, p);
  if (has_arenas_section(p)) at += write_arenas(b + at, p);
  if (desc->limits) at += write_limits(b + at, desc->limits);
  if (desc->range != NULL) {
    tg__pf_range_write(&range, b + at);
    at += range.bytes;
    tg__pf_range_out_free(&range, alloc);
  }
  put_u32(b + at, tg__crc32(b, at));
  *data = b;
  *size = total;
  return TG_OK;
}

void tg_plan_file_free_data(const tg_allocator *alloc, void *data) { tg__free(tg__alloc_or_default(alloc), data); }

tg_status tg_plan_file_save(const tg_plan_file_desc *desc, const char *path, const tg_allocator *alloc,
                            tg_error_info *err) {
  if (path == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "plan file: NULL path");
  void *data = NULL;
  size_t size = 0;
  tg_status st = tg_plan_file_write(desc, alloc, &data, &size, err);
  if (st != TG_OK) return st;
  FILE *f = fopen(path, "wb");
  if (f == NULL) {
    int e = errno;
    tg_plan_file_free_data(alloc, data);
    return tg__error(err, TG_ERROR_IO, "%s: cannot create: %s", path, strerror(e));
  }
  int ok = fwrite(data, 1, size, f) == size;
  int e = errno;
  ok = (fclose(f) == 0) && ok;
  if (!ok && e == 0) e = errno;
  tg_plan_file_free_data(alloc, data);
  if (!ok) {
    remove(path);
    return tg__error(err, TG_ERROR_IO, "%s: cannot write: %s", path, strerror(e));
  }
  return TG_OK;
}

/* ---- reader ---- */

void tg_plan_file_destroy(tg_plan_file *file) {
  if (file == NULL) return;
  tg_allocator a = file->alloc;
  tg__pf_range_free(file);
  tg_record_set_destroy(file->records);
  tg_plan_destroy(file->plan);
  tg__free(&a, file->source);
  tg__free(&a, file);
}

static void hex16(const uint8_t *fp, char out[17]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 8; ++i) {
    out[2 * i] = digits[fp[i] >> 4];
    out[2 * i + 1] = digits[fp[i] & 15];
  }
  out[16] = '\0';
}

tg_status tg_plan_file_parse(const void *data, size_t size, const char *name, const tg_allocator *alloc,
                             tg_plan_file **out, tg_error_info *err) {
  if (out) *out = NULL;
  if (name == NULL) name = "plan file";
  if (out == NULL || (data == NULL && size))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "%s: NULL data or output", name);
  alloc = tg__alloc_or_default(alloc);
  const uint8_t *b = data;
  const size_t min = HEADER + CHECKSUM;
  /* Identity and integrity first: magic, version, length, checksum. */
  size_t m = size < sizeof k_magic ? size : sizeof k_magic;
  if (m && memcmp(b, k_magic, m) != 0)
    return tg__error(err, TG_ERROR_PARSE, "%s: not a Tangram plan file (its first bytes are not the plan-file magic)", name);
  if (size < min)
    return tg__error(err, TG_ERROR_PARSE, "%s: truncated: %zu bytes, a plan file's header and checksum alone take %zu",
                     name, size, min);
  uint32_t version = get_u32(b + TG__PF_VERSION);
  if (version != TG_PLAN_FILE_VERSION && version != 1)
    return tg__error(err, TG_ERROR_PARSE, "%s: format version %u; this library reads versions 1 and %u", name,
                     version, TG_PLAN_FILE_VERSION);
  uint64_t file_bytes = get_u64(b + TG__PF_FILE_BYTES);
  if (file_bytes > size)
    return tg__error(err, TG_ERROR_PARSE, "%s: truncated: %zu of the %llu bytes the header announces", name, size,
                     (unsigned long long)file_bytes);
  if (file_bytes < size)
    return tg__error(err, TG_ERROR_PARSE, "%s: %zu bytes, more than the %llu the header announces (trailing data)",
                     name, size, (unsigned long long)file_bytes);
  const size_t body = size - CHECKSUM;
  if (tg__crc32(b, body) != get_u32(b + body))
    return tg__error(err, TG_ERROR_PARSE, "%s: checksum mismatch: the file is corrupted", name);

  /* Header fields. */
  uint32_t flags = get_u32(b + TG__PF_FLAGS), dims = get_u32(b + TG__PF_DIMS), mode = get_u32(b + TG__PF_MODE);
  uint32_t strategy = get_u32(b + TG__PF_STRATEGY), plan_strategy = get_u32(b + TG__PF_PLAN_STRATEGY);
  uint32_t fit = get_u32(b + TG__PF_FIT), storage = get_u32(b + TG__PF_STORAGE);
  uint32_t precision = get_u32(b + TG__PF_PRECISION), policy = get_u32(b + TG__PF_POLICY);
  uint64_t alignment = get_u64(b + TG__PF_ALIGNMENT), count64 = get_u64(b + TG__PF_RECORD_COUNT);
  uint64_t objects64 = get_u64(b + TG__PF_OBJECT_COUNT), total = get_u64(b + TG__PF_TOTAL);
  uint32_t source_len = get_u32(b + TG__PF_SOURCE_BYTES), reserved = get_u32(b + TG__PF_RESERVED);
  char why[200];
  const char *bad = header_problem(dims, mode, strategy, plan_strategy, fit, storage, precision, policy, flags, why,
                                   sizeof why);
  if (bad) return tg__error(err, TG_ERROR_PARSE, "%s: header: %s", name, bad);
  if (reserved != 0) return tg__error(err, TG_ERROR_PARSE, "%s: header: reserved field is %u, not 0", name, reserved);
  if (count64 > TG_MAX_RECORDS)
    return tg__error(err, TG_ERROR_PARSE, "%s: header: %llu records exceed the limit of %zu", name,
                     (unsigned long long)count64, TG_MAX_RECORDS);
  if (source_len > TG_PLAN_FILE_MAX_SOURCE)
    return tg__error(err, TG_ERROR_PARSE, "%s: header: source name of %u bytes exceeds %u", name, source_len,
                     TG_PLAN_FILE_MAX_SOURCE);
  /* Section sizes, each against the bytes that remain before the checksum. */
  size_t at = HEADER, n = (size_t)count64;
  if (source_len > body - at)
    return tg__error(err, TG_ERROR_PARSE, "%s: source name of %u bytes runs past the end (%zu bytes remain)", name,
                     source_len, body - at);
  const uint8_t *source = b + at;
  if (memchr(source, 0, source_len) != NULL)
    return tg__error(err, TG_ERROR_PARSE, "%s: source name contains a NUL byte", name);
  at += source_len;
  if (n > (body - at) / RECORD)
    return tg__error(err, TG_ERROR_PARSE, "%s: record table of %zu records needs %zu bytes each, only %zu remain",
                     name, n, (size_t)RECORD, body - at);
  const uint8_t *table = b + at;
  at += n * RECORD;
  size_t names_total = 0;
  for (size_t r = 0; r < n; ++r) {
    const uint8_t *e = table + r * RECORD;
    uint32_t len = get_u32(e + 40), res = get_u32(e + 44);
    if (res != 0) return tg__error(err, TG_ERROR_PARSE, "%s: record %zu: reserved field is %u, not 0", name, r, res);
    if (len == NO_NAME) continue;
    if (len > TG_PLAN_FILE_MAX_NAME)
      return tg__error(err, TG_ERROR_PARSE, "%s: record %zu: name of %u bytes exceeds %u", name, r, len,
                       TG_PLAN_FILE_MAX_NAME);
    if (len > body - at - names_total)
      return tg__error(err, TG_ERROR_PARSE, "%s: record %zu: name of %u bytes runs past the end (%zu bytes remain)",
                       name, r, len, body - at - names_total);
    names_total += len;
  }
  const uint8_t *names = b + at;
  at += names_total;
  size_t left = body - at, plan_bytes;
  if (mode == TG_MODE_OBJECTS) {
    if (n > left / 4 || objects64 > (left - n * 4) / 24)
      return tg__error(err, TG_ERROR_PARSE, "%s: plan of %zu records and %llu objects needs more than the %zu bytes left",
                       name, n, (unsigned long long)objects64, left);
    plan_bytes = n * 4 + (size_t)objects64 * 24;
  } else {
    if (objects64 != (n ? 1u : 0u))
      return tg__error(err, TG_ERROR_PARSE, "%s: header: an offsets plan of %zu records has %llu objects, not %d", name,
                       n, (unsigned long long)objects64, n ? 1 : 0);
    if (n > left / 8)
      return tg__error(err, TG_ERROR_PARSE, "%s: plan of %zu offsets needs more than the %zu bytes left", name, n, left);
    plan_bytes = n * 8;
  }
  if (version == 1 && plan_bytes != left)
    return tg__error(err, TG_ERROR_PARSE, "%s: %zu bytes between the plan and the checksum, expected none", name,
                     left - plan_bytes);
  if (plan_bytes == left && version > 1)
    return tg__error(err, TG_ERROR_PARSE, "%s: version %u without sections (written as version 1)", name, version);
  const uint8_t *plan_at = b + at;
  /* Version 2: tagged sections up to the checksum, each within the bytes left. */
  const uint8_t *sections = b + at + plan_bytes;
  size_t sections_bytes = left - plan_bytes;
  for (size_t q = 0; q < sections_bytes;) {
    if (sections_bytes - q < SECTION_HEAD)
      return tg__error(err, TG_ERROR_PARSE, "%s: %zu bytes after the sections, less than a section head", name,
                       sections_bytes - q);
    uint64_t len = get_u64(sections + q + 4);
    if (len > sections_bytes - q - SECTION_HEAD)
      return tg__error(err, TG_ERROR_PARSE, "%s: a section of %llu bytes runs past the end (%zu bytes remain)",
                       name, (unsigned long long)len, sections_bytes - q - SECTION_HEAD);
    uint32_t tag = get_u32(sections + q);
    if (tag != TAG_ARENAS && tag != TAG_LIMITS && tag != TAG_INPL && tag != TG__PF_TAG_RANGE) {
      char t[16];
      tag_text(tag, t);
      return tg__error(err, TG_ERROR_PARSE, "%s: unknown section %s (%llu bytes)", name, t, (unsigned long long)len);
    }
    q += SECTION_HEAD + (size_t)len;
  }

  /* Every size is known to lie within the file: build the objects. */
  tg_plan_file *f = tg__calloc(alloc, 1, sizeof *f);
  if (f == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", name);
  f->alloc = *alloc;
  tg_status st = TG_ERROR_OUT_OF_HOST_MEMORY;
  f->source = tg__strndup(alloc, (const char *)source, source_len);
  if (f->source == NULL) goto oom;
  if (tg_record_set_create(dims, n, alloc, &f->records) != TG_OK) goto oom;
  if (tg_plan_create((tg_mode)mode, dims, n, (size_t)objects64, alloc, &f->plan) != TG_OK) goto oom;
  size_t name_at = 0;
  for (size_t r = 0; r < n; ++r) {
    const uint8_t *e = table + r * RECORD;
    tg_usage_record *rec = &f->records->records[r];
    rec->size = (tg_extent){get_u64(e), get_u64(e + 8), get_u64(e + 16)};
    rec->alignment = get_u64(e + 24);
    rec->first_task = get_u32(e + 32);
    rec->last_task = get_u32(e + 36);
    if (record_problem(rec, dims, why, sizeof why)) {
      st = tg__error(err, TG_ERROR_PARSE, "%s: record %zu: %s", name, r, why);
      goto fail;
    }
    uint32_t len = get_u32(e + 40);
    if (len == NO_NAME) continue;
    if (memchr(names + name_at, 0, len) != NULL) {
      st = tg__error(err, TG_ERROR_PARSE, "%s: record %zu: name contains a NUL byte", name, r);
      goto fail;
    }
    f->records->names[r] = tg__strndup(alloc, (const char *)names + name_at, len);
    if (f->records->names[r] == NULL) goto oom;
    name_at += len;
  }
  tg_plan *p = f->plan;
  p->strategy = (tg_strategy)plan_strategy;
  p->fit = (tg_fit)fit;
  p->total = total;
  if (mode == TG_MODE_OBJECTS) {
    for (size_t r = 0; r < n; ++r) p->object_of[r] = get_u32(plan_at + 4 * r);
    const uint8_t *sizes = plan_at + 4 * n;
    for (size_t k = 0; k < p->object_count; ++k) {
      tg_extent e = {get_u64(sizes + 24 * k), get_u64(sizes + 24 * k + 8), get_u64(sizes + 24 * k + 16)};
      if ((dims < 2 && e.h != 1) || (dims < 3 && e.d != 1)) {
        st = tg__error(err, TG_ERROR_PARSE, "%s: object %zu: extent %llux%llux%llu has an unused dimension other than 1",
                       name, k, (unsigned long long)e.w, (unsigned long long)e.h, (unsigned long long)e.d);
        goto fail;
      }
      p->object_sizes[k] = e;
    }
  } else {
    for (size_t r = 0; r < n; ++r) p->offset_of[r] = get_u64(plan_at + 8 * r);
  }
  int seen_arenas = 0, seen_limits = 0;
  const uint8_t *range_at = NULL;
  uint64_t range_len = 0;
  for (size_t q = 0; q < sections_bytes;) {
    uint32_t tag = get_u32(sections + q);
    uint64_t len = get_u64(sections + q + 4);
    const uint8_t *payload = sections + q + SECTION_HEAD;
    if (tag == TG__PF_TAG_RANGE) {
      if (range_at != NULL) {
        st = tg__error(err, TG_ERROR_PARSE, "%s: section RNGE twice", name);
        goto fail;
      }
      /* Read once the plan it extends is known to be valid. */
      range_at = payload;
      range_len = len;
      q += SECTION_HEAD + (size_t)len;
      continue;
    }
    int *seen = tag == TAG_INPL ? NULL : tag == TAG_ARENAS ? &seen_arenas : &seen_limits;
    if (seen != NULL && *seen) {
      st = tg__error(err, TG_ERROR_PARSE, "%s: section %s twice", name, tag == TAG_ARENAS ? "ARNA" : "LIMS");
      goto fail;
    }
    if (tag == TAG_INPL)
      st = inpl_read(payload, len, n, p, name, err);
    else if (tag == TAG_ARENAS)
      st = arna_read(payload, len, p, n, name, err);
    else
      f->has_limits = (st = lims_read(payload, len, &f->limits, name, err)) == TG_OK;
    if (st != TG_OK) goto fail;
    if (seen != NULL) *seen = 1;
    q += SECTION_HEAD + (size_t)len;
  }
  st = TG_ERROR_OUT_OF_HOST_MEMORY;
  /* The fingerprint must be that of the records, and the plan valid for them. */
  memcpy(f->fingerprint, b + TG__PF_FINGERPRINT, TG_FINGERPRINT_BYTES);
  uint8_t fp[TG_FINGERPRINT_BYTES];
  tg_records_fingerprint(f->records->records, (const char *const *)f->records->names, n, dims, fp);
  if (memcmp(fp, f->fingerprint, sizeof fp) != 0) {
    st = tg__error(err, TG_ERROR_PARSE, "%s: the fingerprint does not match the file's records (edited or corrupted)",
                   name);
    goto fail;
  }
  tg_error_info verr = {{0}};
  st = tg_plan_validate(f->records->records, n, dims, p, alignment, NULL, alloc, &verr);
  if (st == TG_ERROR_INVALID_PLAN) {
    tg__error(err, st, "%s: the plan is invalid for its records: %s", name, verr.message);
    goto fail;
  }
  if (st != TG_OK) {
    tg__error(err, st, "%s: validating the plan: %s", name, tg_status_string(st));
    goto fail;
  }
  f->version = version;
  f->storage = (tg_storage)storage;
  f->precision = (tg_precision)precision;
  f->policy = (tg_policy)policy;
  f->strategy = (tg_strategy)strategy;
  f->alignment = alignment;
  f->flags = flags;
  if (range_at != NULL && (st = tg__pf_range_read(range_at, range_len, f, name, err)) != TG_OK) goto fail;
  *out = f;
  return TG_OK;
oom:
  st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", name);
fail:
  tg_plan_file_destroy(f);
  return st;
}

tg_status tg_plan_file_load(const char *path, const tg_allocator *alloc, tg_plan_file **out, tg_error_info *err) {
  if (out) *out = NULL;
  if (path == NULL || out == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "plan file: NULL path or output");
  char *data = NULL;
  size_t size = 0;
  tg_status st = tg__read_file(path, alloc, &data, &size, err);
  if (st != TG_OK) return st;
  st = tg_plan_file_parse(data, size, path, alloc, out, err);
  tg__free(tg__alloc_or_default(alloc), data);
  return st;
}

/* ---- matching a model's records ---- */

static int record_equal(const tg_usage_record *a, const tg_usage_record *b) {
  return a->size.w == b->size.w && a->size.h == b->size.h && a->size.d == b->size.d &&
         a->first_task == b->first_task && a->last_task == b->last_task && a->alignment == b->alignment;
}

static int name_equal(const char *a, const char *b) { return (a == NULL) == (b == NULL) && (!a || strcmp(a, b) == 0); }

static const char *shown(const char *s) { return s ? s : "(unnamed)"; }

tg_status tg_plan_file_match(const tg_plan_file *file, const tg_usage_record *records, const char *const *names,
                             size_t count, uint32_t dims, const tg_share_relation *relation,
                             const tg_allocator *alloc, tg_error_info *err) {
  if (file == NULL || (count && records == NULL) || dims < 1 || dims > 3)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "plan file: NULL file or records, or dims %u", dims);
  const tg_record_set *mine = file->records;
  /* The file's fingerprint is that of its records (checked on reading): comparing the records
   * themselves decides the same, exactly and without hashing. */
  int same = dims == mine->dims && count == mine->count;
  size_t r = 0;
  if (same) {
    while (r < count && record_equal(&records[r], &mine->records[r]) &&
           name_equal(names ? names[r] : NULL, mine->names[r]))
      ++r;
    same = r == count;
  }
  if (!same) {
    uint8_t fp[TG_FINGERPRINT_BYTES];
    tg_records_fingerprint(records, names, count, dims, fp);
    char h1[17], h2[17], diff[256] = "";
    hex16(file->fingerprint, h1);
    hex16(fp, h2);
    if (dims != mine->dims) {
      snprintf(diff, sizeof diff, "; these records are %uD, the plan's %uD", dims, mine->dims);
    } else {
      size_t common = count < mine->count ? count : mine->count;
      r = 0;
      while (r < common && record_equal(&records[r], &mine->records[r]) &&
             name_equal(names ? names[r] : NULL, mine->names[r]))
        ++r;
      if (r < common) {
        const tg_usage_record *a = &mine->records[r], *c = &records[r];
        snprintf(diff, sizeof diff,
                 "; first difference at record %zu: the plan's '%.60s' %llux%llux%llu [%u,%u], here '%.60s' "
                 "%llux%llux%llu [%u,%u]",
                 r, shown(mine->names[r]), (unsigned long long)a->size.w, (unsigned long long)a->size.h,
                 (unsigned long long)a->size.d, a->first_task, a->last_task, shown(names ? names[r] : NULL),
                 (unsigned long long)c->size.w, (unsigned long long)c->size.h, (unsigned long long)c->size.d,
                 c->first_task, c->last_task);
      } else if (count != mine->count) {
        snprintf(diff, sizeof diff, "; the first %zu records are equal", common);
      }
    }
    return tg__error(err, TG_ERROR_INVALID_PLAN,
                     "the plan was made for '%.160s' (%zu records, %s %s, fingerprint %s), not for these %zu "
                     "records (fingerprint %s)%s",
                     file->source[0] ? file->source : "(unnamed model)", mine->count, tg_storage_name(file->storage),
                     tg_precision_name(file->precision), h1, count, h2, diff);
  }
  if (relation == NULL) return TG_OK;
  tg_error_info verr = {{0}};
  tg_status st = tg_plan_validate(records, count, dims, file->plan, file->alignment, relation, alloc, &verr);
  if (st == TG_ERROR_INVALID_PLAN)
    return tg__error(err, st, "the plan made for '%.160s' breaks the reuse rule given here: %s",
                     file->source[0] ? file->source : "(unnamed model)", verr.message);
  if (st != TG_OK) return tg__error(err, st, "validating the plan: %s", tg_status_string(st));
  return TG_OK;
}

/* ---- tests and fuzz targets ---- */

void tg__plan_file_reseal(uint8_t *d, size_t size) {
  if (d == NULL || size < HEADER + CHECKSUM) return;
  put_u64(d + TG__PF_FILE_BYTES, size);
  size_t body = size - CHECKSUM;
  uint32_t dims = get_u32(d + TG__PF_DIMS), source_len = get_u32(d + TG__PF_SOURCE_BYTES);
  uint64_t count = get_u64(d + TG__PF_RECORD_COUNT);
  size_t at = HEADER;
  if (dims >= 1 && dims <= 3 && source_len <= body - at) {
    at += source_len;
    if (count <= (body - at) / RECORD) {
      const uint8_t *table = d + at;
      size_t names_at = at + (size_t)count * RECORD, used = 0;
      int inside = 1;
      tg__sha256 s;
      fp_begin(&s, dims, count);
      for (size_t r = 0; r < count && inside; ++r) {
        const uint8_t *e = table + r * RECORD;
        uint32_t len = get_u32(e + 40);
        tg_extent ext = {get_u64(e), get_u64(e + 8), get_u64(e + 16)};
        if (len != NO_NAME && len > body - names_at - used) {
          inside = 0;
          break;
        }
        fp_record(&s, ext, get_u64(e + 24), get_u32(e + 32), get_u32(e + 36),
                  len == NO_NAME ? NULL : d + names_at + used, len == NO_NAME ? UINT64_MAX : len);
        if (len != NO_NAME) used += len;
      }
      if (inside) tg__sha256_final(&s, d + TG__PF_FINGERPRINT);
    }
  }
  put_u32(d + body, tg__crc32(d, body));
}
