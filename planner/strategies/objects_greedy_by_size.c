/* GREEDY_BY_SIZE.
 *
 * 1D is TFLite's GreedyBySizeDistPriorityAssignment. Positional maximums: pm[k] is the largest
 * k-th biggest live size over all tasks; a record's position is the last k with pm[k] >= its
 * size. Repeatedly, the unplaced record with the highest priority - smallest position, then
 * smallest distance to an object it may join (the gap in tasks to that object's nearest
 * record), then largest size, then lowest index - joins the nearest such object (growing it),
 * or a new object when it may join none.
 *
 * TFLite's version is quadratic: after every step it rescans and updates every record. Up to
 * FAITHFUL_MAX records, and whenever a may-share relation that is not known to be transitive
 * is given, we run it as is, which reproduces TFLite's plans exactly, object ids included.
 * Above that (serial, or a transitive relation) a faster variant keeps everything but the
 * re-prioritisation by distance: records are taken in (position, size desc, index) order -
 * which is just (size desc, index), a position never decreasing as sizes shrink -, each joining
 * the object with the nearest free gap that holds it - found in O(log n) with segment trees
 * over the objects' gaps -, or a new object. On random chains and DAGs of 1.5k-3k records
 * (where both run) its totals were within a few percent of TFLite's either way, about 1% lower
 * on average. With a transitive relation a gap is allowed when the relation allows the
 * record with the gap's two neighbours (members of an object pairwise may share); refused gaps
 * are skipped and the search goes on to the next nearest, up to a bound (GAP_TRIES).
 *
 * 2D/3D (no TFLite counterpart): records in several orders - by volume, by each dimension first,
 * and, on small record sets, a few seeded shuffles -, each placed by tg__obj_assign_nd (fewest
 * texels added, then least waste); the order giving the smallest total is kept. */
#include "planner/strategies/objects_common.h"

#define FAITHFUL_MAX ((size_t)512)

/* ---- positions ---------------------------------------------------------------------------- */

/* pos[r]: the number of positional maximums >= r's size, minus one - which is the largest
 * number of records of at least r's size live at one task, minus one. Records are added in
 * decreasing size to a range-add / global-max tree over task points (the distinct first tasks;
 * see tg__obj_points) counting live records. by_first / by_last: records by first / last task. */
static tg_status record_positions(const tg__plan_input *in, const uint32_t *by_first,
                                  const uint32_t *by_last, uint32_t *pos) {
  const size_t n = in->count;
  const tg_usage_record *recs = in->records;
  const size_t nodes = tg__mintree_nodes(n), size = nodes / 2;
  uint32_t *block = tg__obj_alloc(in->alloc, 4 * n + 2 * nodes, sizeof *block);
  if (block == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  uint32_t *pf = block, *pl = pf + n, *idx = pl + n, *tmp = idx + n;
  uint32_t *mx = tmp + n, *add = mx + nodes;
  size_t points = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && recs[by_first[i]].first_task != recs[by_first[i - 1]].first_task) ++points;
    pf[by_first[i]] = (uint32_t)points;
  }
  for (size_t i = 0, p = 0; i < n; ++i) { /* last point not after each last task */
    const uint32_t last = recs[by_last[i]].last_task;
    while (p + 1 < n && recs[by_first[p + 1]].first_task <= last) ++p;
    pl[by_last[i]] = pf[by_first[p]];
  }
  memset(mx, 0, 2 * nodes * sizeof *mx);
  for (size_t r = 0; r < n; ++r) idx[r] = (uint32_t)r;
  tg__sort_key k = tg__key_u64(in->volumes, 1);
  tg__sort_idx(idx, tmp, n, &k);
  for (size_t i = 0; i < n;) {
    size_t j = i;
    for (; j < n && in->volumes[idx[j]] == in->volumes[idx[i]]; ++j) {
      const uint32_t r = idx[j];
      size_t l = pf[r] + size, h = pl[r] + 1 + size;
      size_t lp = l >> 1, hp = (h - 1) >> 1; /* the paths to refresh: parents of both ends */
      for (; l < h; l >>= 1, h >>= 1) {
        if (l & 1) { mx[l]++; add[l]++; ++l; }
        if (h & 1) { --h; mx[h]++; add[h]++; }
      }
      for (; lp != hp; lp >>= 1, hp >>= 1) {
        mx[lp] = (mx[2 * lp] > mx[2 * lp + 1] ? mx[2 * lp] : mx[2 * lp + 1]) + add[lp];
        mx[hp] = (mx[2 * hp] > mx[2 * hp + 1] ? mx[2 * hp] : mx[2 * hp + 1]) + add[hp];
      }
      for (; lp >= 1; lp >>= 1)
        mx[lp] = (mx[2 * lp] > mx[2 * lp + 1] ? mx[2 * lp] : mx[2 * lp + 1]) + add[lp];
    }
    for (; i < j; ++i) pos[idx[i]] = mx[1] - 1;
  }
  tg__free(in->alloc, block);
  return TG_OK;
}

