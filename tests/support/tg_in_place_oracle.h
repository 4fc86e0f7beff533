/* An oracle for plans with in-place pairs, independent of the scheduler, the policies and the
 * validator: it derives the ops' order from the graph itself and asks, for every record, whether
 * any execution the order allows lets another record's write land between the record's write
 * and one of its reads. Plus random graphs rich in in-place candidates (elementwise ops and
 * views over tensors that several unordered ops read). */
#ifndef TG_TESTS_SUPPORT_TG_IN_PLACE_ORACLE_H
#define TG_TESTS_SUPPORT_TG_IN_PLACE_ORACLE_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/graph.h"
#include "tangram/planner.h"
#include "tangram/records.h"

/* How the ops of a graph may run. Op o is two events, its reads r(o) = 2o and then its writes
 * w(o) = 2o + 1 (a kernel reads each element before it writes it: what an in-place op
 * promises). `before` is the transitive closure of the orders given. */
typedef struct tg_oracle_order {
  size_t ops;
  size_t words;      /* 64-bit words per row */
  uint64_t *after;   /* row e: the events that must come after event e (2 * ops rows) */
} tg_oracle_order;

/* In order: op 0, op 1, ... one at a time. */
tg_oracle_order tg_oracle_order_serial(size_t ops);
/* Any order the graph's dataflow allows (an op runs once the producers of its inputs have). */
tg_oracle_order tg_oracle_order_dataflow(const tg_graph *graph);
/* Any order in which op i starts after each of waits[i][0 .. counts[i]) has finished (the wait
 * lists a runtime is given: tg_wait_lists). */
tg_oracle_order tg_oracle_order_waits(size_t ops, const uint32_t *counts, const uint32_t *const *waits);
void tg_oracle_order_free(tg_oracle_order *o);

/* 0 when no execution `order` allows corrupts a record of `plan` (made for `records`, record
 * r holding tensor tensor_of[r] of `graph`); else 1, with `why` (may be NULL) naming the record
 * read, the op reading it, and the record and op that may overwrite it first. Records share
 * memory when they have one object (objects mode) or their byte ranges meet in one arena
 * (offsets mode). One op may read a record and write another into its memory only as a pair
 * the plan declares. */
int tg_oracle_find_corruption(const tg_graph *graph, const tg_usage_record *records, const uint32_t *tensor_of,
                              size_t count, const tg_plan *plan, const tg_oracle_order *order, char *why,
                              size_t why_size);

/* A random graph of `ops` ops (tensor 0 the input, tensor i + 1 the output of op i; unread
 * tensors are outputs): RELU, ADD, RESHAPE, CONV_2D and CONCATENATION over a few shapes of equal
 * volume, each op reading a recent tensor or, often, one that other ops read too. */
struct tg_test_rng;
tg_graph *tg_oracle_random_graph(struct tg_test_rng *rng, size_t ops);

/* tests/data/graphs/in_place_race.graph (`chained` 0): a = CONV_2D(x), b = CONV_2D(a), c =
 * RELU(a), y = CONCATENATION(b, c): ops 1 and 2 both read a and neither happens before the
 * other, yet RELU is a's last reader in op order. in_place_race_chain.graph (`chained` 1): a =
 * CONV_2D(x), c = RELU(a), e = CONV_2D(c), d = RELU(c), y = CONCATENATION(e, d): the pair a -> c
 * (op 1) is safe, the pair c -> d (op 3) that would extend its chain is not (op 2 reads c). */
tg_graph *tg_oracle_race_graph(int chained);

#endif
