/* The waits a plan adds on a parallel runtime, and the schedule as JSON.
 *
 * When records A and B share memory and A comes first, B's producer overwrites what A held, so
 * it must wait for every op touching A. The graph already orders some of those ops before B's
 * producer; the others need an extra edge. Candidate edges are collected from the sharing
 * pairs, then every candidate that a longer path (through graph edges and other candidates)
 * already implies is dropped, leaving the transitive reduction's reuse edges: the minimum set of
 * waits a runtime must add. In objects mode only consecutive users of an object are paired:
 * pairs further apart are implied through the ones between (each user's ops reach the next
 * user's producer, which reaches that user's consumers). */
#include "schedule/schedule_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct candidate {
  uint32_t op;     /* waits: producer of B */
  uint32_t after;  /* touches A */
  size_t record;   /* B */
  size_t reused;   /* A */
} candidate;

typedef struct candidate_list {
  candidate *items;
  size_t count;
  size_t capacity;
  const tg_allocator *alloc;
} candidate_list;

static int candidate_push(candidate_list *l, candidate c) {
  if (l->count == l->capacity) {
    size_t cap = l->capacity ? l->capacity * 2 : 64, bytes;
    if (cap < l->capacity || !tg__mul_size(cap, sizeof *l->items, &bytes)) return 0;
    candidate *p = tg__realloc(l->alloc, l->items, l->capacity * sizeof *l->items, bytes);
    if (p == NULL) return 0;
    l->items = p;
    l->capacity = cap;
  }
  l->items[l->count++] = c;
  return 1;
}

static int candidate_cmp(const void *pa, const void *pb) {
  const candidate *a = pa, *b = pb;
  if (a->op != b->op) return a->op < b->op ? -1 : 1;
  if (a->after != b->after) return a->after < b->after ? -1 : 1;
  if (a->record != b->record) return a->record < b->record ? -1 : 1;
  if (a->reused != b->reused) return a->reused < b->reused ? -1 : 1;
  return 0;
}

typedef struct waits_ctx {
  const tg_schedule *s;
  const tg_usage_record *records;
  const uint32_t *tensor_of;
  candidate_list cands;
  size_t sharing_pairs;
  size_t unsafe_pairs;
  tg_error_info *err;
  const size_t *in_place_input; /* per record: the input of the in-place pair it is the output of */
} waits_ctx;

/* Records a and b use the same memory: order them, check their intervals, and collect the
 * edges B's producer needs. An in-place pair (B written over A by the op that last reads A)
 * meets at that op, which orders itself; every other op touching A still needs an edge. */
static tg_status examine_pair(waits_ctx *c, size_t a, size_t b) {
  const int pair = c->in_place_input && (c->in_place_input[a] == b || c->in_place_input[b] == a);
  if (pair ? c->in_place_input[a] == b : c->records[b].last_task < c->records[a].first_task) {
    size_t t = a;
    a = b;
    b = t;
  }
  const tg_usage_record *ra = &c->records[a], *rb = &c->records[b];
  if (!pair && ra->first_task <= rb->last_task && rb->first_task <= ra->last_task)
    return tg__error(c->err, TG_ERROR_INVALID_PLAN,
                     "records %zu and %zu share memory but their intervals [%u,%u] and [%u,%u] "
                     "intersect",
                     a, b, ra->first_task, ra->last_task, rb->first_task, rb->last_task);
  const tg_schedule *s = c->s;
  c->sharing_pairs++;
  size_t ta = c->tensor_of[a], tb = c->tensor_of[b];
  int32_t y = tg__sched_producer(s, tb);
  /* B is written before the run starts: nothing runs before it. */
  if (y < 0) return TG_OK;
  int unsafe = 0;
  size_t k = 0;
  for (int32_t x; (x = tg__sched_next_unordered(s, &s->reach, ta, (size_t)y, &k)) >= 0;) {
    if (x > y)
      return tg__error(c->err, TG_ERROR_INVALID_ARGUMENT,
                       "records %zu and %zu do not match the graph: op %d touches tensor %zu of "
                       "the earlier record but runs after op %d, the producer of tensor %zu",
                       a, b, (int)x, ta, (int)y, tb);
    if (!candidate_push(&c->cands, (candidate){(uint32_t)y, (uint32_t)x, b, a}))
      return TG_ERROR_OUT_OF_HOST_MEMORY;
    unsafe = 1;
  }
  c->unsafe_pairs += (size_t)unsafe;
  return TG_OK;
}

