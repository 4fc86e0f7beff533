/* The OpenCL backend's shadow run (the on-device check). OpenCL C kernels write and verify
 * tg_signature_word / tg_signature_texel and count mismatches per record with 32-bit atomics
 * into a counter buffer (two words per record make a 64-bit count without needing 64-bit
 * atomics). In order: one in-order queue. Out of order: an out-of-order queue where each op's
 * kernels wait on the events of the ops it must wait for, submitted in a legal order of those
 * waits that starts later ops as early as possible, so a missing wait reorders memory reuse
 * deterministically instead of depending on the driver's thread timing. On a borrowed device
 * the engine's one queue serves both kinds of check: an in-order queue gives in-order checks
 * only; an out-of-order one gives both, with a barrier after each command of an in-order
 * check. */
#include <stdio.h>
#include <string.h>

#include "backends/opencl/opencl_state.h"

/* ------------------------------------------------------------------------------------------ */
/* Kernels. Signatures are those of tg_signature_word / tg_signature_texel, bit for bit: all
 * arithmetic is on 32-bit unsigned integers, which wrap identically on host and device. */

/* clang-format off */
static const char k_kernel_source[] =
    "uint tg_sig(uint id, uint index) {\n"
    "  uint x = id * 0x9E3779B1u + index * 0x85EBCA77u + 0x27D4EB2Fu;\n"
    "  x ^= x >> 15;\n"
    "  x *= 0x2C1B3C6Du;\n"
    "  x ^= x >> 12;\n"
    "  x *= 0x297A2D39u;\n"
    "  x ^= x >> 15;\n"
    "  return x;\n"
    "}\n"
    "float tg_texel(uint id, uint index) { return (float)(tg_sig(id, index) & 0x3FFu); }\n"
    "float4 tg_texel4(uint id, uint base) {\n"
    "  return (float4)(tg_texel(id, base), tg_texel(id, base + 1u), tg_texel(id, base + 2u),\n"
    "                  tg_texel(id, base + 3u));\n"
    "}\n"
    "uint tg_bad4(float4 v, float4 w) {\n"
    "  return (uint)(v.x != w.x) + (uint)(v.y != w.y) + (uint)(v.z != w.z) + (uint)(v.w != w.w);\n"
    "}\n"
    "/* A 64-bit count from two 32-bit words: the high word takes the carry. */\n"
    "void tg_count(__global uint *counts, uint record, uint n) {\n"
    "  if (n == 0u) return;\n"
    "  uint old = atomic_add(&counts[2u * record], n);\n"
    "  if (old + n < old) atomic_inc(&counts[2u * record + 1u]);\n"
    "}\n"
    "__kernel void tg_buffer_verify(__global const uchar *data, uint words, uint tail, uint id,\n"
    "                               uint record, __global uint *counts) {\n"
    "  uint i = (uint)get_global_id(0);\n"
    "  uint bad = 0u;\n"
    "  if (i < words) bad = ((__global const uint *)data)[i] != tg_sig(id, i);\n"
    "  else if (i - words < tail) bad = data[4u * words + (i - words)] != (uchar)tg_sig(id, i);\n"
    "  tg_count(counts, record, bad);\n"
    "}\n"
    "__kernel void tg_buffer_write(__global uchar *data, uint words, uint tail, uint id) {\n"
    "  uint i = (uint)get_global_id(0);\n"
    "  if (i < words) ((__global uint *)data)[i] = tg_sig(id, i);\n"
    "  else if (i - words < tail) data[4u * words + (i - words)] = (uchar)tg_sig(id, i);\n"
    "}\n"
    "#ifdef TG_IMAGES\n"
    "/* Work-groups have a fixed size, so the grid is rounded up: items outside do nothing. */\n"
    "#define TG_XYZ                                                    \\\n"
    "  uint x = (uint)get_global_id(0), y = (uint)get_global_id(1);     \\\n"
    "  uint z = (uint)get_global_id(2);                                 \\\n"
    "  if (x >= w || y >= h || z >= d) return;\n"
    "#define TG_BASE (((z * h + y) * w + x) * 4u)\n"
    "__kernel void tg_image2d_verify(__read_only image2d_t img, uint w, uint h, uint d, uint id,\n"
    "                                uint record, __global uint *counts) {\n"
    "  TG_XYZ\n"
    "  float4 v = read_imagef(img, (int2)((int)x, (int)y));\n"
    "  tg_count(counts, record, tg_bad4(v, tg_texel4(id, TG_BASE)));\n"
    "}\n"
    "__kernel void tg_image2d_write(__write_only image2d_t img, uint w, uint h, uint d,\n"
    "                             uint id) {\n"
    "  TG_XYZ\n"
    "  write_imagef(img, (int2)((int)x, (int)y), tg_texel4(id, TG_BASE));\n"
    "}\n"
    "__kernel void tg_array_verify(__read_only image2d_array_t img, uint w, uint h, uint d,\n"
    "                              uint id, uint record, __global uint *counts) {\n"
    "  TG_XYZ\n"
    "  float4 v = read_imagef(img, (int4)((int)x, (int)y, (int)z, 0));\n"
    "  tg_count(counts, record, tg_bad4(v, tg_texel4(id, TG_BASE)));\n"
    "}\n"
    "__kernel void tg_array_write(__write_only image2d_array_t img, uint w, uint h, uint d,\n"
    "                             uint id) {\n"
    "  TG_XYZ\n"
    "  write_imagef(img, (int4)((int)x, (int)y, (int)z, 0), tg_texel4(id, TG_BASE));\n"
    "}\n"
    "__kernel void tg_image3d_verify(__read_only image3d_t img, uint w, uint h, uint d, uint id,\n"
    "                                uint record, __global uint *counts) {\n"
    "  TG_XYZ\n"
    "  float4 v = read_imagef(img, (int4)((int)x, (int)y, (int)z, 0));\n"
    "  tg_count(counts, record, tg_bad4(v, tg_texel4(id, TG_BASE)));\n"
    "}\n"
    "#ifdef TG_3D_WRITES\n"
    "#pragma OPENCL EXTENSION cl_khr_3d_image_writes : enable\n"
    "__kernel void tg_image3d_write(__write_only image3d_t img, uint w, uint h, uint d,\n"
    "                             uint id) {\n"
    "  TG_XYZ\n"
    "  write_imagef(img, (int4)((int)x, (int)y, (int)z, 0), tg_texel4(id, TG_BASE));\n"
    "}\n"
    "#endif\n"
    "#endif\n";