/* ---- TFLite's algorithm as is ------------------------------------------------------------ */

#define NO_DIST UINT64_MAX

static tg_status by_size_faithful(const tg__plan_input *in, const uint32_t *pos,
                                  uint32_t *object_of, size_t *object_count) {
  const size_t n = in->count;
  const tg_allocator *a = in->alloc;
  const tg_usage_record *recs = in->records;
  const tg_share_relation *rel = in->options->relation;
  tg_status st = TG_OK;
  uint64_t *best_dist = tg__obj_alloc(a, n, sizeof *best_dist + 2 * sizeof(uint32_t));
  if (best_dist == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  uint32_t *best_obj = (uint32_t *)(best_dist + n);
  uint32_t *open = best_obj + n; /* unplaced records */
  /* dist[o * n + r]: distance from record r to object o; 0 = r may not join o (distances are
   * gaps between disjoint intervals, so at least 1). */
  uint32_t *dist = NULL;
  size_t dist_cap = 0;
  for (size_t r = 0; r < n; ++r) {
    best_dist[r] = NO_DIST;
    best_obj[r] = TG__NONE;
    object_of[r] = TG__NONE;
    open[r] = (uint32_t)r;
  }
  size_t open_n = n, objects = 0;
  while (open_n > 0) {
    size_t bi = 0;
    for (size_t k = 1; k < open_n; ++k) {
      const uint32_t x = open[k], b = open[bi];
      if (pos[x] != pos[b]) {
        if (pos[x] < pos[b]) bi = k;
      } else if (best_dist[x] != best_dist[b]) {
        if (best_dist[x] < best_dist[b]) bi = k;
      } else if (in->volumes[x] != in->volumes[b]) {
        if (in->volumes[x] > in->volumes[b]) bi = k;
      } else if (x < b) {
        bi = k;
      }
    }
    const uint32_t s = open[bi];
    open[bi] = open[--open_n];
    const int new_object = best_dist[s] == NO_DIST;
    uint32_t o;
    if (new_object) {
      o = (uint32_t)objects++;
      if (objects > dist_cap) {
        size_t nc = dist_cap ? 2 * dist_cap : 8, bytes;
        if (nc > n) nc = n;
        if (!tg__mul_size(nc, n * sizeof *dist, &bytes)) {
          st = TG_ERROR_OUT_OF_HOST_MEMORY;
          goto done;
        }
        uint32_t *nd = tg__realloc(a, dist, dist_cap * n * sizeof *dist, bytes);
        if (nd == NULL) {
          st = TG_ERROR_OUT_OF_HOST_MEMORY;
          goto done;
        }
        dist = nd;
        dist_cap = nc;
      }
    } else {
      o = best_obj[s];
    }
    object_of[s] = o;
    uint32_t *col = dist + (size_t)o * n;
    const uint32_t sf = recs[s].first_task, sl = recs[s].last_task;
    for (size_t k = 0; k < open_n; ++k) {
      const uint32_t r = open[k];
      if (!new_object && col[r] == 0) continue;
      uint64_t d = NO_DIST;
      if (recs[r].last_task < sf) d = sf - recs[r].last_task;
      else if (sl < recs[r].first_task) d = recs[r].first_task - sl;
      if (rel != NULL && d != NO_DIST && !rel->may_share(rel->user, r, s)) d = NO_DIST;
      if (new_object) {
        col[r] = d == NO_DIST ? 0 : (uint32_t)d;
      } else if (d == NO_DIST) {
        col[r] = 0;
        if (best_obj[r] == o) {
          /* TFLite's RecalcBestDist: the lowest id among the nearest objects. */
          best_dist[r] = NO_DIST;
          for (size_t q = 0; q < objects; ++q) {
            const uint32_t dq = dist[q * n + r];
            if (dq != 0 && dq < best_dist[r]) {
              best_dist[r] = dq;
              best_obj[r] = (uint32_t)q;
            }
          }
        }
      } else if (d < col[r]) {
        col[r] = (uint32_t)d;
      }
      if (d < best_dist[r]) {
        best_dist[r] = d;
        best_obj[r] = o;
      }
    }
  }
  *object_count = objects;
done:
  tg__free(a, best_dist);
  tg__free(a, dist);
  return st;
}

/* ---- the O(n log n) variant ---------------------------------------------------------------- */

/* Tasks are replaced by their ranks among all first and last tasks, from 1, so that 0 can stand
 * for "no earlier record" and UINT32_MAX for "no later record" in the trees. A gap of an object
 * lies between two of its consecutive records `left` and `right` (TG__NONE at the ends). */
typedef struct gap {
  uint64_t dist;
  uint32_t obj, left, right;
} gap;

typedef struct fast {
  const tg__plan_input *in;
  tg__obj_share share;          /* serial, or a transitive relation */
  size_t n;
  uint32_t *fr, *lr;            /* task ranks of first / last */
  const uint32_t *by_last;      /* records by (last, index) */
  const uint32_t *by_first;     /* records by (first, index) */
  uint32_t *at_last, *at_first; /* inverses */
  uint32_t *cnt_last;           /* per record: records ending before it starts */
  uint32_t *cnt_first;          /* per record: records starting no later than it ends */
  uint32_t *order;              /* by (size desc, index) */
  uint32_t *prev, *next, *tmp;       /* neighbours within the object, in time */
  uint32_t *t1_nodes, *t2_nodes;
  tg__mintree t1; /* by_last: UINT32_MAX - rank of the next record's start (the gap after) */
  tg__mintree t2; /* by_first: rank of the previous record's end (the gap before) */
} fast;

static void fast_layout(tg__arena *ar, size_t n, fast *f) {
  uint32_t **arrays[] = {&f->fr, &f->lr, &f->at_last, &f->at_first, &f->cnt_last, &f->cnt_first,
                         &f->order, &f->prev, &f->next, &f->tmp};
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; ++i)
    *arrays[i] = tg__arena_take(ar, n, sizeof(uint32_t));
  const size_t nodes = tg__mintree_nodes(n);
  f->t1_nodes = tg__arena_take(ar, nodes, sizeof(uint32_t));
  f->t2_nodes = tg__arena_take(ar, nodes, sizeof(uint32_t));
}

