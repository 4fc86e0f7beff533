/* libFuzzer target: the planner on record sets decoded from the fuzz bytes. Every strategy runs
 * in both modes (every fit for offsets-mode greedy-in-order), twice; the properties below must
 * hold or the target aborts. Errors are fine when the input calls for them (TG_ERROR_OVERFLOW
 * for sizes near 2^64, TG_ERROR_INVALID_ARGUMENT for hostile records, TG_ERROR_UNSUPPORTED for
 * offsets mode on 2D/3D sets or for objects-only strategies); crashes, leaks and wrong answers
 * are bugs.
 *
 * Input format (every byte string decodes; missing bytes read as 0):
 *   byte 0  flags: bits 0-1 dims (0 and 3: 1D, 1: 2D, 2: 3D); bit 2 a may-share relation;
 *           bit 3 per-record alignments; bit 4 hostile records (see below); bit 5 a fault
 *           injection run; bit 6 a larger record cap; bit 7 (with bit 2) a relation that
 *           declares windows and transitivity (see structured_may_share)
 *   byte 1  plan alignment (offsets mode), an alignment code
 *   byte 2  relation seed, byte 3 relation threshold (pairs share when hash >= threshold;
 *           structured: slack = seed % 8, groups = 1 + threshold % 4)
 *   byte 4  mcf_max_records (0 = the default)
 *   byte 5  fault injection: allocation number byte + 1 fails
 *   byte 6  fault injection: mode (bit 0), strategy (bits 1-7 modulo the strategy count) and
 *           fit (bits 5-7 modulo 3)
 *   then records until the input ends: one value code per used dimension (w; h for 2D/3D;
 *   d for 3D), a task code for the first task, a task code for the length (last = first +
 *   length, saturated at UINT32_MAX), an alignment code when bit 3 is set, and when bit 4 is set
 *   one more byte: bit 0 swaps first and last, bits 1 and 2 give the unused height and depth a
 *   value code (usually != 1).
 *   value code: c < 0xC0 is c; 0xC0..0xDF an edge value from a table (powers of two near 2^32,
 *     2^63 and 2^64); 0xE0..0xEF two bytes shifted left by 4 * (c - 0xE0); 0xF0..0xFF 8 raw
 *     bytes (little-endian).
 *   task code: c < 0xF0 is c; 0xF0..0xF7 TG_MAX_TASK - (c - 0xF0); 0xF8..0xFB
 *     UINT32_MAX - (c - 0xF8); 0xFC..0xFF 4 raw bytes.
 *   alignment code: an entry of a table of small, odd, huge (2^63) and extreme values.
 *
 * Properties: statuses as the API documents them; every successful plan passes
 * tg_plan_validate (with the same alignment and relation); bounds are ordered (peak_live <=
 * positional_max <= shape-aware bound, LP bound <= naive) and at most every total they bound;
 * objects-mode naive equals the naive bound; a 1D objects plan, and an offsets plan without
 * alignment, never overflows when the naive sum fits; the same input gives the same plan
 * twice; tg_plan_objects_to_offsets of a 1D objects plan is valid; `best` succeeds exactly
 * when a strategy it runs does, with the smallest of their totals; with an allocation failing,
 * planning either fails with TG_ERROR_OUT_OF_HOST_MEMORY or returns the same plan, and nothing
 * leaks. In-place pairs (every record handed over, where one dies, to a record of its size born
 * there; the relation lets some write in place, from the same bytes): `best` with them gives a
 * valid plan never above the plan without them, every pair it uses is one the relation allows,
 * and the validator refuses that plan under a relation that allows none. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tangram/allocator.h"
#include "tangram/planner.h"
#include "tangram/records.h"

/* Name the broken property (by line) before aborting, so a crash input explains itself. */
#define FUZZ_FAIL() (fprintf(stderr, "%s:%d: property violated\n", __FILE__, __LINE__), abort())

/* Records decoded per input. Min-cost-flow and the relation checks are quadratic or worse, so
 * a modest cap keeps executions per second high; bit 6 raises it for inputs that want size. */