/* clang-format on */

static const char *const k_kernel_names[K_COUNT] = {
    "tg_buffer_verify", "tg_buffer_write", "tg_image2d_verify", "tg_image2d_write",
    "tg_array_verify",  "tg_array_write",  "tg_image3d_verify", "tg_image3d_write"};

static tg_status build_program(ocl_device *d) {
  if (d->program) return TG_OK;
  const ocl_api *a = &d->api;
  cl_int e = CL_SUCCESS;
  const char *src = k_kernel_source;
  size_t len = sizeof k_kernel_source - 1;
  cl_program prog = a->CreateProgramWithSource(d->context, 1, &src, &len, &e);
  if (prog == NULL || e != CL_SUCCESS)
    return tg__ocl_fail_cl(d, e != CL_SUCCESS ? e : CL_OUT_OF_HOST_MEMORY);
  char options[128];
  snprintf(options, sizeof options, "-cl-std=CL1.2%s%s", d->images ? " -DTG_IMAGES" : "",
           d->images && d->image_3d_writes ? " -DTG_3D_WRITES" : "");
  e = a->BuildProgram(prog, 1, &d->device, options, NULL, NULL);
  if (e != CL_SUCCESS) {
    a->ReleaseProgram(prog);
    return tg__ocl_fail_cl(d, e);
  }
  cl_kernel kernels[K_COUNT] = {0};
  for (int k = 0; k < K_COUNT; ++k) {
    int image = k >= K_IMAGE2D_VERIFY;
    if (image && !d->images) continue;
    if (k == K_IMAGE3D_WRITE && !d->image_3d_writes) continue;
    kernels[k] = a->CreateKernel(prog, k_kernel_names[k], &e);
    if (kernels[k] == NULL || e != CL_SUCCESS) {
      for (int j = 0; j < k; ++j)
        if (kernels[j]) a->ReleaseKernel(kernels[j]);
      a->ReleaseProgram(prog);
      return tg__ocl_fail_cl(d, e != CL_SUCCESS ? e : CL_INVALID_KERNEL);
    }
  }
  d->program = prog;
  memcpy(d->kernels, kernels, sizeof kernels);
  /* Fixed work-group sizes (64 items: 64, or 8x8x1): a driver that compiles one variant per
   * work-group size (PoCL) then compiles each kernel once, instead of once per tensor shape. */
  size_t items[16] = {0}, device_max = 0; /* 0: not reported, no per-dimension limit */
  if (a->GetDeviceInfo(d->device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof items, items, NULL) !=
      CL_SUCCESS)
    memset(items, 0, sizeof items);
  a->GetDeviceInfo(d->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof device_max, &device_max, NULL);
  for (int k = 0; k < K_COUNT; ++k) {
    size_t limit = device_max ? device_max : 1, kmax = 0;
    if (kernels[k] &&
        a->GetKernelWorkGroupInfo(kernels[k], d->device, CL_KERNEL_WORK_GROUP_SIZE, sizeof kmax,
                                  &kmax, NULL) == CL_SUCCESS &&
        kmax > 0 && kmax < limit)
      limit = kmax;
    size_t *l = d->local[k];
    if (k < K_IMAGE2D_VERIFY) {
      l[0] = 64;
      l[1] = l[2] = 1;
    } else {
      l[0] = l[1] = 8;
      l[2] = 1;
    }
    for (int i = 0; i < 3; ++i)
      if (items[i] && l[i] > items[i]) l[i] = items[i];
    while (l[0] * l[1] * l[2] > limit) {
      if (l[1] >= l[0] && l[1] > 1)
        l[1] /= 2;
      else if (l[0] > 1)
        l[0] /= 2;
      else
        break;
    }
  }
  return TG_OK;
}

