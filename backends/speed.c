/* Proxy runs: the op-class table, the proxies of each op (which tensors, which texel ranges),
 * and the timed runs with their statistics (tangram/speed.h). Backends only launch the
 * kernels (speed_begin / speed_dispatch / speed_end). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "backends/backend_internal.h"
#include "tangram/speed.h"

/* ------------------------------------------------------------------------------------------ */

typedef struct place {
  int32_t part;     /* -1: not planned */
  uint32_t record;
  uint32_t w, h, s;
} place;

typedef struct speed_state {
  const tg_allocator *alloc;
  tg_device *device;
  const tg__backend_vtable *vt;
  void *impl;
  tg_precision precision;
  tg__realization_info *info; /* per part */
  place *at;                  /* per tensor */
  tg__proxy_dispatch *dispatches;
  size_t dispatch_count, dispatch_capacity;
} speed_state;

/* Inputs of one launch share a kind: buffer, image buffer, or one image storage. */
static int operand_kind(const tg_tensor_resource *r) {
  return (int)r->storage;
}

static tg__proxy_tensor operand(const speed_state *s, int32_t t) {
  const place *p = &s->at[t];
  const tg__realization_info *in = &s->info[p->part];
  tg__proxy_tensor x = {in->views[p->record], &in->resources[p->record], p->w, p->h, p->s};
  return x;
}

static tg_status add_dispatch(speed_state *s, const tg__proxy_dispatch *x) {
  if (s->dispatch_count == s->dispatch_capacity) {
    size_t n = s->dispatch_capacity ? 2 * s->dispatch_capacity : 64;
    void *q = tg__realloc(s->alloc, s->dispatches, s->dispatch_capacity * sizeof *s->dispatches,
                          n * sizeof *s->dispatches);
    if (q == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
    s->dispatches = q;
    s->dispatch_capacity = n;
  }
  s->dispatches[s->dispatch_count++] = *x;
  return TG_OK;
}

/* Where each planned tensor lives and its texel layout, checked against its resource. */
static tg_status place_tensors(speed_state *s, const tg_speed_desc *desc, tg_error_info *err) {
  const tg_graph *g = desc->graph;
  for (size_t t = 0; t < g->tensor_count; ++t) s->at[t].part = -1;
  for (size_t p = 0; p < desc->part_count; ++p) {
    const tg__realization_info *in = &s->info[p];
    for (size_t r = 0; r < in->record_count; ++r) {
      uint32_t t = desc->parts[p].tensor_of_record[r];
      if (t >= g->tensor_count)
        return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "speed: record %zu of part %zu names tensor %u of %zu",
                         r, p, t, g->tensor_count);
      const tg_tensor *tensor = &g->tensors[t];
      tg_bhwc b;
      if (tg_shape_to_bhwc_ordered(tensor->shape, tensor->rank, g->dim_order, &b) != TG_OK)
        return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "speed: tensor '%s' has no BHWC shape", tensor->name);
      /* The proxies' texel layout (W*B, H, ceil(C/4)) is a texture array's extent. */
      tg_extent lay, want;
      uint64_t texels = 0;
      if (tg_storage_extent(b, TG_STORAGE_TEXTURE_ARRAY, s->precision, &lay) != TG_OK ||
          tg_extent_volume(lay, &texels) != TG_OK || texels > UINT32_MAX / 4)
        return tg__error(err, TG_ERROR_LIMIT, "speed: tensor '%s' has more texels than a proxy addresses",
                         tensor->name);
      const tg_tensor_resource *res = &in->resources[r];
      /* The resource must be what the plan's layout gives its storage: bytes for buffers, the
       * extent for textures. */
      int match = tg_storage_extent(b, res->storage, s->precision, &want) == TG_OK &&
                  (tg_storage_is_texture(res->storage)
                       ? res->extent.w == want.w && res->extent.h == want.h && res->extent.d == want.d
                       : res->bytes == want.w);
      if (!match)
        return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                         "speed: record %zu (tensor '%s') does not hold the %s layout of its shape", r,
                         tensor->name, tg_storage_name(res->storage));
      s->at[t] = (place){(int32_t)p, (uint32_t)r, (uint32_t)lay.w, (uint32_t)lay.h, (uint32_t)lay.d};
    }
  }
  return TG_OK;
}

