/* Memory spaces of a heterogeneous graph: which space each planned tensor lives in, the record
 * set of each space, the may-share relation over both processors' timelines, planning one set,
 * the waits between processors, and the partition-by-partition baseline.
 *
 * The timelines: the model's happens-before is the closure of the graph's edges plus, for each
 * processor that runs in order, an edge from each of its scheduled ops to its next scheduled op.
 * The reuse policies (schedule/policy.c) are then evaluated over that closure instead of the
 * graph's own (tg__policy_relation_create_over). */
#include "tangram/placement.h"

#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "schedule/schedule_internal.h"

/* ---- spaces ---- */

void tg_spaces_destroy(tg_spaces *s) {
  if (s == NULL) return;
  tg_allocator a = s->alloc;
  for (int k = 0; k < TG_SET_COUNT; ++k) {
    tg_record_set_destroy(s->sets[k].records);
    tg__free(&a, s->sets[k].tensor_of);
  }
  tg__free(&a, s->processor_of);
  tg__free(&a, s->space_of_tensor);
  for (int p = 0; p < TG_PROCESSOR_COUNT; ++p) tg__free(&a, s->last_op_on[p]);
  tg__free(&a, s->tensor_of);
  tg__free(&a, s->set_of);
  tg__free(&a, s->index_in_set);
  tg__free(&a, s);
}

size_t tg_spaces_count(const tg_spaces *s, tg_space space) {
  if (s == NULL) return 0;
  size_t n = 0;
  for (int k = 0; k < TG_SET_COUNT; ++k)
    if (s->sets[k].space == space) n += s->sets[k].records->count;
  return n;
}

/* Bit 1 << processor for each processor touching tensor t. */
static unsigned touchers(const tg_lifetimes *l, const tg_processor *proc, size_t t) {
  const tg_tensor_lifetime *tl = &l->tensors[t];
  unsigned m = 0;
  if (tl->producer >= 0) m |= 1u << proc[tl->producer];
  for (uint32_t c = 0; c < tl->consumer_count; ++c) m |= 1u << proc[tl->consumers[c]];
  return m;
}

/* The last op of `side` touching tensor t (its producer or a consumer); -1 if none. */
static int64_t last_on_side(const tg_lifetimes *l, const tg_processor *proc, size_t t,
                            tg_processor side) {
  const tg_tensor_lifetime *tl = &l->tensors[t];
  int64_t last = -1;
  if (tl->producer >= 0 && proc[tl->producer] == side) last = tl->producer;
  for (uint32_t c = 0; c < tl->consumer_count; ++c)
    if (proc[tl->consumers[c]] == side && (int64_t)tl->consumers[c] > last) last = tl->consumers[c];
  return last;
}

static tg_status copy_record(tg_record_set *dst, size_t at, const tg_record_set *src, size_t r) {
  dst->records[at] = src->records[r];
  return tg_record_set_set_name(dst, at, src->names ? src->names[r] : NULL);
}

