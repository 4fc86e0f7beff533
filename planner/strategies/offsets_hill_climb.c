/* HILL_CLIMB, offsets mode: TVM USMP's hill_climb. It starts from USMP greedy-by-size's order
 * (larger first, ties: more conflicts first) and its first-fit placement (usmp_common.c), then
 * for up to HC_ROUNDS rounds swaps two records in the order and places every record again:
 *
 * - the move: one of the records that reach the top of the arena, at random (A); one of the
 *   records conflicting with A and placed before it (B); then, three times in four, a record
 *   conflicting with B and placed before B, else (or when there is none) another record
 *   conflicting with A placed before A (A itself when B is the only one) (C); B and C swap;
 * - the verdict: the new order stays when the total shrank, and, rarely, when it grew (with a
 *   chance of 0.1 * (1 - round / HC_ROUNDS) / (1 + 100 * loss / total), in integer
 *   arithmetic so that every machine makes the same choices); otherwise the swap is undone.
 *
 * The smallest plan met is returned. It stops early at the peak-live bound (TVM: at a target
 * size) and when no top record has an earlier conflict (the top record then sits alone at
 * offset 0). Random choices come from options->seed only. Cost: HC_ROUNDS greedy passes at
 * most, plus O(n) per round to find the move; a round places again only the records from the
 * first swapped position on. Inputs whose conflicts fit in lists (HC_LIST_PAIRS per record
 * serially, HC_LIST_MAX entries in all with a relation) keep each record's conflicts in a
 * list and place a record by sorting its placed conflicts (TVM's own way); others use the
 * gap index. */
#include "planner/strategies/usmp_common.h"

/* TVM's round count. */
#define HC_ROUNDS 500u
/* Conflict lists when they hold at most this many entries per record (two per pair), or, with
 * a relation, at most HC_LIST_MAX in all if that is more. */
#define HC_LIST_PAIRS 64u
#define HC_LIST_MAX ((size_t)1 << 22)

typedef struct hc_rng {
  uint64_t state;
} hc_rng;

