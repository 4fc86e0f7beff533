/* bench_planner: time and quality of every planning strategy, the improvement search and the
 * exact mode, on synthetic families at 1k / 10k / 100k records and on the public models.
 *
 *   bench_planner [--json | --markdown] [--records DIR] [--quick] [--search-ms N] [--exact-ms N]
 *                 [--family NAME] [--perfect-only] [--models-only] [--sizes N,N,...]
 *                 [--mode objects|offsets] [--strategy NAME] [--reps N]
 *                 [--alloc arena|malloc] [--exact-sets] [--perfect-seeds K]
 *                 [--time-sweep [--limits MS,MS,...] [--seed N]] [--bounds] [--regress FILE]
 *                 [--regress-save FILE [--regress-set ci|full | --regress-from TABLE]]
 *
 * --json prints the rows and the summary as JSON; --markdown prints the same table as a Markdown
 * table (one more column, `note`, holds what the plain table prints on a line of its own: the
 * skipped rows' reason, the exact rows' `exact:` and the bound rows' `texels:` details) and the
 * summary as a list. The last of --json and --markdown given wins.
 *
 * --family NAME runs only that synthetic family (chain, wide-dag, transformer,
 * perfect-packing, minimalloc, compiler-trace) and no public models; the 200-500 perfect packings run only for no
 * --family or --family perfect-packing. --perfect-only runs just those 200-500 perfect
 * packings (greedy, best+search, exact) with one line per instance; --models-only just the
 * public models (with, for textures, the lower bounds that cap any plan's saving against
 * TFLite: tg_bounds_objects_shape, tg_bounds_objects_subset, tg_bounds_objects_lp). --sizes replaces the
 * synthetic sizes 1000,10000,100000. --mode and --strategy keep only those rows (strategy
 * `best+search` for the search rows); --reps N times each plan N times and keeps the fastest
 * (default 5 / 3 / 1 runs at 1k / 10k / larger). --alloc arena (the default) hands the
 * planner a bump allocator reset between runs, whose pages stay mapped after the first run,
 * and times at least two runs; --alloc malloc uses the default allocator, whose large blocks
 * glibc unmaps on free, so every run pays first-touch page faults. --exact-sets also runs the
 * exact mode (--exact-ms) on each synthetic set of up to TG_EXACT_MAX_SERIAL_RECORDS records.
 * --perfect-seeds K runs K perfect packings of each size 200-500 (the first is the default one).
 * --time-sweep runs `best` at 25, 50, ..., 1600 ms on every synthetic family (default sizes
 * 1000 and 10000, compiler traces 30000 and 60000; --sizes, --family and --mode narrow it) and
 * prints the plan over the bound at each limit, flags (`!`) a limit whose plan is larger than
 * the one before, counts calls that returned early above the bound, the curve per family, and
 * how far the 100 ms plan is from the least any limit found (compiler-trace, minimalloc). It
 * exits 1 when a longer limit gave a larger plan or a time limit was exceeded. --limits MS,MS,...
 * (up to 8) replaces the limits (capacity-tight: --family capacity-tight --limits 100,1000,10000);
 * --seed N gives the search seed N (default 0).
 * --bounds prints, per synthetic instance of the time sweep (offsets; --family, --sizes narrow
 * it; --family models: the public models' buffer sets only), peak-live, tg_bounds_offsets'
 * bound, its source and time, `best` at --search-ms, the share of the gap plan - peak-live the
 * bound closes, and with --exact-sets the exact mode's plan (--exact-ms); exits 1 when a plan
 * is below the bound.
 *
 * Quality is total / lower bound (offsets: peak-live; objects: positional-max), so 1.000 is
 * optimal. Each size also times a qsort of the same records by first task, and every row shows
 * its time as a multiple of that: the ratios, not the milliseconds, are what compare across
 * machines. --quick stops at 10k records. DIR defaults to tests/data/records under the source
 * tree (TG_SOURCE_DIR when defined, else the working directory). */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_rng.h"
#include "bench/capacity_tight.h"
#include "tangram/planner.h"
#include "tangram/records.h"

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

typedef struct rng {
  uint64_t s;
} rng;

static uint64_t rnext(rng *g) { return rng_next(&g->s); }

static uint64_t rrange(rng *g, uint64_t lo, uint64_t hi) { return lo + rnext(g) % (hi - lo + 1); }

static tg_usage_record rec1(uint64_t size, uint64_t first, uint64_t last) {
  tg_usage_record r;
  memset(&r, 0, sizeof r);
  r.size = (tg_extent){size, 1, 1};
  r.first_task = (uint32_t)first;
  r.last_task = (uint32_t)last;
  return r;
}

/* ---- families ----------------------------------------------------------------------------- */

/* Chains: one tensor per task, each living 1-3 tasks. */
static void gen_chain(rng *g, tg_usage_record *r, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    /* One draw per statement: the order of argument evaluation is unspecified in C, and
     * compilers differ, so draws inside one call would give each compiler other records. */
    uint64_t len = rrange(g, 1, 3);
    uint64_t size = rrange(g, 1, 1024) * 1024;
    r[i] = rec1(size, i, i + len);
  }
}

/* Wide DAGs: about 100 tensors live at any task (lengths 1-20 over n/10 tasks). */
static void gen_wide(rng *g, tg_usage_record *r, size_t n) {
  uint64_t tasks = n / 10 + 1;
  for (size_t i = 0; i < n; ++i) {
    uint64_t f = rrange(g, 0, tasks);
    uint64_t len = rrange(g, 1, 20); /* one draw per statement (see gen_chain) */
    uint64_t size = rrange(g, 1, 4096) * 256;
    r[i] = rec1(size, f, f + len);
  }
}

/* Transformer-like: blocks of 16 tasks; per block a residual stream living the whole block
 * and into the next, a K/V cache tensor living 8 blocks, and short-lived activations of
 * varied sizes (attention scores the largest). */
static void gen_transformer(rng *g, tg_usage_record *r, size_t n) {
  size_t i = 0;
  uint64_t hidden = 768 * 4 * 128; /* hidden * fp32 * tokens */
  for (uint64_t blk = 0; i < n; ++blk) {
    uint64_t t0 = blk * 16;
    if (i < n) r[i++] = rec1(hidden, t0, t0 + 20);
    if (i < n) r[i++] = rec1(hidden / 2, t0 + 2, t0 + 16 * 8);
    for (int k = 0; k < 18 && i < n; ++k) {
      uint64_t f = t0 + rrange(g, 0, 15);
      uint64_t size = k < 3 ? hidden * rrange(g, 1, 12) / 4    /* scores, per head group */
                            : hidden * rrange(g, 1, 16) / 8;  /* q, k, v, ffn, norms */
      r[i++] = rec1(size, f, f + rrange(g, 1, 4));
    }
  }
}

/* Perfect packing: a W x T rectangle cut by random guillotine cuts into n pieces; each piece is
 * a record (address range = size, time range = interval). The optimum is W = peak-live. */
static void gen_perfect(rng *g, tg_usage_record *r, size_t n) {
  typedef struct piece {
    uint64_t x0, x1, t0, t1; /* half-open */
  } piece;
  piece *p = malloc((n ? n : 1) * sizeof *p);
  if (p == NULL) abort();
  uint64_t w = 1000 * (uint64_t)n, t = 4 * (uint64_t)n + 8;
  size_t count = 1;
  p[0] = (piece){0, w, 0, t};
  while (count < n) {
    size_t k = (size_t)rrange(g, 0, count - 1);
    piece q = p[k];
    int by_time = rnext(g) & 1;
    if (q.x1 - q.x0 < 2) by_time = 1;
    if (q.t1 - q.t0 < 2) by_time = 0;
    if (q.x1 - q.x0 < 2 && q.t1 - q.t0 < 2) continue;
    if (by_time) {
      uint64_t c = rrange(g, q.t0 + 1, q.t1 - 1);
      p[k].t1 = c;
      p[count++] = (piece){q.x0, q.x1, c, q.t1};
    } else {
      uint64_t c = rrange(g, q.x0 + 1, q.x1 - 1);
      p[k].x1 = c;
      p[count++] = (piece){c, q.x1, q.t0, q.t1};
    }
  }
  for (size_t i = 0; i < n; ++i) r[i] = rec1(p[i].x1 - p[i].x0, p[i].t0, p[i].t1 - 1);
  free(p);
}

/* A size like a compiler's: not a power of two, and no common unit across records (2^k + 1,
 * 2^k - 3, 1.5 * 2^k + 7, or 2^k plus an odd offset), k in [lo, hi]. */
static uint64_t odd_size(rng *g, unsigned lo, unsigned hi) {
  unsigned k = (unsigned)rrange(g, lo, hi);
  uint64_t base = (uint64_t)1 << k;
  switch (rnext(g) % 4) {
    case 0: return base + 1;
    case 1: return base > 4 ? base - 3 : base + 3;
    case 2: return base + base / 2 + 7;
    default: return base + (rrange(g, 1, base / 2) | 1);
  }
}

/* Compiler traces (ML-compiler buffer traces): tens of thousands of short-lived buffers (1-7
 * tasks over n/6 tasks, sizes from odd_size) and 300 long-lived ones (a quarter to all of the
 * trace, odd sizes around one mean) holding about a third of the peak; records in random
 * order. */
static void gen_compiler(rng *g, tg_usage_record *r, size_t n) {
  size_t longs = n >= 3000 ? 300 : n / 10;
  uint64_t tasks = n / 6 + 8;
  double short_live = 0;
  for (size_t i = longs; i < n; ++i) {
    uint64_t f = rrange(g, 0, tasks - 8);
    uint64_t len = rrange(g, 0, 6); /* one draw per statement (see gen_chain) */
    uint64_t size = odd_size(g, 10, 18);
    r[i] = rec1(size, f, f + len);
    short_live += (double)size * (double)(len + 1);
  }
  short_live /= (double)tasks;
  /* Long-lived buffers live 5/8 of the trace on average and hold as much as the short-lived
   * buffers' mean live sum, which puts them at about a third of the peak. */
  double avg = longs ? short_live / ((double)longs * 5 / 8) : 0;
  for (size_t i = 0; i < longs; ++i) {
    uint64_t len = rrange(g, tasks / 4, tasks - 1);
    uint64_t f = rrange(g, 0, tasks - 1 - len);
    uint64_t pct = rrange(g, 50, 150); /* one draw per statement (see gen_chain) */
    uint64_t size = (uint64_t)(avg * (double)pct / 100.0) | 1; /* odd: no common unit */
    r[i] = rec1(size, f, f + len);
  }
  for (size_t i = n; i > 1; --i) { /* shuffle */
    size_t j = (size_t)rrange(g, 0, i - 1);
    tg_usage_record t = r[i - 1];
    r[i - 1] = r[j];
    r[j] = t;
  }
}

/* MiniMalloc-style (the buffer sets of Google's MiniMalloc benchmarks, from accelerator
 * compilers): buffers of multiples of 64 bytes with log-uniform sizes (64 B to 256 KiB) and
 * log-uniform lifetimes (1 task to a quarter of the n/2 tasks), so that many long-lived
 * buffers of every size overlap; records in time order. */
