/* The Vulkan backend's shadow run (the on-device check).
 *
 * GLSL compute shaders (shaders/, compiled by glslc at build time and embedded) verify and write
 * the signatures, all ops recorded into one command buffer and submitted once. Ordering comes
 * only from the scheduler's waits: after each op a vkCmdSetEvent, and before an op that waits, a
 * vkCmdWaitEvents for the ops it waits for. An event's first synchronisation scope is everything
 * recorded before its vkCmdSetEvent, so waiting for op j orders after j and the ops recorded
 * before it, and the latest op waited for stands for all of them; ops recorded between it and
 * the waiting op stay unordered with the waiting op. That is what lets independent ops overlap,
 * and what synchronisation validation checks when a needed wait is missing. An op without waits
 * waits for nothing (only its images' layout transitions, which depend on nothing, precede it).
 * Vulkan cannot say "only this op": a wait's second scope is everything recorded after it, so a
 * later op is ordered after whatever an earlier op waited for. The run is therefore at least as
 * ordered as the waits say, and no more than a queue can express. In-order runs put a full
 * compute barrier between consecutive ops. Mismatches are counted per access in host-visible
 * counters, each access with its own counter slot so that concurrent ops never write the same
 * bytes.
 *
 * The check objects (command pool and buffer, fence, descriptor set layouts, pipeline layouts,
 * pipelines) are made on the first check and kept until the device closes. */
#include <string.h>

#include "backends/vulkan/vulkan_state.h"

/* ---- embedded shaders ---- */

static const uint32_t k_spv_buffer_verify[] =
#include "buffer_verify.spv.h"
    ;
static const uint32_t k_spv_buffer_write[] =
#include "buffer_write.spv.h"
    ;
static const uint32_t k_spv_image_verify_2d_rgba32f[] =
#include "image_verify_2d_rgba32f.spv.h"
    ;
static const uint32_t k_spv_image_write_2d_rgba32f[] =
#include "image_write_2d_rgba32f.spv.h"
    ;
static const uint32_t k_spv_image_verify_2d_rgba16f[] =
#include "image_verify_2d_rgba16f.spv.h"
    ;
static const uint32_t k_spv_image_write_2d_rgba16f[] =
#include "image_write_2d_rgba16f.spv.h"
    ;
static const uint32_t k_spv_image_verify_3d_rgba32f[] =
#include "image_verify_3d_rgba32f.spv.h"
    ;
static const uint32_t k_spv_image_write_3d_rgba32f[] =
#include "image_write_3d_rgba32f.spv.h"
    ;
static const uint32_t k_spv_image_verify_3d_rgba16f[] =
#include "image_verify_3d_rgba16f.spv.h"
    ;
static const uint32_t k_spv_image_write_3d_rgba16f[] =
#include "image_write_3d_rgba16f.spv.h"
    ;

typedef struct shader_code {
  const uint32_t *words;
  size_t bytes;
} shader_code;

#define SHADER(a) {a, sizeof a}
static const shader_code k_shaders[PIPE_COUNT] = {
    SHADER(k_spv_buffer_verify),           SHADER(k_spv_buffer_write),
    SHADER(k_spv_image_verify_2d_rgba32f), SHADER(k_spv_image_write_2d_rgba32f),
    SHADER(k_spv_image_verify_2d_rgba16f), SHADER(k_spv_image_write_2d_rgba16f),
    SHADER(k_spv_image_verify_3d_rgba32f), SHADER(k_spv_image_write_3d_rgba32f),
    SHADER(k_spv_image_verify_3d_rgba16f), SHADER(k_spv_image_write_3d_rgba16f),
};
#undef SHADER

static int pipe_index(int image, int three_d, int fp16, int write) {
  if (!image) return write ? PIPE_BUFFER_WRITE : PIPE_BUFFER_VERIFY;
  return PIPE_IMAGE_FIRST + ((three_d * 2 + fp16) * 2 + write);
}

/* Push constants: the layout of tg_params in shaders/signature.glsl. */
typedef struct shader_params {
  uint32_t id, count, tail, width, height, depth;
} shader_params;

/* Work groups per dispatch: invocations stride over the tensor, each visiting at least
 * ELEMENTS_PER_INVOCATION elements, in at most MAX_GROUPS groups (below the guaranteed
 * maxComputeWorkGroupCount[0] of 65535). A few hundred groups keep a GPU busy; CPU drivers pay
 * for every group (lavapipe allocates per group), so fewer, longer groups check faster there. */