#define FUZZ_MAX_RECORDS 64
#define FUZZ_MAX_RECORDS_LARGE 256

typedef struct reader {
  const uint8_t *p, *end;
} reader;

static uint8_t read_u8(reader *r) { return r->p < r->end ? *r->p++ : 0; }

static uint64_t read_le(reader *r, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= (uint64_t)read_u8(r) << (8 * i);
  return v;
}

static uint64_t read_value(reader *r) {
  static const uint64_t k_edges[32] = {
      255, 256, 4095, 4096, 65535, 65536, UINT32_MAX / 2, (uint64_t)1 << 31,
      (uint64_t)UINT32_MAX - 1, UINT32_MAX, (uint64_t)1 << 32, ((uint64_t)1 << 32) + 1,
      (uint64_t)1 << 40, (uint64_t)1 << 48, ((uint64_t)1 << 62) - 1, (uint64_t)1 << 62,
      ((uint64_t)1 << 62) + 1, ((uint64_t)1 << 63) - 1, (uint64_t)1 << 63, ((uint64_t)1 << 63) + 1,
      UINT64_MAX / 3, (UINT64_MAX / 3) * 2, UINT64_MAX - 4096, UINT64_MAX - 255,
      UINT64_MAX - 2, UINT64_MAX - 1, UINT64_MAX, 3037000499u /* floor(sqrt(2^63)) */,
      3037000500u, 2642245 /* ~cbrt(2^64) */, 2642246, 6700417 /* 2^32+1 = 641 * 6700417 */};
  uint8_t c = read_u8(r);
  if (c < 0xC0) return c;
  if (c < 0xE0) return k_edges[c - 0xC0];
  if (c < 0xF0) return read_le(r, 2) << (4 * (c - 0xE0));
  return read_le(r, 8);
}

static uint32_t read_task(reader *r) {
  uint8_t c = read_u8(r);
  if (c < 0xF0) return c;
  if (c < 0xF8) return TG_MAX_TASK - (uint32_t)(c - 0xF0);
  if (c < 0xFC) return UINT32_MAX - (uint32_t)(c - 0xF8);
  return (uint32_t)read_le(r, 4);
}

static uint64_t read_alignment(reader *r) {
  static const uint64_t k_alignments[16] = {
      0, 1, 2, 3, 4, 8, 16, 24, 64, 128, 256, 4096, (uint64_t)1 << 32, (uint64_t)1 << 62,
      (uint64_t)1 << 63, UINT64_MAX};
  return k_alignments[read_u8(r) % 16];
}

/* A may-share relation drawn from the bytes: symmetric and pure, as the planner requires. */
typedef struct relation_state {
  uint64_t seed;
  uint8_t threshold;
} relation_state;

static int hashed_may_share(void *user, size_t a, size_t b) {
  const relation_state *s = user;
  if (a > b) {
    size_t t = a;
    a = b;
    b = t;
  }
  uint64_t h = s->seed ^ ((uint64_t)a * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)b * 0xC2B2AE3D27D4EB4Full);
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 29;
  return (uint8_t)h >= s->threshold;
}

/* Which in-place pairs the hashed relation lets write (about as many as it lets share). */
static uint64_t pair_hash(uint64_t seed, size_t input, size_t output, uint32_t op) {
  uint64_t h = seed ^ ((uint64_t)input * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)output * 0xC2B2AE3D27D4EB4Full) ^
               ((uint64_t)op << 32);
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 29;
  return h;
}

static int hashed_in_place(void *user, size_t input, size_t output, uint32_t op, uint32_t *other) {
  const relation_state *s = user;
  *other = op > 0 ? op - 1 : UINT32_MAX;
  return (uint8_t)(pair_hash(s->seed, input, output, op) >> 8) >= s->threshold;
}

