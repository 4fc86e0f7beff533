/* EQUALITY: a record reuses only an object of exactly its extent that is free at its first
 * task. Records are visited by (first_task, index).
 *
 * 1D follows TFLite's hash variant (EqualityAssignmentWithHash): objects are released in
 * (last_task, object id) order onto a per-size stack, and the most recently released object of
 * the record's size is taken. 2D/3D follow TFLite's plain variant (EqualityAssignment): the
 * first object, in creation order, of the same extent whose last user ended before the record's
 * first task. With a may-share relation, objects the relation rules out are passed over. */
#include "planner/strategies/objects_common.h"

typedef struct eq_work {
  uint32_t *order, *tmp, *object_of, *class_of;
  uint64_t *class_volume; /* 1D */
  uint32_t *top, *below, *obj_class; /* 1D: per class / per object */
  uint64_t *heap;                     /* 1D: objects in use, last_task << 32 | id */
  uint32_t *base, *made, *slot_obj;   /* 2D/3D: per class / per slot */
} eq_work;

static void eq_layout(tg__arena *ar, size_t n, uint32_t dims, eq_work *w) {
  w->order = tg__arena_take(ar, n, sizeof *w->order);
  w->tmp = tg__arena_take(ar, n, sizeof *w->tmp);
  w->object_of = tg__arena_take(ar, n, sizeof *w->object_of);
  w->class_of = tg__arena_take(ar, n, sizeof *w->class_of);
  if (dims == 1) {
    w->class_volume = tg__arena_take(ar, n, sizeof *w->class_volume);
    w->top = tg__arena_take(ar, n, sizeof *w->top);
    w->below = tg__arena_take(ar, n, sizeof *w->below);
    w->obj_class = tg__arena_take(ar, n, sizeof *w->obj_class);
    w->heap = tg__arena_take(ar, n, sizeof *w->heap);
  } else {
    w->base = tg__arena_take(ar, n + 1, sizeof *w->base);
    w->made = tg__arena_take(ar, n, sizeof *w->made);
    w->slot_obj = tg__arena_take(ar, n, sizeof *w->slot_obj);
  }
}

static tg_status equality_1d(const tg__plan_input *in, eq_work *w, size_t *object_count) {
  const size_t n = in->count;
  tg_status st = TG_OK;
  tg__obj_members mem;
  const int rel = tg__obj_has_relation(in);
  if ((st = tg__obj_members_init(&mem, in)) != TG_OK) return st;
  size_t classes;
  /* order doubles as scratch here; it is filled afterwards. */
  tg__obj_volume_classes(in, w->class_of, w->class_volume, &classes, w->order, w->tmp);
  tg__obj_order_by_first(in, w->order, w->tmp);
  for (size_t c = 0; c < classes; ++c) w->top[c] = TG__NONE;
  size_t objects = 0, in_use = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = w->order[i];
    const tg_usage_record *rec = &in->records[r];
    while (in_use > 0 && (w->heap[0] >> 32) < rec->first_task) {
      uint32_t o = (uint32_t)tg__heap_pop(w->heap, &in_use);
      w->below[o] = w->top[w->obj_class[o]];
      w->top[w->obj_class[o]] = o;
    }
    const uint32_t c = w->class_of[r];
    /* The most recently released object of the class (that the relation allows). */
    uint32_t *link = &w->top[c];
    while (rel && *link != TG__NONE && !tg__obj_may_join(&mem, *link, r))
      link = &w->below[*link];
    uint32_t o = *link;
    if (o != TG__NONE) {
      *link = w->below[o];
    } else {
      o = (uint32_t)objects++;
      w->obj_class[o] = c;
    }
    w->object_of[r] = o;
    if ((st = tg__obj_members_add(&mem, o, r)) != TG_OK) break;
    tg__heap_push(w->heap, &in_use, ((uint64_t)rec->last_task << 32) | o);
  }
  *object_count = objects;
  tg__obj_members_free(&mem);
  return st;
}