tg_status tg_spaces_create(const tg_graph *g, const tg_lifetimes *l,
                           const tg_model_records *dev, const tg_processor *processor_of,
                           const tg_allocator *alloc, tg_spaces **out, tg_error_info *err) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  if (g == NULL || l == NULL || dev == NULL || dev->records == NULL || dev->fallback == NULL)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "spaces: missing graph, lifetimes or records");
  if (l->tensor_count != g->tensor_count)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                     "spaces: lifetimes for %zu tensors, the graph has %zu", l->tensor_count,
                     g->tensor_count);
  for (size_t i = 0; processor_of && i < g->op_count; ++i)
    if ((unsigned)processor_of[i] >= TG_PROCESSOR_COUNT)
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "spaces: op %zu has processor %d, not gpu or cpu",
                       i, (int)processor_of[i]);
  alloc = tg__alloc_or_default(alloc);
  size_t nt = g->tensor_count, no = g->op_count;
  tg_status st = TG_ERROR_OUT_OF_HOST_MEMORY;
  tg_model_records *buf = NULL;
  int32_t *dev_index = NULL; /* per tensor: primary index, -2 - fallback index, -1 none */
  tg_spaces *s = tg__calloc(alloc, 1, sizeof *s);
  if (s == NULL) goto oom;
  s->alloc = *alloc;
  s->op_count = no;
  s->tensor_count = nt;
  s->storage = dev->storage;
  s->precision = dev->precision;
  s->processor_of = tg__calloc(alloc, no ? no : 1, sizeof *s->processor_of);
  s->space_of_tensor = tg__calloc(alloc, nt ? nt : 1, sizeof *s->space_of_tensor);
  dev_index = tg__calloc(alloc, nt ? nt : 1, sizeof *dev_index);
  for (int p = 0; p < TG_PROCESSOR_COUNT; ++p)
    if ((s->last_op_on[p] = tg__calloc(alloc, nt ? nt : 1, sizeof *s->last_op_on[p])) == NULL) goto oom;
  if (!s->processor_of || !s->space_of_tensor || !dev_index) goto oom;
  for (size_t i = 0; i < no; ++i) s->processor_of[i] = processor_of ? processor_of[i] : TG_PROCESSOR_GPU;
  for (size_t t = 0; t < nt; ++t) {
    s->space_of_tensor[t] = TG_SPACE_COUNT;
    dev_index[t] = -1;
    for (int p = 0; p < TG_PROCESSOR_COUNT; ++p)
      s->last_op_on[p][t] = (int32_t)last_on_side(l, s->processor_of, t, (tg_processor)p);
  }
  for (size_t r = 0; r < dev->records->count; ++r) {
    if (dev->tensor_of[r] >= nt) goto mismatch;
    dev_index[dev->tensor_of[r]] = (int32_t)r;
  }
  for (size_t r = 0; r < dev->fallback->count; ++r) {
    if (dev->fallback_tensor_of[r] >= nt) goto mismatch;
    dev_index[dev->fallback_tensor_of[r]] = -2 - (int32_t)r;
  }
  /* Buffer records of every planned tensor, with no device limit: the record order and the
   * sizes of host and shared tensors. */
  st = tg_model_records_create(g, l, TG_STORAGE_BUFFER, dev->precision, NULL, alloc, &buf, err);
  if (st != TG_OK) goto fail;
  st = TG_ERROR_OUT_OF_HOST_MEMORY;
  size_t n = buf->records->count;
  if (n != dev->records->count + dev->fallback->count) goto mismatch;
  s->record_count = n;
  s->tensor_of = tg__calloc(alloc, n ? n : 1, sizeof *s->tensor_of);
  s->set_of = tg__calloc(alloc, n ? n : 1, sizeof *s->set_of);
  s->index_in_set = tg__calloc(alloc, n ? n : 1, sizeof *s->index_in_set);
  if (!s->tensor_of || !s->set_of || !s->index_in_set) goto oom;
  size_t count[TG_SET_COUNT] = {0};
  int image = tg_storage_dims(dev->storage) > 1;
  for (size_t r = 0; r < n; ++r) {
    uint32_t t = buf->tensor_of[r];
    if (dev_index[t] == -1) goto mismatch;
    unsigned m = touchers(l, s->processor_of, t);
    tg_space space = m == (1u << TG_PROCESSOR_CPU)   ? TG_SPACE_HOST
                     : m == ((1u << TG_PROCESSOR_CPU) | (1u << TG_PROCESSOR_GPU)) ? TG_SPACE_SHARED
                                                                                  : TG_SPACE_DEVICE;
    int set = space == TG_SPACE_HOST     ? TG_SET_HOST
              : space == TG_SPACE_SHARED ? TG_SET_SHARED
              : dev_index[t] >= 0        ? TG_SET_DEVICE
                                         : TG_SET_DEVICE_FALLBACK;
    if (space == TG_SPACE_SHARED && image && dev_index[t] >= 0) s->images_as_buffers++;
    s->space_of_tensor[t] = space;
    s->tensor_of[r] = t;
    s->set_of[r] = (uint8_t)set;
    s->index_in_set[r] = count[set]++;
  }
  for (int k = 0; k < TG_SET_COUNT; ++k) {
    tg_space_set *ss = &s->sets[k];
    ss->space = k == TG_SET_HOST ? TG_SPACE_HOST : k == TG_SET_SHARED ? TG_SPACE_SHARED : TG_SPACE_DEVICE;
    ss->storage = k == TG_SET_DEVICE ? dev->storage : TG_STORAGE_BUFFER;
    uint32_t dims = k == TG_SET_DEVICE ? dev->records->dims : 1;
    if (tg_record_set_create(dims, count[k], alloc, &ss->records) != TG_OK) goto oom;
    ss->tensor_of = tg__calloc(alloc, count[k] ? count[k] : 1, sizeof *ss->tensor_of);
    if (ss->tensor_of == NULL) goto oom;
  }
  for (size_t r = 0; r < n; ++r) {
    uint32_t t = s->tensor_of[r];
    int set = s->set_of[r];
    size_t at = s->index_in_set[r];
    const tg_record_set *src = set == TG_SET_DEVICE            ? dev->records
                               : set == TG_SET_DEVICE_FALLBACK ? dev->fallback
                                                               : buf->records;
    size_t from = set == TG_SET_DEVICE            ? (size_t)dev_index[t]
                  : set == TG_SET_DEVICE_FALLBACK ? (size_t)(-2 - dev_index[t])
                                                  : r;
    s->sets[set].tensor_of[at] = t;
    if ((st = copy_record(s->sets[set].records, at, src, from)) != TG_OK) goto oom;
  }
  tg_model_records_destroy(buf);
  tg__free(alloc, dev_index);
  *out = s;
  return TG_OK;

mismatch:
  st = tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                 "spaces: the device records do not match the graph and its lifetimes");
  goto fail;
oom:
  st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "spaces: out of host memory");
fail:
  tg_model_records_destroy(buf);
  if (s) tg__free(alloc, dev_index);
  tg_spaces_destroy(s);
  return st;
}

/* ---- the timelines' happens-before ---- */