/* A relation with both optional facts: records whose windows [first, last + slack] do not
 * intersect may share, others only within one of `groups` hashed groups. Windows all extend by
 * the same slack, so disjoint windows of a before b imply disjoint windows of a and anything
 * after b: the relation is transitive along time. */
typedef struct structured_state {
  const tg_usage_record *records;
  uint64_t slack;
  uint32_t groups;
  uint64_t seed;
} structured_state;

static void structured_window(void *user, size_t r, uint64_t *lo, uint64_t *hi) {
  const structured_state *s = user;
  *lo = s->records[r].first_task;
  *hi = (uint64_t)s->records[r].last_task + s->slack;
}

static int structured_may_share(void *user, size_t a, size_t b) {
  const structured_state *s = user;
  uint64_t alo, ahi, blo, bhi;
  structured_window(user, a, &alo, &ahi);
  structured_window(user, b, &blo, &bhi);
  if (ahi < blo || bhi < alo) return 1;
  uint64_t ha = (s->seed ^ a) * 0x9E3779B97F4A7C15ull, hb = (s->seed ^ b) * 0x9E3779B97F4A7C15ull;
  return (ha >> 40) % s->groups == (hb >> 40) % s->groups;
}

static int structured_in_place(void *user, size_t input, size_t output, uint32_t op, uint32_t *other) {
  const structured_state *s = user;
  *other = UINT32_MAX;
  return (pair_hash(s->seed, input, output, op) >> 40) % s->groups == 0;
}

typedef struct input {
  uint32_t dims;
  size_t count;
  tg_usage_record records[FUZZ_MAX_RECORDS_LARGE];
  uint64_t alignment;        /* the plan's */
  int per_record_alignment;  /* some record has alignment > 1 */
  int invalid;               /* some record has first > last or an unused dimension != 1 */
  int volume_overflow;       /* some record's volume does not fit 64 bits */
  tg_share_relation relation;
  tg_share_relation plain;   /* the structured relation without its two facts */
  relation_state rel_state;
  structured_state structured;
  int use_relation;
  int use_structured;
  size_t mcf_max_records;
  int fault;
  uint64_t fail_at;
  uint8_t fault_choice;
  uint64_t shape_bound;      /* tg_bounds_objects_shape when the bounds succeeded */
  uint64_t lp_bound;         /* tg_bounds_objects_lp (small work cap) when they succeeded */
  uint32_t beam_width;       /* 0 (the default, 8) to 3, from the relation byte */
  tg_in_place_pair pairs[FUZZ_MAX_RECORDS_LARGE];
  size_t pair_count;
} input;