#define ELEMENTS_PER_INVOCATION 256u
#define MAX_GROUPS 512u
#define MAX_ELEMENTS (1u << 31) /* words or texels per tensor the shaders' 32-bit indices reach */
#define COUNTER_SLOTS 1024u   /* mismatch counters per counter buffer */
#define POOL_SETS 256u        /* descriptor sets per descriptor pool */

/* ---- check objects (made on the first check, kept until close) ---- */

tg_status tg__vk_make_set_layout(vk_device *v, VkDescriptorType type, VkDescriptorSetLayout *out) {
  VkDescriptorSetLayoutBinding b = {0};
  b.binding = 0;
  b.descriptorType = type;
  b.descriptorCount = 1;
  b.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  VkDescriptorSetLayoutCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  ci.bindingCount = 1;
  ci.pBindings = &b;
  VkResult r = v->vk.vkCreateDescriptorSetLayout(v->device, &ci, v->vk_alloc, out);
  return r == VK_SUCCESS ? TG_OK : tg__vk_fail(v, r);
}

tg_status tg__vk_make_pipeline_layout(vk_device *v, const VkDescriptorSetLayout *sets, uint32_t set_count,
                                      uint32_t push_bytes, VkPipelineLayout *out) {
  VkPushConstantRange pc = {VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
  VkPipelineLayoutCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                   .setLayoutCount = set_count, .pSetLayouts = sets,
                                   .pushConstantRangeCount = 1, .pPushConstantRanges = &pc};
  VkResult r = v->vk.vkCreatePipelineLayout(v->device, &ci, v->vk_alloc, out);
  if (r == VK_SUCCESS) return TG_OK;
  *out = VK_NULL_HANDLE;
  return tg__vk_fail(v, r);
}

static tg_status make_pipeline_layout(vk_device *v, VkDescriptorSetLayout tensor,
                                      VkPipelineLayout *out) {
  /* Set 0: the tensor; set 1: the counter (verify shaders only). Same push constants for all. */
  VkDescriptorSetLayout sets[2] = {tensor, v->counter_layout};
  return tg__vk_make_pipeline_layout(v, sets, 2, sizeof(shader_params), out);
}

void tg__vk_destroy_check_objects(vk_device *v) {
  for (int o = 0; o < PROXY_KINDS; ++o)
    for (int i = 0; i < PROXY_KINDS; ++i)
      for (int h = 0; h < 2; ++h)
        if (v->proxy_pipelines[o][i][h] != VK_NULL_HANDLE) {
          v->vk.vkDestroyPipeline(v->device, v->proxy_pipelines[o][i][h], v->vk_alloc);
          v->proxy_pipelines[o][i][h] = VK_NULL_HANDLE;
        }
  for (int o = 0; o < 3; ++o)
    for (int i = 0; i < 3; ++i)
      if (v->proxy_layouts[o][i] != VK_NULL_HANDLE) {
        v->vk.vkDestroyPipelineLayout(v->device, v->proxy_layouts[o][i], v->vk_alloc);
        v->proxy_layouts[o][i] = VK_NULL_HANDLE;
      }
  if (v->query_pool != VK_NULL_HANDLE) {
    v->vk.vkDestroyQueryPool(v->device, v->query_pool, v->vk_alloc);
    v->query_pool = VK_NULL_HANDLE;
    v->query_capacity = 0;
  }
  for (int i = 0; i < PIPE_COUNT; ++i)
    if (v->pipelines[i] != VK_NULL_HANDLE) {
      v->vk.vkDestroyPipeline(v->device, v->pipelines[i], v->vk_alloc);
      v->pipelines[i] = VK_NULL_HANDLE;
    }
  if (v->buffer_pipeline_layout) v->vk.vkDestroyPipelineLayout(v->device, v->buffer_pipeline_layout, v->vk_alloc);
  if (v->image_pipeline_layout) v->vk.vkDestroyPipelineLayout(v->device, v->image_pipeline_layout, v->vk_alloc);
  if (v->tensor_buffer_layout) v->vk.vkDestroyDescriptorSetLayout(v->device, v->tensor_buffer_layout, v->vk_alloc);
  if (v->tensor_image_layout) v->vk.vkDestroyDescriptorSetLayout(v->device, v->tensor_image_layout, v->vk_alloc);
  if (v->counter_layout) v->vk.vkDestroyDescriptorSetLayout(v->device, v->counter_layout, v->vk_alloc);
  if (v->tensor_texel_layout) v->vk.vkDestroyDescriptorSetLayout(v->device, v->tensor_texel_layout, v->vk_alloc);
  v->tensor_texel_layout = VK_NULL_HANDLE;
  if (v->fence) v->vk.vkDestroyFence(v->device, v->fence, v->vk_alloc);
  if (v->command_pool) v->vk.vkDestroyCommandPool(v->device, v->command_pool, v->vk_alloc);
  v->buffer_pipeline_layout = v->image_pipeline_layout = VK_NULL_HANDLE;
  v->tensor_buffer_layout = v->tensor_image_layout = v->counter_layout = VK_NULL_HANDLE;
  v->fence = VK_NULL_HANDLE;
  v->command_pool = VK_NULL_HANDLE;
  v->command_buffer = VK_NULL_HANDLE;
  v->check_ready = 0;
}

