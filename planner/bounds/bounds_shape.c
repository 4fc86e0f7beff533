/* A shape-aware lower bound for objects plans: the pair-of-cliques bound.
 *
 * The positional-maximum bound counts volumes only: for textures it assumes that a 64x64 and a
 * 16x256 tensor could share a 4096-texel object, when the object must be 64x256. This bound
 * pays for shapes, on a subset of the records where the optimum is computable exactly.
 *
 * Take two task points p < q. The records live at p (set A) conflict pairwise, and so do the
 * records live at q but not at p (set B). In any objects plan, restricted to A and B, each
 * object holds at most one record of A and one of B, and costs at least the per-dimension
 * maximum of what it holds; dropping the other records of a plan only makes objects smaller.
 * So the cheapest way to pair A with B (a record of A and one of B that do not meet in time,
 * or each alone) bounds every objects plan from below:
 *   sum of volumes in A and B - the largest total saving of a matching,
 * with saving(a, b) = vol(a) + vol(b) - vol(per-dimension max of a and b) when positive. A
 * maximum-weight assignment (Hungarian method, O(m^3) for m = max(|A|, |B|)) finds it. Any
 * may-share relation only forbids pairs, so the bound holds under every policy.
 *
 * Which pairs: the points with the largest live volume (at most TG__SHAPE_POINTS), all pairs
 * of them with at most TG__SHAPE_MAX_LIVE records live at each, until about
 * TG__SHAPE_WORK steps of the assignment have been spent. The result is the largest of those
 * bounds and the positional maximum, so it never says less than tg_bounds_compute. */
#include <string.h>

#include "planner/strategies/objects_common.h"
#include "planner/strategies/offsets_common.h"

#define TG__SHAPE_POINTS 32
#define TG__SHAPE_MAX_LIVE 64
#define TG__SHAPE_WORK 40000000ull
/* Pair costs up to this stay exact in the int64 arithmetic of the assignment. */
#define TG__SHAPE_MAX_COST ((int64_t)1 << 52)

/* Largest total weight of a matching in the m x m matrix w (row-major, entries >= 0): the
 * Hungarian method on cost = top - w, with potentials (O(m^3)). Scratch holds 4 * (m + 1)
 * int64 and 2 * (m + 1) size_t. */
static int64_t max_weight_matching(const int64_t *w, size_t m, int64_t top, int64_t *iscratch,
                                   size_t *zscratch) {
  int64_t *u = iscratch, *v = u + m + 1, *minv = v + m + 1, *used = minv + m + 1;
  size_t *p = zscratch, *way = p + m + 1;
  for (size_t i = 0; i <= m; ++i) u[i] = v[i] = 0, p[i] = way[i] = 0;
  for (size_t i = 1; i <= m; ++i) {
    p[0] = i;
    size_t j0 = 0;
    for (size_t j = 0; j <= m; ++j) minv[j] = INT64_MAX, used[j] = 0;
    do {
      used[j0] = 1;
      size_t i0 = p[j0], j1 = 0;
      int64_t delta = INT64_MAX;
      for (size_t j = 1; j <= m; ++j) {
        if (used[j]) continue;
        int64_t cur = (top - w[(i0 - 1) * m + (j - 1)]) - u[i0] - v[j];
        if (cur < minv[j]) minv[j] = cur, way[j] = j0;
        if (minv[j] < delta) delta = minv[j], j1 = j;
      }
      for (size_t j = 0; j <= m; ++j) {
        if (used[j]) u[p[j]] += delta, v[j] -= delta;
        else minv[j] -= delta;
      }
      j0 = j1;
    } while (p[j0] != 0);
    do {
      size_t j1 = way[j0];
      p[j0] = p[j1];
      j0 = j1;
    } while (j0 != 0);
  }
  int64_t total = 0;
  for (size_t j = 1; j <= m; ++j) total += w[(p[j] - 1) * m + (j - 1)];
  return total;
}

