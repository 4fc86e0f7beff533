/* Structures of plans over a range of sizes: the nodes and their conflicts, a structure drawn
 * from a plan at one size, and a structure's total at any sizes. */
#include <stdlib.h>

#include "planner/range_internal.h"

void tg__range_nodes_free(tg__range_nodes *n, const tg_allocator *alloc) {
  if (n == NULL) return;
  TG__FREE_EACH(alloc, n->rep, n->node_of, n->first, n->last, n->align, n->conf_start, n->conf);
  memset(n, 0, sizeof *n);
}

typedef struct pair_list {
  uint32_t *v; /* pairs: v[2k], v[2k+1] */
  size_t count, cap;
} pair_list;

static int pair_push(pair_list *l, uint32_t a, uint32_t b, const tg_allocator *alloc) {
  if (l->count == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 256;
    size_t bytes;
    if (!tg__mul_size(cap, 2 * sizeof *l->v, &bytes)) return 0;
    uint32_t *nv = tg__realloc(alloc, l->v, l->cap * 2 * sizeof *l->v, bytes);
    if (nv == NULL) return 0;
    l->v = nv;
    l->cap = cap;
  }
  l->v[2 * l->count] = a;
  l->v[2 * l->count + 1] = b;
  l->count++;
  return 1;
}

typedef struct key3 {
  uint64_t a, b;
  uint32_t idx;
} key3;

static int key3_cmp(const void *x, const void *y) {
  const key3 *p = x, *q = y;
  if (p->a != q->a) return p->a < q->a ? -1 : 1;
  if (p->b != q->b) return p->b < q->b ? -1 : 1;
  return p->idx < q->idx ? -1 : (p->idx > q->idx);
}

/* Nodes sorted by (a, b, index) into `order`. */
static tg_status sort_nodes(size_t count, const uint64_t *a, const uint64_t *b, const tg_allocator *alloc,
                            uint32_t *order) {
  key3 *k = tg__calloc(alloc, count ? count : 1, sizeof *k);
  if (k == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t v = 0; v < count; ++v) k[v] = (key3){a[v], b != NULL ? b[v] : 0, (uint32_t)v};
  qsort(k, count, sizeof *k, key3_cmp);
  for (size_t v = 0; v < count; ++v) order[v] = k[v].idx;
  tg__free(alloc, k);
  return TG_OK;
}

static int intervals_meet(const tg__range_nodes *n, size_t u, size_t v) {
  return n->first[u] <= n->last[v] && n->first[v] <= n->last[u];
}

