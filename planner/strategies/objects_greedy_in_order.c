/* GREEDY_IN_ORDER: records by (first_task, index); objects whose last user ended before the
 * record's first task are free, released in (last_task, object id) order.
 *
 * 1D is TFLite's GreedyInOrderAssignment: the free pool is ordered by (size, id); the record
 * takes the smallest free object at least its size, unless the largest smaller one is strictly
 * closer in size; the object grows to the record's size. 2D/3D is TFLite's
 * GreedyInOrderAssignmentMultidimensional: the pool is a list in release order, only objects
 * covering the record in every dimension qualify, the smallest element-count difference wins
 * (first of equals), objects never grow. In both, a new object is made when nothing qualifies.
 * With a may-share relation, objects the relation rules out are skipped. */
#include "planner/strategies/objects_common.h"

typedef struct io_work {
  uint32_t *order, *tmp, *object_of;
  uint32_t *class_of, *obj_class; /* 1D */
  uint64_t *class_volume, *pool;  /* 1D: pool keys class << 32 | id */
  tg_extent *obj_size;            /* 2D/3D */
  uint64_t *obj_volume;           /* 2D/3D */
  uint32_t *list;                 /* 2D/3D: the pool in release order */
  uint64_t *heap;                 /* objects in use: last_task << 32 | id */
} io_work;

static void io_layout(tg__arena *ar, size_t n, uint32_t dims, io_work *w) {
  w->order = tg__arena_take(ar, n, sizeof *w->order);
  w->tmp = tg__arena_take(ar, n, sizeof *w->tmp);
  w->object_of = tg__arena_take(ar, n, sizeof *w->object_of);
  w->heap = tg__arena_take(ar, n, sizeof *w->heap);
  if (dims == 1) {
    w->class_of = tg__arena_take(ar, n, sizeof *w->class_of);
    w->obj_class = tg__arena_take(ar, n, sizeof *w->obj_class);
    w->class_volume = tg__arena_take(ar, n, sizeof *w->class_volume);
    w->pool = tg__arena_take(ar, n, sizeof *w->pool);
  } else {
    w->obj_size = tg__arena_take(ar, n, sizeof *w->obj_size);
    w->obj_volume = tg__arena_take(ar, n, sizeof *w->obj_volume);
    w->list = tg__arena_take(ar, n, sizeof *w->list);
  }
}

static tg_status in_order_1d(const tg__plan_input *in, io_work *w, tg__obj_members *mem,
                             size_t *object_count) {
  const size_t n = in->count;
  const int rel = mem->active;
  tg_status st;
  size_t classes;
  tg__obj_volume_classes(in, w->class_of, w->class_volume, &classes, w->order, w->tmp);
  tg__obj_order_by_first(in, w->order, w->tmp);
  uint64_t *pool = w->pool; /* free objects as size class << 32 | object id, kept sorted */
  size_t objects = 0, in_use = 0, pooled = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = w->order[i];
    const tg_usage_record *rec = &in->records[r];
    while (in_use > 0 && (w->heap[0] >> 32) < rec->first_task) {
      uint32_t o = (uint32_t)tg__heap_pop(w->heap, &in_use);
      uint64_t key = ((uint64_t)w->obj_class[o] << 32) | o;
      size_t p = tg__lower_bound_u64(pool, pooled, key);
      memmove(pool + p + 1, pool + p, (pooled - p) * sizeof *pool);
      pool[p] = key;
      ++pooled;
    }
    const uint32_t c = w->class_of[r];
    const uint64_t size = w->class_volume[c];
    const size_t lb = tg__lower_bound_u64(pool, pooled, (uint64_t)c << 32);
    size_t best = SIZE_MAX;
    if (rel) {
      /* The rule below takes the nearer in size of the smallest allowed object at least the
       * size and the largest allowed smaller one, the larger on a tie. So the candidates are
       * tested from both sides in order of size difference (ties: the larger first); the
       * first one the relation allows is the answer, and farther objects need no test. */
      size_t ge = lb, lt = lb; /* next candidates: pool[ge] (>= size), pool[lt - 1] (< size) */
      while (ge < pooled || lt > 0) {
        const int up = ge < pooled &&
                       (lt == 0 || w->class_volume[pool[ge] >> 32] - size <=
                                       size - w->class_volume[pool[lt - 1] >> 32]);
        const size_t k = up ? ge++ : --lt;
        if (tg__obj_may_join(mem, (uint32_t)pool[k], r)) {
          best = k;
          break;
        }
      }
    } else {
      uint64_t diff = 0;
      if (lb < pooled) {
        best = lb;
        diff = w->class_volume[pool[lb] >> 32] - size;
      }
      if (lb > 0 && (best == SIZE_MAX || size - w->class_volume[pool[lb - 1] >> 32] < diff))
        best = lb - 1;
    }
    uint32_t o;
    if (best == SIZE_MAX) {
      o = (uint32_t)objects++;
      w->obj_class[o] = c;
    } else {
      o = (uint32_t)pool[best];
      memmove(pool + best, pool + best + 1, (pooled - best - 1) * sizeof *pool);
      --pooled;
      if (w->obj_class[o] < c) w->obj_class[o] = c;
    }
    w->object_of[r] = o;
    if ((st = tg__obj_members_add(mem, o, r)) != TG_OK) return st;
    tg__heap_push(w->heap, &in_use, ((uint64_t)rec->last_task << 32) | o);
  }
  *object_count = objects;
  return TG_OK;
}