typedef struct extra_edge {
  uint32_t from, to;
} extra_edge;

/* The closure of: the graph's edges, `extra` edges (from < to), and for each processor whose
 * `chain` flag is set, its scheduled ops in op order. */
static tg_status timelines_closure(const tg_schedule *s, const tg_processor *proc,
                                   const int chain[TG_PROCESSOR_COUNT], const extra_edge *extra,
                                   size_t extra_count, const tg_allocator *a, tg__closure *out) {
  size_t n = s->op_count;
  memset(out, 0, sizeof *out);
  size_t graph_edges = s->succ_start[n];
  size_t cap = graph_edges + extra_count + n + 1;
  size_t *start = tg__calloc(a, n + 1, sizeof *start);
  uint32_t *succ = tg__calloc(a, cap, sizeof *succ);
  uint32_t *next = tg__calloc(a, n ? n : 1, sizeof *next); /* chain successor + 1, 0 = none */
  size_t *xstart = tg__calloc(a, n + 1, sizeof *xstart);
  uint32_t *xs = tg__calloc(a, extra_count ? extra_count : 1, sizeof *xs);
  tg_status st = TG_ERROR_OUT_OF_HOST_MEMORY;
  if (!start || !succ || !next || !xstart || !xs) goto done;
  uint32_t last[TG_PROCESSOR_COUNT];
  for (int p = 0; p < TG_PROCESSOR_COUNT; ++p) last[p] = UINT32_MAX;
  for (size_t i = 0; i < n; ++i) {
    if (s->folded[i]) continue;
    int p = (int)proc[i];
    if (!chain[p]) continue;
    if (last[p] != UINT32_MAX) next[last[p]] = (uint32_t)i + 1;
    last[p] = (uint32_t)i;
  }
  for (size_t e = 0; e < extra_count; ++e) xstart[extra[e].from + 1]++;
  for (size_t i = 0; i < n; ++i) xstart[i + 1] += xstart[i];
  {
    size_t *fill = tg__calloc(a, n ? n : 1, sizeof *fill);
    if (fill == NULL) goto done;
    for (size_t e = 0; e < extra_count; ++e) xs[xstart[extra[e].from] + fill[extra[e].from]++] = extra[e].to;
    tg__free(a, fill);
  }
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) {
    start[i] = at;
    for (size_t e = s->succ_start[i]; e < s->succ_start[i + 1]; ++e) succ[at++] = s->succs[e];
    for (size_t e = xstart[i]; e < xstart[i + 1]; ++e) succ[at++] = xs[e];
    if (next[i]) succ[at++] = next[i] - 1;
    /* Ascending (the closure skips successors already reached through smaller ones). */
    uint32_t *p = succ + start[i];
    size_t m = at - start[i];
    for (size_t x = 1; x < m; ++x) {
      uint32_t v = p[x];
      size_t y = x;
      for (; y > 0 && p[y - 1] > v; --y) p[y] = p[y - 1];
      p[y] = v;
    }
  }
  start[n] = at;
  if ((st = tg__closure_alloc(a, n, out)) != TG_OK) goto done;
  tg__closure_compute(out, start, succ);
  st = TG_OK;
done:
  tg__free(a, start);
  tg__free(a, succ);
  tg__free(a, next);
  tg__free(a, xstart);
  tg__free(a, xs);
  return st;
}

static int schedule_matches(const tg_spaces *sp, const tg_schedule *s) {
  return s != NULL && s->op_count == sp->op_count && s->tensor_count == sp->tensor_count;
}

tg_status tg_spaces_relation_create(const tg_spaces *sp, const tg_schedule *s, size_t set,
                                    tg_policy policy, const tg_allocator *alloc,
                                    tg_policy_relation **out) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  if (sp == NULL || set >= TG_SET_COUNT || !schedule_matches(sp, s) ||
      (unsigned)policy >= TG_POLICY_COUNT)
    return TG_ERROR_INVALID_ARGUMENT;
  alloc = tg__alloc_or_default(alloc);
  const tg_space_set *ss = &sp->sets[set];
  /* One in-order timeline orders everything the set's records touch: intervals suffice. */
  if (set == TG_SET_HOST || (ss->space == TG_SPACE_DEVICE && policy == TG_POLICY_SERIAL))
    return tg_policy_relation_create(s, TG_POLICY_SERIAL, ss->tensor_of, ss->records->count,
                                     alloc, out);
  int chain[TG_PROCESSOR_COUNT] = {0};
  chain[TG_PROCESSOR_CPU] = 1;
  chain[TG_PROCESSOR_GPU] = policy == TG_POLICY_SERIAL;
  tg__closure reach;
  tg_status st = timelines_closure(s, sp->processor_of, chain, NULL, 0, alloc, &reach);
  if (st != TG_OK) return st;
  /* Serial on both timelines is parallel-safe over the timelines' happens-before. */
  tg_policy over = policy == TG_POLICY_SERIAL ? TG_POLICY_PARALLEL_SAFE : policy;
  st = tg__policy_relation_create_over(s, &reach, over, ss->tensor_of, ss->records->count, alloc,
                                       out);
  tg__closure_free(alloc, &reach);
  return st;
}

