/* Helpers shared by the objects-mode strategies. */
#include "planner/strategies/objects_common.h"

static inline uint64_t sort_key_at(const tg__sort_key *k, uint32_t i) {
  const unsigned char *p = (const unsigned char *)k->base + (size_t)i * k->stride;
  uint64_t v;
  if (k->wide) {
    memcpy(&v, p, sizeof v);
  } else {
    uint32_t w;
    memcpy(&w, p, sizeof w);
    v = w;
  }
  return k->descending ? ~v : v;
}

void tg__sort_idx(uint32_t *idx, uint32_t *tmp, size_t n, const tg__sort_key *key) {
  if (n < 2) return;
  /* One counting pass for all digits; digits where every key agrees are skipped, so small keys
   * (task indices, ranks) cost two or three passes. */
  const int digits = key->wide ? 8 : 4;
  size_t hist[8][256];
  memset(hist, 0, (size_t)digits * sizeof hist[0]);
  for (size_t i = 0; i < n; ++i) {
    uint64_t k = sort_key_at(key, idx[i]);
    for (int d = 0; d < digits; ++d) hist[d][(k >> (8 * d)) & 0xFF]++;
  }
  uint32_t *src = idx, *dst = tmp;
  for (int d = 0; d < digits; ++d) {
    size_t *h = hist[d];
    if (h[(sort_key_at(key, src[0]) >> (8 * d)) & 0xFF] == n) continue;
    size_t sum = 0;
    for (int b = 0; b < 256; ++b) {
      size_t c = h[b];
      h[b] = sum;
      sum += c;
    }
    for (size_t i = 0; i < n; ++i) dst[h[(sort_key_at(key, src[i]) >> (8 * d)) & 0xFF]++] = src[i];
    uint32_t *t = src;
    src = dst;
    dst = t;
  }
  if (src != idx) memcpy(idx, src, n * sizeof *idx);
}

void tg__obj_order_by_first(const tg__plan_input *in, uint32_t *order, uint32_t *tmp) {
  if (in->count == 0) return;
  for (size_t r = 0; r < in->count; ++r) order[r] = (uint32_t)r;
  tg__sort_key k = tg__key_first(in);
  tg__sort_idx(order, tmp, in->count, &k);
}

void tg__obj_volume_classes(const tg__plan_input *in, uint32_t *class_of, uint64_t *class_volume,
                            size_t *class_count, uint32_t *idx, uint32_t *tmp) {
  const size_t n = in->count;
  *class_count = 0;
  if (n == 0) return;
  for (size_t r = 0; r < n; ++r) idx[r] = (uint32_t)r;
  tg__sort_key k = tg__key_u64(in->volumes, 0);
  tg__sort_idx(idx, tmp, n, &k);
  size_t c = 0;
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && in->volumes[idx[i]] != in->volumes[idx[i - 1]]) ++c;
    class_of[idx[i]] = (uint32_t)c;
    class_volume[c] = in->volumes[idx[i]];
  }
  *class_count = c + 1;
}

void tg__heap_push(uint64_t *heap, size_t *n, uint64_t v) {
  size_t i = (*n)++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (heap[p] <= v) break;
    heap[i] = heap[p];
    i = p;
  }
  heap[i] = v;
}

uint64_t tg__heap_pop(uint64_t *heap, size_t *n) {
  uint64_t top = heap[0];
  uint64_t v = heap[--(*n)];
  size_t m = *n, i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= m) break;
    if (c + 1 < m && heap[c + 1] < heap[c]) ++c;
    if (heap[c] >= v) break;
    heap[i] = heap[c];
    i = c;
  }
  if (m > 0) heap[i] = v;
  return top;
}

void tg__mintree_setup(tg__mintree *mt, uint32_t *storage, size_t n, uint32_t fill) {
  mt->size = tg__mintree_nodes(n) / 2;
  mt->t = storage;
  for (size_t i = 0; i < 2 * mt->size; ++i) mt->t[i] = fill;
}

