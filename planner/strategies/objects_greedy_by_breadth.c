/* GREEDY_BY_BREADTH (TFLite's GreedyByBreadthAssignment): tasks in non-increasing order of
 * breadth (the summed size of the records live at the task; ties by task index), and within a
 * task its live records by non-increasing size (ties by index); each record not yet placed goes
 * to an object none of whose records it intersects: the smallest such object at least its size,
 * else the largest smaller one (lowest id among equals), which grows; a new object when none.
 *
 * Tasks are not enumerated one by one. Only tasks that are some record's first task matter: any
 * other task sees a subset of the records live at the nearest earlier first task, so it is never
 * wider and never earlier. A record is placed at the best-ranked of those tasks it spans (a
 * range minimum). 2D/3D use volumes for breadth and order, and choose objects by texels added,
 * then texels wasted (tg__obj_assign_nd). */
#include "planner/strategies/objects_common.h"

typedef struct br_work {
  uint32_t *idx, *tmp;   /* sort scratch */
  uint32_t *pts;         /* distinct first tasks, ascending */
  uint64_t *lo, *hi;     /* per point: breadth, 128 bits; once ranked, lo holds the record
                            keys and hi a bottom-up minimum tree over point ranks */
} br_work;

static void br_layout(tg__arena *ar, size_t n, br_work *w) {
  w->idx = tg__arena_take(ar, n, sizeof *w->idx);
  w->tmp = tg__arena_take(ar, n, sizeof *w->tmp);
  w->pts = tg__arena_take(ar, n, sizeof *w->pts);
  w->lo = tg__arena_take(ar, n + 1, sizeof *w->lo);
  w->hi = tg__arena_take(ar, n + 1, sizeof *w->hi);
}