/* ---- planning a set ---- */

void tg_space_plan_free(tg_space_plan *p) {
  if (p == NULL) return;
  tg_plan_destroy(p->plan);
  memset(p, 0, sizeof *p);
}

static tg_status set_bounds(const tg_record_set *set, tg_mode mode, uint64_t unit,
                            const tg_allocator *alloc, uint64_t *naive, uint64_t *lb) {
  tg_bounds b;
  tg_status st = tg_bounds_compute(set->records, set->count, set->dims, alloc, &b);
  if (st != TG_OK) return st;
  uint64_t lower = b.peak_live;
  if (mode == TG_MODE_OBJECTS &&
      (st = tg_bounds_objects_shape(set->records, set->count, set->dims, alloc, &lower)) != TG_OK)
    return st;
  if (!tg__mul_u64(b.naive, unit, naive) || !tg__mul_u64(lower, unit, lb)) return TG_ERROR_OVERFLOW;
  return TG_OK;
}

tg_status tg_spaces_plan_set(const tg_spaces *sp, const tg_schedule *s, size_t set,
                             const tg_record_set *planned, const tg_space_options *options,
                             const tg_allocator *alloc, tg_space_plan *out, tg_error_info *err) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  memset(out, 0, sizeof *out);
  if (sp == NULL || set >= TG_SET_COUNT || options == NULL || !schedule_matches(sp, s))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "spaces: plan: bad set, options or schedule");
  alloc = tg__alloc_or_default(alloc);
  const tg_space_set *ss = &sp->sets[set];
  const tg_record_set *recs = planned ? planned : ss->records;
  const char *space = tg_space_name(ss->space);
  if (planned) {
    int ok = planned->count == ss->records->count && planned->dims == 1;
    for (size_t r = 0; ok && r < planned->count; ++r)
      ok = planned->records[r].first_task == ss->records->records[r].first_task &&
           planned->records[r].last_task == ss->records->records[r].last_task;
    if (!ok)
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                       "%s space: the replacement records do not match the set's count or intervals",
                       space);
  }
  if (recs->count == 0) return TG_OK;
  tg_policy_relation *rel = NULL;
  tg_status st = tg_spaces_relation_create(sp, s, set, options->policy, alloc, &rel);
  if (st != TG_OK)
    return tg__error(err, st, "%s space: building the %s relation failed: %s", space,
                     tg_policy_name(options->policy), tg_status_string(st));
  const tg_share_relation *relation = tg_policy_relation_get(rel);
  tg_plan_options opt = options->plan;
  opt.relation = relation;
  const uint64_t texel = (recs->dims == 1) ? 1 : tg_precision_texel_bytes(sp->precision);
  if (opt.max_allocation > 0) {
    /* A tensor above the cap fits no arena and no object. */
    for (size_t r = 0; r < recs->count; ++r) {
      uint64_t v = 0, bytes = UINT64_MAX;
      if (tg_extent_volume(recs->records[r].size, &v) == TG_OK && tg__mul_u64(v, texel, &bytes) &&
          bytes <= opt.max_allocation)
        continue;
      st = tg__error(err, TG_ERROR_LIMIT, "%s space: tensor %s (%llu bytes) is larger than the allocation cap %llu bytes",
                     space, recs->names && recs->names[r] ? recs->names[r] : "?", (unsigned long long)bytes,
                     (unsigned long long)opt.max_allocation);
      tg_policy_relation_destroy(rel);
      return st;
    }
  }
  st = tg_plan_compute(recs->records, recs->count, recs->dims, &opt, alloc, &out->plan);
  if (st != TG_OK) {
    tg__error(err, st, "%s space: planning %zu records (%s, %s) failed: %s", space, recs->count,
              tg_mode_name(opt.mode), tg_strategy_name(opt.strategy), tg_status_string(st));
    goto fail;
  }
  tg_error_info verr = {{0}};
  st = tg_plan_validate(recs->records, recs->count, recs->dims, out->plan, opt.alignment, relation,
                        alloc, &verr);
  if (st != TG_OK) {
    tg__error(err, st, "%s space: the plan is invalid: %s", space, verr.message);
    goto fail;
  }
  const tg_plan *p = out->plan;
  uint64_t unit = texel;
  if (opt.max_allocation > 0 && p->mode == TG_MODE_OBJECTS) {
    /* Objects of textures take the per-dimension maximum of their tensors: above the cap,
     * name the object's largest tensor. */
    for (size_t k = 0; k < p->object_count; ++k) {
      uint64_t v = 0, bytes = UINT64_MAX;
      if (tg_extent_volume(p->object_sizes[k], &v) == TG_OK && tg__mul_u64(v, unit, &bytes) &&
          bytes <= opt.max_allocation)
        continue;
      size_t big = 0;
      uint64_t big_v = 0;
      for (size_t r = 0, seen = 0; r < recs->count; ++r) {
        uint64_t rv = 0;
        if (p->object_of[r] == k && tg_extent_volume(recs->records[r].size, &rv) == TG_OK && (!seen || rv > big_v))
          big = r, big_v = rv, seen = 1;
      }
      st = tg__error(err, TG_ERROR_LIMIT,
                     "%s space: object %zu (%llu bytes) is larger than the allocation cap %llu bytes; "
                     "its largest tensor is %s",
                     space, k, (unsigned long long)bytes, (unsigned long long)opt.max_allocation,
                     recs->names && recs->names[big] ? recs->names[big] : "?");
      goto fail;
    }
  }
  if (!tg__mul_u64(p->total, unit, &out->bytes)) {
    st = tg__error(err, TG_ERROR_OVERFLOW, "%s space: the plan's bytes overflow", space);
    goto fail;
  }
  if ((st = set_bounds(recs, p->mode, unit, alloc, &out->naive_bytes, &out->lower_bound_bytes)) !=
      TG_OK) {
    tg__error(err, st, "%s space: bounds: %s", space, tg_status_string(st));
    goto fail;
  }
  out->allocations = p->mode == TG_MODE_OBJECTS ? p->object_count : p->arena_count;
  tg_policy_relation_destroy(rel);
  if (options->budget && out->bytes > options->budget)
    return tg__error(err, TG_ERROR_BUDGET, "%s space: the plan needs %llu bytes, the budget is %llu",
                     space, (unsigned long long)out->bytes, (unsigned long long)options->budget);
  return TG_OK;