static void gen_minimalloc(rng *g, tg_usage_record *r, size_t n) {
  uint64_t tasks = n / 2 + 8;
  for (size_t i = 0; i < n; ++i) {
    unsigned k = (unsigned)rrange(g, 0, 12);
    uint64_t size = 64 * (((uint64_t)1 << k) + rrange(g, 0, ((uint64_t)1 << k) - 1));
    unsigned maxl = 0;
    while (((uint64_t)2 << maxl) <= tasks / 4) ++maxl;
    unsigned l = (unsigned)rrange(g, 0, maxl);
    uint64_t len = rrange(g, (uint64_t)1 << l, ((uint64_t)2 << l) - 1); /* one draw per statement */
    uint64_t f = (uint64_t)i * (tasks - 1) / (n ? n : 1);
    if (f + len >= tasks) len = tasks - 1 - f;
    r[i] = rec1(size, f, f + len);
  }
}

typedef struct family {
  const char *name;
  void (*gen)(rng *, tg_usage_record *, size_t);
} family;

static const family k_families[] = {{"chain", gen_chain},
                                    {"wide-dag", gen_wide},
                                    {"transformer", gen_transformer},
                                    {"perfect-packing", gen_perfect},
                                    {"minimalloc", gen_minimalloc}};

/* ---- output ------------------------------------------------------------------------------- */

typedef struct out {
  int json;
  int markdown;
  int rows;
} out;

/* One row. `note` (a skipped row's reason) replaces the figures; `detail` is printed in
 * --markdown's note column only (the callers print it on its own line in the plain table). */
static void row(out *o, const char *set, size_t n, const char *mode, const char *what,
                double ms, double ratio, double vs_qsort, const char *note, const char *detail) {
  /* The strategy's origin, from the name's first word ("beam(width=4)" is beam). */
  char base[64];
  snprintf(base, sizeof base, "%s", what);
  base[strcspn(base, "(+")] = '\0';
  tg_strategy st;
  const char *origin = tg_strategy_from_name(base, &st) == TG_OK ? tg_strategy_origin(st) : "-";
  if (o->markdown) {
    char t[32] = "-", r[32] = "-", q[32] = "-";
    if (note == NULL) {
      snprintf(t, sizeof t, "%.3f", ms);
      snprintf(r, sizeof r, "%.4f", ratio);
      if (vs_qsort > 0) snprintf(q, sizeof q, "%.1fx", vs_qsort);
    }
    printf("| %-28s | %7zu | %-7s | %-24s | %-10s | %9s | %7s | %8s | %s |\n", set, n, mode, what,
           origin, t, r, q, note != NULL ? note : detail != NULL ? detail : "");
  } else if (o->json) {
    printf("%s{\"set\":\"%s\",\"records\":%zu,\"mode\":\"%s\",\"strategy\":\"%s\",\"origin\":\"%s\"",
           o->rows ? ",\n" : "", set, n, mode, what, origin);
    if (note != NULL) {
      printf(",\"skipped\":\"%s\"}", note);
    } else {
      printf(",\"ms\":%.3f,\"ratio\":%.4f", ms, ratio);
      if (vs_qsort > 0) printf(",\"vs_qsort\":%.1f", vs_qsort);
      printf("}");
    }
  } else if (note != NULL) {
    printf("| %-28s | %7zu | %-7s | %-24s | %-10s | %9s | %7s | %8s | %s\n", set, n, mode, what,
           origin, "-", "-", "-", note);
  } else {
    char q[32] = "-";
    if (vs_qsort > 0) snprintf(q, sizeof q, "%.1fx", vs_qsort);
    printf("| %-28s | %7zu | %-7s | %-24s | %-10s | %9.3f | %7.4f | %8s |\n", set, n, mode, what,
           origin, ms, ratio, q);
  }
  o->rows++;
}

static int cmp_first(const void *a, const void *b) {
  const tg_usage_record *x = a, *y = b;
  return (x->first_task > y->first_task) - (x->first_task < y->first_task);
}

static double time_qsort(const tg_usage_record *r, size_t n, int reps) {
  tg_usage_record *c = malloc((n ? n : 1) * sizeof *c);
  if (c == NULL) abort();
  double best = 1e30;
  for (int k = 0; k < reps; ++k) {
    memcpy(c, r, n * sizeof *c);
    uint64_t t = now_us();
    qsort(c, n, sizeof *c, cmp_first);
    double ms = (double)(now_us() - t) / 1000.0;
    if (ms < best) best = ms;
  }
  free(c);
  return best;
}

/* A bump allocator handed to the planner through tg_allocator, reset between runs: its pages,
 * touched by the first run, stay mapped for the next ones - how an engine that plans again and
 * again would embed the planner. With malloc, glibc returns large blocks to the kernel on free,
 * so every run pays first-touch page faults again (on this machine, wide-DAG greedy-by-size
 * offsets at 10k records: 3.7-4.0 ms with the arena, 4.8-7.9 ms with malloc). Blocks that do
 * not fit fall back to malloc. */
typedef struct arena {
  unsigned char *base;
  size_t cap, used;
} arena;

static int in_arena(const arena *a, const void *p) {
  return (const unsigned char *)p >= a->base && (const unsigned char *)p < a->base + a->cap;
}

static void *arena_alloc(void *user, size_t size) {
  arena *a = user;
  size_t need = (size + 63) & ~(size_t)63;
  if (need >= size && need <= a->cap - a->used) {
    void *p = a->base + a->used;
    a->used += need;
    return p;
  }
  return malloc(size ? size : 1);
}

static void *arena_realloc(void *user, void *ptr, size_t old_size, size_t new_size) {
  arena *a = user;
  if (ptr == NULL || !in_arena(a, ptr)) {
    if (ptr != NULL) return realloc(ptr, new_size ? new_size : 1);
    return arena_alloc(a, new_size);
  }
  void *q = arena_alloc(a, new_size);
  if (q != NULL) memcpy(q, ptr, old_size < new_size ? old_size : new_size);
  return q;
}

static void arena_free(void *user, void *ptr) {
  if (ptr != NULL && !in_arena(user, ptr)) free(ptr);
}

/* Plan with `opt`, best of `reps` runs (through `alloc`, reset before each run, when given);
 * `*total` is the fastest run's (a search stopped by the clock may differ between runs) and
 * `*slowest` (may be NULL) the slowest run's time; -1 on failure. */
static double time_plan(const tg_usage_record *r, size_t n, uint32_t dims, const tg_plan_options *opt,
                        int reps, arena *ar, uint64_t *total, double *slowest) {
  double best = 1e30, worst = 0;
  tg_allocator al = {arena_alloc, arena_realloc, arena_free, ar};
  for (int k = 0; k < reps; ++k) {
    tg_plan *p = NULL;
    if (ar != NULL) ar->used = 0;
    uint64_t t = now_us();
    tg_status st = tg_plan_compute(r, n, dims, opt, ar != NULL ? &al : NULL, &p);
    double ms = (double)(now_us() - t) / 1000.0;
    if (st != TG_OK) {
      fprintf(stderr, "bench_planner: %s: %s\n", tg_strategy_name(opt->strategy), tg_status_string(st));
      return -1;
    }
    if (ms < best) {
      best = ms;
      *total = p->total;
    }
    if (ms > worst) worst = ms;
    tg_plan_destroy(p);
  }
  if (slowest != NULL) *slowest = worst;
  return best;
}

/* The time-limit check over every search row: a call with time_limit_ms = L must return
 * within L + L/10 + 20 ms (planner.h), every run counted. */
typedef struct limit_stats {
  int rows, violations;
  double worst_over_ms; /* the largest (time - L), negative when all finished early */
  char worst[160];
} limit_stats;

static void limit_check(limit_stats *ls, const char *set, size_t n, const char *mode,
                        uint32_t limit_ms, double slowest_ms) {
  double allowed = limit_ms + limit_ms / 10.0 + 20.0, over = slowest_ms - limit_ms;
  ls->rows++;
  if (ls->rows == 1 || over > ls->worst_over_ms) {
    ls->worst_over_ms = over;
    snprintf(ls->worst, sizeof ls->worst, "%s %zu %s, limit %u ms: %.1f ms", set, n, mode,
             (unsigned)limit_ms, slowest_ms);
  }
  if (slowest_ms > allowed) {
    ls->violations++;
    fprintf(stderr, "bench_planner: time limit exceeded: %s %zu records %s: %.1f ms for a %u ms "
                    "limit (allowed %.1f)\n", set, n, mode, slowest_ms, (unsigned)limit_ms, allowed);
  }
}

#define SWEEP_LIMITS 7 /* the default limits: 25, 50, ..., 1600 ms */
#define SWEEP_MAX 8    /* at most this many with --limits */

typedef struct bench_cfg {
  uint32_t search_ms;
  uint32_t long_ms;      /* 0, or a second search row (the compiler traces: 1000) */
  uint32_t exact_ms;
  int mode;              /* -1 = both */
  const char *strategy;  /* NULL = all */
  int reps;              /* 0 = by size */
  size_t hill_max;       /* hill-climb rows only up to this many records (0 = all) */
  arena *arena;          /* NULL: plan with malloc (--alloc malloc) */
  limit_stats *limits;
  uint32_t sweep_ms[SWEEP_MAX]; /* --time-sweep's limits (25, 50, ..., 1600; or --limits) */
  int sweep_count;
  int sweep_at100;               /* the one "100 ms vs least" reads */
  uint64_t sweep_seed;           /* --seed: the search's seed in the sweep (default 0) */
} bench_cfg;

/* One row of run_set: a strategy, a beam width (0 = default), a time limit. */
typedef struct row_spec {
  tg_strategy strategy;
  uint32_t width;
  uint32_t limit_ms; /* TG_TIME_LIMIT_NONE for every row but best+search */
} row_spec;

/* Every strategy of the mode (enum order, `best` without search last), beam also at widths
 * 1, 4 and 32 beside its default 8, then best + search (and the long search). */
static size_t row_specs(const bench_cfg *cfg, tg_mode mode, uint32_t dims, row_spec *out) {
  size_t k = 0;
  for (int i = 0; i < TG_STRATEGY_COUNT - 1; ++i) {
    tg_strategy s = (tg_strategy)(i < TG_STRATEGY_BEST ? i : i + 1);
    if (!tg_strategy_applies(s, mode, dims)) continue;
    out[k++] = (row_spec){s, 0, TG_TIME_LIMIT_NONE};
    if (s == TG_STRATEGY_BEAM) {
      static const uint32_t widths[] = {1, 4, 32};
      for (size_t w = 0; w < 3; ++w) out[k++] = (row_spec){s, widths[w], TG_TIME_LIMIT_NONE};
    }
  }
  out[k++] = (row_spec){TG_STRATEGY_BEST, 0, TG_TIME_LIMIT_NONE};
  out[k++] = (row_spec){TG_STRATEGY_BEST, 0, cfg->search_ms};
  if (cfg->long_ms) out[k++] = (row_spec){TG_STRATEGY_BEST, 0, cfg->long_ms};
  return k;
}

