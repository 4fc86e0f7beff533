/* Plans over a range of sizes, inside the planner: the nodes planned (records merged along
 * kept in-place chains), their conflicts, and the structures (range_structure.c) and pieces
 * (range_pieces.c) the entry (range.c) chooses among. */
#ifndef TANGRAM_PLANNER_RANGE_INTERNAL_H
#define TANGRAM_PLANNER_RANGE_INTERNAL_H

#include "core/internal.h"
#include "planner/base/in_place.h"
#include "tangram/range_plan.h"

/* Nodes: one per in-place chain kept (a record alone is its own chain). A node's size at a
 * point is its representative record's (every member has the same size at every point); its
 * interval spans its members'. Conflicts: nodes whose intervals meet, or that the relation
 * forbids to share, as symmetric lists. */
typedef struct tg__range_nodes {
  size_t count;             /* nodes */
  size_t record_count;
  uint32_t dims;
  tg_mode mode;
  uint32_t *rep;            /* count: the representative record */
  uint32_t *node_of;        /* record_count: the node of each record */
  uint32_t *first, *last;   /* count: the node's interval */
  uint64_t *align;          /* count: offsets mode: the alignment the node honours (>= 1) */
  size_t *conf_start;       /* count + 1 */
  uint32_t *conf;           /* conflicts of node v: conf[conf_start[v] .. conf_start[v+1]) */
  const tg_share_relation *relation; /* over nodes, or NULL */
} tg__range_nodes;

/* A structure over nodes. Offsets: `order` (every node, lowest placed first) and, per position,
 * the earlier conflicting nodes it must lie above, transitively reduced. Objects: each node's
 * object. */
typedef struct tg__range_structure {
  uint32_t *order;          /* offsets: count */
  size_t *pred_start;       /* offsets: count + 1, by position in `order` */
  uint32_t *pred;           /* offsets: node ids */
  uint32_t object_count;    /* objects */
  uint32_t *object_of;      /* objects: count */
  uint64_t hash;            /* of the order or the assignment, to skip duplicates */
} tg__range_structure;

/* Nodes of the records `at` (the records at any one point: tasks and alignments are the same
 * at every point): node k holds the records r with group_of[r] == k (group_of NULL: one node per
 * record, group_count = count). `relation` is over nodes (NULL = serial). */
tg_status tg__range_nodes_build(const tg_usage_record *at, size_t count, uint32_t dims, const tg_plan_options *options,
                                const size_t *group_of, size_t group_count, const tg_share_relation *relation,
                                const tg_allocator *alloc, tg__range_nodes *out);
void tg__range_nodes_free(tg__range_nodes *n, const tg_allocator *alloc);

/* A structure from `plan` (a valid plan of the records at one point, whose node sizes are
 * `sizes`). Offsets: nodes in the order of their offsets (ties: ends, then index); objects:
 * the plan's assignment, repaired where a chain's records were in different objects. */
tg_status tg__range_structure_from_plan(const tg__range_nodes *n, const tg_plan *plan, const tg_extent *sizes,
                                        const tg_allocator *alloc, tg__range_structure *out);
void tg__range_structure_free(tg__range_structure *s, const tg_allocator *alloc);

/* The structure's total at node sizes `sizes`; UINT64_MAX when it does not fit 64 bits.
 * `scratch`: count entries (offsets: offsets of the nodes; objects: object extents). */
uint64_t tg__range_structure_total(const tg__range_nodes *n, const tg__range_structure *s, const tg_extent *sizes,
                                   tg_extent *scratch);

/* Pieces: given every structure's totals at every point (`totals[c * points + p]`, UINT64_MAX
 * = not usable) and the own best per point, cut the grid into pieces and choose a structure
 * for each. 1D: a sweep from the first size, each piece as long as one structure keeps the
 * target over it (the fewest pieces for these structures), then each piece takes the structure
 * with the smallest worst ratio over it. 2D: the whole grid when one structure keeps the
 * target, else halves of the longer side, recursively. Every point must have a structure
 * within the target and the cap (the caller guarantees it). */
typedef struct tg__range_piece {
  uint64_t lo[2], hi[2];   /* grid index bounds, inclusive (second: 0..0 in 1D) */
  uint32_t structure;
  double worst_ratio;
  uint64_t worst_point;
} tg__range_piece;

typedef struct tg__range_grid {
  uint64_t points;
  uint64_t n0, n1;         /* points along each dimension (n1 = 1 in 1D) */
  uint32_t dims;           /* 1 or 2 */
} tg__range_grid;

tg_status tg__range_pieces_choose(const tg__range_grid *grid, const uint64_t *totals, size_t structures,
                                  const uint64_t *own, uint64_t cap, double target, const tg_allocator *alloc,
                                  tg__range_piece **pieces, size_t *piece_count);

/* One structure, compiled for instantiation over records (not nodes): offsets, the
 * representative records in pass order with their alignments and, per position, the records
 * to lie above; objects, each record's object. */
typedef struct tg__range_program {
  uint32_t *order;        /* offsets: node count */
  uint64_t *align;        /* offsets: node count */
  size_t *pred_start;     /* offsets: node count + 1 */
  uint32_t *pred;         /* offsets: records */
  uint32_t object_count;  /* objects */
  uint32_t *object_of;    /* objects: record count */
  size_t order_count;     /* offsets: node count */
} tg__range_program;

