/* Memory-aware op ordering for serial execution. Any topological order of a model's ops is a
 * valid serial execution order, and the order decides how many intermediate tensors are live
 * at once. This module searches for an order with a smaller peak-live bound (the largest sum
 * of live record sizes at any task: tg_bounds.peak_live of the records the order yields), and
 * makes the reordered graph that the usual lifetimes / records / planner pipeline consumes.
 * Nothing in Tangram reorders unless asked to (`tangram plan --reorder`). docs/scheduler.md
 * ("Op ordering") describes the search. */
#ifndef TANGRAM_ORDER_H
#define TANGRAM_ORDER_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/allocator.h"
#include "tangram/graph.h"
#include "tangram/status.h"

#include "tangram/export.h"

#ifdef __cplusplus
extern "C" {
#endif

TANGRAM_API_BEGIN

/* How the returned order was found. */
typedef enum tg_order_method {
  TG_ORDER_ORIGINAL = 0,  /* nothing beat the graph's own order: it is returned unchanged */
  TG_ORDER_HEURISTIC = 1, /* greedy list scheduling / depth-first orders + local moves */
  TG_ORDER_EXACT = 2      /* the exact search (dynamic programming over executed-op sets) */
} tg_order_method;

/* "original", "heuristic", "exact"; NULL for values out of range. Static string. */
const char *tg_order_method_name(tg_order_method method);

/* Search options. A zeroed struct (or NULL) means the defaults. */
typedef struct tg_order_options {
  /* Wall-time budget of the whole search in milliseconds (0 = 1000). Set-up and the first
   * candidate orders are not interrupted and may overrun it by a few passes over the graph.
   * The heuristic also stops after a fixed amount of work and the exact search after
   * `exact_max_states` states, so the result depends only on the input whenever those caps,
   * not the clock, end the search. */
  uint32_t time_limit_ms;
  /* The exact search runs only when at most this many ops are scheduled (0 =
   * TG_ORDER_DEFAULT_EXACT_MAX_OPS). */
  size_t exact_max_ops;
  /* States (sets of executed ops) the exact search may create before it gives up
   * (0 = TG_ORDER_DEFAULT_EXACT_MAX_STATES). Each costs about op_count / 8 + 8 bytes. */
  uint64_t exact_max_states;
  /* Nonzero: skip the exact search (heuristic only). */
  int no_exact;
} tg_order_options;

#define TG_ORDER_DEFAULT_EXACT_MAX_OPS ((size_t)512)
#define TG_ORDER_DEFAULT_EXACT_MAX_STATES ((uint64_t)1 << 19)

/* An op order and what it gains. Owns its arrays; free with tg_op_order_destroy. */
typedef struct tg_op_order {
  size_t op_count;
  uint32_t *order;          /* order[k] = the graph's op index that runs k-th (op_count entries) */
  uint32_t *position;       /* position[i] = k such that order[k] == i (op_count entries) */
  uint64_t original_peak;   /* peak-live bound of the graph's own order */
  uint64_t peak;            /* peak-live bound of `order` (<= original_peak) */
  uint64_t lower_bound;     /* proved lower bound on any order's peak (= peak when optimal) */
  tg_order_method method;
  int proved_optimal;       /* 1: no topological order has a smaller peak */
  int exact_ran;            /* 1: the exact search ran (0: too many ops, disabled, or the
                             * heuristic already met the lower bound) */
  uint64_t exact_states;    /* states the exact search created */
  size_t folded_count;      /* ops folded as constant: placed first, in their original order */
  uint64_t elapsed_us;      /* wall time of the search */
  tg_allocator alloc;
} tg_op_order;

/* Search a topological order of `graph`'s ops with a small peak-live bound.
 * `lifetimes` must come from tg_graph_compute_lifetimes on `graph` (its plan_io choice is kept:
 * planned graph inputs live from the first task, planned graph outputs to the last).
 * `tensor_sizes[t]` is tensor t's record size (bytes, or texels for textures): only tensors the
 * lifetimes mark planned count; pass 0 for tensors without a record. Folded constant ops (present
 * inputs all constant) compute nothing at run time: they go first, in their original order.
 * The order returned is never worse than the graph's own (which is returned unchanged, method
 * TG_ORDER_ORIGINAL, when nothing is strictly better). A graph with control flow (flow_count > 0)
 * keeps its own order: its branches and loop bodies run as blocks. TG_ERROR_OVERFLOW when the sizes add up
 * beyond 64 bits; TG_ERROR_INVALID_ARGUMENT for NULL arguments or lifetimes of another graph.
 * The caller owns the result; `*out` is NULL on failure; nothing leaks. Takes up to about
 * options->time_limit_ms; the exact search may allocate up to `exact_max_states` states
 * (running out of memory there only ends it, the heuristic order is kept). */
tg_status tg_op_order_compute(const tg_graph *graph, const tg_lifetimes *lifetimes,
                              const uint64_t *tensor_sizes, const tg_order_options *options,
                              const tg_allocator *alloc, tg_op_order **out, tg_error_info *err);

/* Free an order. NULL is a no-op. */
void tg_op_order_destroy(tg_op_order *order);

/* The peak-live bound of running `graph`'s ops in `order` (order[k] = op run k-th; NULL = the
 * graph's own order) with the lifetime rules of `lifetimes` and the sizes above: what
 * tg_bounds_compute gives for the records of the reordered graph. TG_ERROR_GRAPH (with `err`)
 * when `order` is not a permutation or not topological. */
tg_status tg_op_order_compute_peak(const tg_graph *graph, const tg_lifetimes *lifetimes,
                                   const uint64_t *tensor_sizes, const uint32_t *order,
                                   const tg_allocator *alloc, uint64_t *peak, tg_error_info *err);

/* A copy of `graph` whose op k is `graph`'s op order[k] (tensors, inputs and outputs
 * unchanged; the source gets " (reordered)"). Compute lifetimes and records on it as usual.
 * TG_ERROR_INVALID_ARGUMENT when `order` is not a permutation of the ops (it is not checked for
 * topology: tg_graph_compute_lifetimes does that). A graph with control flow is copied with its
 * subgraph table, in its own order only (another order: TG_ERROR_UNSUPPORTED). `*out` is NULL on failure. */
tg_status tg_graph_create_reordered(const tg_graph *graph, const uint32_t *order,
                                    const tg_allocator *alloc, tg_graph **out);

TANGRAM_API_END

#ifdef __cplusplus
}
#endif
#endif