/* The proxies of every op, in op order. */
static tg_status build_dispatches(speed_state *s, const tg_speed_desc *desc, tg_error_info *err) {
  const tg_graph *g = desc->graph;
  for (size_t o = 0; o < g->op_count; ++o) {
    const tg_op *op = &g->ops[o];
    tg_op_class cls;
    uint32_t k;
    tg_op_class_of(g, o, &cls, &k);
    int32_t ins[64];
    uint32_t nin = 0;
    for (uint32_t i = 0; i < op->input_count && nin < 64; ++i) {
      int32_t t = op->inputs[i];
      if (t < 0 || (size_t)t >= g->tensor_count || s->at[t].part < 0) continue;
      int dup = 0;
      for (uint32_t j = 0; j < nin; ++j) dup |= ins[j] == t;
      if (!dup) ins[nin++] = t;
    }
    /* Only elementwise and copy ops read every input; the others read their data input. */
    if (cls != TG_OP_CLASS_ELEMENTWISE && cls != TG_OP_CLASS_COPY && nin > 1) nin = 1;
    for (uint32_t i = 0; i < op->output_count; ++i) {
      int32_t t = op->outputs[i];
      if (t < 0 || (size_t)t >= g->tensor_count || s->at[t].part < 0) continue;
      tg__proxy_dispatch x = {
          .op = o, .op_class = (int)cls, .kernel = k, .out = operand(s, t), .out_id = s->at[t].record + 1
      };
      uint32_t vol = x.out.w * x.out.h * x.out.s;
      if (vol == 0) continue;
      tg_status st = TG_OK;
      if (nin == 0) {
        x.hi = vol;
        st = add_dispatch(s, &x);
      } else if (cls == TG_OP_CLASS_COPY) {
        /* The output split among the inputs in proportion to their texels. */
        uint64_t total = 0, done = 0;
        for (uint32_t j = 0; j < nin; ++j) total += (uint64_t)s->at[ins[j]].w * s->at[ins[j]].h * s->at[ins[j]].s;
        for (uint32_t j = 0; j < nin && st == TG_OK; ++j) {
          uint64_t n = (uint64_t)s->at[ins[j]].w * s->at[ins[j]].h * s->at[ins[j]].s;
          x.lo = total ? (uint32_t)(done * vol / total) : 0;
          done += n;
          x.hi = total ? (uint32_t)(done * vol / total) : vol;
          x.in[0] = operand(s, ins[j]);
          x.in_count = 1;
          if (x.hi > x.lo && n > 0) st = add_dispatch(s, &x);
        }
      } else {
        /* Inputs two at a time, of one kind per launch. */
        int used[64] = {0};
        for (uint32_t j = 0; j < nin && st == TG_OK; ++j) {
          if (used[j]) continue;
          used[j] = 1;
          x.in[0] = operand(s, ins[j]);
          x.in_count = 1;
          for (uint32_t m = j + 1; m < nin; ++m)
            if (!used[m] && operand_kind(operand(s, ins[m]).resource) == operand_kind(x.in[0].resource)) {
              used[m] = 1;
              x.in[1] = operand(s, ins[m]);
              x.in_count = 2;
              break;
            }
          x.lo = 0;
          x.hi = vol;
          st = add_dispatch(s, &x);
        }
      }
      if (st != TG_OK) return tg__error(err, st, "out of host memory");
    }
  }
  return TG_OK;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Median of v[0..n) (n >= 1), sorting v. */
static double median_of(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static tg_status dispatch_all(speed_state *s, tg_error_info *err) {
  for (size_t i = 0; i < s->dispatch_count; ++i) {
    tg_status st = s->vt->speed_dispatch(s->impl, &s->dispatches[i]);
    if (st != TG_OK) {
      s->vt->speed_abort(s->impl);
      const tg__proxy_dispatch *x = &s->dispatches[i];
      if (st == TG_ERROR_UNSUPPORTED)
        return tg__error(err, st, "speed: the device has no %s proxy for %s -> %s (a storage, format or size it "
                         "lacks)", tg_op_class_name((tg_op_class)x->op_class),
                         x->in_count ? tg_storage_name(x->in[0].resource->storage) : "nothing",
                         tg_storage_name(x->out.resource->storage));
      return tg__error(err, st, "speed: the %s proxy of op %zu (%s -> %s) failed on the device (driver code %lld)",
                       tg_op_class_name((tg_op_class)x->op_class), x->op,
                       x->in_count ? tg_storage_name(x->in[0].resource->storage) : "nothing",
                       tg_storage_name(x->out.resource->storage),
                       (long long)tg_device_get_native_error(s->device));
    }
  }
  return TG_OK;
}

/* One run as the shadow run's writers: every op's planned inputs verified, then its proxies. */
static tg_status verify_run(speed_state *s, const tg_speed_desc *desc, tg_speed_result *out,
                            tg_error_info *err) {
  const tg_graph *g = desc->graph;
  const tg__realization_info *in = &s->info[0];
  size_t n = in->record_count;
  uint64_t *counts = tg__calloc(s->alloc, n ? n : 1, sizeof *counts);
  tg__check_access *reads = tg__calloc(s->alloc, 64, sizeof *reads);
  uint8_t *written = tg__calloc(s->alloc, g->tensor_count ? g->tensor_count : 1, 1);
  tg_status st = TG_OK;
  if (!counts || !reads || !written) {
    st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    goto done;
  }
  for (size_t o = 0; o < g->op_count; ++o)
    for (uint32_t i = 0; i < g->ops[o].output_count; ++i)
      if (g->ops[o].outputs[i] >= 0 && (size_t)g->ops[o].outputs[i] < g->tensor_count) written[g->ops[o].outputs[i]] = 1;
  st = s->vt->check_begin(s->impl, n, g->op_count, 0, s->precision);
  if (st == TG_OK) st = s->vt->speed_begin(s->impl, g->op_count, s->dispatch_count, s->precision, 0);
  if (st != TG_OK) {
    tg__error(err, st, "speed: the verifying run could not start (driver code %lld)",
              (long long)tg_device_get_native_error(s->device));
    goto done;
  }
  size_t next = 0;
  for (size_t o = 0; o < g->op_count && st == TG_OK; ++o) {
    const tg_op *op = &g->ops[o];
    size_t nr = 0;
    for (uint32_t i = 0; i < op->input_count && nr < 64; ++i) {
      int32_t t = op->inputs[i];
      if (t < 0 || (size_t)t >= g->tensor_count || s->at[t].part < 0 || !written[t]) continue;
      int dup = 0;
      for (size_t j = 0; j < nr; ++j) dup |= reads[j].record == s->at[t].record;
      if (dup) continue;
      uint32_t r = s->at[t].record;
      reads[nr++] = (tg__check_access){r + 1, r, in->views[r], &in->resources[r]};
    }
    if (nr) st = s->vt->check_op(s->impl, o, reads, nr, NULL, 0, NULL, 0);
    for (; st == TG_OK && next < s->dispatch_count && s->dispatches[next].op == o; ++next)
      st = s->vt->speed_dispatch(s->impl, &s->dispatches[next]);
    if (st != TG_OK) {
      s->vt->speed_abort(s->impl);
      s->vt->check_abort(s->impl);
      tg__error(err, st, "speed: op %zu failed in the verifying run (driver code %lld)", o,
                (long long)tg_device_get_native_error(s->device));
      goto done;
    }
  }
  st = s->vt->speed_end(s->impl, NULL);
  uint64_t bytes = 0;
  tg_status st2 = s->vt->check_end(s->impl, counts, &bytes);
  if (st == TG_OK) st = st2;
  if (st != TG_OK) {
    tg__error(err, st, "speed: the verifying run failed (driver code %lld)",
              (long long)tg_device_get_native_error(s->device));
    goto done;
  }
  for (size_t r = 0; r < n; ++r) out->corrupted_records += counts[r] != 0;
done:
  tg__free(s->alloc, counts);
  tg__free(s->alloc, reads);
  tg__free(s->alloc, written);
  return st;
}

tg_status tg_realization_time(const tg_speed_desc *desc, tg_speed_result *out, tg_error_info *err) {
  if (desc == NULL || out == NULL || desc->graph == NULL || desc->parts == NULL || desc->part_count == 0)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "speed: no graph or no realization");
  if (desc->repeats == 0) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "speed: repeats must be at least 1");
  if (desc->verify && desc->part_count != 1)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "speed: verify needs exactly one realization");
  memset(out, 0, sizeof *out);
  const tg_graph *g = desc->graph;
  speed_state s;
  memset(&s, 0, sizeof s);
  tg_status st = TG_OK;
  double *totals = NULL, *classes = NULL, *ops = NULL, *run_ops = NULL;
  for (size_t p = 0; p < desc->part_count; ++p)
    if (desc->parts[p].realization == NULL || desc->parts[p].tensor_of_record == NULL)
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "speed: part %zu has no realization or tensor map", p);
  tg__realization_info first;
  tg__realization_describe(desc->parts[0].realization, &first);
  s.device = first.device;
  s.alloc = first.alloc;
  s.vt = tg__device_vtable(s.device);
  s.impl = tg__device_impl(s.device);
  s.precision = first.precision;
  if (s.vt->speed_begin == NULL)
    return tg__error(err, TG_ERROR_UNSUPPORTED, "speed: the %s backend has no proxy kernels",
                     tg_backend_name(tg_device_get_info(s.device)->backend));
  s.info = tg__calloc(s.alloc, desc->part_count, sizeof *s.info);
  s.at = tg__calloc(s.alloc, g->tensor_count ? g->tensor_count : 1, sizeof *s.at);
  if (!s.info || !s.at) {
    st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    goto done;
  }
  for (size_t p = 0; p < desc->part_count; ++p) {
    tg__realization_describe(desc->parts[p].realization, &s.info[p]);
    if (s.info[p].device != s.device || s.info[p].precision != s.precision) {
      st = tg__error(err, TG_ERROR_INVALID_ARGUMENT, "speed: part %zu is on another device or precision", p);
      goto done;
    }
  }
  if ((st = place_tensors(&s, desc, err)) != TG_OK) goto done;
  if ((st = build_dispatches(&s, desc, err)) != TG_OK) goto done;
  out->dispatches = s.dispatch_count;
  for (size_t o = 0; o < g->op_count; ++o) {
    tg_op_class c;
    tg_op_class_of(g, o, &c, NULL);
    int any = 0;
    for (size_t i = 0; i < s.dispatch_count && !any; ++i) any = s.dispatches[i].op == o;
    out->class_ops[c] += any;
  }
  if (desc->verify && (st = verify_run(&s, desc, out, err)) != TG_OK) goto done;

  size_t n = desc->repeats, nops = g->op_count ? g->op_count : 1;
  totals = tg__calloc(s.alloc, n, sizeof *totals);
  classes = tg__calloc(s.alloc, n * TG_OP_CLASS_COUNT, sizeof *classes);
  run_ops = tg__calloc(s.alloc, nops, sizeof *run_ops);
  if (desc->op_ms) ops = tg__calloc(s.alloc, n * nops, sizeof *ops);
  if (!totals || !classes || !run_ops || (desc->op_ms && !ops)) {
    st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    goto done;
  }
  tg_op_class *class_of = tg__calloc(s.alloc, nops, sizeof *class_of);
  if (class_of == NULL) {
    st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    goto done;
  }
  for (size_t o = 0; o < g->op_count; ++o) tg_op_class_of(g, o, &class_of[o], NULL);
  for (size_t run = 0; run < desc->warmup + n && st == TG_OK; ++run) {
    memset(run_ops, 0, nops * sizeof *run_ops);
    st = s.vt->speed_begin(s.impl, g->op_count, s.dispatch_count, s.precision, 1);
    if (st != TG_OK) {
      tg__error(err, st, "speed: the %s backend could not start a timed run (driver code %lld)",
                tg_backend_name(tg_device_get_info(s.device)->backend),
                (long long)tg_device_get_native_error(s.device));
      break;
    }
    if ((st = dispatch_all(&s, err)) != TG_OK) break;
    if ((st = s.vt->speed_end(s.impl, run_ops)) != TG_OK) {
      tg__error(err, st, "speed: reading the timestamps failed (driver code %lld)",
                (long long)tg_device_get_native_error(s.device));
      break;
    }
    if (run < desc->warmup) continue;
    size_t k = run - desc->warmup;
    for (size_t o = 0; o < g->op_count; ++o) {
      totals[k] += run_ops[o];
      classes[class_of[o] * n + k] += run_ops[o];
      if (ops) ops[o * n + k] = run_ops[o];
    }
  }
  tg__free(s.alloc, class_of);
  if (st != TG_OK) goto done;
  out->repeats = (uint32_t)n;
  out->min_ms = out->max_ms = totals[0];
  for (size_t k = 0; k < n; ++k) {
    if (totals[k] < out->min_ms) out->min_ms = totals[k];
    if (totals[k] > out->max_ms) out->max_ms = totals[k];
  }
  out->median_ms = median_of(totals, n);
  for (int c = 0; c < TG_OP_CLASS_COUNT; ++c) out->class_ms[c] = median_of(&classes[(size_t)c * n], n);
  if (ops)
    for (size_t o = 0; o < g->op_count; ++o) desc->op_ms[o] = median_of(&ops[o * n], n);
done:
  tg__free(s.alloc, totals);
  tg__free(s.alloc, classes);
  tg__free(s.alloc, ops);
  tg__free(s.alloc, run_ops);
  tg__free(s.alloc, s.dispatches);
  tg__free(s.alloc, s.info);
  tg__free(s.alloc, s.at);
  return st;
}
