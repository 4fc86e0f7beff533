/* Helpers shared by the objects-mode strategies: scratch layout, stable radix sorts, a heap, a
 * segment tree, per-object member lists (for the may-share relation), occupancy of objects in
 * time, extent arithmetic, and the orderings and placement rule that several strategies share.
 * Internal to the planner. */
#ifndef TANGRAM_PLANNER_OBJECTS_COMMON_H
#define TANGRAM_PLANNER_OBJECTS_COMMON_H

#include "planner/base/base.h"

#define TG__NONE UINT32_MAX

/* Object ids are uint32, so a plan can hold fewer than UINT32_MAX records. */
static inline tg_status tg__obj_check_count(const tg__plan_input *in) {
  return in->count < (size_t)UINT32_MAX ? TG_OK : TG_ERROR_OVERFLOW;
}

static inline int tg__obj_has_relation(const tg__plan_input *in) {
  return in->options->relation != NULL;
}

/* ---- scratch memory --------------------------------------------------------------------- */

/* Strategies lay out all their working arrays in one block: fewer allocations, and memory that
 * the allocator can hand back whole to the next strategy. Call the layout once with base NULL to
 * measure (`off` = bytes needed), allocate, then again with the block to carve it. */
typedef struct tg__arena {
  unsigned char *base;
  size_t off;
  int overflow;
} tg__arena;

static inline void *tg__arena_take(tg__arena *ar, size_t count, size_t size) {
  size_t bytes, off = (ar->off + 15) & ~(size_t)15;
  if (!tg__mul_size(count ? count : 1, size, &bytes) || off + bytes < off) {
    ar->overflow = 1;
    return NULL;
  }
  ar->off = off + bytes;
  return ar->base ? ar->base + off : NULL;
}

/* tg__malloc of count * size bytes; NULL on overflow too. */
static inline void *tg__obj_alloc(const tg_allocator *a, size_t count, size_t size) {
  size_t bytes;
  if (!tg__mul_size(count ? count : 1, size, &bytes)) return NULL;
  return tg__malloc(a, bytes);
}

/* ---- sorting ---------------------------------------------------------------------------- */

/* Where sort keys live: key of element i is the 4- or 8-byte unsigned integer at
 * base + i * stride, complemented when `descending`. */
typedef struct tg__sort_key {
  const void *base;
  size_t stride;
  int wide;       /* 8-byte keys (else 4-byte) */
  int descending;
} tg__sort_key;

/* Stable LSD radix sort of the indices idx[0..n) by their keys (ties keep their order).
 * `tmp` holds n indices. */
void tg__sort_idx(uint32_t *idx, uint32_t *tmp, size_t n, const tg__sort_key *key);

static inline tg__sort_key tg__key_first(const tg__plan_input *in) {
  tg__sort_key k = {&in->records[0].first_task, sizeof(tg_usage_record), 0, 0};
  return k;
}
static inline tg__sort_key tg__key_last(const tg__plan_input *in) {
  tg__sort_key k = {&in->records[0].last_task, sizeof(tg_usage_record), 0, 0};
  return k;
}
static inline tg__sort_key tg__key_u64(const uint64_t *v, int descending) {
  tg__sort_key k = {v, sizeof *v, 1, descending};
  return k;
}
static inline tg__sort_key tg__key_u32(const uint32_t *v, int descending) {
  tg__sort_key k = {v, sizeof *v, 0, descending};
  return k;
}

/* order[0..count) = record indices sorted by (first_task, index). `tmp`: count indices. */
void tg__obj_order_by_first(const tg__plan_input *in, uint32_t *order, uint32_t *tmp);

/* Dense ranks of volumes: class_of[r] in [0, *class_count), equal volumes share a class and
 * classes ascend with volume; class_volume[c] is that volume (count entries). `idx` and `tmp`
 * hold count indices each. */
void tg__obj_volume_classes(const tg__plan_input *in, uint32_t *class_of, uint64_t *class_volume,
                            size_t *class_count, uint32_t *idx, uint32_t *tmp);

/* ---- min-heap of uint64 keys -------------------------------------------------------------- */

void tg__heap_push(uint64_t *heap, size_t *n, uint64_t v);
uint64_t tg__heap_pop(uint64_t *heap, size_t *n);

/* ---- min segment tree over uint32 --------------------------------------------------------- */

typedef struct tg__mintree {
  size_t size; /* leaves, a power of two */
  uint32_t *t; /* 2*size nodes; t[size + i] is leaf i */
} tg__mintree;

