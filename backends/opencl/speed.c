/* The OpenCL backend's speed proxies (tangram/speed.h) and their timing. */
#include <stdio.h>
#include <string.h>

#include "backends/opencl/opencl_state.h"

/* ------------------------------------------------------------------------------------------ */
/* Proxy runs (tangram/speed.h): one kernel per pair of output kind and input kind (buffer,
 * 2D image, 2D array, 3D image), the op class a run-time switch. Each work item is one
 * output texel: it reads the inputs in the class's pattern and writes the output record's
 * signature, with the sum of what it read masked out by `mix` (0 at run time, unknown to the
 * compiler, so every read stays). Timed runs use a queue of their own with profiling. */

/* clang-format off */
/* Three strings: ISO C compilers need support string literals of 4095 characters only. */
static const char k_proxy_source_a[] =
    "uint tg_sig(uint id, uint index) {\n"
    "  uint x = id * 0x9E3779B1u + index * 0x85EBCA77u + 0x27D4EB2Fu;\n"
    "  x ^= x >> 15; x *= 0x2C1B3C6Du; x ^= x >> 12; x *= 0x297A2D39u; x ^= x >> 15;\n"
    "  return x;\n"
    "}\n"
    "float tg_texel(uint id, uint index) { return (float)(tg_sig(id, index) & 0x3FFu); }\n"
    "#ifdef TG_HALF\n"
    "#define TG_ELEM half\n"
    "#define TG_BLOAD(p, i) vload_half4((size_t)(i), (p))\n"
    "#else\n"
    "#define TG_ELEM float\n"
    "#define TG_BLOAD(p, i) vload4((size_t)(i), (p))\n"
    "#endif\n"
    "__constant sampler_t tg_smp = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE |\n"
    "                              CLK_FILTER_NEAREST;\n"
    "#define TG_IN_B __global const TG_ELEM *\n"
    "#define TG_IN_I2 __read_only image2d_t\n"
    "#define TG_IN_IA __read_only image2d_array_t\n"
    "#define TG_IN_I3 __read_only image3d_t\n"
    "#define TG_IN_IB __read_only image1d_buffer_t\n"
    "#define TG_LD_B(t, g, px, py, pz) TG_BLOAD(t, ((pz) * (g).y + (py)) * (g).x + (px))\n"
    "#define TG_LD_I2(t, g, px, py, pz) read_imagef(t, tg_smp, (int2)((px), (pz) * (g).y + (py)))\n"
    "#define TG_LD_IA(t, g, px, py, pz) read_imagef(t, tg_smp, (int4)((px), (py), (pz), 0))\n"
    "#define TG_LD_I3(t, g, px, py, pz) read_imagef(t, tg_smp, (int4)((px), (py), (pz), 0))\n"
    "#define TG_IB_AT(g, px, py, pz) ((g).w + ((pz) * (g).y + (py)) * (g).x + (px))\n"
    "#ifdef TG_HALF\n"
    "#define TG_LD_IB(t, g, px, py, pz) convert_float4(read_imageui(t, TG_IB_AT(g, px, py, pz)))\n"
    "#else\n"
    "#define TG_LD_IB(t, g, px, py, pz) as_float4(read_imageui(t, TG_IB_AT(g, px, py, pz)))\n"
    "#endif\n"
    "#define TG_OUT_B __global uint *\n"
    "#define TG_OUT_I2 __write_only image2d_t\n"
    "#define TG_OUT_IA __write_only image2d_array_t\n"
    "#define TG_OUT_I3 __write_only image3d_t\n"
    "#define TG_OUT_IB __write_only image1d_buffer_t\n"
    "float4 tg_texel4(uint id, uint L, float4 acc, uint mix) {\n"
    "  float4 v = (float4)(tg_texel(id, 4u * L), tg_texel(id, 4u * L + 1u),\n"
    "                      tg_texel(id, 4u * L + 2u), tg_texel(id, 4u * L + 3u));\n"
    "  return mix ? v + acc : v;\n"
    "}\n"
    "#ifdef TG_HALF\n"
    "#define TG_ST_B(t, g, px, py, pz, L, id, acc, mix) \\\n"
    "  vstore2((uint2)(tg_sig(id, 2u * L), tg_sig(id, 2u * L + 1u)) ^ (as_uint4(acc).xy & (uint2)(mix)), (size_t)L, t)\n"
    "#else\n"
    "#define TG_ST_B(t, g, px, py, pz, L, id, acc, mix) \\\n"
    "  vstore4((uint4)(tg_sig(id, 4u * L), tg_sig(id, 4u * L + 1u), tg_sig(id, 4u * L + 2u), \\\n"
    "                  tg_sig(id, 4u * L + 3u)) ^ (as_uint4(acc) & (uint4)(mix)), (size_t)L, t)\n"
    "#endif\n"
    "#define TG_ST_I2(t, g, px, py, pz, L, id, acc, mix) \\\n"
    "  write_imagef(t, (int2)((px), (pz) * (g).y + (py)), tg_texel4(id, L, acc, mix))\n"
    "#define TG_ST_IA(t, g, px, py, pz, L, id, acc, mix) \\\n"
    "  write_imagef(t, (int4)((px), (py), (pz), 0), tg_texel4(id, L, acc, mix))\n"
    "#define TG_ST_I3 TG_ST_IA\n"
    "#ifdef TG_HALF\n"
    "#define TG_ST_IB(t, g, px, py, pz, L, id, acc, mix) {                               \\\n"
    "    uint2 w_ = (uint2)(tg_sig(id, 2u * L), tg_sig(id, 2u * L + 1u)) ^ (as_uint4(acc).xy & (uint2)(mix)); \\\n"
    "    write_imageui(t, (g).w + (int)(L), (uint4)(w_.x & 0xFFFFu, w_.x >> 16, w_.y & 0xFFFFu, w_.y >> 16)); }\n"
    "#else\n"
    "#define TG_ST_IB(t, g, px, py, pz, L, id, acc, mix)                                  \\\n"
    "  write_imageui(t, (g).w + (int)(L), (uint4)(tg_sig(id, 4u * L), tg_sig(id, 4u * L + 1u), \\\n"
    "                tg_sig(id, 4u * L + 2u), tg_sig(id, 4u * L + 3u)) ^ (as_uint4(acc) & (uint4)(mix)))\n"
    "#endif\n";