static tg_status ensure_check_objects(vk_device *v) {
  if (v->check_ready) return TG_OK;
  if (tg__vk_pick_memory_type(&v->memory_props, ~0u, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, 0) < 0)
    return TG_ERROR_UNSUPPORTED; /* counters are read back by the host */
  VkDeviceSize align = v->props.limits.minStorageBufferOffsetAlignment;
  v->counter_stride = (uint32_t)(align > sizeof(uint32_t) ? align : sizeof(uint32_t));
  VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pi.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
  pi.queueFamilyIndex = v->queue_family;
  VkResult r = v->vk.vkCreateCommandPool(v->device, &pi, v->vk_alloc, &v->command_pool);
  if (r != VK_SUCCESS) goto vk_fail;
  VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  ai.commandPool = v->command_pool;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  r = v->vk.vkAllocateCommandBuffers(v->device, &ai, &v->command_buffer);
  if (r != VK_SUCCESS) goto vk_fail;
  VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  r = v->vk.vkCreateFence(v->device, &fi, v->vk_alloc, &v->fence);
  if (r != VK_SUCCESS) goto vk_fail;
  tg_status st;
  if ((st = tg__vk_make_set_layout(v, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, &v->tensor_buffer_layout)) != TG_OK ||
      (st = tg__vk_make_set_layout(v, VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, &v->tensor_image_layout)) != TG_OK ||
      (st = tg__vk_make_set_layout(v, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC, &v->counter_layout)) != TG_OK ||
      (st = make_pipeline_layout(v, v->tensor_buffer_layout, &v->buffer_pipeline_layout)) != TG_OK ||
      (st = make_pipeline_layout(v, v->tensor_image_layout, &v->image_pipeline_layout)) != TG_OK) {
    tg__vk_destroy_check_objects(v);
    return st;
  }
  v->check_ready = 1;
  return TG_OK;
vk_fail:
  tg__vk_destroy_check_objects(v);
  return tg__vk_fail(v, r);
}

/* A compute pipeline from SPIR-V `words` (`bytes` long) with `layout`; *out stays
 * VK_NULL_HANDLE on failure. */
tg_status tg__vk_create_pipeline(vk_device *v, const uint32_t *words, size_t bytes, VkPipelineLayout layout,
                                 VkPipeline *out) {
  VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mi.codeSize = bytes;
  mi.pCode = words;
  VkShaderModule module;
  VkResult r = v->vk.vkCreateShaderModule(v->device, &mi, v->vk_alloc, &module);
  if (r != VK_SUCCESS) return tg__vk_fail(v, r);
  VkComputePipelineCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = "main";
  ci.layout = layout;
  ci.basePipelineIndex = -1;
  r = v->vk.vkCreateComputePipelines(v->device, VK_NULL_HANDLE, 1, &ci, v->vk_alloc, out);
  v->vk.vkDestroyShaderModule(v->device, module, v->vk_alloc);
  if (r != VK_SUCCESS) {
    *out = VK_NULL_HANDLE;
    return tg__vk_fail(v, r);
  }
  return TG_OK;
}

/* Pipelines are made on first use (each costs a shader compile in the driver) and cached. */
static tg_status ensure_pipeline(vk_device *v, int index) {
  if (v->pipelines[index] != VK_NULL_HANDLE) return TG_OK;
  return tg__vk_create_pipeline(v, k_shaders[index].words, k_shaders[index].bytes,
                         index < PIPE_IMAGE_FIRST ? v->buffer_pipeline_layout : v->image_pipeline_layout,
                         &v->pipelines[index]);
}