static tg_status build_conflicts(tg__range_nodes *n, const tg_allocator *alloc) {
  pair_list pl = {NULL, 0, 0};
  tg_status st = TG_OK;
  const tg_share_relation *rel = n->relation;
  const size_t count = n->count;
  if (rel == NULL) {
    uint32_t *by_first = tg__calloc(alloc, count ? count : 1, sizeof *by_first);
    uint64_t *key = tg__calloc(alloc, count ? count : 1, sizeof *key);
    if (by_first == NULL || key == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
    for (size_t v = 0; st == TG_OK && v < count; ++v) key[v] = n->first[v];
    if (st == TG_OK) st = sort_nodes(count, key, NULL, alloc, by_first);
    for (size_t i = 0; st == TG_OK && i < count; ++i) {
      uint32_t u = by_first[i];
      for (size_t j = i + 1; j < count && n->first[by_first[j]] <= n->last[u]; ++j)
        if (!pair_push(&pl, u, by_first[j], alloc)) st = TG_ERROR_OUT_OF_HOST_MEMORY;
    }
    tg__free(alloc, by_first);
    tg__free(alloc, key);
  } else {
    uint64_t *wlo = tg__calloc(alloc, count ? count : 1, sizeof *wlo);
    uint64_t *whi = tg__calloc(alloc, count ? count : 1, sizeof *whi);
    if (wlo == NULL || whi == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
    for (size_t v = 0; st == TG_OK && v < count; ++v) {
      wlo[v] = n->first[v];
      whi[v] = n->last[v];
      if (rel->window != NULL) {
        uint64_t lo = 0, hi = 0;
        rel->window(rel->user, v, &lo, &hi);
        if (lo < wlo[v]) wlo[v] = lo;
        if (hi > whi[v]) whi[v] = hi;
      }
    }
    for (size_t u = 0; st == TG_OK && u < count; ++u) {
      for (size_t v = u + 1; st == TG_OK && v < count; ++v) {
        int conflict = intervals_meet(n, u, v);
        if (!conflict && (rel->window == NULL || (wlo[u] <= whi[v] && wlo[v] <= whi[u])))
          conflict = !rel->may_share(rel->user, u, v);
        if (conflict && !pair_push(&pl, (uint32_t)u, (uint32_t)v, alloc)) st = TG_ERROR_OUT_OF_HOST_MEMORY;
      }
    }
    tg__free(alloc, wlo);
    tg__free(alloc, whi);
  }
  if (st == TG_OK) {
    n->conf_start = tg__calloc(alloc, count + 1, sizeof *n->conf_start);
    n->conf = tg__calloc(alloc, pl.count ? 2 * pl.count : 1, sizeof *n->conf);
    if (n->conf_start == NULL || n->conf == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  if (st == TG_OK) {
    for (size_t k = 0; k < pl.count; ++k) {
      n->conf_start[pl.v[2 * k] + 1]++;
      n->conf_start[pl.v[2 * k + 1] + 1]++;
    }
    for (size_t v = 0; v < count; ++v) n->conf_start[v + 1] += n->conf_start[v];
    size_t *fill = tg__calloc(alloc, count ? count : 1, sizeof *fill);
    if (fill == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
    for (size_t v = 0; st == TG_OK && v < count; ++v) fill[v] = n->conf_start[v];
    for (size_t k = 0; st == TG_OK && k < pl.count; ++k) {
      uint32_t a = pl.v[2 * k], b = pl.v[2 * k + 1];
      n->conf[fill[a]++] = b;
      n->conf[fill[b]++] = a;
    }
    tg__free(alloc, fill);
  }
  tg__free(alloc, pl.v);
  return st;
}

tg_status tg__range_nodes_build(const tg_usage_record *at, size_t count, uint32_t dims, const tg_plan_options *options,
                                const size_t *group_of, size_t group_count, const tg_share_relation *relation,
                                const tg_allocator *alloc, tg__range_nodes *out) {
  memset(out, 0, sizeof *out);
  if (group_of == NULL) group_count = count;
  if (count > UINT32_MAX - 1) return TG_ERROR_INVALID_ARGUMENT;
  out->count = group_count;
  out->record_count = count;
  out->dims = dims;
  out->mode = options->mode;
  out->relation = relation;
  size_t m = group_count ? group_count : 1;
  out->rep = tg__calloc(alloc, m, sizeof *out->rep);
  out->node_of = tg__calloc(alloc, count ? count : 1, sizeof *out->node_of);
  out->first = tg__calloc(alloc, m, sizeof *out->first);
  out->last = tg__calloc(alloc, m, sizeof *out->last);
  out->align = tg__calloc(alloc, m, sizeof *out->align);
  if (out->rep == NULL || out->node_of == NULL || out->first == NULL || out->last == NULL || out->align == NULL) {
    tg__range_nodes_free(out, alloc);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  for (size_t v = 0; v < group_count; ++v) {
    out->rep[v] = UINT32_MAX;
    out->first[v] = UINT32_MAX;
    out->align[v] = options->alignment > 1 ? options->alignment : 1;
  }
  for (size_t r = 0; r < count; ++r) {
    size_t v = group_of != NULL ? group_of[r] : r;
    out->node_of[r] = (uint32_t)v;
    if (out->rep[v] == UINT32_MAX) out->rep[v] = (uint32_t)r;
    if (at[r].first_task < out->first[v]) out->first[v] = at[r].first_task;
    if (at[r].last_task > out->last[v]) out->last[v] = at[r].last_task;
    if (at[r].alignment > out->align[v]) out->align[v] = at[r].alignment;
  }
  tg_status st = build_conflicts(out, alloc);
  if (st != TG_OK) tg__range_nodes_free(out, alloc);
  return st;
}

void tg__range_structure_free(tg__range_structure *s, const tg_allocator *alloc) {
  if (s == NULL) return;
  TG__FREE_EACH(alloc, s->order, s->pred_start, s->pred, s->object_of);
  memset(s, 0, sizeof *s);
}

static uint64_t hash_u32s(const uint32_t *v, size_t count) {
  uint64_t h = 0xcbf29ce484222325u;
  for (size_t k = 0; k < count; ++k) {
    h ^= v[k];
    h *= 0x100000001b3u;
  }
  return h;
}

/* Nodes above this count keep every conflict as a predecessor (the reduction's bit sets would
 * take count^2 / 8 bytes). */
#define REDUCE_MAX_NODES 8192u

/* Predecessors of each position of s->order: the conflicting nodes placed earlier, less those
 * implied through another predecessor (a path of two or more steps already holds the node
 * above them, sizes being >= 0 and alignment only raising offsets). */
static tg_status build_preds(const tg__range_nodes *n, tg__range_structure *s, const tg_allocator *alloc) {
  const size_t count = n->count;
  uint32_t *rank = tg__calloc(alloc, count ? count : 1, sizeof *rank);
  s->pred_start = tg__calloc(alloc, count + 1, sizeof *s->pred_start);
  size_t total = n->conf_start[count] / 2;
  s->pred = tg__calloc(alloc, total ? total : 1, sizeof *s->pred);
  if (rank == NULL || s->pred_start == NULL || s->pred == NULL) {
    tg__free(alloc, rank);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  for (size_t k = 0; k < count; ++k) rank[s->order[k]] = (uint32_t)k;
  size_t words = (count + 63) / 64;
  uint64_t *reach = NULL, *below = NULL;
  if (count <= REDUCE_MAX_NODES && count > 0) {
    reach = tg__calloc(alloc, count * words, sizeof *reach);
    below = tg__calloc(alloc, words, sizeof *below);
    if (reach == NULL || below == NULL) {
      tg__free(alloc, reach);
      tg__free(alloc, below);
      tg__free(alloc, rank);
      return TG_ERROR_OUT_OF_HOST_MEMORY;
    }
  }
  size_t at = 0;
  for (size_t k = 0; k < count; ++k) {
    uint32_t v = s->order[k];
    s->pred_start[k] = at;
    size_t begin = at;
    for (size_t e = n->conf_start[v]; e < n->conf_start[v + 1]; ++e)
      if (rank[n->conf[e]] < k) s->pred[at++] = n->conf[e];
    if (reach == NULL) continue;
    /* below: what the predecessors reach; a predecessor in it is implied. */
    memset(below, 0, words * sizeof *below);
    for (size_t e = begin; e < at; ++e) {
      const uint64_t *r = &reach[(size_t)rank[s->pred[e]] * words];
      for (size_t w = 0; w < words; ++w) below[w] |= r[w];
    }
    uint64_t *mine = &reach[k * words];
    for (size_t w = 0; w < words; ++w) mine[w] = below[w];
    size_t keep = begin;
    for (size_t e = begin; e < at; ++e) {
      uint32_t u = rank[s->pred[e]];
      mine[u / 64] |= (uint64_t)1 << (u % 64);
      if (!(below[u / 64] >> (u % 64) & 1u)) s->pred[keep++] = s->pred[e];
    }
    at = keep;
  }
  s->pred_start[count] = at;
  tg__free(alloc, reach);
  tg__free(alloc, below);
  tg__free(alloc, rank);
  return TG_OK;
}

/* Objects: nodes of one object that conflict (a chain whose records the plan put in different
 * objects) go to the first object of the same original object they fit, or a new one; ids are
 * then numbered by first node. */
static tg_status repair_objects(const tg__range_nodes *n, tg__range_structure *s, const tg_allocator *alloc) {
  const size_t count = n->count;
  uint32_t *order = tg__calloc(alloc, count ? count : 1, sizeof *order);
  uint64_t *ka = tg__calloc(alloc, count ? count : 1, sizeof *ka);
  uint64_t *kb = tg__calloc(alloc, count ? count : 1, sizeof *kb);
  uint32_t *fixed = tg__calloc(alloc, count ? count : 1, sizeof *fixed);
  uint32_t *last_of = tg__calloc(alloc, count ? count : 1, sizeof *last_of);   /* per new object */
  uint32_t *origin = tg__calloc(alloc, count ? count : 1, sizeof *origin);     /* per new object */
  uint32_t *next_of = tg__calloc(alloc, count ? count : 1, sizeof *next_of);   /* per new object */
  uint32_t *head = tg__calloc(alloc, count ? count : 1, sizeof *head);         /* per original */
  uint32_t *members = tg__calloc(alloc, count ? count : 1, sizeof *members);   /* linked per new */
  uint32_t *member_head = tg__calloc(alloc, count ? count : 1, sizeof *member_head);
  tg_status st = TG_OK;
  if (order == NULL || ka == NULL || kb == NULL || fixed == NULL || last_of == NULL || origin == NULL ||
      next_of == NULL || head == NULL || members == NULL || member_head == NULL)
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t v = 0; st == TG_OK && v < count; ++v) {
    ka[v] = s->object_of[v];
    kb[v] = n->first[v];
  }
  if (st == TG_OK) st = sort_nodes(count, ka, kb, alloc, order);
  uint32_t objects = 0;
  for (size_t v = 0; st == TG_OK && v < count; ++v) head[v] = UINT32_MAX;
  for (size_t i = 0; st == TG_OK && i < count; ++i) {
    uint32_t v = order[i], o = s->object_of[v];
    uint32_t chosen = UINT32_MAX;
    /* The new objects of original object o, in creation order. */
    for (uint32_t c = head[o]; c != UINT32_MAX && chosen == UINT32_MAX; c = next_of[c]) {
      int ok = n->last[last_of[c]] < n->first[v];
      for (uint32_t m = member_head[c]; ok && n->relation != NULL && m != UINT32_MAX; m = members[m])
        if (!n->relation->may_share(n->relation->user, m, v)) ok = 0;
      if (ok) chosen = c;
    }
    if (chosen == UINT32_MAX) {
      chosen = objects++;
      origin[chosen] = o;
      next_of[chosen] = UINT32_MAX;
      member_head[chosen] = UINT32_MAX;
      if (head[o] == UINT32_MAX) {
        head[o] = chosen;
      } else {
        uint32_t c = head[o];
        while (next_of[c] != UINT32_MAX) c = next_of[c];
        next_of[c] = chosen;
      }
    }
    last_of[chosen] = v;
    members[v] = member_head[chosen];
    member_head[chosen] = v;
    fixed[v] = chosen;
  }
  if (st == TG_OK) {
    /* Number objects by their first node (lowest node id), so equal assignments hash alike. */
    for (uint32_t c = 0; c < objects; ++c) origin[c] = UINT32_MAX;
    uint32_t next = 0;
    for (size_t v = 0; v < count; ++v) {
      uint32_t c = fixed[v];
      if (origin[c] == UINT32_MAX) origin[c] = next++;
      s->object_of[v] = origin[c];
    }
    s->object_count = objects;
  }
  tg__free(alloc, order);
  tg__free(alloc, ka);
  tg__free(alloc, kb);
  tg__free(alloc, fixed);
  tg__free(alloc, last_of);
  tg__free(alloc, origin);
  tg__free(alloc, next_of);
  tg__free(alloc, head);
  tg__free(alloc, members);
  tg__free(alloc, member_head);
  return st;
}

tg_status tg__range_structure_from_plan(const tg__range_nodes *n, const tg_plan *plan, const tg_extent *sizes,
                                        const tg_allocator *alloc, tg__range_structure *out) {
  memset(out, 0, sizeof *out);
  const size_t count = n->count;
  tg_status st = TG_OK;
  if (n->mode == TG_MODE_OFFSETS) {
    out->order = tg__calloc(alloc, count ? count : 1, sizeof *out->order);
    uint64_t *start = tg__calloc(alloc, count ? count : 1, sizeof *start);
    uint64_t *end = tg__calloc(alloc, count ? count : 1, sizeof *end);
    uint64_t *base = tg__calloc(alloc, plan->arena_count > 1 ? plan->arena_count : 1, sizeof *base);
    if (out->order == NULL || start == NULL || end == NULL || base == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
    /* Arenas side by side: one address space in which the plan's order holds. */
    for (size_t k = 1; st == TG_OK && k < plan->arena_count; ++k)
      base[k] = tg__add_sat_u64(base[k - 1], tg_plan_arena_size(plan, k - 1));
    for (size_t v = 0; st == TG_OK && v < count; ++v) {
      uint32_t r = n->rep[v];
      start[v] = tg__add_sat_u64(base[tg_plan_arena_of(plan, r)], plan->offset_of[r]);
      end[v] = tg__add_sat_u64(start[v], sizes[v].w);
    }
    if (st == TG_OK) st = sort_nodes(count, start, end, alloc, out->order);
    tg__free(alloc, start);
    tg__free(alloc, end);
    tg__free(alloc, base);
    if (st == TG_OK) st = build_preds(n, out, alloc);
    if (st == TG_OK) out->hash = hash_u32s(out->order, count);
  } else {
    out->object_of = tg__calloc(alloc, count ? count : 1, sizeof *out->object_of);
    if (out->object_of == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
    for (size_t v = 0; st == TG_OK && v < count; ++v) out->object_of[v] = plan->object_of[n->rep[v]];
    if (st == TG_OK) st = repair_objects(n, out, alloc);
    if (st == TG_OK) out->hash = hash_u32s(out->object_of, count) ^ out->object_count;
  }
  if (st != TG_OK) tg__range_structure_free(out, alloc);
  return st;
}

tg_status tg__range_structure_from_order(const tg__range_nodes *n, const uint32_t *order, const tg_allocator *alloc,
                                         tg__range_structure *out) {
  memset(out, 0, sizeof *out);
  out->order = tg__calloc(alloc, n->count ? n->count : 1, sizeof *out->order);
  if (out->order == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  if (n->count) memcpy(out->order, order, n->count * sizeof *out->order);
  tg_status st = build_preds(n, out, alloc);
  if (st != TG_OK) {
    tg__range_structure_free(out, alloc);
    return st;
  }
  out->hash = hash_u32s(out->order, n->count);
  return TG_OK;
}

uint64_t tg__range_structure_total(const tg__range_nodes *n, const tg__range_structure *s, const tg_extent *sizes,
                                   tg_extent *scratch) {
  const size_t count = n->count;
  uint64_t total = 0;
  if (n->mode == TG_MODE_OFFSETS) {
    for (size_t k = 0; k < count; ++k) {
      uint32_t v = s->order[k];
      uint64_t o = 0;
      for (size_t e = s->pred_start[k]; e < s->pred_start[k + 1]; ++e) {
        uint64_t end = scratch[s->pred[e]].w;
        if (end > o) o = end;
      }
      /* scratch[v].w: the end of node v (its offset + size). */
      uint64_t end;
      if (!tg__align_up(o, n->align[v], &o) || !tg__add_u64(o, sizes[v].w, &end)) return UINT64_MAX;
      scratch[v].w = end;
      if (end > total) total = end;
    }
    return total;
  }
  for (uint32_t k = 0; k < s->object_count; ++k) scratch[k] = (tg_extent){0, 0, 0};
  for (size_t v = 0; v < count; ++v) {
    tg_extent *e = &scratch[s->object_of[v]];
    if (sizes[v].w > e->w) e->w = sizes[v].w;
    if (sizes[v].h > e->h) e->h = sizes[v].h;
    if (sizes[v].d > e->d) e->d = sizes[v].d;
  }
  for (uint32_t k = 0; k < s->object_count; ++k) {
    uint64_t vol;
    if (tg_extent_volume(scratch[k], &vol) != TG_OK || !tg__add_u64(total, vol, &total)) return UINT64_MAX;
  }
  return total;
}