static const char k_proxy_source_b[] =
    "int tg_scale(int v, int from, int to) { return (int)(((long)v * to) / (from > 0 ? from : 1)); }\n"
    "/* The reads of one input in the class's pattern, added into acc. */\n"
    "#define TG_READ(I, t, g)                                                            \\\n"
    "  {                                                                                 \\\n"
    "    int cx = min(tg_scale(x, og.x, g.x), g.x - 1), cy = min(tg_scale(y, og.y, g.y), g.y - 1); \\\n"
    "    int cz = min(z, g.z - 1);                                                       \\\n"
    "    if (cls == 0) {                                                                 \\\n"
    "      acc += TG_LD_##I(t, g, min(x, g.x - 1), min(y, g.y - 1), cz);                 \\\n"
    "    } else if (cls == 1) {                                                          \\\n"
    "      int r = k / 2;                                                                \\\n"
    "      for (int dy = -r; dy <= r; ++dy)                                              \\\n"
    "        for (int dx = -r; dx <= r; ++dx)                                            \\\n"
    "          acc += TG_LD_##I(t, g, clamp(cx + dx, 0, g.x - 1), clamp(cy + dy, 0, g.y - 1), cz); \\\n"
    "    } else if (cls == 2) {                                                          \\\n"
    "      for (int c = 0; c < g.z; ++c) acc += TG_LD_##I(t, g, cx, cy, c);              \\\n"
    "    } else if (cls == 3) {                                                          \\\n"
    "      int x1 = max(tg_scale(x + 1, og.x, g.x), cx + 1), y1 = max(tg_scale(y + 1, og.y, g.y), cy + 1); \\\n"
    "      for (int yy = cy; yy < min(y1, g.y); ++yy)                                    \\\n"
    "        for (int xx = cx; xx < min(x1, g.x); ++xx) acc += TG_LD_##I(t, g, xx, yy, cz); \\\n"
    "    } else {                                                                        \\\n"
    "      ulong n = (ulong)g.x * (ulong)g.y * (ulong)g.z;                               \\\n"
    "      ulong S = ((ulong)(L - lo) * n) / (ulong)(hi - lo);                           \\\n"
    "      int sx = (int)(S % (ulong)g.x), sy = (int)((S / (ulong)g.x) % (ulong)g.y);    \\\n"
    "      int sz = (int)(S / ((ulong)g.x * (ulong)g.y));                                \\\n"
    "      acc += TG_LD_##I(t, g, sx, sy, sz);                                           \\\n"
    "    }                                                                               \\\n"
    "  }\n";
