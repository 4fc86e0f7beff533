/* The Vulkan backend's speed proxies (tangram/speed.h) and their timing.
 * A timed run is a check run without verify accesses: the proxies are recorded into its
 * command buffer, each after a full compute barrier, each followed by a bottom-of-pipe
 * timestamp; a dispatch's time is the difference to the timestamp before it, scaled by
 * timestampPeriod. An untimed run records the proxies into the running check, as its writers. */
#include <string.h>

#include "backends/vulkan/vulkan_state.h"

/* ---- embedded shaders ---- */

static const uint32_t k_spv_proxy_00_rgba32f[] =
#include "proxy_00_rgba32f.spv.h"
    ;
static const uint32_t k_spv_proxy_00_rgba16f[] =
#include "proxy_00_rgba16f.spv.h"
    ;
static const uint32_t k_spv_proxy_01_rgba32f[] =
#include "proxy_01_rgba32f.spv.h"
    ;
static const uint32_t k_spv_proxy_01_rgba16f[] =
#include "proxy_01_rgba16f.spv.h"
    ;
static const uint32_t k_spv_proxy_02_rgba32f[] =
#include "proxy_02_rgba32f.spv.h"
    ;
static const uint32_t k_spv_proxy_02_rgba16f[] =
#include "proxy_02_rgba16f.spv.h"
    ;
static const uint32_t k_spv_proxy_10_rgba32f[] =
#include "proxy_10_rgba32f.spv.h"
    ;
static const uint32_t k_spv_proxy_10_rgba16f[] =
#include "proxy_10_rgba16f.spv.h"
    ;
static const uint32_t k_spv_proxy_11_rgba32f[] =
#include "proxy_11_rgba32f.spv.h"
    ;
static const uint32_t k_spv_proxy_11_rgba16f[] =
#include "proxy_11_rgba16f.spv.h"
    ;
static const uint32_t k_spv_proxy_12_rgba32f[] =
#include "proxy_12_rgba32f.spv.h"
    ;
static const uint32_t k_spv_proxy_12_rgba16f[] =
#include "proxy_12_rgba16f.spv.h"
    ;
static const uint32_t k_spv_proxy_20_rgba32f[] =
#include "proxy_20_rgba32f.spv.h"
    ;
static const uint32_t k_spv_proxy_20_rgba16f[] =
#include "proxy_20_rgba16f.spv.h"
    ;
static const uint32_t k_spv_proxy_21_rgba32f[] =
#include "proxy_21_rgba32f.spv.h"
    ;
static const uint32_t k_spv_proxy_21_rgba16f[] =
#include "proxy_21_rgba16f.spv.h"
    ;
static const uint32_t k_spv_proxy_22_rgba32f[] =
#include "proxy_22_rgba32f.spv.h"
    ;
static const uint32_t k_spv_proxy_22_rgba16f[] =
#include "proxy_22_rgba16f.spv.h"
    ;
static const uint32_t k_spv_proxy_03_rgba32f[] =
#include "proxy_03_rgba32f.spv.h"
    ;
static const uint32_t k_spv_proxy_03_rgba16f[] =
#include "proxy_03_rgba16f.spv.h"
    ;
static const uint32_t k_spv_proxy_30_rgba32f[] =
#include "proxy_30_rgba32f.spv.h"
    ;
static const uint32_t k_spv_proxy_30_rgba16f[] =
#include "proxy_30_rgba16f.spv.h"
    ;
static const uint32_t k_spv_proxy_33_rgba32f[] =
#include "proxy_33_rgba32f.spv.h"
    ;
static const uint32_t k_spv_proxy_33_rgba16f[] =
#include "proxy_33_rgba16f.spv.h"
    ;
/* [output kind][input kind][fp16] (kinds: PROXY_KINDS, vulkan_state.h); NULL where no
 * variant is built. */