/* Every strategy of both modes (objects only when `objects`), then best + search. */
static void run_set(out *o, const bench_cfg *cfg, const char *set, const tg_usage_record *r, size_t n,
                    uint32_t dims, int offsets, int objects, double *mean_off, double *mean_obj) {
  tg_bounds b;
  if (tg_bounds_compute(r, n, dims, NULL, &b) != TG_OK) return;
  int reps = cfg->reps > 0 ? cfg->reps : n <= 1000 ? 5 : n <= 10000 ? 3 : 1;
  double q = time_qsort(r, n, reps);
  row(o, set, n, "-", "qsort(first_task)", q, 0, 0, NULL, NULL);
  for (int mode = 0; mode < 2; ++mode) {
    if ((mode == TG_MODE_OFFSETS && !offsets) || (mode == TG_MODE_OBJECTS && !objects)) continue;
    if (cfg->mode >= 0 && mode != cfg->mode) continue;
    uint64_t lb = mode == TG_MODE_OFFSETS ? b.peak_live : b.positional_max;
    row_spec specs[3 * TG_STRATEGY_COUNT];
    size_t nspecs = row_specs(cfg, (tg_mode)mode, dims, specs);
    for (size_t i = 0; i < nspecs; ++i) {
      const row_spec *rs = &specs[i];
      const int search = rs->limit_ms != TG_TIME_LIMIT_NONE;
      tg_plan_options opt;
      memset(&opt, 0, sizeof opt);
      opt.mode = (tg_mode)mode;
      opt.strategy = rs->strategy;
      opt.beam_width = rs->width;
      opt.time_limit_ms = rs->limit_ms;
      char name[64];
      if (search) snprintf(name, sizeof name, "best+search(%ums)", (unsigned)rs->limit_ms);
      else if (rs->width) snprintf(name, sizeof name, "beam(width=%u)", (unsigned)rs->width);
      else snprintf(name, sizeof name, "%s", tg_strategy_name(rs->strategy));
      if (cfg->strategy != NULL &&
          strcmp(cfg->strategy, search ? "best+search" : tg_strategy_name(rs->strategy)) != 0)
        continue;
      if (opt.strategy == TG_STRATEGY_MIN_COST_FLOW && n > TG_DEFAULT_MCF_MAX_RECORDS) {
        row(o, set, n, tg_mode_name(opt.mode), name, 0, 0, 0, "skipped: above min-cost-flow limit",
            NULL);
        continue;
      }
      if (opt.strategy == TG_STRATEGY_HILL_CLIMB && cfg->hill_max && n > cfg->hill_max) {
        row(o, set, n, tg_mode_name(opt.mode), name, 0, 0, 0,
            "skipped: above --hill-climb-max (500 greedy passes)", NULL);
        continue;
      }
      uint64_t total = 0;
      double slowest = 0;
      /* With the arena, a second run at least: the first one faults its pages in (for the
       * search rows too: at 100k those faults ate most of a 100 ms limit). */
      int runs = search ? (cfg->arena != NULL ? 2 : 1) : cfg->arena != NULL && reps < 2 ? 2 : reps;
      double ms = time_plan(r, n, dims, &opt, runs, cfg->arena, &total, &slowest);
      if (ms < 0) continue;
      double ratio = lb ? (double)total / (double)lb : 1.0;
      row(o, set, n, tg_mode_name(opt.mode), name, ms, ratio, q > 0 ? ms / q : 0, NULL, NULL);
      if (search) limit_check(cfg->limits, set, n, tg_mode_name(opt.mode), rs->limit_ms, slowest);
      if (search && rs->limit_ms == cfg->search_ms) {
        if (mode == TG_MODE_OFFSETS && mean_off) *mean_off += ratio;
        if (mode == TG_MODE_OBJECTS && mean_obj) *mean_obj += ratio;
      }
    }
  }
}

static void run_exact(out *o, const bench_cfg *cfg, const char *set, const tg_usage_record *r,
                      size_t n, int *proved) {
  tg_plan_options opt;
  memset(&opt, 0, sizeof opt);
  opt.time_limit_ms = cfg->exact_ms;
  tg_exact_stats stats;
  memset(&stats, 0, sizeof stats);
  tg_plan *p = NULL;
  uint64_t t = now_us();
  tg_status st = tg_plan_compute_exact(r, n, &opt, NULL, &p, &stats);
  double ms = (double)(now_us() - t) / 1000.0;
  if (st != TG_OK) return;
  tg_bounds b;
  if (tg_bounds_compute(r, n, 1, NULL, &b) != TG_OK) b.peak_live = 0;
  char name[96];
  snprintf(name, sizeof name, "exact(%ums)%s", (unsigned)cfg->exact_ms,
           stats.proved_optimal ? " optimal" : "");
  char detail[160];
  snprintf(detail, sizeof detail, "exact: %" PRIu64 " nodes, %.0f ms, lower bound %.4f, proved %d",
           stats.nodes, (double)stats.elapsed_us / 1000.0,
           b.peak_live ? (double)stats.lower_bound / (double)b.peak_live : 1.0,
           stats.proved_optimal);
  row(o, set, n, "offsets", name, ms, b.peak_live ? (double)p->total / (double)b.peak_live : 1.0,
      0, NULL, detail);
  if (stats.proved_optimal && p->total == b.peak_live) ++*proved;
  if (!o->json && !o->markdown) printf("|   %s\n", detail);
  tg_plan_destroy(p);
}

/* --perfect-only: greedy `best`, best + search, for one perfect packing. */
static void run_perfect_instance(out *o, const bench_cfg *cfg, const tg_usage_record *r,
                                 size_t n, double *search_ratio) {
  tg_bounds b;
  if (tg_bounds_compute(r, n, 1, NULL, &b) != TG_OK) return;
  for (int k = 0; k < 2; ++k) {
    tg_plan_options opt;
    memset(&opt, 0, sizeof opt);
    opt.mode = TG_MODE_OFFSETS;
    opt.strategy = TG_STRATEGY_BEST;
    opt.time_limit_ms = k ? cfg->search_ms : TG_TIME_LIMIT_NONE;
    char name[64];
    if (k) snprintf(name, sizeof name, "best+search(%ums)", (unsigned)cfg->search_ms);
    else snprintf(name, sizeof name, "best");
    uint64_t total = 0;
    double ms = time_plan(r, n, 1, &opt, 1, NULL, &total, NULL);
    if (ms < 0) continue;
    double ratio = b.peak_live ? (double)total / (double)b.peak_live : 1.0;
    row(o, "perfect-packing", n, "offsets", name, ms, ratio, 0, NULL, NULL);
    if (k) limit_check(cfg->limits, "perfect-packing", n, "offsets", cfg->search_ms, ms);
    if (k) *search_ratio = ratio;
  }
}

/* --time-sweep: `best` at 25, 50, ..., 1600 ms on one instance and mode: the plan (over the
 * lower bound) at each limit, whether a longer limit ever gave a larger plan, and whether a
 * call returned early above the bound. */
typedef struct sweep_family {
  const char *name;
  int mode, instances;
  double ratio_sum[SWEEP_MAX];
} sweep_family;

typedef struct sweep_stats {
  int instances, violations, early, short_total, short_within;
  double worst_short;
  sweep_family fam[32];
  size_t fam_count;
} sweep_stats;

static void run_sweep(out *o, const bench_cfg *cfg, sweep_stats *ss, const char *set,
                      const tg_usage_record *r, size_t n, int mode, int short_family) {
  tg_bounds b;
  if (tg_bounds_compute(r, n, 1, NULL, &b) != TG_OK) return;
  uint64_t lb = mode == TG_MODE_OFFSETS ? b.peak_live : b.positional_max;
  uint64_t totals[SWEEP_MAX] = {0};
  double ms[SWEEP_MAX] = {0};
  const int nk = cfg->sweep_count;
  for (int k = 0; k < nk; ++k) {
    tg_plan_options opt;
    memset(&opt, 0, sizeof opt);
    opt.mode = (tg_mode)mode;
    opt.strategy = TG_STRATEGY_BEST;
    opt.time_limit_ms = cfg->sweep_ms[k];
    opt.seed = cfg->sweep_seed;
    ms[k] = time_plan(r, n, 1, &opt, 1, cfg->arena, &totals[k], NULL);
    if (ms[k] < 0) return;
    limit_check(cfg->limits, set, n, tg_mode_name(opt.mode), opt.time_limit_ms, ms[k]);
  }
  ss->instances++;
  uint64_t least = totals[0];
  int bad = 0, early = 0;
  for (int k = 0; k < nk; ++k) {
    if (totals[k] < least) least = totals[k];
    if (k > 0 && totals[k] > totals[k - 1]) bad++;
    if (totals[k] > lb && ms[k] < 0.9 * cfg->sweep_ms[k]) early++;
  }
  ss->violations += bad;
  ss->early += early;
  double at100 = (double)totals[cfg->sweep_at100] / (double)least;
  if (short_family) {
    ss->short_total++;
    if (at100 <= 1.02) ss->short_within++;
    if (at100 > ss->worst_short) ss->worst_short = at100;
  }
  sweep_family *f = NULL;
  for (size_t i = 0; i < ss->fam_count; ++i)
    if (strcmp(ss->fam[i].name, set) == 0 && ss->fam[i].mode == mode) f = &ss->fam[i];
  if (f == NULL && ss->fam_count < 32) {
    f = &ss->fam[ss->fam_count++];
    memset(f, 0, sizeof *f);
    f->name = set;
    f->mode = mode;
  }
  if (f != NULL) f->instances++;
  if (o->json) printf("%s{\"set\":\"%s\",\"records\":%zu,\"mode\":\"%s\",\"bound\":%" PRIu64 ",\"sweep\":[",
                      o->rows ? ",\n" : "", set, n, tg_mode_name((tg_mode)mode), lb);
  else printf("| %-16s | %6zu | %-7s |", set, n, tg_mode_name((tg_mode)mode));
  for (int k = 0; k < nk; ++k) {
    double ratio = lb ? (double)totals[k] / (double)lb : 1.0;
    if (f != NULL) f->ratio_sum[k] += ratio;
    if (o->json) printf("%s{\"limit_ms\":%u,\"ms\":%.1f,\"total\":%" PRIu64 ",\"ratio\":%.4f}",
                        k ? "," : "", cfg->sweep_ms[k], ms[k], totals[k], ratio);
    else printf(" %.4f%s |", ratio, k > 0 && totals[k] > totals[k - 1] ? "!" : " ");
  }
  if (o->json) printf("],\"larger_later\":%d,\"early\":%d,\"at100_vs_least\":%.4f}", bad, early, at100);
  else printf(" %d | %d | %.4f |\n", bad, early, at100);
  o->rows++;
}

static int read_set(const char *dir, const char *file, tg_record_set **set) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  tg_error_info err;
  if (tg_records_read_csv(path, NULL, set, &err) != TG_OK) {
    fprintf(stderr, "bench_planner: %s: %s\n", path, err.message);
    return 0;
  }
  return 1;
}

/* TFLite's best texture plans (GREEDY_IN_ORDER) on the public models, in texels, as measured
 * in ../shared/reference/tflite-on-mediapipe.md; indexed [2D, 3D][model] in the order of
 * `models` in main. */
static const uint64_t k_tflite_best[2][4] = {{164224, 476672, 1285348, 450566},
                                             {333184, 713048, 1528692, 583742}};

