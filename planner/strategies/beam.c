/* BEAM, both modes: the beam search of seed 000 (docs/strategies.md). Records are taken in
 * order of first task (ties by index); the search keeps up to K = options->beam_width states
 * (partial plans). At each step every kept state offers every placement of the next record,
 * and the K best of all those successors are kept: by the plan's current total (offsets: the
 * highest end so far, the article's peak; objects: the sum of the object sizes so far), then
 * by the space the placement leaves unused around the record (best fit), then by the rank of
 * the parent state, then by offset or object id. K = 1 is the greedy. At the end the kept
 * state with the smallest total is the plan.
 *
 * Offsets: the placements of a record are each free block between the placed records it
 * conflicts with that holds it (at the block's start, aligned), and the top (above them all);
 * a placement's unused space is what it leaves of its block, the top's block ending at the
 * current total. K = 1 is then Tangram's greedy-in-order with best fit (serial, unaligned).
 * Records of size 0 occupy nothing and go to offset 0.
 * Objects: the placements are each existing object the record may join (no member conflicts
 * with it) and a new object; the unused space is the grown object's volume minus the record's.
 * So K = 1 takes the smallest free object that holds the record, else grows the free object
 * that grows least (on 1D records the largest), else makes a new one (TFLite's greedy-in-order
 * differs: it grows a smaller object when that one is closer in size).
 *
 * Two successors that reach the same state (the same records live at the same offsets, or the
 * same objects with the same extents and users, and the same total) count once: the better
 * ranked one is kept, so the K states are distinct (compared by a 64-bit hash of the state).
 * With a may-share relation, records placed earlier that the relation keeps from the new one
 * are avoided too; their placement in each state is read back from the search history.
 *
 * Cost: O(n * K * (L + log n)) for L records live at once (offsets) or objects (objects mode),
 * memory O(n * K) for the history. With an explicit time limit (in->deadline_us), a search
 * that reaches the deadline goes on with the best state alone (K = 1). */
#include "planner/strategies/objects_common.h"
#include "planner/strategies/offsets_common.h"

typedef struct bm_cand {
  uint64_t total; /* the successor's total */
  uint64_t waste; /* unused space of the placement */
  uint64_t value; /* offset, or object id */
  uint64_t hash;  /* of the successor state */
  uint32_t parent;
} bm_cand;

static int bm_less(const bm_cand *a, const bm_cand *b) {
  if (a->total != b->total) return a->total < b->total;
  if (a->waste != b->waste) return a->waste < b->waste;
  if (a->parent != b->parent) return a->parent < b->parent;
  return a->value < b->value;
}

/* The K best successors of a step, distinct by hash, sorted. */
typedef struct bm_top {
  bm_cand *c;
  size_t n, k;
} bm_top;

/* Could a candidate of these keys enter the list? (Checked before its hash is computed.) */
static int bm_may_enter(const bm_top *t, const bm_cand *c) {
  return t->n < t->k || bm_less(c, &t->c[t->n - 1]);
}

/* Would every candidate of a state whose total is `total` rank below the list's worst? States
 * come in rank order, so then those after it would too. */
static int bm_state_out(const bm_top *t, uint64_t total) {
  return t->n == t->k && total > t->c[t->n - 1].total;
}

static void bm_offer(bm_top *t, const bm_cand *c) {
  if (t->n == t->k && !bm_less(c, &t->c[t->n - 1])) return;
  for (size_t i = 0; i < t->n; ++i) {
    if (t->c[i].hash != c->hash) continue;
    if (!bm_less(c, &t->c[i])) return; /* the same state, ranked better already */
    memmove(&t->c[i], &t->c[i + 1], (t->n - i - 1) * sizeof *t->c);
    t->n--;
    break;
  }
  if (t->n == t->k) t->n--;
  size_t at = t->n;
  while (at > 0 && bm_less(c, &t->c[at - 1])) {
    t->c[at] = t->c[at - 1];
    --at;
  }
  t->c[at] = *c;
  t->n++;
}

static inline uint64_t bm_mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  x ^= x >> 33;
  return x;
}

static inline uint64_t bm_mix2(uint64_t a, uint64_t b) {
  return bm_mix(a * 0x9E3779B97F4A7C15ull ^ bm_mix(b + 0x632BE59BD9B4E019ull));
}