/* Nodes needed for n leaves (for callers that provide the storage). */
static inline size_t tg__mintree_nodes(size_t n) {
  size_t size = 1;
  while (size < n) size *= 2;
  return 2 * size;
}
/* Use `storage` (tg__mintree_nodes(n) entries), every leaf `fill`. */
void tg__mintree_setup(tg__mintree *mt, uint32_t *storage, size_t n, uint32_t fill);
tg_status tg__mintree_init(tg__mintree *mt, size_t n, uint32_t fill, const tg_allocator *a);
void tg__mintree_free(tg__mintree *mt, const tg_allocator *a);
void tg__mintree_set(tg__mintree *mt, size_t i, uint32_t v);
/* First (last) index in [lo, hi) whose value is < thr; SIZE_MAX when none. */
size_t tg__mintree_first_below(const tg__mintree *mt, size_t lo, size_t hi, uint32_t thr);
size_t tg__mintree_last_below(const tg__mintree *mt, size_t lo, size_t hi, uint32_t thr);

/* ---- the may-share relation, with windows ------------------------------------------------ */

/* The relation of a plan input and, when it has windows (tg_share_relation.window), each
 * record's window widened to contain its interval: records with disjoint windows may share, so
 * they need no call. */
typedef struct tg__obj_share {
  const tg_share_relation *rel; /* NULL: serial */
  uint64_t *win;                /* per record r: lo at 2r, hi at 2r + 1; NULL without windows */
  const tg_allocator *alloc;
} tg__obj_share;

tg_status tg__obj_share_init(tg__obj_share *s, const tg__plan_input *in);
/* Free; also a no-op on a zeroed or already freed struct. */
void tg__obj_share_free(tg__obj_share *s);
/* May records a != b, whose intervals do not intersect, share memory? */
static inline int tg__obj_share_ok(const tg__obj_share *s, size_t a, size_t b) {
  if (s->rel == NULL) return 1;
  if (s->win != NULL && (s->win[2 * a + 1] < s->win[2 * b] || s->win[2 * b + 1] < s->win[2 * a]))
    return 1;
  return s->rel->may_share(s->rel->user, a, b) != 0;
}

/* ---- per-object member lists --------------------------------------------------------------- */

/* Each object's records, to test the may-share relation against them. By default singly
 * linked lists, and a test scans every member. When the relation is transitive
 * (tg_share_relation.transitive), each object's members are kept in an array sorted by first
 * task (they are disjoint in time, so this is time order), and a test looks only at the
 * members just before and just after the record (found by a search that starts where the
 * object's last one ended, as records tend to arrive near each other in time): members
 * pairwise may share (every member
 * joined after such a test), so by transitivity the record may share with all of them when it
 * may share with those two. The answers are the same as the full scan's.
 *
 * Entries are first task << 32 | record, so a search reads one array and no records. The
 * sorted arrays live in one block taken up front: an array that fills up moves to a block
 * twice its size at the end of the used part (the old one is abandoned). An object of L
 * members has used at most max(8, 4L) entries that way, so 4 entries per record plus 8 per
 * object always suffice, and adding never allocates. */
typedef struct tg__obj_members {
  const tg__plan_input *in;
  tg__obj_share share;
  int active;     /* a relation is given (else tests always pass and adds do nothing) */
  int by_time;    /* transitive: sorted arrays instead of lists */
  uint32_t *head; /* lists: per object (capacity: record count) */
  uint32_t *next; /* lists: per record */
  uint32_t *at;   /* by_time: per object, where its array starts in `pool` */
  uint32_t *len;  /* by_time: per object */
  uint32_t *cap;  /* by_time: per object (0: no array yet) */
  uint32_t *hint; /* by_time: per object, where its last search ended (searches start there) */
  uint64_t *pool; /* by_time: the arrays */
  size_t used;    /* by_time: entries of pool in use */
  size_t count;   /* record count (bounds object ids) */
} tg__obj_members;

/* Set up for in->count records and at most that many objects. With no relation in `in`, no
 * memory is taken and the members stay inactive. */
tg_status tg__obj_members_init(tg__obj_members *m, const tg__plan_input *in);
/* Free; also a no-op on a zeroed or already freed struct. */
void tg__obj_members_free(tg__obj_members *m);
/* Record r joins object `obj` (both below the record count, else TG_ERROR_INTERNAL). */
tg_status tg__obj_members_add(tg__obj_members *m, uint32_t obj, uint32_t r);
/* 1 when record r conflicts (intervals or relation) with no member of `obj` (always 1 when
 * inactive). */
int tg__obj_may_join(tg__obj_members *m, uint32_t obj, size_t r);

/* ---- occupancy ------------------------------------------------------------------------------ */

/* The fallback representation below: each object's records as disjoint intervals sorted by
 * first task, in growable arrays of packed (first << 32 | last); a test is a search. */