/* How far below TFLite any objects plan of a texture set can go: the largest of the
 * shape-aware, subset and LP lower bounds, against `best` with the search. Prints a row "SET ceiling" (ratio =
 * best+search / lower bound). 0 when a bound or the plan fails. */
static int texture_ceiling(out *o, const bench_cfg *cfg, const char *set_name,
                           const tg_record_set *set, uint64_t tflite, double *most, double *got) {
  uint64_t shape = 0, sub = 0, lp = 0;
  uint64_t t0 = now_us();
  if (tg_bounds_objects_shape(set->records, set->count, set->dims, NULL, &shape) != TG_OK ||
      tg_bounds_objects_subset(set->records, set->count, set->dims, 0, NULL, &sub) != TG_OK ||
      tg_bounds_objects_lp(set->records, set->count, set->dims, 0, 0, NULL, &lp) != TG_OK)
    return 0;
  double bound_ms = (double)(now_us() - t0) / 1000.0;
  uint64_t lb = shape > sub ? shape : sub;
  if (lp > lb) lb = lp;
  tg_plan_options opt;
  memset(&opt, 0, sizeof opt);
  opt.mode = TG_MODE_OBJECTS;
  opt.strategy = TG_STRATEGY_BEST;
  opt.time_limit_ms = cfg->search_ms;
  uint64_t total = 0;
  double ms = time_plan(set->records, set->count, set->dims, &opt, 1, NULL, &total, NULL);
  if (ms < 0 || lb == 0) return 0;
  limit_check(cfg->limits, set_name, set->count, "objects", cfg->search_ms, ms);
  *most = 1 - (double)lb / (double)tflite;
  *got = 1 - (double)total / (double)tflite;
  char detail[256];
  snprintf(detail, sizeof detail,
           "texels: best+search %" PRIu64 ", lower bound %" PRIu64 " (shape %" PRIu64
           ", subset %" PRIu64 ", LP %" PRIu64 "), TFLite %" PRIu64 ": saves %.1f%%, at most %.1f%%",
           total, lb, shape, sub, lp, tflite, 100 * *got, 100 * *most);
  row(o, set_name, set->count, "objects", "bounds(shape,subset,LP)", bound_ms,
      (double)total / (double)lb, 0, NULL, detail);
  if (!o->json && !o->markdown) printf("|   %s\n", detail);
  return 1;
}

/* Instance n of family f (f == nf: the compiler traces), seeded as the sweep and the bounds
 * runs both draw it, so their rows are the same instances. */
static void gen_instance(size_t f, size_t nf, size_t n, tg_usage_record *r) {
  if (f < nf) {
    uint64_t key = n == 1000 ? 0 : n == 10000 ? 1 : n == 100000 ? 2 : n;
    rng g = {0x5EED0000u + f * 131 + key};
    k_families[f].gen(&g, r, n);
  } else {
    rng g = {0xC0DE0000u + n};
    gen_compiler(&g, r, n);
  }
}

/* ---- no-regression mode -------------------------------------------------------------------- */

/* --regress FILE compares the search with a saved table of plans (a previous release's: see
 * docs/bench.md), row by row: instance, mode, limit, total [, peak-live, ms [, lo, hi]]. Limits:
 * wN is work_limit N (no clock: the plan is the same on every machine), tN time_limit_ms N, eN
 * the exact mode with time_limit_ms N. lo and hi, where the table has them, are the smallest
 * and largest plan of the saved release's own runs of the row: its run-to-run spread. A row is
 * more than 0.5% worse when its plan (the median of --reps runs) exceeds the table's total by
 * that; such a row counts as a regression ('!') when the table has no spread for it or the
 * plan also exceeds hi (worse than every run of the saved release), and as noise ('~') when it
 * does not. The run fails on a regression, or when a time row's call (the fastest of the runs)
 * overran its limit + 10% + 20 ms. --regress-save FILE writes such a table for --regress-set ci
 * (work limits on small instances, the CI subset) or full (time limits 25-1600 ms and the exact
 * mode, the benchmark) with the library it is linked to; with --regress-from TABLE it keeps
 * TABLE's rows and totals and measures their spread (lo, hi over --reps runs) instead. */

/* The records of a named instance: "FAMILY/N" (seeded as the sweep draws it), "compiler-trace/N",
 * "capacity-tight/N/SEED" (fewer than N records when the memory filled up first). NULL when the
 * name is unknown. */
static tg_usage_record *named_instance(const char *name, size_t *count) {
  char fam[64];
  size_t n = 0;
  unsigned long long seed = 0;
  const char *slash = strchr(name, '/');
  if (slash == NULL || (size_t)(slash - name) >= sizeof fam) return NULL;
  memcpy(fam, name, (size_t)(slash - name));
  fam[slash - name] = '\0';
  char *end = NULL;
  n = (size_t)strtoull(slash + 1, &end, 10);
  if (n == 0 || n > 10000000) return NULL;
  if (*end == '/') seed = strtoull(end + 1, &end, 10);
  if (*end != '\0') return NULL;
  tg_usage_record *r = malloc(n * sizeof *r);
  if (r == NULL) return NULL;
  size_t nf = sizeof k_families / sizeof *k_families;
  *count = n;
  if (strcmp(fam, "capacity-tight") == 0) {
    *count = gen_capacity_tight(seed, r, n);
    return r;
  }
  for (size_t f = 0; f <= nf; ++f) {
    if (strcmp(fam, f < nf ? k_families[f].name : "compiler-trace") != 0) continue;
    gen_instance(f, nf, n, r);
    return r;
  }
  free(r);
  return NULL;
}

typedef struct regress_row {
  char instance[64];
  tg_mode mode;
  char kind;      /* 'w' work limit, 't' time limit, 'e' exact */
  uint32_t limit;
  uint64_t total; /* the table's */
  uint64_t lo, hi; /* the table's spread (0: none) */
} regress_row;

/* The sets --regress-save writes: instances and modes, times limits. */
typedef struct regress_case {
  const char *instance;
  tg_mode mode;
} regress_case;

static const regress_case k_regress_ci[] = {
    {"capacity-tight/200/1", TG_MODE_OFFSETS}, {"capacity-tight/300/4", TG_MODE_OFFSETS},
    {"capacity-tight/400/2", TG_MODE_OFFSETS}, {"capacity-tight/250/5", TG_MODE_OFFSETS},
    {"capacity-tight/350/3", TG_MODE_OFFSETS}, {"minimalloc/400", TG_MODE_OFFSETS},
    {"wide-dag/400", TG_MODE_OFFSETS},         {"perfect-packing/300", TG_MODE_OFFSETS},
    {"chain/500", TG_MODE_OFFSETS},            {"transformer/500", TG_MODE_OFFSETS},
    {"minimalloc/200", TG_MODE_OBJECTS},       {"wide-dag/200", TG_MODE_OBJECTS}};
static const uint32_t k_regress_ci_work[] = {6, 30, 126, 510};

static const regress_case k_regress_full[] = {
    {"capacity-tight/150/0", TG_MODE_OFFSETS},   {"capacity-tight/200/1", TG_MODE_OFFSETS},
    {"capacity-tight/250/2", TG_MODE_OFFSETS},   {"capacity-tight/300/3", TG_MODE_OFFSETS},
    {"capacity-tight/300/4", TG_MODE_OFFSETS},   {"capacity-tight/350/5", TG_MODE_OFFSETS},
    {"capacity-tight/400/7", TG_MODE_OFFSETS},   {"capacity-tight/450/8", TG_MODE_OFFSETS},
    {"capacity-tight/500/10", TG_MODE_OFFSETS},  {"minimalloc/1000", TG_MODE_OFFSETS},
    {"minimalloc/10000", TG_MODE_OFFSETS},       {"wide-dag/1000", TG_MODE_OFFSETS},
    {"wide-dag/10000", TG_MODE_OFFSETS},         {"wide-dag/100000", TG_MODE_OFFSETS},
    {"chain/10000", TG_MODE_OFFSETS},            {"transformer/10000", TG_MODE_OFFSETS},
    {"perfect-packing/1000", TG_MODE_OFFSETS},   {"perfect-packing/10000", TG_MODE_OFFSETS},
    {"compiler-trace/20000", TG_MODE_OFFSETS},   {"compiler-trace/30000", TG_MODE_OFFSETS},
    {"compiler-trace/60000", TG_MODE_OFFSETS},   {"minimalloc/1000", TG_MODE_OBJECTS},
    {"wide-dag/10000", TG_MODE_OBJECTS}};
static const uint32_t k_regress_full_ms[] = {25, 50, 100, 200, 400, 800, 1600};
/* The exact mode: on the capacity-tight instances and the largest trace. */
static const uint32_t k_regress_exact_ms[] = {100, 500, 1000};

/* Call fn on every instance of the families (family_name NULL: all; "compiler-trace" for the
 * traces) at `sizes` (NULL: 1k and 10k, traces 30k and 60k). 1 when out of memory. */
typedef void (*instance_fn)(void *ctx, const char *family, const tg_usage_record *r, size_t n);
static int for_each_instance(const char *family_name, const size_t *sizes, size_t size_count, instance_fn fn,
                             void *ctx) {
  static const size_t k_default[] = {1000, 10000};
  static const size_t k_traces[] = {30000, 60000};
  size_t nf = sizeof k_families / sizeof *k_families;
  /* The capacity-tight instances of the no-regression table (their n and seed; --sizes does
   * not apply). */
  if (family_name == NULL || strcmp(family_name, "capacity-tight") == 0) {
    for (size_t i = 0; i < sizeof k_regress_full / sizeof *k_regress_full; ++i) {
      if (strncmp(k_regress_full[i].instance, "capacity-tight/", 15) != 0) continue;
      size_t n = 0;
      tg_usage_record *r = named_instance(k_regress_full[i].instance, &n);
      if (r == NULL) return 1;
      fn(ctx, "capacity-tight", r, n);
      free(r);
    }
  }
  for (size_t f = 0; f <= nf; ++f) {
    const char *name = f < nf ? k_families[f].name : "compiler-trace";
    if (family_name != NULL && strcmp(family_name, name) != 0) continue;
    const size_t *sz = sizes != NULL ? sizes : f < nf ? k_default : k_traces;
    size_t count = sizes != NULL ? size_count : 2;
    for (size_t s = 0; s < count; ++s) {
      size_t n = sz[s];
      tg_usage_record *r = malloc((n ? n : 1) * sizeof *r);
      if (r == NULL) return 1;
      gen_instance(f, nf, n, r);
      fn(ctx, name, r, n);
      free(r);
    }
  }
  return 0;
}

/* --time-sweep over the synthetic families (default sizes 1000 and 10000; compiler traces
 * 30000 and 60000), both modes (or --mode): a row per instance and mode, then the curve per
 * family (mean plan over bound at each limit). Exits 1 when a longer limit gave a larger plan
 * or a limit was exceeded. */
typedef struct sweep_ctx {
  out *o;
  const bench_cfg *cfg;
  sweep_stats *ss;
} sweep_ctx;

static void sweep_instance(void *ctx, const char *family, const tg_usage_record *r, size_t n) {
  sweep_ctx *c = ctx;
  int short_family = strcmp(family, "compiler-trace") == 0 || strcmp(family, "minimalloc") == 0;
  for (int mode = 0; mode < 2; ++mode)
    if (c->cfg->mode < 0 || c->cfg->mode == mode) run_sweep(c->o, c->cfg, c->ss, family, r, n, mode, short_family);
}

