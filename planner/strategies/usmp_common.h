/* What TVM USMP's offsets planners share (greedy-by-conflicts, hill-climb): liveness conflict
 * counts, their two placement orders, and the placement itself. Internal to the planner. */
#ifndef TANGRAM_PLANNER_USMP_COMMON_H
#define TANGRAM_PLANNER_USMP_COMMON_H

#include "planner/strategies/objects_common.h"
#include "planner/strategies/offsets_common.h"

/* counts[r] = the number of other records r conflicts with: intervals that intersect, plus,
 * with a relation, records it may not share with although their intervals are disjoint (the
 * relation's windows only spare calls: the counts are the same without them). O(n log n)
 * serial; with a relation, one may_share call per pair of records with disjoint intervals and
 * intersecting windows (every such pair without windows). */
tg_status tg__usmp_conflict_counts(const tg__plan_input *in, uint64_t *counts);

/* The counts as above, and (when adj_at is not NULL) each record's conflicts as lists in CSR
 * form: record r's are (*adj)[(*adj_at)[r] .. (*adj_at)[r + 1]), in no particular order. The
 * lists are made only when they hold at most `max_entries` entries (two per conflicting pair);
 * otherwise *adj_at and *adj are NULL (not an error). The caller frees both (tg__free). */
tg_status tg__usmp_conflicts(const tg__plan_input *in, size_t max_entries, uint64_t *counts,
                             size_t **adj_at, uint32_t **adj);

/* order[0..count): greedy-by-conflicts' order (conflicts descending, then volume descending,
 * then index) when `by_conflicts`, else USMP greedy-by-size's (volume descending, then
 * conflicts descending, then index). */
tg_status tg__usmp_order(const tg__plan_input *in, const uint64_t *counts, int by_conflicts,
                         size_t *order);

/* USMP's placement: records in `order`, each at the lowest offset (aligned to
 * tg__record_alignment) where it overlaps no placed record it conflicts with, found by walking
 * those in offset order and jumping past each one it would overlap: the gap index's first
 * fit. Fills offset_of[] and returns the total (max offset + size) in `*total`.
 * TG_ERROR_OVERFLOW when a layout does not fit 64 bits. */
tg_status tg__usmp_place(const tg__plan_input *in, const size_t *order, uint64_t *offset_of,
                         uint64_t *total);

/* The same, stopping at `deadline_us` (0: none; serial inputs only, as greedy-by-size does):
 * the records not placed by then go right above what they meet in time
 * (tg__offsets_complete_on_top). `*total` is not computed (0): tg__plan_finish_offsets is. */
tg_status tg__usmp_place_until(const tg__plan_input *in, const size_t *order, uint64_t deadline_us,
                               uint64_t *offset_of);

#endif