static inline uint64_t bm_total_hash(uint64_t total) { return bm_mix(total ^ 0xA0761D6478BD642Full); }

/* What both modes share: the order, the history of kept states, the relation. */
typedef struct bm_common {
  const tg__plan_input *in;
  size_t k;          /* beam width */
  size_t m;          /* records in the order */
  uint32_t *order;   /* records by (first_task, index) */
  uint32_t *par;     /* history: m * k parent slots */
  uint64_t *val;     /* history: m * k values */
  bm_top top;
  /* The relation: records placed before that the current one may not share with, newest
   * first, as (step, record), and their values in one state. */
  tg__obj_share share;
  uint32_t *blocked_step;
  uint64_t *blocked_val;
  size_t nblocked;
} bm_common;

/* The next layer's per-state counts, totals and hashes become the current layer's. */
static void bm_swap_layers(size_t **cur_n, size_t **next_n, uint64_t **cur_total, uint64_t **next_total,
                           uint64_t **cur_hash, uint64_t **next_hash) {
  size_t *tn = *cur_n;
  *cur_n = *next_n;
  *next_n = tn;
  uint64_t *tt = *cur_total;
  *cur_total = *next_total;
  *next_total = tt;
  tt = *cur_hash;
  *cur_hash = *next_hash;
  *next_hash = tt;
}

