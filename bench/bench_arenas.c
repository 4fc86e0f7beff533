/* Offsets plans under an allocation cap, side by side:
 *   ggml      ggml's chunked dynamic allocator (ggml_dyn_tallocr since 2025): tensors allocated
 *             in task order, freed after their last task; best fit among the free blocks of
 *             every chunk, else the end of the chunk with the most room left, else a new chunk;
 *             a chunk grows up to the cap
 *   cut+move  Tangram's uncapped plan cut at multiples of the cap; records that straddle a
 *             cut moved, largest first, to the lowest place that fits in the first arena that
 *             has one (a new arena when none)
 *   Tangram   tg_plan_compute with max_allocation (strategy best)
 * Totals and arena counts at caps of 256, 128 and 64 MiB on PP-OCRv4's detector (buffer
 * records, fp32, at 1x3x2048x2048 and 1x3x1536x1536; skipped when the model is not cached) and
 * on large generated traces (100k records; caps of a half, a quarter and an eighth of their
 * peak, as their peaks are below 256 MiB). Every Tangram plan is validated.
 *
 * usage: bench_arenas [--markdown] [--time-limit MS]  (default 200 ms for `best`) */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_rng.h"
#include "tangram/graph.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/planner.h"

#define MIB (1024.0 * 1024.0)

typedef struct result {
  uint64_t total;
  size_t arenas;
} result;

/* ---- ggml's chunked allocator ---------------------------------------------------------- */

typedef struct fblock {
  uint64_t off, size;
} fblock;

typedef struct chunk {
  fblock *free; /* sorted by offset; the last one is the tail, reaching the cap */
  size_t n, capn;
  uint64_t high; /* high-water mark: the chunk's size */
} chunk;

static void chunk_insert(chunk *c, size_t at, fblock b) {
  if (c->n == c->capn) {
    c->capn = c->capn ? 2 * c->capn : 16;
    c->free = realloc(c->free, c->capn * sizeof *c->free);
    if (c->free == NULL) abort();
  }
  memmove(c->free + at + 1, c->free + at, (c->n - at) * sizeof *c->free);
  c->free[at] = b;
  c->n++;
}

static void chunk_remove(chunk *c, size_t at) {
  memmove(c->free + at, c->free + at + 1, (c->n - at - 1) * sizeof *c->free);
  c->n--;
}

static void chunk_free(chunk *c, uint64_t off, uint64_t size) {
  size_t i = 0;
  while (i < c->n && c->free[i].off < off) ++i;
  chunk_insert(c, i, (fblock){off, size});
  if (i + 1 < c->n && c->free[i].off + c->free[i].size == c->free[i + 1].off) {
    c->free[i].size += c->free[i + 1].size;
    chunk_remove(c, i + 1);
  }
  if (i > 0 && c->free[i - 1].off + c->free[i - 1].size == c->free[i].off) {
    c->free[i - 1].size += c->free[i].size;
    chunk_remove(c, i);
  }
}

typedef struct ev {
  uint64_t key;
  size_t r;
} ev;

static int ev_cmp(const void *pa, const void *pb) {
  const ev *a = pa, *b = pb;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  return a->r < b->r ? -1 : a->r > b->r;
}

