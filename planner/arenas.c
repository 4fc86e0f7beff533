/* Offsets plans under an allocation cap: a one-arena plan cut into bands of at most the cap,
 * the records that straddle a cut placed again (largest first) where they add least, and the
 * lower bound on the number of arenas.
 *
 * Several ways of choosing the cuts are tried (a cut exactly at the cap, or the cut with the
 * fewest straddling bytes in the upper part of the band) and the plan with the smallest total,
 * then the fewest arenas, is kept. Each band keeps the strategy's layout of its records, so
 * the capped plan costs little more than the uncapped one when the cap is well above the
 * largest record. */
#include <stdlib.h>

#include "planner/base/base.h"

typedef struct ar_key {
  uint64_t k;
  size_t idx;
} ar_key;

static int ar_key_cmp(const void *pa, const void *pb) {
  const ar_key *a = pa, *b = pb;
  if (a->k != b->k) return a->k < b->k ? -1 : 1;
  return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* The records, their sizes and the uncapped layout, shared by every try. */
typedef struct ar_ctx {
  const tg_usage_record *records;
  size_t count;
  const uint64_t *off, *vol, *align; /* align[r] >= 1 */
  uint64_t cap, total;
  const tg_share_relation *relation;
  const tg_allocator *alloc;
  /* starts[] and ends[] sorted, with prefix sums of the sizes: bytes straddling a cut. */
  uint64_t *starts_sorted, *start_prefix, *ends_sorted, *end_prefix;
  /* Records by first task, and the longest interval: the records a record meets in time have
   * their first task in [first - max_len, last]. */
  size_t *by_first;
  uint64_t *first_sorted;
  uint64_t max_len;
} ar_ctx;

/* A candidate plan. */
typedef struct ar_try {
  uint32_t *arena_of;
  uint64_t *offset_of;
  uint64_t *sizes;
  size_t arenas, sizes_cap;
  uint64_t total;
  /* members of each arena, as a linked list through next[] (head[k]) */
  size_t *head, *next;
} ar_try;

static size_t upper_count(const uint64_t *a, size_t n, uint64_t v) { /* entries <= v */
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (a[mid] <= v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Bytes of the records with off < c < off + size. */
static uint64_t straddling(const ar_ctx *c, uint64_t cut) {
  size_t s = tg__lower_bound_u64(c->starts_sorted, c->count, cut);
  size_t e = upper_count(c->ends_sorted, c->count, cut);
  return c->start_prefix[s] - c->end_prefix[e];
}

static int conflicts(const ar_ctx *c, size_t a, size_t b) {
  const tg_usage_record *ra = &c->records[a], *rb = &c->records[b];
  if (ra->first_task <= rb->last_task && rb->first_task <= ra->last_task) return 1;
  return c->relation != NULL && !c->relation->may_share(c->relation->user, a, b);
}

static int grow_arenas(const ar_ctx *c, ar_try *t) {
  if (t->arenas < t->sizes_cap) return 1;
  size_t n = t->sizes_cap ? t->sizes_cap * 2 : 8;
  uint64_t *s = tg__realloc(c->alloc, t->sizes, t->sizes_cap * sizeof *s, n * sizeof *s);
  if (s == NULL) return 0;
  t->sizes = s;
  size_t *h = tg__realloc(c->alloc, t->head, t->sizes_cap * sizeof *h, n * sizeof *h);
  if (h == NULL) return 0;
  t->head = h;
  t->sizes_cap = n;
  return 1;
}

static int add_arena(const ar_ctx *c, ar_try *t) {
  if (!grow_arenas(c, t)) return 0;
  t->sizes[t->arenas] = 0;
  t->head[t->arenas] = SIZE_MAX;
  t->arenas++;
  return 1;
}

static void add_member(ar_try *t, size_t r, uint32_t k, uint64_t offset, uint64_t size) {
  t->arena_of[r] = k;
  t->offset_of[r] = offset;
  t->next[r] = t->head[k];
  t->head[k] = r;
  if (offset + size > t->sizes[k]) t->sizes[k] = offset + size;
}

/* The lowest offset where record r fits below the cap clear of `m` placed records sorted by
 * offset (run[i].k = offset); UINT64_MAX when none. */
static uint64_t lowest_fit(const ar_ctx *c, const ar_key *run, size_t m, size_t r) {
  uint64_t pos = 0;
  for (size_t i = 0; i <= m; ++i) {
    uint64_t a = pos;
    if (!tg__align_up(pos, c->align[r], &a)) return UINT64_MAX;
    if (a > c->cap || c->vol[r] > c->cap - a) return UINT64_MAX;
    if (i == m || a + c->vol[r] <= run[i].k) return a;
    uint64_t end = run[i].k + c->vol[run[i].idx];
    if (end > pos) pos = end;
  }
  return UINT64_MAX;
}

/* Sort by arena (high bits) then offset: ar_key with k = offset, idx = record; the arena is
 * looked up through the try. */
typedef struct ar_conf {
  uint32_t arena;
  uint64_t off;
  size_t idx;
} ar_conf;

static int ar_conf_cmp(const void *pa, const void *pb) {
  const ar_conf *a = pa, *b = pb;
  if (a->arena != b->arena) return a->arena < b->arena ? -1 : 1;
  if (a->off != b->off) return a->off < b->off ? -1 : 1;
  return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* The placed records that conflict with r, sorted by arena and offset, into `out` (count
 * entries); returns how many. Without a relation only records that meet r in time conflict:
 * those come from the time index. */
static size_t conflicting(const ar_ctx *c, const ar_try *t, size_t r, ar_conf *out) {
  size_t m = 0;
  const tg_usage_record *x = &c->records[r];
  if (c->relation == NULL) {
    uint64_t lo = x->first_task > c->max_len ? x->first_task - c->max_len : 0;
    size_t i = tg__lower_bound_u64(c->first_sorted, c->count, lo);
    for (; i < c->count && c->first_sorted[i] <= x->last_task; ++i) {
      size_t q = c->by_first[i];
      if (q == r || t->arena_of[q] == UINT32_MAX || c->vol[q] == 0 || c->records[q].last_task < x->first_task)
        continue;
      out[m++] = (ar_conf){t->arena_of[q], t->offset_of[q], q};
    }
  } else {
    for (size_t q = 0; q < c->count; ++q) {
      if (q == r || t->arena_of[q] == UINT32_MAX || c->vol[q] == 0 || !conflicts(c, q, r)) continue;
      out[m++] = (ar_conf){t->arena_of[q], t->offset_of[q], q};
    }
  }
  qsort(out, m, sizeof *out, ar_conf_cmp);
  return m;
}

/* Place the records listed in keys[0..m) (keys[i].idx), largest first, each in the arena where
 * it adds least (a new arena when it fits none). keys' contents are consumed. */
static tg_status place_largest_first(const ar_ctx *c, ar_try *t, ar_key *keys, size_t m) {
  ar_key *list = tg__calloc(c->alloc, m ? m : 1, sizeof *list);
  if (list == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t i = 0; i < m; ++i) list[i] = (ar_key){UINT64_MAX - c->vol[keys[i].idx], keys[i].idx};
  qsort(list, m, sizeof *list, ar_key_cmp);
  ar_conf *conf = tg__calloc(c->alloc, c->count ? c->count : 1, sizeof *conf);
  ar_key *run = tg__calloc(c->alloc, c->count ? c->count : 1, sizeof *run);
  tg_status st = conf && run ? TG_OK : TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t i = 0; i < m && st == TG_OK; ++i) {
    size_t r = list[i].idx;
    size_t nc = conflicting(c, t, r, conf);
    size_t best_k = SIZE_MAX;
    uint64_t best_growth = UINT64_MAX, best_off = 0;
    for (size_t k = 0, j = 0; k < t->arenas && best_growth > 0; ++k) {
      size_t mk = 0;
      for (; j < nc && conf[j].arena == k; ++j) run[mk++] = (ar_key){conf[j].off, conf[j].idx};
      uint64_t o = lowest_fit(c, run, mk, r);
      if (o == UINT64_MAX) continue;
      uint64_t end = o + c->vol[r];
      uint64_t growth = end > t->sizes[k] ? end - t->sizes[k] : 0;
      if (growth < best_growth) {
        best_growth = growth;
        best_k = k;
        best_off = o;
      }
    }
    if (best_k == SIZE_MAX) {
      if (!add_arena(c, t)) {
        st = TG_ERROR_OUT_OF_HOST_MEMORY;
        break;
      }
      best_k = t->arenas - 1;
      best_off = 0;
    }
    add_member(t, r, (uint32_t)best_k, best_off, c->vol[r]);
  }
  tg__free(c->alloc, conf);
  tg__free(c->alloc, run);
  tg__free(c->alloc, list);
  return st;
}

/* Fewer arenas at the same total: arenas stacked into one where their sizes add up to at most
 * the cap (first fit, largest first), only where no alignment padding is needed between them,
 * so the total does not change. */
static tg_status merge(const ar_ctx *c, ar_try *t) {
  size_t na = t->arenas;
  if (na < 2) return TG_OK;
  uint64_t g = 1; /* the largest alignment: a base that is a multiple of it suits every record */
  for (size_t r = 0; r < c->count; ++r)
    if (c->align[r] > g) g = c->align[r];
  ar_key *order = tg__calloc(c->alloc, na, sizeof *order);
  uint32_t *bin_of = tg__calloc(c->alloc, na, sizeof *bin_of);
  uint64_t *base = tg__calloc(c->alloc, na, sizeof *base), *fill = tg__calloc(c->alloc, na, sizeof *fill);
  tg_status st = TG_OK;
  if (!order || !bin_of || !base || !fill) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto out;
  }
  for (size_t k = 0; k < na; ++k) order[k] = (ar_key){UINT64_MAX - t->sizes[k], k};
  qsort(order, na, sizeof *order, ar_key_cmp);
  size_t bins = 0;
  for (size_t i = 0; i < na; ++i) {
    size_t k = order[i].idx;
    size_t b = 0;
    for (; b < bins; ++b)
      if (fill[b] % g == 0 && t->sizes[k] <= c->cap - fill[b]) break;
    if (b == bins) fill[bins++] = 0;
    bin_of[k] = (uint32_t)b;
    base[k] = fill[b];
    fill[b] += t->sizes[k];
  }
  if (bins < na) {
    for (size_t r = 0; r < c->count; ++r) {
      uint32_t k = t->arena_of[r];
      t->offset_of[r] += base[k];
      t->arena_of[r] = bin_of[k];
    }
    for (size_t b = 0; b < bins; ++b) t->sizes[b] = fill[b];
    t->arenas = bins;
  }
out:
  tg__free(c->alloc, order);
  tg__free(c->alloc, bin_of);
  tg__free(c->alloc, base);
  tg__free(c->alloc, fill);
  return st;
}

/* Drop arenas that hold no bytes (a band whose records all moved, the first one included:
 * its zero-size records go to the first arena kept) and sum the sizes. */
static tg_status compact(const ar_ctx *c, ar_try *t) {
  size_t n = c->count;
  uint32_t *renum = tg__calloc(c->alloc, t->arenas ? t->arenas : 1, sizeof *renum);
  if (renum == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  size_t kept = 0, used = 0;
  for (size_t k = 0; k < t->arenas; ++k) used += t->sizes[k] > 0;
  t->total = 0;
  for (size_t k = 0; k < t->arenas; ++k) {
    if (t->sizes[k] == 0 && (used > 0 || k > 0)) { /* no bytes at all: arena 0 stays */
      renum[k] = UINT32_MAX;
      continue;
    }
    renum[k] = (uint32_t)kept;
    t->sizes[kept] = t->sizes[k];
    t->total += t->sizes[k];
    ++kept;
  }
  for (size_t r = 0; r < n; ++r) {
    uint32_t k = renum[t->arena_of[r]];
    if (k == UINT32_MAX) { /* a zero-size record in an emptied arena */
      k = 0;
      t->offset_of[r] = 0;
    }
    t->arena_of[r] = k;
  }
  t->arenas = kept;
  tg__free(c->alloc, renum);
  return merge(c, t);
}

/* One try: bands chosen with the lower edge `low` (per mille of the cap: the cut is the point
 * of fewest straddling bytes in [start + low * cap / 1000, start + cap]; 1000 = at the cap). */
static tg_status run_try(const ar_ctx *c, unsigned low, ar_try *t, ar_key *scratch, size_t *moved) {
  size_t n = c->count;
  t->arenas = 0;
  for (size_t r = 0; r < n; ++r) t->arena_of[r] = UINT32_MAX;
  /* Bands: each cut at the cap or, with low < 1000, at the record start of fewest straddling
   * bytes in the band's upper part. */
  size_t bands = 0, bands_cap = 0;
  uint64_t *band_start = NULL;
  uint64_t s = 0;
  while (s < c->total) {
    if (bands + 2 > bands_cap) {
      size_t nc = bands_cap ? bands_cap * 2 : 16;
      uint64_t *nb = tg__realloc(c->alloc, band_start, bands_cap * sizeof *nb, nc * sizeof *nb);
      if (nb == NULL) {
        tg__free(c->alloc, band_start);
        return TG_ERROR_OUT_OF_HOST_MEMORY;
      }
      band_start = nb;
      bands_cap = nc;
    }
    band_start[bands++] = s;
    uint64_t cut;
    if (c->total - s <= c->cap) {
      cut = c->total;
    } else {
      uint64_t hi = s + c->cap, lo = s + (uint64_t)((double)c->cap * low / 1000.0);
      if (lo <= s) lo = s + 1;
      cut = hi;
      uint64_t best = straddling(c, hi);
      if (low < 1000) {
        size_t i = tg__lower_bound_u64(c->starts_sorted, n, lo);
        for (; i < n && c->starts_sorted[i] < hi && best > 0; ++i) {
          uint64_t x = c->starts_sorted[i], v = straddling(c, x);
          if (v < best) {
            best = v;
            cut = x;
          }
        }
      }
    }
    s = cut;
  }
  if (band_start == NULL) return TG_ERROR_INTERNAL;
  band_start[bands] = s;
  for (size_t b = 0; b < bands; ++b) {
    if (!add_arena(c, t)) {
      tg__free(c->alloc, band_start);
      return TG_ERROR_OUT_OF_HOST_MEMORY;
    }
  }
  size_t nstr = 0;
  for (size_t r = 0; r < n; ++r) {
    if (c->vol[r] == 0) {
      add_member(t, r, 0, 0, 0);
      continue;
    }
    /* band: last start <= off */
    size_t lo = 0, hi = bands;
    while (hi - lo > 1) {
      size_t mid = lo + (hi - lo) / 2;
      if (band_start[mid] <= c->off[r]) lo = mid;
      else hi = mid;
    }
    uint64_t rel = c->off[r] - band_start[lo];
    if (c->off[r] + c->vol[r] <= band_start[lo + 1] && rel % c->align[r] == 0) {
      add_member(t, r, (uint32_t)lo, rel, c->vol[r]);
    } else {
      scratch[nstr++] = (ar_key){c->vol[r], r};
    }
  }
  tg__free(c->alloc, band_start);
  *moved = nstr;
  tg_status st = place_largest_first(c, t, scratch, nstr);
  if (st != TG_OK) return st;
  return compact(c, t);
}

/* Every record placed afresh, largest first (greedy by size over arenas). */
static tg_status run_scratch(const ar_ctx *c, ar_try *t, ar_key *scratch) {
  t->arenas = 0;
  for (size_t r = 0; r < c->count; ++r) t->arena_of[r] = UINT32_MAX;
  size_t m = 0;
  for (size_t r = 0; r < c->count; ++r) {
    if (c->vol[r] == 0) continue;
    scratch[m++] = (ar_key){0, r};
  }
  if (!add_arena(c, t)) return TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t r = 0; r < c->count; ++r)
    if (c->vol[r] == 0) add_member(t, r, 0, 0, 0);
  tg_status st = place_largest_first(c, t, scratch, m);
  return st != TG_OK ? st : compact(c, t);
}

static void free_try(const tg_allocator *a, ar_try *t) {
  TG__FREE_EACH(a, t->arena_of, t->offset_of, t->sizes, t->head, t->next);
  memset(t, 0, sizeof *t);
}

tg_status tg_plan_split_arenas(const tg_usage_record *records, size_t count, tg_plan *plan,
                               uint64_t max_allocation, uint64_t alignment,
                               const tg_share_relation *relation, const tg_allocator *alloc) {
  if (plan == NULL || (records == NULL && count > 0) || max_allocation == 0 ||
      plan->mode != TG_MODE_OFFSETS || plan->dims != 1 || plan->record_count != count ||
      plan->arena_count > 1 || (count > 0 && plan->offset_of == NULL) ||
      (relation != NULL && relation->may_share == NULL))
    return TG_ERROR_INVALID_ARGUMENT;
  alloc = tg__alloc_or_default(alloc);
  for (size_t r = 0; r < count; ++r)
    if (records[r].size.h != 1 || records[r].size.d != 1) return TG_ERROR_INVALID_ARGUMENT;
  for (size_t r = 0; r < count; ++r)
    if (records[r].size.w > max_allocation) return TG_ERROR_LIMIT;
  if (plan->total <= max_allocation) {
    plan->max_allocation = max_allocation;
    return TG_OK;
  }
  for (size_t r = 0; r < count; ++r) {
    uint64_t end;
    if (!tg__add_u64(plan->offset_of[r], records[r].size.w, &end) || end > plan->total)
      return TG_ERROR_INVALID_ARGUMENT;
  }
  tg_status st = TG_OK;
  size_t n = count;
  uint64_t *vol = tg__calloc(alloc, n, sizeof *vol), *al = tg__calloc(alloc, n, sizeof *al);
  uint64_t *ss = tg__calloc(alloc, n, sizeof *ss), *sp = tg__calloc(alloc, n + 1, sizeof *sp);
  uint64_t *es = tg__calloc(alloc, n, sizeof *es), *ep = tg__calloc(alloc, n + 1, sizeof *ep);
  ar_key *keys = tg__calloc(alloc, n, sizeof *keys), *scratch = tg__calloc(alloc, n, sizeof *scratch);
  ar_try best = {0}, cur = {0};
  size_t *by_first = NULL;
  uint64_t *first_sorted = NULL;
  if (!vol || !al || !ss || !sp || !es || !ep || !keys || !scratch) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  for (size_t r = 0; r < n; ++r) {
    vol[r] = records[r].size.w;
    al[r] = alignment > records[r].alignment ? alignment : records[r].alignment;
    if (al[r] == 0) al[r] = 1;
  }
  for (size_t r = 0; r < n; ++r) keys[r] = (ar_key){plan->offset_of[r], r};
  qsort(keys, n, sizeof *keys, ar_key_cmp);
  for (size_t i = 0; i < n; ++i) {
    ss[i] = keys[i].k;
    sp[i + 1] = sp[i] + vol[keys[i].idx];
  }
  for (size_t r = 0; r < n; ++r) keys[r] = (ar_key){plan->offset_of[r] + vol[r], r};
  qsort(keys, n, sizeof *keys, ar_key_cmp);
  for (size_t i = 0; i < n; ++i) {
    es[i] = keys[i].k;
    ep[i + 1] = ep[i] + vol[keys[i].idx];
  }
  by_first = tg__calloc(alloc, n, sizeof *by_first);
  first_sorted = tg__calloc(alloc, n, sizeof *first_sorted);
  if (by_first == NULL || first_sorted == NULL) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  uint64_t max_len = 0;
  for (size_t r = 0; r < n; ++r) {
    keys[r] = (ar_key){records[r].first_task, r};
    uint64_t len = (uint64_t)records[r].last_task - records[r].first_task;
    if (len > max_len) max_len = len;
  }
  qsort(keys, n, sizeof *keys, ar_key_cmp);
  for (size_t i = 0; i < n; ++i) {
    by_first[i] = keys[i].idx;
    first_sorted[i] = keys[i].k;
  }
  ar_ctx c = {records, n, plan->offset_of, vol, al, max_allocation, plan->total, relation, alloc,
              ss, sp, es, ep, by_first, first_sorted, max_len};
  static const unsigned k_lows[] = {1000, 950, 850, 700, 500};
  const size_t band_tries = sizeof k_lows / sizeof k_lows[0];
  /* And every record placed afresh, largest first over the arenas. */
  const size_t tries = band_tries + 1;
  for (size_t i = 0; i < tries; ++i) {
    cur.arena_of = tg__calloc(alloc, n, sizeof *cur.arena_of);
    cur.offset_of = tg__calloc(alloc, n, sizeof *cur.offset_of);
    cur.next = tg__calloc(alloc, n, sizeof *cur.next);
    if (!cur.arena_of || !cur.offset_of || !cur.next) {
      st = TG_ERROR_OUT_OF_HOST_MEMORY;
      goto done;
    }
    size_t moved = 0;
    st = i < band_tries ? run_try(&c, k_lows[i], &cur, scratch, &moved) : run_scratch(&c, &cur, scratch);
    if (st != TG_OK) goto done;
    if (best.arena_of == NULL || cur.total < best.total ||
        (cur.total == best.total && cur.arenas < best.arenas)) {
      free_try(alloc, &best);
      best = cur;
    } else {
      free_try(alloc, &cur);
    }
    memset(&cur, 0, sizeof cur);
    if (moved == 0) break; /* cuts at the cap met no record: nothing to improve */
  }
  /* Install the best. */
  if (best.arenas <= 1) {
    memcpy(plan->offset_of, best.offset_of, n * sizeof *plan->offset_of);
    plan->total = best.total;
  } else {
    uint64_t *sizes = tg__calloc(alloc, best.arenas, sizeof *sizes);
    if (sizes == NULL) {
      st = TG_ERROR_OUT_OF_HOST_MEMORY;
      goto done;
    }
    memcpy(sizes, best.sizes, best.arenas * sizeof *sizes);
    memcpy(plan->offset_of, best.offset_of, n * sizeof *plan->offset_of);
    tg__free(&plan->alloc, plan->arena_of);
    tg__free(&plan->alloc, plan->arena_sizes);
    /* The plan's arrays come from the plan's allocator. */
    uint32_t *of = tg__calloc(&plan->alloc, n, sizeof *of);
    uint64_t *sz = tg__calloc(&plan->alloc, best.arenas, sizeof *sz);
    if (of == NULL || sz == NULL) {
      tg__free(&plan->alloc, of);
      tg__free(&plan->alloc, sz);
      tg__free(alloc, sizes);
      plan->arena_of = NULL;
      plan->arena_sizes = NULL;
      st = TG_ERROR_OUT_OF_HOST_MEMORY;
      goto done;
    }
    memcpy(of, best.arena_of, n * sizeof *of);
    memcpy(sz, sizes, best.arenas * sizeof *sz);
    tg__free(alloc, sizes);
    plan->arena_of = of;
    plan->arena_sizes = sz;
    plan->arena_count = best.arenas;
    plan->total = best.total;
  }
  plan->max_allocation = max_allocation;
done:
  tg__free(alloc, by_first);
  tg__free(alloc, first_sorted);
  free_try(alloc, &best);
  free_try(alloc, &cur);
  tg__free(alloc, vol);
  tg__free(alloc, al);
  tg__free(alloc, ss);
  tg__free(alloc, sp);
  tg__free(alloc, es);
  tg__free(alloc, ep);
  tg__free(alloc, keys);
  tg__free(alloc, scratch);
  return st;
}

tg_status tg_bounds_arena_count(const tg_usage_record *records, size_t count,
                                uint64_t max_allocation, const tg_allocator *alloc,
                                size_t *out) {
  if (out == NULL || max_allocation == 0 || (records == NULL && count > 0))
    return TG_ERROR_INVALID_ARGUMENT;
  *out = 0;
  alloc = tg__alloc_or_default(alloc);
  for (size_t r = 0; r < count; ++r) {
    const tg_usage_record *x = &records[r];
    if (x->first_task > x->last_task || x->size.h != 1 || x->size.d != 1)
      return TG_ERROR_INVALID_ARGUMENT;
    if (x->size.w > max_allocation) return TG_ERROR_LIMIT;
  }
  if (count == 0) return TG_OK;
  /* Events: +size at first_task, -size after last_task; starts sorted before ends at the same
   * key so that records meeting at a task are counted together. */
  ar_key *ev = tg__calloc(alloc, 2 * count, sizeof *ev);
  if (ev == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t r = 0; r < count; ++r) {
    ev[2 * r] = (ar_key){(uint64_t)records[r].first_task * 2, 2 * r};
    ev[2 * r + 1] = (ar_key){(uint64_t)records[r].last_task * 2 + 1, 2 * r + 1};
  }
  qsort(ev, 2 * count, sizeof *ev, ar_key_cmp);
  uint64_t live = 0, half = max_allocation / 2;
  size_t big = 0, best = 0;
  for (size_t i = 0; i < 2 * count; ++i) {
    size_t r = ev[i].idx / 2;
    uint64_t w = records[r].size.w;
    if (ev[i].idx % 2 == 0) {
      live = tg__add_sat_u64(live, w);
      if (w > half) ++big;
      uint64_t need = live / max_allocation + (live % max_allocation != 0);
      if (need > best) best = (size_t)need;
      if (big > best) best = big;
    } else {
      live -= w;
      if (w > half) --big;
    }
  }
  tg__free(alloc, ev);
  *out = best;
  return TG_OK;
}