/* ------------------------------------------------------------------------------------------ */
/* Shadow run. */

/* On a borrowed out-of-order queue used in order: a barrier, so that the next command starts
 * only after every command before it finished. A no-op on an in-order queue. */
tg_status tg__ocl_in_order(ocl_device *d) {
  if (!d->queue_ooo) return TG_OK;
  cl_int e = d->api.EnqueueBarrierWithWaitList(d->queue, 0, NULL, NULL);
  return e == CL_SUCCESS ? TG_OK : tg__ocl_fail_cl(d, e);
}

/* Forget a run's recorded ops and events. */
void tg__ocl_check_reset(ocl_device *d) {
  if (d->events) {
    for (size_t o = 0; o < d->op_count; ++o)
      if (d->events[o]) d->api.ReleaseEvent(d->events[o]);
    tg__free(&d->alloc, d->events);
    d->events = NULL;
  }
  tg__free(&d->alloc, d->op_access_start);
  tg__free(&d->alloc, d->op_wait_start);
  d->op_access_start = d->op_wait_start = NULL;
  d->access_count = d->wait_count = d->ops_seen = 0;
  d->submitted = 0;
  d->checking = 0;
}

tg_status tg__ocl_check_begin(void *impl, size_t record_count, size_t op_count,
                              int out_of_order, tg_precision precision) {
  ocl_device *d = impl;
  const ocl_api *a = &d->api;
  tg__ocl_check_reset(d);
  tg_status st = build_program(d);
  if (st != TG_OK) return st;
  if (record_count > UINT32_MAX / 2) return TG_ERROR_LIMIT;
  size_t need = record_count ? record_count : 1;
  cl_int e;
  if (d->counters_capacity < need) {
    if (d->counters) a->ReleaseMemObject(d->counters);
    d->counters_capacity = 0;
    d->counters =
        a->CreateBuffer(d->context, CL_MEM_READ_WRITE, need * 2 * sizeof(cl_uint), NULL, &e);
    if (d->counters == NULL || e != CL_SUCCESS) {
      if (d->counters) a->ReleaseMemObject(d->counters);
      d->counters = NULL;
      return tg__ocl_fail_cl(d, e != CL_SUCCESS ? e : CL_MEM_OBJECT_ALLOCATION_FAILURE);
    }
    d->counters_capacity = need;
  }
  const cl_uint zero = 0;
  /* After whatever the engine enqueued before the check (a borrowed out-of-order queue). */
  if ((st = tg__ocl_in_order(d)) != TG_OK) return st;
  e = a->EnqueueFillBuffer(d->queue, d->counters, &zero, sizeof zero, 0, need * 2 * sizeof(cl_uint),
                           0, NULL, NULL);
  if (e != CL_SUCCESS) return tg__ocl_fail_cl(d, e);
  if ((st = tg__ocl_in_order(d)) != TG_OK) return st;
  d->precision = precision;
  d->record_count = record_count;
  d->op_count = op_count;
  d->out_of_order = out_of_order && d->ooo_queue != NULL;
  d->checked_bytes = 0;
  d->check_serial++;
  if (d->out_of_order) {
    d->op_access_start = tg__calloc(&d->alloc, op_count + 1, sizeof *d->op_access_start);
    d->op_wait_start = tg__calloc(&d->alloc, op_count + 1, sizeof *d->op_wait_start);
    d->events = tg__calloc(&d->alloc, op_count ? op_count : 1, sizeof *d->events);
    if (!d->op_access_start || !d->op_wait_start || !d->events) {
      tg__ocl_check_reset(d);
      return TG_ERROR_OUT_OF_HOST_MEMORY;
    }
  }
  d->checking = 1;
  return TG_OK;
}

