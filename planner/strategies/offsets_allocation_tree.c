/* ALLOCATION_TREE, offsets mode: PyTorch inductor's memory_plan (_inductor/codegen/
 * memory_planning.py), one pool that can grow. Records go by decreasing size, then decreasing
 * live-range length (ties in input order: Python's sort is stable too), into a tree whose
 * leaves are records (Allocation) and free space (Empty), with two kinds of inner node:
 *
 * - TemporalSplit: children that share its space at different times (no two conflict); its
 *   size is the largest child's;
 * - SpatialSplit: a left and a right TemporalSplit, the right one placed after the left one
 *   (aligned); its size is the aligned left size plus the right size.
 *
 * A record is offered to the root TemporalSplit. A TemporalSplit refuses a record larger than
 * itself unless it may grow (only the root, and the right-hand sides below it, may); it hands
 * the record to the one child it conflicts with, refuses when it conflicts with two or more,
 * and otherwise takes it as a new child: as is when the sizes are equal, beside an Empty of the
 * difference (a new SpatialSplit) when the record is smaller, and when it is larger by growing
 * every existing child by an Empty of the difference. A SpatialSplit offers the record to its
 * left side (which may not grow), then to its right side. When the root refuses, the record
 * goes on top: the new root is a TemporalSplit holding a SpatialSplit of the old root and the
 * record. Offsets follow from the sizes, left before right.
 *
 * Live ranges are half-open [first_task, last_task + 1), PyTorch's form of the inclusive
 * intervals. With a may-share relation, a record also conflicts with a child that holds a
 * record the relation keeps it from (PyTorch knows no relation). Alignment: offsets are
 * multiples of the least common multiple of the plan's and the records' alignments (PyTorch
 * aligns to 64 bytes); TG_ERROR_OVERFLOW when that does not fit 64 bits. Records of size 0
 * occupy nothing and go to offset 0.
 *
 * Each TemporalSplit keeps its children's live ranges as one sorted array of disjoint ranges
 * tagged with the child, so finding the children a record's range meets is a binary search;
 * the offers walk the tree with an explicit stack (trees can be as deep as the records are
 * many). */
#include "planner/strategies/objects_common.h"
#include "planner/strategies/offsets_common.h"

enum { AT_ALLOC, AT_EMPTY, AT_TEMPORAL, AT_SPATIAL };
#define AT_NONE UINT32_MAX

typedef struct at_iv {
  uint64_t b, e;  /* [b, e) */
  uint32_t tag;   /* child position */
} at_iv;

typedef struct at_node {
  uint8_t type;
  uint32_t parent;           /* AT_NONE for the root */
  uint32_t pos;              /* position among the parent's children (temporal parent) */
  uint64_t size;
  uint32_t rec;              /* AT_ALLOC */
  uint32_t left, right;      /* AT_SPATIAL: temporal nodes */
  uint32_t *kids;            /* AT_TEMPORAL */
  uint32_t nkids, capkids;
  at_iv *iv;                 /* AT_TEMPORAL: children's live ranges, sorted, disjoint */
  uint32_t niv, capiv;
  /* With a relation, for the record being offered (stamp): the node holds a blocked record;
   * AT_TEMPORAL: the position of the first child that does, and whether another one does. */
  uint32_t blk_stamp, blk_first;
  uint8_t blk_multi;
} at_node;

typedef struct at_frame {
  uint32_t node;
  uint8_t is_last, stage;
} at_frame;

typedef struct at_tree {
  const tg__plan_input *in;
  const tg_allocator *a;
  at_node *nodes;
  size_t count, cap;
  uint32_t root;
  uint64_t align;
  uint32_t *leaf_of;         /* per record: its Allocation node (AT_NONE until placed) */
  at_frame *stack;
  size_t stack_cap;
  /* With a relation: placed records the current one may not share with (disjoint in time). */
  tg__obj_share share;
  uint32_t *blocked;
  size_t nblocked;
  uint32_t stamp;            /* nonzero: blk_* fields with this stamp are current */
  int failed;                /* out of memory or overflow (status in `st`) */
  tg_status st;
  /* The nodes' child and range arrays come from chunks that never move (an array that grows
   * moves to a new place, its old one is abandoned): a few allocations in all. */
  void **chunks;
  size_t nchunks, capchunks;
  unsigned char *chunk_at;
  size_t chunk_left, chunk_next;
} at_tree;