static void decode(const uint8_t *data, size_t size, input *in) {
  reader r = {data, data + size};
  uint8_t flags = read_u8(&r);
  in->dims = (flags & 3) == 1 ? 2 : (flags & 3) == 2 ? 3 : 1;
  in->use_relation = (flags >> 2) & 1;
  int with_alignment = (flags >> 3) & 1;
  int hostile = (flags >> 4) & 1;
  in->fault = (flags >> 5) & 1;
  size_t cap = (flags >> 6) & 1 ? FUZZ_MAX_RECORDS_LARGE : FUZZ_MAX_RECORDS;
  in->alignment = read_alignment(&r);
  in->rel_state.seed = read_u8(&r) * 0x0101010101010101ull;
  in->rel_state.threshold = read_u8(&r);
  in->beam_width = (uint32_t)(in->rel_state.threshold >> 6);
  in->use_structured = in->use_relation && (flags >> 7);
  memset(&in->relation, 0, sizeof in->relation);
  memset(&in->plain, 0, sizeof in->plain);
  if (in->use_structured) {
    in->structured.records = in->records;
    in->structured.slack = in->rel_state.seed & 7;
    in->structured.groups = 1 + in->rel_state.threshold % 4;
    in->structured.seed = in->rel_state.seed;
    in->relation.may_share = in->plain.may_share = structured_may_share;
    in->relation.user = in->plain.user = &in->structured;
    in->relation.window = structured_window;
    in->relation.transitive = 1;
    in->relation.in_place = in->plain.in_place = structured_in_place;
  } else {
    in->relation.may_share = hashed_may_share;
    in->relation.user = &in->rel_state;
    in->relation.in_place = hashed_in_place;
  }
  in->mcf_max_records = read_u8(&r);
  in->fail_at = (uint64_t)read_u8(&r) + 1;
  in->fault_choice = read_u8(&r);
  in->count = 0;
  in->per_record_alignment = in->invalid = in->volume_overflow = 0;
  while (r.p < r.end && in->count < cap) {
    tg_usage_record *rec = &in->records[in->count++];
    rec->size.w = read_value(&r);
    rec->size.h = in->dims >= 2 ? read_value(&r) : 1;
    rec->size.d = in->dims >= 3 ? read_value(&r) : 1;
    uint32_t first = read_task(&r), length = read_task(&r);
    rec->first_task = first;
    rec->last_task = length > UINT32_MAX - first ? UINT32_MAX : first + length;
    rec->alignment = with_alignment ? read_alignment(&r) : 0;
    if (hostile) {
      uint8_t h = read_u8(&r);
      if (h & 1) {
        uint32_t t = rec->first_task;
        rec->first_task = rec->last_task;
        rec->last_task = t;
      }
      if ((h & 2) && in->dims < 2) rec->size.h = read_value(&r);
      if ((h & 4) && in->dims < 3) rec->size.d = read_value(&r);
    }
    if (rec->alignment > 1) in->per_record_alignment = 1;
    if (rec->first_task > rec->last_task || (in->dims < 2 && rec->size.h != 1) ||
        (in->dims < 3 && rec->size.d != 1))
      in->invalid = 1;
    uint64_t v;
    if (tg_extent_volume(rec->size, &v) != TG_OK) in->volume_overflow = 1;
  }
  /* In-place pairs: each record, where it dies, handed over to the first record of its size
   * born there (one pair per record as input and as output). */
  in->pair_count = 0;
  unsigned char taken[FUZZ_MAX_RECORDS_LARGE] = {0};
  for (size_t a = 0; a < in->count; ++a) {
    const tg_usage_record *ra = &in->records[a];
    for (size_t b = 0; b < in->count; ++b) {
      const tg_usage_record *rb = &in->records[b];
      if (b == a || (taken[b] & 2) || rb->first_task != ra->last_task || rb->size.w != ra->size.w ||
          rb->size.h != ra->size.h || rb->size.d != ra->size.d)
        continue;
      in->pairs[in->pair_count++] = (tg_in_place_pair){ra->last_task, a, b, (int)(b & 1)};
      taken[a] |= 1;
      taken[b] |= 2;
      break;
    }
  }
}

static int same_plan(const tg_plan *a, const tg_plan *b) {
  if (a->mode != b->mode || a->dims != b->dims || a->total != b->total ||
      a->object_count != b->object_count || a->record_count != b->record_count ||
      a->strategy != b->strategy || a->fit != b->fit)
    return 0;
  size_t n = a->record_count;
  if (a->mode == TG_MODE_OFFSETS)
    return n == 0 || memcmp(a->offset_of, b->offset_of, n * sizeof *a->offset_of) == 0;
  return (n == 0 || memcmp(a->object_of, b->object_of, n * sizeof *a->object_of) == 0) &&
         (a->object_count == 0 ||
          memcmp(a->object_sizes, b->object_sizes, a->object_count * sizeof *a->object_sizes) == 0);
}

static int applicable(tg_mode mode, tg_strategy s, uint32_t dims) {
  /* Offsets mode on 2D/3D records is checked apart (TG_ERROR_UNSUPPORTED whatever the
   * strategy): ask about 1D there. */
  return tg_strategy_applies(s, mode, mode == TG_MODE_OFFSETS ? 1 : dims);
}