static int run_time_sweep(out *o, const bench_cfg *cfg, const char *family_name,
                          const size_t *sizes, size_t size_count) {
  sweep_stats ss;
  memset(&ss, 0, sizeof ss);
  if (o->json) printf("{\"sweep\":[\n");
  else {
    printf("| %-16s | %6s | %-7s |", "set", "n", "mode");
    for (int k = 0; k < cfg->sweep_count; ++k) printf(" %u ms%*s|", cfg->sweep_ms[k], cfg->sweep_ms[k] < 100 ? 3 : cfg->sweep_ms[k] < 1000 ? 2 : cfg->sweep_ms[k] < 10000 ? 1 : 0, "");
    printf(" larger later | early | %u ms vs least |\n", cfg->sweep_ms[cfg->sweep_at100]);
  }
  sweep_ctx sc = {o, cfg, &ss};
  if (for_each_instance(family_name, sizes, size_count, sweep_instance, &sc)) return 1;
  if (o->json) printf("\n],\"families\":[\n");
  else printf("\nmean plan / bound per family:\n");
  for (size_t i = 0; i < ss.fam_count; ++i) {
    const sweep_family *f = &ss.fam[i];
    if (o->json) printf("%s{\"family\":\"%s\",\"mode\":\"%s\",\"curve\":[", i ? ",\n" : "", f->name,
                        tg_mode_name((tg_mode)f->mode));
    else printf("| %-16s | %-7s |", f->name, tg_mode_name((tg_mode)f->mode));
    for (int k = 0; k < cfg->sweep_count; ++k) {
      double m = f->instances ? f->ratio_sum[k] / f->instances : 0;
      if (o->json) printf("%s%.4f", k ? "," : "", m);
      else printf(" %.4f |", m);
    }
    if (o->json) printf("]}");
    else printf("\n");
  }
  if (o->json)
    printf("\n],\"instances\":%d,\"larger_later\":%d,\"early\":%d,\"within_2pct_at_100ms\":%d,"
           "\"short_instances\":%d,\"worst_at_100ms\":%.4f,\"limit_violations\":%d}\n",
           ss.instances, ss.violations, ss.early, ss.short_within, ss.short_total, ss.worst_short,
           cfg->limits->violations);
  else
    printf("\n%d instance-modes; a longer limit gave a larger plan %d times; returned early above "
           "the bound %d times; compiler-trace and minimalloc at 100 ms within 2%% of the least "
           "any limit found: %d of %d (worst %.4f); time limits exceeded: %d of %d\n",
           ss.instances, ss.violations, ss.early, ss.short_within, ss.short_total, ss.worst_short,
           cfg->limits->violations, cfg->limits->rows);
  return ss.violations == 0 && cfg->limits->violations == 0 ? 0 : 1;
}

/* --bounds: the offsets lower bounds of every synthetic family's instances (the time sweep's;
 * or --sizes): peak-live, the subset-exact bound (tg_bounds_offsets, default work, and its
 * time), and `best` at --search-ms; the share of the gap plan - peak-live the new bound
 * closes. A row per instance, then a summary. */
static void bounds_row(out *o, const char *set, const tg_usage_record *r, size_t n, uint32_t ms,
                       uint32_t exact_ms, uint64_t known, int *above, int *rows, double *share_sum) {
  tg_bounds b;
  if (tg_bounds_compute(r, n, 1, NULL, &b) != TG_OK) return;
  uint64_t t0 = now_us();
  tg_offsets_bound ob;
  if (tg_bounds_offsets(r, n, 1, 0, 0, NULL, &ob) != TG_OK) return;
  double bound_ms = (double)(now_us() - t0) / 1000.0;
  tg_plan_options opt;
  memset(&opt, 0, sizeof opt);
  opt.mode = TG_MODE_OFFSETS;
  opt.strategy = TG_STRATEGY_BEST;
  opt.time_limit_ms = ms;
  uint64_t total = 0;
  if (time_plan(r, n, 1, &opt, 1, NULL, &total, NULL) < 0) return;
  if (total < ob.bytes) {
    fprintf(stderr, "bench_planner: %s %zu: plan %" PRIu64 " below the bound %" PRIu64 "\n", set, n,
            total, ob.bytes);
    exit(1);
  }
  /* --exact-sets: the exact mode (up to TG_EXACT_MAX_SERIAL_RECORDS records) says whether the
   * plateau is the search's (a plan found at the bound) or maybe the bound's. */
  char exact_col[64] = "-";
  if (exact_ms > 0 && n <= TG_EXACT_MAX_SERIAL_RECORDS) {
    tg_plan_options eo;
    memset(&eo, 0, sizeof eo);
    eo.time_limit_ms = exact_ms;
    tg_exact_stats es;
    memset(&es, 0, sizeof es);
    tg_plan *ep = NULL;
    if (tg_plan_compute_exact(r, n, &eo, NULL, &ep, &es) == TG_OK) {
      snprintf(exact_col, sizeof exact_col, "%.4f%s (lb %.4f)", (double)ep->total / (double)b.peak_live,
               es.proved_optimal ? " opt" : "", (double)es.lower_bound / (double)b.peak_live);
      if (ep->total < ob.bytes) {
        fprintf(stderr, "bench_planner: %s %zu: exact plan below the bound\n", set, n);
        exit(1);
      }
    }
    tg_plan_destroy(ep);
  }
  double share = total > b.peak_live ? (double)(ob.bytes - b.peak_live) / (double)(total - b.peak_live) : 1.0;
  /* With a known plan (capacity-tight: the packing that made the instance), the optimum is at
   * most its total: the part of the gap above it is the search's, whatever the bound. */
  char known_col[64] = "-";
  if (known > 0 && b.peak_live > 0)
    snprintf(known_col, sizeof known_col, "%.4f (search's: %.0f%%)", (double)known / (double)b.peak_live,
             total > known && total > b.peak_live ? 100.0 * (double)(total - known) / (double)(total - b.peak_live) : 0.0);
  (*rows)++;
  if (ob.bytes > b.peak_live) {
    (*above)++;
    *share_sum += share;
  }
  if (o->json)
    printf("%s{\"set\":\"%s\",\"records\":%zu,\"peak_live\":%" PRIu64 ",\"lower_bound\":{\"bytes\":%" PRIu64
           ",\"source\":\"%s\",\"subset_records\":%zu},\"bound_ms\":%.1f,\"plan\":%" PRIu64
           ",\"limit_ms\":%u,\"gap_closed\":%.4f,\"exact\":\"%s\",\"known_plan\":%" PRIu64 "}",
           o->rows ? ",\n" : "", set, n, b.peak_live, ob.bytes, tg_bound_source_name(ob.source),
           ob.subset_records, bound_ms, total, ms, share, exact_col, known);
  else
    printf("| %-16s | %6zu | %12" PRIu64 " | %12" PRIu64 " | %-12s | %4zu | %8.1f | %.4f | %.4f | %.4f | %5.1f%% | %s | %s |\n",
           set, n, b.peak_live, ob.bytes, tg_bound_source_name(ob.source), ob.subset_records, bound_ms,
           (double)ob.bytes / (double)b.peak_live, (double)total / (double)b.peak_live,
           (double)total / (double)ob.bytes, 100 * share, exact_col, known_col);
  o->rows++;
}

typedef struct bounds_ctx {
  out *o;
  uint32_t search_ms, exact_ms;
  int above, rows;
  double share_sum;
} bounds_ctx;

static void bounds_instance(void *ctx, const char *family, const tg_usage_record *r, size_t n) {
  bounds_ctx *c = ctx;
  uint64_t known = strcmp(family, "capacity-tight") == 0 ? CAPACITY_TIGHT_BYTES : 0;
  bounds_row(c->o, family, r, n, c->search_ms, c->exact_ms, known, &c->above, &c->rows, &c->share_sum);
}

static int run_bounds(out *o, const bench_cfg *cfg, const char *family_name, const size_t *sizes,
                      size_t size_count, const char *dir, uint32_t exact_ms) {
  int above = 0, rows = 0;
  double share_sum = 0;
  if (o->json) printf("{\"bounds\":[\n");
  else printf("| %-16s | %6s | %12s | %12s | %-12s | %4s | %8s | bound/peak | plan/peak | plan/bound | gap closed | exact / peak | known plan / peak |\n",
              "set", "n", "peak-live", "lower bound", "source", "sub", "bound ms");
  bounds_ctx bc = {o, cfg->search_ms, exact_ms, 0, 0, 0};
  if (for_each_instance(family_name, sizes, size_count, bounds_instance, &bc)) return 1;
  above = bc.above;
  rows = bc.rows;
  share_sum = bc.share_sum;
  /* The model sets (1D) of --records. */
  static const char *const k_sets[] = {"seed_004.csv", "face_detection_short_range.buffer.csv",
                                       "hand_landmark_lite.buffer.csv", "pose_landmark_lite.buffer.csv",
                                       "selfie_segmentation.buffer.csv"};
  for (size_t i = 0; i < sizeof k_sets / sizeof *k_sets && (family_name == NULL || strcmp(family_name, "models") == 0); ++i) {
    tg_record_set *set = NULL;
    if (!read_set(dir, k_sets[i], &set)) continue;
    if (set->dims == 1)
      bounds_row(o, k_sets[i], set->records, set->count, cfg->search_ms, exact_ms, 0, &above, &rows, &share_sum);
    tg_record_set_destroy(set);
  }
  if (o->json)
    printf("\n],\"instances\":%d,\"above_peak_live\":%d,\"mean_gap_closed_where_above\":%.4f}\n", rows,
           above, above ? share_sum / above : 0.0);
  else
    printf("\n%d instances (offsets); the subset-exact bound is above peak-live on %d, closing on "
           "average %.1f%% of the gap plan - peak-live there (plan: best at %u ms)\n",
           rows, above, above ? 100 * share_sum / above : 0.0, cfg->search_ms);
  return 0;
}