/* Each check starts from memory holding a value no signature matches (0xA5 bytes; -0.5 texels,
 * as signatures are integers), so a tensor read before the check wrote it is reported, even
 * when an earlier check left its signature there. Enqueued on the in-order queue before the
 * memory's first access in this check. */
tg_status tg__ocl_reset_memory(ocl_device *d, ocl_memory *m) {
  if (m == NULL || m->mem == NULL || m->shared || m->filled_for == d->check_serial) return TG_OK;
  cl_int e;
  if (!tg_storage_is_texture(m->storage)) {
    const cl_uchar pattern = 0xA5;
    e = d->api.EnqueueFillBuffer(d->queue, m->mem, &pattern, 1, 0, (size_t)m->bytes, 0, NULL, NULL);
  } else {
    const cl_float color[4] = {-0.5f, -0.5f, -0.5f, -0.5f};
    size_t origin[3] = {0, 0, 0};
    size_t region[3] = {(size_t)m->extent.w, (size_t)m->extent.h, (size_t)m->extent.d};
    e = d->api.EnqueueFillImage(d->queue, m->mem, color, origin, region, 0, NULL, NULL);
  }
  if (e != CL_SUCCESS) return tg__ocl_fail_cl(d, e);
  m->filled_for = d->check_serial;
  return tg__ocl_in_order(d);
}

/* Set the arguments of and enqueue the kernel for one access. `*skipped` is set when the
 * tensor is empty (nothing enqueued, no event). */