fail:
  tg_policy_relation_destroy(rel);
  tg_space_plan_free(out);
  return st;
}

/* ---- planning every set ---- */

void tg_spaces_plan_free(tg_spaces_plan *p) {
  if (p == NULL) return;
  for (int k = 0; k < TG_SET_COUNT; ++k) tg_space_plan_free(&p->sets[k]);
  tg_spaces_waits_destroy(p->waits);
  memset(p, 0, sizeof *p);
}

tg_status tg_spaces_plan_all(const tg_spaces *sp, const tg_schedule *s, const tg_space_options *options,
                             const tg_record_set *const *planned, uint64_t device_budget, int gpu_in_order,
                             const tg_allocator *alloc, tg_spaces_plan *out, tg_error_info *err) {
  if (out == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "tg_spaces_plan_all: out is NULL");
  memset(out, 0, sizeof *out);
  if (sp == NULL || s == NULL || options == NULL)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "tg_spaces_plan_all: spaces, schedule or options is NULL");
  for (int k = 0; k < TG_SET_COUNT; ++k) {
    if (sp->sets[k].records->count == 0) continue;
    tg_status st = tg_spaces_plan_set(sp, s, (size_t)k, planned ? planned[k] : NULL, &options[k], alloc,
                                      &out->sets[k], err);
    if (st != TG_OK) return st;
    tg_space space = sp->sets[k].space;
    out->bytes[space] += out->sets[k].bytes;
    out->lower_bound_bytes[space] += out->sets[k].lower_bound_bytes;
    out->allocations[space] += out->sets[k].allocations;
  }
  if (device_budget && out->bytes[TG_SPACE_DEVICE] > device_budget)
    return tg__error(err, TG_ERROR_BUDGET, "device space: the plans need %llu bytes, the budget is %llu",
                     (unsigned long long)out->bytes[TG_SPACE_DEVICE], (unsigned long long)device_budget);
  for (int space = 0; space < TG_SPACE_COUNT; ++space) {
    out->total_bytes += out->bytes[space];
    out->total_lower_bound_bytes += out->lower_bound_bytes[space];
  }
  tg_space_plan_ref refs[TG_SET_COUNT];
  for (int k = 0; k < TG_SET_COUNT; ++k) {
    refs[k].plan = out->sets[k].plan;
    refs[k].records = planned && planned[k] ? planned[k]->records : sp->sets[k].records->records;
  }
  return tg_spaces_compute_waits(sp, s, refs, gpu_in_order, alloc, &out->waits, err);
}

/* ---- waits ---- */

void tg_spaces_waits_destroy(tg_spaces_waits *w) {
  if (w == NULL) return;
  tg_allocator a = w->alloc;
  tg__free(&a, w->wait_start);
  tg__free(&a, w->waits);
  tg__free(&a, w->cross);
  tg__free(&a, w);
}

static int cross_cmp(const void *pa, const void *pb) {
  const tg_cross_wait *a = pa, *b = pb;
  if (a->op != b->op) return a->op < b->op ? -1 : 1;
  if (a->after != b->after) return a->after < b->after ? -1 : 1;
  if (a->reuse != b->reuse) return a->reuse < b->reuse ? -1 : 1; /* data first */
  return a->tensor < b->tensor ? -1 : (a->tensor > b->tensor);
}

static int u32_cmp(const void *pa, const void *pb) {
  uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
  return a < b ? -1 : (a > b);
}

/* Edges grouped by one end: idx[start[v] .. start[v+1]) are the edges whose `to` (or `from`)
 * is v. */
