/* Scheduler benchmark: happens-before on a random DAG and on a network-like one (chains,
 * residual and inception blocks, side heads), and planning their records under the
 * parallel-safe policy against serial planning with the same strategy.
 *
 *   bench_schedule [OPS [SEED]]      (default 10000 ops, seed 1)
 *
 * Targets: schedule (closure, waves, branches) <= 50 ms for 10,000 ops; parallel-safe
 * planning <= 5x serial planning. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/internal.h"
#include "tangram/graph.h"
#include "tangram/layout.h"
#include "tangram/planner.h"
#include "tangram/schedule.h"

#include "bench/random_graph.h"

static char *dup_name(const char *prefix, size_t i) {
  char buf[48];
  snprintf(buf, sizeof buf, "%s%zu", prefix, i);
  char *s = malloc(strlen(buf) + 1);
  if (s) strcpy(s, buf);
  return s;
}

/* A network-like DAG: a trunk of blocks as in real models: plain chains, residual blocks (a
 * chain plus an add reading the block's input), inception blocks (two to four arms of one to
 * three ops joined by a concat) and, rarely (1 block in 400), a side head that branches off and
 * ends in an output. Parallelism stays narrow (a few arms), as in mobile networks. A side head
 * never joins, so it is concurrent with every later trunk op: under parallel-safe its tensors
 * keep their memory to the end, which is most of the difference between the policies' totals. */
static tg_graph *network_graph(size_t ops, uint64_t seed) {
  tg_graph *g = NULL;
  if (tg_graph_create(ops + 1, ops, NULL, &g) != TG_OK) return NULL;
  uint64_t st = seed;
  unsigned char *read = calloc(ops + 1, 1);
  int32_t *ins = malloc(8 * sizeof *ins);
  g->inputs = malloc(sizeof *g->inputs);
  g->outputs = malloc((ops + 1) * sizeof *g->outputs);
  int ok = read && ins && g->inputs && g->outputs;
  size_t i = 0, trunk = 0; /* next op; tensor the trunk continues from */
  /* Add op i reading `n` tensors from `ins`; its output is tensor i + 1. */
#define ADD_OP(n)                                                                       \
  do {                                                                                  \
    tg_op *op_ = &g->ops[i];                                                            \
    op_->name = dup_name("op", i);                                                      \
    op_->inputs = malloc((n) * sizeof *op_->inputs);                                    \
    op_->outputs = malloc(sizeof *op_->outputs);                                        \
    if (!op_->name || !op_->inputs || !op_->outputs) ok = 0;                            \
    else {                                                                              \
      op_->input_count = (uint32_t)(n);                                                 \
      for (size_t k_ = 0; k_ < (size_t)(n); ++k_) {                                     \
        op_->inputs[k_] = ins[k_];                                                      \
        read[ins[k_]] = 1;                                                              \
      }                                                                                 \
      op_->output_count = 1;                                                            \
      op_->outputs[0] = (int32_t)(i + 1);                                               \
    }                                                                                   \
    ++i;                                                                                \
  } while (0)
  while (ok && i < ops) {
    size_t kind = rng_below(&st, 100), left = ops - i;
    if (kind < 40 || left < 12) { /* chain */
      ins[0] = (int32_t)trunk;
      ADD_OP(1);
      trunk = i;
    } else if (kind < 69) { /* residual: chain of 1-3 ops, then add(block input, chain) */
      size_t in = trunk, len = 1 + rng_below(&st, 3);
      for (size_t k = 0; k < len; ++k) {
        ins[0] = (int32_t)trunk;
        ADD_OP(1);
        trunk = i;
      }
      ins[0] = (int32_t)in;
      ins[1] = (int32_t)trunk;
      ADD_OP(2);
      trunk = i;
    } else if (kind < 99 || rng_below(&st, 4) != 0) { /* inception: 2-4 arms of 1-3 ops, concat */
      size_t in = trunk, arms = 2 + rng_below(&st, 3), ends[4];
      for (size_t a = 0; a < arms; ++a) {
        size_t at = in, len = 1 + rng_below(&st, 3);
        for (size_t k = 0; k < len; ++k) {
          ins[0] = (int32_t)at;
          ADD_OP(1);
          at = i;
        }
        ends[a] = at;
      }
      for (size_t a = 0; a < arms; ++a) ins[a] = (int32_t)ends[a];
      ADD_OP(arms);
      trunk = i;
    } else { /* a side head of 2-5 ops ending in an output */
      size_t at = trunk, len = 2 + rng_below(&st, 4);
      for (size_t k = 0; k < len; ++k) {
        ins[0] = (int32_t)at;
        ADD_OP(1);
        at = i;
      }
    }
  }
#undef ADD_OP
  g->op_count = i;
  g->tensor_count = i + 1;
  if (ok) {
    g->inputs[0] = 0;
    g->input_count = 1;
    for (size_t t = 0; t <= i; ++t) {
      tg_tensor *tt = &g->tensors[t];
      tt->name = dup_name("t", t);
      if (tt->name == NULL) {
        ok = 0;
        break;
      }
      tt->rank = 4;
      tt->shape[0] = 1;
      tt->shape[1] = (int64_t)(8 << rng_below(&st, 4));
      tt->shape[2] = tt->shape[1];
      tt->shape[3] = (int64_t)(8 << rng_below(&st, 5));
      tt->dtype = TG_DTYPE_FLOAT32;
      if (t == 0) tt->flags = TG_TENSOR_INPUT;
      else if (!read[t]) {
        tt->flags = TG_TENSOR_OUTPUT;
        g->outputs[g->output_count++] = (uint32_t)t;
      }
    }
  }
  free(read);
  free(ins);
  if (!ok) {
    tg_graph_destroy(g);
    return NULL;
  }
  return g;
}