static tg_status enqueue_access(ocl_device *d, cl_command_queue q, const ocl_view *v,
                                const tg_tensor_resource *res, uint32_t record, uint32_t id,
                                int write, cl_uint nwait, const cl_event *wait, cl_event *event,
                                int *skipped) {
  const ocl_api *a = &d->api;
  *skipped = 1;
  cl_int e = CL_SUCCESS;
  int kind = tg__ocl_image_kind(res->storage);
  size_t global[3] = {1, 1, 1};
  cl_uint dims;
  cl_kernel k;
  int kid;
  cl_uint arg = 0;
  if (kind < 0) {
    uint64_t words = res->bytes / 4, tail = res->bytes % 4;
    d->checked_bytes += res->bytes;
    if (res->bytes == 0 || v->mem == NULL) return TG_OK;
    if (res->bytes > UINT32_MAX) return tg__ocl_fail_cl(d, CL_INVALID_BUFFER_SIZE);
    cl_uint w32 = (cl_uint)words, t32 = (cl_uint)tail;
    kid = write ? K_BUFFER_WRITE : K_BUFFER_VERIFY;
    k = d->kernels[kid];
    e |= a->SetKernelArg(k, arg++, sizeof(cl_mem), &v->mem);
    e |= a->SetKernelArg(k, arg++, sizeof w32, &w32);
    e |= a->SetKernelArg(k, arg++, sizeof t32, &t32);
    global[0] = (size_t)(words + tail);
    dims = 1;
  } else {
    const tg_extent *x = &res->extent;
    uint64_t texels;
    if (tg_extent_volume(*x, &texels) != TG_OK) return TG_ERROR_OVERFLOW;
    d->checked_bytes += texels * tg__texel_bytes(d->precision);
    if (texels == 0 || v->mem == NULL) return TG_OK;
    if (texels > UINT32_MAX / 4) return tg__ocl_fail_cl(d, CL_INVALID_IMAGE_SIZE);
    static const int k_kernel[IMG_COUNT][2] = {{K_IMAGE2D_VERIFY, K_IMAGE2D_WRITE},
                                               {K_ARRAY_VERIFY, K_ARRAY_WRITE},
                                               {K_IMAGE3D_VERIFY, K_IMAGE3D_WRITE}};
    kid = k_kernel[kind][write];
    k = d->kernels[kid];
    if (k == NULL) return tg__ocl_fail_cl(d, CL_INVALID_OPERATION); /* no 3D image writes */
    cl_uint w32 = (cl_uint)x->w, h32 = (cl_uint)x->h, d32 = (cl_uint)x->d;
    e |= a->SetKernelArg(k, arg++, sizeof(cl_mem), &v->mem);
    e |= a->SetKernelArg(k, arg++, sizeof w32, &w32);
    e |= a->SetKernelArg(k, arg++, sizeof h32, &h32);
    e |= a->SetKernelArg(k, arg++, sizeof d32, &d32);
    global[0] = (size_t)x->w;
    global[1] = (size_t)x->h;
    global[2] = (size_t)x->d;
    dims = kind == IMG_2D ? 2 : 3;
  }
  cl_uint id32 = id, rec32 = record;
  e |= a->SetKernelArg(k, arg++, sizeof id32, &id32);
  if (!write) {
    e |= a->SetKernelArg(k, arg++, sizeof rec32, &rec32);
    e |= a->SetKernelArg(k, arg++, sizeof(cl_mem), &d->counters);
  }
  if (e != CL_SUCCESS) return tg__ocl_fail_cl(d, CL_INVALID_KERNEL_ARGS);
  /* OpenCL 1.2 needs the grid to be a multiple of the work-group: round up (the kernels skip
   * items outside the tensor). */
  const size_t *local = d->local[kid];
  for (cl_uint i = 0; i < dims; ++i) {
    size_t r = global[i] % local[i];
    if (r) {
      if (global[i] > SIZE_MAX - (local[i] - r)) return tg__ocl_fail_cl(d, CL_INVALID_GLOBAL_WORK_SIZE);
      global[i] += local[i] - r;
    }
  }
  e = a->EnqueueNDRangeKernel(q, k, dims, NULL, global, local, nwait, nwait ? wait : NULL, event);
  if (e != CL_SUCCESS) return tg__ocl_fail_cl(d, e);
  *skipped = 0;
  return TG_OK;
}