/* With a transitive relation: may r fill the gap between `left` and `right` (TG__NONE at the
 * ends)? The members of an object pairwise may share, so its neighbours in time decide. */
static int gap_allows(const fast *f, uint32_t left, uint32_t r, uint32_t right) {
  return (left == TG__NONE || tg__obj_share_ok(&f->share, left, r)) &&
         (right == TG__NONE || tg__obj_share_ok(&f->share, r, right));
}

/* Gaps looked at per side and record. Serial, the first is always taken. A relation can refuse
 * most of them (parallel-safe on a random DAG of 7.5k records refused ~1400 per record on
 * average), and an unbounded search makes the variant quadratic again; past this many the
 * record takes a new object. On that DAG this cap cost 0.7% in total against no cap
 * (1% against the faithful algorithm) at a third of the time; on the network-like DAG of
 * bench_schedule, nothing. */
#define GAP_TRIES ((size_t)512)

/* The nearest gap that holds record r and that the relation allows (ties: lower object id),
 * among the GAP_TRIES nearest on each side; g->dist = NO_DIST when none. Gaps the relation
 * refuses are passed over: each side's search resumes beyond them. */
static void nearest_gap(const fast *f, const uint32_t *object_of, uint32_t r, gap *g) {
  const tg_usage_record *recs = f->in->records;
  g->dist = NO_DIST;
  g->obj = g->left = g->right = TG__NONE;
  /* After a record that ends before r starts, whose successor starts after r ends: the latest
   * such end. */
  size_t tries = 0;
  for (size_t hi = f->cnt_last[r]; tries++ < GAP_TRIES;) {
    const size_t k = tg__mintree_last_below(&f->t1, 0, hi, UINT32_MAX - f->lr[r]);
    if (k == SIZE_MAX) break;
    const uint32_t m = f->by_last[k];
    if (gap_allows(f, m, r, f->next[m])) {
      g->dist = (uint64_t)recs[r].first_task - recs[m].last_task;
      g->obj = object_of[m];
      g->left = m;
      g->right = f->next[m];
      break;
    }
    hi = k;
  }
  /* Before a record that starts after r ends, whose predecessor ends before r starts: the
   * earliest such start. Gaps farther than the one already found need no look. */
  tries = 0;
  for (size_t lo = f->cnt_first[r]; tries++ < GAP_TRIES;) {
    const size_t k = tg__mintree_first_below(&f->t2, lo, f->n, f->fr[r]);
    if (k == SIZE_MAX) break;
    const uint32_t m = f->by_first[k];
    const uint64_t d = (uint64_t)recs[m].first_task - recs[r].last_task;
    if (d > g->dist || (d == g->dist && object_of[m] >= g->obj)) break;
    if (gap_allows(f, f->prev[m], r, m)) {
      g->dist = d;
      g->obj = object_of[m];
      g->left = f->prev[m];
      g->right = m;
      break;
    }
    lo = k + 1;
  }
}