static result run_ggml(const tg_usage_record *rec, size_t n, uint64_t cap) {
  chunk *ch = NULL;
  size_t nch = 0;
  uint32_t *chunk_of = calloc(n ? n : 1, sizeof *chunk_of);
  uint64_t *off = calloc(n ? n : 1, sizeof *off);
  ev *e = calloc(2 * n + 1, sizeof *e);
  if (!chunk_of || !off || !e) abort();
  /* At task t: free what died before t, then allocate what is born at t. */
  for (size_t r = 0; r < n; ++r) {
    e[2 * r] = (ev){(uint64_t)rec[r].first_task * 2 + 1, r};
    e[2 * r + 1] = (ev){((uint64_t)rec[r].last_task + 1) * 2, r};
  }
  qsort(e, 2 * n, sizeof *e, ev_cmp);
  for (size_t i = 0; i < 2 * n; ++i) {
    size_t r = e[i].r;
    uint64_t size = rec[r].size.w;
    if (size == 0) continue;
    if (e[i].key % 2 == 0) {
      chunk_free(&ch[chunk_of[r]], off[r], size);
      continue;
    }
    /* Best fit among the free blocks of every chunk but their tails. */
    size_t bc = SIZE_MAX, bb = 0;
    uint64_t best = UINT64_MAX;
    for (size_t c = 0; c < nch; ++c)
      for (size_t b = 0; b + 1 < ch[c].n; ++b)
        if (ch[c].free[b].size >= size && ch[c].free[b].size < best) best = ch[c].free[b].size, bc = c, bb = b;
    if (bc == SIZE_MAX) {
      /* The tail of the chunk with the most room left. */
      for (size_t c = 0; c < nch; ++c) {
        const fblock *t = &ch[c].free[ch[c].n - 1];
        if (t->size >= size && (bc == SIZE_MAX || t->size > ch[bc].free[ch[bc].n - 1].size)) bc = c;
      }
      if (bc != SIZE_MAX) bb = ch[bc].n - 1;
    }
    if (bc == SIZE_MAX) {
      ch = realloc(ch, (nch + 1) * sizeof *ch);
      if (ch == NULL) abort();
      memset(&ch[nch], 0, sizeof *ch);
      chunk_insert(&ch[nch], 0, (fblock){0, cap});
      bc = nch++;
      bb = 0;
    }
    chunk *c = &ch[bc];
    off[r] = c->free[bb].off;
    chunk_of[r] = (uint32_t)bc;
    c->free[bb].off += size;
    c->free[bb].size -= size;
    if (c->free[bb].size == 0 && bb + 1 < c->n) chunk_remove(c, bb);
    if (off[r] + size > c->high) c->high = off[r] + size;
  }
  result res = {0, nch};
  for (size_t c = 0; c < nch; ++c) {
    res.total += ch[c].high;
    free(ch[c].free);
  }
  free(ch);
  free(chunk_of);
  free(off);
  free(e);
  return res;
}

/* ---- cut at the cap, move what straddles ------------------------------------------------- */

static int meets(const tg_usage_record *a, const tg_usage_record *b) {
  return a->first_task <= b->last_task && b->first_task <= a->last_task;
}

static int key_cmp_desc(const void *pa, const void *pb) {
  const ev *a = pa, *b = pb;
  if (a->key != b->key) return a->key > b->key ? -1 : 1;
  return a->r < b->r ? -1 : a->r > b->r;
}

static result run_cut_move(const tg_usage_record *rec, size_t n, const tg_plan *p, uint64_t cap) {
  size_t na = (size_t)((p->total + cap - 1) / cap);
  uint32_t *arena = calloc(n ? n : 1, sizeof *arena);
  uint64_t *off = calloc(n ? n : 1, sizeof *off);
  ev *moved = calloc(n ? n : 1, sizeof *moved);
  ev *scratch = calloc(n ? n : 1, sizeof *scratch);
  size_t cap_arenas = na + 16;
  uint64_t *size = calloc(cap_arenas, sizeof *size);
  if (!arena || !off || !moved || !scratch || !size) abort();
  size_t nm = 0;
  for (size_t r = 0; r < n; ++r) {
    uint64_t k = p->offset_of[r] / cap, w = rec[r].size.w;
    if (w == 0) continue;
    if (p->offset_of[r] + w <= (k + 1) * cap) {
      arena[r] = (uint32_t)k;
      off[r] = p->offset_of[r] - k * cap;
      if (off[r] + w > size[k]) size[k] = off[r] + w;
    } else {
      moved[nm++] = (ev){w, r};
      arena[r] = UINT32_MAX;
    }
  }
  qsort(moved, nm, sizeof *moved, key_cmp_desc);
  for (size_t i = 0; i < nm; ++i) {
    size_t r = moved[i].r;
    uint64_t w = rec[r].size.w;
    size_t k = 0;
    uint64_t at = 0;
    for (; k < na; ++k) {
      /* The lowest place in arena k clear of the records it meets. */
      size_t m = 0;
      for (size_t q = 0; q < n; ++q)
        if (arena[q] == k && rec[q].size.w && meets(&rec[q], &rec[r])) scratch[m++] = (ev){off[q], q};
      qsort(scratch, m, sizeof *scratch, ev_cmp);
      at = 0;
      size_t j = 0;
      for (; j < m && at + w > scratch[j].key; ++j) {
        uint64_t end = scratch[j].key + rec[scratch[j].r].size.w;
        if (end > at) at = end;
      }
      if (at + w <= cap) break;
    }
    if (k == na) {
      if (na == cap_arenas) {
        cap_arenas *= 2;
        size = realloc(size, cap_arenas * sizeof *size);
        if (size == NULL) abort();
      }
      size[na++] = 0;
      at = 0;
    }
    arena[r] = (uint32_t)k;
    off[r] = at;
    if (at + w > size[k]) size[k] = at + w;
  }
  result res = {0, 0};
  for (size_t k = 0; k < na; ++k)
    if (size[k] > 0) res.total += size[k], res.arenas++;
  free(arena);
  free(off);
  free(moved);
  free(scratch);
  free(size);
  return res;
}