typedef struct span {
  uint64_t lo, hi;   /* objects: first/last task; offsets: [offset, end) */
  size_t record;
} span;

static int span_cmp(const void *pa, const void *pb) {
  const span *a = pa, *b = pb;
  if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
  if (a->hi != b->hi) return a->hi < b->hi ? -1 : 1;
  return a->record < b->record ? -1 : (a->record > b->record);
}

static tg_status pairs_objects(waits_ctx *c, const tg_plan *plan, size_t n,
                               const tg_allocator *alloc) {
  size_t objects = plan->object_count;
  for (size_t r = 0; r < n; ++r)
    if (plan->object_of[r] >= objects)
      return tg__error(c->err, TG_ERROR_INVALID_PLAN, "record %zu: object %u out of range", r,
                       plan->object_of[r]);
  size_t *start = tg__calloc(alloc, objects + 1, sizeof *start);
  span *spans = tg__calloc(alloc, n ? n : 1, sizeof *spans);
  size_t *fill = tg__calloc(alloc, objects ? objects : 1, sizeof *fill);
  tg_status st = TG_ERROR_OUT_OF_HOST_MEMORY;
  if (start == NULL || spans == NULL || fill == NULL) goto done;
  for (size_t r = 0; r < n; ++r) start[plan->object_of[r] + 1]++;
  for (size_t k = 0; k < objects; ++k) start[k + 1] += start[k];
  for (size_t r = 0; r < n; ++r) {
    uint32_t k = plan->object_of[r];
    spans[start[k] + fill[k]++] =
        (span){c->records[r].first_task, c->records[r].last_task, r};
  }
  st = TG_OK;
  for (size_t k = 0; k < objects && st == TG_OK; ++k) {
    size_t m = start[k + 1] - start[k];
    span *g = spans + start[k];
    qsort(g, m, sizeof *g, span_cmp);
    /* Sorted by first task, any intersection shows between neighbours. */
    for (size_t i = 0; i + 1 < m && st == TG_OK; ++i) st = examine_pair(c, g[i].record, g[i + 1].record);
  }
done:
  tg__free(alloc, start);
  tg__free(alloc, spans);
  tg__free(alloc, fill);
  return st;
}