/* ---- check runs ---- */

/* Release everything a run made. The command buffer must not be pending. */
static void run_release(vk_device *v) {
  check_run *run = &v->run;
  const tg_allocator *a = &v->alloc;
  if (run->events) {
    for (size_t i = 0; i < run->op_count; ++i)
      if (run->events[i] != VK_NULL_HANDLE) {
        v->vk.vkDestroyEvent(v->device, run->events[i], v->vk_alloc);
        v->live_objects--;
      }
  }
  for (size_t i = 0; i < run->pool_count; ++i) {
    v->vk.vkDestroyDescriptorPool(v->device, run->pools[i], v->vk_alloc);
    v->live_objects--;
  }
  for (size_t i = 0; i < run->chunk_count; ++i) {
    counter_chunk *c = &run->chunks[i];
    if (c->buffer != VK_NULL_HANDLE) {
      v->vk.vkDestroyBuffer(v->device, c->buffer, v->vk_alloc);
      v->live_objects--;
    }
    tg__vk_block_free(v, &c->memory);
  }
  if (v->command_pool != VK_NULL_HANDLE) v->vk.vkResetCommandPool(v->device, v->command_pool, 0);
  tg__free(a, run->events);
  tg__free(a, run->pools);
  tg__free(a, run->chunks);
  tg__free(a, run->slot_record);
  tg__free(a, run->barrier_scratch);
  memset(run, 0, sizeof *run);
}

void tg__vk_check_abort(void *impl) {
  vk_device *v = impl;
  if (!v->run.active) return;
  if (v->run.pending) {
    /* Submitted work may still use what the run made: let it finish first. */
    if (v->vk.vkWaitForFences(v->device, 1, &v->fence, VK_TRUE, UINT64_MAX) != VK_SUCCESS)
      v->vk.vkQueueWaitIdle(v->queue); /* only our queue: a borrowed device's others are not ours */
    v->vk.vkResetFences(v->device, 1, &v->fence);
  }
  run_release(v);
}

tg_status tg__vk_check_begin(void *impl, size_t record_count, size_t op_count,
                             int out_of_order, tg_precision precision) {
  vk_device *v = impl;
  tg__vk_check_abort(v); /* a run left unfinished by its caller */
  tg_status st = ensure_check_objects(v);
  if (st != TG_OK) return st;
  check_run *run = &v->run;
  run->serial = ++v->run_serial;
  run->out_of_order = out_of_order;
  run->precision = precision;
  run->record_count = record_count;
  run->op_count = op_count;
  if (out_of_order && op_count) {
    run->events = tg__calloc(&v->alloc, op_count, sizeof *run->events);
    if (run->events == NULL) {
      run_release(v);
      return TG_ERROR_OUT_OF_HOST_MEMORY;
    }
  }
  VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  VkResult r = v->vk.vkBeginCommandBuffer(v->command_buffer, &bi);
  if (r != VK_SUCCESS) {
    run_release(v);
    return tg__vk_fail(v, r);
  }
  run->active = 1;
  return TG_OK;
}

/* A descriptor set from the run's pools, adding a pool when the last one is full. */
tg_status tg__vk_allocate_set(vk_device *v, VkDescriptorSetLayout layout, VkDescriptorSet *out) {
  check_run *run = &v->run;
  VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &layout;
  if (run->pool_count) {
    ai.descriptorPool = run->pools[run->pool_count - 1];
    VkResult r = v->vk.vkAllocateDescriptorSets(v->device, &ai, out);
    if (r == VK_SUCCESS) return TG_OK;
    if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL) return tg__vk_fail(v, r);
  }
  if (!tg__grow(&v->alloc, (void **)&run->pools, &run->pool_capacity, run->pool_count + 1,
            sizeof *run->pools))
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  VkDescriptorPoolSize sizes[4] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, POOL_SETS},
                                   {VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, POOL_SETS},
                                   {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC, POOL_SETS},
                                   {VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER, POOL_SETS}};
  VkDescriptorPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pi.maxSets = POOL_SETS;
  pi.poolSizeCount = 4;
  pi.pPoolSizes = sizes;
  VkDescriptorPool pool;
  VkResult r = v->vk.vkCreateDescriptorPool(v->device, &pi, v->vk_alloc, &pool);
  if (r != VK_SUCCESS) return tg__vk_fail(v, r);
  v->live_objects++;
  run->pools[run->pool_count++] = pool;
  ai.descriptorPool = pool;
  r = v->vk.vkAllocateDescriptorSets(v->device, &ai, out);
  return r == VK_SUCCESS ? TG_OK : tg__vk_fail(v, r);
}