/* Does `best` run strategy s on this input (beside applying to the mode)? */
static int in_best(const input *in, tg_strategy s) {
  size_t mcf_max = in->mcf_max_records ? in->mcf_max_records : TG_DEFAULT_MCF_MAX_RECORDS;
  if (s == TG_STRATEGY_MIN_COST_FLOW) return in->count <= mcf_max;
  if (s == TG_STRATEGY_BEAM || s == TG_STRATEGY_ALLOCATION_TREE)
    return in->count <= TG_BEST_PEERS_MAX_RECORDS;
  if (s == TG_STRATEGY_HILL_CLIMB)
    return in->count <= TG_BEST_PEERS_MAX_RECORDS && !in->use_relation;
  return 1;
}

static tg_plan_options options_for(const input *in, tg_mode mode, tg_strategy s, tg_fit fit) {
  tg_plan_options o = {
      .mode = mode, .strategy = s, .fit = fit, .alignment = in->alignment,
      .relation = in->use_relation ? &in->relation : NULL, .mcf_max_records = in->mcf_max_records
  };
  /* Beam: a width from the input (0 = the default); best: no search, so that it is the
   * smallest of its strategies' plans (the search is checked by the property test). */
  o.beam_width = in->beam_width;
  o.time_limit_ms = TG_TIME_LIMIT_NONE;
  return o;
}

/* Plan once with the given options and check the status and the plan; returns the plan (NULL
 * on an expected failure) for the determinism check. */
static tg_plan *plan_checked(const input *in, const tg_plan_options *o, const tg_bounds *b,
                             int bounds_ok, const tg_allocator *a) {
  tg_plan *p = NULL;
  tg_status st = tg_plan_compute(in->records, in->count, in->dims, o, a, &p);
  if (st != TG_OK) {
    if (p != NULL) FUZZ_FAIL();
    if (o->mode == TG_MODE_OFFSETS && in->dims != 1) {
      if (st != TG_ERROR_UNSUPPORTED) FUZZ_FAIL();
    } else if (!applicable(o->mode, o->strategy, in->dims)) {
      if (st != TG_ERROR_UNSUPPORTED) FUZZ_FAIL();
    } else if (in->invalid) {
      if (st != TG_ERROR_INVALID_ARGUMENT && !(st == TG_ERROR_OVERFLOW && in->volume_overflow))
        FUZZ_FAIL();
    } else if (st != TG_ERROR_OVERFLOW) {
      FUZZ_FAIL();
    } else if (bounds_ok && !in->volume_overflow) {
      /* The naive sum fits: a 1D objects total (each object at most the sum of its records)
       * and an unaligned offsets total (each record placed below the sum of those before it)
       * fit too (greedy-coloring's objects are rounded up to the alignment first). 2D/3D
       * objects are per-dimension maxima and can legitimately overflow. */
      if (o->mode == TG_MODE_OBJECTS && in->dims == 1 &&
          !(o->strategy == TG_STRATEGY_GREEDY_COLORING && o->alignment > 1))
        FUZZ_FAIL();
      if (o->mode == TG_MODE_OFFSETS && o->alignment <= 1 && !in->per_record_alignment) FUZZ_FAIL();
    }
    return NULL;
  }
  if (p == NULL || in->invalid || in->volume_overflow || !applicable(o->mode, o->strategy, in->dims) ||
      (o->mode == TG_MODE_OFFSETS && in->dims != 1))
    FUZZ_FAIL();
  if (p->mode != o->mode || p->dims != in->dims || p->record_count != in->count) FUZZ_FAIL();
  if (o->strategy != TG_STRATEGY_BEST && p->strategy != o->strategy) FUZZ_FAIL();
  tg_error_info err = {{0}};
  if (tg_plan_validate(in->records, in->count, in->dims, p,
                       o->mode == TG_MODE_OFFSETS ? o->alignment : 0, o->relation, a,
                       &err) != TG_OK)
    FUZZ_FAIL();
  if (bounds_ok) {
    if (p->total < b->peak_live) FUZZ_FAIL();
    if (o->mode == TG_MODE_OBJECTS && p->total < b->positional_max) FUZZ_FAIL();
    if (o->mode == TG_MODE_OBJECTS && (p->total < in->shape_bound || p->total < in->lp_bound)) FUZZ_FAIL();
    if (o->mode == TG_MODE_OBJECTS && o->strategy == TG_STRATEGY_NAIVE && p->total != b->naive)
      FUZZ_FAIL();
  }
  /* The objects -> offsets layout of a 1D plan. Record alignments are the caller's business
   * there (the function aligns objects only to its argument), so validate only without them.
   * greedy-coloring with an alignment pads its objects (Mini-Infer's pools), which that layout
   * keeps: its total may then exceed the records' extent, and only the unpadded plans count.
   * The plan's own strategy decides: `best` may keep greedy-coloring's padded plan. */
  if (o->mode == TG_MODE_OBJECTS && in->dims == 1 &&
      !(p->strategy == TG_STRATEGY_GREEDY_COLORING && in->alignment > 1)) {
    tg_plan *q = NULL;
    tg_status st = tg_plan_objects_to_offsets(p, in->alignment, a, &q);
    if (st == TG_OK) {
      if (!in->per_record_alignment &&
          tg_plan_validate(in->records, in->count, 1, q, in->alignment, o->relation, a, &err) != TG_OK)
        FUZZ_FAIL();
      if (in->alignment <= 1 && q->total != p->total) FUZZ_FAIL();
    } else if (st != TG_ERROR_OVERFLOW || q != NULL || in->alignment <= 1) {
      /* Unaligned, the layout's total is the objects total, which fits. */
      FUZZ_FAIL();
    }
    tg_plan_destroy(q);
  }
  return p;
}

