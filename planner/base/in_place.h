/* In-place pairs inside the planner: the rules every pair must follow, and the chains they form
 * (records merged into one record per chain). */
#ifndef TANGRAM_PLANNER_IN_PLACE_H
#define TANGRAM_PLANNER_IN_PLACE_H

#include "core/internal.h"
#include "tangram/planner.h"

/* Chains of pairs: group_of[r] is record r's group; a group's merged record spans its
 * members' union, with their (equal) size and the largest alignment. members[member_start[g]
 * .. member_start[g+1]) are group g's records in chain order. `used` lists the pairs kept. */
typedef struct tg__in_place_groups {
  size_t count;              /* records */
  size_t group_count;
  size_t *group_of;
  tg_usage_record *merged;   /* group_count entries */
  size_t *members;           /* count entries */
  size_t *member_start;      /* group_count + 1 entries */
  tg_in_place_pair *used;
  size_t used_count;
  tg_share_relation relation; /* over the groups, when the records had one */
  const tg_share_relation *base_relation;
} tg__in_place_groups;

/* TG_OK when every pair follows the rules of tg_in_place_pair over `records`
 * (tg__in_place_pair_fits) and no record is the input (or the output) of two pairs;
 * TG_ERROR_INVALID_ARGUMENT otherwise (or TG_ERROR_OUT_OF_HOST_MEMORY), with a message in `why`
 * (may be NULL) naming the pair and the rule. */
tg_status tg__in_place_check(const tg_usage_record *records, size_t count, uint32_t dims,
                             const tg_in_place_pair *pairs, size_t pair_count,
                             const tg_allocator *alloc, char *why, size_t why_size);

/* The relation's part of the pair rules: 1 when `relation` lets pair p's op write its output
 * over its input (NULL, serial order: always; a relation without `in_place`: never), else 0
 * with `*other` (may be NULL) the op touching the input that the relation does not order
 * before the pair's op, or UINT32_MAX. The planner, the validator and every other user of a
 * relation with pairs ask this. */
int tg__in_place_pair_ordered(const tg_share_relation *relation, const tg_in_place_pair *p, uint32_t *other);

/* Chain the pairs (checked first) into groups; a pair the relation does not allow
 * (tg__in_place_pair_ordered), or whose chain would join records that conflict (intervals
 * meeting elsewhere, or `relation` forbidding them), is left out. With a relation, g->relation
 * is the relation over the groups (all members may share). */
tg_status tg__in_place_groups_build(const tg_usage_record *records, size_t count, uint32_t dims,
                                    const tg_in_place_pair *pairs, size_t pair_count,
                                    const tg_share_relation *relation, const tg_allocator *alloc,
                                    tg__in_place_groups *g);
void tg__in_place_groups_free(tg__in_place_groups *g, const tg_allocator *alloc);

/* With pairs, tg_plan_compute plans twice (the records with their chains merged: `second` 0;
 * the records as they are: `second` 1) and keeps the smaller plan; the two share the call's
 * search budget. `*out` is `options` with plan `second`'s share: half of an explicit time limit
 * (a half of 0 ms: TG_TIME_LIMIT_NONE) and of a work limit (at least 1 unit), the first half
 * rounded up. `*default_ms` is its half of the default search time (what time_limit_ms 0
 * stands for: TG_DEFAULT_TIME_LIMIT_MS, or 1000 ms with `exact`, which also reads
 * TG_TIME_LIMIT_NONE so), else 0. Only strategy best has a budget. */
void tg__in_place_split_budget(const tg_plan_options *options, int second, tg_plan_options *out,
                               uint32_t *default_ms);

#endif