static tg_status index_edges(const extra_edge *e, size_t count, size_t n, int by_from,
                             const tg_allocator *a, size_t **start, size_t **idx) {
  *start = tg__calloc(a, n + 1, sizeof **start);
  *idx = tg__calloc(a, count ? count : 1, sizeof **idx);
  size_t *fill = tg__calloc(a, n ? n : 1, sizeof *fill);
  if (*start == NULL || *idx == NULL || fill == NULL) {
    tg__free(a, fill);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  for (size_t k = 0; k < count; ++k) (*start)[(by_from ? e[k].from : e[k].to) + 1]++;
  for (size_t v = 0; v < n; ++v) (*start)[v + 1] += (*start)[v];
  for (size_t k = 0; k < count; ++k) {
    uint32_t v = by_from ? e[k].from : e[k].to;
    (*idx)[(*start)[v] + fill[v]++] = k;
  }
  tg__free(a, fill);
  return TG_OK;
}

tg_status tg_spaces_compute_waits(const tg_spaces *sp, const tg_schedule *s,
                                  const tg_space_plan_ref *plans, int gpu_in_order,
                                  const tg_allocator *alloc, tg_spaces_waits **out,
                                  tg_error_info *err) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  if (sp == NULL || plans == NULL || !schedule_matches(sp, s))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "spaces: waits: missing plans or a schedule of another graph");
  alloc = tg__alloc_or_default(alloc);
  size_t n = s->op_count;
  const tg_processor *proc = sp->processor_of;
  tg_status st = TG_ERROR_OUT_OF_HOST_MEMORY;
  extra_edge *reuse = NULL;
  uint32_t *reuse_tensor = NULL;
  size_t reuse_count = 0, reuse_cap = 0, all_reuse = 0;
  tg_cross_wait *cand = NULL;
  size_t *to_start = NULL, *to_idx = NULL, *from_start = NULL, *from_idx = NULL;
  tg__closure reach = {0, 0, NULL, NULL};
  tg_spaces_waits *w = tg__calloc(alloc, 1, sizeof *w);
  if (w == NULL) goto oom;
  w->alloc = *alloc;
  w->op_count = n;
  /* Reuse edges of every set, without those an in-order timeline implies. */
  for (int k = 0; k < TG_SET_COUNT; ++k) {
    const tg_space_set *ss = &sp->sets[k];
    if (ss->records->count == 0) continue;
    if (plans[k].plan == NULL || plans[k].records == NULL) {
      st = tg__error(err, TG_ERROR_INVALID_ARGUMENT, "spaces: waits: no plan for the %s set %d",
                     tg_space_name(ss->space), k);
      goto fail;
    }
    tg_waits *rw = NULL;
    st = tg_schedule_compute_waits(s, plans[k].records, ss->tensor_of, ss->records->count,
                                   plans[k].plan, alloc, &rw, err);
    if (st != TG_OK) goto fail;
    all_reuse += rw->reuse_edge_count;
    for (size_t e = 0; e < rw->reuse_edge_count; ++e) {
      const tg_reuse_edge *r = &rw->reuse_edges[e];
      tg_processor pa = proc[r->after], pb = proc[r->op];
      if (pa == pb && (pa == TG_PROCESSOR_CPU || gpu_in_order)) continue;
      if (reuse_count == reuse_cap) {
        size_t cap = reuse_cap ? 2 * reuse_cap : 64;
        extra_edge *ne = tg__realloc(alloc, reuse, reuse_cap * sizeof *reuse, cap * sizeof *reuse);
        if (ne == NULL) {
          tg_waits_destroy(rw);
          goto oom;
        }
        reuse = ne;
        uint32_t *nt = tg__realloc(alloc, reuse_tensor, reuse_cap * sizeof *nt, cap * sizeof *nt);
        if (nt == NULL) {
          tg_waits_destroy(rw);
          goto oom;
        }
        reuse_tensor = nt;
        reuse_cap = cap;
      }
      reuse[reuse_count] = (extra_edge){r->after, r->op};
      reuse_tensor[reuse_count++] = r->tensor;
    }
    tg_waits_destroy(rw);
  }
  w->reuse_edge_count = all_reuse;
  if (index_edges(reuse, reuse_count, n, 0, alloc, &to_start, &to_idx) != TG_OK ||
      index_edges(reuse, reuse_count, n, 1, alloc, &from_start, &from_idx) != TG_OK)
    goto oom;
  /* Per-op waits: graph edges between scheduled ops, and the kept reuse edges. */
  w->wait_start = tg__calloc(alloc, n + 1, sizeof *w->wait_start);
  w->waits = tg__calloc(alloc, s->edge_count + reuse_count + 1, sizeof *w->waits);
  if (!w->wait_start || !w->waits) goto oom;
  {
    size_t at = 0;
    for (size_t i = 0; i < n; ++i) {
      size_t begin = at;
      for (size_t e = s->sched_pred_start[i]; e < s->sched_pred_start[i + 1]; ++e)
        w->waits[at++] = s->sched_preds[e];
      for (size_t e = to_start[i]; e < to_start[i + 1]; ++e) w->waits[at++] = reuse[to_idx[e]].from;
      qsort(w->waits + begin, at - begin, sizeof *w->waits, u32_cmp);
      size_t u = begin;
      for (size_t x = begin; x < at; ++x)
        if (u == begin || w->waits[u - 1] != w->waits[x]) w->waits[u++] = w->waits[x];
      at = u;
      w->wait_start[i + 1] = at;
    }
  }
  /* Candidates between processors: graph edges (a tensor from its scheduled producer to each
   * consumer; the first tensor in tensor order labels a pair), then reuse edges. */
  size_t ncand = 0;
  cand = tg__calloc(alloc, s->consumer_start[s->tensor_count] + reuse_count + 1, sizeof *cand);
  if (cand == NULL) goto oom;
  for (size_t t = 0; t < s->tensor_count; ++t) {
    int32_t x = tg__sched_producer(s, t);
    if (x < 0) continue;
    for (size_t c = s->consumer_start[t]; c < s->consumer_start[t + 1]; ++c) {
      uint32_t y = s->consumers[c];
      if (s->folded[y] || proc[x] == proc[y]) continue;
      cand[ncand++] = (tg_cross_wait){y, (uint32_t)x, (uint32_t)t, 0};
    }
  }
  for (int pass = 0; pass < 2; ++pass) {
    qsort(cand, ncand, sizeof *cand, cross_cmp);
    size_t u = 0;
    for (size_t e = 0; e < ncand; ++e)
      if (u == 0 || cand[u - 1].op != cand[e].op || cand[u - 1].after != cand[e].after) cand[u++] = cand[e];
    ncand = u;
    if (pass == 1) break;
    w->cross_data_edges = ncand;
    for (size_t e = 0; e < reuse_count; ++e)
      if (proc[reuse[e].from] != proc[reuse[e].to])
        cand[ncand++] = (tg_cross_wait){reuse[e].to, reuse[e].from, reuse_tensor[e], 1};
  }
  /* Drop what the model's happens-before implies through another successor of `after`. */
  int chain[TG_PROCESSOR_COUNT] = {1, 1};
  chain[TG_PROCESSOR_GPU] = gpu_in_order != 0;
  if ((st = timelines_closure(s, proc, chain, reuse, reuse_count, alloc, &reach)) != TG_OK) {
    tg__error(err, st, "spaces: waits: %s", tg_status_string(st));
    goto fail;
  }
  st = TG_ERROR_OUT_OF_HOST_MEMORY;
  {
    /* Successors of x in the model: graph successors, reuse targets and the chain's next op. */
    uint32_t *next = tg__calloc(alloc, n ? n : 1, sizeof *next);
    if (next == NULL) goto oom;
    uint32_t last[TG_PROCESSOR_COUNT] = {UINT32_MAX, UINT32_MAX};
    for (size_t i = 0; i < n; ++i) {
      if (s->folded[i] || !chain[proc[i]]) continue;
      if (last[proc[i]] != UINT32_MAX) next[last[proc[i]]] = (uint32_t)i + 1;
      last[proc[i]] = (uint32_t)i;
    }
    size_t kept = 0;
    for (size_t e = 0; e < ncand; ++e) {
      uint32_t x = cand[e].after, y = cand[e].op;
      int implied = next[x] && next[x] - 1 != y && tg__closure_get(&reach, next[x] - 1, y);
      for (size_t k = s->succ_start[x]; k < s->succ_start[x + 1] && !implied; ++k) {
        uint32_t v = s->succs[k];
        implied = v != y && tg__closure_get(&reach, v, y);
      }
      for (size_t k = from_start[x]; k < from_start[x + 1] && !implied; ++k) {
        uint32_t v = reuse[from_idx[k]].to;
        implied = v != y && tg__closure_get(&reach, v, y);
      }
      if (!implied) cand[kept++] = cand[e];
    }
    tg__free(alloc, next);
    ncand = kept;
  }
  w->cross_count = ncand;
  w->cross = cand;
  cand = NULL;
  *out = w;
  w = NULL; /* the caller's now */
  st = TG_OK;
  goto fail;