static tg_status pairs_offsets(waits_ctx *c, const tg_plan *plan, size_t n,
                               const tg_allocator *alloc) {
  span *spans = tg__calloc(alloc, n ? n : 1, sizeof *spans);
  /* Several arenas: addresses with the arenas back to back, so only records of one arena meet. */
  const size_t na = plan->arena_count > 1 && plan->arena_of && plan->arena_sizes ? plan->arena_count : 0;
  uint64_t *base = tg__calloc(alloc, na + 1, sizeof *base);
  if (spans == NULL || base == NULL) {
    tg__free(alloc, spans);
    tg__free(alloc, base);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  for (size_t k = 0; k < na; ++k)
    if (!tg__add_u64(base[k], plan->arena_sizes[k], &base[k + 1])) base[k + 1] = UINT64_MAX;
  size_t m = 0;
  for (size_t r = 0; r < n; ++r) {
    uint64_t size, end, at = plan->offset_of[r];
    int ok = tg_extent_volume(c->records[r].size, &size) == TG_OK;
    if (ok && na) ok = plan->arena_of[r] < na && tg__add_u64(at, base[plan->arena_of[r]], &at);
    if (!ok || !tg__add_u64(at, size, &end)) {
      tg__free(alloc, spans);
      tg__free(alloc, base);
      return tg__error(c->err, TG_ERROR_INVALID_PLAN, "record %zu: offset + size overflows, or no such arena", r);
    }
    if (size > 0) spans[m++] = (span){at, end, r};
  }
  tg__free(alloc, base);
  qsort(spans, m, sizeof *spans, span_cmp);
  tg_status st = TG_OK;
  for (size_t i = 0; i < m && st == TG_OK; ++i)
    for (size_t j = i + 1; j < m && spans[j].lo < spans[i].hi && st == TG_OK; ++j)
      st = examine_pair(c, spans[i].record, spans[j].record);
  tg__free(alloc, spans);
  return st;
}

void tg_waits_destroy(tg_waits *w) {
  if (w == NULL) return;
  tg_allocator a = w->alloc;
  tg__free(&a, w->after_start);
  tg__free(&a, w->after);
  tg__free(&a, w->reuse_edges);
  tg__free(&a, w->reuse_start);
  tg__free(&a, w);
}

tg_status tg_wait_lists_create(const tg_waits *waits, int with_reuse, const tg_allocator *alloc,
                               tg_wait_lists **out) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  if (waits == NULL) return TG_ERROR_INVALID_ARGUMENT;
  alloc = tg__alloc_or_default(alloc);
  size_t n = waits->op_count;
  size_t total = waits->after_start[n] + (with_reuse ? waits->reuse_edge_count : 0);
  /* One block: the lists' pointers, then the counts, then every list's entries. */
  size_t bytes = sizeof(tg_wait_lists) + n * sizeof(uint32_t *) + n * sizeof(uint32_t) + total * sizeof(uint32_t);
  tg_wait_lists *l = tg__calloc(alloc, 1, bytes);
  if (l == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  l->alloc = *alloc;
  l->op_count = n;
  const uint32_t **lists = (const uint32_t **)(void *)(l + 1);
  l->counts = (uint32_t *)(void *)(lists + n);
  uint32_t *storage = l->counts + n, *at = storage;
  for (size_t o = 0; o < n; ++o) {
    lists[o] = at;
    for (size_t i = waits->after_start[o]; i < waits->after_start[o + 1]; ++i) *at++ = waits->after[i];
    if (with_reuse)
      for (size_t i = waits->reuse_start[o]; i < waits->reuse_start[o + 1]; ++i) *at++ = waits->reuse_edges[i].after;
    l->counts[o] = (uint32_t)(at - lists[o]);
  }
  l->lists = lists;
  *out = l;
  return TG_OK;
}

void tg_wait_lists_destroy(tg_wait_lists *l) {
  if (l == NULL) return;
  tg_allocator a = l->alloc;
  tg__free(&a, l);
}

/* Drop candidates implied by longer paths; `cands` sorted by (op, after) and distinct. Kept
 * ones are flagged in `keep`. */
static tg_status reduce_candidates(const tg_schedule *s, const candidate *cands, size_t count,
                                   uint8_t *keep, const tg_allocator *alloc) {
  size_t n = s->op_count;
  size_t *start = tg__calloc(alloc, n + 1, sizeof *start);
  size_t *fill = tg__calloc(alloc, n ? n : 1, sizeof *fill);
  size_t total = s->succ_start[n];
  tg_status st = TG_ERROR_OUT_OF_HOST_MEMORY;
  uint32_t *succ = NULL, *extra = NULL;
  size_t *extra_start = NULL;
  tg__closure reach = {0, 0, NULL, NULL};
  if (start == NULL || fill == NULL || total > SIZE_MAX - count - 1) goto done;
  /* Reuse targets per source op, ascending (candidates come sorted by target). */
  extra_start = tg__calloc(alloc, n + 1, sizeof *extra_start);
  extra = tg__calloc(alloc, count ? count : 1, sizeof *extra);
  succ = tg__calloc(alloc, total + count + 1, sizeof *succ);
  if (extra_start == NULL || extra == NULL || succ == NULL) goto done;
  for (size_t e = 0; e < count; ++e) extra_start[cands[e].after + 1]++;
  for (size_t i = 0; i < n; ++i) extra_start[i + 1] += extra_start[i];
  for (size_t e = 0; e < count; ++e) {
    uint32_t x = cands[e].after;
    extra[extra_start[x] + fill[x]++] = cands[e].op;
  }
  /* Merge graph successors and reuse targets per op (both ascending, never equal: a reuse
   * edge is never a graph edge). */
  for (size_t i = 0; i < n; ++i) {
    size_t g = s->succ_start[i], ge = s->succ_start[i + 1];
    size_t r = extra_start[i], re = extra_start[i + 1];
    size_t at = start[i];
    while (g < ge || r < re) {
      if (r >= re || (g < ge && s->succs[g] < extra[r])) succ[at++] = s->succs[g++];
      else succ[at++] = extra[r++];
    }
    start[i + 1] = at;
  }
  if ((st = tg__closure_alloc(alloc, n, &reach)) != TG_OK) goto done;
  tg__closure_compute(&reach, start, succ);
  for (size_t e = 0; e < count; ++e) {
    uint32_t x = cands[e].after, y = cands[e].op;
    int implied = 0;
    for (size_t k = start[x]; k < start[x + 1] && !implied; ++k) {
      uint32_t v = succ[k];
      if (v != y && tg__closure_get(&reach, v, y)) implied = 1;
    }
    keep[e] = (uint8_t)!implied;
  }
  st = TG_OK;
done:
  tg__free(alloc, start);
  tg__free(alloc, fill);
  tg__free(alloc, extra_start);
  tg__free(alloc, extra);
  tg__free(alloc, succ);
  tg__closure_free(alloc, &reach);
  return st;
}

static tg_status entry_schedule_compute_waits(const tg_schedule *s, const tg_usage_record *records,
                                    const uint32_t *tensor_of_record, size_t record_count,
                                    const tg_plan *plan, const tg_allocator *alloc,
                                    tg_waits **out, tg_error_info *err) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  if (s == NULL || plan == NULL ||
      (record_count > 0 && (records == NULL || tensor_of_record == NULL)))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "waits: missing schedule, plan or records");
  if (plan->record_count != record_count ||
      (plan->mode == TG_MODE_OBJECTS && record_count > 0 && plan->object_of == NULL) ||
      (plan->mode == TG_MODE_OFFSETS && record_count > 0 && plan->offset_of == NULL))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                     "waits: the plan has %zu records, not %zu, or lacks its placements",
                     plan->record_count, record_count);
  for (size_t r = 0; r < record_count; ++r)
    if (tensor_of_record[r] >= s->tensor_count)
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                       "waits: record %zu names tensor %u; the graph has %zu", r,
                       tensor_of_record[r], s->tensor_count);
  alloc = tg__alloc_or_default(alloc);
  size_t n = s->op_count;

  waits_ctx c = {s, records, tensor_of_record, {NULL, 0, 0, alloc}, 0, 0, err, NULL};
  size_t *in_place_input = NULL;
  if (plan->in_place_count > 0) {
    in_place_input = tg__calloc(alloc, record_count ? record_count : 1, sizeof *in_place_input);
    if (in_place_input == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
    for (size_t r = 0; r < record_count; ++r) in_place_input[r] = SIZE_MAX;
    for (size_t i = 0; i < plan->in_place_count; ++i)
      if (plan->in_place[i].output < record_count) in_place_input[plan->in_place[i].output] = plan->in_place[i].input;
    c.in_place_input = in_place_input;
  }
  tg_status st = plan->mode == TG_MODE_OBJECTS ? pairs_objects(&c, plan, record_count, alloc)
                                               : pairs_offsets(&c, plan, record_count, alloc);
  tg_waits *w = NULL;
  uint8_t *keep = NULL;
  uint32_t *level = NULL;
  if (st != TG_OK) goto fail;

  /* Distinct (op, after) pairs; the first label (smallest records) names the edge. */
  candidate *cs = c.cands.items;
  if (c.cands.count > 1) qsort(cs, c.cands.count, sizeof *cs, candidate_cmp);
  size_t distinct = 0;
  for (size_t e = 0; e < c.cands.count; ++e)
    if (distinct == 0 || cs[distinct - 1].op != cs[e].op || cs[distinct - 1].after != cs[e].after)
      cs[distinct++] = cs[e];

  st = TG_ERROR_OUT_OF_HOST_MEMORY;
  w = tg__calloc(alloc, 1, sizeof *w);
  if (w == NULL) goto fail;
  w->alloc = *alloc;
  keep = tg__calloc(alloc, distinct ? distinct : 1, 1);
  level = tg__calloc(alloc, n ? n : 1, sizeof *level);
  if (keep == NULL || level == NULL) goto fail;
  w->op_count = n;
  w->sharing_pairs = c.sharing_pairs;
  w->unsafe_pairs = c.unsafe_pairs;
  w->critical_path = s->wave_count;
  if (distinct > 0 && (st = reduce_candidates(s, cs, distinct, keep, alloc)) != TG_OK) goto fail;
  st = TG_ERROR_OUT_OF_HOST_MEMORY;

  size_t kept = 0;
  for (size_t e = 0; e < distinct; ++e) kept += keep[e];
  w->after_start = tg__calloc(alloc, n + 1, sizeof *w->after_start);
  w->after = tg__calloc(alloc, s->edge_count ? s->edge_count : 1, sizeof *w->after);
  w->reuse_start = tg__calloc(alloc, n + 1, sizeof *w->reuse_start);
  w->reuse_edges = tg__calloc(alloc, kept ? kept : 1, sizeof *w->reuse_edges);
  if (!w->after_start || !w->after || !w->reuse_start || !w->reuse_edges) goto fail;
  memcpy(w->after_start, s->sched_pred_start, (n + 1) * sizeof *w->after_start);
  if (s->edge_count) memcpy(w->after, s->sched_preds, s->edge_count * sizeof *w->after);
  w->reuse_edge_count = kept;
  size_t at = 0;
  for (size_t e = 0; e < distinct; ++e) {
    if (!keep[e]) continue;
    const candidate *k = &cs[e];
    w->reuse_edges[at++] = (tg_reuse_edge){k->after, k->op, tensor_of_record[k->record],
                                           tensor_of_record[k->reused], k->record, k->reused};
    w->reuse_start[k->op + 1]++;
  }
  for (size_t i = 0; i < n; ++i) w->reuse_start[i + 1] += w->reuse_start[i];

  /* Longest chain with the reuse edges: ASAP levels over both kinds of edge. */
  size_t longest = 0;
  for (size_t i = 0; i < n; ++i) {
    if (s->folded[i]) continue;
    uint32_t l = 0;
    for (size_t e = s->sched_pred_start[i]; e < s->sched_pred_start[i + 1]; ++e)
      if (level[s->sched_preds[e]] + 1 > l) l = level[s->sched_preds[e]] + 1;
    for (size_t e = w->reuse_start[i]; e < w->reuse_start[i + 1]; ++e)
      if (level[w->reuse_edges[e].after] + 1 > l) l = level[w->reuse_edges[e].after] + 1;
    level[i] = l;
    if ((size_t)l + 1 > longest) longest = (size_t)l + 1;
  }
  w->critical_path_with_reuse = longest;

  tg__free(alloc, keep);
  tg__free(alloc, level);
  tg__free(alloc, c.cands.items);
  tg__free(alloc, in_place_input);
  *out = w;
  return TG_OK;

fail:
  if (st == TG_ERROR_OUT_OF_HOST_MEMORY) tg__error(err, st, "waits: out of host memory");
  tg__free(alloc, keep);
  tg__free(alloc, level);
  tg__free(alloc, c.cands.items);
  tg__free(alloc, in_place_input);
  tg_waits_destroy(w);
  return st;
}

