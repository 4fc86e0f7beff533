/* GREEDY_IN_ORDER, offsets mode: a classic coalescing free-list allocator replayed over the
 * records in order of first task (ties by index). Before a record is placed, every placed
 * record whose last task is before its first task is freed, and its block merges with free
 * neighbours. The record then takes a free block chosen by options->fit among the blocks
 * that hold it once its start is aligned (first: the lowest; best: the smallest, the lowest of
 * equals; worst: the largest, the highest of equals), or else goes on top of the arena
 * (starting inside the highest free block when that one reaches the top).
 *
 * Free blocks live in two treaps over one node pool: by address (augmented with the largest
 * block length in each subtree, for first fit and for finding neighbours to merge with) and by
 * (length, address) (for best and worst fit). Every step is O(log n) expected.
 *
 * With a may-share relation, a freed block may still be off limits to the next record, which
 * a free list cannot express; the strategy then places each record, in the same order and with
 * the same fit rule, into a gap among all placed records it conflicts with. Zero-size records
 * occupy nothing and go to offset 0. */
#include "planner/strategies/offsets_common.h"

typedef struct fb_node {
  uint64_t start, end; /* the free block [start, end) */
  uint64_t max_len;    /* address treap: largest length in the subtree */
  uint32_t prio;
  size_t la, ra;       /* address treap children (0 = none) */
  size_t lb, rb;       /* (length, address) treap children */
} fb_node;

typedef struct free_list {
  fb_node *nodes;      /* 1-based; nodes[0] unused */
  size_t *spare;       /* released node indices */
  size_t nspare, next_unused, cap;
  size_t root_a, root_b;
} free_list;

#define N(i) (fl->nodes[(i)])

static uint64_t blen(const free_list *fl, size_t i) { return N(i).end - N(i).start; }

static void pull_a(free_list *fl, size_t t) {
  uint64_t m = blen(fl, t);
  if (N(t).la && N(N(t).la).max_len > m) m = N(N(t).la).max_len;
  if (N(t).ra && N(N(t).ra).max_len > m) m = N(N(t).ra).max_len;
  N(t).max_len = m;
}

/* Address treap: l gets starts < key, r the rest. */
static void split_a(free_list *fl, size_t t, uint64_t key, size_t *l, size_t *r) {
  if (t == 0) {
    *l = *r = 0;
  } else if (N(t).start < key) {
    split_a(fl, N(t).ra, key, &N(t).ra, r);
    pull_a(fl, t);
    *l = t;
  } else {
    split_a(fl, N(t).la, key, l, &N(t).la);
    pull_a(fl, t);
    *r = t;
  }
}

static size_t merge_a(free_list *fl, size_t l, size_t r) {
  if (l == 0) return r;
  if (r == 0) return l;
  if (N(l).prio > N(r).prio) {
    N(l).ra = merge_a(fl, N(l).ra, r);
    pull_a(fl, l);
    return l;
  }
  N(r).la = merge_a(fl, l, N(r).la);
  pull_a(fl, r);
  return r;
}

static int less_b(const free_list *fl, size_t t, uint64_t len, uint64_t start) {
  uint64_t tl = blen(fl, t);
  return tl < len || (tl == len && N(t).start < start);
}

/* (length, address) treap: l gets keys < (len, start), r the rest. */
static void split_b(free_list *fl, size_t t, uint64_t len, uint64_t start, size_t *l, size_t *r) {
  if (t == 0) {
    *l = *r = 0;
  } else if (less_b(fl, t, len, start)) {
    split_b(fl, N(t).rb, len, start, &N(t).rb, r);
    *l = t;
  } else {
    split_b(fl, N(t).lb, len, start, l, &N(t).lb);
    *r = t;
  }
}

static size_t merge_b(free_list *fl, size_t l, size_t r) {
  if (l == 0) return r;
  if (r == 0) return l;
  if (N(l).prio > N(r).prio) {
    N(l).rb = merge_b(fl, N(l).rb, r);
    return l;
  }
  N(r).lb = merge_b(fl, l, N(r).lb);
  return r;
}

/* Deterministic treap priorities: a hash of the node index (no global state). */
static uint32_t node_prio(size_t i) {
  uint64_t z = (uint64_t)i * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (uint32_t)(z ^ (z >> 31));
}