static tg_status bm_common_init(bm_common *c, const tg__plan_input *in, int skip_empty) {
  memset(c, 0, sizeof *c);
  c->in = in;
  c->k = in->options->beam_width ? in->options->beam_width : TG_DEFAULT_BEAM_WIDTH;
  const size_t n = in->count;
  c->order = tg__obj_alloc(in->alloc, n, sizeof *c->order);
  uint32_t *tmp = tg__obj_alloc(in->alloc, n, sizeof *tmp);
  if (c->order == NULL || tmp == NULL) {
    tg__free(in->alloc, tmp);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  if (n > 0) tg__obj_order_by_first(in, c->order, tmp);
  tg__free(in->alloc, tmp);
  for (size_t i = 0; i < n; ++i)
    if (!skip_empty || in->volumes[c->order[i]] > 0) c->order[c->m++] = c->order[i];
  size_t cells;
  if (!tg__mul_size(c->m ? c->m : 1, c->k, &cells)) return TG_ERROR_OUT_OF_HOST_MEMORY;
  c->par = tg__obj_alloc(in->alloc, cells, sizeof *c->par);
  c->val = tg__obj_alloc(in->alloc, cells, sizeof *c->val);
  c->top.c = tg__obj_alloc(in->alloc, c->k, sizeof *c->top.c);
  c->top.k = c->k;
  if (c->par == NULL || c->val == NULL || c->top.c == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  tg_status st = tg__obj_share_init(&c->share, in);
  if (st != TG_OK) return st;
  if (in->options->relation != NULL) {
    c->blocked_step = tg__obj_alloc(in->alloc, n, sizeof *c->blocked_step);
    c->blocked_val = tg__obj_alloc(in->alloc, n, sizeof *c->blocked_val);
    if (c->blocked_step == NULL || c->blocked_val == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  return TG_OK;
}

static void bm_common_free(bm_common *c) {
  const tg_allocator *a = c->in->alloc;
  tg__free(a, c->order);
  tg__free(a, c->par);
  tg__free(a, c->val);
  tg__free(a, c->top.c);
  tg__free(a, c->blocked_step);
  tg__free(a, c->blocked_val);
  tg__obj_share_free(&c->share);
}

static int bm_meet(const tg_usage_record *a, const tg_usage_record *b) {
  return a->first_task <= b->last_task && b->first_task <= a->last_task;
}

/* The records placed before step i (all of the order's first i) that the relation keeps
 * from record order[i] although their intervals are disjoint. */
static void bm_find_blocked(bm_common *c, size_t i) {
  c->nblocked = 0;
  if (c->blocked_step == NULL) return;
  const uint32_t r = c->order[i];
  const tg_usage_record *rr = &c->in->records[r];
  for (size_t s = i; s-- > 0;) {
    uint32_t p = c->order[s];
    if (bm_meet(&c->in->records[p], rr)) continue;
    if (!tg__obj_share_ok(&c->share, p, r)) c->blocked_step[c->nblocked++] = (uint32_t)s;
  }
}

/* The blocked records' values in state `slot` after step i - 1. */
static void bm_blocked_values(bm_common *c, size_t i, uint32_t slot) {
  size_t t = i - 1;
  for (size_t b = 0; b < c->nblocked; ++b) {
    size_t s = c->blocked_step[b];
    while (t > s) {
      slot = c->par[t * c->k + slot];
      --t;
    }
    c->blocked_val[b] = c->val[s * c->k + slot];
  }
}

/* Slot 0's values at every step, back from step m - 1. */
static void bm_backtrack(const bm_common *c, uint64_t *value_of) {
  uint32_t slot = 0;
  for (size_t i = c->m; i-- > 0;) {
    value_of[c->order[i]] = c->val[i * c->k + slot];
    slot = c->par[i * c->k + slot];
  }
}

static int bm_past_deadline(const tg__plan_input *in, size_t i) {
  return in->deadline_us != 0 && (i & 63) == 0 && tg__now_us() >= in->deadline_us;
}

/* ---- offsets ---------------------------------------------------------------------------- */

typedef struct bm_live {
  uint64_t off, end;
  uint32_t rec;
} bm_live;

/* Sort (off, end) pairs by offset: the few blocked records of one state. */
static void bm_sort_pairs(uint64_t *v, size_t n) {
  for (size_t i = 1; i < n; ++i) {
    uint64_t o = v[2 * i], e = v[2 * i + 1];
    size_t j = i;
    while (j > 0 && v[2 * (j - 1)] > o) {
      v[2 * j] = v[2 * (j - 1)];
      v[2 * j + 1] = v[2 * (j - 1) + 1];
      --j;
    }
    v[2 * j] = o;
    v[2 * j + 1] = e;
  }
}

tg_status tg__offsets_beam(const tg__plan_input *in, tg_plan **out) {
  tg_status st = tg_plan_create(TG_MODE_OFFSETS, in->dims, in->count, 0, in->alloc, out);
  if (st != TG_OK) return st;
  if ((st = tg__obj_check_count(in)) != TG_OK) {
    tg_plan_destroy(*out);
    *out = NULL;
    return st;
  }
  const tg_allocator *a = in->alloc;
  const size_t n = in->count;
  bm_common c;
  bm_live *cur = NULL, *next = NULL;
  size_t *cur_n = NULL, *next_n = NULL;
  uint64_t *tot = NULL, *heap = NULL, *pairs = NULL;
  uint8_t *live = NULL;
  st = bm_common_init(&c, in, 1);
  if (st != TG_OK) goto done;
  const size_t k = c.k, m = c.m;
  heap = tg__obj_alloc(a, n, sizeof *heap);
  live = tg__calloc(a, n ? n : 1, 1);
  if (heap == NULL || live == NULL) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  /* The most records live at once: the stride of a state's list. */
  size_t stride = 1, nheap = 0;
  for (size_t i = 0; i < m; ++i) {
    const tg_usage_record *rec = &in->records[c.order[i]];
    while (nheap > 0 && (heap[0] >> 32) < rec->first_task) tg__heap_pop(heap, &nheap);
    tg__heap_push(heap, &nheap, (uint64_t)rec->last_task << 32);
    if (nheap + 1 > stride) stride = nheap + 1;
  }
  nheap = 0;
  size_t cells;
  if (!tg__mul_size(k, stride, &cells)) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  cur = tg__obj_alloc(a, cells, sizeof *cur);
  next = tg__obj_alloc(a, cells, sizeof *next);
  cur_n = tg__obj_alloc(a, k, sizeof *cur_n);
  next_n = tg__obj_alloc(a, k, sizeof *next_n);
  tot = tg__obj_alloc(a, k, 4 * sizeof *tot);
  if (c.blocked_val != NULL) pairs = tg__obj_alloc(a, n, 2 * sizeof *pairs);
  if (cur == NULL || next == NULL || cur_n == NULL || next_n == NULL || tot == NULL ||
      (c.blocked_val != NULL && pairs == NULL)) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  uint64_t *cur_total = tot, *next_total = tot + k, *cur_hash = tot + 2 * k,
           *next_hash = tot + 3 * k;
  size_t kept = 1;
  cur_n[0] = 0;
  cur_total[0] = 0;
  cur_hash[0] = 0;
  size_t width = k;
  for (size_t i = 0; i < m; ++i) {
    const uint32_t r = c.order[i];
    const tg_usage_record *rec = &in->records[r];
    const uint64_t size = in->volumes[r], align = tg__record_alignment(in, r);
    if (width > 1 && bm_past_deadline(in, i)) width = 1;
    /* Records that ended before this one starts leave every state. */
    int died = 0;
    while (nheap > 0 && (heap[0] >> 32) < rec->first_task) {
      live[(uint32_t)tg__heap_pop(heap, &nheap)] = 0;
      died = 1;
    }
    if (died) {
      for (size_t j = 0; j < kept; ++j) {
        bm_live *l = cur + j * stride;
        size_t w = 0;
        for (size_t e = 0; e < cur_n[j]; ++e) {
          if (live[l[e].rec]) l[w++] = l[e];
          else cur_hash[j] ^= bm_mix2(l[e].rec, l[e].off);
        }
        cur_n[j] = w;
      }
    }
    bm_find_blocked(&c, i);
    c.top.n = 0;
    c.top.k = width;
    for (size_t j = 0; j < kept; ++j) {
      if (bm_state_out(&c.top, cur_total[j])) break;
      const bm_live *l = cur + j * stride;
      size_t nl = cur_n[j], nb = 0, x = 0, y = 0;
      if (c.nblocked > 0) { /* the blocked records' places in this state, by offset */
        bm_blocked_values(&c, i, (uint32_t)j);
        for (size_t b = 0; b < c.nblocked; ++b) {
          uint32_t p = c.order[c.blocked_step[b]];
          pairs[2 * nb] = c.blocked_val[b];
          pairs[2 * nb + 1] = c.blocked_val[b] + in->volumes[p];
          ++nb;
        }
        bm_sort_pairs(pairs, nb);
      }
      uint64_t prev = 0;
      bm_cand cand;
      cand.parent = (uint32_t)j;
      for (;;) { /* the conflicting records in offset order: live ones and blocked ones */
        uint64_t o, e;
        if (x < nl && (y >= nb || l[x].off <= pairs[2 * y])) {
          o = l[x].off;
          e = l[x].end;
          ++x;
        } else if (y < nb) {
          o = pairs[2 * y];
          e = pairs[2 * y + 1];
          ++y;
        } else {
          break;
        }
        uint64_t at, end;
        if (tg__align_up(prev, align, &at) && tg__add_u64(at, size, &end) && end <= o) {
          cand.total = end > cur_total[j] ? end : cur_total[j];
          cand.waste = o - end;
          cand.value = at;
          if (bm_may_enter(&c.top, &cand)) {
            cand.hash = cur_hash[j] ^ bm_mix2(r, at) ^ bm_total_hash(cand.total);
            bm_offer(&c.top, &cand);
          }
        }
        if (e > prev) prev = e;
      }
      uint64_t at, end;
      if (tg__align_up(prev, align, &at) && tg__add_u64(at, size, &end)) { /* the top */
        cand.total = end > cur_total[j] ? end : cur_total[j];
        cand.waste = cand.total - end; /* below the total, the top is a free block too */
        cand.value = at;
        if (bm_may_enter(&c.top, &cand)) {
          cand.hash = cur_hash[j] ^ bm_mix2(r, at) ^ bm_total_hash(cand.total);
          bm_offer(&c.top, &cand);
        }
      }
    }
    if (c.top.n == 0) {
      st = TG_ERROR_OVERFLOW;
      goto done;
    }
    for (size_t q = 0; q < c.top.n; ++q) {
      const bm_cand *cd = &c.top.c[q];
      const bm_live *src = cur + (size_t)cd->parent * stride;
      bm_live *dst = next + q * stride;
      size_t ns = cur_n[cd->parent], w = 0, e = 0;
      while (e < ns && src[e].off < cd->value) dst[w++] = src[e++];
      dst[w++] = (bm_live){cd->value, cd->value + size, r};
      while (e < ns) dst[w++] = src[e++];
      next_n[q] = w;
      next_total[q] = cd->total;
      next_hash[q] = cur_hash[cd->parent] ^ bm_mix2(r, cd->value);
      c.par[i * k + q] = cd->parent;
      c.val[i * k + q] = cd->value;
    }
    kept = c.top.n;
    bm_live *tl = cur;
    cur = next;
    next = tl;
    bm_swap_layers(&cur_n, &next_n, &cur_total, &next_total, &cur_hash, &next_hash);
    live[r] = 1;
    tg__heap_push(heap, &nheap, ((uint64_t)rec->last_task << 32) | r);
  }
  memset((*out)->offset_of, 0, n * sizeof *(*out)->offset_of);
  bm_backtrack(&c, (*out)->offset_of);
  st = tg__plan_finish_offsets(in, *out);
done:
  tg__free(a, tot);
  tg__free(a, cur);
  tg__free(a, next);
  tg__free(a, cur_n);
  tg__free(a, next_n);
  tg__free(a, heap);
  tg__free(a, live);
  tg__free(a, pairs);
  bm_common_free(&c);
  if (st != TG_OK) {
    tg_plan_destroy(*out);
    *out = NULL;
  }
  return st;
}

/* ---- objects ---------------------------------------------------------------------------- */

typedef struct bm_obj {
  tg_extent ext;
  uint32_t busy; /* the last task of its latest user */
} bm_obj;

static inline uint64_t bm_obj_hash(uint64_t o, const bm_obj *b) {
  return bm_mix2(o, bm_mix2(b->ext.w, bm_mix2(b->ext.h, bm_mix2(b->ext.d, b->busy))));
}

/* Room for `slots` states of `to` objects each, the first `states` copied from stride `from`
 * (`count[j]` objects each). */
static bm_obj *bm_restride(const tg_allocator *a, const bm_obj *src, size_t slots, size_t states,
                           const size_t *count, size_t from, size_t to) {
  size_t cells;
  if (!tg__mul_size(slots, to, &cells)) return NULL;
  bm_obj *dst = tg__obj_alloc(a, cells, sizeof *dst);
  if (dst == NULL) return NULL;
  for (size_t j = 0; j < states; ++j)
    if (count[j]) memcpy(dst + j * to, src + j * from, count[j] * sizeof *dst);
  return dst;
}

tg_status tg__objects_beam(const tg__plan_input *in, tg_plan **out) {
  *out = NULL;
  tg_status st = tg__obj_check_count(in);
  if (st != TG_OK) return st;
  const tg_allocator *a = in->alloc;
  const size_t n = in->count;
  bm_common c;
  bm_obj *cur = NULL, *next = NULL;
  size_t *cur_n = NULL, *next_n = NULL;
  uint64_t *tot = NULL;
  uint32_t *stamp = NULL, *object_of = NULL;
  st = bm_common_init(&c, in, 0);
  if (st != TG_OK) goto done;
  const size_t k = c.k, m = c.m;
  size_t stride = 16, cells;
  if (!tg__mul_size(k, stride, &cells)) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  cur = tg__obj_alloc(a, cells, sizeof *cur);
  next = tg__obj_alloc(a, cells, sizeof *next);
  cur_n = tg__obj_alloc(a, k, sizeof *cur_n);
  next_n = tg__obj_alloc(a, k, sizeof *next_n);
  tot = tg__obj_alloc(a, k, 4 * sizeof *tot);
  object_of = tg__obj_alloc(a, n, sizeof *object_of);
  if (c.blocked_val != NULL) stamp = tg__calloc(a, n ? n : 1, sizeof *stamp);
  if (cur == NULL || next == NULL || cur_n == NULL || next_n == NULL || tot == NULL ||
      object_of == NULL || (c.blocked_val != NULL && stamp == NULL)) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  uint64_t *cur_total = tot, *next_total = tot + k, *cur_hash = tot + 2 * k,
           *next_hash = tot + 3 * k;
  size_t kept = 1, width = k;
  cur_n[0] = 0;
  cur_total[0] = 0;
  cur_hash[0] = 0;
  uint32_t stamp_now = 0;
  for (size_t i = 0; i < m; ++i) {
    const uint32_t r = c.order[i];
    const tg_usage_record *rec = &in->records[r];
    const uint64_t vol = in->volumes[r];
    if (width > 1 && bm_past_deadline(in, i)) width = 1;
    bm_find_blocked(&c, i);
    c.top.n = 0;
    c.top.k = width;
    for (size_t j = 0; j < kept; ++j) {
      if (bm_state_out(&c.top, cur_total[j])) break;
      const bm_obj *ob = cur + j * stride;
      if (c.nblocked > 0) { /* the objects of the blocked records in this state */
        bm_blocked_values(&c, i, (uint32_t)j);
        if (++stamp_now == 0) { /* wrapped: clear */
          memset(stamp, 0, n * sizeof *stamp);
          stamp_now = 1;
        }
        for (size_t b = 0; b < c.nblocked; ++b) stamp[c.blocked_val[b]] = stamp_now;
      }
      bm_cand cand;
      cand.parent = (uint32_t)j;
      for (size_t o = 0; o < cur_n[j]; ++o) {
        if (ob[o].busy >= rec->first_task) continue;
        if (c.nblocked > 0 && stamp[o] == stamp_now) continue;
        bm_obj grown = {tg__extent_max(ob[o].ext, rec->size), rec->last_task};
        uint64_t before = tg__extent_volume_sat(ob[o].ext), after = tg__extent_volume_sat(grown.ext);
        cand.total = tg__add_sat_u64(cur_total[j], after - before);
        cand.waste = after - vol;
        cand.value = o;
        if (!bm_may_enter(&c.top, &cand)) continue;
        cand.hash = cur_hash[j] ^ bm_obj_hash(o, &ob[o]) ^ bm_obj_hash(o, &grown) ^
                    bm_total_hash(cand.total);
        bm_offer(&c.top, &cand);
      }
      bm_obj fresh = {rec->size, rec->last_task};
      cand.total = tg__add_sat_u64(cur_total[j], vol);
      cand.waste = 0;
      cand.value = cur_n[j];
      if (bm_may_enter(&c.top, &cand)) {
        cand.hash = cur_hash[j] ^ bm_obj_hash(cur_n[j], &fresh) ^ bm_total_hash(cand.total);
        bm_offer(&c.top, &cand);
      }
    }
    /* Room for one more object in every state. */
    size_t need = 0;
    for (size_t q = 0; q < c.top.n; ++q)
      if (c.top.c[q].value == cur_n[c.top.c[q].parent] && cur_n[c.top.c[q].parent] + 1 > need)
        need = cur_n[c.top.c[q].parent] + 1;
    if (need > stride) {
      size_t to = 2 * stride;
      bm_obj *nc = bm_restride(a, cur, k, kept, cur_n, stride, to);
      bm_obj *nn = bm_restride(a, next, k, 0, next_n, stride, to);
      if (nc == NULL || nn == NULL) {
        tg__free(a, nc);
        tg__free(a, nn);
        st = TG_ERROR_OUT_OF_HOST_MEMORY;
        goto done;
      }
      tg__free(a, cur);
      tg__free(a, next);
      cur = nc;
      next = nn;
      stride = to;
    }
    for (size_t q = 0; q < c.top.n; ++q) {
      const bm_cand *cd = &c.top.c[q];
      const bm_obj *src = cur + (size_t)cd->parent * stride;
      bm_obj *dst = next + q * stride;
      size_t ns = cur_n[cd->parent], o = (size_t)cd->value;
      memcpy(dst, src, ns * sizeof *dst);
      uint64_t h = cur_hash[cd->parent];
      if (o < ns) {
        h ^= bm_obj_hash(o, &dst[o]);
        dst[o].ext = tg__extent_max(dst[o].ext, rec->size);
        dst[o].busy = rec->last_task;
      } else {
        dst[o] = (bm_obj){rec->size, rec->last_task};
        ++ns;
      }
      next_n[q] = ns;
      next_total[q] = cd->total;
      next_hash[q] = h ^ bm_obj_hash(o, &dst[o]);
      c.par[i * k + q] = cd->parent;
      c.val[i * k + q] = cd->value;
    }
    kept = c.top.n;
    bm_obj *to = cur;
    cur = next;
    next = to;
    bm_swap_layers(&cur_n, &next_n, &cur_total, &next_total, &cur_hash, &next_hash);
  }
  {
    uint64_t *ids = tg__obj_alloc(a, n, sizeof *ids);
    if (ids == NULL) {
      st = TG_ERROR_OUT_OF_HOST_MEMORY;
      goto done;
    }
    bm_backtrack(&c, ids);
    for (size_t r = 0; r < n; ++r) object_of[r] = (uint32_t)ids[r];
    tg__free(a, ids);
    st = tg__obj_emit(in, object_of, m ? cur_n[0] : 0, out);
  }
done:
  tg__free(a, cur);
  tg__free(a, next);
  tg__free(a, cur_n);
  tg__free(a, next_n);
  tg__free(a, tot);
  tg__free(a, stamp);
  tg__free(a, object_of);
  bm_common_free(&c);
  return st;
}
