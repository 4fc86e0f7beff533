/* Internal helpers shared by the offsets-mode strategies: a stable key sort, task-point
 * compression and the gap index (placed records indexed by time, ordered by offset). */
#ifndef TANGRAM_PLANNER_OFFSETS_COMMON_H
#define TANGRAM_PLANNER_OFFSETS_COMMON_H

#include "planner/base/base.h"

/* An uninitialised array of n elements of `size` bytes (NULL on overflow or failure). Large
 * arrays that are written before being read need no zeroing: it costs a pass over memory. */
static inline void *tg__alloc_array(const tg_allocator *a, size_t n, size_t size) {
  size_t bytes;
  return tg__mul_size(n, size, &bytes) ? tg__malloc(a, bytes) : NULL;
}

/* A sort item: `key` ascending, ties keep the input order (stable). */
typedef struct tg__sort_item {
  uint64_t key;
  size_t idx;
} tg__sort_item;

/* Stable sort of `items[0..n)` by key. `tmp` must hold n items. */
void tg__sort_items_stable(tg__sort_item *items, size_t n, tg__sort_item *tmp);

/* Greedy-by-size's placement order: `order[0..count)` receives the record indices sorted by
 * volume descending, ties by index (TFLite's stable_sort). */
tg_status tg__order_by_size_desc(const tg__plan_input *in, size_t *order);

/* Task points: the distinct first tasks, ascending. Two records intersect in time exactly when
 * their point covers [pf, pl] intersect, where pf is the index of the record's first task and
 * pl the index of the last point <= its last task (an interval always contains its own first
 * task, and any intersection contains the later of the two first tasks). Working on points
 * keeps everything O(n) in memory however large the task indices are. */
typedef struct tg__task_points {
  size_t count;   /* number of distinct first tasks */
  uint32_t *pf;   /* per record */
  uint32_t *pl;   /* per record */
} tg__task_points;

tg_status tg__task_points_init(const tg__plan_input *in, tg__task_points *tp);
void tg__task_points_free(const tg__plan_input *in, tg__task_points *tp);

/* The live sum at each of the task points `tp` of `in` (its volumes set): `live[p]` for
 * p < tp->count, the caller's array. Only points matter: the live set of any other task is a
 * subset of the one at the point before it. TG_ERROR_OVERFLOW when a sum passes 64 bits (no
 * plan can exist), TG_ERROR_OUT_OF_HOST_MEMORY. */
tg_status tg__live_at_points(const tg__plan_input *in, const tg__task_points *tp,
                             uint64_t *live);

/* The peak live volume of `in` (its records checked, volumes set): tg_bounds_compute's
 * peak_live without the positional maximums, which cost most of its time on large inputs.
 * TG_ERROR_OVERFLOW when a live sum passes 64 bits, TG_ERROR_OUT_OF_HOST_MEMORY (`*peak` = 0
 * on either). */
tg_status tg__peak_live(const tg__plan_input *in, uint64_t *peak);

/* The gap index: placed records, searchable for the gaps left by the placed records that
 * conflict with a new one. Without a relation, task points are cut into blocks about as long
 * as a typical record, and each block keeps, ordered by offset, the placed records that meet
 * it or the next block: a search walks the list of the block where the new record starts
 * (merged, for a record longer than that window, with the records born further on, taken
 * from every other later window), so it visits only records near the new record's
 * interval. With a relation that has windows (tg_share_relation.window), the same index is
 * built over the windows, each widened to contain its record's interval: records whose
 * windows are disjoint may share, so a search visits the placed records whose window meets
 * the new record's and tests each with tg__records_conflict, which finds exactly the gaps of
 * a walk over every placed record. With a relation without windows every placed record can
 * conflict, so one list holds them all and each is tested. */
typedef struct tg__gap_index tg__gap_index;

tg_status tg__gap_index_create(const tg__plan_input *in, tg__gap_index **out);

/* The same with slots in a given order (serial relation only; TG_ERROR_INTERNAL otherwise):
 * slot i is record order[i], and every `r` taken by the functions below is a slot. A strategy
 * that places records in a fixed order then reads the index's per-record data sequentially,
 * which on large inputs saves a cache miss per placement. Such an index may also store
 * offsets in units of the sizes' and alignments' common divisor, in 32 bits when they fit:
 * tg__gap_index_insert and _remove must then take only offsets tg__gap_index_find returned. */
tg_status tg__gap_index_create_ordered(const tg__plan_input *in, const size_t *order,
                                       tg__gap_index **out);
void tg__gap_index_destroy(tg__gap_index *ix);

/* Where record r goes: walk the placed records that conflict with r in offset order (ties by
 * end, descending: see offsets_common.c for why this finds TFLite's gaps), tracking the highest end so far (prev); before each, the gap
 * [align_up(prev), offset) is a candidate when it holds r's size. TG_FIT_BEST takes the smallest
 * candidate (the first of equals) - exactly TFLite's GreedyBySizeAssignment -, TG_FIT_FIRST the
 * lowest, TG_FIT_WORST the largest (the first of equals). Without a candidate r goes at
 * align_up(prev) after all of them. The alignment is tg__record_alignment(in, r).
 * TG_ERROR_OVERFLOW if that does not fit 64 bits. */
tg_status tg__gap_index_find(tg__gap_index *ix, size_t r, tg_fit fit, uint64_t *offset);

/* Record r now lives at `offset` (offset + volume must not overflow; callers check). */
void tg__gap_index_insert(tg__gap_index *ix, size_t r, uint64_t offset);

/* Record r, inserted at `offset`, leaves the index again. With a relation, a search for its
 * entry (linear in the list it is on). */
void tg__gap_index_remove(tg__gap_index *ix, size_t r, uint64_t offset);

/* Serial relation only: the records rest[0..count) (not yet placed; every other record has
 * its offset in offset_of) each go, in that order, right above the highest placed record that
 * meets it in time (aligned; records of size 0 at 0). O((n + count) log n): how a strategy cut
 * short by a deadline finishes its plan. TG_ERROR_OVERFLOW when an offset does not fit 64
 * bits, TG_ERROR_INTERNAL with a relation. */
tg_status tg__offsets_complete_on_top(const tg__plan_input *in, const size_t *rest, size_t count,
                                      uint64_t *offset_of);

#endif