static void fl_add(free_list *fl, uint64_t start, uint64_t end) {
  size_t t = fl->nspare ? fl->spare[--fl->nspare] : fl->next_unused++;
  N(t) = (fb_node){start, end, end - start, node_prio(t), 0, 0, 0, 0};
  size_t l, r;
  split_a(fl, fl->root_a, start, &l, &r);
  fl->root_a = merge_a(fl, merge_a(fl, l, t), r);
  split_b(fl, fl->root_b, end - start, start, &l, &r);
  fl->root_b = merge_b(fl, merge_b(fl, l, t), r);
}

static void fl_remove(free_list *fl, size_t t) {
  uint64_t start = N(t).start, len = blen(fl, t);
  size_t l, m, r;
  split_a(fl, fl->root_a, start, &l, &r);
  split_a(fl, r, start + 1, &m, &r);
  fl->root_a = merge_a(fl, l, r);
  split_b(fl, fl->root_b, len, start, &l, &r);
  split_b(fl, r, len, start + 1, &m, &r);
  fl->root_b = merge_b(fl, l, r);
  fl->spare[fl->nspare++] = t;
}

/* Give [start, end) back, merging with the free blocks that touch it. */
static void fl_free(free_list *fl, uint64_t start, uint64_t end) {
  size_t below = 0, above = 0;
  for (size_t t = fl->root_a; t;) {
    if (N(t).start < start) {
      below = t;
      t = N(t).ra;
    } else {
      if (N(t).start == end) above = t;
      t = N(t).la;
    }
  }
  if (below && N(below).end == start) {
    start = N(below).start;
    fl_remove(fl, below);
  }
  if (above) {
    end = N(above).end;
    fl_remove(fl, above);
  }
  fl_add(fl, start, end);
}

typedef struct fit_query {
  uint64_t size, align;
} fit_query;

static int fits(const free_list *fl, size_t t, const fit_query *q) {
  uint64_t a, e;
  return tg__align_up(N(t).start, q->align, &a) && tg__add_u64(a, q->size, &e) && e <= N(t).end;
}

static size_t first_fit(const free_list *fl, size_t t, const fit_query *q) {
  if (t == 0 || N(t).max_len < q->size) return 0;
  size_t f = first_fit(fl, N(t).la, q);
  if (f) return f;
  if (fits(fl, t, q)) return t;
  return first_fit(fl, N(t).ra, q);
}

static size_t best_fit(const free_list *fl, size_t t, const fit_query *q) {
  if (t == 0) return 0;
  if (blen(fl, t) < q->size) return best_fit(fl, N(t).rb, q);
  size_t f = best_fit(fl, N(t).lb, q);
  if (f) return f;
  if (fits(fl, t, q)) return t;
  return best_fit(fl, N(t).rb, q);
}

static size_t worst_fit(const free_list *fl, size_t t, const fit_query *q) {
  if (t == 0) return 0;
  size_t f = worst_fit(fl, N(t).rb, q);
  if (f) return f;
  if (blen(fl, t) < q->size) return 0; /* everything left of t is no longer */
  if (fits(fl, t, q)) return t;
  return worst_fit(fl, N(t).lb, q);
}

/* Min-heap of placed records by last task. */
typedef struct live_heap {
  uint64_t *key;
  size_t *rec;
  size_t len;
} live_heap;

static void heap_push(live_heap *h, uint64_t key, size_t rec) {
  size_t i = h->len++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (h->key[p] <= key) break;
    h->key[i] = h->key[p];
    h->rec[i] = h->rec[p];
    i = p;
  }
  h->key[i] = key;
  h->rec[i] = rec;
}

static void heap_pop(live_heap *h) {
  uint64_t key = h->key[--h->len];
  size_t rec = h->rec[h->len], i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->len) break;
    if (c + 1 < h->len && h->key[c + 1] < h->key[c]) ++c;
    if (key <= h->key[c]) break;
    h->key[i] = h->key[c];
    h->rec[i] = h->rec[c];
    i = c;
  }
  if (h->len) {
    h->key[i] = key;
    h->rec[i] = rec;
  }
}