tg_status tg__ocl_check_op(void *impl, size_t op, const tg__check_access *reads,
                           size_t read_count, const tg__check_access *writes,
                           size_t write_count, const uint32_t *waits, size_t wait_count) {
  ocl_device *d = impl;
  if (!d->checking) return TG_ERROR_INVALID_ARGUMENT;
  if (!d->out_of_order) {
    int skipped;
    for (size_t i = 0; i < read_count + write_count; ++i) {
      const tg__check_access *x = i < read_count ? &reads[i] : &writes[i - read_count];
      tg_status st = tg__ocl_reset_memory(d, ((ocl_view *)x->view)->memory);
      if (st != TG_OK) return st;
    }
    for (size_t i = 0; i < read_count; ++i) {
      tg_status st =
          enqueue_access(d, d->queue, reads[i].view, reads[i].resource, (uint32_t)reads[i].record,
                         reads[i].signature_id, 0, 0, NULL, NULL, &skipped);
      if (st == TG_OK && !skipped) st = tg__ocl_in_order(d);
      if (st != TG_OK) return st;
    }
    for (size_t i = 0; i < write_count; ++i) {
      tg_status st = enqueue_access(d, d->queue, writes[i].view, writes[i].resource,
                                    (uint32_t)writes[i].record, writes[i].signature_id, 1, 0, NULL,
                                    NULL, &skipped);
      if (st == TG_OK && !skipped) st = tg__ocl_in_order(d);
      if (st != TG_OK) return st;
    }
    return TG_OK;
  }
  /* Out of order: record the op; check_end submits every op once all waits are known. */
  if (op >= d->op_count || op < d->ops_seen) return TG_ERROR_INVALID_ARGUMENT;
  for (size_t i = 0; i < wait_count; ++i)
    if (waits[i] >= d->op_count || waits[i] == op) return TG_ERROR_INVALID_ARGUMENT;
  /* Ops the generic layer did not pass get empty ranges. */
  for (size_t o = d->ops_seen; o <= op; ++o) {
    d->op_access_start[o] = d->access_count;
    d->op_wait_start[o] = d->wait_count;
  }
  if (!tg__grow(&d->alloc, (void **)&d->accesses, &d->access_capacity,
            d->access_count + read_count + write_count, sizeof *d->accesses) ||
      !tg__grow(&d->alloc, (void **)&d->waits, &d->wait_capacity, d->wait_count + wait_count,
            sizeof *d->waits))
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t i = 0; i < read_count; ++i)
    d->accesses[d->access_count++] = (ocl_access){
        reads[i].view, reads[i].resource, (uint32_t)reads[i].record, reads[i].signature_id, 0};
  for (size_t i = 0; i < write_count; ++i)
    d->accesses[d->access_count++] = (ocl_access){
        writes[i].view, writes[i].resource, (uint32_t)writes[i].record, writes[i].signature_id, 1};
  if (wait_count) memcpy(d->waits + d->wait_count, waits, wait_count * sizeof *waits);
  d->wait_count += wait_count;
  d->ops_seen = op + 1;
  d->op_access_start[op + 1] = d->access_count;
  d->op_wait_start[op + 1] = d->wait_count;
  return TG_OK;
}

/* Enqueue one recorded op on the out-of-order queue: reads after the ops it waits for, writes
 * after its reads, and one event standing for the whole op. */
