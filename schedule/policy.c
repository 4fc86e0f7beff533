/* Reuse policies as may-share relations over usage records.
 *
 * parallel-safe: record B may take record A's memory when every op touching A (its producer
 * and its consumers) happens before B's producer. Per record A we keep D(A), the set of ops
 * that every op touching A happens before: the intersection of its consumers' reach rows (the
 * producer reaches each consumer, so its own row adds nothing). Then
 *   may_share(A, B)  <=>  producer(B) in D(A)  or  producer(A) in D(B)
 * is two bit tests. A tensor nothing reads has D = the producer's row. A graph output is read
 * by the host after the run, after every op: D = {}. A tensor without a scheduled producer (a
 * graph input, or a constant folded at load time) is written before every op: it can give its
 * memory away (to ops after all its readers) but never take memory from another record.
 *
 * In-place pairs: an op may write its output over an input when it is the input's last reader
 * and every other op touching the input happens before it (tg__sched_next_unordered finds none);
 * branch-local adds that the input's producer is in the op's branch. Per record we keep its
 * last reader and the first op in the way, so the test is O(1) too. */
#include "schedule/schedule_internal.h"

#include <string.h>

struct tg_policy_relation {
  tg_share_relation relation;
  tg_policy policy;
  size_t count;
  /* One entry per record, packed: planners call may_share for one record against many
   * others, and each of those should cost one cache line here plus one word of `done`. */
  struct record_info {
    int32_t producer;    /* scheduled producer op, -1 if none */
    uint32_t branch;     /* branch of the producer (the trunk when none) */
    size_t first_word;   /* D(record) holds only ops above its last toucher: its words */
    size_t done_start;   /* first_word .. words-1 are stored at done + done_start */
    uint64_t window_hi;  /* the last op not in D(record) (see window_parallel_safe) */
  } *info;
  uint64_t *done;
  /* Per record: may its last reader write over it in place? Kept apart from `info`, which
   * planners read for every candidate pair of records. */
  struct pair_info {
    int32_t last_reader; /* -1 when nothing reads it, or the host reads it after the run */
    int32_t unordered;   /* an op touching it not ordered before last_reader, else -1 */
  } *pair;
  tg_allocator alloc;
};

static const char *const k_policy_names[TG_POLICY_COUNT] = {"serial", "parallel-safe",
                                                            "branch-local"};

const char *tg_policy_name(tg_policy p) {
  return ((unsigned)p < TG_POLICY_COUNT) ? k_policy_names[p] : NULL;
}

