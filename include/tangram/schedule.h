/* The scheduler: which ops of a graph must run before which (happens-before), the execution
 * waves a parallel runtime may use, the branches of the graph, reuse policies that keep memory
 * reuse from adding hidden dependencies between concurrent ops, and the waits that a plan's
 * reuse adds when it runs on a parallel runtime. docs/scheduler.md defines every term. */
#ifndef TANGRAM_SCHEDULE_H
#define TANGRAM_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/allocator.h"
#include "tangram/graph.h"
#include "tangram/layout.h"
#include "tangram/planner.h"
#include "tangram/records.h"
#include "tangram/status.h"

#include "tangram/export.h"

#ifdef __cplusplus
extern "C" {
#endif

TANGRAM_API_BEGIN

/* Returned by per-op queries for ops outside the run-time schedule (folded constant ops). */
#define TG_SCHEDULE_NONE UINT32_MAX

/* Schedule options. A zeroed struct (or NULL) means the defaults. */
typedef struct tg_schedule_options {
  /* Zero (default): ops whose present inputs are all constant (TG_TENSOR_CONSTANT, or outputs
   * of such ops) are folded: they compute weights once at load time (DEQUANTIZE of fp16
   * weights, for instance), so they are in no wave, in no branch, and nothing waits for them.
   * Nonzero: every op is scheduled. */
  int keep_constant_ops;
} tg_schedule_options;

/* An immutable schedule of one graph. It copies what it needs: the graph may be destroyed
 * after creation. Queries are thread-safe. */
typedef struct tg_schedule tg_schedule;

/* Build the schedule of `graph`: the DAG of ops (edge producer(t) -> each consumer of t), its
 * transitive closure as one bitset per op (an upper triangle: about n^2/16 bytes for n ops),
 * ASAP waves and branches.
 * Ops must be in a topological order (the graph's op order): an op that reads a tensor written
 * by itself or a later op, reads a tensor no op writes that is neither a graph input nor
 * constant, writes a tensor another op writes, or names a tensor out of range gives
 * TG_ERROR_GRAPH with `err` naming the op. `options` may be NULL. `*out` is NULL on
 * failure; nothing leaks. */
tg_status tg_schedule_create(const tg_graph *graph, const tg_schedule_options *options,
                             const tg_allocator *alloc, tg_schedule **out, tg_error_info *err);

/* Free a schedule. NULL is a no-op. */
void tg_schedule_destroy(tg_schedule *schedule);

/* Summary numbers of a schedule. Folded ops count in `op_count` and `folded_count` only. */
typedef struct tg_schedule_stats {
  size_t op_count;        /* ops in the graph */
  size_t folded_count;    /* ops folded as constant (outside the waves) */
  size_t edge_count;      /* distinct (producer op, consumer op) pairs between scheduled ops */
  size_t wave_count;      /* = critical path */
  size_t critical_path;   /* ops on the longest dependency chain (0 when nothing is scheduled) */
  size_t max_wave_width;  /* ops in the widest wave */
  size_t branch_count;    /* branches among scheduled ops (see tg_schedule_get_branch) */
} tg_schedule_stats;

/* Fill `*out` with the schedule's summary. Cheap. */
void tg_schedule_get_stats(const tg_schedule *schedule, tg_schedule_stats *out);

/* 1 when op `a` happens before op `b`: a != b and a path of dataflow edges leads from a to b.
 * 0 otherwise, and for indices out of range. O(1). */
int tg_schedule_happens_before(const tg_schedule *schedule, size_t a, size_t b);

/* 1 when scheduled ops `a` != `b` may run at the same time: neither happens before the other.
 * 0 for folded ops and out-of-range indices. O(1). */
int tg_schedule_concurrent(const tg_schedule *schedule, size_t a, size_t b);

/* The wave (ASAP level: 1 + the largest wave of its predecessors, 0 without any) of `op`;
 * TG_SCHEDULE_NONE for folded ops and out-of-range indices. */
uint32_t tg_schedule_get_wave_of(const tg_schedule *schedule, size_t op);

/* The ops of wave `wave`, ascending, and their number in `*count`. Points into the schedule
 * (valid until it is destroyed). NULL with *count = 0 when `wave` is out of range. */
const uint32_t *tg_schedule_get_wave(const tg_schedule *schedule, size_t wave, size_t *count);

/* The scheduled ops that produce `op`'s inputs (its direct dependencies), ascending, no
 * duplicates. Points into the schedule. NULL with *count = 0 when `op` is out of range. */
const uint32_t *tg_schedule_get_predecessors(const tg_schedule *schedule, size_t op,
                                             size_t *count);

/* The branch of a scheduled op: two scheduled ops are in the same branch when exactly the same
 * scheduled ops are concurrent with each of them (such ops are always ordered). Branch ids are
 * numbered by their first op. TG_SCHEDULE_NONE for folded ops and out-of-range indices. */
uint32_t tg_schedule_get_branch(const tg_schedule *schedule, size_t op);

/* The trunk: the branch of ops concurrent with no op. Records whose tensor has no scheduled
 * producer (graph inputs, when planned) count as written by the trunk. When no scheduled op
 * lies on the trunk this is a branch id no op has (= branch_count). */
uint32_t tg_schedule_get_trunk(const tg_schedule *schedule);

/* Reuse policies: when may two usage records with disjoint task intervals share memory? */
typedef enum tg_policy {
  TG_POLICY_SERIAL = 0,        /* always (ops run one at a time, in order) */
  TG_POLICY_PARALLEL_SAFE = 1, /* only when every op touching the earlier tensor happens
                                * before the later tensor's producer */
  TG_POLICY_BRANCH_LOCAL = 2,  /* parallel-safe, and both producers are in the same branch */
  TG_POLICY_COUNT
} tg_policy;

/* "serial", "parallel-safe", "branch-local"; NULL for values out of range. Static string. */
const char *tg_policy_name(tg_policy policy);

/* Parse a policy name as above. TG_ERROR_INVALID_ARGUMENT (`*out` untouched) if unknown. */
tg_status tg_policy_from_name(const char *name, tg_policy *out);

/* A may-share relation over usage records that implements a policy for the planner
 * (tg_plan_options.relation) and the validator (tg_plan_validate). It also says which in-place
 * pairs the policy allows (tg_share_relation.in_place): a pair's op may write over its input
 * only when every other op touching the input happens before it (branch-local: and the input's
 * producer is in the op's branch). */
typedef struct tg_policy_relation tg_policy_relation;

/* Build the relation for `policy` over `record_count` records, where record r holds tensor
 * `tensor_of_record[r]` of the scheduled graph (only the order of the records matters, not
 * their sizes: the model's records and their arena records share one relation) (every index < the graph's tensor count, else
 * TG_ERROR_INVALID_ARGUMENT). Precomputes one bitset of ops per record (at most record_count *
 * op_count / 8 bytes) so that may_share is O(1). Self-contained: the schedule may be destroyed
 * afterwards. `*out` is NULL on failure. */
tg_status tg_policy_relation_create(const tg_schedule *schedule, tg_policy policy,
                                    const uint32_t *tensor_of_record, size_t record_count,
                                    const tg_allocator *alloc, tg_policy_relation **out);

/* The relation to pass to the planner and the validator: NULL for the serial policy (the
 * planner's own interval rule), else a pointer into `relation`, valid until it is
 * destroyed. NULL for a NULL relation. */
const tg_share_relation *tg_policy_relation_get(const tg_policy_relation *relation);

/* The policy a relation implements. */
tg_policy tg_policy_relation_get_policy(const tg_policy_relation *relation);

/* Free a relation. NULL is a no-op. */
void tg_policy_relation_destroy(tg_policy_relation *relation);

/* The relations of `policy` over a model's records for one storage (tg_model_records): one
 * over the primary records and one over each fallback group's, since each group is planned on
 * its own and the policy must hold within each. The serial policy needs none: every entry is
 * NULL (tg_policy_relation_get(NULL) is the planner's interval rule). */
typedef struct tg_model_relations {
  tg_policy_relation *primary;
  tg_policy_relation *fallback[TG_STORAGE_COUNT]; /* by the storage fallen to; NULL where no
                                                   * tensor fell */
} tg_model_relations;

/* Build every relation `records` needs under `policy` (tg_policy_relation_create over the
 * records' tensors, from `schedule` of the records' graph). Errors as tg_policy_relation_create;
 * on failure every entry of `*out` is NULL. Free with tg_model_relations_clear. */
tg_status tg_model_relations_create(const tg_schedule *schedule, tg_policy policy,
                                    const tg_model_records *records, const tg_allocator *alloc,
                                    tg_model_relations *out);

/* Destroy every relation of `relations` and set its entries to NULL. NULL is a no-op. */
void tg_model_relations_clear(tg_model_relations *relations);

/* A wait that memory reuse adds: scheduled op `op` (the producer of `tensor`) must wait for
 * op `after` (which touches `reuses`) because `tensor` takes memory `reuses` used. */
typedef struct tg_reuse_edge {
  uint32_t after;         /* op that must finish first */
  uint32_t op;            /* op that waits: the producer of `tensor` */
  uint32_t tensor;        /* tensor index of the later record */
  uint32_t reuses;        /* tensor index of the earlier record whose memory it takes */
  size_t record;          /* the later record */
  size_t reused_record;   /* the earlier record */
} tg_reuse_edge;

/* What each op must wait for when a plan runs on a parallel runtime. Owns its arrays. Ops are
 * the graph's (indices into graph->ops); folded constant ops (tg_schedule_options) have no
 * edges in either direction: nothing here orders them, see tg_wait_lists_create. */
typedef struct tg_waits {
  size_t op_count;
  /* Graph edges: the scheduled producers of op i's inputs are
   * after[after_start[i] .. after_start[i+1]), ascending. op_count + 1 entries. */
  size_t *after_start;
  uint32_t *after;
  /* Reuse edges that the graph (with the other reuse edges) does not already imply, sorted by
   * (op, after); op i's are reuse_edges[reuse_start[i] .. reuse_start[i+1]). */
  size_t reuse_edge_count;
  tg_reuse_edge *reuse_edges;
  size_t *reuse_start;     /* op_count + 1 entries */
  size_t sharing_pairs;    /* pairs of records sharing memory that were examined */
  size_t unsafe_pairs;     /* of those, pairs the graph does not order (each needs waits) */
  size_t critical_path;              /* longest chain of scheduled ops, graph edges only */
  size_t critical_path_with_reuse;   /* the same with the reuse edges added */
  tg_allocator alloc;
} tg_waits;

/* Compute the waits of `plan` (made for `records`, record r holding tensor
 * `tensor_of_record[r]`) on the schedule's graph. `records` must be the set the plan was made
 * for: in offsets mode on a device, the arena records of tg_device_compute_arena_records
 * (their byte sizes decide which ranges intersect), not the model's. Two records share memory when they have the
 * same object (objects mode) or their [offset, offset + size) ranges intersect (offsets mode;
 * empty ranges intersect nothing). For each sharing pair A, B with A's interval before B's, each
 * op touching A (its producer and consumers) that does not happen before B's producer gets an
 * edge to B's producer; edges implied by the graph and the other reuse edges are dropped. An
 * in-place pair the plan declares (B written over A by A's last reader) is such a pair whose
 * intervals meet at that op: every other op touching A gets its edge to it. A plan made under
 * the parallel-safe or branch-local policy has none. TG_ERROR_INVALID_PLAN (with `err`) when two
 * sharing records other than a declared pair have intersecting intervals;
 * TG_ERROR_INVALID_ARGUMENT when
 * the records do not match the graph (tensor index out of range, or a sharing pair whose ops are
 * not in the records' order). `*out` is NULL on failure. */
tg_status tg_schedule_compute_waits(const tg_schedule *schedule,
                                    const tg_usage_record *records,
                                    const uint32_t *tensor_of_record, size_t record_count,
                                    const tg_plan *plan, const tg_allocator *alloc,
                                    tg_waits **out, tg_error_info *err);

/* Free waits. NULL is a no-op. */
void tg_waits_destroy(tg_waits *waits);

/* The waits of each op as one list of op indices, in the shape an engine's runtime and
 * tg_check_desc (backend.h: op_count, wait_counts, waits) take: op i waits for
 * lists[i][0 .. counts[i]), its graph edges first (ascending), then, with `with_reuse`, its
 * reuse edges (by `after`). Owns its arrays; free with tg_wait_lists_destroy. */
typedef struct tg_wait_lists {
  size_t op_count;
  uint32_t *counts;               /* op_count entries */
  const uint32_t *const *lists;   /* op_count entries, pointing into one block */
  tg_allocator alloc;
} tg_wait_lists;

/* Build the wait lists of `waits`. `with_reuse`: nonzero adds the reuse edges (what a serial
 * plan run out of order needs); zero gives the graph edges alone (enough for parallel-safe and
 * branch-local plans, which have none). Folded constant ops (see tg_schedule_options) wait for
 * nothing and nothing waits for them here: they run at load time, before every scheduled op;
 * an engine that runs them at inference time schedules them itself, or creates the schedule
 * with keep_constant_ops so that they get graph edges like every op. `*out` is NULL on failure
 * (TG_ERROR_INVALID_ARGUMENT for NULL arguments, TG_ERROR_OUT_OF_HOST_MEMORY). Linear in the
 * edges. */
tg_status tg_wait_lists_create(const tg_waits *waits, int with_reuse, const tg_allocator *alloc,
                               tg_wait_lists **out);

/* Free wait lists. NULL is a no-op. */
void tg_wait_lists_destroy(tg_wait_lists *lists);

/* Build the schedule as one JSON object (docs/scheduler.md):
 *   {"ops":N,"folded":[op,...],"waves":[[op,...],...],"waits":[{"op":i,"after":[j,...],
 *    "reuse_edges":[{"after":j,"tensor":"name","reuses":"name"},...]},...],
 *    "critical_path":L,"critical_path_with_reuse":L2,"max_wave_width":W,"branches":B,
 *    "reuse_edge_count":E}
 * `graph` is the graph the schedule was made from (for tensor names). `waits` may be NULL (no
 * reuse edges). The text is NUL-terminated, allocated from `alloc` and freed with
 * tg_schedule_free_json; `*length` (may be NULL) excludes the NUL. `*json` is NULL on
 * failure. */
tg_status tg_schedule_build_json(const tg_schedule *schedule, const tg_graph *graph,
                                 const tg_waits *waits, const tg_allocator *alloc, char **json,
                                 size_t *length);

/* Free text from tg_schedule_build_json with the same allocator. NULL is a no-op. */
void tg_schedule_free_json(const tg_allocator *alloc, char *json);

TANGRAM_API_END

#ifdef __cplusplus
}
#endif
#endif