oom:
  st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "spaces: waits: out of host memory");
fail: /* also the way out on success, with nothing of the result left here */
  tg__free(alloc, to_start);
  tg__free(alloc, to_idx);
  tg__free(alloc, from_start);
  tg__free(alloc, from_idx);
  tg__closure_free(alloc, &reach);
  tg__free(alloc, reuse);
  tg__free(alloc, reuse_tensor);
  tg__free(alloc, cand);
  tg_spaces_waits_destroy(w);
  return st;
}

/* ---- the partition-by-partition baseline ---- */

/* Plan `set` alone under the serial rule; its bytes in *bytes. */
static tg_status plan_alone(const tg_record_set *set, const tg_space_options *o, uint64_t unit,
                            const tg_allocator *alloc, uint64_t *bytes) {
  *bytes = 0;
  if (set->count == 0) return TG_OK;
  tg_plan_options opt = o->plan;
  opt.relation = NULL;
  if (set->dims != 1) opt.mode = TG_MODE_OBJECTS;
  if (!tg_strategy_applies(opt.strategy, opt.mode, set->dims)) opt.strategy = TG_STRATEGY_BEST;
  tg_plan *p = NULL;
  tg_status st = tg_plan_compute(set->records, set->count, set->dims, &opt, alloc, &p);
  if (st != TG_OK) return st;
  st = tg__mul_u64(p->total, unit, bytes) ? TG_OK : TG_ERROR_OVERFLOW;
  tg_plan_destroy(p);
  return st;
}