/* ---- inputs --------------------------------------------------------------------------------- */

static tg_usage_record rec1(uint64_t size, uint64_t first, uint64_t last) {
  tg_usage_record r = {
      .size = (tg_extent){size, 1, 1}, .first_task = (uint32_t)first, .last_task = (uint32_t)last
  };
  return r;
}

static uint64_t rr(uint64_t *s, uint64_t lo, uint64_t hi) { return lo + rng_next(s) % (hi - lo + 1); }

/* Wide DAGs (bench_planner's wide-dag): about 100 tensors live at any task. */
static void gen_wide(uint64_t *s, tg_usage_record *r, size_t n) {
  uint64_t tasks = n / 10 + 1;
  for (size_t i = 0; i < n; ++i) {
    uint64_t f = rr(s, 0, tasks);
    uint64_t len = rr(s, 1, 20);
    uint64_t size = rr(s, 1, 4096) * 256;
    r[i] = rec1(size, f, f + len);
  }
}

/* Transformer-like (bench_planner's transformer): residual streams, K/V caches, activations. */
static void gen_transformer(uint64_t *s, tg_usage_record *r, size_t n) {
  size_t i = 0;
  uint64_t hidden = 768 * 4 * 128;
  for (uint64_t blk = 0; i < n; ++blk) {
    uint64_t t0 = blk * 16;
    if (i < n) r[i++] = rec1(hidden, t0, t0 + 20);
    if (i < n) r[i++] = rec1(hidden / 2, t0 + 2, t0 + 16 * 8);
    for (int k = 0; k < 18 && i < n; ++k) {
      uint64_t f = t0 + rr(s, 0, 15);
      uint64_t size = k < 3 ? hidden * rr(s, 1, 12) / 4 : hidden * rr(s, 1, 16) / 8;
      r[i++] = rec1(size, f, f + rr(s, 1, 4));
    }
  }
}

static tg_record_set *load_ppocr(const char *path, int64_t side, char *why, size_t why_size) {
  tg_input_shape shape = {"x", 4, {1, 3, side, side}, {{0}}};
  tg_model_options mo = {&shape, 1};
  tg_model *model = NULL;
  tg_error_info err = {{0}};
  tg_lifetimes *lt = NULL;
  tg_model_records *mr = NULL;
  tg_record_set *out = NULL;
  if (tg_model_load_with(path, &mo, NULL, &model, &err) != TG_OK ||
      tg_graph_compute_lifetimes(model->graph, NULL, NULL, &lt, &err) != TG_OK ||
      tg_model_records_create(model->graph, lt, TG_STORAGE_BUFFER, TG_PRECISION_FP32, NULL, NULL, &mr, &err) != TG_OK) {
    snprintf(why, why_size, "%s", err.message);
  } else {
    out = mr->records;
    mr->records = NULL; /* taken */
  }
  tg_model_records_destroy(mr);
  tg_lifetimes_destroy(lt);
  tg_model_destroy(model);
  return out;
}

/* ---- one input -------------------------------------------------------------------------------- */

static int g_markdown;
static uint32_t g_limit_ms = 200;
static int g_fail;