/* A counter slot for one verify access: its chunk's set and the dynamic offset. */
static tg_status take_counter(vk_device *v, size_t record, VkDescriptorSet *set, uint32_t *offset) {
  check_run *run = &v->run;
  size_t slot = run->slot_count;
  if (!tg__grow(&v->alloc, (void **)&run->slot_record, &run->slot_capacity, slot + 1,
            sizeof *run->slot_record))
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  size_t chunk = slot / COUNTER_SLOTS;
  if (chunk == run->chunk_count) {
    if (!tg__grow(&v->alloc, (void **)&run->chunks, &run->chunk_capacity, chunk + 1, sizeof *run->chunks))
      return TG_ERROR_OUT_OF_HOST_MEMORY;
    counter_chunk *c = &run->chunks[run->chunk_count++];
    memset(c, 0, sizeof *c);
    VkDeviceSize bytes = (VkDeviceSize)COUNTER_SLOTS * v->counter_stride;
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = bytes;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    VkResult r = v->vk.vkCreateBuffer(v->device, &bi, v->vk_alloc, &c->buffer);
    if (r != VK_SUCCESS) {
      c->buffer = VK_NULL_HANDLE;
      return tg__vk_fail(v, r);
    }
    v->live_objects++;
    VkMemoryRequirements req;
    v->vk.vkGetBufferMemoryRequirements(v->device, c->buffer, &req);
    tg_status st = tg__vk_block_alloc(v, &req, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, 1, 0, &c->memory);
    if (st != TG_OK) return st;
    if ((r = v->vk.vkBindBufferMemory(v->device, c->buffer, c->memory.b.memory,
                                      c->memory.b.offset)) != VK_SUCCESS)
      return tg__vk_fail(v, r);
    c->mapped = c->memory.b.mapped;
    /* Zeroed by the host before the one submission that uses it. */
    memset(c->mapped, 0, (size_t)bytes);
    if (!c->memory.coherent) {
      VkMappedMemoryRange mr = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
      mr.memory = c->memory.b.memory;
      mr.size = VK_WHOLE_SIZE;
      if ((r = v->vk.vkFlushMappedMemoryRanges(v->device, 1, &mr)) != VK_SUCCESS) return tg__vk_fail(v, r);
    }
    st = tg__vk_allocate_set(v, v->counter_layout, &c->set);
    if (st != TG_OK) return st;
    VkDescriptorBufferInfo info = {c->buffer, 0, sizeof(uint32_t)};
    VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    w.dstSet = c->set;
    w.descriptorCount = 1;
    w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC;
    w.pBufferInfo = &info;
    v->vk.vkUpdateDescriptorSets(v->device, 1, &w, 0, NULL);
  }
  run->slot_record[slot] = (uint32_t)record;
  run->slot_count++;
  *set = run->chunks[chunk].set;
  *offset = (uint32_t)((slot % COUNTER_SLOTS) * v->counter_stride);
  return TG_OK;
}

/* First touch of a view in this run: its descriptor set, and its layout state reset. */
tg_status tg__vk_touch_view(vk_device *v, vk_view *w) {
  if (w->run == v->run.serial) return TG_OK;
  VkDescriptorSet set;
  tg_status st = tg__vk_allocate_set(v, w->image ? v->tensor_image_layout : v->tensor_buffer_layout, &set);
  if (st != TG_OK) return st;
  VkWriteDescriptorSet wr = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
  VkDescriptorBufferInfo bi = {w->buffer, 0, VK_WHOLE_SIZE};
  VkDescriptorImageInfo ii = {VK_NULL_HANDLE, w->image_view, VK_IMAGE_LAYOUT_GENERAL};
  wr.dstSet = set;
  wr.descriptorCount = 1;
  if (w->image) {
    wr.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_IMAGE;
    wr.pImageInfo = &ii;
  } else {
    wr.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    wr.pBufferInfo = &bi;
  }
  v->vk.vkUpdateDescriptorSets(v->device, 1, &wr, 0, NULL);
  w->set = set;
  w->run = v->run.serial;
  w->ready = 0;
  return TG_OK;
}