/* A plan over a range: computed (range.c) or created from saved structures (range_saved.c). */
struct tg_range_plan {
  tg_allocator alloc;
  const tg_range_records *records;
  tg_size_range range;
  tg_mode mode;
  uint32_t dims;
  size_t count;
  uint64_t points;
  tg_strategy strategy;
  uint64_t max_allocation;
  tg_in_place_pair *pairs;    /* kept */
  size_t pair_count;
  uint32_t *member;           /* records that are not their node's representative... */
  uint32_t *member_rep;       /* ...and that representative */
  size_t member_count;
  uint32_t *piece_of;         /* per point */
  uint64_t *total, *own, *lower;
  uint64_t upper;
  tg_range_piece *pieces;
  uint32_t *piece_program;
  size_t piece_count;
  tg__range_program *programs;
  size_t program_count;
  tg_range_plan_summary summary;
};

/* A plan over `records` with `options`' mode, strategy and cap and nothing else yet, after the
 * checks tg_range_plan_compute and tg_range_plan_create share (records, mode and strategy
 * known, offsets on 1D records, at most TG_RANGE_PLAN_MAX_POINTS sizes); `err` says why not. */
tg_status tg__range_plan_new(const tg_range_records *records, const tg_plan_options *options,
                             const tg_allocator *alloc, tg_range_plan **out, tg_error_info *err);

/* Compile structure `s` over nodes `n` into `g` (allocated from plan->alloc; on failure the
 * caller frees what `g` holds with the plan). */
tg_status tg__range_compile(tg_range_plan *plan, const tg__range_nodes *n, const tg__range_structure *s,
                            tg__range_program *g);

/* A plan's in-place chains (`groups` over its records, `nodes` built from them): the records
 * that take their chain's first record's offset (offsets mode), and the pairs kept. */
struct tg__in_place_groups;
tg_status tg__range_plan_keep_chains(tg_range_plan *plan, const tg__range_nodes *nodes,
                                     const struct tg__in_place_groups *groups);

/* `o`'s in-place pairs name distinct records among `count` (else `err` says which does not). */
tg_status tg__range_pairs_check(const tg_plan_options *o, size_t count, tg_error_info *err);

/* The nodes of the records `at` (the records at any one point) over the chains of `pairs`
 * (each checked by the in-place rules; `*groups` built when there are pairs, `*have_groups`
 * then 1), with `o`'s relation; `err` says why not. */
tg_status tg__range_nodes_over_chains(const tg_usage_record *at, size_t count, uint32_t dims,
                                      const tg_plan_options *o, const tg_in_place_pair *pairs, size_t pair_count,
                                      const tg_allocator *alloc, tg__in_place_groups *groups, int *have_groups,
                                      tg__range_nodes *nodes, tg_error_info *err);

/* Offsets: the structure of nodes placed in `order` (a permutation of the nodes): each
 * position's predecessors, transitively reduced, and the hash. */
tg_status tg__range_structure_from_order(const tg__range_nodes *n, const uint32_t *order, const tg_allocator *alloc,
                                         tg__range_structure *out);

/* total / own as the ratios above (own 0: 1 when total is 0). */
double tg__range_ratio(uint64_t total, uint64_t own);

/* "320" or "320x640": point p of `range`. */
void tg__range_dims_text(const tg_size_range *range, uint64_t p, char *buf, size_t size);

/* The time a range plan may take (tg_plan_options.time_limit_ms over the whole range). */
typedef struct tg__range_clock {
  int limited;          /* a deadline holds (an explicit limit, or the default's) */
  uint64_t deadline;    /* tg__now_us() by which the choice must be done */
  uint64_t overrun;     /* the most a plan went past the limit it was given (us) */
  uint64_t eval_us;     /* the most one structure's evaluation at every size took (us) */
  uint64_t cheap_us;    /* the most one size's plan without search took (us) */
  uint64_t search_us;   /* the least a size is searched for: half what the upper-bound plan took
                           (a search cut shorter than the strategies before it can do worse than
                           none), at least a millisecond */
} tg__range_clock;

/* Everything the computation holds (range.c sets it up, range_choose.c chooses). */
typedef struct tg__range_ctx {
  const tg_range_records *rr;
  const tg_allocator *alloc;
  tg_error_info *err;
  const tg_plan_options *options;
  tg_plan_options full, cheap;  /* a size planned with the search, and without */
  tg_size_range range;
  uint64_t points;
  size_t count;
  uint32_t dims;
  tg__range_grid grid;
  tg__in_place_groups groups;
  int have_groups;
  tg__range_nodes nodes;
  tg_usage_record *recs;       /* count: records at the current point */
  tg_extent *node_sizes;       /* node count: scratch */
  tg_extent *scratch;          /* node count: scratch for totals */
  tg_extent *cache;            /* points * node count, or NULL: node sizes at every point */
  tg__range_structure *structures;
  size_t structure_count, structure_cap;
  uint64_t *totals;            /* structure_cap * points */
  uint64_t *own, *lower;
  uint8_t *searched;
  uint64_t upper;
  size_t ub_structure;
  uint64_t searched_count, planned_count;
  tg__range_clock clock;
} tg__range_ctx;



/* `st` with a message naming the size and `what`. */
tg_status tg__range_fail_at(tg__range_ctx *c, tg_status st, uint64_t p, const char *what);

/* The node sizes at point p (c->recs holds its records unless the sizes are cached). */
const tg_extent *tg__range_sizes_at(tg__range_ctx *c, uint64_t p);

/* The lower bound at point p into c->lower[p] (c->recs holds its records). */
tg_status tg__range_bound_at(tg__range_ctx *c, uint64_t p);

/* Choose the pieces and their structures (docs/ranges.md, "How the structure is chosen"):
 * the upper-bound plan, the sampled sizes (`samples`, 0 = the default), the own best at every
 * size, then the worst sizes, within c->clock. `*pieces` is allocated from c->alloc. */
tg_status tg__range_choose(tg__range_ctx *c, double target, uint32_t samples, tg__range_piece **pieces,
                           size_t *piece_count);

#endif