/* One plan of a row: its total and the call's time (ms); 0 on failure. */
static int regress_plan(const tg_usage_record *r, size_t n, const regress_row *row, uint64_t *total,
                        double *ms) {
  tg_plan_options opt;
  memset(&opt, 0, sizeof opt);
  opt.mode = row->mode;
  opt.strategy = TG_STRATEGY_BEST;
  if (row->kind == 'w') opt.work_limit = row->limit;
  else opt.time_limit_ms = row->limit;
  opt.exact = row->kind == 'e';
  tg_plan *p = NULL;
  uint64_t t = now_us();
  tg_status st = tg_plan_compute(r, n, 1, &opt, NULL, &p);
  *ms = (double)(now_us() - t) / 1000.0;
  if (st != TG_OK) {
    fprintf(stderr, "bench_planner: %s: %s\n", row->instance, tg_status_string(st));
    return 0;
  }
  *total = p->total;
  tg_plan_destroy(p);
  return 1;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* The row's plan: the median total of `reps` runs (work rows: one), the smallest and largest
 * (`lo`, `hi`; may be NULL), the fastest and slowest time. */
static int regress_measure(const tg_usage_record *r, size_t n, const regress_row *row, int reps,
                           uint64_t *total, uint64_t *lo, uint64_t *hi, double *fastest,
                           double *slowest) {
  uint64_t totals[16];
  if (row->kind == 'w' || reps < 1) reps = 1;
  if (reps > 15) reps = 15;
  *fastest = 1e30;
  *slowest = 0;
  for (int k = 0; k < reps; ++k) {
    double ms;
    if (!regress_plan(r, n, row, &totals[k], &ms)) return 0;
    if (ms < *fastest) *fastest = ms;
    if (ms > *slowest) *slowest = ms;
  }
  qsort(totals, (size_t)reps, sizeof *totals, cmp_u64);
  *total = totals[reps / 2];
  if (lo != NULL) *lo = totals[0];
  if (hi != NULL) *hi = totals[reps - 1];
  return 1;
}

/* Parse "wN" / "tN" / "eN". */
static int parse_limit(const char *s, char *kind, uint32_t *limit) {
  if ((s[0] != 'w' && s[0] != 't' && s[0] != 'e') || s[1] < '0' || s[1] > '9') return 0;
  char *end = NULL;
  unsigned long v = strtoul(s + 1, &end, 10);
  if (*end != '\0' || v == 0 || v > 100000000ul) return 0;
  *kind = s[0];
  *limit = (uint32_t)v;
  return 1;
}

/* The current instance of a run over rows (rows of one instance are consecutive). */
typedef struct regress_cache {
  char name[64];
  tg_usage_record *r;
  size_t n;
  uint64_t peak;
} regress_cache;

static int regress_load(regress_cache *c, const char *name) {
  if (c->r != NULL && strcmp(c->name, name) == 0) return 1;
  free(c->r);
  c->r = named_instance(name, &c->n);
  if (c->r == NULL) {
    fprintf(stderr, "bench_planner: unknown instance '%s'\n", name);
    return 0;
  }
  snprintf(c->name, sizeof c->name, "%s", name);
  tg_bounds b;
  c->peak = tg_bounds_compute(c->r, c->n, 1, NULL, &b) == TG_OK ? b.peak_live : 0;
  return 1;
}

/* One line of a table: 1 and `*row` (`*fields` read; `*ms` the table's time, 0 when absent), 0
 * for a comment or blank line, -1 (after a message naming path:line) when malformed. */
static int regress_parse(const char *line, const char *path, unsigned lineno, regress_row *row,
                         double *ms, int *fields) {
  if (line[0] == '#' || line[0] == '\n') return 0;
  char name[64], mode_s[16], limit_s[16];
  unsigned long long total = 0, peak_col = 0, lo = 0, hi = 0;
  *ms = 0;
  *fields = sscanf(line, "%63s %15s %15s %llu %llu %lf %llu %llu", name, mode_s, limit_s, &total, &peak_col,
                   ms, &lo, &hi);
  memset(row, 0, sizeof *row);
  if (*fields < 4) {
    fprintf(stderr, "bench_planner: %s:%u: expected instance, mode, limit, total\n", path, lineno);
    return -1;
  }
  snprintf(row->instance, sizeof row->instance, "%s", name);
  row->total = total;
  if (*fields >= 8 && lo > 0 && lo <= hi) {
    row->lo = lo;
    row->hi = hi;
  }
  if (tg_mode_from_name(mode_s, &row->mode) != TG_OK || !parse_limit(limit_s, &row->kind, &row->limit) ||
      total == 0) {
    fprintf(stderr, "bench_planner: %s:%u: bad mode or limit ('%s', '%s')\n", path, lineno, mode_s, limit_s);
    return -1;
  }
  return 1;
}

/* Measures one row with the linked library and writes it: `total` and `ms` as given (a
 * --regress-from table's) or measured (0: the median of the runs and the fastest time), and
 * the spread (lo, hi: the smallest and largest of the runs and the given total). */
static int regress_save_row(FILE *f, regress_cache *c, regress_row *row, int reps, uint64_t total,
                            double ms) {
  uint64_t median = 0, lo = 0, hi = 0;
  double fastest, slowest;
  if (!regress_measure(c->r, c->n, row, reps, &median, &lo, &hi, &fastest, &slowest)) return 0;
  if (total == 0) {
    total = median;
    ms = fastest;
  } else {
    /* The table's own plan is one of that release's runs too. */
    if (total < lo) lo = total;
    if (total > hi) hi = total;
  }
  fprintf(f, "%s\t%s\t%c%u\t%" PRIu64 "\t%" PRIu64 "\t%.1f\t%" PRIu64 "\t%" PRIu64 "\n", row->instance,
          tg_mode_name(row->mode), row->kind, (unsigned)row->limit, total, c->peak, ms, lo, hi);
  fflush(f);
  double pk = c->peak ? (double)c->peak : 1.0;
  printf("%s %s %c%u: %.4f (runs %.4f-%.4f, %.1f ms)\n", row->instance, tg_mode_name(row->mode), row->kind,
         (unsigned)row->limit, (double)total / pk, (double)lo / pk, (double)hi / pk, fastest);
  fflush(stdout);
  return 1;
}

static const char k_regress_columns[] = "# instance\tmode\tlimit\ttotal\tpeak_live\tms\tlo\thi\n";

/* --regress-save FILE --regress-from TABLE: TABLE's rows and totals, each row's spread measured. */
static int run_regress_spread(const char *path, const char *from, int reps) {
  FILE *in = fopen(from, "r");
  if (in == NULL) {
    fprintf(stderr, "bench_planner: cannot read %s\n", from);
    return 1;
  }
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    fprintf(stderr, "bench_planner: cannot write %s\n", path);
    fclose(in);
    return 1;
  }
  regress_cache c;
  memset(&c, 0, sizeof c);
  char line[512];
  int status = 0, header = 0;
  for (unsigned lineno = 1; status == 0 && fgets(line, sizeof line, in) != NULL; ++lineno) {
    regress_row row;
    double ms;
    int fields, k = regress_parse(line, from, lineno, &row, &ms, &fields);
    if (k == 0) {
      /* The table's own comments stay; its column line becomes this one. */
      if (strncmp(line, "# instance", 10) != 0) fputs(line, f);
      continue;
    }
    if (!header) {
      fprintf(f, "# lo, hi: the smallest and largest plan of the row's total and %d run(s) of it with "
                 "the library these totals came from (its run-to-run spread)\n%s",
              row.kind == 'w' ? 1 : reps, k_regress_columns);
      header = 1;
    }
    if (k < 0 || !regress_load(&c, row.instance) || !regress_save_row(f, &c, &row, reps, row.total, ms))
      status = k < 0 ? 2 : 1;
  }
  free(c.r);
  fclose(f);
  fclose(in);
  return status;
}

static int run_regress_save(const char *path, const char *set, const char *from, int reps) {
  if (from != NULL) return run_regress_spread(path, from, reps);
  const int ci = strcmp(set, "ci") == 0;
  if (!ci && strcmp(set, "full") != 0) {
    fprintf(stderr, "bench_planner: --regress-set takes ci or full\n");
    return 2;
  }
  FILE *f = fopen(path, "w");
  if (f == NULL) {
    fprintf(stderr, "bench_planner: cannot write %s\n", path);
    return 1;
  }
  fprintf(f, "# bench_planner --regress table (%s set, %d run(s) a time row, the median plan; lo, hi: "
             "the smallest and largest)\n%s", set, ci ? 1 : reps, k_regress_columns);
  const regress_case *cases = ci ? k_regress_ci : k_regress_full;
  size_t ncases = ci ? sizeof k_regress_ci / sizeof *k_regress_ci : sizeof k_regress_full / sizeof *k_regress_full;
  regress_cache c;
  memset(&c, 0, sizeof c);
  int status = 0;
  for (size_t i = 0; i < ncases && status == 0; ++i) {
    if (!regress_load(&c, cases[i].instance)) {
      status = 1;
      break;
    }
    const int tight = strncmp(cases[i].instance, "capacity-tight/", 15) == 0;
    const int big_trace = strcmp(cases[i].instance, "compiler-trace/60000") == 0;
    size_t nl = ci ? sizeof k_regress_ci_work / sizeof *k_regress_ci_work
                   : sizeof k_regress_full_ms / sizeof *k_regress_full_ms;
    size_t ne = !ci && cases[i].mode == TG_MODE_OFFSETS && (tight || big_trace)
                    ? sizeof k_regress_exact_ms / sizeof *k_regress_exact_ms : 0;
    for (size_t l = 0; l < nl + ne && status == 0; ++l) {
      regress_row row;
      memset(&row, 0, sizeof row);
      snprintf(row.instance, sizeof row.instance, "%s", cases[i].instance);
      row.mode = cases[i].mode;
      row.kind = ci ? 'w' : l < nl ? 't' : 'e';
      row.limit = ci ? k_regress_ci_work[l] : l < nl ? k_regress_full_ms[l] : k_regress_exact_ms[l - nl];
      if (!regress_save_row(f, &c, &row, reps, 0, 0)) status = 1;
    }
  }
  free(c.r);
  fclose(f);
  return status;
}