static const char k_proxy_source_c[] =
    "#define TG_PROXY(O, I)                                                              \\\n"
    "  __kernel void tg_proxy_##O##_##I(TG_OUT_##O out, int4 og, TG_IN_##I a, int4 ag,   \\\n"
    "                                   TG_IN_##I b, int4 bg, int nin, int cls, int k,    \\\n"
    "                                   uint lo, uint hi, uint id, uint mix) {            \\\n"
    "    uint L = lo + (uint)get_global_id(0);                                           \\\n"
    "    if (L >= hi) return;                                                            \\\n"
    "    int x = (int)(L % (uint)og.x), y = (int)((L / (uint)og.x) % (uint)og.y);        \\\n"
    "    int z = (int)(L / ((uint)og.x * (uint)og.y));                                   \\\n"
    "    float4 acc = (float4)(0.0f);                                                    \\\n"
    "    if (nin > 0) TG_READ(I, a, ag)                                                  \\\n"
    "    if (nin > 1) TG_READ(I, b, bg)                                                  \\\n"
    "    TG_ST_##O(out, og, x, y, z, L, id, acc, mix);                                   \\\n"
    "  }\n"
    "TG_PROXY(B, B)\n"
    "#ifdef TG_IMAGES\n"
    "TG_PROXY(B, IB) TG_PROXY(IB, B) TG_PROXY(IB, IB)\n"
    "TG_PROXY(B, I2) TG_PROXY(B, IA) TG_PROXY(B, I3)\n"
    "TG_PROXY(I2, B) TG_PROXY(I2, I2) TG_PROXY(I2, IA) TG_PROXY(I2, I3)\n"
    "TG_PROXY(IA, B) TG_PROXY(IA, I2) TG_PROXY(IA, IA) TG_PROXY(IA, I3)\n"
    "#ifdef TG_3D_WRITES\n"
    "#pragma OPENCL EXTENSION cl_khr_3d_image_writes : enable\n"
    "TG_PROXY(I3, B) TG_PROXY(I3, I2) TG_PROXY(I3, IA) TG_PROXY(I3, I3)\n"
    "#endif\n"
    "#endif\n";
/* clang-format on */

/* Kinds of proxy operands: buffer, then the image kinds (IMG_2D + 1, ...), then image
 * buffers (read and written as RGBA 32-bit, fp16: 16-bit, unsigned integer texels: the bytes
 * per texel of the float format, and the shadow run's signature words pass bit for bit). */
enum { PK_BUFFER, PK_2D, PK_ARRAY, PK_3D, PK_IMAGE_BUFFER, PK_COUNT };
static const char *const k_proxy_kind_names[PK_COUNT] = {"B", "I2", "IA", "I3", "IB"};

static int proxy_kind(tg_storage s) { return s == TG_STORAGE_IMAGE_BUFFER ? PK_IMAGE_BUFFER : tg__ocl_image_kind(s) + 1; }