static tg_status submit_op(ocl_device *d, size_t op) {
  const ocl_api *a = &d->api;
  size_t w0 = d->op_wait_start[op], w1 = d->op_wait_start[op + 1];
  size_t a0 = d->op_access_start[op], a1 = d->op_access_start[op + 1];
  size_t cap = (w1 - w0) + 2 * (a1 - a0) + 1;
  if (!tg__grow(&d->alloc, (void **)&d->scratch_events, &d->scratch_capacity, cap,
            sizeof *d->scratch_events))
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  cl_event *ev = d->scratch_events;
  /* ev[0..nw): what the op waits for; then the read events; then the write events. */
  cl_uint nw = 0;
  for (size_t i = w0; i < w1; ++i)
    if (d->events[d->waits[i]]) ev[nw++] = d->events[d->waits[i]];
  cl_uint nr = 0, nwr = 0;
  tg_status st = TG_OK;
  for (int pass = 0; pass < 2 && st == TG_OK; ++pass) {
    cl_uint nwait = pass == 0 ? nw : nw + nr;
    for (size_t i = a0; i < a1 && st == TG_OK; ++i) {
      const ocl_access *x = &d->accesses[i];
      if (x->write != pass) continue;
      cl_event e = NULL;
      int skipped;
      st = enqueue_access(d, d->ooo_queue, x->view, x->resource, x->record, x->signature_id,
                          x->write, nwait, ev, &e, &skipped);
      if (st == TG_OK && !skipped) {
        ev[nw + nr + nwr] = e;
        if (pass == 0)
          ++nr;
        else
          ++nwr;
      }
    }
  }
  /* The op is done when its writes are (they wait for its reads), or its reads if it writes
   * nothing: later ops wait for those events only. */
  cl_event *mine = ev + nw;
  cl_uint nmine = nr + nwr;
  if (st == TG_OK && nwr > 0 && nr > 0) {
    for (cl_uint i = 0; i < nr; ++i) a->ReleaseEvent(mine[i]);
    mine += nr;
    nmine = nwr;
  }
  if (st == TG_OK) {
    cl_event done = NULL;
    if (nmine == 1) {
      done = mine[0];
      nmine = 0; /* ownership moves to events[op] */
    } else if (nmine > 1 || nw > 0) {
      /* A marker stands for the op; with no kernels it still carries the op's waits so that
       * ordering stays transitive through ops that touch no tensor. */
      cl_int e =
          a->EnqueueMarkerWithWaitList(d->ooo_queue, nmine ? nmine : nw, nmine ? mine : ev, &done);
      if (e != CL_SUCCESS) st = tg__ocl_fail_cl(d, e);
    }
    d->events[op] = done;
  }
  for (cl_uint i = 0; i < nmine; ++i) a->ReleaseEvent(mine[i]);
  return st;
}

/* Submit recorded ops in an order the waits allow, taking the highest-numbered ready op first:
 * ops not ordered by a wait run in the opposite of program order, so memory reuse that lacks
 * a wait is exercised on every run, not only when the driver's threads happen to race. */
static tg_status submit_range(ocl_device *d, size_t from, size_t to) {
  tg_status st = TG_OK;
  if (to <= from) return TG_OK;
  size_t n = to - from;
  /* Reset the memory of every tensor these ops touch, then let the out-of-order queue start:
   * it is not ordered after the in-order one, so drain that first. Waits for ops before `from`
   * (already submitted) use their events as they are. */
  for (size_t i = d->op_access_start[from]; i < d->op_access_start[to]; ++i)
    if ((st = tg__ocl_reset_memory(d, d->accesses[i].view->memory)) != TG_OK) return st;
  cl_int e = d->api.Finish(d->queue);
  if (e != CL_SUCCESS) return tg__ocl_fail_cl(d, e);
  uint32_t *pending = tg__calloc(&d->alloc, n, sizeof *pending); /* unfinished waits */
  size_t *succ_start = tg__calloc(&d->alloc, n + 1, sizeof *succ_start);
  uint32_t *succ = tg__calloc(&d->alloc, d->wait_count + 1, sizeof *succ);
  uint32_t *heap = tg__calloc(&d->alloc, n, sizeof *heap);
  if (!pending || !succ_start || !succ || !heap) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  for (size_t o = 0; o < n; ++o)
    for (size_t i = d->op_wait_start[from + o]; i < d->op_wait_start[from + o + 1]; ++i) {
      if (d->waits[i] < from) continue;
      succ_start[d->waits[i] - from + 1]++;
      pending[o]++;
    }
  for (size_t o = 0; o < n; ++o) succ_start[o + 1] += succ_start[o];
  {
    size_t *cursor = tg__calloc(&d->alloc, n, sizeof *cursor);
    if (cursor == NULL) {
      st = TG_ERROR_OUT_OF_HOST_MEMORY;
      goto done;
    }
    for (size_t o = 0; o < n; ++o)
      for (size_t i = d->op_wait_start[from + o]; i < d->op_wait_start[from + o + 1]; ++i) {
        if (d->waits[i] < from) continue;
        uint32_t w = (uint32_t)(d->waits[i] - from);
        succ[succ_start[w] + cursor[w]++] = (uint32_t)o;
      }
    tg__free(&d->alloc, cursor);
  }
  /* Max-heap of ready ops. */
  size_t hn = 0, submitted = 0;
  for (size_t o = 0; o < n; ++o)
    if (pending[o] == 0) tg__op_heap_push(heap, &hn, (uint32_t)o);
  while (hn > 0 && st == TG_OK) {
    uint32_t op = tg__op_heap_pop(heap, &hn);
    st = submit_op(d, from + op);
    ++submitted;
    for (size_t i = succ_start[op]; i < succ_start[op + 1]; ++i)
      if (--pending[succ[i]] == 0) tg__op_heap_push(heap, &hn, succ[i]);
  }
  if (st == TG_OK && submitted != n) st = TG_ERROR_INVALID_ARGUMENT; /* waits form a cycle */
  if (st == TG_OK) d->submitted = to;
done:
  tg__free(&d->alloc, pending);
  tg__free(&d->alloc, succ_start);
  tg__free(&d->alloc, succ);
  tg__free(&d->alloc, heap);
  return st;
}