#define SHADER(a) {a, sizeof a}
static const struct {
  const uint32_t *words;
  size_t bytes;
} k_proxy_shaders[PROXY_KINDS][PROXY_KINDS][2] = {
    {{SHADER(k_spv_proxy_00_rgba32f), SHADER(k_spv_proxy_00_rgba16f)}, {SHADER(k_spv_proxy_01_rgba32f), SHADER(k_spv_proxy_01_rgba16f)}, {SHADER(k_spv_proxy_02_rgba32f), SHADER(k_spv_proxy_02_rgba16f)}, {SHADER(k_spv_proxy_03_rgba32f), SHADER(k_spv_proxy_03_rgba16f)}},
    {{SHADER(k_spv_proxy_10_rgba32f), SHADER(k_spv_proxy_10_rgba16f)}, {SHADER(k_spv_proxy_11_rgba32f), SHADER(k_spv_proxy_11_rgba16f)}, {SHADER(k_spv_proxy_12_rgba32f), SHADER(k_spv_proxy_12_rgba16f)}, {{NULL, 0}, {NULL, 0}}},
    {{SHADER(k_spv_proxy_20_rgba32f), SHADER(k_spv_proxy_20_rgba16f)}, {SHADER(k_spv_proxy_21_rgba32f), SHADER(k_spv_proxy_21_rgba16f)}, {SHADER(k_spv_proxy_22_rgba32f), SHADER(k_spv_proxy_22_rgba16f)}, {{NULL, 0}, {NULL, 0}}},
    {{SHADER(k_spv_proxy_30_rgba32f), SHADER(k_spv_proxy_30_rgba16f)}, {{NULL, 0}, {NULL, 0}}, {{NULL, 0}, {NULL, 0}}, {SHADER(k_spv_proxy_33_rgba32f), SHADER(k_spv_proxy_33_rgba16f)}},
};
#undef SHADER

/* Push constants: tg_proxy_params in shaders/proxy.comp. */
typedef struct proxy_params {
  int32_t og[4], ag[4], bg[4];
  int32_t nin, cls, k, pad;
  uint32_t lo, hi, id, mix;
  uint32_t dv[4];
} proxy_params;

/* tg_div's magic for divisor d >= 1 (shaders/proxy.comp): l = ceil(log2 d), m = ceil(2^(31+l) / d);
 * exact for numerators below 2^31. */
static void proxy_magic(uint32_t d, uint32_t *m, uint32_t *l) {
  uint32_t k = 0;
  if (d == 0) d = 1;
  while (k < 31 && (1ull << k) < d) ++k;
  *l = k;
  *m = (uint32_t)(((1ull << (31 + k)) + d - 1) / d);
}

static int proxy_kind(const vk_view *w) { return w->texel ? 3 : !w->image ? 0 : w->three_d ? 2 : 1; }

/* Descriptor class of a proxy kind: 0 storage buffer, 1 storage image, 2 storage texel buffer. */
static int proxy_class(int kind) { return kind == 0 ? 0 : kind == 3 ? 2 : 1; }

static VkDescriptorSetLayout proxy_set_layout(const vk_device *v, int cls) {
  return cls == 0 ? v->tensor_buffer_layout : cls == 1 ? v->tensor_image_layout : v->tensor_texel_layout;
}

/* An image_buffer tensor as a storage texel buffer: RGBA 32-bit (fp16: 16-bit) unsigned
 * integer texels, the bytes per texel of the float format, so the shadow run's signature
 * words pass bit for bit. Its view is made on first use; its set once per run. */