/* The image1d_buffer of an image_buffer tensor, made on first use (memory.c's header). */
static tg_status proxy_image_buffer(ocl_device *d, const tg__proxy_tensor *t, cl_mem *mem, cl_int *base) {
  ocl_view *v = t->view;
  if (v->ib == NULL) {
    size_t texel = tg__texel_bytes(d->proxy_precision);
    uint64_t n = (uint64_t)t->w * t->h * t->s, first = v->memory->arena ? v->offset / texel : 0;
    if (v->memory->arena && v->offset % texel) return tg__ocl_fail_cl(d, CL_MISALIGNED_SUB_BUFFER_OFFSET);
    if (first + n > (uint64_t)INT32_MAX || first + n > d->max_image_buffer_texels) return TG_ERROR_UNSUPPORTED;
    cl_image_format format = {CL_RGBA, d->proxy_precision == TG_PRECISION_FP16 ? CL_UNSIGNED_INT16
                                                                               : CL_UNSIGNED_INT32};
    cl_image_desc desc = {
        .image_type = CL_MEM_OBJECT_IMAGE1D_BUFFER, .image_width = (size_t)(first + n),
        .buffer = v->memory->mem
    };
    cl_int e = CL_SUCCESS;
    cl_mem img = d->api.CreateImage(d->context, CL_MEM_READ_WRITE, &format, &desc, NULL, &e);
    if (img == NULL || e != CL_SUCCESS) {
      if (img) d->api.ReleaseMemObject(img);
      return tg__ocl_fail_cl(d, e != CL_SUCCESS ? e : CL_MEM_OBJECT_ALLOCATION_FAILURE);
    }
    d->live_mem_objects++;
    d->mem_objects_created++;
    v->ib = img;
    v->ib_base = (cl_int)first;
  }
  *mem = v->ib;
  *base = v->ib_base;
  return TG_OK;
}

void tg__ocl_proxy_release(ocl_device *d) {
  for (int p = 0; p < TG_PRECISION_COUNT; ++p) {
    for (int o = 0; o < PK_COUNT; ++o)
      for (int i = 0; i < PK_COUNT; ++i)
        if (d->proxy_kernels[p][o][i]) d->api.ReleaseKernel(d->proxy_kernels[p][o][i]);
    if (d->proxy_programs[p]) d->api.ReleaseProgram(d->proxy_programs[p]);
  }
  memset(d->proxy_kernels, 0, sizeof d->proxy_kernels);
  memset(d->proxy_programs, 0, sizeof d->proxy_programs);
}

static tg_status proxy_build(ocl_device *d, tg_precision precision) {
  if (d->proxy_programs[precision]) return TG_OK;
  const ocl_api *a = &d->api;
  cl_int e = CL_SUCCESS;
  const char *src[3] = {k_proxy_source_a, k_proxy_source_b, k_proxy_source_c};
  size_t len[3] = {sizeof k_proxy_source_a - 1, sizeof k_proxy_source_b - 1, sizeof k_proxy_source_c - 1};
  cl_program prog = a->CreateProgramWithSource(d->context, 3, src, len, &e);
  if (prog == NULL || e != CL_SUCCESS) return tg__ocl_fail_cl(d, e != CL_SUCCESS ? e : CL_OUT_OF_HOST_MEMORY);
  char options[128];
  snprintf(options, sizeof options, "-cl-std=CL1.2%s%s%s", d->images ? " -DTG_IMAGES" : "",
           d->images && d->image_3d_writes ? " -DTG_3D_WRITES" : "",
           precision == TG_PRECISION_FP16 ? " -DTG_HALF" : "");
  e = a->BuildProgram(prog, 1, &d->device, options, NULL, NULL);
  if (e != CL_SUCCESS) {
    a->ReleaseProgram(prog);
    return tg__ocl_fail_cl(d, e);
  }
  d->proxy_programs[precision] = prog;
  for (int o = 0; o < PK_COUNT; ++o)
    for (int i = 0; i < PK_COUNT; ++i) {
      if ((o || i) && !d->images) continue;
      if (o == PK_3D && !d->image_3d_writes) continue;
      if ((o == PK_IMAGE_BUFFER || i == PK_IMAGE_BUFFER) && o + i != PK_IMAGE_BUFFER && o != i) continue;
      char name[64];
      snprintf(name, sizeof name, "tg_proxy_%s_%s", k_proxy_kind_names[o], k_proxy_kind_names[i]);
      d->proxy_kernels[precision][o][i] = a->CreateKernel(prog, name, &e);
      if (d->proxy_kernels[precision][o][i] == NULL || e != CL_SUCCESS) {
        tg__ocl_proxy_release(d);
        return tg__ocl_fail_cl(d, e != CL_SUCCESS ? e : CL_INVALID_KERNEL);
      }
    }
  return TG_OK;
}

static void proxy_events_release(ocl_device *d) {
  for (size_t i = 0; i < d->proxy_event_count; ++i)
    if (d->proxy_events[i]) d->api.ReleaseEvent(d->proxy_events[i]);
  d->proxy_event_count = 0;
}