/* Extent classes: records sorted by (w, h, d), equal extents numbered alike. */
static size_t extent_classes(const tg__plan_input *in, uint32_t *class_of, uint32_t *idx,
                             uint32_t *tmp) {
  const size_t n = in->count;
  for (size_t r = 0; r < n; ++r) idx[r] = (uint32_t)r;
  const tg_usage_record *r0 = &in->records[0];
  const uint64_t *dim[3] = {&r0->size.d, &r0->size.h, &r0->size.w};
  for (int d = 0; d < 3; ++d) { /* least significant first */
    tg__sort_key k = {dim[d], sizeof *r0, 1, 0};
    tg__sort_idx(idx, tmp, n, &k);
  }
  size_t c = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && !tg__extent_equal(in->records[idx[i]].size, in->records[idx[i - 1]].size)) ++c;
    class_of[idx[i]] = (uint32_t)c;
  }
  return c + 1;
}

static tg_status equality_nd(const tg__plan_input *in, eq_work *w, size_t *object_count) {
  const size_t n = in->count;
  const tg_allocator *a = in->alloc;
  const int rel = tg__obj_has_relation(in);
  tg_status st = TG_OK;
  tg__mintree dealloc = {0, NULL}; /* per slot: last task of the object's latest user */
  tg__obj_members mem;
  memset(&mem, 0, sizeof mem); /* freed below even when set-up stops early */
  size_t classes = extent_classes(in, w->class_of, w->order, w->tmp);
  tg__obj_order_by_first(in, w->order, w->tmp);
  /* A class never has more objects than records, so each class gets that many slots, in
   * creation order: the first free object of a class is the leftmost slot below the task. */
  memset(w->base, 0, (classes + 1) * sizeof *w->base);
  memset(w->made, 0, classes * sizeof *w->made);
  for (size_t r = 0; r < n; ++r) w->base[w->class_of[r] + 1]++;
  for (size_t c = 0; c < classes; ++c) w->base[c + 1] += w->base[c];
  if ((st = tg__mintree_init(&dealloc, n, UINT32_MAX, a)) != TG_OK) goto done;
  if ((st = tg__obj_members_init(&mem, in)) != TG_OK) goto done;
  size_t objects = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = w->order[i];
    const tg_usage_record *rec = &in->records[r];
    const uint32_t c = w->class_of[r];
    const size_t lo = w->base[c], hi = w->base[c] + w->made[c];
    size_t slot = tg__mintree_first_below(&dealloc, lo, hi, rec->first_task);
    while (rel && slot != SIZE_MAX && !tg__obj_may_join(&mem, w->slot_obj[slot], r))
      slot = tg__mintree_first_below(&dealloc, slot + 1, hi, rec->first_task);
    uint32_t o;
    if (slot == SIZE_MAX) {
      slot = w->base[c] + w->made[c]++;
      o = (uint32_t)objects++;
      w->slot_obj[slot] = o;
    } else {
      o = w->slot_obj[slot];
    }
    tg__mintree_set(&dealloc, slot, rec->last_task);
    w->object_of[r] = o;
    if ((st = tg__obj_members_add(&mem, o, r)) != TG_OK) goto done;
  }
  *object_count = objects;
done:
  tg__mintree_free(&dealloc, a);
  tg__obj_members_free(&mem);
  return st;
}

tg_status tg__objects_equality(const tg__plan_input *in, tg_plan **out) {
  *out = NULL;
  tg_status st = tg__obj_check_count(in);
  if (st != TG_OK) return st;
  eq_work w;
  tg__arena ar = {NULL, 0, 0};
  eq_layout(&ar, in->count, in->dims, &w);
  if (ar.overflow) return TG_ERROR_OUT_OF_HOST_MEMORY;
  unsigned char *block = tg__malloc(in->alloc, ar.off);
  if (block == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  ar = (tg__arena){block, 0, 0};
  eq_layout(&ar, in->count, in->dims, &w);
  size_t objects = 0;
  if (in->count > 0)
    st = in->dims == 1 ? equality_1d(in, &w, &objects) : equality_nd(in, &w, &objects);
  if (st == TG_OK) st = tg__obj_emit(in, w.object_of, objects, out);
  tg__free(in->alloc, block);
  return st;
}