static tg_status touch_texel(vk_device *v, vk_view *w, uint64_t texels) {
  if (w->texel_view == VK_NULL_HANDLE) {
    VkFormat format = v->run.precision == TG_PRECISION_FP16 ? VK_FORMAT_R16G16B16A16_UINT : VK_FORMAT_R32G32B32A32_UINT;
    VkFormatProperties fp;
    memset(&fp, 0, sizeof fp);
    v->fi.GetPhysicalDeviceFormatProperties(v->physical, format, &fp);
    if (!(fp.bufferFeatures & VK_FORMAT_FEATURE_STORAGE_TEXEL_BUFFER_BIT) || v->vk.vkCreateBufferView == NULL ||
        texels > v->props.limits.maxTexelBufferElements)
      return TG_ERROR_UNSUPPORTED;
    if (v->tensor_texel_layout == VK_NULL_HANDLE) {
      tg_status st = tg__vk_make_set_layout(v, VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER, &v->tensor_texel_layout);
      if (st != TG_OK) return st;
    }
    VkBufferViewCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
    bi.buffer = w->buffer;
    bi.format = format;
    bi.range = texels * tg__texel_bytes(v->run.precision);
    VkResult r = v->vk.vkCreateBufferView(v->device, &bi, v->vk_alloc, &w->texel_view);
    if (r != VK_SUCCESS) {
      w->texel_view = VK_NULL_HANDLE;
      return tg__vk_fail(v, r);
    }
    v->live_objects++;
  }
  if (w->texel_run == v->run.serial) return TG_OK;
  VkDescriptorSet set;
  tg_status st = tg__vk_allocate_set(v, v->tensor_texel_layout, &set);
  if (st != TG_OK) return st;
  VkWriteDescriptorSet wr = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
  wr.dstSet = set;
  wr.descriptorCount = 1;
  wr.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER;
  wr.pTexelBufferView = &w->texel_view;
  v->vk.vkUpdateDescriptorSets(v->device, 1, &wr, 0, NULL);
  w->texel_set = set;
  w->texel_run = v->run.serial;
  return TG_OK;
}

static tg_status ensure_proxy_pipeline(vk_device *v, int out, int in, int fp16) {
  if (v->proxy_pipelines[out][in][fp16] != VK_NULL_HANDLE) return TG_OK;
  if (k_proxy_shaders[out][in][fp16].words == NULL) return TG_ERROR_UNSUPPORTED;
  VkPipelineLayout *layout = &v->proxy_layouts[proxy_class(out)][proxy_class(in)];
  if (*layout == VK_NULL_HANDLE) {
    VkDescriptorSetLayout in_layout = proxy_set_layout(v, proxy_class(in));
    VkDescriptorSetLayout sets[3] = {proxy_set_layout(v, proxy_class(out)), in_layout, in_layout};
    tg_status st = tg__vk_make_pipeline_layout(v, sets, 3, sizeof(proxy_params), layout);
    if (st != TG_OK) return st;
  }
  return tg__vk_create_pipeline(v, k_proxy_shaders[out][in][fp16].words, k_proxy_shaders[out][in][fp16].bytes, *layout,
                         &v->proxy_pipelines[out][in][fp16]);
}

/* The valid bits of the timestamps the device's queue family writes: 0 when it writes none
 * (or the family is not among the first 16). */
static uint32_t timestamp_bits(const vk_device *v) {
  uint32_t n = 0;
  VkQueueFamilyProperties q[16];
  v->fi.GetPhysicalDeviceQueueFamilyProperties(v->physical, &n, NULL);
  if (n > 16) n = 16;
  v->fi.GetPhysicalDeviceQueueFamilyProperties(v->physical, &n, q);
  return v->queue_family < n ? q[v->queue_family].timestampValidBits : 0;
}