tg_status tg__ocl_speed_begin(void *impl, size_t op_count, size_t dispatch_count, tg_precision precision,
                              int timed) {
  ocl_device *d = impl;
  (void)dispatch_count;
  if ((int)precision < 0 || precision >= TG_PRECISION_COUNT) return TG_ERROR_INVALID_ARGUMENT;
  proxy_events_release(d);
  tg_status st = proxy_build(d, precision);
  if (st != TG_OK) return st;
  if (timed && d->profiling_queue == NULL) {
    cl_int e = CL_SUCCESS;
    d->profiling_queue =
        d->api.CreateCommandQueue(d->context, d->device, CL_QUEUE_PROFILING_ENABLE, &e);
    if (d->profiling_queue == NULL || e != CL_SUCCESS) {
      d->profiling_queue = NULL;
      return tg__ocl_fail_cl(d, e != CL_SUCCESS ? e : CL_INVALID_COMMAND_QUEUE);
    }
  }
  if (!timed && !d->checking) return TG_ERROR_INVALID_ARGUMENT;
  d->proxy_precision = precision;
  d->proxy_timed = timed;
  d->proxy_op_count = op_count;
  if (d->dummy == NULL) {
    cl_int e = CL_SUCCESS;
    d->dummy = d->api.CreateBuffer(d->context, CL_MEM_READ_WRITE, 64, NULL, &e);
    if (d->dummy == NULL || e != CL_SUCCESS) {
      d->dummy = NULL;
      return tg__ocl_fail_cl(d, e != CL_SUCCESS ? e : CL_MEM_OBJECT_ALLOCATION_FAILURE);
    }
  }
  return TG_OK;
}