static double ms_since(uint64_t t0) { return (double)(tg__now_us() - t0) / 1000.0; }

/* A relation that allows everything the intervals allow: planning with it costs what a
 * strategy's relation-aware path costs by itself, apart from the policy's may_share. */
static int share_always(void *user, size_t a, size_t b) {
  (void)user;
  (void)a;
  (void)b;
  return 1;
}

static void window_empty(void *user, size_t r, uint64_t *lo, uint64_t *hi) {
  (void)user;
  (void)r;
  *lo = UINT64_MAX;
  *hi = 0;
}

/* Schedule `g`, then plan its buffer records under serial and parallel-safe. */
static int bench_graph(const char *what, tg_graph *g, uint64_t seed) {
  size_t ops = g->op_count;
  printf("== %s DAG\n", what);

  /* Happens-before: best of five builds. */
  double best = 1e30, first = 0, best_cpu = 1e30;
  tg_schedule *s = NULL;
  tg_error_info err = {{0}};
  for (int run = 0; run < 5; ++run) {
    tg_schedule_destroy(s);
    s = NULL;
    uint64_t t0 = tg__now_us();
    clock_t c0 = clock();
    tg_status st = tg_schedule_create(g, NULL, NULL, &s, &err);
    double ms = ms_since(t0), cpu = (double)(clock() - c0) * 1000.0 / CLOCKS_PER_SEC;
    if (cpu < best_cpu) best_cpu = cpu;
    if (st != TG_OK) {
      fprintf(stderr, "bench_schedule: %s\n", err.message);
      return 1;
    }
    if (ms < best) best = ms;
    if (run == 0) first = ms;
  }
  tg_schedule_stats stats;
  tg_schedule_get_stats(s, &stats);
  printf("happens-before: %zu ops, %zu edges, %zu waves (max width %zu), %zu branches: "
         "tg_schedule_create %.2f ms best of 5 (%.2f ms CPU), %.2f ms first "
         "(target <= 50 ms at 10000 ops)\n",
         stats.op_count, stats.edge_count, stats.wave_count, stats.max_wave_width,
         stats.branch_count, best, best_cpu, first);
  /* Query cost: a pass over many pairs. */
  uint64_t q = 0, rs = seed, t0 = tg__now_us();
  for (int i = 0; i < 10000000; ++i)
    q += (uint64_t)tg_schedule_happens_before(s, rng_below(&rs, ops), rng_below(&rs, ops));
  printf("happens-before queries: 10M in %.1f ms (%llu true)\n", ms_since(t0), (unsigned long long)q);

  tg_lifetimes *lt = NULL;
  tg_model_records *mr = NULL;
  if (tg_graph_compute_lifetimes(g, NULL, NULL, &lt, &err) != TG_OK ||
      tg_model_records_create(g, lt, TG_STORAGE_BUFFER, TG_PRECISION_FP32, NULL, NULL, &mr, &err) !=
          TG_OK) {
    fprintf(stderr, "bench_schedule: records: %s\n", err.message);
    return 1;
  }
  const tg_record_set *set = mr->records;
  tg_policy_relation *pr = NULL;
  t0 = tg__now_us();
  if (tg_policy_relation_create(s, TG_POLICY_PARALLEL_SAFE, mr->tensor_of, set->count, NULL, &pr) !=
      TG_OK) {
    fprintf(stderr, "bench_schedule: relation: out of memory\n");
    return 1;
  }
  printf("parallel-safe relation over %zu records: %.2f ms\n", set->count, ms_since(t0));
  const tg_share_relation *rel = tg_policy_relation_get(pr);

  static const struct { tg_mode mode; tg_strategy strategy; } k_runs[] = {
      {TG_MODE_OBJECTS, TG_STRATEGY_GREEDY_IN_ORDER},  {TG_MODE_OBJECTS, TG_STRATEGY_GREEDY_BY_BREADTH},
      {TG_MODE_OBJECTS, TG_STRATEGY_GREEDY_BY_SIZE},   {TG_MODE_OBJECTS, TG_STRATEGY_EQUALITY},
      {TG_MODE_OFFSETS, TG_STRATEGY_GREEDY_IN_ORDER},  {TG_MODE_OFFSETS, TG_STRATEGY_GREEDY_BY_BREADTH},
      {TG_MODE_OFFSETS, TG_STRATEGY_GREEDY_BY_SIZE},   {TG_MODE_OBJECTS, TG_STRATEGY_BEST},
      {TG_MODE_OFFSETS, TG_STRATEGY_BEST}};
  /* Allow-everything is transitive, and its windows may be empty (the planner widens them to
   * the intervals): the relation-aware paths at their cheapest. */
  const tg_share_relation always = {share_always, NULL, window_empty, 1, NULL};
  printf("%-8s %-18s %10s %10s %12s %7s %14s %14s\n", "mode", "strategy", "serial ms",
         "any-rel ms", "par-safe ms", "ratio", "serial total", "par-safe total");
  int worst_ok = 1;
  for (size_t k = 0; k < sizeof k_runs / sizeof k_runs[0]; ++k) {
    double ms[3];
    uint64_t total[3] = {0, 0, 0};
    int failed = 0;
    for (int p = 0; p < 3 && !failed; ++p) {
      tg_plan_options opt = {0};
      opt.mode = k_runs[k].mode;
      opt.strategy = k_runs[k].strategy;
      opt.relation = p == 0 ? NULL : p == 1 ? &always : rel;
      tg_plan *plan = NULL;
      uint64_t start = tg__now_us();
      tg_status st = tg_plan_compute(set->records, set->count, 1, &opt, NULL, &plan);
      ms[p] = ms_since(start);
      if (st != TG_OK) {
        printf("%-8s %-18s %s\n", tg_mode_name(k_runs[k].mode), tg_strategy_name(k_runs[k].strategy),
               tg_status_string(st));
        failed = 1;
        break;
      }
      total[p] = plan->total;
      tg_plan_destroy(plan);
    }
    if (failed) continue;
    double ratio = ms[0] > 0.001 ? ms[2] / ms[0] : 1.0;
    if (ratio > 5.0) worst_ok = 0;
    printf("%-8s %-18s %10.2f %10.2f %12.2f %6.2fx %14llu %14llu\n", tg_mode_name(k_runs[k].mode),
           tg_strategy_name(k_runs[k].strategy), ms[0], ms[1], ms[2], ratio,
           (unsigned long long)total[0], (unsigned long long)total[2]);
  }
  printf("ratio = parallel-safe / serial planning time: %s (target <= 5x). any-rel: the\n"
         "strategy's relation-aware path with a relation that allows everything.\n",
         worst_ok ? "every ratio within target" : "SOME RATIO ABOVE 5x");
  tg_policy_relation_destroy(pr);
  tg_model_records_destroy(mr);
  tg_lifetimes_destroy(lt);
  tg_schedule_destroy(s);
  return 0;
}

int main(int argc, char **argv) {
  size_t ops = 10000;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    char *end = NULL;
    unsigned long long v = strtoull(argv[i], &end, 10);
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      printf("usage: bench_schedule [OPS [SEED]]   (default 10000 ops, seed 1)\n");
      return 0;
    }
    if (i > 2 || end == argv[i] || *end != '\0' || (i == 1 && (v == 0 || v > 10000000))) {
      fprintf(stderr, "bench_schedule: bad argument '%s' (usage: bench_schedule [OPS [SEED]], "
                      "OPS in 1..10000000)\n", argv[i]);
      return 2;
    }
    if (i == 1) ops = (size_t)v;
    else seed = v;
  }
  tg_graph *g = random_graph(ops, seed);
  if (g == NULL) {
    fprintf(stderr, "bench_schedule: out of memory building the graph\n");
    return 1;
  }
  int rc = bench_graph("random", g, seed);
  tg_graph_destroy(g);
  if (rc != 0) return rc;
  g = network_graph(ops, seed);
  if (g == NULL) {
    fprintf(stderr, "bench_schedule: out of memory building the graph\n");
    return 1;
  }
  printf("\n");
  rc = bench_graph("network-like", g, seed);
  tg_graph_destroy(g);
  return rc;
}