tg_status tg__obj_breadth_order(const tg__plan_input *in, uint32_t *order, uint32_t *pf,
                                uint32_t *pl, size_t *points_out) {
  const size_t n = in->count;
  *points_out = 0;
  if (n == 0) return TG_OK;
  br_work w;
  tg__arena ar = {NULL, 0, 0};
  br_layout(&ar, n, &w);
  if (ar.overflow) return TG_ERROR_OUT_OF_HOST_MEMORY;
  unsigned char *block = tg__malloc(in->alloc, ar.off);
  if (block == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  ar = (tg__arena){block, 0, 0};
  br_layout(&ar, n, &w);

  const size_t points = tg__obj_points(in, pf, pl, w.pts, w.idx, w.tmp);
  *points_out = points;
  /* Breadth per point: a 128-bit difference array, then prefix sums. */
  memset(w.lo, 0, (points + 1) * sizeof *w.lo);
  memset(w.hi, 0, (points + 1) * sizeof *w.hi);
  for (size_t r = 0; r < n; ++r) {
    uint64_t v = in->volumes[r];
    uint64_t *l = &w.lo[pf[r]], *h = &w.hi[pf[r]];
    *h += (*l + v) < *l;
    *l += v;
    l = &w.lo[pl[r] + 1];
    h = &w.hi[pl[r] + 1];
    *h -= *l < v;
    *l -= v;
  }
  int wide = w.hi[0] != 0;
  for (size_t p = 1; p < points; ++p) {
    uint64_t l = w.lo[p] + w.lo[p - 1];
    w.hi[p] += w.hi[p - 1] + (l < w.lo[p]);
    w.lo[p] = l;
    wide |= w.hi[p] != 0;
  }
  /* Rank points by (breadth desc, task asc): stable passes on the complemented words. */
  for (size_t p = 0; p < points; ++p) w.idx[p] = (uint32_t)p;
  tg__sort_key k = tg__key_u64(w.lo, 1);
  tg__sort_idx(w.idx, w.tmp, points, &k);
  if (wide) {
    k = tg__key_u64(w.hi, 1);
    tg__sort_idx(w.idx, w.tmp, points, &k);
  }
  uint32_t *t = (uint32_t *)w.hi; /* 2 * points entries */
  for (size_t i = 0; i < points; ++i) t[points + w.idx[i]] = (uint32_t)i;
  for (size_t p = points - 1; p >= 1; --p) t[p] = t[2 * p] < t[2 * p + 1] ? t[2 * p] : t[2 * p + 1];
  /* Record keys: the best rank over the points they span (lo is free again). */
  uint32_t *key = (uint32_t *)w.lo;
  for (size_t r = 0; r < n; ++r) {
    uint32_t m = UINT32_MAX;
    for (size_t l = pf[r] + points, h = pl[r] + 1 + points; l < h; l >>= 1, h >>= 1) {
      if (l & 1) { if (t[l] < m) m = t[l]; ++l; }
      if (h & 1) { --h; if (t[h] < m) m = t[h]; }
    }
    key[r] = m;
  }
  /* Records by (key, volume desc, index). */
  for (size_t r = 0; r < n; ++r) order[r] = (uint32_t)r;
  k = tg__key_u64(in->volumes, 1);
  tg__sort_idx(order, w.tmp, n, &k);
  k = tg__key_u32(key, 0);
  tg__sort_idx(order, w.tmp, n, &k);
  tg__free(in->alloc, block);
  return TG_OK;
}

static int usable(tg__obj_occ *occ, tg__obj_members *mem, uint32_t o, uint32_t r) {
  return tg__obj_occ_free_for(occ, o, r) && tg__obj_may_join(mem, o, r);
}

typedef struct b1_work {
  uint32_t *idx, *tmp, *class_of, *obj_class;
  uint64_t *class_volume, *sorted; /* sorted: objects as class << 32 | id */
} b1_work;

static void b1_layout(tg__arena *ar, size_t n, b1_work *w) {
  w->idx = tg__arena_take(ar, n, sizeof *w->idx);
  w->tmp = tg__arena_take(ar, n, sizeof *w->tmp);
  w->class_of = tg__arena_take(ar, n, sizeof *w->class_of);
  w->obj_class = tg__arena_take(ar, n, sizeof *w->obj_class);
  w->class_volume = tg__arena_take(ar, n, sizeof *w->class_volume);
  w->sorted = tg__arena_take(ar, n, sizeof *w->sorted);
}

static void sorted_insert(uint64_t *sorted, size_t *count, uint64_t key) {
  size_t p = tg__lower_bound_u64(sorted, *count, key);
  memmove(sorted + p + 1, sorted + p, (*count - p) * sizeof *sorted);
  sorted[p] = key;
  ++*count;
}

static tg_status breadth_1d(const tg__plan_input *in, const uint32_t *order, const uint32_t *pf,
                            const uint32_t *pl, size_t points, uint32_t *object_of,
                            size_t *object_count) {
  const size_t n = in->count;
  const tg_allocator *a = in->alloc;
  tg_status st = TG_OK;
  b1_work w;
  tg__arena ar = {NULL, 0, 0};
  b1_layout(&ar, n, &w);
  if (ar.overflow) return TG_ERROR_OUT_OF_HOST_MEMORY;
  unsigned char *block = tg__malloc(a, ar.off);
  if (block == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  ar = (tg__arena){block, 0, 0};
  b1_layout(&ar, n, &w);
  tg__obj_occ occ;
  tg__obj_members mem;
  if ((st = tg__obj_occ_init(&occ, in, pf, pl, points)) != TG_OK) {
    tg__free(a, block);
    return st;
  }
  if ((st = tg__obj_members_init(&mem, in)) != TG_OK) goto done;
  size_t classes, objects = 0;
  tg__obj_volume_classes(in, w.class_of, w.class_volume, &classes, w.idx, w.tmp);
  uint64_t *sorted = w.sorted;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = order[i];
    const uint32_t c = w.class_of[r];
    const size_t lb = tg__lower_bound_u64(sorted, objects, (uint64_t)c << 32);
    size_t pos = SIZE_MAX;
    for (size_t k = lb; k < objects; ++k) {
      if (usable(&occ, &mem, (uint32_t)sorted[k], r)) {
        pos = k;
        break;
      }
    }
    if (pos == SIZE_MAX) {
      /* The largest smaller object; among equal sizes the lowest id, which sits first. */
      for (size_t k = lb; k-- > 0;) {
        if (!usable(&occ, &mem, (uint32_t)sorted[k], r)) continue;
        pos = k;
        while (k-- > 0 && (sorted[k] >> 32) == (sorted[pos] >> 32))
          if (usable(&occ, &mem, (uint32_t)sorted[k], r)) pos = k;
        break;
      }
    }
    uint32_t o;
    if (pos == SIZE_MAX) {
      o = (uint32_t)objects;
      w.obj_class[o] = c;
      sorted_insert(sorted, &objects, ((uint64_t)c << 32) | o);
    } else {
      o = (uint32_t)sorted[pos];
      if (w.obj_class[o] < c) {
        memmove(sorted + pos, sorted + pos + 1, (objects - pos - 1) * sizeof *sorted);
        --objects;
        w.obj_class[o] = c;
        sorted_insert(sorted, &objects, ((uint64_t)c << 32) | o);
      }
    }
    if ((st = tg__obj_occ_add(&occ, o, r)) != TG_OK) goto done;
    if ((st = tg__obj_members_add(&mem, o, r)) != TG_OK) goto done;
    object_of[r] = o;
  }
  *object_count = objects;
done:
  tg__obj_occ_free(&occ);
  tg__obj_members_free(&mem);
  tg__free(a, block);
  return st;
}

tg_status tg__objects_greedy_by_breadth(const tg__plan_input *in, tg_plan **out) {
  *out = NULL;
  tg_status st = tg__obj_check_count(in);
  if (st != TG_OK) return st;
  const size_t n = in->count ? in->count : 1;
  uint32_t *order = tg__obj_alloc(in->alloc, n, 4 * sizeof *order);
  if (order == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  uint32_t *object_of = order + n, *pf = object_of + n, *pl = pf + n;
  size_t objects = 0, points;
  if ((st = tg__obj_breadth_order(in, order, pf, pl, &points)) == TG_OK && in->count > 0) {
    st = in->dims == 1 ? breadth_1d(in, order, pf, pl, points, object_of, &objects)
                       : tg__obj_assign_nd(in, order, pf, pl, points, object_of, &objects);
  }
  if (st == TG_OK) st = tg__obj_emit(in, object_of, objects, out);
  tg__free(in->alloc, order);
  return st;
}