static void row(const char *name, const tg_usage_record *rec, size_t n, const uint64_t caps[3]) {
  tg_bounds b;
  if (tg_bounds_compute(rec, n, 1, NULL, &b) != TG_OK) abort();
  uint64_t largest = 0;
  for (size_t r = 0; r < n; ++r)
    if (rec[r].size.w > largest) largest = rec[r].size.w;
  tg_plan_options o = {.mode = TG_MODE_OFFSETS, .strategy = TG_STRATEGY_BEST, .time_limit_ms = g_limit_ms};
  tg_plan *uncapped = NULL;
  if (tg_plan_compute(rec, n, 1, &o, NULL, &uncapped) != TG_OK) abort();
  for (int c = 0; c < 3; ++c) {
    uint64_t cap = caps[c];
    if (cap < largest) {
      printf(g_markdown ? "| %s | %.1f | - | - | - | - | largest tensor %.1f MiB above the cap |\n"
                        : "%-28s cap %6.1f MiB: largest tensor %.1f MiB above the cap\n",
             name, (double)cap / MIB, (double)largest / MIB);
      continue;
    }
    result gg = run_ggml(rec, n, cap);
    result cm = run_cut_move(rec, n, uncapped, cap);
    o.max_allocation = cap;
    tg_plan *p = NULL;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (tg_plan_compute(rec, n, 1, &o, NULL, &p) != TG_OK) abort();
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
    tg_error_info err = {{0}};
    if (tg_plan_validate(rec, n, 1, p, 0, NULL, NULL, &err) != TG_OK) {
      fprintf(stderr, "bench_arenas: %s cap %" PRIu64 ": invalid plan: %s\n", name, cap, err.message);
      g_fail = 1;
    }
    size_t min_arenas = 0;
    tg_bounds_arena_count(rec, n, cap, NULL, &min_arenas);
    size_t arenas = p->arena_count;
    /* The targets, where the cap is at least twice the largest tensor. */
    const char *target = "";
    if (cap >= 2 * largest) {
      int ok = (double)p->total <= 1.02 * (double)uncapped->total && p->total <= gg.total &&
               arenas <= (size_t)((p->total + cap - 1) / cap) + 1;
      target = ok ? "met" : "MISSED";
    } else {
      target = "cap < 2x largest";
    }
    if (g_markdown)
      printf("| %s | %.1f | %.2f | %.2f (%zu) | %.2f (%zu) | %.2f (%zu), %.0f ms | %s; bound %zu arenas |\n", name,
             (double)cap / MIB, (double)uncapped->total / MIB, (double)gg.total / MIB, gg.arenas,
             (double)cm.total / MIB, cm.arenas, (double)p->total / MIB, arenas, ms, target, min_arenas);
    else
      printf("%-28s cap %6.1f MiB: uncapped %8.2f | ggml %8.2f (%2zu) | cut+move %8.2f (%2zu) | Tangram %8.2f (%2zu) "
             "%6.0f ms | %s (>= %zu arenas)\n",
             name, (double)cap / MIB, (double)uncapped->total / MIB, (double)gg.total / MIB, gg.arenas,
             (double)cm.total / MIB, cm.arenas, (double)p->total / MIB, arenas, ms, target, min_arenas);
    tg_plan_destroy(p);
  }
  tg_plan_destroy(uncapped);
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--markdown") == 0) g_markdown = 1;
    else if (strcmp(argv[i], "--time-limit") == 0 && i + 1 < argc) g_limit_ms = (uint32_t)atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_arenas [--markdown] [--time-limit MS]\n");
      return 2;
    }
  }
  if (g_markdown)
    printf("| input | cap MiB | uncapped MiB | ggml MiB (arenas) | cut+move MiB (arenas) | Tangram MiB (arenas), time | "
           "targets |\n|---|---|---|---|---|---|---|\n");
  const uint64_t mib_caps[3] = {256ull << 20, 128ull << 20, 64ull << 20};
  const char *home = getenv("HOME");
  const char *cache = getenv("TANGRAM_MODEL_CACHE");
  char path[1024];
  if (cache) snprintf(path, sizeof path, "%s/ch_PP-OCRv4_det_infer.onnx", cache);
  else snprintf(path, sizeof path, "%s/.cache/tangram/models/ch_PP-OCRv4_det_infer.onnx", home ? home : ".");
  static const int64_t sides[] = {2048, 1536};
  for (int s = 0; s < 2; ++s) {
    char why[512] = "", name[64];
    tg_record_set *set = load_ppocr(path, sides[s], why, sizeof why);
    snprintf(name, sizeof name, "PP-OCRv4 det %" PRId64 "x%" PRId64, sides[s], sides[s]);
    if (set == NULL) {
      fprintf(stderr, "bench_arenas: %s skipped: %s\n", name, why);
      continue;
    }
    row(name, set->records, set->count, mib_caps);
    tg_record_set_destroy(set);
  }
  static const struct {
    const char *name;
    void (*gen)(uint64_t *, tg_usage_record *, size_t);
  } k_traces[] = {{"wide-dag 100k", gen_wide}, {"transformer 100k", gen_transformer}};
  for (size_t t = 0; t < sizeof k_traces / sizeof k_traces[0]; ++t) {
    size_t n = 100000;
    tg_usage_record *rec = calloc(n, sizeof *rec);
    if (rec == NULL) abort();
    uint64_t seed = 32 + t;
    k_traces[t].gen(&seed, rec, n);
    tg_bounds b;
    if (tg_bounds_compute(rec, n, 1, NULL, &b) != TG_OK) abort();
    uint64_t caps[3] = {b.peak_live / 2, b.peak_live / 4, b.peak_live / 8};
    for (int c = 0; c < 3; ++c) caps[c] = caps[c] / 1024 * 1024; /* whole KiB */
    row(k_traces[t].name, rec, n, caps);
    free(rec);
  }
  return g_fail;
}