tg_status tg__mintree_init(tg__mintree *mt, size_t n, uint32_t fill, const tg_allocator *a) {
  uint32_t *t = tg__obj_alloc(a, tg__mintree_nodes(n), sizeof *t);
  if (t == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  tg__mintree_setup(mt, t, n, fill);
  return TG_OK;
}

void tg__mintree_free(tg__mintree *mt, const tg_allocator *a) {
  tg__free(a, mt->t);
  mt->t = NULL;
}

void tg__mintree_set(tg__mintree *mt, size_t i, uint32_t v) {
  size_t p = mt->size + i;
  mt->t[p] = v;
  for (p >>= 1; p >= 1; p >>= 1) {
    uint32_t l = mt->t[2 * p], r = mt->t[2 * p + 1];
    uint32_t m = l < r ? l : r;
    if (mt->t[p] == m) break;
    mt->t[p] = m;
  }
}

size_t tg__mintree_first_below(const tg__mintree *mt, size_t lo, size_t hi, uint32_t thr) {
  if (lo >= hi) return SIZE_MAX;
  size_t right[64];
  size_t nr = 0;
  for (lo += mt->size, hi += mt->size; lo < hi; lo >>= 1, hi >>= 1) {
    if (lo & 1) {
      size_t p = lo++;
      if (mt->t[p] < thr) {
        while (p < mt->size) p = (mt->t[2 * p] < thr) ? 2 * p : 2 * p + 1;
        return p - mt->size;
      }
    }
    if (hi & 1) right[nr++] = --hi;
  }
  while (nr > 0) {
    size_t p = right[--nr];
    if (mt->t[p] >= thr) continue;
    while (p < mt->size) p = (mt->t[2 * p] < thr) ? 2 * p : 2 * p + 1;
    return p - mt->size;
  }
  return SIZE_MAX;
}

size_t tg__mintree_last_below(const tg__mintree *mt, size_t lo, size_t hi, uint32_t thr) {
  if (lo >= hi) return SIZE_MAX;
  size_t left[64];
  size_t nl = 0;
  for (lo += mt->size, hi += mt->size; lo < hi; lo >>= 1, hi >>= 1) {
    if (hi & 1) {
      size_t p = --hi;
      if (mt->t[p] < thr) {
        while (p < mt->size) p = (mt->t[2 * p + 1] < thr) ? 2 * p + 1 : 2 * p;
        return p - mt->size;
      }
    }
    if (lo & 1) left[nl++] = lo++;
  }
  while (nl > 0) {
    size_t p = left[--nl];
    if (mt->t[p] >= thr) continue;
    while (p < mt->size) p = (mt->t[2 * p + 1] < thr) ? 2 * p + 1 : 2 * p;
    return p - mt->size;
  }
  return SIZE_MAX;
}

tg_status tg__obj_share_init(tg__obj_share *s, const tg__plan_input *in) {
  const tg_share_relation *rel = in->options->relation;
  s->rel = rel;
  s->alloc = in->alloc;
  s->win = NULL;
  if (rel == NULL || rel->window == NULL) return TG_OK;
  const size_t n = in->count;
  s->win = tg__obj_alloc(in->alloc, n, 2 * sizeof *s->win);
  if (s->win == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t r = 0; r < n; ++r) {
    uint64_t l = 0, h = UINT64_MAX;
    rel->window(rel->user, r, &l, &h);
    if (l > in->records[r].first_task) l = in->records[r].first_task;
    if (h < in->records[r].last_task) h = in->records[r].last_task;
    s->win[2 * r] = l;
    s->win[2 * r + 1] = h;
  }
  return TG_OK;
}

void tg__obj_share_free(tg__obj_share *s) {
  if (s->alloc != NULL) tg__free(s->alloc, s->win);
  s->win = NULL;
}

tg_status tg__obj_members_init(tg__obj_members *m, const tg__plan_input *in) {
  memset(m, 0, sizeof *m);
  m->in = in;
  m->count = in->count;
  const tg_share_relation *rel = in->options->relation;
  if (rel == NULL) return TG_OK;
  const tg_allocator *a = in->alloc;
  const size_t n = in->count ? in->count : 1;
  m->active = 1;
  tg_status st = tg__obj_share_init(&m->share, in);
  if (st != TG_OK) {
    tg__obj_members_free(m);
    return st;
  }
  if (rel->transitive) {
    m->by_time = 1;
    /* pool: 12n entries (see the header), then at, len, cap, hint: n each. Offsets into the pool
     * are uint32: check that 12n fits. */
    if (n > (size_t)UINT32_MAX / 12) {
      tg__obj_members_free(m);
      return TG_ERROR_OVERFLOW;
    }
    m->pool = tg__obj_alloc(a, n, 12 * sizeof *m->pool + 4 * sizeof *m->at);
    if (m->pool == NULL) {
      tg__obj_members_free(m);
      return TG_ERROR_OUT_OF_HOST_MEMORY;
    }
    m->at = (uint32_t *)(m->pool + 12 * n);
    m->len = m->at + n;
    m->cap = m->len + n;
    m->hint = m->cap + n;
    memset(m->len, 0, 3 * n * sizeof *m->len);
    return TG_OK;
  }
  m->head = tg__obj_alloc(a, n, sizeof *m->head);
  m->next = tg__obj_alloc(a, n, sizeof *m->next);
  if (m->head == NULL || m->next == NULL) {
    tg__obj_members_free(m);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  for (size_t i = 0; i < n; ++i) m->head[i] = m->next[i] = TG__NONE;
  return TG_OK;
}

void tg__obj_members_free(tg__obj_members *m) {
  if (m->in == NULL) return;
  const tg_allocator *a = m->in->alloc;
  tg__obj_share_free(&m->share);
  tg__free(a, m->pool);
  tg__free(a, m->head);
  tg__free(a, m->next);
  m->pool = NULL;
  m->at = m->len = m->cap = m->hint = m->head = m->next = NULL;
  m->active = m->by_time = 0;
}

/* by_time: the number of members of `obj` that start before `first`. Strategies that visit
 * records by first task always append, so the last member is looked at first; others tend to
 * come back near where the previous search of the object ended, so it gallops from there. */
static size_t members_before(tg__obj_members *m, uint32_t obj, uint32_t first) {
  const uint64_t *v = m->pool + m->at[obj], key = (uint64_t)first << 32;
  const size_t len = m->len[obj];
  if (len == 0 || v[len - 1] < key) return len;
  size_t lo, hi; /* the answer lies in [lo, hi] */
  size_t h = m->hint[obj] < len ? m->hint[obj] : len - 1;
  if (v[h] < key) {
    lo = h + 1;
    hi = lo;
    for (size_t step = 1; hi < len && v[hi] < key; step *= 2) {
      lo = hi + 1;
      hi += step;
    }
    if (hi > len) hi = len;
  } else {
    hi = h;
    lo = h;
    for (size_t step = 1; lo > 0 && v[lo - 1] >= key; step *= 2) {
      hi = lo - 1;
      lo = lo > step ? lo - step : 0;
    }
  }
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  m->hint[obj] = (uint32_t)lo;
  return lo;
}

tg_status tg__obj_members_add(tg__obj_members *m, uint32_t obj, uint32_t r) {
  if (!m->active) return TG_OK;
  if (obj >= m->count || r >= m->count) return TG_ERROR_INTERNAL;
  if (!m->by_time) {
    m->next[r] = m->head[obj];
    m->head[obj] = r;
    return TG_OK;
  }
  if (m->len[obj] == m->cap[obj]) {
    const size_t nc = m->cap[obj] ? 2 * (size_t)m->cap[obj] : 4;
    if (nc > 12 * m->count - m->used) return TG_ERROR_INTERNAL; /* the bound above */
    if (m->len[obj] > 0) /* (a new object's `at` is not set yet) */
      memcpy(m->pool + m->used, m->pool + m->at[obj], m->len[obj] * sizeof *m->pool);
    m->at[obj] = (uint32_t)m->used;
    m->cap[obj] = (uint32_t)nc;
    m->used += nc;
  }
  const uint32_t first = m->in->records[r].first_task;
  const size_t pos = members_before(m, obj, first);
  uint64_t *v = m->pool + m->at[obj];
  memmove(v + pos + 1, v + pos, (m->len[obj] - pos) * sizeof *v);
  v[pos] = (uint64_t)first << 32 | r;
  m->len[obj]++;
  return TG_OK;
}

int tg__obj_may_join(tg__obj_members *m, uint32_t obj, size_t r) {
  if (!m->active) return 1;
  const tg__plan_input *in = m->in;
  if (!m->by_time) {
    for (uint32_t x = m->head[obj]; x != TG__NONE; x = m->next[x]) {
      const tg_usage_record *a = &in->records[x], *b = &in->records[r];
      if (a->first_task <= b->last_task && b->first_task <= a->last_task) return 0;
      if (x != r && !tg__obj_share_ok(&m->share, x, r)) return 0;
    }
    return 1;
  }
  /* Members are disjoint and sorted: only the last one starting before r can reach into r,
   * and r reaches into a later one only if it reaches into the first of them. */
  const tg_usage_record *recs = in->records, *rec = &recs[r];
  const uint64_t *v = m->pool + m->at[obj];
  const size_t len = m->len[obj], k = members_before(m, obj, rec->first_task);
  if (k > 0) {
    const uint32_t p = (uint32_t)v[k - 1];
    if (recs[p].last_task >= rec->first_task) return 0;
    if (p != r && !tg__obj_share_ok(&m->share, p, r)) return 0;
  }
  if (k < len) {
    const uint32_t q = (uint32_t)v[k];
    if (recs[q].first_task <= rec->last_task) return 0;
    if (q != r && !tg__obj_share_ok(&m->share, q, r)) return 0;
  }
  return 1;
}

static void sched_free(tg__obj_sched *s, const tg_allocator *a);

static tg_status sched_init(tg__obj_sched *s, size_t max_objects, const tg_allocator *a) {
  size_t n = max_objects ? max_objects : 1;
  s->objects = 0;
  s->capacity = n;
  s->iv = tg__calloc(a, n, sizeof *s->iv);
  s->len = tg__calloc(a, n, sizeof *s->len);
  s->cap = tg__calloc(a, n, sizeof *s->cap);
  s->hint = tg__calloc(a, n, sizeof *s->hint);
  if (s->iv == NULL || s->len == NULL || s->cap == NULL || s->hint == NULL) {
    sched_free(s, a);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  return TG_OK;
}

static void sched_free(tg__obj_sched *s, const tg_allocator *a) {
  if (s->iv != NULL)
    for (size_t o = 0; o < s->objects; ++o) tg__free(a, s->iv[o]);
  tg__free(a, s->iv);
  tg__free(a, s->len);
  tg__free(a, s->cap);
  tg__free(a, s->hint);
  s->iv = NULL;
  s->len = s->cap = s->hint = NULL;
  s->objects = 0;
}

/* Index of the last interval of o starting at or before `task`, or -1. Searches of an object
 * tend to land close to the previous one (records arrive in time-local orders), so it gallops
 * from there. */
static ptrdiff_t sched_floor(tg__obj_sched *s, uint32_t o, uint32_t task) {
  const uint64_t *v = s->iv[o];
  const size_t len = s->len[o];
  const uint64_t key = ((uint64_t)task << 32) | 0xFFFFFFFFu;
  size_t h = s->hint[o] < len ? s->hint[o] : len - 1;
  size_t lo, hi; /* answer (count of entries <= key) lies in [lo, hi] */
  if (v[h] <= key) {
    lo = h + 1;
    size_t step = 1;
    hi = lo;
    while (hi < len && v[hi] <= key) {
      lo = hi + 1;
      hi += step;
      step *= 2;
    }
    if (hi > len) hi = len;
  } else {
    hi = h;
    size_t step = 1;
    lo = h;
    while (lo > 0 && v[lo - 1] > key) {
      hi = lo - 1;
      lo = lo > step ? lo - step : 0;
      step *= 2;
    }
  }
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid] <= key) lo = mid + 1;
    else hi = mid;
  }
  s->hint[o] = (uint32_t)(lo ? lo - 1 : 0);
  return (ptrdiff_t)lo - 1;
}