static uint64_t hc_next(hc_rng *g) { /* splitmix64 */
  uint64_t z = (g->state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static size_t hc_below(hc_rng *g, size_t n) { return (size_t)(hc_next(g) % (uint64_t)n); }

typedef struct hc_state {
  const tg__plan_input *in;
  tg__obj_share share;
  size_t *order, *pos;
  size_t *tops;    /* n entries */
  hc_rng rng;
  /* Serial, sparse: record r's conflicts are adj[adj_at[r] .. adj_at[r + 1]). */
  size_t *adj_at;
  uint32_t *adj;
  uint64_t *pairs; /* scratch: (offset, end) of one record's placed conflicts */
  tg__sort_item *items; /* scratch: 2n items, to sort those by offset */
} hc_state;

static int hc_conflict(const hc_state *h, size_t a, size_t b) {
  const tg_usage_record *ra = &h->in->records[a], *rb = &h->in->records[b];
  if (ra->first_task <= rb->last_task && rb->first_task <= ra->last_task) return 1;
  return !tg__obj_share_ok(&h->share, a, b);
}

/* Keep in (*best_key, *best) the candidate s when its id hashed with `u` is lower (ties: the
 * lower id). */
static void hc_keep_lowest(uint64_t u, size_t s, uint64_t *best_key, size_t *best) {
  hc_rng k = {u ^ (uint64_t)s};
  uint64_t key = hc_next(&k);
  if (key < *best_key || (key == *best_key && s < *best)) {
    *best_key = key;
    *best = s;
  }
}

/* A record of nonzero size conflicting with x and placed before it, at random; SIZE_MAX when
 * none. `skip` is excluded. The one whose id hashes lowest with a fresh random number wins,
 * which makes the choice independent of the order candidates are met in (conflict lists are
 * built in an order that a relation's windows change). */
static size_t hc_earlier_conflict(hc_state *h, size_t x, size_t skip) {
  uint64_t u = hc_next(&h->rng), best_key = UINT64_MAX;
  size_t best = SIZE_MAX;
  if (h->adj != NULL) {
    for (size_t e = h->adj_at[x]; e < h->adj_at[x + 1]; ++e) {
      size_t s = h->adj[e];
      if (s == skip || h->pos[s] >= h->pos[x] || h->in->volumes[s] == 0) continue;
      hc_keep_lowest(u, s, &best_key, &best);
    }
    return best;
  }
  for (size_t i = 0; i < h->pos[x]; ++i) {
    size_t s = h->order[i];
    if (s == skip || h->in->volumes[s] == 0 || !hc_conflict(h, s, x)) continue;
    hc_keep_lowest(u, s, &best_key, &best);
  }
  return best;
}

/* The move on the plan `off` of total `total`: *b and *c to swap; 0 when there is none. */
static int hc_pick(hc_state *h, const uint64_t *off, uint64_t total, size_t *b, size_t *c) {
  const tg__plan_input *in = h->in;
  size_t ntops = 0;
  for (size_t r = 0; r < in->count; ++r)
    if (in->volumes[r] > 0 && off[r] + in->volumes[r] == total) h->tops[ntops++] = r;
  while (ntops > 0) {
    size_t i = hc_below(&h->rng, ntops), a = h->tops[i];
    size_t bb = hc_earlier_conflict(h, a, SIZE_MAX);
    if (bb == SIZE_MAX) {
      h->tops[i] = h->tops[--ntops];
      continue;
    }
    size_t cc = SIZE_MAX;
    if (hc_below(&h->rng, 4) != 0) cc = hc_earlier_conflict(h, bb, SIZE_MAX);
    if (cc == SIZE_MAX) cc = hc_earlier_conflict(h, a, bb);
    if (cc == SIZE_MAX) cc = a;
    *b = bb;
    *c = cc;
    return 1;
  }
  return 0;
}

/* The peak-live bound (tg__peak_live's, which lives in a layer above). */
static tg_status hc_peak_live(const tg__plan_input *in, uint64_t *peak) {
  *peak = 0;
  tg__task_points tp = {0, NULL, NULL};
  tg_status st = tg__task_points_init(in, &tp);
  uint64_t *live = NULL;
  if (st == TG_OK) {
    live = tg__alloc_array(in->alloc, tp.count ? tp.count : 1, sizeof *live);
    if (live == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  if (st == TG_OK) st = tg__live_at_points(in, &tp, live);
  if (st == TG_OK)
    for (size_t p = 0; p < tp.count; ++p)
      if (live[p] > *peak) *peak = live[p];
  tg__free(in->alloc, live);
  tg__task_points_free(in, &tp);
  return st;
}

static void hc_swap(hc_state *h, size_t b, size_t c) {
  size_t pb = h->pos[b], pc = h->pos[c];
  h->order[pb] = c;
  h->order[pc] = b;
  h->pos[c] = pb;
  h->pos[b] = pc;
}

/* The records at positions from `from` on are placed again in the current order (into `out`,
 * which holds `off` before `from`): by their conflict lists, or leaving the gap index (at
 * `off`) and coming back. */
static tg_status hc_replace(hc_state *h, tg__gap_index *ix, size_t from, const uint64_t *off,
                            uint64_t *out, uint64_t *total) {
  const tg__plan_input *in = h->in;
  if (h->adj != NULL) {
    for (size_t i = from; i < in->count; ++i) {
      size_t r = h->order[i], m = 0;
      for (size_t e = h->adj_at[r]; e < h->adj_at[r + 1]; ++e) {
        size_t c = h->adj[e];
        if (h->pos[c] < i) h->items[m++] = (tg__sort_item){out[c], c};
      }
      if (m < 32) { /* insertion sort by offset; else the radix sort */
        for (size_t a = 1; a < m; ++a) {
          tg__sort_item x = h->items[a];
          size_t b = a;
          while (b > 0 && h->items[b - 1].key > x.key) {
            h->items[b] = h->items[b - 1];
            --b;
          }
          h->items[b] = x;
        }
      } else {
        tg__sort_items_stable(h->items, m, h->items + in->count);
      }
      for (size_t j = 0; j < m; ++j) {
        h->pairs[2 * j] = h->items[j].key;
        h->pairs[2 * j + 1] = h->items[j].key + in->volumes[h->items[j].idx];
      }
      /* TVM's walk: past every placed conflict the record would overlap. */
      uint64_t at = 0, size = in->volumes[r], a = tg__record_alignment(in, r), end;
      for (size_t j = 0; j < m; ++j) {
        uint64_t o = h->pairs[2 * j], e = h->pairs[2 * j + 1];
        if (e <= at) continue;
        if (!tg__add_u64(at, size, &end)) return TG_ERROR_OVERFLOW;
        if (end <= o) break;
        if (!tg__align_up(e, a, &at)) return TG_ERROR_OVERFLOW;
      }
      if (!tg__add_u64(at, size, &end)) return TG_ERROR_OVERFLOW;
      out[r] = at;
    }
  } else {
    for (size_t i = from; i < in->count; ++i) tg__gap_index_remove(ix, h->order[i], off[h->order[i]]);
    for (size_t i = from; i < in->count; ++i) {
      size_t r = h->order[i];
      uint64_t o, end;
      tg_status st = tg__gap_index_find(ix, r, TG_FIT_FIRST, &o);
      if (st != TG_OK) return st;
      if (!tg__add_u64(o, in->volumes[r], &end)) return TG_ERROR_OVERFLOW;
      out[r] = o;
      tg__gap_index_insert(ix, r, o);
    }
  }
  uint64_t top = 0;
  for (size_t r = 0; r < in->count; ++r)
    if (out[r] + in->volumes[r] > top) top = out[r] + in->volumes[r];
  *total = top;
  return TG_OK;
}

/* Undo hc_replace (the suffix back at `off`, the index as before). */
static void hc_restore(hc_state *h, tg__gap_index *ix, size_t from, const uint64_t *off,
                       const uint64_t *now) {
  const tg__plan_input *in = h->in;
  if (h->adj != NULL) return; /* no index */
  for (size_t i = from; i < in->count; ++i) tg__gap_index_remove(ix, h->order[i], now[h->order[i]]);
  for (size_t i = from; i < in->count; ++i) tg__gap_index_insert(ix, h->order[i], off[h->order[i]]);
}

tg_status tg__offsets_hill_climb(const tg__plan_input *in, tg_plan **out) {
  tg_status st = tg_plan_create(TG_MODE_OFFSETS, in->dims, in->count, 0, in->alloc, out);
  if (st != TG_OK) return st;
  size_t n = in->count ? in->count : 1;
  hc_state h;
  memset(&h, 0, sizeof h);
  h.in = in;
  h.rng.state = in->options->seed ^ 0x243F6A8885A308D3ull;
  tg__gap_index *ix = NULL;
  uint64_t *counts = tg__alloc_array(in->alloc, n, sizeof *counts);
  uint64_t *cur = tg__alloc_array(in->alloc, n, sizeof *cur);
  uint64_t *cand = tg__alloc_array(in->alloc, n, sizeof *cand);
  h.order = tg__alloc_array(in->alloc, n, sizeof *h.order);
  h.pos = tg__alloc_array(in->alloc, n, sizeof *h.pos);
  h.tops = tg__alloc_array(in->alloc, n, sizeof *h.tops);
  uint64_t target = 0, cur_total = 0, best_total = 0;
  if (counts == NULL || cur == NULL || cand == NULL || h.order == NULL || h.pos == NULL ||
      h.tops == NULL)
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
  if (st == TG_OK) st = tg__obj_share_init(&h.share, in);
  /* Conflict lists when they are short enough: few pairs per record serially; with a
   * relation (whose gap index tests every placed record) whenever they fit. */
  size_t max_entries = (size_t)HC_LIST_PAIRS * in->count;
  if (in->options->relation != NULL && max_entries < HC_LIST_MAX) max_entries = HC_LIST_MAX;
  if (st == TG_OK) st = tg__usmp_conflicts(in, max_entries, counts, &h.adj_at, &h.adj);
  if (st == TG_OK && h.adj != NULL) {
    h.pairs = tg__alloc_array(in->alloc, 2 * n, sizeof *h.pairs);
    h.items = tg__alloc_array(in->alloc, 2 * n, sizeof *h.items);
    if (h.pairs == NULL || h.items == NULL) st = TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  if (st == TG_OK) st = tg__usmp_order(in, counts, 0, h.order);
  if (st == TG_OK) st = hc_peak_live(in, &target);
  if (st == TG_OK) st = tg__usmp_place(in, h.order, cur, &cur_total);
  if (st == TG_OK && h.adj == NULL) { /* one index for every round: records leave and come back */
    st = tg__gap_index_create(in, &ix);
    for (size_t r = 0; st == TG_OK && r < in->count; ++r) tg__gap_index_insert(ix, r, cur[r]);
  }
  if (st == TG_OK) {
    for (size_t i = 0; i < in->count; ++i) h.pos[h.order[i]] = i;
    memcpy((*out)->offset_of, cur, in->count * sizeof *cur);
    if (in->count) memcpy(cand, cur, in->count * sizeof *cur);
    best_total = cur_total;
  }
  for (unsigned round = 1; st == TG_OK && round < HC_ROUNDS && best_total > target; ++round) {
    if (in->deadline_us != 0 && tg__now_us() >= in->deadline_us) break;
    size_t b, c;
    if (!hc_pick(&h, cur, cur_total, &b, &c)) break;
    hc_swap(&h, b, c);
    size_t from = h.pos[b] < h.pos[c] ? h.pos[b] : h.pos[c];
    uint64_t total;
    st = hc_replace(&h, ix, from, cur, cand, &total);
    if (st != TG_OK) break;
    int keep = total < cur_total;
    if (!keep && total > cur_total && total - cur_total < cur_total) {
      /* chance = 0.1 * (1 - round / R) / (1 + 100 * loss), loss in units of 1e-6. */
      uint64_t d = total - cur_total, base = cur_total;
      while (base >= ((uint64_t)1 << 44)) { /* d < base: keep d * 1e6 within 64 bits */
        d >>= 1;
        base >>= 1;
      }
      uint64_t loss = d * 1000000u / base; /* < 1e6 */
      uint64_t chance = ((uint64_t)1 << 32) / 10 * (HC_ROUNDS - round) / HC_ROUNDS;
      chance = chance * 10000u / (10000u + loss);
      keep = (hc_next(&h.rng) >> 32) < chance;
    }
    if (!keep) {
      hc_restore(&h, ix, from, cur, cand);
      for (size_t i = from; i < in->count; ++i) cand[h.order[i]] = cur[h.order[i]];
      hc_swap(&h, b, c);
      continue;
    }
    for (size_t i = from; i < in->count; ++i) cur[h.order[i]] = cand[h.order[i]];
    cur_total = total;
    if (total < best_total) {
      best_total = total;
      memcpy((*out)->offset_of, cur, in->count * sizeof *cur);
    }
  }
  if (st == TG_OK) st = tg__plan_finish_offsets(in, *out);
  tg__gap_index_destroy(ix);
  tg__obj_share_free(&h.share);
  tg__free(in->alloc, counts);
  tg__free(in->alloc, cur);
  tg__free(in->alloc, cand);
  tg__free(in->alloc, h.order);
  tg__free(in->alloc, h.pos);
  tg__free(in->alloc, h.tops);
  tg__free(in->alloc, h.adj_at);
  tg__free(in->alloc, h.adj);
  tg__free(in->alloc, h.pairs);
  tg__free(in->alloc, h.items);
  if (st != TG_OK) {
    tg_plan_destroy(*out);
    *out = NULL;
  }
  return st;
}