tg_status tg_policy_from_name(const char *name, tg_policy *out) {
  if (name == NULL || out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  for (int i = 0; i < TG_POLICY_COUNT; ++i)
    if (strcmp(name, k_policy_names[i]) == 0) {
      *out = (tg_policy)i;
      return TG_OK;
    }
  return TG_ERROR_INVALID_ARGUMENT;
}

/* op in D(record)? */
static int in_done(const tg_policy_relation *r, const struct record_info *record, int32_t op) {
  if (op < 0) return 0;
  size_t w = (size_t)op / 64;
  if (w < record->first_word) return 0;
  return (int)((r->done[record->done_start + (w - record->first_word)] >> ((size_t)op % 64)) & 1u);
}

static int parallel_safe(const tg_policy_relation *r, const struct record_info *a,
                         const struct record_info *b) {
  return in_done(r, a, b->producer) || in_done(r, b, a->producer);
}

static int may_share_parallel_safe(void *user, size_t a, size_t b) {
  const tg_policy_relation *r = user;
  if (a >= r->count || b >= r->count) return 0;
  return parallel_safe(r, &r->info[a], &r->info[b]);
}

static int may_share_branch_local(void *user, size_t a, size_t b) {
  const tg_policy_relation *r = user;
  if (a >= r->count || b >= r->count) return 0;
  const struct record_info *ia = &r->info[a], *ib = &r->info[b];
  return ia->branch == ib->branch && parallel_safe(r, ia, ib);
}

static int in_place_allowed(void *user, size_t input, size_t output, uint32_t op, uint32_t *other) {
  const tg_policy_relation *r = user;
  uint32_t scratch;
  if (other == NULL) other = &scratch;
  *other = UINT32_MAX;
  if (input >= r->count || output >= r->count) return 0;
  const struct pair_info *pi = &r->pair[input];
  if (pi->last_reader != (int32_t)op) {
    if (pi->last_reader > (int32_t)op) *other = (uint32_t)pi->last_reader;
    return 0;
  }
  if (r->info[output].producer != (int32_t)op) return 0;
  if (pi->unordered >= 0) {
    *other = (uint32_t)pi->unordered;
    return 0;
  }
  if (r->policy == TG_POLICY_BRANCH_LOCAL && r->info[input].branch != r->info[output].branch) {
    if (r->info[input].producer >= 0) *other = (uint32_t)r->info[input].producer;
    return 0;
  }
  return 1;
}

/* The window of record a (tg_share_relation.window): from its producer (0 without one: it may
 * not take memory from any record) to the last op not in D(a). A record b whose window starts
 * after that has a producer in D(a), so a may give b its memory; records with disjoint windows
 * may therefore always share. */
static void window_parallel_safe(void *user, size_t a, uint64_t *lo, uint64_t *hi) {
  const tg_policy_relation *r = user;
  if (a >= r->count) {
    *lo = 0;
    *hi = UINT64_MAX;
    return;
  }
  const struct record_info *ia = &r->info[a];
  *lo = ia->producer >= 0 ? (uint64_t)ia->producer : 0;
  *hi = ia->window_hi;
}

/* The last op (below op_count) not in the stored D row, or first_word * 64 - 1 when every stored
 * op is in it (ops below first_word * 64 are never in D); 0 when there is none at all. */
static uint64_t last_op_not_done(const uint64_t *row, size_t first_word, size_t words,
                                 size_t op_count) {
  for (size_t w = words; w-- > first_word;) {
    uint64_t word = row[w - first_word];
    size_t valid = op_count - w * 64; /* ops in this word */
    if (valid < 64) word |= ~(uint64_t)0 << valid;
    if (word != ~(uint64_t)0) {
      unsigned bit = 63;
      while ((word >> bit) & 1u) --bit;
      return (uint64_t)w * 64 + bit;
    }
  }
  return first_word > 0 ? (uint64_t)first_word * 64 - 1 : 0;
}

void tg_policy_relation_destroy(tg_policy_relation *r) {
  if (r == NULL) return;
  tg_allocator a = r->alloc;
  tg__free(&a, r->info);
  tg__free(&a, r->done);
  tg__free(&a, r->pair);
  tg__free(&a, r);
}

/* The first word of D(tensor t) worth storing: nothing below its last toucher's word. */
static size_t done_first_word(const tg_schedule *s, size_t t) {
  if (s->is_output[t]) return s->words; /* empty */
  size_t first = s->consumer_start[t], end = s->consumer_start[t + 1];
  if (first < end) return s->consumers[end - 1] / 64; /* consumers are ascending */
  int32_t p = tg__sched_producer(s, t);
  return p >= 0 ? (size_t)p / 64 : 0;
}

/* D(tensor t) into `row` (words first .. words-1, zeroed on entry), over the happens-before
 * closure `c` (the schedule's own, or one with more edges). */
static void fill_done(const tg_schedule *s, const tg__closure *c, size_t t, size_t first,
                      uint64_t *row) {
  size_t len = s->words - first;
  if (len == 0) return;
  size_t cfirst = s->consumer_start[t], cend = s->consumer_start[t + 1];
  if (cfirst < cend) {
    for (size_t w = 0; w < len; ++w) row[w] = ~(uint64_t)0;
    for (size_t k = cfirst; k < cend; ++k) {
      size_t op = s->consumers[k];
      for (size_t w = 0; w < len; ++w) row[w] &= tg__closure_word(c, op, first + w);
    }
    return;
  }
  int32_t p = tg__sched_producer(s, t);
  if (p >= 0) {
    for (size_t w = 0; w < len; ++w) row[w] = tg__closure_word(c, (size_t)p, first + w);
    return;
  }
  /* Written before the run and never read: it is dead for every op. */
  for (size_t w = 0; w < len; ++w) row[w] = ~(uint64_t)0;
}

tg_status tg_policy_relation_create(const tg_schedule *s, tg_policy policy,
                                    const uint32_t *tensor_of_record, size_t record_count,
                                    const tg_allocator *alloc, tg_policy_relation **out) {
  return tg__policy_relation_create_over(s, s ? &s->reach : NULL, policy, tensor_of_record,
                                         record_count, alloc, out);
}

tg_status tg__policy_relation_create_over(const tg_schedule *s, const tg__closure *reach,
                                          tg_policy policy, const uint32_t *tensor_of_record,
                                          size_t record_count, const tg_allocator *alloc,
                                          tg_policy_relation **out) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  if (s == NULL || reach == NULL || reach->n != s->op_count ||
      (unsigned)policy >= TG_POLICY_COUNT || (tensor_of_record == NULL && record_count > 0))
    return TG_ERROR_INVALID_ARGUMENT;
  for (size_t r = 0; r < record_count; ++r)
    if (tensor_of_record[r] >= s->tensor_count) return TG_ERROR_INVALID_ARGUMENT;
  alloc = tg__alloc_or_default(alloc);
  tg_policy_relation *rel = tg__calloc(alloc, 1, sizeof *rel);
  if (rel == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  rel->alloc = *alloc;
  rel->policy = policy;
  rel->count = record_count;
  if (policy == TG_POLICY_SERIAL) {
    *out = rel;
    return TG_OK;
  }
  tg_status st = TG_ERROR_OUT_OF_HOST_MEMORY;
  rel->info = tg__calloc(alloc, record_count ? record_count : 1, sizeof *rel->info);
  rel->pair = tg__calloc(alloc, record_count ? record_count : 1, sizeof *rel->pair);
  if (rel->info == NULL || rel->pair == NULL) goto fail;
  size_t total = 0;
  for (size_t r = 0; r < record_count; ++r) {
    size_t first = done_first_word(s, tensor_of_record[r]), len = s->words - first;
    rel->info[r].first_word = first;
    rel->info[r].done_start = total;
    if (total > SIZE_MAX / sizeof *rel->done - len) {
      st = TG_ERROR_OVERFLOW;
      goto fail;
    }
    total += len;
  }
  rel->done = tg__calloc(alloc, total ? total : 1, sizeof *rel->done);
  if (rel->done == NULL) goto fail;
  for (size_t r = 0; r < record_count; ++r) {
    size_t t = tensor_of_record[r];
    int32_t p = tg__sched_producer(s, t);
    rel->info[r].producer = p;
    rel->info[r].branch = p >= 0 ? s->branch[p] : s->trunk;
    fill_done(s, reach, t, rel->info[r].first_word, rel->done + rel->info[r].done_start);
    rel->info[r].window_hi = last_op_not_done(rel->done + rel->info[r].done_start,
                                              rel->info[r].first_word, s->words, s->op_count);
    const size_t readers = s->consumer_start[t + 1] - s->consumer_start[t];
    struct pair_info *pi = &rel->pair[r];
    pi->last_reader = readers > 0 && !s->is_output[t] ? (int32_t)s->consumers[s->consumer_start[t + 1] - 1] : -1;
    size_t k = 0;
    pi->unordered = pi->last_reader >= 0 ? tg__sched_next_unordered(s, reach, t, (size_t)pi->last_reader, &k) : -1;
  }
  rel->relation.user = rel;
  /* Both policies are transitive along time: with disjoint intervals in time order, a may
   * share with b only when every op touching a happens before b's producer (the reverse would
   * need an op happening before an earlier one), and happens-before chains. Branch-local adds
   * an equivalence (same branch). Only parallel-safe has useful windows: branch-local refuses
   * records of other branches at any distance. */
  rel->relation.transitive = 1;
  rel->relation.in_place = in_place_allowed;
  if (policy == TG_POLICY_BRANCH_LOCAL) {
    rel->relation.may_share = may_share_branch_local;
  } else {
    rel->relation.may_share = may_share_parallel_safe;
    rel->relation.window = window_parallel_safe;
  }
  *out = rel;
  return TG_OK;

fail:
  tg_policy_relation_destroy(rel);
  return st;
}

const tg_share_relation *tg_policy_relation_get(const tg_policy_relation *r) {
  if (r == NULL || r->policy == TG_POLICY_SERIAL) return NULL;
  return &r->relation;
}

tg_policy tg_policy_relation_get_policy(const tg_policy_relation *r) {
  return r ? r->policy : TG_POLICY_SERIAL;
}

void tg_model_relations_clear(tg_model_relations *r) {
  if (r == NULL) return;
  tg_policy_relation_destroy(r->primary);
  for (int g = 0; g < TG_STORAGE_COUNT; ++g) tg_policy_relation_destroy(r->fallback[g]);
  memset(r, 0, sizeof *r);
}

tg_status tg_model_relations_create(const tg_schedule *s, tg_policy policy, const tg_model_records *records,
                                    const tg_allocator *alloc, tg_model_relations *out) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  memset(out, 0, sizeof *out);
  if (records == NULL || records->records == NULL || (unsigned)policy >= TG_POLICY_COUNT)
    return TG_ERROR_INVALID_ARGUMENT;
  if (policy == TG_POLICY_SERIAL) return TG_OK;
  tg_status st = tg_policy_relation_create(s, policy, records->tensor_of, records->records->count, alloc,
                                           &out->primary);
  for (int g = 0; g < TG_STORAGE_COUNT && st == TG_OK; ++g) {
    const tg_model_fallback *f = &records->fallbacks[g];
    if (f->records != NULL && f->records->count > 0)
      st = tg_policy_relation_create(s, policy, f->tensor_of, f->records->count, alloc, &out->fallback[g]);
  }
  if (st != TG_OK) tg_model_relations_clear(out);
  return st;
}