/* One strategy (and fit) in one mode: checked, then planned again for determinism. Returns 1
 * with the plan's total in `*total` when it succeeded. */
static int run_one(const input *in, tg_mode mode, tg_strategy s, tg_fit fit, const tg_bounds *b,
                   int bounds_ok, const tg_allocator *a, uint64_t *total) {
  tg_plan_options o = options_for(in, mode, s, fit);
  tg_plan *p = plan_checked(in, &o, b, bounds_ok, a);
  tg_plan *q = NULL;
  tg_status st = tg_plan_compute(in->records, in->count, in->dims, &o, a, &q);
  if ((p == NULL) != (st != TG_OK)) FUZZ_FAIL();
  if (p != NULL && !same_plan(p, q)) FUZZ_FAIL();
  if (in->use_structured) {
    /* The facts only speed planning up: without them the plan is the same. */
    tg_plan_options plain = o;
    plain.relation = &in->plain;
    tg_plan *r = NULL;
    st = tg_plan_compute(in->records, in->count, in->dims, &plain, a, &r);
    if ((p == NULL) != (st != TG_OK) || (p != NULL && !same_plan(p, r))) FUZZ_FAIL();
    tg_plan_destroy(r);
  }
  int ok = p != NULL;
  if (ok) *total = p->total;
  tg_plan_destroy(p);
  tg_plan_destroy(q);
  return ok;
}

/* Every strategy of one mode, then `best`: it must succeed exactly when one of the strategies
 * it runs does, with the smallest of their totals. */
static void run_mode(const input *in, tg_mode mode, const tg_bounds *b, int bounds_ok,
                     const tg_allocator *a) {
  int any = 0;
  uint64_t smallest = UINT64_MAX, total = 0;
  for (int s = 0; s < TG_STRATEGY_COUNT; ++s) {
    if (s == TG_STRATEGY_BEST) continue;
    int fits = mode == TG_MODE_OFFSETS && s == TG_STRATEGY_GREEDY_IN_ORDER ? 3 : 1;
    for (int f = 0; f < fits; ++f) {
      if (!run_one(in, mode, (tg_strategy)s, (tg_fit)f, b, bounds_ok, a, &total)) continue;
      if (!in_best(in, (tg_strategy)s)) continue;
      any = 1;
      if (total < smallest) smallest = total;
    }
  }
  /* `best` runs beam at its default width: that plan counts too (the loop ran the input's). */
  if (in->beam_width != 0 && in_best(in, TG_STRATEGY_BEAM)) {
    input *copy = malloc(sizeof *copy);
    if (copy == NULL) return;
    *copy = *in; /* the relations' state pointers still lead to `in`'s, which outlives it */
    copy->beam_width = 0;
    if (run_one(copy, mode, TG_STRATEGY_BEAM, TG_FIT_BEST, b, bounds_ok, a, &total)) {
      any = 1;
      if (total < smallest) smallest = total;
    }
    free(copy);
  }
  int best_ok = run_one(in, mode, TG_STRATEGY_BEST, TG_FIT_BEST, b, bounds_ok, a, &total);
  if (best_ok != any || (best_ok && total != smallest)) FUZZ_FAIL();
}