/* The working arrays, carved from one block (tg__arena). */
typedef struct shape_work {
  uint64_t *live;        /* per point (+1): live volume */
  size_t *nlive;         /* per point (+1): live records */
  tg__sort_item *items;  /* 2 per point: sorting points by live volume */
  size_t *points;        /* the points tried */
  size_t *members;       /* TG__SHAPE_MAX_LIVE per point tried: its live records */
  size_t *bset;          /* set B of a pair */
  int64_t *w;            /* the assignment's weights */
  int64_t *is;           /* its scratch */
  size_t *zs;
} shape_work;

static void shape_layout(tg__arena *ar, size_t np, shape_work *wk) {
  wk->live = tg__arena_take(ar, np + 1, sizeof *wk->live);
  wk->nlive = tg__arena_take(ar, np + 1, sizeof *wk->nlive);
  wk->items = tg__arena_take(ar, 2 * np, sizeof *wk->items);
  wk->points = tg__arena_take(ar, TG__SHAPE_POINTS, sizeof *wk->points);
  wk->members = tg__arena_take(ar, TG__SHAPE_POINTS * TG__SHAPE_MAX_LIVE, sizeof *wk->members);
  wk->bset = tg__arena_take(ar, TG__SHAPE_MAX_LIVE, sizeof *wk->bset);
  wk->w = tg__arena_take(ar, TG__SHAPE_MAX_LIVE * TG__SHAPE_MAX_LIVE, sizeof *wk->w);
  wk->is = tg__arena_take(ar, 4 * (TG__SHAPE_MAX_LIVE + 1), sizeof *wk->is);
  wk->zs = tg__arena_take(ar, 2 * (TG__SHAPE_MAX_LIVE + 1), sizeof *wk->zs);
}

/* vol(per-dimension max of a and b), 0 on overflow. */
static uint64_t merged_volume(const tg_usage_record *a, const tg_usage_record *b) {
  uint64_t v;
  return tg_extent_volume(tg__extent_max(a->size, b->size), &v) == TG_OK ? v : 0;
}