static int run_regress(out *o, const char *path, int reps, limit_stats *limits) {
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    fprintf(stderr, "bench_planner: cannot read %s\n", path);
    return 1;
  }
  regress_cache c;
  memset(&c, 0, sizeof c);
  char line[512];
  int rows = 0, worse = 0, noise = 0, better = 0, status = 0, overran = 0;
  double worst = 0, sum_log = 0;
  char worst_row[160] = "-";
  if (o->markdown)
    printf("| instance | records | mode | limit | peak-live | table / peak | table's runs / table | plan / peak "
           "| plan / table | ms |\n|---|---:|---|---|---:|---:|---:|---:|---:|---:|\n");
  else if (!o->json)
    printf("| %-24s | %6s | %-7s | %-6s | %12s | %8s | %-15s | %8s | %9s | %8s |\n", "instance", "n", "mode",
           "limit", "peak-live", "table", "table's runs", "plan", "ratio", "ms");
  if (o->json) printf("{\"regress\":[\n");
  for (unsigned lineno = 1; fgets(line, sizeof line, f) != NULL; ++lineno) {
    regress_row row;
    double table_ms;
    int fields, k = regress_parse(line, path, lineno, &row, &table_ms, &fields);
    if (k == 0) continue;
    if (k < 0 || !regress_load(&c, row.instance)) {
      status = 2;
      break;
    }
    const char *mode_s = tg_mode_name(row.mode);
    char limit_s[16];
    snprintf(limit_s, sizeof limit_s, "%c%u", row.kind, (unsigned)row.limit);
    uint64_t plan = 0;
    double fastest, slowest;
    if (!regress_measure(c.r, c.n, &row, reps, &plan, NULL, NULL, &fastest, &slowest)) {
      status = 1;
      break;
    }
    if (row.kind != 'w') limit_check(limits, row.instance, c.n, mode_s, row.limit, fastest);
    double ratio = (double)plan / (double)row.total;
    /* A table row whose call overran its limit (the previous exact mode did, by seconds) is
     * no plan at that limit: not compared. */
    const int table_over = row.kind != 'w' && fields >= 6 && table_ms > row.limit + row.limit / 10.0 + 20.0;
    /* More than 0.5% worse: a regression unless the saved release's own runs of the row went
     * at least as high (a work row has no spread: the same plan every run). */
    const int beyond = ratio > 1.005 && !table_over;
    const int spread = row.kind != 'w' && row.hi > 0;
    const int within = beyond && spread && plan <= row.hi;
    const int bad = beyond && !within;
    overran += table_over;
    ++rows;
    worse += bad;
    noise += within;
    better += plan < row.total;
    sum_log += log(ratio);
    if (ratio > worst) {
      worst = ratio;
      snprintf(worst_row, sizeof worst_row, "%s %s %s", row.instance, mode_s, limit_s);
    }
    double pk = c.peak ? (double)c.peak : 1.0, tot = (double)row.total;
    char runs[48] = "-";
    if (spread) snprintf(runs, sizeof runs, "%.4f-%.4f", (double)row.lo / tot, (double)row.hi / tot);
    const char *mark = bad ? "!" : within ? "~" : table_over ? "*" : " ";
    if (o->json)
      printf("%s{\"instance\":\"%s\",\"records\":%zu,\"mode\":\"%s\",\"limit\":\"%s\",\"peak_live\":%" PRIu64
             ",\"table\":%" PRIu64 ",\"table_lo\":%" PRIu64 ",\"table_hi\":%" PRIu64 ",\"plan\":%" PRIu64
             ",\"ratio\":%.4f,\"ms\":%.1f,\"compared\":%s,\"beyond_half_percent\":%s,\"beyond_spread\":%s}",
             rows > 1 ? ",\n" : "", row.instance, c.n, mode_s, limit_s, c.peak, row.total, row.lo, row.hi, plan,
             ratio, fastest, table_over ? "false" : "true", beyond ? "true" : "false", bad ? "true" : "false");
    else if (o->markdown)
      printf("| %s | %zu | %s | %s | %" PRIu64 " | %.4f | %s | %.4f | %.4f%s | %.1f |\n", row.instance, c.n, mode_s,
             limit_s, c.peak, tot / pk, runs, (double)plan / pk, ratio,
             bad ? " !" : within ? " ~" : table_over ? " (table over its limit)" : "", fastest);
    else
      printf("| %-24s | %6zu | %-7s | %-6s | %12" PRIu64 " | %8.4f | %-15s | %8.4f | %8.4f%s | %8.1f |\n",
             row.instance, c.n, mode_s, limit_s, c.peak, tot / pk, runs, (double)plan / pk, ratio, mark, fastest);
    fflush(stdout);
  }
  fclose(f);
  free(c.r);
  if (o->json)
    printf("\n],\"rows\":%d,\"worse\":%d,\"within_spread\":%d,\"better\":%d,\"not_compared\":%d,\"worst\":%.4f,"
           "\"geomean\":%.4f,\"limit_violations\":%d}\n", rows, worse, noise, better, overran, worst,
           rows ? exp(sum_log / rows) : 1.0, limits->violations);
  else
    printf("\n%s%d rows against %s: %d more than 0.5%% worse, of which %d beyond the table's own "
           "run-to-run spread (!: regressions) and %d within it (~: the saved release's runs went as "
           "high); worst %.4f (%s); %d better; %d not compared (*: the table's call overran its "
           "limit); geometric mean plan / table %.4f; time limits exceeded: %d of %d\n",
           o->markdown ? "- " : "", rows, path, worse + noise, worse, noise, worst, worst_row, better, overran,
           rows ? exp(sum_log / rows) : 1.0, limits->violations, limits->rows);
  if (status != 0) return status;
  return worse == 0 && limits->violations == 0 && rows > 0 ? 0 : 1;
}

/* A comma-separated list of up to `max` decimal numbers in [lo, hi] into out[], its length in
 * *count; 0 (and a message naming `flag`) when `arg` is not one. */
static int parse_list(const char *flag, const char *arg, uint64_t lo, uint64_t hi, uint64_t *out, size_t max,
                      size_t *count) {
  const char *p = arg;
  *count = 0;
  while (*p != '\0') {
    char *e = NULL;
    unsigned long long v = strtoull(p, &e, 10);
    if (e == p || v < lo || v > hi || *count == max || (*e != ',' && *e != '\0')) {
      fprintf(stderr, "bench_planner: %s: up to %zu numbers (%" PRIu64 "-%" PRIu64 "), comma-separated: '%s'\n",
              flag, max, lo, hi, arg);
      return 0;
    }
    out[(*count)++] = v;
    p = *e == ',' ? e + 1 : e;
  }
  if (*count == 0) fprintf(stderr, "bench_planner: %s: an empty list\n", flag);
  return *count > 0;
}