tg_status tg__vk_speed_begin(void *impl, size_t op_count, size_t dispatch_count, tg_precision precision,
                             int timed) {
  vk_device *v = impl;
  v->proxy_timed = timed;
  v->proxy_count = 0;
  if (!timed) return v->run.active ? TG_OK : TG_ERROR_INVALID_ARGUMENT;
  /* Timestamps need a queue that writes them. */
  if (timestamp_bits(v) == 0 || v->props.limits.timestampPeriod <= 0) return TG_ERROR_UNSUPPORTED;
  if (dispatch_count >= UINT32_MAX - 1) return TG_ERROR_LIMIT;
  if (!tg__grow(&v->alloc, (void **)&v->proxy_op_of, &v->proxy_op_capacity, dispatch_count + 1, sizeof *v->proxy_op_of))
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  tg_status st = tg__vk_check_begin(impl, 0, op_count, 0, precision);
  if (st != TG_OK) return st;
  uint32_t need = (uint32_t)dispatch_count + 1;
  if (v->query_capacity < need) {
    if (v->query_pool != VK_NULL_HANDLE) v->vk.vkDestroyQueryPool(v->device, v->query_pool, v->vk_alloc);
    v->query_pool = VK_NULL_HANDLE;
    v->query_capacity = 0;
    VkQueryPoolCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = need < 256 ? 256 : need;
    VkResult r = v->vk.vkCreateQueryPool(v->device, &qi, v->vk_alloc, &v->query_pool);
    if (r != VK_SUCCESS) {
      v->query_pool = VK_NULL_HANDLE;
      tg__vk_check_abort(v);
      return tg__vk_fail(v, r);
    }
    v->query_capacity = qi.queryCount;
  }
  v->vk.vkCmdResetQueryPool(v->command_buffer, v->query_pool, 0, need);
  v->vk.vkCmdWriteTimestamp(v->command_buffer, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, v->query_pool, 0);
  return TG_OK;
}

tg_status tg__vk_speed_dispatch(void *impl, const tg__proxy_dispatch *x) {
  vk_device *v = impl;
  check_run *run = &v->run;
  if (!run->active || x->in_count > 2) return TG_ERROR_INVALID_ARGUMENT;
  if (x->hi <= x->lo) return TG_OK;
  vk_view *out = x->out.view;
  if (out->buffer == VK_NULL_HANDLE && out->vk_image == VK_NULL_HANDLE) return TG_OK; /* empty */
  vk_view *in[2] = {out, out};
  for (uint32_t i = 0; i < x->in_count; ++i) in[i] = x->in[i].view;
  if (x->in_count == 1) in[1] = in[0];
  for (int i = 0; i < 2; ++i)
    if (in[i]->buffer == VK_NULL_HANDLE && in[i]->vk_image == VK_NULL_HANDLE) return TG_ERROR_INVALID_ARGUMENT;
  int ok = proxy_kind(out), ik = proxy_kind(in[0]), fp16 = run->precision == TG_PRECISION_FP16;
  if (proxy_kind(in[1]) != ik) return TG_ERROR_INVALID_ARGUMENT;
  tg_status st = TG_OK;
  /* Texel buffers first: their set layout is made with the first view. */
  const tg__proxy_tensor *tt[3] = {&x->out, &x->in[0], x->in_count > 1 ? &x->in[1] : &x->in[0]};
  for (int i = 0; i < (x->in_count ? 3 : 1); ++i) {
    vk_view *w = i == 0 ? out : in[i - 1];
    if (w->texel && (st = touch_texel(v, w, (uint64_t)tt[i]->w * tt[i]->h * tt[i]->s)) != TG_OK) return st;
  }
  if ((st = ensure_proxy_pipeline(v, ok, ik, fp16)) != TG_OK) return st;
  size_t transitions = 0;
  if ((st = tg__vk_touch_view(v, out)) != TG_OK) return st;
  /* An output image starts over at its op's first proxy; inputs never written read garbage. */
  if (out->image && (out->proxy_run != run->serial || out->proxy_op != x->op) &&
      (st = tg__vk_add_transition(v, out, &transitions, VK_ACCESS_SHADER_WRITE_BIT,
                           tg__vk_written_over(out, in[0]) || tg__vk_written_over(out, in[1]))) != TG_OK)
    return st;
  out->proxy_run = run->serial;
  out->proxy_op = x->op;
  for (uint32_t i = 0; i < x->in_count; ++i) {
    vk_view *w = in[i];
    if ((st = tg__vk_touch_view(v, w)) != TG_OK) return st;
    if (w->image && !w->ready && (st = tg__vk_add_transition(v, w, &transitions, VK_ACCESS_SHADER_WRITE_BIT, 0)) != TG_OK)
      return st;
  }
  VkCommandBuffer cb = v->command_buffer;
  VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  v->vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                             &mb, 0, NULL, (uint32_t)transitions, run->barrier_scratch);
  VkPipelineLayout layout = v->proxy_layouts[proxy_class(ok)][proxy_class(ik)];
  VkDescriptorSet sets[3] = {out->texel ? out->texel_set : out->set, in[0]->texel ? in[0]->texel_set : in[0]->set,
                             in[1]->texel ? in[1]->texel_set : in[1]->set};
  v->vk.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, v->proxy_pipelines[ok][ik][fp16]);
  v->vk.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 3, sets, 0, NULL);
  proxy_params p;
  memset(&p, 0, sizeof p);
  const tg__proxy_tensor *t[3] = {&x->out, &x->in[0], x->in_count > 1 ? &x->in[1] : &x->in[0]};
  int32_t *g[3] = {p.og, p.ag, p.bg};
  for (int i = 0; i < 3; ++i) {
    if (i > 0 && x->in_count == 0) {
      g[i][0] = g[i][1] = g[i][2] = 1;
      continue;
    }
    g[i][0] = (int32_t)t[i]->w;
    g[i][1] = (int32_t)t[i]->h;
    g[i][2] = (int32_t)t[i]->s;
    tg_storage s = t[i]->resource->storage;
    g[i][3] = tg_storage_dims(s) == 2;
  }
  p.nin = (int32_t)x->in_count;
  p.cls = x->op_class;
  p.k = (int32_t)x->kernel;
  p.lo = x->lo;
  p.hi = x->hi;
  p.id = x->out_id;
  proxy_magic(x->out.w, &p.dv[0], &p.dv[1]);
  proxy_magic(x->out.h, &p.dv[2], &p.dv[3]);
  v->vk.vkCmdPushConstants(cb, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof p, &p);
  uint64_t groups = ((uint64_t)(x->hi - x->lo) + GROUP_SIZE - 1) / GROUP_SIZE;
  /* The shader strides over texels beyond its groups. A CPU device (lavapipe) runs each
   * workgroup as a call of its JIT code: 64 groups keep its threads busy at a fifth less CPU
   * time than one group per 64 texels; the reads and writes are the same. */
  uint64_t max_groups = v->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? 64 : 65535;
  if (groups > max_groups) groups = max_groups;
  v->vk.vkCmdDispatch(cb, (uint32_t)groups, 1, 1);
  run->ops_recorded++; /* the shadow run's next op orders itself after this one */
  if (v->proxy_timed) {
    if (v->proxy_count + 1 >= v->query_capacity) return TG_ERROR_INVALID_ARGUMENT;
    v->vk.vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, v->query_pool,
                              (uint32_t)v->proxy_count + 1);
    v->proxy_op_of[v->proxy_count++] = x->op;
  }
  return TG_OK;
}