/* Elements the shaders visit for a view: words (buffers, plus `tail` bytes) or texels. */
static tg_status view_elements(const vk_device *v, const vk_view *w, shader_params *p,
                               uint64_t *bytes) {
  const tg_tensor_resource *res = &w->resource;
  if (!w->image) {
    uint64_t words = res->bytes / 4;
    if (words >= MAX_ELEMENTS || res->bytes > v->props.limits.maxStorageBufferRange)
      return TG_ERROR_LIMIT;
    p->count = (uint32_t)words;
    p->tail = (uint32_t)(res->bytes % 4);
    *bytes = res->bytes;
    return TG_OK;
  }
  uint64_t texels;
  if (tg_extent_volume(res->extent, &texels) != TG_OK || texels >= MAX_ELEMENTS) return TG_ERROR_LIMIT;
  p->count = (uint32_t)texels;
  p->width = (uint32_t)res->extent.w;
  p->height = (uint32_t)res->extent.h;
  p->depth = (uint32_t)res->extent.d;
  *bytes = texels * tg__texel_bytes(v->run.precision);
  return TG_OK;
}

static tg_status record_access(vk_device *v, const tg__check_access *acc, int write) {
  vk_view *w = acc->view;
  if (w->buffer == VK_NULL_HANDLE && w->vk_image == VK_NULL_HANDLE) return TG_OK; /* empty */
  shader_params p = {0};
  uint64_t bytes;
  tg_status st = view_elements(v, w, &p, &bytes);
  if (st != TG_OK) return st;
  p.id = acc->signature_id;
  int index = pipe_index(w->image, w->three_d, v->run.precision == TG_PRECISION_FP16, write);
  if ((st = ensure_pipeline(v, index)) != TG_OK) return st;
  VkCommandBuffer cb = v->command_buffer;
  VkPipelineLayout layout = w->image ? v->image_pipeline_layout : v->buffer_pipeline_layout;
  v->vk.vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, v->pipelines[index]);
  v->vk.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &w->set, 0, NULL);
  if (!write) {
    VkDescriptorSet counter;
    uint32_t offset;
    if ((st = take_counter(v, acc->record, &counter, &offset)) != TG_OK) return st;
    v->vk.vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 1, 1, &counter, 1,
                                  &offset);
  }
  v->vk.vkCmdPushConstants(cb, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof p, &p);
  uint64_t per_group = (uint64_t)GROUP_SIZE * ELEMENTS_PER_INVOCATION;
  uint64_t groups = ((uint64_t)p.count + per_group - 1) / per_group;
  if (groups == 0) groups = 1; /* the tail of a buffer under 4 bytes */
  if (groups > MAX_GROUPS) groups = MAX_GROUPS;
  v->vk.vkCmdDispatch(cb, (uint32_t)groups, 1, 1);
  v->run.checked_bytes += bytes;
  return TG_OK;
}

/* Layout transitions an op needs: every image it writes starts over from UNDEFINED (its memory
 * may have held another tensor: aliasing makes old contents meaningless), except the output of
 * an in-place pair, which keeps the texels its input left there (`keep`: from GENERAL), and an
 * image read before anything wrote it in this run is made usable (it then reads as garbage,
 * as it should). */
tg_status tg__vk_add_transition(vk_device *v, vk_view *w, size_t *count, VkAccessFlags src_access, int keep) {
  check_run *run = &v->run;
  for (size_t i = 0; i < *count; ++i)
    if (run->barrier_scratch[i].image == w->vk_image) return TG_OK;
  if (!tg__grow(&v->alloc, (void **)&run->barrier_scratch, &run->barrier_capacity, *count + 1,
            sizeof *run->barrier_scratch))
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  VkImageMemoryBarrier *b = &run->barrier_scratch[(*count)++];
  memset(b, 0, sizeof *b);
  b->sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER;
  b->srcAccessMask = src_access;
  b->dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  b->oldLayout = keep ? VK_IMAGE_LAYOUT_GENERAL : VK_IMAGE_LAYOUT_UNDEFINED;
  b->newLayout = VK_IMAGE_LAYOUT_GENERAL;
  b->srcQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  b->dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
  b->image = w->vk_image;
  b->subresourceRange.aspectMask = VK_IMAGE_ASPECT_COLOR_BIT;
  b->subresourceRange.levelCount = 1;
  b->subresourceRange.layerCount = w->layers;
  w->ready = 1;
  return TG_OK;
}

/* `w`, written, over `r`, read by the same op (an in-place pair): an identical image at the
 * same place in the same memory, which the alias flag makes share its texels with `r`. */