static int share_always(void *user, size_t a, size_t b) {
  (void)user;
  (void)a;
  (void)b;
  return 1;
}

/* `best` with the input's in-place pairs: valid, never above the plan without them, every pair
 * used allowed by the relation, and refused by the validator under a relation allowing none. */
static void run_in_place(const input *in, tg_mode mode, const tg_allocator *a) {
  if (in->pair_count == 0 || in->invalid || in->volume_overflow || (mode == TG_MODE_OFFSETS && in->dims != 1)) return;
  tg_plan_options o = options_for(in, mode, TG_STRATEGY_BEST, TG_FIT_BEST);
  tg_plan *plain = NULL, *p = NULL;
  tg_status st0 = tg_plan_compute(in->records, in->count, in->dims, &o, a, &plain);
  o.in_place = in->pairs;
  o.in_place_count = in->pair_count;
  tg_status st = tg_plan_compute(in->records, in->count, in->dims, &o, a, &p);
  if ((st == TG_OK) != (p != NULL)) FUZZ_FAIL();
  if (st != TG_OK && st != TG_ERROR_OVERFLOW) FUZZ_FAIL();
  if (st == TG_OK) {
    tg_error_info err = {{0}};
    if (tg_plan_validate(in->records, in->count, in->dims, p, mode == TG_MODE_OFFSETS ? o.alignment : 0, o.relation,
                         a, &err) != TG_OK)
      FUZZ_FAIL();
    if (st0 == TG_OK && p->total > plain->total) FUZZ_FAIL();
    for (size_t i = 0; i < p->in_place_count; ++i) {
      const tg_in_place_pair *q = &p->in_place[i];
      uint32_t other = 0;
      if (o.relation != NULL && !o.relation->in_place(o.relation->user, q->input, q->output, q->op, &other))
        FUZZ_FAIL();
    }
    if (p->in_place_count > 0) {
      tg_share_relation none = {share_always, NULL, NULL, 0, NULL};
      if (o.relation != NULL) none = *o.relation;
      none.in_place = NULL;
      if (tg_plan_validate(in->records, in->count, in->dims, p, mode == TG_MODE_OFFSETS ? o.alignment : 0, &none, a,
                           &err) != TG_ERROR_INVALID_PLAN)
        FUZZ_FAIL();
    }
  }
  tg_plan_destroy(plain);
  tg_plan_destroy(p);
}