static void json_op_list(tg__strbuf *b, const uint32_t *ops, size_t count) {
  tg__strbuf_puts(b, "[");
  for (size_t i = 0; i < count; ++i) tg__strbuf_printf(b, "%s%u", i ? "," : "", ops[i]);
  tg__strbuf_puts(b, "]");
}

static const char *tensor_name_or_null(const tg_graph *g, size_t t) {
  return (g != NULL && t < g->tensor_count) ? g->tensors[t].name : NULL;
}

tg_status tg_schedule_build_json(const tg_schedule *s, const tg_graph *g, const tg_waits *w,
                                 const tg_allocator *alloc, char **json, size_t *length) {
  if (json == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *json = NULL;
  if (length) *length = 0;
  if (s == NULL || (w != NULL && w->op_count != s->op_count) ||
      (g != NULL && (g->op_count != s->op_count || g->tensor_count != s->tensor_count)))
    return TG_ERROR_INVALID_ARGUMENT;
  alloc = tg__alloc_or_default(alloc);
  tg__strbuf b;
  tg__strbuf_init(&b, alloc);
  tg__strbuf_printf(&b, "{\"ops\":%zu,\"folded\":[", s->op_count);
  size_t listed = 0;
  for (size_t i = 0; i < s->op_count; ++i)
    if (s->folded[i]) tg__strbuf_printf(&b, "%s%zu", listed++ ? "," : "", i);
  tg__strbuf_puts(&b, "],\"waves\":[");
  for (size_t v = 0; v < s->wave_count; ++v) {
    if (v) tg__strbuf_puts(&b, ",");
    json_op_list(&b, s->wave_ops + s->wave_start[v], s->wave_start[v + 1] - s->wave_start[v]);
  }
  tg__strbuf_puts(&b, "],\"waits\":[");
  for (size_t i = 0; i < s->op_count; ++i) {
    tg__strbuf_printf(&b, "%s{\"op\":%zu,\"after\":", i ? "," : "", i);
    json_op_list(&b, s->sched_preds + s->sched_pred_start[i],
                 s->sched_pred_start[i + 1] - s->sched_pred_start[i]);
    tg__strbuf_puts(&b, ",\"reuse_edges\":[");
    if (w != NULL)
      for (size_t e = w->reuse_start[i]; e < w->reuse_start[i + 1]; ++e) {
        const tg_reuse_edge *r = &w->reuse_edges[e];
        tg__strbuf_printf(&b, "%s{\"after\":%u,\"tensor\":", e > w->reuse_start[i] ? "," : "",
                          r->after);
        tg__strbuf_json_string(&b, tensor_name_or_null(g, r->tensor));
        tg__strbuf_puts(&b, ",\"reuses\":");
        tg__strbuf_json_string(&b, tensor_name_or_null(g, r->reuses));
        tg__strbuf_puts(&b, "}");
      }
    tg__strbuf_puts(&b, "]}");
  }
  tg__strbuf_printf(&b,
                    "],\"critical_path\":%zu,\"critical_path_with_reuse\":%zu,"
                    "\"max_wave_width\":%zu,\"branches\":%zu,\"reuse_edge_count\":%zu}",
                    s->wave_count, w ? w->critical_path_with_reuse : s->wave_count,
                    s->max_wave_width, s->branch_count, w ? w->reuse_edge_count : (size_t)0);
  if (b.failed || b.data == NULL) {
    tg__strbuf_free(&b);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  *json = b.data;
  if (length) *length = b.length;
  return TG_OK;
}

void tg_schedule_free_json(const tg_allocator *alloc, char *json) {
  tg__free(tg__alloc_or_default(alloc), json);
}

tg_status tg_schedule_compute_waits(const tg_schedule *schedule, const tg_usage_record *records,
                                    const uint32_t *tensor_of_record, size_t record_count, const tg_plan *plan,
                                    const tg_allocator *alloc, tg_waits **out, tg_error_info *err) {
  tg__error_begin(err);
  return tg__error_entry(err, entry_schedule_compute_waits(schedule, records, tensor_of_record, record_count, plan, alloc, out, err), "tg_schedule_compute_waits", "waits");
}