int tg__vk_written_over(const vk_view *w, const vk_view *r) {
  return r != w && r->image && r->vk_image != VK_NULL_HANDLE && r->ready && r->memory == w->memory &&
         r->offset == w->offset && r->three_d == w->three_d && r->layers == w->layers &&
         r->extent.width == w->extent.width && r->extent.height == w->extent.height &&
         r->extent.depth == w->extent.depth;
}

static int in_place_output(const vk_view *w, const tg__check_access *reads, size_t read_count) {
  for (size_t i = 0; i < read_count; ++i)
    if (tg__vk_written_over(w, reads[i].view)) return 1;
  return 0;
}

/* Whether an op writes memory it also reads (in-place pairs): a write view overlapping a read
 * view in the same memory. */
static int writes_over_reads(const tg__check_access *reads, size_t read_count, const tg__check_access *writes,
                             size_t write_count) {
  for (size_t i = 0; i < write_count; ++i)
    for (size_t j = 0; j < read_count; ++j) {
      const vk_view *w = writes[i].view, *r = reads[j].view;
      if (w->memory == r->memory && w->size && r->size && w->offset < r->offset + r->size &&
          r->offset < w->offset + w->size)
        return 1;
    }
  return 0;
}

tg_status tg__vk_check_op(void *impl, size_t op, const tg__check_access *reads,
                          size_t read_count, const tg__check_access *writes,
                          size_t write_count, const uint32_t *waits, size_t wait_count) {
  vk_device *v = impl;
  check_run *run = &v->run;
  if (!run->active) return TG_ERROR_INVALID_ARGUMENT;
  int ooo = run->out_of_order;
  if (ooo && op >= run->op_count) return TG_ERROR_INVALID_ARGUMENT;
  if (!ooo) wait_count = 0; /* in order: a full barrier stands for every wait */
  /* Every op waited for must be an earlier one (already recorded, its event set). Ops are
   * recorded in order and an event's first scope is everything recorded before it was set, so
   * waiting for the latest of them orders this op after each of them, and after nothing
   * recorded later: one event says exactly what all of them would. (Waiting on several events
   * at once would also be correct, but synchronization validation then checks an image layout
   * transition against each event's scope separately and reports hazards that do not exist.) */
  size_t latest = 0;
  for (size_t i = 0; i < wait_count; ++i) {
    if (waits[i] >= op || run->events[waits[i]] == VK_NULL_HANDLE) return TG_ERROR_INVALID_ARGUMENT;
    if (waits[i] > waits[latest]) latest = i;
  }
  int ordered = ooo ? wait_count > 0 : run->ops_recorded > 0;
  VkAccessFlags src_access = ordered ? VK_ACCESS_SHADER_WRITE_BIT : 0;
  size_t transitions = 0;
  tg_status st;
  for (int pass = 0; pass < 2; ++pass) {
    const tg__check_access *acc = pass ? writes : reads;
    size_t n = pass ? write_count : read_count;
    for (size_t i = 0; i < n; ++i) {
      vk_view *w = acc[i].view;
      if (w->buffer == VK_NULL_HANDLE && w->vk_image == VK_NULL_HANDLE) continue;
      if ((st = tg__vk_touch_view(v, w)) != TG_OK) return st;
      if (w->image && (pass == 1 || !w->ready) &&
          (st = tg__vk_add_transition(v, w, &transitions, src_access, pass == 1 && in_place_output(w, reads, read_count))) !=
              TG_OK)
        return st;
    }
  }
  VkCommandBuffer cb = v->command_buffer;
  VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  if (ooo && wait_count) {
    v->vk.vkCmdWaitEvents(cb, 1, &run->events[waits[latest]],
                          VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                          1, &mb, 0, NULL, (uint32_t)transitions, run->barrier_scratch);
  } else if (ordered) {
    v->vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                               VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL,
                               (uint32_t)transitions, run->barrier_scratch);
  } else if (transitions) {
    /* Nothing to wait for: the transitions only have to precede this op's own dispatches. */
    v->vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                               VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 0, NULL, 0, NULL,
                               (uint32_t)transitions, run->barrier_scratch);
  }
  for (size_t i = 0; i < read_count; ++i)
    if ((st = record_access(v, &reads[i], 0)) != TG_OK) return st;
  if (writes_over_reads(reads, read_count, writes, write_count)) {
    /* An in-place op: its input is verified before its output is written over it. */
    VkMemoryBarrier war = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    war.srcAccessMask = VK_ACCESS_SHADER_READ_BIT;
    war.dstAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    v->vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                               &war, 0, NULL, 0, NULL);
  }
  for (size_t i = 0; i < write_count; ++i)
    if ((st = record_access(v, &writes[i], 1)) != TG_OK) return st;
  if (ooo) {
    VkEventCreateInfo ei = {.sType = VK_STRUCTURE_TYPE_EVENT_CREATE_INFO};
    VkResult r = v->vk.vkCreateEvent(v->device, &ei, v->vk_alloc, &run->events[op]);
    if (r != VK_SUCCESS) {
      run->events[op] = VK_NULL_HANDLE;
      return tg__vk_fail(v, r);
    }
    v->live_objects++;
    v->vk.vkCmdSetEvent(cb, run->events[op], VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
  }
  run->ops_recorded++;
  return TG_OK;
}