/* One plan with the `fail_at`-th allocation failing: a clean failure or the same plan. */
static void run_fault(const input *in, const tg_allocator *a) {
  tg_mode mode = (tg_mode)(in->fault_choice & 1);
  tg_strategy s = (tg_strategy)((in->fault_choice >> 1) % TG_STRATEGY_COUNT);
  tg_plan_options o = options_for(in, mode, s, (tg_fit)((in->fault_choice >> 5) % 3));
  tg_plan *ref = NULL;
  tg_status ref_st = tg_plan_compute(in->records, in->count, in->dims, &o, a, &ref);
  tg_failing_allocator fa;
  tg_failing_allocator_init(&fa, a, in->fail_at);
  tg_plan *p = NULL;
  tg_status st = tg_plan_compute(in->records, in->count, in->dims, &o, &fa.base, &p);
  if (st == TG_OK) {
    if (ref_st != TG_OK || !same_plan(p, ref)) FUZZ_FAIL();
  } else if (p != NULL || (st != ref_st && st != TG_ERROR_OUT_OF_HOST_MEMORY)) {
    FUZZ_FAIL();
  }
  tg_plan_destroy(p);
  if (fa.live_blocks != 0) FUZZ_FAIL();

  tg_failing_allocator_init(&fa, a, in->fail_at);
  tg_bounds b;
  st = tg_bounds_compute(in->records, in->count, in->dims, &fa.base, &b);
  if (st == TG_ERROR_OUT_OF_HOST_MEMORY && (b.peak_live || b.positional_max || b.naive)) FUZZ_FAIL();
  if (fa.live_blocks != 0) FUZZ_FAIL();

  if (ref_st == TG_OK) {
    tg_failing_allocator_init(&fa, a, in->fail_at);
    tg_error_info err = {{0}};
    st = tg_plan_validate(in->records, in->count, in->dims, ref, o.alignment, o.relation,
                          &fa.base, &err);
    if (st != TG_OK && st != TG_ERROR_OUT_OF_HOST_MEMORY) FUZZ_FAIL();
    if (fa.live_blocks != 0) FUZZ_FAIL();
  }
  tg_plan_destroy(ref);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* About 8 KB on the heap rather than the stack: libFuzzer threads may have small stacks. */
  input *in = malloc(sizeof *in);
  if (in == NULL) return 0;
  decode(data, size, in);
  tg_failing_allocator fa; /* counts blocks: everything must be freed */
  tg_failing_allocator_init(&fa, NULL, 0);

  tg_bounds b;
  tg_status st = tg_bounds_compute(in->records, in->count, in->dims, &fa.base, &b);
  int bounds_ok = st == TG_OK;
  if (bounds_ok) {
    if (in->invalid || in->volume_overflow) FUZZ_FAIL();
    if (b.peak_live > b.positional_max || b.positional_max > b.naive) FUZZ_FAIL();
  } else if (st == TG_ERROR_INVALID_ARGUMENT) {
    if (!in->invalid) FUZZ_FAIL();
  } else if (st != TG_ERROR_OVERFLOW) {
    FUZZ_FAIL();
  }

  /* The shape-aware bound: the same input checks, between the positional maximum and every
   * objects plan (checked in plan_checked). */
  in->shape_bound = 0;
  uint64_t shape = 0;
  st = tg_bounds_objects_shape(in->records, in->count, in->dims, &fa.base, &shape);
  if (bounds_ok) {
    if (st != TG_OK || shape < b.positional_max || shape > b.naive) FUZZ_FAIL();
    in->shape_bound = shape;
  } else if (st == TG_OK || shape != 0) {
    FUZZ_FAIL();
  }
  /* The LP bound, on a small work cap (still a valid bound): the same input checks, at least
   * the positional maximum, at most every objects plan (plan_checked). */
  in->lp_bound = 0;
  uint64_t lp = 0;
  st = tg_bounds_objects_lp(in->records, in->count, in->dims, 0, 20000000, &fa.base, &lp);
  if (bounds_ok) {
    if (st != TG_OK || lp < b.positional_max || lp > b.naive) FUZZ_FAIL();
    in->lp_bound = lp;
  } else if (st == TG_OK || lp != 0) {
    FUZZ_FAIL();
  }
  run_mode(in, TG_MODE_OBJECTS, &b, bounds_ok, &fa.base);
  run_mode(in, TG_MODE_OFFSETS, &b, bounds_ok, &fa.base);
  run_in_place(in, TG_MODE_OBJECTS, &fa.base);
  run_in_place(in, TG_MODE_OFFSETS, &fa.base);
  if (in->fault) run_fault(in, &fa.base);
  free(in);
  if (fa.live_blocks != 0) FUZZ_FAIL();
  return 0;
}