/* Every recorded op, once all are known (check_end). */
static tg_status submit_all(ocl_device *d) {
  size_t n = d->op_count;
  for (size_t o = d->ops_seen; o < n; ++o) {
    d->op_access_start[o + 1] = d->access_count;
    d->op_wait_start[o + 1] = d->wait_count;
  }
  d->op_access_start[0] = 0;
  d->op_wait_start[0] = 0;
  return submit_range(d, d->submitted, n);
}

tg_status tg__ocl_check_end(void *impl, uint64_t *mismatches, uint64_t *checked_bytes) {
  ocl_device *d = impl;
  const ocl_api *a = &d->api;
  if (!d->checking) return TG_ERROR_INVALID_ARGUMENT;
  tg_status st = TG_OK;
  cl_command_queue q = d->out_of_order ? d->ooo_queue : d->queue;
  if (d->out_of_order) st = submit_all(d);
  cl_int e = a->Finish(q);
  if (st == TG_OK && e != CL_SUCCESS) st = tg__ocl_fail_cl(d, e);
  cl_uint *counts = NULL;
  if (st == TG_OK && d->record_count) {
    counts = tg__calloc(&d->alloc, d->record_count * 2, sizeof *counts);
    if (counts == NULL)
      st = TG_ERROR_OUT_OF_HOST_MEMORY;
    else {
      /* Blocking read on the in-order queue: every kernel has finished above. */
      e = a->EnqueueReadBuffer(d->queue, d->counters, CL_TRUE, 0,
                               d->record_count * 2 * sizeof *counts, counts, 0, NULL, NULL);
      if (e != CL_SUCCESS) st = tg__ocl_fail_cl(d, e);
    }
  }
  if (st == TG_OK) {
    for (size_t r = 0; r < d->record_count; ++r)
      mismatches[r] += (uint64_t)counts[2 * r] | ((uint64_t)counts[2 * r + 1] << 32);
    *checked_bytes = d->checked_bytes;
  }
  tg__free(&d->alloc, counts);
  tg__ocl_check_reset(d);
  return st;
}

void tg__ocl_check_abort(void *impl) {
  ocl_device *d = impl;
  /* Let whatever was enqueued finish before its events and the tensors go away. */
  d->api.Finish(d->queue);
  if (d->ooo_queue) d->api.Finish(d->ooo_queue);
  tg__ocl_check_reset(d);
}

tg_status tg__ocl_check_sync(void *impl) {
  ocl_device *d = impl;
  if (!d->checking) return TG_ERROR_INVALID_ARGUMENT;
  tg_status st = TG_OK;
  if (d->out_of_order) {
    st = submit_range(d, d->submitted, d->ops_seen);
    cl_int e = d->api.Finish(d->ooo_queue);
    if (st == TG_OK && e != CL_SUCCESS) st = tg__ocl_fail_cl(d, e);
  }
  cl_int e = d->api.Finish(d->queue);
  if (st == TG_OK && e != CL_SUCCESS) st = tg__ocl_fail_cl(d, e);
  return st;
}