static tg_status place_free_list(const tg__plan_input *in, const tg__sort_item *order,
                                 uint64_t *offset_of) {
  size_t n = in->count;
  tg_status st = TG_OK;
  free_list storage = {0};
  free_list *fl = &storage;
  live_heap h = {0};
  /* Each placement splits at most one block into three and each free adds at most one. */
  fl->cap = 2 * n + 4;
  fl->nodes = tg__calloc(in->alloc, fl->cap + 1, sizeof *fl->nodes);
  fl->spare = tg__calloc(in->alloc, fl->cap + 1, sizeof *fl->spare);
  fl->next_unused = 1;
  h.key = tg__calloc(in->alloc, n ? n : 1, sizeof *h.key);
  h.rec = tg__calloc(in->alloc, n ? n : 1, sizeof *h.rec);
  if (fl->nodes == NULL || fl->spare == NULL || h.key == NULL || h.rec == NULL) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  uint64_t top = 0; /* the arena's high-water mark */
  for (size_t i = 0; i < n; ++i) {
    size_t r = order[i].idx;
    while (h.len && h.key[0] < in->records[r].first_task) {
      size_t j = h.rec[0];
      heap_pop(&h);
      fl_free(fl, offset_of[j], offset_of[j] + in->volumes[j]);
    }
    if (in->volumes[r] == 0) {
      offset_of[r] = 0;
      continue;
    }
    fit_query q = {in->volumes[r], tg__record_alignment(in, r)};
    size_t t;
    switch (in->options->fit) {
      case TG_FIT_FIRST: t = first_fit(fl, fl->root_a, &q); break;
      case TG_FIT_WORST: t = worst_fit(fl, fl->root_b, &q); break;
      default: t = best_fit(fl, fl->root_b, &q); break;
    }
    uint64_t off = 0, end;
    if (t) {
      uint64_t s = N(t).start, e = N(t).end;
      (void)tg__align_up(s, q.align, &off); /* fits() checked it */
      end = off + q.size;
      fl_remove(fl, t);
      if (off > s) fl_add(fl, s, off);
      if (end < e) fl_add(fl, end, e);
    } else {
      /* On top. Rightmost free block: if it reaches the top, start inside it. */
      size_t hb = fl->root_a;
      while (hb && N(hb).ra) hb = N(hb).ra;
      uint64_t base = top;
      if (hb && N(hb).end == top) {
        base = N(hb).start;
        fl_remove(fl, hb);
      }
      if (!tg__align_up(base, q.align, &off) || !tg__add_u64(off, q.size, &end)) {
        st = TG_ERROR_OVERFLOW;
        goto done;
      }
      if (off > base) fl_add(fl, base, off); /* alignment padding stays free */
      top = end;
    }
    offset_of[r] = off;
    heap_push(&h, in->records[r].last_task, r);
  }
done:
  tg__free(in->alloc, fl->nodes);
  tg__free(in->alloc, fl->spare);
  tg__free(in->alloc, h.key);
  tg__free(in->alloc, h.rec);
  return st;
}

#undef N

/* The relation-aware variant: same order and fit rule, gaps among every conflicting record. */
static tg_status place_with_relation(const tg__plan_input *in, const tg__sort_item *order,
                                     uint64_t *offset_of) {
  tg__gap_index *ix = NULL;
  tg_status st = tg__gap_index_create(in, &ix);
  if (st != TG_OK) return st;
  for (size_t i = 0; i < in->count; ++i) {
    size_t r = order[i].idx;
    uint64_t off = 0, end;
    if (in->volumes[r] == 0) {
      offset_of[r] = 0;
      continue;
    }
    if ((st = tg__gap_index_find(ix, r, in->options->fit, &off)) != TG_OK) break;
    if (!tg__add_u64(off, in->volumes[r], &end)) {
      st = TG_ERROR_OVERFLOW;
      break;
    }
    offset_of[r] = off;
    tg__gap_index_insert(ix, r, off);
  }
  tg__gap_index_destroy(ix);
  return st;
}

tg_status tg__offsets_greedy_in_order(const tg__plan_input *in, tg_plan **out) {
  size_t n = in->count;
  tg_status st = tg_plan_create(TG_MODE_OFFSETS, in->dims, n, 0, in->alloc, out);
  if (st != TG_OK) return st;
  tg__sort_item *order = tg__calloc(in->alloc, n ? 2 * n : 1, sizeof *order);
  if (order == NULL) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  for (size_t r = 0; r < n; ++r) order[r] = (tg__sort_item){in->records[r].first_task, r};
  tg__sort_items_stable(order, n, order + n);
  st = in->options->relation ? place_with_relation(in, order, (*out)->offset_of)
                             : place_free_list(in, order, (*out)->offset_of);
  if (st == TG_OK) st = tg__plan_finish_offsets(in, *out);
done:
  tg__free(in->alloc, order);
  if (st != TG_OK) {
    tg_plan_destroy(*out);
    *out = NULL;
  }
  return st;
}