static void at_fail(at_tree *t, tg_status st) {
  if (!t->failed) t->st = st;
  t->failed = 1;
}

static uint32_t at_new(at_tree *t, uint8_t type, uint64_t size) {
  if (t->count == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 64;
    size_t bytes;
    if (cap >= AT_NONE || !tg__mul_size(cap, sizeof *t->nodes, &bytes)) {
      at_fail(t, TG_ERROR_OUT_OF_HOST_MEMORY);
      return AT_NONE;
    }
    at_node *n = tg__realloc(t->a, t->nodes, t->cap * sizeof *t->nodes, bytes);
    if (n == NULL) {
      at_fail(t, TG_ERROR_OUT_OF_HOST_MEMORY);
      return AT_NONE;
    }
    t->nodes = n;
    t->cap = cap;
  }
  uint32_t id = (uint32_t)t->count++;
  at_node *n = &t->nodes[id];
  memset(n, 0, sizeof *n);
  n->type = type;
  n->size = size;
  n->parent = AT_NONE;
  n->rec = AT_NONE;
  n->left = n->right = AT_NONE;
  return id;
}

/* `bytes` (a multiple of 8) from the chunks. */
static void *at_chunk_take(at_tree *t, size_t bytes) {
  if (bytes > t->chunk_left) {
    size_t size = t->chunk_next > bytes ? t->chunk_next : bytes;
    if (t->nchunks == t->capchunks) {
      size_t cap = t->capchunks ? 2 * t->capchunks : 16;
      void **c = tg__realloc(t->a, t->chunks, t->capchunks * sizeof *c, cap * sizeof *c);
      if (c == NULL) return NULL;
      t->chunks = c;
      t->capchunks = cap;
    }
    unsigned char *block = tg__malloc(t->a, size);
    if (block == NULL) return NULL;
    t->chunks[t->nchunks++] = block;
    t->chunk_at = block;
    t->chunk_left = size;
    if (t->chunk_next < ((size_t)1 << 26)) t->chunk_next *= 2;
  }
  void *p = t->chunk_at;
  t->chunk_at += bytes;
  t->chunk_left -= bytes;
  return p;
}

/* Room for `need` elements in the array *p of capacity *cap (its contents kept). */
static int at_grow(at_tree *t, void **p, uint32_t *cap, uint32_t need, size_t elem) {
  if (need <= *cap) return 1;
  uint64_t c = *cap ? 2 * (uint64_t)*cap : 4;
  while (c < need) c *= 2;
  size_t bytes;
  if (c > UINT32_MAX || !tg__mul_size((size_t)c, elem, &bytes)) {
    at_fail(t, TG_ERROR_OUT_OF_HOST_MEMORY);
    return 0;
  }
  void *q = at_chunk_take(t, (bytes + 7) & ~(size_t)7);
  if (q == NULL) {
    at_fail(t, TG_ERROR_OUT_OF_HOST_MEMORY);
    return 0;
  }
  if (*cap) memcpy(q, *p, (size_t)*cap * elem);
  *p = q;
  *cap = (uint32_t)c;
  return 1;
}

static void at_add_kid(at_tree *t, uint32_t tn, uint32_t kid) {
  at_node *n = &t->nodes[tn];
  void *p = n->kids;
  if (!at_grow(t, &p, &n->capkids, n->nkids + 1, sizeof *n->kids)) return;
  n->kids = p;
  t->nodes[kid].parent = tn;
  t->nodes[kid].pos = n->nkids;
  n->kids[n->nkids++] = kid;
}