tg_status tg_bounds_objects_shape(const tg_usage_record *records, size_t count, uint32_t dims,
                                  const tg_allocator *alloc, uint64_t *out) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = 0;
  tg_bounds b;
  tg_status st = tg_bounds_compute(records, count, dims, alloc, &b);
  if (st != TG_OK) return st;
  uint64_t best = b.positional_max;
  size_t n = count;
  if (n < 2) {
    *out = best;
    return TG_OK;
  }
  alloc = tg__alloc_or_default(alloc);
  /* Task points, and the live volume and record count at each. */
  uint64_t *volumes = tg__alloc_array(alloc, n, sizeof *volumes);
  static const tg_plan_options k_options = {0};
  tg__plan_input in = {records, n, dims, &k_options, alloc, volumes, 0, NULL, NULL};
  tg__task_points tp = {0, NULL, NULL};
  shape_work wk;
  void *mem = NULL;
  st = TG_ERROR_OUT_OF_HOST_MEMORY;
  if (volumes == NULL) goto done;
  for (size_t r = 0; r < n; ++r) (void)tg_extent_volume(records[r].size, &volumes[r]);
  if ((st = tg__task_points_init(&in, &tp)) != TG_OK) goto done;
  st = TG_ERROR_OUT_OF_HOST_MEMORY;
  size_t np = tp.count;
  tg__arena ar = {NULL, 0, 0};
  shape_layout(&ar, np, &wk);
  if (ar.overflow || (mem = tg__malloc(alloc, ar.off)) == NULL) goto done;
  ar = (tg__arena){mem, 0, 0};
  shape_layout(&ar, np, &wk);
  uint64_t *live = wk.live;
  size_t *nlive = wk.nlive, *points = wk.points, *members = wk.members, *bset = wk.bset;
  tg__sort_item *items = wk.items;
  memset(live, 0, (np + 1) * sizeof *live);
  memset(nlive, 0, (np + 1) * sizeof *nlive);
  /* Live volume and count per point, from differences (tg_bounds_compute has checked that
   * the naive sum, and so every partial sum, fits). */
  for (size_t r = 0; r < n; ++r) {
    live[tp.pf[r]] += volumes[r];
    live[tp.pl[r] + 1] -= volumes[r];
    nlive[tp.pf[r]]++;
    nlive[tp.pl[r] + 1]--;
  }
  for (size_t p = 1; p < np; ++p) {
    live[p] += live[p - 1];
    nlive[p] += nlive[p - 1];
  }
  /* The points with the largest live volume (ties: earlier first), at most 64 live each. */
  for (size_t p = 0; p < np; ++p) items[p] = (tg__sort_item){UINT64_MAX - live[p], p};
  tg__sort_items_stable(items, np, items + np);
  size_t k = 0;
  for (size_t i = 0; i < np && k < TG__SHAPE_POINTS; ++i)
    if (nlive[items[i].idx] >= 1 && nlive[items[i].idx] <= TG__SHAPE_MAX_LIVE) points[k++] = items[i].idx;
  /* Members of each chosen point, by a scan per point (k * n). */
  for (size_t i = 0; i < k; ++i) {
    size_t c = 0;
    for (size_t r = 0; r < n && c < TG__SHAPE_MAX_LIVE; ++r)
      if (tp.pf[r] <= points[i] && points[i] <= tp.pl[r]) members[i * TG__SHAPE_MAX_LIVE + c++] = r;
  }
  st = TG_OK;
  uint64_t work = 0;
  for (size_t i = 0; i < k && work < TG__SHAPE_WORK; ++i) {
    for (size_t j = 0; j < k && work < TG__SHAPE_WORK; ++j) {
      size_t p = points[i], q = points[j];
      if (p >= q) continue;
      /* A: live at p (volume live[p]); B: live at q but not at p. Sums fit: the naive sum
       * does (tg_bounds_compute checked). */
      size_t na = nlive[p], nb = 0;
      const size_t *ma = members + i * TG__SHAPE_MAX_LIVE, *mq = members + j * TG__SHAPE_MAX_LIVE;
      uint64_t sum = live[p];
      for (size_t x = 0; x < nlive[q]; ++x) {
        size_t r = mq[x];
        if (tp.pf[r] <= p && p <= tp.pl[r]) continue;
        bset[nb++] = r;
        sum += volumes[r];
      }
      if (sum > (uint64_t)TG__SHAPE_MAX_COST) continue;
      if (sum <= best || nb == 0) continue; /* cannot beat the bound so far */
      size_t m = na > nb ? na : nb;
      int64_t *w = wk.w;
      for (size_t x = 0; x < m * m; ++x) w[x] = 0;
      for (size_t x = 0; x < na; ++x) {
        const tg_usage_record *ra = &records[ma[x]];
        for (size_t y = 0; y < nb; ++y) {
          const tg_usage_record *rb = &records[bset[y]];
          if (ra->first_task <= rb->last_task && rb->first_task <= ra->last_task) continue;
          uint64_t mv = merged_volume(ra, rb), pair = volumes[ma[x]] + volumes[bset[y]];
          if (mv != 0 && mv < pair) w[x * m + y] = (int64_t)(pair - mv);
        }
      }
      work += (uint64_t)m * m * m;
      int64_t saving = max_weight_matching(wk.w, m, TG__SHAPE_MAX_COST, wk.is, wk.zs);
      uint64_t bound = sum - (uint64_t)saving;
      if (bound > best) best = bound;
    }
  }
  *out = best;
done:
  tg__task_points_free(&in, &tp);
  tg__free(alloc, volumes);
  tg__free(alloc, mem);
  if (st != TG_OK) *out = 0;
  return st;
}