tg_status tg__vk_speed_end(void *impl, double *op_ms) {
  vk_device *v = impl;
  if (!v->proxy_timed) return TG_OK; /* the check's end submits */
  uint64_t unused = 0, bytes = 0;
  tg_status st = tg__vk_check_end(impl, &unused, &bytes);
  if (st != TG_OK) return st;
  size_t n = v->proxy_count + 1;
  uint64_t *t = tg__calloc(&v->alloc, n, sizeof *t);
  if (t == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  VkResult r = v->vk.vkGetQueryPoolResults(v->device, v->query_pool, 0, (uint32_t)n, n * sizeof *t, t, sizeof *t,
                                           VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
  if (r != VK_SUCCESS) {
    tg__free(&v->alloc, t);
    return tg__vk_fail(v, r);
  }
  uint32_t bits = timestamp_bits(v); /* not 0: speed_begin refused the run */
  uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
  for (size_t i = 0; op_ms && i + 1 < n; ++i)
    op_ms[v->proxy_op_of[i]] += (double)((t[i + 1] - t[i]) & mask) * v->props.limits.timestampPeriod / 1e6;
  tg__free(&v->alloc, t);
  v->proxy_count = 0;
  return TG_OK;
}

void tg__vk_speed_abort(void *impl) {
  vk_device *v = impl;
  if (v->proxy_timed) tg__vk_check_abort(v);
  v->proxy_count = 0;
}