tg_status tg__ocl_speed_dispatch(void *impl, const tg__proxy_dispatch *x) {
  ocl_device *d = impl;
  const ocl_api *a = &d->api;
  if (x->hi <= x->lo) return TG_OK;
  if (x->op >= d->proxy_op_count || x->in_count > 2) return TG_ERROR_INVALID_ARGUMENT;
  const ocl_view *ov = x->out.view;
  if (ov == NULL || ov->mem == NULL) return TG_OK; /* an empty tensor */
  int ok = proxy_kind(x->out.resource->storage);
  int ik = x->in_count ? proxy_kind(x->in[0].resource->storage) : PK_BUFFER;
  cl_kernel k = d->proxy_kernels[d->proxy_precision][ok][ik];
  if (k == NULL && (ok == PK_IMAGE_BUFFER || ik == PK_IMAGE_BUFFER)) return TG_ERROR_UNSUPPORTED; /* no images */
  if (k == NULL) return tg__ocl_fail_cl(d, CL_INVALID_OPERATION);
  cl_mem in[2] = {d->dummy, d->dummy}, om = ov->mem;
  cl_int g[3][4] = {{(cl_int)x->out.w, (cl_int)x->out.h, (cl_int)x->out.s, 0}, {1, 1, 1, 0}, {1, 1, 1, 0}};
  tg_status ist = TG_OK;
  if (ok == PK_IMAGE_BUFFER && (ist = proxy_image_buffer(d, &x->out, &om, &g[0][3])) != TG_OK) return ist;
  for (uint32_t i = 0; i < x->in_count; ++i) {
    const ocl_view *iv = x->in[i].view;
    if (iv == NULL || iv->mem == NULL) return TG_ERROR_INVALID_ARGUMENT;
    in[i] = iv->mem;
    if (proxy_kind(x->in[i].resource->storage) != ik) return TG_ERROR_INVALID_ARGUMENT;
    if (ik == PK_IMAGE_BUFFER && (ist = proxy_image_buffer(d, &x->in[i], &in[i], &g[i + 1][3])) != TG_OK)
      return ist;
    g[i + 1][0] = (cl_int)x->in[i].w;
    g[i + 1][1] = (cl_int)x->in[i].h;
    g[i + 1][2] = (cl_int)x->in[i].s;
  }
  if (x->in_count == 1) {
    in[1] = in[0];
    memcpy(g[2], g[1], sizeof g[1]);
  }
  cl_int nin = (cl_int)x->in_count, cls = x->op_class, kk = (cl_int)x->kernel;
  cl_uint lo = x->lo, hi = x->hi, id = x->out_id, mix = 0;
  cl_int e = CL_SUCCESS;
  cl_uint arg = 0;
  e |= a->SetKernelArg(k, arg++, sizeof(cl_mem), &om);
  e |= a->SetKernelArg(k, arg++, sizeof g[0], g[0]);
  e |= a->SetKernelArg(k, arg++, sizeof(cl_mem), &in[0]);
  e |= a->SetKernelArg(k, arg++, sizeof g[1], g[1]);
  e |= a->SetKernelArg(k, arg++, sizeof(cl_mem), &in[1]);
  e |= a->SetKernelArg(k, arg++, sizeof g[2], g[2]);
  e |= a->SetKernelArg(k, arg++, sizeof nin, &nin);
  e |= a->SetKernelArg(k, arg++, sizeof cls, &cls);
  e |= a->SetKernelArg(k, arg++, sizeof kk, &kk);
  e |= a->SetKernelArg(k, arg++, sizeof lo, &lo);
  e |= a->SetKernelArg(k, arg++, sizeof hi, &hi);
  e |= a->SetKernelArg(k, arg++, sizeof id, &id);
  e |= a->SetKernelArg(k, arg++, sizeof mix, &mix);
  if (e != CL_SUCCESS) return tg__ocl_fail_cl(d, CL_INVALID_KERNEL_ARGS);
  size_t local = 64, global = (size_t)(hi - lo);
  if (global % local) global += local - global % local;
  cl_event ev = NULL;
  if (d->proxy_timed) {
    if (!tg__grow(&d->alloc, (void **)&d->proxy_events, &d->proxy_event_capacity, d->proxy_event_count + 1,
              sizeof *d->proxy_events) ||
        !tg__grow(&d->alloc, (void **)&d->proxy_event_ops, &d->proxy_event_op_capacity,
              d->proxy_event_count + 1, sizeof *d->proxy_event_ops))
      return TG_ERROR_OUT_OF_HOST_MEMORY;
    e = a->EnqueueNDRangeKernel(d->profiling_queue, k, 1, NULL, &global, &local, 0, NULL, &ev);
    if (e != CL_SUCCESS) return tg__ocl_fail_cl(d, e);
    d->proxy_events[d->proxy_event_count] = ev;
    d->proxy_event_ops[d->proxy_event_count++] = x->op;
    return TG_OK;
  }
  /* Untimed: in order with the shadow run's kernels. */
  tg_status st = tg__ocl_reset_memory(d, ov->memory);
  for (uint32_t i = 0; st == TG_OK && i < x->in_count; ++i)
    st = tg__ocl_reset_memory(d, ((const ocl_view *)x->in[i].view)->memory);
  if (st != TG_OK) return st;
  e = a->EnqueueNDRangeKernel(d->queue, k, 1, NULL, &global, &local, 0, NULL, NULL);
  if (e != CL_SUCCESS) return tg__ocl_fail_cl(d, e);
  return tg__ocl_in_order(d);
}

tg_status tg__ocl_speed_end(void *impl, double *op_ms) {
  ocl_device *d = impl;
  const ocl_api *a = &d->api;
  if (!d->proxy_timed) return TG_OK; /* the shadow run's end waits */
  cl_int e = a->Finish(d->profiling_queue);
  tg_status st = e == CL_SUCCESS ? TG_OK : tg__ocl_fail_cl(d, e);
  for (size_t i = 0; st == TG_OK && i < d->proxy_event_count; ++i) {
    cl_ulong t0 = 0, t1 = 0;
    e = a->GetEventProfilingInfo(d->proxy_events[i], CL_PROFILING_COMMAND_START, sizeof t0, &t0, NULL);
    if (e == CL_SUCCESS)
      e = a->GetEventProfilingInfo(d->proxy_events[i], CL_PROFILING_COMMAND_END, sizeof t1, &t1, NULL);
    if (e != CL_SUCCESS) st = tg__ocl_fail_cl(d, e);
    else if (op_ms && t1 > t0) op_ms[d->proxy_event_ops[i]] += (double)(t1 - t0) / 1e6;
  }
  proxy_events_release(d);
  return st;
}

void tg__ocl_speed_abort(void *impl) {
  ocl_device *d = impl;
  if (d->profiling_queue) d->api.Finish(d->profiling_queue);
  proxy_events_release(d);
}