typedef struct tg__obj_sched {
  uint64_t **iv;   /* per object */
  uint32_t *len;   /* per object */
  uint32_t *cap;   /* per object */
  uint32_t *hint;  /* per object: where the last search ended (searches start there) */
  size_t objects;  /* objects created */
  size_t capacity; /* entries in iv/len/cap */
} tg__obj_sched;

/* Which task points (see tg__obj_points) each object's records cover: two records intersect in
 * time exactly when their point ranges do (the later first task is a point in both). Kept as
 * one bitset row per object, so a test is a few word operations; when the rows would exceed
 * TG__OCC_BITS_MAX bytes (many objects over many points) it switches to per-object interval
 * schedules. */
#define TG__OCC_BITS_MAX ((size_t)1 << 20)

typedef struct tg__obj_occ {
  const tg__plan_input *in;
  const uint32_t *pf, *pl; /* per record: first and last point spanned */
  size_t words;            /* 64-bit words per object row */
  uint64_t *bits;          /* rows * words */
  size_t rows;
  uint32_t *placed;        /* records added so far, and their objects (for the switch) */
  uint32_t *placed_obj;
  size_t placed_n;
  int use_sched;
  tg__obj_sched sched;
} tg__obj_occ;

tg_status tg__obj_occ_init(tg__obj_occ *oc, const tg__plan_input *in, const uint32_t *pf,
                           const uint32_t *pl, size_t points);
void tg__obj_occ_free(tg__obj_occ *oc);
/* 1 when record r intersects no record of object o. */
int tg__obj_occ_free_for(tg__obj_occ *oc, uint32_t o, uint32_t r);
/* Record r joins object o (which must be free for it); o may be one past the largest id. */
tg_status tg__obj_occ_add(tg__obj_occ *oc, uint32_t o, uint32_t r);

/* ---- extents ------------------------------------------------------------------------------- */

static inline tg_extent tg__extent_max(tg_extent a, tg_extent b) {
  tg_extent e = {a.w > b.w ? a.w : b.w, a.h > b.h ? a.h : b.h, a.d > b.d ? a.d : b.d};
  return e;
}
static inline int tg__extent_covers(tg_extent o, tg_extent t) {
  return o.w >= t.w && o.h >= t.h && o.d >= t.d;
}
static inline int tg__extent_equal(tg_extent a, tg_extent b) {
  return a.w == b.w && a.h == b.h && a.d == b.d;
}
/* Volume, saturating at UINT64_MAX. */
static inline uint64_t tg__extent_volume_sat(tg_extent e) {
  uint64_t v;
  if (!tg__mul_u64(e.w, e.h, &v) || !tg__mul_u64(v, e.d, &v)) return UINT64_MAX;
  return v;
}

/* ---- shared orderings and placement ------------------------------------------------------ */

/* Task points: the distinct first tasks, ascending, in pts[0..return). Record r spans points
 * [pf[r], pl[r]]: pl is the last point not after its last task. Every task's live set is a
 * subset of the live set at the nearest point not after it, so questions about "the widest
 * task" or "the most live records" only need the points. `idx`/`tmp`: count indices each. */
size_t tg__obj_points(const tg__plan_input *in, uint32_t *pf, uint32_t *pl, uint32_t *pts,
                      uint32_t *idx, uint32_t *tmp);

/* TFLite's greedy-by-breadth visiting order: order[0..count) receives the records by (rank of the
 * best-ranked task they are live at, volume desc, index), tasks ranked by breadth desc then task
 * index. Also gives the task points: pf/pl per record and their number. */
tg_status tg__obj_breadth_order(const tg__plan_input *in, uint32_t *order, uint32_t *pf,
                                uint32_t *pl, size_t *points);

/* Multidimensional placement in the given order: each record joins the object it may share
 * with that gains the fewest texels (volume(max(object, record)) - volume(object)), then wastes
 * the fewest (volume of the grown object - volume of the record), then has the lowest id. It
 * makes a new object instead when that object would gain texels and at least as many as the
 * record's own volume (a new object costs no more, and keeps the shapes apart). On sizes (1D)
 * the same order of preference is TFLite's greedy-by-breadth choice: the smallest object at
 * least the size, else the largest smaller one. Sets object_of for every record and
 * *object_count. `pf`/`pl`/`points`: the task points (tg__obj_points). */
tg_status tg__obj_assign_nd(const tg__plan_input *in, const uint32_t *order, const uint32_t *pf,
                            const uint32_t *pl, size_t points, uint32_t *object_of,
                            size_t *object_count);

/* ---- results ------------------------------------------------------------------------------- */

/* Create the plan from a complete object_of array with ids in [0, object_count). */
tg_status tg__obj_emit(const tg__plan_input *in, const uint32_t *object_of, size_t object_count,
                       tg_plan **out);

#endif
