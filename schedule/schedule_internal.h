/* What the scheduler's files share: the schedule's layout and bitset helpers. */
#ifndef TANGRAM_PLANNER_SCHEDULE_INTERNAL_H
#define TANGRAM_PLANNER_SCHEDULE_INTERNAL_H

#include "core/internal.h"
#include "tangram/schedule.h"

static inline int tg__bit_get(const uint64_t *row, size_t bit) {
  return (int)((row[bit / 64] >> (bit % 64)) & 1u);
}
static inline void tg__bit_set(uint64_t *row, size_t bit) {
  row[bit / 64] |= (uint64_t)1 << (bit % 64);
}

/* The transitive closure of a DAG whose edges go from lower to higher op index. Op i reaches
 * only ops above i, so its row stores words i/64 .. words-1 only (an upper triangle: half the
 * memory of a square matrix, which at 10,000 ops is most of the cost of building it). */
typedef struct tg__closure {
  size_t n;
  size_t words;
  size_t *row_start;   /* n + 1 entries: where row i (its word i/64) starts in `bits` */
  uint64_t *bits;
} tg__closure;

/* Zeroed closure storage for n ops. */
tg_status tg__closure_alloc(const tg_allocator *a, size_t n, tg__closure *out);
void tg__closure_free(const tg_allocator *a, tg__closure *c);

/* Fill the closure: row i gets every op reachable from i through `succs` (per op, ascending,
 * every successor above its op). */
void tg__closure_compute(tg__closure *c, const size_t *succ_start, const uint32_t *succs);

/* Word w (>= i/64) of row i. */
static inline uint64_t tg__closure_word(const tg__closure *c, size_t i, size_t w) {
  return c->bits[c->row_start[i] + (w - i / 64)];
}

/* 1 when a reaches b. */
static inline int tg__closure_get(const tg__closure *c, size_t a, size_t b) {
  if (b <= a) return 0;
  return (int)((tg__closure_word(c, a, b / 64) >> (b % 64)) & 1u);
}

/* The rule of memory reuse, in one place: before `op` writes over the memory tensor t holds
 * (t's memory taken by one of op's outputs, or written in place by op), every op touching t
 * (its scheduled producer, its scheduled consumers) other than `op` itself must have finished.
 * Returns the next such op that does not happen before `op` in `reach` (start with *k = 0;
 * -1 when there are no more). The waits add an edge from each; the policies let `op` write over
 * t only when there is none. Folded ops run at load time and never count. */
int32_t tg__sched_next_unordered(const tg_schedule *s, const tg__closure *reach, size_t t, size_t op, size_t *k);

/* tg_policy_relation_create over another happens-before closure of the same ops (`reach`:
 * n = the schedule's op count; edges only from lower to higher op index), for execution
 * models that order more ops than the graph's edges (several in-order processors). */
tg_status tg__policy_relation_create_over(const tg_schedule *s, const tg__closure *reach,
                                          tg_policy policy, const uint32_t *tensor_of_record,
                                          size_t record_count, const tg_allocator *alloc,
                                          tg_policy_relation **out);

struct tg_schedule {
  size_t op_count;
  size_t tensor_count;
  size_t words;               /* 64-bit words in a bitset over all ops: ceil(op_count / 64) */
  int32_t *producer;          /* per tensor: the op writing it, -1 if none */
  uint8_t *is_output;         /* per tensor: a graph output (the host reads it after the run) */
  size_t *consumer_start;     /* per tensor (CSR, tensor_count + 1): ops reading it, ascending */
  uint32_t *consumers;
  size_t *pred_start;         /* per op (CSR): distinct producer ops of its inputs, ascending */
  uint32_t *preds;
  size_t *sched_pred_start;   /* the same, scheduled ops only (empty for folded ops) */
  uint32_t *sched_preds;
  size_t *succ_start;         /* per op (CSR): distinct consumer ops of its outputs, ascending */
  uint32_t *succs;
  uint8_t *folded;            /* per op: computes constants only, outside the run */
  size_t folded_count;
  size_t edge_count;          /* scheduled edges */
  tg__closure reach;          /* a happens before b */
  uint32_t *wave_of;          /* per op; TG_SCHEDULE_NONE when folded */
  size_t wave_count;
  size_t *wave_start;         /* CSR over waves */
  uint32_t *wave_ops;
  size_t max_wave_width;
  uint32_t *branch;           /* per op; TG_SCHEDULE_NONE when folded */
  size_t branch_count;
  uint32_t trunk;
  tg_allocator alloc;
};


/* The scheduled producer of tensor t, or -1 (no producer, or a folded one: written before the
 * run starts). */
static inline int32_t tg__sched_producer(const tg_schedule *s, size_t t) {
  int32_t p = s->producer[t];
  return (p >= 0 && !s->folded[p]) ? p : -1;
}

#endif