static tg_status in_order_nd(const tg__plan_input *in, io_work *w, tg__obj_members *mem,
                             size_t *object_count) {
  const size_t n = in->count;
  const int rel = mem->active;
  tg_status st;
  tg__obj_order_by_first(in, w->order, w->tmp);
  uint32_t *pool = w->list;
  size_t objects = 0, in_use = 0, pooled = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = w->order[i];
    const tg_usage_record *rec = &in->records[r];
    while (in_use > 0 && (w->heap[0] >> 32) < rec->first_task)
      pool[pooled++] = (uint32_t)tg__heap_pop(w->heap, &in_use);
    size_t best = SIZE_MAX;
    uint64_t best_diff = 0;
    for (size_t k = 0; k < pooled; ++k) {
      const uint32_t o = pool[k];
      if (!tg__extent_covers(w->obj_size[o], rec->size)) continue;
      uint64_t diff = w->obj_volume[o] - in->volumes[r];
      if (best != SIZE_MAX && diff >= best_diff) continue;
      if (rel && !tg__obj_may_join(mem, o, r)) continue;
      best = k;
      best_diff = diff;
    }
    uint32_t o;
    if (best == SIZE_MAX) {
      o = (uint32_t)objects++;
      w->obj_size[o] = rec->size;
      w->obj_volume[o] = in->volumes[r];
    } else {
      o = pool[best];
      memmove(pool + best, pool + best + 1, (pooled - best - 1) * sizeof *pool);
      --pooled;
    }
    w->object_of[r] = o;
    if ((st = tg__obj_members_add(mem, o, r)) != TG_OK) return st;
    tg__heap_push(w->heap, &in_use, ((uint64_t)rec->last_task << 32) | o);
  }
  *object_count = objects;
  return TG_OK;
}

tg_status tg__objects_greedy_in_order(const tg__plan_input *in, tg_plan **out) {
  *out = NULL;
  tg_status st = tg__obj_check_count(in);
  if (st != TG_OK) return st;
  io_work w;
  tg__arena ar = {NULL, 0, 0};
  io_layout(&ar, in->count, in->dims, &w);
  if (ar.overflow) return TG_ERROR_OUT_OF_HOST_MEMORY;
  unsigned char *block = tg__malloc(in->alloc, ar.off);
  if (block == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  ar = (tg__arena){block, 0, 0};
  io_layout(&ar, in->count, in->dims, &w);
  tg__obj_members mem;
  st = tg__obj_members_init(&mem, in);
  size_t objects = 0;
  if (st == TG_OK && in->count > 0)
    st = in->dims == 1 ? in_order_1d(in, &w, &mem, &objects) : in_order_nd(in, &w, &mem, &objects);
  if (st == TG_OK) st = tg__obj_emit(in, w.object_of, objects, out);
  tg__obj_members_free(&mem);
  tg__free(in->alloc, block);
  return st;
}