int main(int argc, char **argv) {
  out o = {0, 0, 0};
  limit_stats limits;
  memset(&limits, 0, sizeof limits);
  bench_cfg cfg = {100, 0, 2000, -1, NULL, 0, 0, NULL, &limits, {0}, SWEEP_LIMITS, 0, 0};
  for (int k = 0; k < SWEEP_LIMITS; ++k) cfg.sweep_ms[k] = 25u << k;
  size_t sizes_given = 0;
  int use_arena = 1;
  int quick = 0, perfect_only = 0, models_only = 0, exact_sets = 0, perfect_seeds = 1, sweep = 0;
  const char *family_name = NULL, *regress = NULL, *regress_save = NULL, *regress_set = "full";
  const char *regress_from = NULL;
  size_t sizes[8] = {1000, 10000, 100000};
  size_t size_count = 3;
#ifdef TG_SOURCE_DIR
  const char *dir = TG_SOURCE_DIR "/tests/data/records";
#else
  const char *dir = "tests/data/records";
#endif
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--json") == 0) {
      o.json = 1;
      o.markdown = 0;
    } else if (strcmp(argv[i], "--markdown") == 0) {
      o.markdown = 1;
      o.json = 0;
    }
    else if (strcmp(argv[i], "--quick") == 0) quick = 1;
    else if (strcmp(argv[i], "--records") == 0 && i + 1 < argc) dir = argv[++i];
    else if (strcmp(argv[i], "--search-ms") == 0 && i + 1 < argc) cfg.search_ms = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--exact-ms") == 0 && i + 1 < argc) cfg.exact_ms = (uint32_t)strtoul(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--family") == 0 && i + 1 < argc) family_name = argv[++i];
    else if (strcmp(argv[i], "--perfect-only") == 0) perfect_only = 1;
    else if (strcmp(argv[i], "--time-sweep") == 0) sweep = 1;
    else if (strcmp(argv[i], "--bounds") == 0) sweep = 2;
    else if (strcmp(argv[i], "--regress") == 0 && i + 1 < argc) regress = argv[++i];
    else if (strcmp(argv[i], "--regress-save") == 0 && i + 1 < argc) regress_save = argv[++i];
    else if (strcmp(argv[i], "--regress-set") == 0 && i + 1 < argc) regress_set = argv[++i];
    else if (strcmp(argv[i], "--regress-from") == 0 && i + 1 < argc) regress_from = argv[++i];
    else if (strcmp(argv[i], "--models-only") == 0) models_only = 1;
    else if (strcmp(argv[i], "--exact-sets") == 0) exact_sets = 1;
    else if (strcmp(argv[i], "--perfect-seeds") == 0 && i + 1 < argc) {
      perfect_seeds = atoi(argv[++i]);
      if (perfect_seeds < 1 || perfect_seeds > 1000) {
        fprintf(stderr, "bench_planner: --perfect-seeds takes 1 to 1000\n");
        return 2;
      }
    }
    else if (strcmp(argv[i], "--strategy") == 0 && i + 1 < argc) cfg.strategy = argv[++i];
    else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) cfg.reps = atoi(argv[++i]);
    else if (strcmp(argv[i], "--hill-climb-max") == 0 && i + 1 < argc)
      cfg.hill_max = (size_t)strtoull(argv[++i], NULL, 10);
    else if (strcmp(argv[i], "--alloc") == 0 && i + 1 < argc) {
      ++i;
      if (strcmp(argv[i], "arena") == 0) use_arena = 1;
      else if (strcmp(argv[i], "malloc") == 0) use_arena = 0;
      else {
        fprintf(stderr, "bench_planner: unknown allocator '%s' (arena, malloc)\n", argv[i]);
        return 2;
      }
    }
    else if (strcmp(argv[i], "--mode") == 0 && i + 1 < argc) {
      tg_mode m;
      if (tg_mode_from_name(argv[++i], &m) != TG_OK) {
        fprintf(stderr, "bench_planner: unknown mode '%s' (objects, offsets)\n", argv[i]);
        return 2;
      }
      cfg.mode = (int)m;
    }
    else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
      char *e = NULL;
      cfg.sweep_seed = strtoull(argv[++i], &e, 10);
      if (e == argv[i] || *e != '\0') {
        fprintf(stderr, "bench_planner: --seed: a decimal number: '%s'\n", argv[i]);
        return 2;
      }
    }
    else if (strcmp(argv[i], "--limits") == 0 && i + 1 < argc) {
      uint64_t v[SWEEP_MAX];
      size_t count;
      if (!parse_list("--limits", argv[++i], 1, 600000, v, SWEEP_MAX, &count)) return 2;
      cfg.sweep_count = (int)count;
      for (size_t k = 0; k < count; ++k) cfg.sweep_ms[k] = (uint32_t)v[k];
    }
    else if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
      uint64_t v[sizeof sizes / sizeof *sizes];
      if (!parse_list("--sizes", argv[++i], 1, 100000000, v, sizeof v / sizeof *v, &size_count)) return 2;
      sizes_given = 1;
      for (size_t k = 0; k < size_count; ++k) sizes[k] = (size_t)v[k];
    } else {
      fprintf(stderr, "usage: bench_planner [--json | --markdown] [--quick] [--records DIR] [--search-ms N] "
                      "[--exact-ms N] [--family NAME] [--perfect-only] [--models-only] [--sizes N,N,...] "
                      "[--mode objects|offsets] [--strategy NAME] [--reps N] [--alloc arena|malloc] "
                      "[--exact-sets] [--perfect-seeds K] [--hill-climb-max N] [--time-sweep [--limits MS,MS,...] [--seed N]] [--bounds] "
                      "[--regress FILE] [--regress-save FILE [--regress-set ci|full | --regress-from TABLE]]\n");
      return 2;
    }
  }
  if (family_name != NULL) {
    int known = 0;
    for (size_t f = 0; f < sizeof k_families / sizeof *k_families; ++f)
      known |= strcmp(family_name, k_families[f].name) == 0;
    known |= strcmp(family_name, "compiler-trace") == 0 || (sweep == 2 && strcmp(family_name, "models") == 0);
    known |= sweep != 0 && strcmp(family_name, "capacity-tight") == 0;
    if (!known) {
      fprintf(stderr, "bench_planner: unknown family '%s' (chain, wide-dag, transformer, "
                      "perfect-packing, minimalloc, compiler-trace; capacity-tight with --time-sweep "
                      "and --bounds)\n", family_name);
      return 2;
    }
  }
  if (cfg.strategy != NULL && strcmp(cfg.strategy, "best+search") != 0) {
    tg_strategy s;
    if (tg_strategy_from_name(cfg.strategy, &s) != TG_OK) {
      fprintf(stderr, "bench_planner: unknown strategy '%s'\n", cfg.strategy);
      return 2;
    }
  }
  /* The arena reserves address space; only the pages a run touches are ever mapped. */
  arena ar = {NULL, (size_t)1 << 32, 0};
  if (use_arena) {
    while (ar.base == NULL && ar.cap >= ((size_t)1 << 26))
      if ((ar.base = malloc(ar.cap)) == NULL) ar.cap /= 2;
    if (ar.base == NULL) {
      fprintf(stderr, "bench_planner: cannot reserve the arena; use --alloc malloc\n");
      return 1;
    }
    cfg.arena = &ar;
  }
  if (regress_save != NULL) {
    free(ar.base);
    return run_regress_save(regress_save, regress_set, regress_from, cfg.reps > 0 ? cfg.reps : 3);
  }
  if (regress != NULL) {
    free(ar.base);
    return run_regress(&o, regress, cfg.reps > 0 ? cfg.reps : 1, &limits);
  }
  if (sweep == 2) return run_bounds(&o, &cfg, family_name, sizes_given ? sizes : NULL, size_count, dir,
                                    exact_sets ? cfg.exact_ms : 0);
  for (int k = 0; k < cfg.sweep_count; ++k)
    if (cfg.sweep_ms[k] == 100) cfg.sweep_at100 = k;
  if (sweep) return run_time_sweep(&o, &cfg, family_name, sizes_given ? sizes : NULL, size_count);
  if (o.json) printf("{\"alloc\":\"%s\",\"rows\":[\n", use_arena ? "arena" : "malloc");
  else if (o.markdown) {
    printf("allocator: %s\n\n", use_arena ? "arena (one bump arena, reset between runs)" : "malloc");
    printf("| %-28s | %7s | %-7s | %-24s | %-10s | %9s | %7s | %8s | %s |\n", "set", "records", "mode",
           "strategy", "origin", "ms", "ratio", "vs qsort", "note");
    printf("|------------------------------|--------:|---------|--------------------------|------------|----------:|--------:|---------:|------|\n");
  } else {
    printf("allocator: %s\n\n", use_arena ? "arena (one bump arena, reset between runs)" : "malloc");
    printf("| %-28s | %7s | %-7s | %-24s | %-10s | %9s | %7s | %8s |\n", "set", "records", "mode",
           "strategy", "origin", "ms", "ratio", "vs qsort");
    printf("|------------------------------|---------|---------|--------------------------|------------|-----------|---------|----------|\n");
  }
  /* Synthetic families at three scales. */
  for (size_t s = 0; s < size_count && !perfect_only && !models_only; ++s) {
    if (quick && sizes[s] > 10000) continue;
    for (size_t f = 0; f < sizeof k_families / sizeof *k_families; ++f) {
      if (family_name != NULL && strcmp(family_name, k_families[f].name) != 0) continue;
      size_t n = sizes[s];
      tg_usage_record *r = malloc(n * sizeof *r);
      if (r == NULL) return 1;
      /* Seeded by size, so --sizes reproduces the default runs' instances. */
      uint64_t key = n == 1000 ? 0 : n == 10000 ? 1 : n == 100000 ? 2 : n;
      rng g = {0x5EED0000u + f * 131 + key};
      k_families[f].gen(&g, r, n);
      run_set(&o, &cfg, k_families[f].name, r, n, 1, 1, 1, NULL, NULL);
      int unused = 0;
      if (exact_sets && n <= TG_EXACT_MAX_SERIAL_RECORDS && cfg.mode != (int)TG_MODE_OBJECTS)
        run_exact(&o, &cfg, k_families[f].name, r, n, &unused);
      free(r);
    }
  }
  /* Compiler traces, 30k and 60k records (or --sizes), with a second search row of 1 s. */
  if (!perfect_only && !models_only && !quick &&
      (family_name == NULL || strcmp(family_name, "compiler-trace") == 0)) {
    static const size_t trace_sizes[] = {30000, 60000};
    size_t count = sizes_given ? size_count : 2;
    for (size_t s = 0; s < count; ++s) {
      size_t n = sizes_given ? sizes[s] : trace_sizes[s];
      tg_usage_record *r = malloc((n ? n : 1) * sizeof *r);
      if (r == NULL) return 1;
      rng g = {0xC0DE0000u + n};
      gen_compiler(&g, r, n);
      bench_cfg tc = cfg;
      tc.long_ms = 1000;
      run_set(&o, &tc, "compiler-trace", r, n, 1, 1, 1, NULL, NULL);
      free(r);
    }
  }
  /* Perfect packing, 200-500 records: greedy, greedy + search, exact. */
  int proved = 0, instances = 0, within2 = 0;
  double search_sum = 0, search_worst = 0;
  int run_perfect = !models_only && (family_name == NULL || strcmp(family_name, "perfect-packing") == 0);
  for (size_t n = 200; n <= 500 && run_perfect; n += 50) {
    for (int seed = 0; seed < perfect_seeds; ++seed) {
      tg_usage_record *r = malloc(n * sizeof *r);
      if (r == NULL) return 1;
      rng g = {0xBEEF00u + n + (uint64_t)seed * 1000003u};
      gen_perfect(&g, r, n);
      double m = 0;
      if (perfect_only) run_perfect_instance(&o, &cfg, r, n, &m);
      else run_set(&o, &cfg, "perfect-packing", r, n, 1, 1, 0, &m, NULL);
      search_sum += m;
      within2 += m > 0 && m <= 1.02; /* m = 0: no search row (--strategy) */
      if (m > search_worst) search_worst = m;
      run_exact(&o, &cfg, "perfect-packing", r, n, &proved);
      ++instances;
      free(r);
    }
  }
  /* The public models: buffers, and textures both as objects and in arena form (bytes =
   * texels * 16: four fp32 channels). */
  static const char *const models[] = {"face_detection_short_range", "hand_landmark_lite",
                                       "pose_landmark_lite", "selfie_segmentation"};
  static const char *const kinds[] = {"buffer", "tex2", "tex3"};
  double obj_sum = 0, off_sum = 0;
  int obj_n = 0, off_n = 0;
  double ceil_sum[2] = {0, 0}, got_sum[2] = {0, 0};
  int ceil_n[2] = {0, 0};
  for (size_t m = 0; m < 4 && family_name == NULL && !perfect_only; ++m) {
    for (size_t k = 0; k < 3; ++k) {
      char file[256], set_name[96];
      snprintf(file, sizeof file, "%s.%s.csv", models[m], kinds[k]);
      tg_record_set *set = NULL;
      if (!read_set(dir, file, &set)) continue;
      snprintf(set_name, sizeof set_name, "%.20s.%s", models[m], kinds[k]);
      double mo = 0, mf = 0;
      if (k == 0) {
        run_set(&o, &cfg, set_name, set->records, set->count, 1, 1, 1, &mf, &mo);
        off_sum += mf;
        ++off_n;
      } else {
        run_set(&o, &cfg, set_name, set->records, set->count, set->dims, 0, 1, NULL, &mo);
        tg_usage_record *a = malloc((set->count ? set->count : 1) * sizeof *a);
        if (a == NULL) return 1;
        for (size_t i = 0; i < set->count; ++i) {
          uint64_t v = 0;
          if (tg_extent_volume(set->records[i].size, &v) != TG_OK) v = 0;
          a[i] = rec1(v * 16, set->records[i].first_task, set->records[i].last_task);
        }
        char arena[112];
        snprintf(arena, sizeof arena, "%s.arena", set_name);
        run_set(&o, &cfg, arena, a, set->count, 1, 1, 0, &mf, NULL);
        off_sum += mf;
        ++off_n;
        free(a);
        double most = 0, got = 0;
        if (texture_ceiling(&o, &cfg, set_name, set, k_tflite_best[k - 1][m], &most, &got)) {
          ceil_sum[k - 1] += most;
          got_sum[k - 1] += got;
          ceil_n[k - 1]++;
        }
      }
      obj_sum += mo;
      ++obj_n;
      tg_record_set_destroy(set);
    }
  }
  if (o.json) {
    printf("\n],\"summary\":{\"time_limit_rows\":%d,\"time_limit_violations\":%d,"
           "\"perfect_packing_instances\":%d,\"perfect_packing_exact_at_bound\":%d,"
           "\"perfect_packing_search_within_2pct\":%d,\"perfect_packing_search_worst_ratio\":%.4f,"
           "\"perfect_packing_search_mean_ratio\":%.4f,\"models_objects_search_mean_ratio\":%.4f,"
           "\"models_offsets_search_mean_ratio\":%.4f,\"tex2_saving_vs_tflite\":%.4f,"
           "\"tex2_most_any_plan_saves\":%.4f,\"tex3_saving_vs_tflite\":%.4f,"
           "\"tex3_most_any_plan_saves\":%.4f}}\n",
           limits.rows, limits.violations, instances, proved, within2, search_worst, instances ? search_sum / instances : 0,
           obj_n ? obj_sum / obj_n : 0,
           off_n ? off_sum / off_n : 0, ceil_n[0] ? got_sum[0] / ceil_n[0] : 0,
           ceil_n[0] ? ceil_sum[0] / ceil_n[0] : 0, ceil_n[1] ? got_sum[1] / ceil_n[1] : 0,
           ceil_n[1] ? ceil_sum[1] / ceil_n[1] : 0);
  } else {
    /* --markdown: the summary is a list, parted from the table by a blank line. */
    const char *li = o.markdown ? "- " : "";
    int gap = o.markdown;
    if (instances > 0) {
      printf("\n%sperfect packing 200-500: %d instances, exact at the bound (proved) on %d; "
             "best+search mean ratio %.4f, within 2%% on %d, worst %.4f\n",
             li, instances, proved, search_sum / instances, within2, search_worst);
      gap = 0;
    }
    if (obj_n + off_n > 0) {
      printf("%s%spublic models: best+search mean ratio objects %.4f (%d sets), offsets %.4f (%d sets)\n",
             gap ? "\n" : "", li, obj_n ? obj_sum / obj_n : 0, obj_n, off_n ? off_sum / off_n : 0,
             off_n);
      gap = 0;
    }
    for (int d = 0; d < 2; ++d)
      if (ceil_n[d] > 0) {
        printf("%s%stextures %dD, objects: best+search saves %.1f%% of TFLite's best on average over "
               "%d models; no plan can save more than %.1f%% (lower bounds)\n",
               gap ? "\n" : "", li, d + 2, 100 * got_sum[d] / ceil_n[d], ceil_n[d],
               100 * ceil_sum[d] / ceil_n[d]);
        gap = 0;
      }
  }
  /* The time-limit check: every search row within limit + 10% + 20 ms. */
  if (o.json) {
    /* (after the JSON document: a line of its own on stderr) */
    fprintf(stderr, "time limits: %d search rows, %d over limit + 10%% + 20 ms; slowest: %s\n",
            limits.rows, limits.violations, limits.rows ? limits.worst : "-");
  } else {
    printf("%stime limits: %d search rows, %d over limit + 10%% + 20 ms; slowest: %s\n",
           o.markdown ? "- " : "\n", limits.rows, limits.violations,
           limits.rows ? limits.worst : "-");
  }
  free(ar.base);
  return limits.violations ? 1 : 0;
}