/* Make the shader writes recorded so far visible to the host, end the command buffer, submit
 * it and wait for it. The failing call's status otherwise (`pending` set once submitted). */
static tg_status submit_and_wait(vk_device *v) {
  check_run *run = &v->run;
  VkCommandBuffer cb = v->command_buffer;
  VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER, .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                        .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
  v->vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                             0, 1, &mb, 0, NULL, 0, NULL);
  VkResult r = v->vk.vkEndCommandBuffer(cb);
  if (r != VK_SUCCESS) return tg__vk_fail(v, r);
  VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cb};
  if ((r = v->vk.vkQueueSubmit(v->queue, 1, &si, v->fence)) != VK_SUCCESS) return tg__vk_fail(v, r);
  run->pending = 1;
  if ((r = v->vk.vkWaitForFences(v->device, 1, &v->fence, VK_TRUE, UINT64_MAX)) != VK_SUCCESS)
    return tg__vk_fail(v, r);
  v->vk.vkResetFences(v->device, 1, &v->fence);
  run->pending = 0;
  return TG_OK;
}

tg_status tg__vk_check_end(void *impl, uint64_t *mismatches, uint64_t *checked_bytes) {
  vk_device *v = impl;
  check_run *run = &v->run;
  if (!run->active) return TG_ERROR_INVALID_ARGUMENT;
  /* Counters become visible to the host once everything has run. */
  tg_status st = submit_and_wait(v);
  if (st != TG_OK) {
    tg__vk_check_abort(v);
    return st;
  }
  VkResult r;
  for (size_t c = 0; c < run->chunk_count; ++c) {
    if (!run->chunks[c].memory.coherent) {
      VkMappedMemoryRange mr = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
      mr.memory = run->chunks[c].memory.b.memory;
      mr.size = VK_WHOLE_SIZE;
      if ((r = v->vk.vkInvalidateMappedMemoryRanges(v->device, 1, &mr)) != VK_SUCCESS) {
        tg_status st = tg__vk_fail(v, r);
        run_release(v);
        return st;
      }
    }
  }
  size_t words_per_slot = v->counter_stride / sizeof(uint32_t);
  for (size_t s = 0; s < run->slot_count; ++s) {
    const uint32_t *counter = run->chunks[s / COUNTER_SLOTS].mapped + (s % COUNTER_SLOTS) * words_per_slot;
    if (run->slot_record[s] < run->record_count) mismatches[run->slot_record[s]] += *counter;
  }
  *checked_bytes = run->checked_bytes;
  run_release(v);
  return TG_OK;
}

/* Submit what the run recorded so far, wait for it, and go on recording into a fresh command
 * buffer that starts after everything before it (and after the host's writes). */
tg_status tg__vk_check_sync(void *impl) {
  vk_device *v = impl;
  check_run *run = &v->run;
  if (!run->active || run->pending) return TG_ERROR_INVALID_ARGUMENT;
  VkCommandBuffer cb = v->command_buffer;
  tg_status st = submit_and_wait(v);
  if (st != TG_OK) return st;
  VkResult r;
  if ((r = v->vk.vkResetCommandPool(v->device, v->command_pool, 0)) != VK_SUCCESS) return tg__vk_fail(v, r);
  VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  if ((r = v->vk.vkBeginCommandBuffer(cb, &bi)) != VK_SUCCESS) return tg__vk_fail(v, r);
  VkMemoryBarrier after = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  after.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT;
  after.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  v->vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                             VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &after, 0, NULL, 0, NULL);
  return TG_OK;
}