static int sched_free_for(tg__obj_sched *s, uint32_t o, uint32_t first, uint32_t last) {
  if (s->len[o] == 0) return 1;
  ptrdiff_t i = sched_floor(s, o, last);
  return i < 0 || (uint32_t)s->iv[o][i] < first;
}

static tg_status sched_add(tg__obj_sched *s, uint32_t o, uint32_t first, uint32_t last,
                            const tg_allocator *a) {
  if (o >= s->objects) {
    if (o != s->objects || o >= s->capacity) return TG_ERROR_INTERNAL;
    s->iv[o] = NULL;
    s->len[o] = s->cap[o] = s->hint[o] = 0;
    s->objects = o + 1;
  }
  if (s->len[o] == s->cap[o]) {
    uint32_t nc = s->cap[o] ? 2 * s->cap[o] : 4;
    uint64_t *nv = tg__realloc(a, s->iv[o], s->cap[o] * sizeof *nv, (size_t)nc * sizeof *nv);
    if (nv == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
    s->iv[o] = nv;
    s->cap[o] = nc;
  }
  size_t pos = s->len[o] ? (size_t)(sched_floor(s, o, first) + 1) : 0;
  uint64_t *v = s->iv[o];
  memmove(v + pos + 1, v + pos, (s->len[o] - pos) * sizeof *v);
  v[pos] = ((uint64_t)first << 32) | last;
  s->len[o]++;
  return TG_OK;
}

tg_status tg__obj_emit(const tg__plan_input *in, const uint32_t *object_of, size_t object_count,
                       tg_plan **out) {
  tg_status st = tg_plan_create(TG_MODE_OBJECTS, in->dims, in->count, object_count, in->alloc, out);
  if (st != TG_OK) return st;
  if (in->count) memcpy((*out)->object_of, object_of, in->count * sizeof *object_of);
  st = tg__plan_finish_objects(in, *out);
  if (st != TG_OK) {
    tg_plan_destroy(*out);
    *out = NULL;
  }
  return st;
}

static tg_status occ_switch_to_sched(tg__obj_occ *oc, size_t objects) {
  const tg_allocator *a = oc->in->alloc;
  tg_status st = sched_init(&oc->sched, oc->in->count, a);
  if (st != TG_OK) return st;
  oc->use_sched = 1;
  oc->sched.objects = objects; /* ids below are in use (their arrays start empty) */
  for (size_t i = 0; i < oc->placed_n; ++i) {
    const tg_usage_record *rec = &oc->in->records[oc->placed[i]];
    st = sched_add(&oc->sched, oc->placed_obj[i], rec->first_task, rec->last_task, a);
    if (st != TG_OK) return st;
  }
  tg__free(a, oc->bits);
  oc->bits = NULL;
  oc->rows = 0;
  return TG_OK;
}

tg_status tg__obj_occ_init(tg__obj_occ *oc, const tg__plan_input *in, const uint32_t *pf,
                           const uint32_t *pl, size_t points) {
  memset(oc, 0, sizeof *oc);
  oc->in = in;
  oc->pf = pf;
  oc->pl = pl;
  oc->words = (points + 63) / 64;
  const size_t n = in->count;
  oc->placed = tg__obj_alloc(in->alloc, n + points + 1, 2 * sizeof *oc->placed);
  if (oc->placed == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  oc->placed_obj = oc->placed + n;
  /* Rows for twice the most records live at once (every strategy needs at least that many
   * objects, and rarely many more), in one allocation of a predictable size. */
  uint32_t *live = oc->placed_obj + n;
  memset(live, 0, (points + 1) * sizeof *live);
  for (size_t r = 0; r < n; ++r) {
    live[pf[r]]++;
    live[pl[r] + 1]--;
  }
  uint32_t most = 0, c = 0; /* live[] holds wrapped decrements: sum modulo 2^32 */
  for (size_t p = 0; p < points; ++p) {
    c += live[p];
    if (c > most) most = c;
  }
  size_t rows = 2 * (size_t)most + 16, bytes;
  if (rows > n) rows = n ? n : 1;
  tg_status st = TG_OK;
  if (!tg__mul_size(rows, oc->words * sizeof *oc->bits, &bytes) || bytes > TG__OCC_BITS_MAX) {
    if ((st = occ_switch_to_sched(oc, 0)) != TG_OK) tg__obj_occ_free(oc);
    return st;
  }
  oc->bits = tg__malloc(in->alloc, bytes);
  if (oc->bits == NULL) {
    tg__obj_occ_free(oc);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  memset(oc->bits, 0, bytes);
  oc->rows = rows;
  return TG_OK;
}

void tg__obj_occ_free(tg__obj_occ *oc) {
  const tg_allocator *a = oc->in->alloc;
  tg__free(a, oc->bits);
  tg__free(a, oc->placed);
  if (oc->use_sched) sched_free(&oc->sched, a);
  oc->bits = NULL;
  oc->placed = NULL;
}

int tg__obj_occ_free_for(tg__obj_occ *oc, uint32_t o, uint32_t r) {
  if (oc->use_sched) {
    const tg_usage_record *rec = &oc->in->records[r];
    return o >= oc->sched.objects ||
           sched_free_for(&oc->sched, o, rec->first_task, rec->last_task);
  }
  if (o >= oc->rows) return 1;
  const uint64_t *row = oc->bits + (size_t)o * oc->words;
  const uint32_t a = oc->pf[r], b = oc->pl[r];
  const size_t wa = a >> 6, wb = b >> 6;
  const uint64_t head = ~(uint64_t)0 << (a & 63), tail = ~(uint64_t)0 >> (63 - (b & 63));
  if (wa == wb) return (row[wa] & head & tail) == 0;
  if (row[wa] & head) return 0;
  for (size_t w = wa + 1; w < wb; ++w)
    if (row[w]) return 0;
  return (row[wb] & tail) == 0;
}

tg_status tg__obj_occ_add(tg__obj_occ *oc, uint32_t o, uint32_t r) {
  const tg_allocator *a = oc->in->alloc;
  tg_status st;
  if (!oc->use_sched && o >= oc->rows && (st = occ_switch_to_sched(oc, o)) != TG_OK) return st;
  if (oc->use_sched) {
    const tg_usage_record *rec = &oc->in->records[r];
    if ((st = sched_add(&oc->sched, o, rec->first_task, rec->last_task, a)) != TG_OK)
      return st;
  } else {
    uint64_t *row = oc->bits + (size_t)o * oc->words;
    const uint32_t pa = oc->pf[r], pb = oc->pl[r];
    const size_t wa = pa >> 6, wb = pb >> 6;
    const uint64_t head = ~(uint64_t)0 << (pa & 63), tail = ~(uint64_t)0 >> (63 - (pb & 63));
    if (wa == wb) {
      row[wa] |= head & tail;
    } else {
      row[wa] |= head;
      for (size_t w = wa + 1; w < wb; ++w) row[w] = ~(uint64_t)0;
      row[wb] |= tail;
    }
  }
  oc->placed[oc->placed_n] = r;
  oc->placed_obj[oc->placed_n++] = o;
  return TG_OK;
}

tg_status tg__obj_assign_nd(const tg__plan_input *in, const uint32_t *order, const uint32_t *pf,
                            const uint32_t *pl, size_t points, uint32_t *object_of,
                            size_t *object_count) {
  const size_t n = in->count;
  const tg_allocator *a = in->alloc;
  tg_status st = TG_OK;
  tg_extent *ext = tg__obj_alloc(a, n, sizeof *ext + sizeof(uint64_t));
  if (ext == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  uint64_t *vol = (uint64_t *)(ext + n);
  tg__obj_occ occ;
  tg__obj_members mem;
  if ((st = tg__obj_occ_init(&occ, in, pf, pl, points)) != TG_OK) {
    tg__free(a, ext);
    return st;
  }
  if ((st = tg__obj_members_init(&mem, in)) != TG_OK) goto done;
  size_t objects = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t r = order[i];
    const tg_usage_record *rec = &in->records[r];
    const uint64_t v = in->volumes[r];
    uint32_t best = TG__NONE;
    uint64_t best_added = 0, best_waste = 0;
    tg_extent best_ext = rec->size;
    for (uint32_t o = 0; o < objects; ++o) {
      tg_extent g = tg__extent_max(ext[o], rec->size);
      uint64_t gv = tg__extent_volume_sat(g);
      if (gv == UINT64_MAX) continue;
      uint64_t added = gv - vol[o], waste = gv - v;
      if (best != TG__NONE &&
          (added > best_added || (added == best_added && waste >= best_waste)))
        continue;
      if (added != 0 && added >= v) continue;
      if (!tg__obj_occ_free_for(&occ, o, r)) continue;
      if (!tg__obj_may_join(&mem, o, r)) continue;
      best = o;
      best_added = added;
      best_waste = waste;
      best_ext = g;
    }
    if (best == TG__NONE) {
      best = (uint32_t)objects++;
      ext[best] = rec->size;
      vol[best] = v;
    } else {
      ext[best] = best_ext;
      vol[best] += best_added;
    }
    if ((st = tg__obj_occ_add(&occ, best, r)) != TG_OK) goto done;
    if ((st = tg__obj_members_add(&mem, best, r)) != TG_OK) goto done;
    object_of[r] = best;
  }
  *object_count = objects;
done:
  tg__obj_occ_free(&occ);
  tg__obj_members_free(&mem);
  tg__free(a, ext);
  return st;
}

size_t tg__obj_points(const tg__plan_input *in, uint32_t *pf, uint32_t *pl, uint32_t *pts,
                      uint32_t *idx, uint32_t *tmp) {
  const size_t n = in->count;
  tg__obj_order_by_first(in, idx, tmp);
  size_t points = 0;
  for (size_t i = 0; i < n; ++i) {
    uint32_t f = in->records[idx[i]].first_task;
    if (points == 0 || pts[points - 1] != f) pts[points++] = f;
    pf[idx[i]] = (uint32_t)(points - 1);
  }
  /* Last point not after each last task: a merge with the records by last task. */
  for (size_t r = 0; r < n; ++r) idx[r] = (uint32_t)r;
  tg__sort_key k = tg__key_last(in);
  tg__sort_idx(idx, tmp, n, &k);
  for (size_t i = 0, p = 0; i < n; ++i) {
    const uint32_t last = in->records[idx[i]].last_task;
    while (p + 1 < points && pts[p + 1] <= last) ++p;
    pl[idx[i]] = (uint32_t)p;
  }
  return points;
}