static void place(fast *f, uint32_t *object_of, uint32_t r, const gap *g) {
  const uint32_t left = g->left, right = g->right;
  object_of[r] = g->obj;
  f->prev[r] = left;
  f->next[r] = right;
  if (left != TG__NONE) f->next[left] = r;
  if (right != TG__NONE) f->prev[right] = r;
  if (left != TG__NONE) tg__mintree_set(&f->t1, f->at_last[left], UINT32_MAX - f->fr[r]);
  tg__mintree_set(&f->t1, f->at_last[r], right != TG__NONE ? UINT32_MAX - f->fr[right] : 0);
  if (right != TG__NONE) tg__mintree_set(&f->t2, f->at_first[right], f->lr[r]);
  tg__mintree_set(&f->t2, f->at_first[r], left != TG__NONE ? f->lr[left] : 0);
}

static tg_status by_size_fast(const tg__plan_input *in, const uint32_t *by_first,
                              const uint32_t *by_last, uint32_t *object_of,
                              size_t *object_count) {
  const size_t n = in->count;
  const tg_usage_record *recs = in->records;
  fast f;
  memset(&f, 0, sizeof f);
  f.in = in;
  f.n = n;
  tg__arena ar = {NULL, 0, 0};
  fast_layout(&ar, n, &f);
  if (ar.overflow) return TG_ERROR_OUT_OF_HOST_MEMORY;
  unsigned char *block = tg__malloc(in->alloc, ar.off);
  if (block == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  tg_status st = tg__obj_share_init(&f.share, in);
  if (st != TG_OK) {
    tg__free(in->alloc, block);
    return st;
  }
  ar = (tg__arena){block, 0, 0};
  fast_layout(&ar, n, &f);

  f.by_first = by_first;
  f.by_last = by_last;
  for (size_t i = 0; i < n; ++i) {
    f.at_first[f.by_first[i]] = (uint32_t)i;
    f.at_last[f.by_last[i]] = (uint32_t)i;
  }
  /* Ranks of the task values of both lists merged, and the two counts per record. */
  uint32_t rank = 0;
  uint64_t prev_value = UINT64_MAX;
  for (size_t i = 0, j = 0; i < n || j < n;) {
    const int take_first =
        j == n || (i < n && recs[f.by_first[i]].first_task <= recs[f.by_last[j]].last_task);
    const uint32_t v = take_first ? recs[f.by_first[i]].first_task : recs[f.by_last[j]].last_task;
    if (v != prev_value) {
      ++rank;
      prev_value = v;
    }
    if (take_first) f.fr[f.by_first[i++]] = rank;
    else f.lr[f.by_last[j++]] = rank;
  }
  for (size_t x = 0, y = 0; x < n; ++x) {
    const uint32_t r = f.by_first[x];
    while (y < n && recs[f.by_last[y]].last_task < recs[r].first_task) ++y;
    f.cnt_last[r] = (uint32_t)y;
  }
  for (size_t x = 0, y = 0; x < n; ++x) {
    const uint32_t r = f.by_last[x];
    while (y < n && recs[f.by_first[y]].first_task <= recs[r].last_task) ++y;
    f.cnt_first[r] = (uint32_t)y;
  }
  for (size_t r = 0; r < n; ++r) f.order[r] = (uint32_t)r;
  tg__sort_key key = tg__key_u64(in->volumes, 1);
  tg__sort_idx(f.order, f.tmp, n, &key);
  tg__mintree_setup(&f.t1, f.t1_nodes, n, UINT32_MAX);
  tg__mintree_setup(&f.t2, f.t2_nodes, n, UINT32_MAX);
  size_t objects = 0;
  for (size_t i = 0; i < n; ++i) {
    /* `best` under a time limit: no plan when its deadline comes first. */
    if (in->deadline_us != 0 && (i & 255) == 255 && tg__now_us() >= in->deadline_us) {
      st = TG_ERROR_TIMEOUT;
      break;
    }
    const uint32_t r = f.order[i];
    gap g;
    nearest_gap(&f, object_of, r, &g);
    if (g.dist == NO_DIST) {
      g.obj = (uint32_t)objects++;
      g.left = g.right = TG__NONE;
    }
    place(&f, object_of, r, &g);
  }
  *object_count = objects;
  tg__obj_share_free(&f.share);
  tg__free(in->alloc, block);
  return st;
}

/* ---- 2D / 3D ------------------------------------------------------------------------------ */

static uint64_t plan_total(const tg__plan_input *in, const uint32_t *object_of, size_t objects,
                           tg_extent *ext) {
  for (size_t o = 0; o < objects; ++o) ext[o] = (tg_extent){0, 0, 0};
  for (size_t r = 0; r < in->count; ++r)
    ext[object_of[r]] = tg__extent_max(ext[object_of[r]], in->records[r].size);
  uint64_t t = 0;
  for (size_t o = 0; o < objects; ++o) {
    uint64_t v = tg__extent_volume_sat(ext[o]);
    if (v == UINT64_MAX || !tg__add_u64(t, v, &t)) return UINT64_MAX;
  }
  return t;
}

/* Seeded shuffles for the extra orders: splitmix64. */
static uint64_t mix_next(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Placing in a shuffled order costs about n * objects; the shuffles are worth it on the small
 * record sets of real models (where they find plans the size orders miss) and are skipped as n
 * grows. */
#define SHUFFLES_MAX 32
#define SHUFFLE_WORK ((uint64_t)4000000)

static tg_status by_size_nd(const tg__plan_input *in, uint32_t *object_of, size_t *object_count) {
  const size_t n = in->count;
  const tg_allocator *a = in->alloc;
  tg_status st = TG_OK;
  uint32_t *order = tg__obj_alloc(a, n + 1, 6 * sizeof(uint32_t) + sizeof(tg_extent));
  if (order == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  tg_extent *ext = (tg_extent *)(order + 6 * n + 2); /* 8-byte aligned */
  uint32_t *tmp = order + n, *cand = tmp + n, *pf = cand + n, *pl = pf + n, *pts = pl + n;
  const size_t points = tg__obj_points(in, pf, pl, pts, order, tmp);
  uint64_t best_total = UINT64_MAX;
  const uint64_t nn = (uint64_t)n * n;
  const int shuffles = nn >= SHUFFLE_WORK ? 0
                       : SHUFFLE_WORK / nn > SHUFFLES_MAX ? SHUFFLES_MAX
                                                          : (int)(SHUFFLE_WORK / nn);
  uint64_t seed = 0x243F6A8885A308D3ull;
  /* Orders: volume desc; then each dimension leading (desc), the other dimensions following in
   * w, h, d order, volume last; then seeded shuffles. */
  const tg_usage_record *r0 = &in->records[0];
  const uint64_t *dim[3] = {&r0->size.w, &r0->size.h, &r0->size.d};
  for (int v = 0; v <= (int)in->dims + shuffles; ++v) {
    for (size_t r = 0; r < n; ++r) order[r] = (uint32_t)r;
    if (v <= (int)in->dims) {
      tg__sort_key keys[4];
      int nk = 0;
      if (v > 0) {
        keys[nk++] = (tg__sort_key){dim[v - 1], sizeof *r0, 1, 1};
        for (int d = 0; d < (int)in->dims; ++d)
          if (d != v - 1) keys[nk++] = (tg__sort_key){dim[d], sizeof *r0, 1, 1};
      }
      keys[nk++] = tg__key_u64(in->volumes, 1);
      for (int i = nk - 1; i >= 0; --i) tg__sort_idx(order, tmp, n, &keys[i]);
    } else {
      for (size_t i = n; i > 1; --i) {
        size_t j = (size_t)(mix_next(&seed) % i);
        uint32_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
      }
    }
    size_t objects;
    if ((st = tg__obj_assign_nd(in, order, pf, pl, points, cand, &objects)) != TG_OK) break;
    uint64_t total = plan_total(in, cand, objects, ext);
    /* The first order always counts: when every order's total overflows (saturates), its
     * plan is still emitted, and tg__plan_finish_objects reports TG_ERROR_OVERFLOW. */
    if (v == 0 || total < best_total) {
      best_total = total;
      memcpy(object_of, cand, n * sizeof *cand);
      *object_count = objects;
    }
  }
  tg__free(a, order);
  return st;
}

tg_status tg__objects_greedy_by_size(const tg__plan_input *in, tg_plan **out) {
  *out = NULL;
  tg_status st = tg__obj_check_count(in);
  if (st != TG_OK) return st;
  const size_t n = in->count;
  const tg_allocator *a = in->alloc;
  uint32_t *object_of = tg__obj_alloc(a, n, 5 * sizeof *object_of);
  if (object_of == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  uint32_t *pos = object_of + n, *by_first = pos + n, *by_last = by_first + n, *tmp = by_last + n;
  size_t objects = 0;
  if (n > 0 && in->dims > 1) {
    st = by_size_nd(in, object_of, &objects);
  } else if (n > 0) {
    tg__obj_order_by_first(in, by_first, tmp);
    for (size_t r = 0; r < n; ++r) by_last[r] = (uint32_t)r;
    tg__sort_key k = tg__key_last(in);
    tg__sort_idx(by_last, tmp, n, &k);
    /* The fast variant ranks task values (2n of them) below its UINT32_MAX sentinel, and
     * tests a relation only against a gap's two neighbours, which needs transitivity. */
    const tg_share_relation *rel = in->options->relation;
    if (n <= FAITHFUL_MAX || (rel != NULL && !rel->transitive) || n >= UINT32_MAX / 2) {
      st = record_positions(in, by_first, by_last, pos);
      if (st == TG_OK) st = by_size_faithful(in, pos, object_of, &objects);
    } else {
      st = by_size_fast(in, by_first, by_last, object_of, &objects);
    }
  }
  if (st == TG_OK) st = tg__obj_emit(in, object_of, objects, out);
  tg__free(a, object_of);
  return st;
}
