/* A lower bound for objects plans from exact optima of record subsets.
 *
 * Restrict any objects plan of all records to a subset S: each object keeps only its members
 * in S, and its per-dimension maximum can only shrink. So the cheapest objects plan of S alone
 * costs no more than the plan, and OPT(S) bounds every objects plan of the records, under any
 * may-share relation too (a relation only forbids pairs, which can only raise OPT(S)).
 *
 * OPT(S) for |S| = k is exact by dynamic programming over the subsets of S: f(M) is the least
 * cost of splitting M into groups of pairwise time-disjoint records, each costing the volume of
 * its per-dimension maximum; f(M) = min over groups G in M holding M's lowest member of
 * cost(G) + f(M \ G), 3^k steps in all.
 *
 * Which subset: the k0 largest records by volume to start, then single swaps with the
 * TG__SUBSET_CANDIDATES largest records while the optimum rises, then growing one record at a
 * time (the candidate that raises it most) up to max_subset, within TG__SUBSET_WORK steps of
 * the dynamic programme. Deterministic: no clock, no randomness. */
#include <string.h>

#include "planner/strategies/objects_common.h"
#include "planner/strategies/offsets_common.h"

#define TG__SUBSET_MAX 20u
#define TG__SUBSET_DEFAULT 15u
#define TG__SUBSET_START 12u
#define TG__SUBSET_CANDIDATES 40u
#define TG__SUBSET_WORK 3000000000ull

typedef struct subset_work {
  const tg_usage_record *records;
  uint64_t *cost;     /* per mask: volume of the per-dimension maximum (saturating) */
  uint64_t *f;        /* per mask: the optimum */
  tg_extent *ext;     /* per mask: the per-dimension maximum */
  uint32_t *conf;     /* per member: the members it meets in time */
  unsigned char *ind; /* per mask: 1 when its members are pairwise time-disjoint */
  uint64_t work;      /* steps spent */
} subset_work;

/* OPT of the k records s[0..k) (k <= TG__SUBSET_MAX). */
static uint64_t subset_optimum(subset_work *wk, const size_t *s, size_t k) {
  const tg_usage_record *rec = wk->records;
  uint32_t full = (uint32_t)((1u << k) - 1);
  for (size_t i = 0; i < k; ++i) {
    wk->conf[i] = 0;
    for (size_t j = 0; j < k; ++j) {
      const tg_usage_record *a = &rec[s[i]], *b = &rec[s[j]];
      if (i != j && a->first_task <= b->last_task && b->first_task <= a->last_task)
        wk->conf[i] |= 1u << j;
    }
  }
  wk->cost[0] = 0;
  wk->ind[0] = 1;
  wk->ext[0] = (tg_extent){0, 0, 0};
  for (uint32_t m = 1; m <= full; ++m) {
    uint32_t b = 0;
    while (!((m >> b) & 1u)) ++b;
    uint32_t p = m & (m - 1);
    wk->ext[m] = tg__extent_max(wk->ext[p], rec[s[b]].size);
    wk->cost[m] = tg__extent_volume_sat(wk->ext[m]);
    wk->ind[m] = wk->ind[p] && (wk->conf[b] & p) == 0;
  }
  wk->f[0] = 0;
  for (uint32_t m = 1; m <= full; ++m) {
    uint32_t low = m & (0u - m), rest = m ^ low;
    uint64_t best = UINT64_MAX;
    for (uint32_t t = rest;; t = (t - 1) & rest) {
      uint32_t g = t | low;
      if (wk->ind[g]) {
        uint64_t c = tg__add_sat_u64(wk->cost[g], wk->f[m ^ g]);
        if (c < best) best = c;
      }
      if (t == 0) break;
    }
    wk->f[m] = best;
  }
  uint64_t steps = 1;
  for (size_t i = 0; i < k; ++i) steps *= 3;
  wk->work += steps;
  return wk->f[full];
}

static int contains(const size_t *s, size_t k, size_t r) {
  for (size_t i = 0; i < k; ++i)
    if (s[i] == r) return 1;
  return 0;
}