/* Index of the first range of `tn` with e > b. */
static uint32_t at_first_after(const at_node *n, uint64_t b) {
  uint32_t lo = 0, hi = n->niv;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (n->iv[mid].e > b) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/* Add [b, e) to child `tag`'s ranges in `tn`, merging with the child's ranges it meets or
 * touches. The range meets no other child's. */
static void at_add_range(at_tree *t, uint32_t tn, uint64_t b, uint64_t e, uint32_t tag) {
  at_node *n = &t->nodes[tn];
  uint32_t lo = n->niv;
  /* First range that ends at or after b (touching counts). */
  {
    uint32_t l = 0, h = n->niv;
    while (l < h) {
      uint32_t mid = l + (h - l) / 2;
      if (n->iv[mid].e >= b) h = mid;
      else l = mid + 1;
    }
    lo = l;
  }
  /* Remove the tag's ranges that meet or touch [b, e), widening it. */
  uint32_t w = lo;
  for (uint32_t i = lo; i < n->niv; ++i) {
    at_iv x = n->iv[i];
    if (x.b > e) { /* past it: keep the rest */
      memmove(&n->iv[w], &n->iv[i], (n->niv - i) * sizeof *n->iv);
      w += n->niv - i;
      break;
    }
    if (x.tag == tag) {
      if (x.b < b) b = x.b;
      if (x.e > e) e = x.e;
      continue;
    }
    n->iv[w++] = x;
  }
  n->niv = w;
  void *p = n->iv;
  if (!at_grow(t, &p, &n->capiv, n->niv + 1, sizeof *n->iv)) return;
  n = &t->nodes[tn];
  n->iv = p;
  /* Insert at the position of b (ranges stay disjoint, so sorted by start). */
  uint32_t at = lo;
  while (at < n->niv && n->iv[at].b < b) ++at;
  memmove(&n->iv[at + 1], &n->iv[at], (n->niv - at) * sizeof *n->iv);
  n->iv[at] = (at_iv){b, e, tag};
  n->niv++;
}

static uint64_t at_aligned(at_tree *t, uint64_t v) {
  uint64_t r;
  if (!tg__align_up(v, t->align, &r)) {
    at_fail(t, TG_ERROR_OVERFLOW);
    return 0;
  }
  return r;
}

static uint64_t at_sum(at_tree *t, uint64_t a, uint64_t b) {
  uint64_t r;
  if (!tg__add_u64(a, b, &r)) {
    at_fail(t, TG_ERROR_OVERFLOW);
    return 0;
  }
  return r;
}

static void at_spatial_size(at_tree *t, uint32_t sp) {
  at_node *n = &t->nodes[sp];
  n->size = at_sum(t, at_aligned(t, t->nodes[n->left].size), t->nodes[n->right].size);
}

/* A TemporalSplit holding one node, with that node's ranges (`ranges`, `nr`) as tag 0. */
static uint32_t at_temporal_of(at_tree *t, uint32_t kid, const at_iv *ranges, uint32_t nr) {
  uint32_t tn = at_new(t, AT_TEMPORAL, 0);
  if (tn == AT_NONE) return AT_NONE;
  at_add_kid(t, tn, kid);
  at_node *n = &t->nodes[tn];
  n->size = t->nodes[kid].size;
  void *p = n->iv;
  if (nr && !at_grow(t, &p, &n->capiv, nr, sizeof *n->iv)) return AT_NONE;
  n = &t->nodes[tn];
  n->iv = p;
  for (uint32_t i = 0; i < nr; ++i) n->iv[i] = (at_iv){ranges[i].b, ranges[i].e, 0};
  n->niv = nr;
  return tn;
}

/* Make `left` and `right` the two children of the spatial node sp and size it. */
static void at_spatial_join(at_tree *t, uint32_t sp, uint32_t left, uint32_t right) {
  t->nodes[sp].left = left;
  t->nodes[sp].right = right;
  t->nodes[left].parent = sp;
  t->nodes[left].pos = 0;
  t->nodes[right].parent = sp;
  t->nodes[right].pos = 1;
  at_spatial_size(t, sp);
}

/* SpatialSplit(Temporal([kid]), Temporal([Empty(extra)])), kid's ranges given. */
static uint32_t at_spatial_with_empty(at_tree *t, uint32_t kid, const at_iv *ranges, uint32_t nr,
                                      uint64_t extra) {
  uint32_t left = at_temporal_of(t, kid, ranges, nr);
  uint32_t empty = at_new(t, AT_EMPTY, extra);
  if (left == AT_NONE || empty == AT_NONE) return AT_NONE;
  uint32_t right = at_temporal_of(t, empty, NULL, 0);
  uint32_t sp = at_new(t, AT_SPATIAL, 0);
  if (right == AT_NONE || sp == AT_NONE) return AT_NONE;
  at_spatial_join(t, sp, left, right);
  return sp;
}

static void at_range_of(const tg__plan_input *in, uint32_t r, uint64_t *b, uint64_t *e) {
  *b = in->records[r].first_task;
  *e = (uint64_t)in->records[r].last_task + 1;
}

/* The children of temporal node `tn` that record r conflicts with: their number (0, 1, or 2
 * for "two or more") and, when one, its position. */
static int at_conflicting(at_tree *t, uint32_t tn, uint32_t r, uint32_t *which) {
  const at_node *n = &t->nodes[tn];
  uint64_t b, e;
  at_range_of(t->in, r, &b, &e);
  int count = 0;
  uint32_t first = AT_NONE;
  for (uint32_t i = at_first_after(n, b); i < n->niv && n->iv[i].b < e; ++i) {
    if (first == AT_NONE) {
      first = n->iv[i].tag;
      count = 1;
    } else if (n->iv[i].tag != first) {
      return 2;
    }
  }
  /* Relation: the children holding a record r may not share with (at_mark_blocked). */
  if (t->stamp != 0 && n->blk_stamp == t->stamp) {
    if (n->blk_multi) return 2;
    if (first == AT_NONE) {
      first = n->blk_first;
      count = 1;
    } else if (n->blk_first != first) {
      return 2;
    }
  }
  *which = first;
  return count;
}

/* Mark, for the record about to be offered, the nodes above each blocked record, and in each
 * TemporalSplit on the way which children hold one: each path stops where an earlier one
 * passed, so this costs the size of the union of the paths. */
static void at_mark_blocked(at_tree *t) {
  if (++t->stamp == 0) { /* wrapped: clear every mark */
    for (size_t i = 0; i < t->count; ++i) t->nodes[i].blk_stamp = 0;
    t->stamp = 1;
  }
  for (size_t k = 0; k < t->nblocked; ++k) {
    uint32_t x = t->leaf_of[t->blocked[k]];
    while (x != AT_NONE) {
      uint32_t up = t->nodes[x].parent;
      if (up == AT_NONE) break;
      at_node *u = &t->nodes[up];
      int seen = u->blk_stamp == t->stamp;
      if (u->type == AT_TEMPORAL) {
        if (!seen) {
          u->blk_first = t->nodes[x].pos;
          u->blk_multi = 0;
        } else if (u->blk_first != t->nodes[x].pos) {
          u->blk_multi = 1;
        }
      }
      if (seen) break;
      u->blk_stamp = t->stamp;
      x = up;
    }
  }
}

/* A new leaf for record r (AT_NONE when it cannot be made), r's own range in *own. */
static uint32_t at_leaf(at_tree *t, uint32_t r, at_iv *own) {
  uint32_t leaf = at_new(t, AT_ALLOC, t->in->volumes[r]);
  if (leaf == AT_NONE) return AT_NONE;
  t->nodes[leaf].rec = r;
  t->leaf_of[r] = leaf;
  uint64_t b, e;
  at_range_of(t->in, r, &b, &e);
  *own = (at_iv){b, e, 0};
  return leaf;
}

/* Record r becomes a child of temporal node tn, which conflicts with none of its children. */
static void at_place(at_tree *t, uint32_t tn, uint32_t r) {
  const uint64_t vol = t->in->volumes[r];
  uint64_t slot = t->nodes[tn].size;
  at_node *n = &t->nodes[tn];
  if (n->nkids == 1 && t->nodes[n->kids[0]].type == AT_EMPTY) n->nkids = 0; /* pop the Empty */
  at_iv own;
  uint32_t leaf = at_leaf(t, r, &own);
  if (leaf == AT_NONE) return;
  if (slot == vol) {
    at_add_kid(t, tn, leaf);
  } else if (slot > vol) {
    uint32_t sp = at_spatial_with_empty(t, leaf, &own, 1, slot - vol);
    if (sp == AT_NONE) return;
    at_add_kid(t, tn, sp);
  } else {
    /* Grow: every child beside an Empty of the difference; the ranges keep their tags. Each
     * child's ranges move into its new left TemporalSplit (one pass over the sorted ranges:
     * collect per child first). */
    n = &t->nodes[tn];
    uint32_t kids = n->nkids, niv = n->niv;
    size_t bytes;
    at_iv *copy = NULL;
    uint32_t *start = NULL;
    if (tg__mul_size(niv ? niv : 1, sizeof *copy, &bytes)) copy = tg__malloc(t->a, bytes);
    start = tg__calloc(t->a, (size_t)kids + 2, sizeof *start);
    if (copy == NULL || start == NULL) {
      tg__free(t->a, copy);
      tg__free(t->a, start);
      at_fail(t, TG_ERROR_OUT_OF_HOST_MEMORY);
      return;
    }
    /* Counting sort of the ranges by tag (stable: each child's stay sorted). */
    for (uint32_t i = 0; i < niv; ++i) start[n->iv[i].tag + 2]++;
    for (uint32_t k = 0; k < kids; ++k) start[k + 2] += start[k + 1];
    for (uint32_t i = 0; i < niv; ++i) copy[start[n->iv[i].tag + 1]++] = n->iv[i];
    for (uint32_t k = 0; k < kids; ++k) {
      uint32_t kid = t->nodes[tn].kids[k];
      uint32_t lo = k ? start[k] : 0, hi = start[k + 1];
      uint32_t sp = at_spatial_with_empty(t, kid, copy + lo, hi - lo, vol - slot);
      if (sp == AT_NONE) break;
      t->nodes[tn].kids[k] = sp;
      t->nodes[sp].parent = tn;
      t->nodes[sp].pos = k;
    }
    tg__free(t->a, copy);
    tg__free(t->a, start);
    if (t->failed) return;
    at_add_kid(t, tn, leaf);
  }
  if (t->failed) return;
  n = &t->nodes[tn];
  at_add_range(t, tn, own.b, own.e, n->nkids - 1);
  /* The size: the largest child. Sizes only grow, so the new child (or, after a grow, which
   * changed every child, all of them) decides. */
  n = &t->nodes[tn];
  if (slot < vol) {
    uint64_t size = 0;
    for (uint32_t k = 0; k < n->nkids; ++k)
      if (t->nodes[n->kids[k]].size > size) size = t->nodes[n->kids[k]].size;
    n->size = size;
  } else if (t->nodes[n->kids[n->nkids - 1]].size > slot) {
    n->size = t->nodes[n->kids[n->nkids - 1]].size;
  } else {
    n->size = slot;
  }
}

static int at_push(at_tree *t, size_t *top, uint32_t node, uint8_t is_last) {
  if (*top == t->stack_cap) {
    size_t cap = t->stack_cap ? 2 * t->stack_cap : 64, bytes;
    if (!tg__mul_size(cap, sizeof *t->stack, &bytes)) {
      at_fail(t, TG_ERROR_OUT_OF_HOST_MEMORY);
      return 0;
    }
    at_frame *s = tg__realloc(t->a, t->stack, t->stack_cap * sizeof *t->stack, bytes);
    if (s == NULL) {
      at_fail(t, TG_ERROR_OUT_OF_HOST_MEMORY);
      return 0;
    }
    t->stack = s;
    t->stack_cap = cap;
  }
  t->stack[(*top)++] = (at_frame){node, is_last, 0};
  return 1;
}

/* Offer record r to the root (which may grow). 1 when placed. */
static int at_offer(at_tree *t, uint32_t r) {
  const uint64_t vol = t->in->volumes[r];
  size_t top = 0;
  if (!at_push(t, &top, t->root, 1)) return 0;
  while (top > 0) {
    at_frame *f = &t->stack[top - 1];
    const at_node *n = &t->nodes[f->node];
    if (n->type == AT_TEMPORAL) {
      if (f->stage == 1) { /* the child refused */
        --top;
        continue;
      }
      uint32_t which = AT_NONE;
      int c = (!f->is_last && vol > n->size) ? 2 : at_conflicting(t, f->node, r, &which);
      if (c >= 2) {
        --top;
        continue;
      }
      if (c == 1) {
        f->stage = 1;
        uint8_t last = f->is_last;
        if (!at_push(t, &top, n->kids[which], last)) return 0;
        continue;
      }
      /* Placed here: update the ancestors on the stack, deepest first. */
      at_place(t, f->node, r);
      if (t->failed) return 0;
      uint64_t b, e;
      at_range_of(t->in, r, &b, &e);
      for (size_t i = top - 1; i-- > 0;) {
        uint32_t anc = t->stack[i].node, below = t->stack[i + 1].node;
        if (t->nodes[anc].type == AT_TEMPORAL) {
          at_add_range(t, anc, b, e, t->nodes[below].pos);
          if (t->nodes[below].size > t->nodes[anc].size) t->nodes[anc].size = t->nodes[below].size;
        } else {
          at_spatial_size(t, anc);
        }
        if (t->failed) return 0;
      }
      return 1;
    }
    if (n->type == AT_SPATIAL) {
      if (f->stage == 0) {
        f->stage = 1;
        if (!at_push(t, &top, n->left, 0)) return 0;
      } else if (f->stage == 1) {
        f->stage = 2;
        uint8_t last = f->is_last;
        if (!at_push(t, &top, n->right, last)) return 0;
      } else {
        --top;
      }
      continue;
    }
    --top; /* a leaf takes nothing */
  }
  return 0;
}

/* The root refused r: root := Temporal([Spatial(root, Temporal([r]))]). */
static void at_on_top(at_tree *t, uint32_t r) {
  at_iv own;
  uint32_t leaf = at_leaf(t, r, &own);
  if (leaf == AT_NONE) return;
  uint32_t right = at_temporal_of(t, leaf, &own, 1);
  uint32_t sp = at_new(t, AT_SPATIAL, 0);
  uint32_t nr = at_new(t, AT_TEMPORAL, 0);
  if (right == AT_NONE || sp == AT_NONE || nr == AT_NONE) return;
  uint32_t old = t->root;
  at_spatial_join(t, sp, old, right);
  at_add_kid(t, nr, sp);
  if (t->failed) return;
  /* The new root's ranges: the old root's (one child now) and r's. */
  const at_node *o = &t->nodes[old];
  at_node *n = &t->nodes[nr];
  void *p = n->iv;
  if (!at_grow(t, &p, &n->capiv, o->niv ? o->niv : 1, sizeof *n->iv)) return;
  n = &t->nodes[nr];
  o = &t->nodes[old];
  n->iv = p;
  for (uint32_t i = 0; i < o->niv; ++i) {
    at_iv x = {o->iv[i].b, o->iv[i].e, 0};
    if (n->niv && n->iv[n->niv - 1].e >= x.b) {
      if (x.e > n->iv[n->niv - 1].e) n->iv[n->niv - 1].e = x.e;
    } else {
      n->iv[n->niv++] = x;
    }
  }
  at_add_range(t, nr, own.b, own.e, 0);
  t->nodes[nr].size = t->nodes[sp].size;
  t->root = nr;
}

/* Offsets: left before right, children of a TemporalSplit together. */
static void at_finalize(at_tree *t, uint64_t *offset_of) {
  /* Reuse the stack: node + offset pairs in a separate array. */
  size_t cap = t->count ? t->count : 1, top = 0;
  uint64_t *offs = tg__alloc_array(t->a, cap, sizeof *offs);
  uint32_t *nodes = tg__alloc_array(t->a, cap, sizeof *nodes);
  if (offs == NULL || nodes == NULL) {
    tg__free(t->a, offs);
    tg__free(t->a, nodes);
    at_fail(t, TG_ERROR_OUT_OF_HOST_MEMORY);
    return;
  }
  nodes[top] = t->root;
  offs[top++] = 0;
  while (top > 0) {
    --top;
    uint32_t x = nodes[top];
    uint64_t off = offs[top];
    const at_node *n = &t->nodes[x];
    if (n->type == AT_ALLOC) {
      offset_of[n->rec] = off;
    } else if (n->type == AT_TEMPORAL) {
      for (uint32_t k = 0; k < n->nkids; ++k) {
        nodes[top] = n->kids[k];
        offs[top++] = off;
      }
    } else if (n->type == AT_SPATIAL) {
      nodes[top] = n->left;
      offs[top++] = off;
      nodes[top] = n->right;
      offs[top++] = at_sum(t, off, at_aligned(t, t->nodes[n->left].size));
    }
  }
  tg__free(t->a, offs);
  tg__free(t->a, nodes);
}

static uint64_t gcd_u64(uint64_t a, uint64_t b) {
  while (b) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

tg_status tg__offsets_allocation_tree(const tg__plan_input *in, tg_plan **out) {
  tg_status st = tg_plan_create(TG_MODE_OFFSETS, in->dims, in->count, 0, in->alloc, out);
  if (st != TG_OK) return st;
  const size_t n = in->count;
  if ((uint64_t)n >= AT_NONE / 8) {
    tg_plan_destroy(*out);
    *out = NULL;
    return TG_ERROR_UNSUPPORTED;
  }
  at_tree t = {.in = in, .a = in->alloc, .root = AT_NONE, .align = 1, .chunk_next = 4096 + 64 * n};
  for (size_t r = 0; r < n && st == TG_OK; ++r) {
    if (in->volumes[r] == 0) continue;
    uint64_t a = tg__record_alignment(in, r), l = 0;
    if (!tg__mul_u64(t.align / gcd_u64(t.align, a), a, &l)) st = TG_ERROR_OVERFLOW;
    else t.align = l;
  }
  tg__sort_item *items = tg__alloc_array(in->alloc, n ? 2 * n : 1, sizeof *items);
  t.leaf_of = tg__alloc_array(in->alloc, n ? n : 1, sizeof *t.leaf_of);
  if (st == TG_OK && (items == NULL || t.leaf_of == NULL)) st = TG_ERROR_OUT_OF_HOST_MEMORY;
  if (st == TG_OK) st = tg__obj_share_init(&t.share, in);
  if (st == TG_OK && in->options->relation != NULL) {
    t.blocked = tg__alloc_array(in->alloc, n ? n : 1, sizeof *t.blocked);
    if (t.blocked == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  size_t placed = 0;
  if (st == TG_OK) {
    /* Decreasing size, then decreasing live-range length: two stable passes. */
    for (size_t r = 0; r < n; ++r) {
      const tg_usage_record *rec = &in->records[r];
      items[r] = (tg__sort_item){UINT64_MAX - ((uint64_t)rec->last_task - rec->first_task), r};
      t.leaf_of[r] = AT_NONE;
    }
    tg__sort_items_stable(items, n, items + n);
    for (size_t i = 0; i < n; ++i) items[i].key = UINT64_MAX - in->volumes[items[i].idx];
    tg__sort_items_stable(items, n, items + n);
    for (size_t i = 0; i < n && !t.failed; ++i) {
      uint32_t r = (uint32_t)items[i].idx;
      if (in->volumes[r] == 0) continue;
      if (t.blocked != NULL) { /* the relation: placed records r may not share with */
        t.nblocked = 0;
        const tg_usage_record *rr = &in->records[r];
        for (size_t k = 0; k < placed; ++k) {
          uint32_t p = (uint32_t)items[k].idx;
          const tg_usage_record *rp = &in->records[p];
          if (in->volumes[p] == 0 ||
              (rp->first_task <= rr->last_task && rr->first_task <= rp->last_task))
            continue;
          if (!tg__obj_share_ok(&t.share, p, r)) t.blocked[t.nblocked++] = p;
        }
        at_mark_blocked(&t);
      }
      if (t.root == AT_NONE) {
        uint32_t leaf = at_new(&t, AT_ALLOC, in->volumes[r]);
        if (leaf == AT_NONE) break;
        t.nodes[leaf].rec = r;
        t.leaf_of[r] = leaf;
        uint64_t b, e;
        at_range_of(in, r, &b, &e);
        at_iv own = {b, e, 0};
        t.root = at_temporal_of(&t, leaf, &own, 1);
      } else if (!at_offer(&t, r) && !t.failed) {
        at_on_top(&t, r);
      }
      placed = i + 1;
    }
    if (t.failed) st = t.st;
  }
  if (st == TG_OK) {
    memset((*out)->offset_of, 0, n * sizeof *(*out)->offset_of);
    if (t.root != AT_NONE) at_finalize(&t, (*out)->offset_of);
    if (t.failed) st = t.st;
  }
  if (st == TG_OK) st = tg__plan_finish_offsets(in, *out);
  for (size_t i = 0; i < t.nchunks; ++i) tg__free(in->alloc, t.chunks[i]);
  tg__free(in->alloc, t.chunks);
  tg__free(in->alloc, t.nodes);
  tg__free(in->alloc, t.stack);
  tg__free(in->alloc, t.leaf_of);
  tg__free(in->alloc, t.blocked);
  tg__obj_share_free(&t.share);
  tg__free(in->alloc, items);
  if (st != TG_OK) {
    tg_plan_destroy(*out);
    *out = NULL;
  }
  return st;
}
