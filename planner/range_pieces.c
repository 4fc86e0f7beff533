/* Pieces of a range: which structure holds which sizes (docs/ranges.md, "Pieces"). */
#include <float.h>
#include <stdio.h>

#include "planner/range_internal.h"

double tg__range_ratio(uint64_t total, uint64_t own) {
  if (total == UINT64_MAX) return DBL_MAX;
  if (own == 0) return total == 0 ? 1.0 : DBL_MAX;
  return (double)total / (double)own;
}

void tg__range_dims_text(const tg_size_range *range, uint64_t p, char *buf, size_t size) {
  int64_t d[TG_RANGE_MAX_DIMS] = {0, 0};
  tg_size_range_point(range, p, d);
  if (range->count == 1) snprintf(buf, size, "%lld", (long long)d[0]);
  else snprintf(buf, size, "%lldx%lld", (long long)d[0], (long long)d[1]);
}

typedef struct region_score {
  double worst, sum;
  uint64_t worst_point;
  int usable;
} region_score;

/* Structure c over the rectangle [lo, hi] of the grid. */
static region_score score(const tg__range_grid *g, const uint64_t *totals, size_t c, const uint64_t *own,
                          uint64_t cap, const uint64_t lo[2], const uint64_t hi[2]) {
  region_score s = {0.0, 0.0, lo[0] * g->n1 + lo[1], 1};
  const uint64_t *row = &totals[c * g->points];
  for (uint64_t i = lo[0]; i <= hi[0]; ++i) {
    for (uint64_t j = lo[1]; j <= hi[1]; ++j) {
      uint64_t p = i * g->n1 + j;
      if (row[p] > cap) s.usable = 0;
      double r = tg__range_ratio(row[p], own[p]);
      if (r > s.worst) {
        s.worst = r;
        s.worst_point = p;
      }
      s.sum += r;
    }
  }
  return s;
}

static int better(const region_score *a, const region_score *b) {
  if (a->usable != b->usable) return a->usable;
  if (a->worst != b->worst) return a->worst < b->worst;
  return a->sum < b->sum;
}

/* The structure with the smallest worst ratio over the rectangle (then the smallest sum). */
static size_t best_structure(const tg__range_grid *g, const uint64_t *totals, size_t structures, const uint64_t *own,
                             uint64_t cap, const uint64_t lo[2], const uint64_t hi[2], region_score *out) {
  size_t best = 0;
  region_score bs = score(g, totals, 0, own, cap, lo, hi);
  for (size_t c = 1; c < structures; ++c) {
    region_score s = score(g, totals, c, own, cap, lo, hi);
    if (better(&s, &bs)) {
      bs = s;
      best = c;
    }
  }
  *out = bs;
  return best;
}

typedef struct piece_list {
  tg__range_piece *v;
  size_t count, cap;
} piece_list;

static tg_status push_piece(piece_list *l, const tg__range_grid *g, const uint64_t *totals, size_t structures,
                            const uint64_t *own, uint64_t cap, const uint64_t lo[2], const uint64_t hi[2],
                            const tg_allocator *alloc) {
  if (l->count == l->cap) {
    size_t nc = l->cap ? 2 * l->cap : 8;
    tg__range_piece *nv = tg__realloc(alloc, l->v, l->cap * sizeof *nv, nc * sizeof *nv);
    if (nv == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
    l->v = nv;
    l->cap = nc;
  }
  region_score s;
  tg__range_piece *p = &l->v[l->count++];
  p->structure = (uint32_t)best_structure(g, totals, structures, own, cap, lo, hi, &s);
  p->lo[0] = lo[0];
  p->lo[1] = lo[1];
  p->hi[0] = hi[0];
  p->hi[1] = hi[1];
  p->worst_ratio = s.worst;
  p->worst_point = s.worst_point;
  return TG_OK;
}

static int holds(const uint64_t *totals, size_t c, const tg__range_grid *g, const uint64_t *own, uint64_t cap,
                 double target, uint64_t p) {
  uint64_t t = totals[c * g->points + p];
  return t <= cap && tg__range_ratio(t, own[p]) <= target;
}

/* One dimension: from each first size, the piece reaches as far as some structure holds. */
static tg_status sweep(const tg__range_grid *g, const uint64_t *totals, size_t structures, const uint64_t *own,
                       uint64_t cap, double target, piece_list *l, const tg_allocator *alloc) {
  uint64_t i = 0;
  while (i < g->points) {
    uint64_t reach = i; /* a piece of one size at least, whatever holds */
    for (size_t c = 0; c < structures; ++c) {
      uint64_t j = i;
      while (j < g->points && holds(totals, c, g, own, cap, target, j)) ++j;
      if (j > i && j - 1 > reach) reach = j - 1;
    }
    uint64_t lo[2] = {i, 0}, hi[2] = {reach, 0};
    tg_status st = push_piece(l, g, totals, structures, own, cap, lo, hi, alloc);
    if (st != TG_OK) return st;
    i = reach + 1;
  }
  return TG_OK;
}

/* Two dimensions: a rectangle one structure holds is a piece; others are halved across their
 * longer side (in points), depth first, so pieces come in the order of their first points
 * within each split. */
static tg_status bisect(const tg__range_grid *g, const uint64_t *totals, size_t structures, const uint64_t *own,
                        uint64_t cap, double target, const uint64_t lo[2], const uint64_t hi[2], piece_list *l,
                        const tg_allocator *alloc) {
  region_score s;
  best_structure(g, totals, structures, own, cap, lo, hi, &s);
  uint64_t len0 = hi[0] - lo[0] + 1, len1 = hi[1] - lo[1] + 1;
  if ((s.usable && s.worst <= target) || (len0 == 1 && len1 == 1))
    return push_piece(l, g, totals, structures, own, cap, lo, hi, alloc);
  int axis = len0 >= len1 ? 0 : 1;
  uint64_t mid = lo[axis] + (hi[axis] - lo[axis] + 1) / 2 - 1;
  uint64_t hi_a[2] = {hi[0], hi[1]}, lo_b[2] = {lo[0], lo[1]};
  hi_a[axis] = mid;
  lo_b[axis] = mid + 1;
  tg_status st = bisect(g, totals, structures, own, cap, target, lo, hi_a, l, alloc);
  if (st == TG_OK) st = bisect(g, totals, structures, own, cap, target, lo_b, hi, l, alloc);
  return st;
}

tg_status tg__range_pieces_choose(const tg__range_grid *grid, const uint64_t *totals, size_t structures,
                                  const uint64_t *own, uint64_t cap, double target, const tg_allocator *alloc,
                                  tg__range_piece **pieces, size_t *piece_count) {
  *pieces = NULL;
  *piece_count = 0;
  if (structures == 0 || grid->points == 0) return TG_ERROR_INTERNAL;
  piece_list l = {NULL, 0, 0};
  uint64_t lo[2] = {0, 0}, hi[2] = {grid->n0 - 1, grid->n1 - 1};
  region_score whole;
  best_structure(grid, totals, structures, own, cap, lo, hi, &whole);
  tg_status st;
  if (whole.usable && whole.worst <= target)
    st = push_piece(&l, grid, totals, structures, own, cap, lo, hi, alloc);
  else if (grid->dims == 1)
    st = sweep(grid, totals, structures, own, cap, target, &l, alloc);
  else
    st = bisect(grid, totals, structures, own, cap, target, lo, hi, &l, alloc);
  if (st != TG_OK) {
    tg__free(alloc, l.v);
    return st;
  }
  *pieces = l.v;
  *piece_count = l.count;
  return TG_OK;
}