tg_status tg_bounds_objects_subset(const tg_usage_record *records, size_t count, uint32_t dims,
                                   size_t max_subset, const tg_allocator *alloc, uint64_t *out) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = 0;
  if (max_subset > TG__SUBSET_MAX) return TG_ERROR_INVALID_ARGUMENT;
  tg_bounds b;
  tg_status st = tg_bounds_compute(records, count, dims, alloc, &b);
  if (st != TG_OK) return st;
  if (max_subset == 0) max_subset = TG__SUBSET_DEFAULT;
  size_t kmax = count < max_subset ? count : max_subset;
  if (kmax < 2) {
    *out = b.positional_max;
    return TG_OK;
  }
  alloc = tg__alloc_or_default(alloc);
  size_t masks = (size_t)1 << kmax;
  size_t ncand = count < TG__SUBSET_CANDIDATES ? count : TG__SUBSET_CANDIDATES;
  subset_work wk = {records, NULL, NULL, NULL, NULL, NULL, 0};
  tg__arena ar = {NULL, 0, 0};
  void *mem = NULL;
  tg__sort_item *items = NULL;
  size_t *cand = NULL, *s = NULL;
  for (int pass = 0; pass < 2; ++pass) {
    wk.cost = tg__arena_take(&ar, masks, sizeof *wk.cost);
    wk.f = tg__arena_take(&ar, masks, sizeof *wk.f);
    wk.ext = tg__arena_take(&ar, masks, sizeof *wk.ext);
    wk.conf = tg__arena_take(&ar, TG__SUBSET_MAX, sizeof *wk.conf);
    wk.ind = tg__arena_take(&ar, masks, sizeof *wk.ind);
    items = tg__arena_take(&ar, 2 * count, sizeof *items);
    cand = tg__arena_take(&ar, ncand, sizeof *cand);
    s = tg__arena_take(&ar, TG__SUBSET_MAX, sizeof *s);
    if (pass == 1) break;
    if (ar.overflow || (mem = tg__malloc(alloc, ar.off)) == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
    ar = (tg__arena){mem, 0, 0};
  }
  /* Candidates: the largest records by volume (ties: lower index first). Volumes fit: the
   * naive sum does (tg_bounds_compute checked). */
  for (size_t r = 0; r < count; ++r) {
    uint64_t v = 0;
    (void)tg_extent_volume(records[r].size, &v);
    items[r] = (tg__sort_item){UINT64_MAX - v, r};
  }
  tg__sort_items_stable(items, count, items + count);
  for (size_t i = 0; i < ncand; ++i) cand[i] = items[i].idx;
  size_t k = kmax < TG__SUBSET_START ? kmax : TG__SUBSET_START;
  for (size_t i = 0; i < k; ++i) s[i] = cand[i];
  uint64_t cur = subset_optimum(&wk, s, k);
  /* Swaps at size k while one raises the optimum. */
  for (int improved = 1; improved && wk.work < TG__SUBSET_WORK;) {
    improved = 0;
    for (size_t i = 0; i < k && wk.work < TG__SUBSET_WORK; ++i) {
      for (size_t c = 0; c < ncand && wk.work < TG__SUBSET_WORK; ++c) {
        if (contains(s, k, cand[c])) continue;
        size_t old = s[i];
        s[i] = cand[c];
        uint64_t v = subset_optimum(&wk, s, k);
        if (v > cur) {
          cur = v;
          improved = 1;
        } else {
          s[i] = old;
        }
      }
    }
  }
  /* Grow: add the candidate that raises the optimum most, up to kmax. */
  while (k < kmax && wk.work < TG__SUBSET_WORK) {
    uint64_t best = 0;
    size_t pick = SIZE_MAX;
    for (size_t c = 0; c < ncand && wk.work < TG__SUBSET_WORK; ++c) {
      if (contains(s, k, cand[c])) continue;
      s[k] = cand[c];
      uint64_t v = subset_optimum(&wk, s, k + 1);
      if (pick == SIZE_MAX || v > best) {
        best = v;
        pick = cand[c];
      }
    }
    if (pick == SIZE_MAX) break;
    s[k++] = pick;
    if (best > cur) cur = best;
  }
  tg__free(alloc, mem);
  *out = cur > b.positional_max ? cur : b.positional_max;
  return TG_OK;
}