tg_status tg_spaces_partition_baseline(const tg_spaces *sp, const tg_model_records *dev,
                                       const tg_space_options *gpu_options,
                                       const tg_space_options *cpu_options,
                                       const tg_allocator *alloc, tg_partition_baseline *out,
                                       tg_error_info *err) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  memset(out, 0, sizeof *out);
  if (sp == NULL || dev == NULL || gpu_options == NULL || cpu_options == NULL ||
      dev->records == NULL || dev->fallback == NULL ||
      dev->records->count + dev->fallback->count != sp->record_count)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "baseline: missing or mismatched spaces, records or options");
  alloc = tg__alloc_or_default(alloc);
  tg_status st = TG_ERROR_OUT_OF_HOST_MEMORY;
  tg_record_set *gpu = NULL, *gpu_fb = NULL, *cpu = NULL;
  const tg_space_set *host = &sp->sets[TG_SET_HOST], *shared = &sp->sets[TG_SET_SHARED];
  size_t ng = 0, nf = 0;
  for (size_t r = 0; r < dev->records->count; ++r)
    ng += sp->space_of_tensor[dev->tensor_of[r]] != TG_SPACE_HOST;
  for (size_t r = 0; r < dev->fallback->count; ++r)
    nf += sp->space_of_tensor[dev->fallback_tensor_of[r]] != TG_SPACE_HOST;
  if (tg_record_set_create(dev->records->dims, ng, alloc, &gpu) != TG_OK ||
      tg_record_set_create(1, nf, alloc, &gpu_fb) != TG_OK ||
      tg_record_set_create(1, host->records->count + shared->records->count, alloc, &cpu) != TG_OK)
    goto done;
  /* GPU side: device and boundary tensors in the device storage; a boundary tensor lives there
   * from its producer's task to its last GPU toucher. */
  for (int pass = 0; pass < 2; ++pass) {
    const tg_record_set *src = pass ? dev->fallback : dev->records;
    const uint32_t *tof = pass ? dev->fallback_tensor_of : dev->tensor_of;
    tg_record_set *dst = pass ? gpu_fb : gpu;
    size_t at = 0;
    for (size_t r = 0; r < src->count; ++r) {
      uint32_t t = tof[r];
      if (sp->space_of_tensor[t] == TG_SPACE_HOST) continue;
      dst->records[at] = src->records[r];
      int32_t last = sp->last_op_on[TG_PROCESSOR_GPU][t];
      if (sp->space_of_tensor[t] == TG_SPACE_SHARED && last >= (int32_t)dst->records[at].first_task)
        dst->records[at].last_task = (uint32_t)last;
      ++at;
    }
  }
  /* CPU side: host and boundary tensors as buffers, boundary ones to their last CPU toucher. */
  for (size_t r = 0; r < host->records->count; ++r) cpu->records[r] = host->records->records[r];
  for (size_t r = 0; r < shared->records->count; ++r) {
    tg_usage_record rec = shared->records->records[r];
    int32_t last = sp->last_op_on[TG_PROCESSOR_CPU][shared->tensor_of[r]];
    if (last >= (int32_t)rec.first_task) rec.last_task = (uint32_t)last;
    cpu->records[host->records->count + r] = rec;
    uint64_t v = 0;
    (void)tg_extent_volume(rec.size, &v);
    out->copies++;
    out->copy_bytes = tg__add_sat_u64(out->copy_bytes, v);
  }
  uint64_t a = 0, b = 0, c = 0;
  uint64_t unit = gpu->dims == 1 ? 1 : tg_precision_texel_bytes(sp->precision);
  if ((st = plan_alone(gpu, gpu_options, unit, alloc, &a)) != TG_OK ||
      (st = plan_alone(gpu_fb, gpu_options, 1, alloc, &b)) != TG_OK ||
      (st = plan_alone(cpu, cpu_options, 1, alloc, &c)) != TG_OK) {
    tg__error(err, st, "baseline: planning a partition failed: %s", tg_status_string(st));
    goto done;
  }
  out->gpu_bytes = tg__add_sat_u64(a, b);
  out->cpu_bytes = c;
  out->total_bytes = tg__add_sat_u64(out->gpu_bytes, out->cpu_bytes);
  st = TG_OK;
done:
  if (st == TG_ERROR_OUT_OF_HOST_MEMORY) tg__error(err, st, "baseline: out of host memory");
  tg_record_set_destroy(gpu);
  tg_record_set_destroy(gpu_fb);
  tg_record_set_destroy(cpu);
  return st;
}
