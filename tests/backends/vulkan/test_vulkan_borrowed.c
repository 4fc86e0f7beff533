#define _GNU_SOURCE /* RTLD_NODELETE */
/* Tangram inside an engine's Vulkan device (tg_device_wrap_vulkan) on a real driver (lavapipe
 * on CI). The test plays the engine: it loads the loader itself, creates its own instance with
 * the validation layer and synchronization validation, its own device and queue, and hands
 * them to Tangram with counting VkAllocationCallbacks and, where asked, memory callbacks of its
 * own (a test allocator that places every block at a non-zero offset). It checks:
 * - the whole model matrix (four public models x buffer/2D/array/3D x objects/offsets x
 *   serial/parallel-safe), realised on the borrowed device with and without the memory
 *   callbacks, checked in order and out of order on the engine's queue: 0 corrupted, 0
 *   validation messages, every typed handle where the generic one says, every block the
 *   engine's, and no vkAllocateMemory of Tangram's own when the callbacks are given;
 * - after tg_device_close, a compute dispatch of the engine's own still runs on the device and
 *   queue and computes the right answer; every allocation through the VkAllocationCallbacks
 *   was given back;
 * - wrong borrowed objects (NULL handles, a foreign physical device, a queue family out of
 *   range or without compute, an entry point that gives nothing, storage images missing while
 *   the plan has textures, a memory block that breaks its request) are clear errors;
 * - every device allocation, driver call and memory-callback allocation failing in turn, and
 *   every host allocation: a clean error, nothing leaked, the engine's objects untouched.
 * TANGRAM_TEST_QUICK=1 (sanitizer and valgrind runs) trims the matrix and the walks.
 *
 * Outside CI a machine without a Vulkan device or the validation layer skips these tests
 * loudly; under CI (CI=true) that fails them. */
#define VK_NO_PROTOTYPES /* as an engine on volk: every call through the entry point */
#include "support/tg_test.h"
#include "support/tg_vulkan_leaks.h"
#include "support/tg_backend_cases.h"
#include "support/tg_models.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend_internal.h"
#include "tangram/backend.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/schedule.h"

#ifndef TANGRAM_TEST_HAVE_VULKAN
int main(void) {
  fprintf(stderr, "\n*** SKIPPING the borrowed Vulkan device tests: this build has no Vulkan "
                  "backend. ***\n\n");
  return tg_test_in_ci() ? 1 : 0;
}
#else
#include "backends/vulkan/vulkan_internal.h"
#include "tangram/vulkan.h"


/* The SPIR-V of the shadow run's buffer writer: the engine's own compute shader here. */
static const uint32_t k_engine_spv[] =
#include "buffer_write.spv.h"
    ;

/* ------------------------------------------------------------------------------------------ */
/* The engine: its own loader, instance (validation + synchronization validation), device,
 * queue, and one compute pipeline of its own. */

#define ENGINE_INSTANCE_FNS(X)                                                                  \
  X(DestroyInstance) X(EnumeratePhysicalDevices) X(GetPhysicalDeviceProperties)                 \
  X(GetPhysicalDeviceQueueFamilyProperties) X(GetPhysicalDeviceMemoryProperties)                \
  X(GetPhysicalDeviceFormatProperties) X(CreateDevice) X(GetDeviceProcAddr)                     \
  X(CreateDebugUtilsMessengerEXT) X(DestroyDebugUtilsMessengerEXT)
#define ENGINE_DEVICE_FNS(X)                                                                    \
  X(DestroyDevice) X(GetDeviceQueue) X(DeviceWaitIdle) X(QueueWaitIdle) X(QueueSubmit)          \
  X(CreateBuffer) X(DestroyBuffer) X(GetBufferMemoryRequirements) X(AllocateMemory)            \
  X(FreeMemory) X(MapMemory) X(UnmapMemory) X(BindBufferMemory) X(CreateShaderModule)           \
  X(DestroyShaderModule) X(CreateDescriptorSetLayout) X(DestroyDescriptorSetLayout)            \
  X(CreatePipelineLayout) X(DestroyPipelineLayout) X(CreateComputePipelines) X(DestroyPipeline) \
  X(CreateDescriptorPool) X(DestroyDescriptorPool) X(AllocateDescriptorSets)                   \
  X(UpdateDescriptorSets) X(CreateCommandPool) X(DestroyCommandPool) X(AllocateCommandBuffers)  \
  X(BeginCommandBuffer) X(EndCommandBuffer) X(CmdBindPipeline) X(CmdBindDescriptorSets)         \
  X(CmdPushConstants) X(CmdDispatch) X(CmdPipelineBarrier) X(CmdCopyBuffer) X(CreateFence) X(DestroyFence)       \
  X(WaitForFences) X(ResetFences)

typedef struct engine {
  PFN_vkGetInstanceProcAddr gipa;
#define X(name) PFN_vk##name name;
  ENGINE_INSTANCE_FNS(X) ENGINE_DEVICE_FNS(X)
#undef X
  VkInstance instance;
  VkDebugUtilsMessengerEXT messenger;
  VkPhysicalDevice physical;
  VkPhysicalDeviceMemoryProperties memory_props;
  uint32_t family;
  VkDevice device;
  VkQueue queue;
  _Atomic uint64_t messages;
  char first_message[200];
  /* The engine's own compute work: a buffer the shader fills with a known pattern. */
  VkBuffer buffer;
  VkDeviceMemory memory;
  uint32_t *mapped;
  VkDescriptorSetLayout set_layout;
  VkPipelineLayout pipeline_layout;
  VkPipeline pipeline;
  VkDescriptorPool pool;
  VkDescriptorSet set;
  VkCommandPool command_pool;
  VkCommandBuffer command_buffer;
  VkFence fence;
  uint32_t dispatches;
} engine;

#define ENGINE_WORDS 4096u

static VKAPI_ATTR VkBool32 VKAPI_CALL engine_on_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types,
    const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
  (void)types;
  engine *e = user;
  if (severity & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                  VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)) {
    if (atomic_fetch_add(&e->messages, 1) == 0)
      snprintf(e->first_message, sizeof e->first_message, "%s",
               data && data->pMessageIdName ? data->pMessageIdName : "(no id)");
    fprintf(stderr, "engine validation: %s\n", data && data->pMessage ? data->pMessage : "");
  }
  return VK_FALSE;
}

/* Hooks between Tangram and the engine's entry point: they count Tangram's own
 * vkAllocateMemory calls, and can hide storage-image formats or compute queues to play a
 * device without them. One engine at a time. */
typedef struct hooks {
  PFN_vkGetInstanceProcAddr real_gipa;
  PFN_vkGetDeviceProcAddr real_gdpa;
  PFN_vkAllocateMemory real_allocate_memory;
  PFN_vkGetPhysicalDeviceFormatProperties real_format_properties;
  PFN_vkGetPhysicalDeviceQueueFamilyProperties real_queue_families;
  uint64_t tangram_allocate_memory;  /* vkAllocateMemory calls through the hooked entry point */
  int hide_storage_images;
  int hide_compute;
  int give_nothing;
} hooks;
static hooks g_hooks;

static VKAPI_ATTR VkResult VKAPI_CALL hook_allocate_memory(VkDevice device,
                                                           const VkMemoryAllocateInfo *info,
                                                           const VkAllocationCallbacks *cb,
                                                           VkDeviceMemory *memory) {
  g_hooks.tangram_allocate_memory++;
  return g_hooks.real_allocate_memory(device, info, cb, memory);
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL hook_gdpa(VkDevice device, const char *name) {
  if (strcmp(name, "vkAllocateMemory") == 0) return (PFN_vkVoidFunction)hook_allocate_memory;
  return g_hooks.real_gdpa(device, name);
}

static VKAPI_ATTR void VKAPI_CALL hook_format_properties(VkPhysicalDevice pd, VkFormat format,
                                                         VkFormatProperties *out) {
  g_hooks.real_format_properties(pd, format, out);
  if (g_hooks.hide_storage_images) {
    out->optimalTilingFeatures &= ~(VkFormatFeatureFlags)VK_FORMAT_FEATURE_STORAGE_IMAGE_BIT;
    out->linearTilingFeatures &= ~(VkFormatFeatureFlags)VK_FORMAT_FEATURE_STORAGE_IMAGE_BIT;
  }
}

static VKAPI_ATTR void VKAPI_CALL hook_queue_families(VkPhysicalDevice pd, uint32_t *count,
                                                      VkQueueFamilyProperties *out) {
  g_hooks.real_queue_families(pd, count, out);
  if (g_hooks.hide_compute && out)
    for (uint32_t i = 0; i < *count; ++i)
      out[i].queueFlags &= ~(VkQueueFlags)(VK_QUEUE_COMPUTE_BIT | VK_QUEUE_GRAPHICS_BIT);
}

static VKAPI_ATTR PFN_vkVoidFunction VKAPI_CALL hook_gipa(VkInstance instance, const char *name) {
  if (g_hooks.give_nothing) return NULL;
  if (strcmp(name, "vkGetDeviceProcAddr") == 0) return (PFN_vkVoidFunction)hook_gdpa;
  if (strcmp(name, "vkGetPhysicalDeviceFormatProperties") == 0)
    return (PFN_vkVoidFunction)hook_format_properties;
  if (strcmp(name, "vkGetPhysicalDeviceQueueFamilyProperties") == 0)
    return (PFN_vkVoidFunction)hook_queue_families;
  return g_hooks.real_gipa(instance, name);
}

/* The loader's entry point, opened once and kept (as an engine keeps its loader). */
static PFN_vkGetInstanceProcAddr load_loader(void) {
  static PFN_vkGetInstanceProcAddr gipa;
  if (gipa) return gipa;
  void *lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (lib == NULL) return NULL;
  PFN_vkVoidFunction f;
  void *sym = dlsym(lib, "vkGetInstanceProcAddr");
  memcpy(&f, &sym, sizeof f);
  gipa = (PFN_vkGetInstanceProcAddr)f;
  return gipa;
}

/* Create the engine: 1 when it works, 0 (with `why`) when this machine cannot. */
static int engine_create(engine *e, int validation, char *why, size_t why_size) {
  memset(e, 0, sizeof *e);
  atomic_init(&e->messages, 0);
  e->gipa = load_loader();
  if (e->gipa == NULL) {
    snprintf(why, why_size, "libvulkan.so.1 not found");
    return 0;
  }
  PFN_vkCreateInstance create_instance = (PFN_vkCreateInstance)e->gipa(NULL, "vkCreateInstance");
  VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "tangram engine test";
  app.apiVersion = VK_API_VERSION_1_1;
  const char *layer = "VK_LAYER_KHRONOS_validation";
  const char *exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME};
  VkDebugUtilsMessengerCreateInfoEXT dbg = {.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  dbg.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                        VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  dbg.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  dbg.pfnUserCallback = engine_on_message;
  dbg.pUserData = e;
  VkValidationFeatureEnableEXT sync = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
  VkValidationFeaturesEXT features = {.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = &sync;
  features.pNext = &dbg;
  VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  if (validation) {
    ci.pNext = &features;
    ci.enabledLayerCount = 1;
    ci.ppEnabledLayerNames = &layer;
    ci.enabledExtensionCount = 2;
    ci.ppEnabledExtensionNames = exts;
  }
  VkResult r = create_instance ? create_instance(&ci, NULL, &e->instance) : VK_ERROR_INITIALIZATION_FAILED;
  if (r != VK_SUCCESS) {
    snprintf(why, why_size, "vkCreateInstance%s failed (%d)",
             validation ? " with VK_LAYER_KHRONOS_validation" : "", (int)r);
    return 0;
  }
#define X(name) e->name = (PFN_vk##name)e->gipa(e->instance, "vk" #name);
  ENGINE_INSTANCE_FNS(X)
#undef X
  if (validation) {
    r = e->CreateDebugUtilsMessengerEXT(e->instance, &dbg, NULL, &e->messenger);
    assert_int_equal(r, VK_SUCCESS);
  }
  uint32_t n = 0;
  e->EnumeratePhysicalDevices(e->instance, &n, NULL);
  VkPhysicalDevice list[16];
  if (n > 16) n = 16;
  e->EnumeratePhysicalDevices(e->instance, &n, list);
  e->physical = VK_NULL_HANDLE;
  for (uint32_t i = 0; i < n && e->physical == VK_NULL_HANDLE; ++i) {
    uint32_t qn = 16;
    VkQueueFamilyProperties q[16];
    e->GetPhysicalDeviceQueueFamilyProperties(list[i], &qn, q);
    for (uint32_t f = 0; f < qn; ++f)
      if (q[f].queueFlags & VK_QUEUE_COMPUTE_BIT) {
        e->physical = list[i];
        e->family = f;
        break;
      }
  }
  if (e->physical == VK_NULL_HANDLE) {
    snprintf(why, why_size, "no Vulkan device with a compute queue");
    return 0;
  }
  e->GetPhysicalDeviceMemoryProperties(e->physical, &e->memory_props);
  float priority = 1.0f;
  VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = e->family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  VkDeviceCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  di.queueCreateInfoCount = 1;
  di.pQueueCreateInfos = &qi;
  r = e->CreateDevice(e->physical, &di, NULL, &e->device);
  if (r != VK_SUCCESS) {
    snprintf(why, why_size, "vkCreateDevice failed (%d)", (int)r);
    return 0;
  }
#define X(name) e->name = (PFN_vk##name)e->GetDeviceProcAddr(e->device, "vk" #name);
  ENGINE_DEVICE_FNS(X)
#undef X
  e->GetDeviceQueue(e->device, e->family, 0, &e->queue);

  /* The hooks see this engine. */
  memset(&g_hooks, 0, sizeof g_hooks);
  g_hooks.real_gipa = e->gipa;
  g_hooks.real_gdpa = e->GetDeviceProcAddr;
  g_hooks.real_allocate_memory = e->AllocateMemory;
  g_hooks.real_format_properties = e->GetPhysicalDeviceFormatProperties;
  g_hooks.real_queue_families = e->GetPhysicalDeviceQueueFamilyProperties;

  /* The engine's own pipeline and buffer. */
  VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = ENGINE_WORDS * 4;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
             VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  assert_int_equal(e->CreateBuffer(e->device, &bi, NULL, &e->buffer), VK_SUCCESS);
  VkMemoryRequirements req;
  e->GetBufferMemoryRequirements(e->device, e->buffer, &req);
  VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = UINT32_MAX;
  VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  for (uint32_t i = 0; i < e->memory_props.memoryTypeCount && ai.memoryTypeIndex == UINT32_MAX; ++i)
    if ((req.memoryTypeBits & (1u << i)) && (e->memory_props.memoryTypes[i].propertyFlags & want) == want)
      ai.memoryTypeIndex = i;
  assert_true(ai.memoryTypeIndex != UINT32_MAX);
  assert_int_equal(e->AllocateMemory(e->device, &ai, NULL, &e->memory), VK_SUCCESS);
  assert_int_equal(e->BindBufferMemory(e->device, e->buffer, e->memory, 0), VK_SUCCESS);
  void *mapped = NULL;
  assert_int_equal(e->MapMemory(e->device, e->memory, 0, VK_WHOLE_SIZE, 0, &mapped), VK_SUCCESS);
  e->mapped = mapped;
  VkDescriptorSetLayoutBinding b = {0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL};
  VkDescriptorSetLayoutCreateInfo li = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  li.bindingCount = 1;
  li.pBindings = &b;
  assert_int_equal(e->CreateDescriptorSetLayout(e->device, &li, NULL, &e->set_layout), VK_SUCCESS);
  VkPushConstantRange pc = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 6 * sizeof(uint32_t)};
  VkPipelineLayoutCreateInfo pli = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &e->set_layout;
  pli.pushConstantRangeCount = 1;
  pli.pPushConstantRanges = &pc;
  assert_int_equal(e->CreatePipelineLayout(e->device, &pli, NULL, &e->pipeline_layout), VK_SUCCESS);
  VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mi.codeSize = sizeof k_engine_spv;
  mi.pCode = k_engine_spv;
  VkShaderModule module;
  assert_int_equal(e->CreateShaderModule(e->device, &mi, NULL, &module), VK_SUCCESS);
  VkComputePipelineCreateInfo cpi = {.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cpi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cpi.stage.module = module;
  cpi.stage.pName = "main";
  cpi.layout = e->pipeline_layout;
  assert_int_equal(e->CreateComputePipelines(e->device, VK_NULL_HANDLE, 1, &cpi, NULL, &e->pipeline),
                   VK_SUCCESS);
  e->DestroyShaderModule(e->device, module, NULL);
  VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1};
  VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dpi.maxSets = 1;
  dpi.poolSizeCount = 1;
  dpi.pPoolSizes = &ps;
  assert_int_equal(e->CreateDescriptorPool(e->device, &dpi, NULL, &e->pool), VK_SUCCESS);
  VkDescriptorSetAllocateInfo sai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  sai.descriptorPool = e->pool;
  sai.descriptorSetCount = 1;
  sai.pSetLayouts = &e->set_layout;
  assert_int_equal(e->AllocateDescriptorSets(e->device, &sai, &e->set), VK_SUCCESS);
  VkDescriptorBufferInfo dbi = {e->buffer, 0, VK_WHOLE_SIZE};
  VkWriteDescriptorSet w = {.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
  w.dstSet = e->set;
  w.descriptorCount = 1;
  w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
  w.pBufferInfo = &dbi;
  e->UpdateDescriptorSets(e->device, 1, &w, 0, NULL);
  VkCommandPoolCreateInfo cpo = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cpo.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cpo.queueFamilyIndex = e->family;
  assert_int_equal(e->CreateCommandPool(e->device, &cpo, NULL, &e->command_pool), VK_SUCCESS);
  VkCommandBufferAllocateInfo cba = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cba.commandPool = e->command_pool;
  cba.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cba.commandBufferCount = 1;
  assert_int_equal(e->AllocateCommandBuffers(e->device, &cba, &e->command_buffer), VK_SUCCESS);
  VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  assert_int_equal(e->CreateFence(e->device, &fi, NULL, &e->fence), VK_SUCCESS);
  return 1;
}

/* The engine's own dispatch on its device and queue: the buffer must then hold the signature
 * pattern of a fresh id, word for word (a known answer: tg_signature_word). */
static void engine_dispatch(engine *e, const char *when) {
  uint32_t id = 1000u + ++e->dispatches;
  memset(e->mapped, 0, ENGINE_WORDS * 4);
  VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  assert_int_equal(e->BeginCommandBuffer(e->command_buffer, &bi), VK_SUCCESS);
  e->CmdBindPipeline(e->command_buffer, VK_PIPELINE_BIND_POINT_COMPUTE, e->pipeline);
  e->CmdBindDescriptorSets(e->command_buffer, VK_PIPELINE_BIND_POINT_COMPUTE, e->pipeline_layout,
                           0, 1, &e->set, 0, NULL);
  uint32_t params[6] = {id, ENGINE_WORDS, 0, 0, 0, 0};
  e->CmdPushConstants(e->command_buffer, e->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                      sizeof params, params);
  e->CmdDispatch(e->command_buffer, 4, 1, 1);
  VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  e->CmdPipelineBarrier(e->command_buffer, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                        VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
  assert_int_equal(e->EndCommandBuffer(e->command_buffer), VK_SUCCESS);
  VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &e->command_buffer;
  VkResult r = e->QueueSubmit(e->queue, 1, &si, e->fence);
  if (r != VK_SUCCESS) fail_msg("%s: the engine's vkQueueSubmit failed (%d)", when, (int)r);
  assert_int_equal(e->WaitForFences(e->device, 1, &e->fence, VK_TRUE, UINT64_MAX), VK_SUCCESS);
  assert_int_equal(e->ResetFences(e->device, 1, &e->fence), VK_SUCCESS);
  size_t wrong = 0;
  for (uint32_t i = 0; i < ENGINE_WORDS; ++i) wrong += e->mapped[i] != tg_signature_word(id, i);
  if (wrong) fail_msg("%s: the engine's own dispatch computed %zu wrong words", when, wrong);
}

static void engine_destroy(engine *e) {
  if (e->device) {
    e->DeviceWaitIdle(e->device);
    e->DestroyFence(e->device, e->fence, NULL);
    e->DestroyCommandPool(e->device, e->command_pool, NULL);
    e->DestroyDescriptorPool(e->device, e->pool, NULL);
    e->DestroyPipeline(e->device, e->pipeline, NULL);
    e->DestroyPipelineLayout(e->device, e->pipeline_layout, NULL);
    e->DestroyDescriptorSetLayout(e->device, e->set_layout, NULL);
    e->DestroyBuffer(e->device, e->buffer, NULL);
    if (e->memory) e->FreeMemory(e->device, e->memory, NULL);
    e->DestroyDevice(e->device, NULL);
  }
  if (e->messenger) e->DestroyDebugUtilsMessengerEXT(e->instance, e->messenger, NULL);
  if (e->instance) e->DestroyInstance(e->instance, NULL);
  memset(e, 0, sizeof *e);
}

/* Destroy the engine, failing on anything the layer said, its report of objects leaked at
 * vkDestroyDevice included (Tangram's objects on the engine's device would show there). */
static void engine_destroy_clean(engine *e) {
  engine_destroy(e);
  uint64_t n = atomic_load(&e->messages);
  if (n) fail_msg("%llu validation message(s), the first: %s", (unsigned long long)n, e->first_message);
}

static void assert_no_messages(engine *e, const char *what) {
  uint64_t n = atomic_load(&e->messages);
  if (n) fail_msg("%s: %llu validation message(s), the first: %s", what, (unsigned long long)n,
                  e->first_message);
}

/* ------------------------------------------------------------------------------------------ */
/* The engine's host allocator for Vulkan objects (VkAllocationCallbacks), counting. */

typedef struct counting_callbacks {
  VkAllocationCallbacks cb;
  _Atomic int64_t live;
  _Atomic uint64_t total;
} counting_callbacks;

/* Each block: [raw ... | raw pointer | size | user bytes (aligned)]. */
static void *VKAPI_CALL count_alloc(void *user, size_t size, size_t align, VkSystemAllocationScope scope) {
  (void)scope;
  counting_callbacks *c = user;
  if (align < 16) align = 16;
  unsigned char *raw = malloc(size + align + 16);
  if (raw == NULL) return NULL;
  uintptr_t p = ((uintptr_t)raw + 16 + align - 1) & ~(uintptr_t)(align - 1);
  memcpy((void *)(p - 16), &raw, sizeof raw);
  memcpy((void *)(p - 8), &size, sizeof size);
  atomic_fetch_add(&c->live, 1);
  atomic_fetch_add(&c->total, 1);
  return (void *)p;
}

static void VKAPI_CALL count_free(void *user, void *ptr) {
  if (ptr == NULL) return;
  counting_callbacks *c = user;
  unsigned char *raw;
  memcpy(&raw, (unsigned char *)ptr - 16, sizeof raw);
  free(raw);
  atomic_fetch_sub(&c->live, 1);
}

static void *VKAPI_CALL count_realloc(void *user, void *old, size_t size, size_t align,
                                      VkSystemAllocationScope scope) {
  if (old == NULL) return count_alloc(user, size, align, scope);
  if (size == 0) {
    count_free(user, old);
    return NULL;
  }
  void *p = count_alloc(user, size, align, scope);
  if (p == NULL) return NULL;
  size_t old_size;
  memcpy(&old_size, (unsigned char *)old - 8, sizeof old_size);
  memcpy(p, old, old_size < size ? old_size : size);
  count_free(user, old);
  return p;
}

static void counting_init(counting_callbacks *c) {
  memset(c, 0, sizeof *c);
  atomic_init(&c->live, 0);
  atomic_init(&c->total, 0);
  c->cb.pUserData = c;
  c->cb.pfnAllocation = count_alloc;
  c->cb.pfnReallocation = count_realloc;
  c->cb.pfnFree = count_free;
}

/* ------------------------------------------------------------------------------------------ */
/* The engine's device-memory allocator (memory callbacks): one VkDeviceMemory per block, the
 * block starting 256 bytes (or one alignment) in, so that every offset Tangram computes has to
 * include the block's. */

typedef struct test_block {
  VkDeviceMemory memory;
  VkDeviceSize offset, size;
  int mapped;
  struct test_block *next;
} test_block;

typedef struct test_memory {
  engine *e;
  tg_vulkan_memory_callbacks cb;
  test_block *blocks;          /* live blocks */
  int64_t live;
  uint64_t allocations, host_allocations, frees;
  uint64_t fail_at;            /* the Nth allocate() fails with VK_ERROR_OUT_OF_DEVICE_MEMORY */
  int misbehave;               /* 1: misaligned offset; 2: a memory type out of range; 3: no mapping */
} test_memory;

static VkResult engine_block_allocate(void *user, const VkMemoryRequirements *req, VkMemoryPropertyFlags required,
                              VkMemoryPropertyFlags preferred, int host_access,
                              tg_vulkan_memory_block *out) {
  test_memory *m = user;
  engine *e = m->e;
  m->allocations++;
  if (m->fail_at && m->allocations == m->fail_at) return VK_ERROR_OUT_OF_DEVICE_MEMORY;
  if (host_access) {
    m->host_allocations++;
    if (!(required & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) || !(required & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT))
      fail_msg("a host-access request without HOST_VISIBLE | HOST_COHERENT");
  }
  int best = -1, best_score = -1;
  for (uint32_t i = 0; i < e->memory_props.memoryTypeCount; ++i) {
    VkMemoryPropertyFlags f = e->memory_props.memoryTypes[i].propertyFlags;
    if (!(req->memoryTypeBits & (1u << i)) || (f & required) != required) continue;
    int score = (f & preferred) == preferred;
    if (score > best_score) {
      best = (int)i;
      best_score = score;
    }
  }
  if (best < 0) return VK_ERROR_OUT_OF_DEVICE_MEMORY;
  VkDeviceSize align = req->alignment ? req->alignment : 1;
  VkDeviceSize pad = (256 + align - 1) / align * align;
  VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = pad + req->size;
  ai.memoryTypeIndex = (uint32_t)best;
  test_block *b = calloc(1, sizeof *b);
  assert_non_null(b);
  VkResult r = e->AllocateMemory(e->device, &ai, NULL, &b->memory);
  if (r != VK_SUCCESS) {
    free(b);
    return r;
  }
  b->offset = pad;
  b->size = req->size;
  memset(out, 0, sizeof *out);
  if (host_access) {
    void *p = NULL;
    assert_int_equal(e->MapMemory(e->device, b->memory, 0, VK_WHOLE_SIZE, 0, &p), VK_SUCCESS);
    b->mapped = 1;
    out->mapped = (unsigned char *)p + pad;
  }
  out->memory = b->memory;
  out->offset = pad;
  out->memory_type = (uint32_t)best;
  out->allocation = b;
  if (m->misbehave == 1 && align > 1) out->offset += 1;
  if (m->misbehave == 2) out->memory_type = e->memory_props.memoryTypeCount;
  if (m->misbehave == 3) out->mapped = NULL;
  b->next = m->blocks;
  m->blocks = b;
  m->live++;
  return VK_SUCCESS;
}

static void engine_block_free(void *user, const tg_vulkan_memory_block *block) {
  test_memory *m = user;
  test_block *b = block->allocation;
  test_block **p = &m->blocks;
  while (*p && *p != b) p = &(*p)->next;
  if (*p == NULL) fail_msg("free() of a block this allocator never gave (or gave back twice)");
  if (block->memory != b->memory) fail_msg("free() with another block's memory");
  *p = b->next;
  if (b->mapped) m->e->UnmapMemory(m->e->device, b->memory);
  m->e->FreeMemory(m->e->device, b->memory, NULL);
  free(b);
  m->live--;
  m->frees++;
}

static void test_memory_init(test_memory *m, engine *e) {
  memset(m, 0, sizeof *m);
  m->e = e;
  m->cb.allocate = engine_block_allocate;
  m->cb.free = engine_block_free;
  m->cb.user = m;
}

/* 1 when [offset, offset + size) lies inside a live block of the allocator. */
static int test_memory_owns(const test_memory *m, VkDeviceMemory memory, VkDeviceSize offset,
                            VkDeviceSize size) {
  for (const test_block *b = m->blocks; b; b = b->next)
    if (b->memory == memory && offset >= b->offset && offset + size <= b->offset + b->size) return 1;
  return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* A borrowed device over the engine. */

typedef struct wrapped {
  counting_callbacks counting;
  test_memory memory;
  tg_vulkan_device_desc desc;
} wrapped;

/* Fill a desc for the engine: its objects, the hooked entry point, counting callbacks, and
 * the engine's memory allocator when `engine_memory`. */
static void wrapped_init(wrapped *w, engine *e, int engine_memory) {
  memset(w, 0, sizeof *w);
  counting_init(&w->counting);
  test_memory_init(&w->memory, e);
  tg_vulkan_device_desc *d = &w->desc;
  d->instance = e->instance;
  d->physical_device = e->physical;
  d->device = e->device;
  d->queue_family_index = e->family;
  d->queue = e->queue;
  d->get_instance_proc_addr = hook_gipa;
  d->api_version = VK_API_VERSION_1_1;
  d->allocation_callbacks = &w->counting.cb;
  d->memory = engine_memory ? &w->memory.cb : NULL;
}

static tg_device *wrap_device(wrapped *w, const tg_allocator *alloc) {
  tg_device *d = NULL;
  tg_error_info err = {{0}};
  tg_status st = tg_device_wrap_vulkan(&w->desc, alloc, &d, &err);
  if (st != TG_OK) fail_msg("wrap: %s: %s", tg_status_name(st), err.message);
  return d;
}

static int64_t live_objects(tg_device *d) { return tg__vulkan_live_objects(tg__device_impl(d)); }

/* Close a wrapped device: every Vulkan object and host block it made through the engine's
 * callbacks is given back, and the engine's device still computes. */
static void close_wrapped(tg_device *d, wrapped *w, engine *e, const char *when) {
  assert_int_equal(live_objects(d), 0);
  tg_device_close(d);
  if (atomic_load(&w->counting.live) != 0)
    fail_msg("%s: %lld VkAllocationCallbacks blocks not given back after tg_device_close", when,
             (long long)atomic_load(&w->counting.live));
  if (w->memory.live != 0)
    fail_msg("%s: %lld engine memory blocks not given back", when, (long long)w->memory.live);
  engine_dispatch(e, when);
  assert_no_messages(e, when);
}

/* ------------------------------------------------------------------------------------------ */
/* Models, records, plans, checks (as the engine would drive them). */

static uint64_t handle_bits(const void *h, size_t size) {
  uint64_t u = 0;
  memcpy(&u, h, size < sizeof u ? size : sizeof u);
  return u;
}

/* Every record's typed handle agrees with its generic one and with the plan, describes the
 * resource, and (with the engine's memory) lies in one of the engine's blocks. */
static void check_handles(tg_realization *z, const tg_plan *plan, const tg_tensor_resource *res,
                          size_t count, tg_precision precision, const test_memory *engine_memory) {
  for (size_t r = 0; r < count; ++r) {
    tg_tensor_handle h;
    tg_vulkan_tensor t;
    assert_int_equal(tg_realization_get_tensor(z, r, &h), TG_OK);
    assert_int_equal(tg_vulkan_get_tensor(z, r, &t), TG_OK);
    int image = res[r].storage != TG_STORAGE_BUFFER;
    if (image ? res[r].extent.w * res[r].extent.h * res[r].extent.d == 0 : res[r].bytes == 0) {
      assert_true(t.buffer == VK_NULL_HANDLE && t.image == VK_NULL_HANDLE);
      continue;
    }
    if (image) {
      assert_true(t.image != VK_NULL_HANDLE && t.buffer == VK_NULL_HANDLE);
      assert_int_equal(h.native, handle_bits(&t.image, sizeof t.image));
      assert_int_equal(t.format, precision == TG_PRECISION_FP16 ? VK_FORMAT_R16G16B16A16_SFLOAT
                                                                : VK_FORMAT_R32G32B32A32_SFLOAT);
      int three_d = res[r].storage == TG_STORAGE_TEXTURE_3D;
      int array = res[r].storage == TG_STORAGE_TEXTURE_ARRAY;
      assert_int_equal(t.image_type, three_d ? VK_IMAGE_TYPE_3D : VK_IMAGE_TYPE_2D);
      assert_int_equal(t.extent.width, res[r].extent.w);
      assert_int_equal(t.extent.height, res[r].extent.h);
      assert_int_equal(t.extent.depth, three_d ? res[r].extent.d : 1);
      assert_int_equal(t.layers, array ? res[r].extent.d : 1);
      assert_true(t.image_usage & VK_IMAGE_USAGE_STORAGE_BIT);
    } else {
      assert_true(t.buffer != VK_NULL_HANDLE && t.image == VK_NULL_HANDLE);
      assert_int_equal(h.native, handle_bits(&t.buffer, sizeof t.buffer));
      assert_int_equal(t.bytes, res[r].bytes);
      assert_true(t.buffer_usage & VK_BUFFER_USAGE_STORAGE_BUFFER_BIT);
    }
    assert_int_equal(h.memory, handle_bits(&t.memory, sizeof t.memory));
    assert_int_equal(h.offset, t.offset);
    assert_true(t.size >= (image ? 1 : res[r].bytes));
    uint64_t base = engine_memory ? 256 : 0; /* where the test allocator puts blocks (>= 256) */
    if (plan->mode == TG_MODE_OFFSETS) assert_true(t.offset >= base + plan->offset_of[r]);
    else if (!engine_memory) assert_int_equal(t.offset, 0);
    if (engine_memory && !test_memory_owns(engine_memory, t.memory, t.offset, t.size))
      fail_msg("record %zu: [%llu, +%llu) is in no block of the engine's allocator", r,
               (unsigned long long)t.offset, (unsigned long long)t.size);
  }
  tg_vulkan_tensor t;
  assert_int_equal(tg_vulkan_get_tensor(z, count, &t), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_vulkan_get_tensor(NULL, 0, &t), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_vulkan_get_tensor(z, 0, NULL), TG_ERROR_INVALID_ARGUMENT);
}

typedef struct case_result {
  uint64_t allocations, bytes, corrupted, ooo_corrupted;
  size_t records, reuse_edges;
} case_result;

/* Realise a plan on the borrowed device and check it in order and out of order (the
 * scheduler's waits as events) on the engine's queue. */
static void realise_and_check(tg_device *d, engine *e, const tg_test_model *m,
                              const tg_record_set *set, const tg_record_set *planned,
                              const uint32_t *tensor_of, const tg_tensor_resource *res,
                              const tg_plan *plan, const test_memory *engine_memory,
                              case_result *out) {
  tg_error_info err = {{0}};
  tg_realize_desc desc = {plan, planned->records, planned->count, planned->dims, res,
                          TG_PRECISION_FP32, 0};
  tg_realization *z = NULL;
  if (tg_realization_create(d, &desc, NULL, &z, &err) != TG_OK)
    fail_msg("%s: realize: %s", m->name, err.message);
  const tg_realization_stats stats = tg_test_realization_counts(z, plan, set->count);
  out->allocations += stats.allocations;
  out->bytes += stats.allocated_bytes;
  check_handles(z, plan, res, set->count, TG_PRECISION_FP32, engine_memory);

  uint64_t *mism = calloc(set->count + 1, sizeof *mism);
  assert_non_null(mism);
  tg_check_desc cd = {m->model->graph, tensor_of, 0, 0, NULL, NULL};
  tg_check_result in_order = {0, mism, 0};
  if (tg_realization_check(z, &cd, &in_order, &err) != TG_OK)
    fail_msg("%s: check: %s", m->name, err.message);
  for (size_t r = 0; r < set->count; ++r)
    if (mism[r]) print_error("%s: record %zu corrupted: %llu mismatches\n", m->name, r,
                             (unsigned long long)mism[r]);
  out->corrupted += in_order.corrupted_records;
  assert_int_equal(in_order.corrupted_records, 0);
  assert_true(in_order.checked_bytes > 0);
  assert_no_messages(e, m->name);

  tg_waits *w = NULL;
  if (tg_schedule_compute_waits(m->schedule, planned->records, tensor_of, set->count, plan, NULL,
                                &w, &err) != TG_OK)
    fail_msg("%s: waits: %s", m->name, err.message);
  out->reuse_edges += w->reuse_edge_count;
  tg_test_op_waits ow;
  tg_test_op_waits_build(w, 1, &ow);
  tg_check_desc od = {m->model->graph, tensor_of, 1, ow.op_count, ow.counts, ow.lists};
  tg_check_result ooo = {0, mism, 0};
  memset(mism, 0, (set->count + 1) * sizeof *mism);
  if (tg_realization_check(z, &od, &ooo, &err) != TG_OK)
    fail_msg("%s: out-of-order check: %s", m->name, err.message);
  out->ooo_corrupted += ooo.corrupted_records;
  assert_int_equal(ooo.corrupted_records, 0);
  assert_int_equal(ooo.checked_bytes, in_order.checked_bytes);
  assert_no_messages(e, m->name);
  tg_test_op_waits_free(&ow);
  tg_waits_destroy(w);
  free(mism);
  tg_realization_destroy(z);
  assert_int_equal(live_objects(d), 0);
}

/* One case of the matrix: the model's records in `storage` (in offsets mode with the buffers
 * of tensors too large for the textures in the same arena; in objects mode those get their
 * own plan), planned under `policy`, realised and checked. */
static void run_case(tg_device *d, engine *e, const tg_test_model *m, tg_storage storage,
                     tg_mode mode, tg_policy policy, const test_memory *engine_memory,
                     case_result *out) {
  memset(out, 0, sizeof *out);
  const tg_device_info *info = tg_device_get_info(d);
  tg_model_records *mr = tg_test_model_records(m, storage, TG_PRECISION_FP32, &info->limits);
  const tg_record_set *set = mr->records;
  tg_tensor_resource *res = tg_test_resources_for(set, storage, TG_PRECISION_FP32);
  const uint32_t *tensor_of = mr->tensor_of;
  tg_record_set *all = NULL;
  uint32_t *all_tensor_of = NULL;
  if (mode == TG_MODE_OFFSETS && mr->fallback->count) {
    size_t n = set->count + mr->fallback->count;
    assert_int_equal(tg_record_set_create(set->dims, n, NULL, &all), TG_OK);
    all_tensor_of = calloc(n, sizeof *all_tensor_of);
    res = realloc(res, n * sizeof *res);
    assert_true(all_tensor_of && res);
    for (size_t r = 0; r < n; ++r) {
      int primary = r < set->count;
      const tg_usage_record *src = primary ? &set->records[r] : &mr->fallback->records[r - set->count];
      all->records[r] = *src;
      all_tensor_of[r] = primary ? mr->tensor_of[r] : mr->fallback_tensor_of[r - set->count];
      if (!primary) res[r] = (tg_tensor_resource){TG_STORAGE_BUFFER, {src->size.w, 1, 1}, src->size.w};
    }
    set = all;
    tensor_of = all_tensor_of;
  }
  out->records = set->count;
  tg_policy_relation *rel = NULL;
  assert_int_equal(tg_policy_relation_create(m->schedule, policy, tensor_of, set->count, NULL, &rel),
                   TG_OK);
  tg_record_set *arena = NULL;
  tg_plan *plan = tg_test_plan_for_device(d, set, res, TG_PRECISION_FP32, mode, tg_policy_relation_get(rel), 0, &arena);
  realise_and_check(d, e, m, set, arena ? arena : set, tensor_of, res, plan, engine_memory, out);
  tg_plan_destroy(plan);
  tg_record_set_destroy(arena);
  tg_policy_relation_destroy(rel);
  if (mode == TG_MODE_OBJECTS && mr->fallback->count) {
    tg_tensor_resource *fres = tg_test_resources_for(mr->fallback, TG_STORAGE_BUFFER, TG_PRECISION_FP32);
    assert_int_equal(tg_policy_relation_create(m->schedule, policy, mr->fallback_tensor_of,
                                               mr->fallback->count, NULL, &rel),
                     TG_OK);
    plan = tg_test_plan_for_device(d, mr->fallback, fres, TG_PRECISION_FP32, mode, tg_policy_relation_get(rel), 0,
                                   &arena);
    realise_and_check(d, e, m, mr->fallback, mr->fallback, mr->fallback_tensor_of, fres, plan,
                      engine_memory, out);
    tg_plan_destroy(plan);
    tg_policy_relation_destroy(rel);
    free(fres);
  }
  free(res);
  free(all_tensor_of);
  tg_record_set_destroy(all);
  tg_model_records_destroy(mr);
}

/* ------------------------------------------------------------------------------------------ */
/* Setup. */

typedef struct suite {
  int have_device;
} suite;

static int suite_setup(void **state) {
  suite *s = calloc(1, sizeof *s);
  if (s == NULL) return -1;
  engine e;
  char why[256] = "";
  if (engine_create(&e, 1, why, sizeof why)) {
    s->have_device = 1;
  } else if (tg_test_in_ci()) {
    fprintf(stderr, "FAILURE: no usable Vulkan device (with validation layers) under CI: %s\n", why);
    engine_destroy(&e);
    free(s);
    return -1;
  } else {
    fprintf(stderr,
            "\n*** SKIPPING the borrowed Vulkan device tests: %s. Install a Vulkan driver and "
            "the validation layers (scripts/setup.sh installs lavapipe and "
            "vulkan-validationlayers) to run them. ***\n\n",
            why);
  }
  engine_destroy(&e);
  *state = s;
  return 0;
}

static int suite_teardown(void **state) {
  free(*state);
  return 0;
}

#define REQUIRE_DEVICE(s)          \
  do {                             \
    if (!(s)->have_device) skip(); \
  } while (0)

static void new_engine(engine *e) {
  char why[256];
  if (!engine_create(e, 1, why, sizeof why)) fail_msg("engine: %s", why);
}

/* ------------------------------------------------------------------------------------------ */
/* Tests. */

/* What the wrapped device says of itself matches a device Tangram opens on its own; Tangram
 * makes its objects with the engine's allocation callbacks and gives them all back; the
 * engine's own dispatch runs before, between and after. */
static void wrapped_device_describes_and_gives_back(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  engine e;
  new_engine(&e);
  engine_dispatch(&e, "before wrapping");
  wrapped w;
  wrapped_init(&w, &e, 0);
  tg_device *d = wrap_device(&w, NULL);
  const tg_device_info *i = tg_device_get_info(d);
  print_message("wrapped: %s (%s), %s; images %d, fp16 %d, arena images %d, out of order %d\n",
                i->name, i->kind, i->driver, i->images, i->fp16_images, i->arena_images,
                i->out_of_order);
  assert_int_equal(i->backend, TG_BACKEND_VULKAN);
  VkPhysicalDeviceProperties props;
  e.GetPhysicalDeviceProperties(e.physical, &props);
  assert_string_equal(i->name, props.deviceName);
  assert_true(i->images && i->arena_images && i->out_of_order);
  assert_true(i->buffer_alignment >= 1 && i->memory_budget > 0);
  assert_int_equal(tg_device_get_validation_messages(d), 0);
  /* The same description as a device Tangram opens itself on the same driver. */
  tg_device_options opt = {0};
  opt.backend = TG_BACKEND_VULKAN;
  tg_device *own = NULL;
  tg_error_info err = {{0}};
  if (tg_device_open(&opt, NULL, &own, NULL, NULL, &err) == TG_OK) {
    const tg_device_info *o = tg_device_get_info(own);
    if (strcmp(o->name, i->name) == 0) {
      assert_int_equal(o->buffer_alignment, i->buffer_alignment);
      assert_int_equal(o->image_alignment, i->image_alignment);
      assert_int_equal(o->limits.max_texture_2d_width, i->limits.max_texture_2d_width);
      assert_int_equal(o->images, i->images);
      assert_int_equal(o->fp16_images, i->fp16_images);
    }
    tg_device_close(own);
  }
  assert_true(atomic_load(&w.counting.total) > 0); /* the probes went through the callbacks */
  engine_dispatch(&e, "while wrapped");
  close_wrapped(d, &w, &e, "after close");
  print_message("%llu host blocks through the engine's VkAllocationCallbacks, all given back\n",
                (unsigned long long)atomic_load(&w.counting.total));
  /* Wrapped twice at once, and again after closing: independent devices. */
  wrapped w2;
  wrapped_init(&w2, &e, 1);
  tg_device *a = wrap_device(&w, NULL), *b = wrap_device(&w2, NULL);
  close_wrapped(a, &w, &e, "first of two");
  close_wrapped(b, &w2, &e, "second of two");
  engine_destroy_clean(&e);
}

/* The engine's messenger hears the layer, synchronization validation included: a copy that
 * reads what a dispatch wrote, with no barrier between them, is a read-after-write hazard.
 * (Without this, "0 validation messages" elsewhere would prove nothing.) */
static void engine_messenger_hears_hazards(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  engine e;
  new_engine(&e);
  VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  assert_int_equal(e.BeginCommandBuffer(e.command_buffer, &bi), VK_SUCCESS);
  e.CmdBindPipeline(e.command_buffer, VK_PIPELINE_BIND_POINT_COMPUTE, e.pipeline);
  e.CmdBindDescriptorSets(e.command_buffer, VK_PIPELINE_BIND_POINT_COMPUTE, e.pipeline_layout, 0,
                          1, &e.set, 0, NULL);
  uint32_t params[6] = {1, ENGINE_WORDS, 0, 0, 0, 0};
  e.CmdPushConstants(e.command_buffer, e.pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                     sizeof params, params);
  e.CmdDispatch(e.command_buffer, 4, 1, 1);
  VkBufferCopy copy = {0, ENGINE_WORDS * 2, ENGINE_WORDS}; /* reads what the dispatch wrote */
  e.CmdCopyBuffer(e.command_buffer, e.buffer, e.buffer, 1, &copy); /* no barrier: a hazard */
  assert_int_equal(e.EndCommandBuffer(e.command_buffer), VK_SUCCESS);
  uint64_t n = atomic_load(&e.messages);
  print_message("a copy unordered after a dispatch: %llu message(s), the first: %s\n",
                (unsigned long long)n, e.first_message);
  assert_true(n >= 1);
  assert_non_null(strstr(e.first_message, "SYNC-HAZARD-READ-AFTER-WRITE"));
  engine_destroy(&e);
}

/* Wrong borrowed objects are clear errors; nothing is created and nothing borrowed touched. */
static void wrong_borrowed_objects_are_refused(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  engine e, other;
  new_engine(&e);
  char why[256];
  if (!engine_create(&other, 0, why, sizeof why)) fail_msg("second engine: %s", why);
  /* engine_create pointed the hooks at the second engine: point them back. */
  g_hooks.real_gipa = e.gipa;
  g_hooks.real_gdpa = e.GetDeviceProcAddr;
  g_hooks.real_allocate_memory = e.AllocateMemory;
  g_hooks.real_format_properties = e.GetPhysicalDeviceFormatProperties;
  g_hooks.real_queue_families = e.GetPhysicalDeviceQueueFamilyProperties;
  wrapped w;
  wrapped_init(&w, &e, 1);
  tg_device *d = (tg_device *)(void *)&w; /* must come back NULL */
  tg_error_info err = {{0}};
  struct {
    const char *what;
    tg_vulkan_device_desc desc;
    tg_status want;
    const char *says;
  } cases[12];
  size_t n = 0;
  tg_vulkan_memory_callbacks half = {engine_block_allocate, NULL, &w.memory};
#define CASE(WHAT, FIELD, VALUE, WANT, SAYS)          \
  do {                                                \
    cases[n].what = WHAT;                             \
    cases[n].desc = w.desc;                           \
    cases[n].desc.FIELD = VALUE;                      \
    cases[n].want = WANT;                             \
    cases[n].says = SAYS;                             \
    ++n;                                              \
  } while (0)
  CASE("no entry point", get_instance_proc_addr, NULL, TG_ERROR_INVALID_ARGUMENT, "get_instance_proc_addr is NULL");
  CASE("no instance", instance, VK_NULL_HANDLE, TG_ERROR_INVALID_ARGUMENT, "instance is NULL");
  CASE("no physical device", physical_device, VK_NULL_HANDLE, TG_ERROR_INVALID_ARGUMENT, "physical_device is NULL");
  CASE("no device", device, VK_NULL_HANDLE, TG_ERROR_INVALID_ARGUMENT, "device is NULL");
  CASE("no queue", queue, VK_NULL_HANDLE, TG_ERROR_INVALID_ARGUMENT, "queue is NULL");
  CASE("half the memory callbacks", memory, &half, TG_ERROR_INVALID_ARGUMENT, "memory->allocate or ->free");
  CASE("family out of range", queue_family_index, 7, TG_ERROR_INVALID_ARGUMENT, "out of range");
  CASE("another instance's physical device", physical_device, other.physical, TG_ERROR_INVALID_ARGUMENT,
       "is not one of");
#undef CASE
  for (size_t c = 0; c < n; ++c) {
    d = (tg_device *)(void *)&w;
    memset(&err, 0, sizeof err);
    tg_status st = tg_device_wrap_vulkan(&cases[c].desc, NULL, &d, &err);
    print_message("%-36s %s: %s\n", cases[c].what, tg_status_name(st), err.message);
    assert_int_equal(st, cases[c].want);
    assert_null(d);
    assert_non_null(strstr(err.message, cases[c].says));
  }
  assert_int_equal(tg_device_wrap_vulkan(NULL, NULL, &d, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "desc is NULL"));
  assert_int_equal(tg_device_wrap_vulkan(&w.desc, NULL, NULL, &err), TG_ERROR_INVALID_ARGUMENT);
  /* A queue family without compute. */
  g_hooks.hide_compute = 1;
  tg_status st = tg_device_wrap_vulkan(&w.desc, NULL, &d, &err);
  g_hooks.hide_compute = 0;
  print_message("%-36s %s: %s\n", "a family without compute", tg_status_name(st), err.message);
  assert_int_equal(st, TG_ERROR_INVALID_ARGUMENT);
  assert_null(d);
  assert_non_null(strstr(err.message, "has no compute"));
  /* An entry point that gives nothing. */
  g_hooks.give_nothing = 1;
  st = tg_device_wrap_vulkan(&w.desc, NULL, &d, &err);
  g_hooks.give_nothing = 0;
  print_message("%-36s %s: %s\n", "an entry point giving nothing", tg_status_name(st), err.message);
  assert_int_equal(st, TG_ERROR_NO_LOADER);
  assert_null(d);
  assert_int_equal(atomic_load(&w.counting.live), 0);
  assert_int_equal(w.memory.allocations, 0);
  engine_dispatch(&e, "after the refusals");
  engine_destroy(&other);
  engine_destroy_clean(&e);
}

/* A device without storage images (the entry point hides them) opens, realises buffers, and
 * refuses a plan with textures at realisation, naming the record. */
static void textures_need_storage_images(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  engine e;
  new_engine(&e);
  wrapped w;
  wrapped_init(&w, &e, 1);
  g_hooks.hide_storage_images = 1;
  tg_device *d = wrap_device(&w, NULL);
  g_hooks.hide_storage_images = 0;
  const tg_device_info *i = tg_device_get_info(d);
  assert_int_equal(i->images, 0);
  assert_int_equal(i->fp16_images, 0);
  assert_int_equal(i->arena_images, 0);
  tg_usage_record recs[2] = {{{8, 8, 1}, 0, 1, 0}, {{8, 8, 1}, 2, 3, 0}};
  tg_tensor_resource res[2] = {{TG_STORAGE_TEXTURE_2D, {8, 8, 1}, 8 * 8 * 16},
                               {TG_STORAGE_TEXTURE_2D, {8, 8, 1}, 8 * 8 * 16}};
  tg_plan *plan = NULL;
  tg_plan_options opt = {0};
  opt.strategy = TG_STRATEGY_BEST;
  assert_int_equal(tg_plan_compute(recs, 2, 2, &opt, NULL, &plan), TG_OK);
  tg_realize_desc desc = {plan, recs, 2, 2, res, TG_PRECISION_FP32, 0};
  tg_realization *z = NULL;
  tg_error_info err = {{0}};
  tg_status st = tg_realization_create(d, &desc, NULL, &z, &err);
  print_message("textures without storage images: %s: %s\n", tg_status_name(st), err.message);
  assert_int_equal(st, TG_ERROR_UNSUPPORTED);
  assert_null(z);
  assert_non_null(strstr(err.message, "no image support"));
  assert_non_null(strstr(err.message, "record 0"));
  tg_plan_destroy(plan);
  /* Buffers still work. */
  tg_usage_record brecs[2] = {{{1000, 1, 1}, 0, 1, 0}, {{1000, 1, 1}, 2, 3, 0}};
  tg_tensor_resource bres[2] = {{TG_STORAGE_BUFFER, {1000, 1, 1}, 1000}, {TG_STORAGE_BUFFER, {1000, 1, 1}, 1000}};
  assert_int_equal(tg_plan_compute(brecs, 2, 1, &opt, NULL, &plan), TG_OK);
  tg_realize_desc bdesc = {plan, brecs, 2, 1, bres, TG_PRECISION_FP32, 0};
  assert_int_equal(tg_realization_create(d, &bdesc, NULL, &z, &err), TG_OK);
  tg_test_check_clean(z);
  tg_plan_destroy(plan);
  close_wrapped(d, &w, &e, "without storage images");
  engine_destroy_clean(&e);
}

/* Extra usage asked by the engine (sampled images, uniform buffers) is on every resource. */
static void engine_usage_is_added(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  engine e;
  new_engine(&e);
  wrapped w;
  wrapped_init(&w, &e, 1);
  w.desc.buffer_usage = VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT;
  w.desc.image_usage = VK_IMAGE_USAGE_SAMPLED_BIT;
  tg_device *d = wrap_device(&w, NULL);
  assert_true(tg_device_get_info(d)->images);
  tg_usage_record recs[3] = {{{256, 1, 1}, 0, 1, 0}, {{256, 1, 1}, 1, 2, 0}, {{256, 1, 1}, 2, 3, 0}};
  tg_tensor_resource res[3] = {{TG_STORAGE_BUFFER, {256, 1, 1}, 256},
                               {TG_STORAGE_TEXTURE_2D, {4, 4, 1}, 256},
                               {TG_STORAGE_TEXTURE_3D, {2, 2, 4}, 256}};
  tg_record_set set = {1, 3, recs, NULL, *tg_allocator_default()};
  tg_record_set *arena = NULL;
  tg_plan *plan = tg_test_plan_for_device(d, &set, res, TG_PRECISION_FP32, TG_MODE_OFFSETS, NULL, 0, &arena);
  tg_realize_desc desc = {plan, arena->records, 3, 1, res, TG_PRECISION_FP32, 0};
  tg_realization *z = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(tg_realization_create(d, &desc, NULL, &z, &err), TG_OK);
  tg_vulkan_tensor t;
  assert_int_equal(tg_vulkan_get_tensor(z, 0, &t), TG_OK);
  assert_true(t.buffer_usage & VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT);
  assert_true(t.buffer_usage & VK_BUFFER_USAGE_STORAGE_BUFFER_BIT);
  assert_int_equal(tg_vulkan_get_tensor(z, 1, &t), TG_OK);
  assert_true(t.image_usage & VK_IMAGE_USAGE_SAMPLED_BIT);
  assert_true(t.image_usage & VK_IMAGE_USAGE_STORAGE_BIT);
  check_handles(z, plan, res, 3, TG_PRECISION_FP32, &w.memory);
  tg_test_check_clean(z);
  tg_plan_destroy(plan);
  tg_record_set_destroy(arena);
  /* Another backend's realization has no Vulkan handles. */
  tg_device_options ho = {0};
  ho.backend = TG_BACKEND_HOST;
  tg_device *host = NULL;
  assert_int_equal(tg_device_open(&ho, NULL, &host, NULL, NULL, &err), TG_OK);
  assert_int_equal(tg_plan_compute(recs, 3, 1, NULL, NULL, &plan), TG_OK);
  tg_tensor_resource hres[3] = {res[0], res[0], res[0]};
  tg_realize_desc hdesc = {plan, recs, 3, 1, hres, TG_PRECISION_FP32, 0};
  assert_int_equal(tg_realization_create(host, &hdesc, NULL, &z, &err), TG_OK);
  assert_int_equal(tg_vulkan_get_tensor(z, 0, &t), TG_ERROR_UNSUPPORTED);
  tg_realization_destroy(z);
  tg_plan_destroy(plan);
  tg_device_close(host);
  close_wrapped(d, &w, &e, "extra usage");
  engine_destroy_clean(&e);
}

/* The model matrix on the borrowed device: with the engine's memory allocator, and with
 * Tangram's own vkAllocateMemory. */
static void borrowed_models_realise_clean(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  static const tg_policy policies[] = {TG_POLICY_SERIAL, TG_POLICY_PARALLEL_SAFE};
  size_t cases = 0, corrupted = 0;
  for (int engine_memory = 1; engine_memory >= 0; --engine_memory) {
    engine e;
    new_engine(&e);
    wrapped w;
    wrapped_init(&w, &e, engine_memory);
    tg_device *d = wrap_device(&w, NULL);
    g_hooks.tangram_allocate_memory = 0;
    print_message("%s memory:\n", engine_memory ? "the engine's" : "Tangram's own");
    print_message("%-27s %-13s %-7s %-13s %4s %5s %10s %4s %4s %5s\n", "model", "storage", "mode",
                  "policy", "recs", "alloc", "bytes", "corr", "ooo", "reuse");
    size_t models = tg_test_quick() ? 1 : (engine_memory ? TG_TEST_GPU_MODEL_COUNT : 1);
    for (size_t mi = 0; mi < models; ++mi) {
      tg_test_model md;
      /* Tangram's own memory: one model (the other path of the same code). */
      if (!tg_test_model_open(tg_test_gpu_models[engine_memory ? mi : TG_TEST_GPU_MODEL_COUNT - 1], &md)) continue;
      for (size_t si = 0; si < TG_TEST_GPU_STORAGE_COUNT; ++si)
        for (int mode = 0; mode < 2; ++mode)
          for (size_t pi = 0; pi < 2; ++pi) {
            if (tg_test_quick() && (si + (size_t)mode + pi) % 2) continue;
            case_result r;
            run_case(d, &e, &md, tg_test_gpu_storages[si], (tg_mode)mode, policies[pi],
                     engine_memory ? &w.memory : NULL, &r);
            print_message("%-27s %-13s %-7s %-13s %4zu %5llu %10llu %4llu %4llu %5zu\n", md.name,
                          tg_storage_name(tg_test_gpu_storages[si]), tg_mode_name((tg_mode)mode),
                          tg_policy_name(policies[pi]), r.records, (unsigned long long)r.allocations,
                          (unsigned long long)r.bytes, (unsigned long long)r.corrupted,
                          (unsigned long long)r.ooo_corrupted, r.reuse_edges);
            corrupted += r.corrupted + r.ooo_corrupted;
            ++cases;
          }
      tg_test_model_close(&md);
    }
    if (engine_memory) {
      /* Every device allocation came from the engine: none of Tangram's own. */
      print_message("engine memory: %llu blocks (%llu host-visible for the check's counters), "
                    "Tangram's own vkAllocateMemory calls: %llu\n",
                    (unsigned long long)w.memory.allocations,
                    (unsigned long long)w.memory.host_allocations,
                    (unsigned long long)g_hooks.tangram_allocate_memory);
      assert_true(w.memory.allocations > 0 && w.memory.host_allocations > 0);
      assert_int_equal(g_hooks.tangram_allocate_memory, 0);
      assert_int_equal(w.memory.live, 0);
    } else {
      assert_true(g_hooks.tangram_allocate_memory > 0);
      assert_int_equal(w.memory.allocations, 0);
    }
    uint64_t host_blocks = atomic_load(&w.counting.total);
    close_wrapped(d, &w, &e, "after the matrix");
    print_message("%llu host blocks through the VkAllocationCallbacks, all given back; the "
                  "engine's dispatch after close: correct\n", (unsigned long long)host_blocks);
    engine_destroy_clean(&e);
  }
  print_message("%zu borrowed cases, %zu corrupted, 0 validation messages\n", cases, corrupted);
}

/* Blocks that break their request are given back and refused; an engine allocator that runs
 * out fails the realisation cleanly. */
static void engine_memory_errors_are_clean(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  engine e;
  new_engine(&e);
  tg_usage_record recs[2] = {{{4096, 1, 1}, 0, 1, 0}, {{4096, 1, 1}, 2, 3, 0}};
  tg_tensor_resource res[2] = {{TG_STORAGE_BUFFER, {4096, 1, 1}, 4096},
                               {TG_STORAGE_BUFFER, {4096, 1, 1}, 4096}};
  struct {
    int misbehave;
    uint64_t fail_at;
    tg_status want;
  } cases[] = {{1, 0, TG_ERROR_DEVICE}, {2, 0, TG_ERROR_DEVICE}, {0, 1, TG_ERROR_OUT_OF_DEVICE_MEMORY}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    wrapped w;
    wrapped_init(&w, &e, 1);
    tg_device *d = wrap_device(&w, NULL);
    tg_record_set set = {1, 2, recs, NULL, *tg_allocator_default()};
    tg_record_set *arena = NULL;
    tg_plan *plan = tg_test_plan_for_device(d, &set, res, TG_PRECISION_FP32, TG_MODE_OFFSETS, NULL, 0, &arena);
    w.memory.misbehave = cases[c].misbehave;
    w.memory.fail_at = cases[c].fail_at;
    tg_realize_desc desc = {plan, arena->records, 2, 1, res, TG_PRECISION_FP32, 0};
    tg_realization *z = NULL;
    tg_error_info err = {{0}};
    tg_status st = tg_realization_create(d, &desc, NULL, &z, &err);
    print_message("engine block %s: %s: %s\n",
                  cases[c].misbehave == 1 ? "misaligned" : cases[c].misbehave == 2 ? "of a wrong type"
                                                                                   : "refused",
                  tg_status_name(st), err.message);
    assert_int_equal(st, cases[c].want);
    assert_null(z);
    assert_int_equal(w.memory.live, 0);
    /* The shadow run's host-visible blocks: a block without a mapping is refused too. */
    w.memory.misbehave = 0;
    w.memory.fail_at = 0;
    assert_int_equal(tg_realization_create(d, &desc, NULL, &z, &err), TG_OK);
    w.memory.misbehave = 3;
    tg_check_result r = {0, NULL, 0};
    st = tg_realization_check(z, NULL, &r, &err);
    print_message("counter block without a mapping: %s: %s\n", tg_status_name(st), err.message);
    assert_int_equal(st, TG_ERROR_DEVICE);
    w.memory.misbehave = 0;
    assert_int_equal(tg_realization_check(z, NULL, &r, &err), TG_OK);
    assert_int_equal(r.corrupted_records, 0);
    tg_realization_destroy(z);
    tg_plan_destroy(plan);
    tg_record_set_destroy(arena);
    close_wrapped(d, &w, &e, "engine memory errors");
  }
  engine_destroy_clean(&e);
}

/* The walks: each failure point a clean TG_ERROR_OUT_OF_DEVICE_MEMORY with nothing left
 * behind (Tangram's count of live objects, the engine's blocks, its allocation callbacks) and
 * the engine's own dispatch still correct; past the last point, the realisation checks clean. */
static void walk_case(engine *e, const tg_test_model *md, tg_storage storage, tg_mode mode,
                      uint64_t *points) {
  wrapped w;
  wrapped_init(&w, e, 1);
  tg_device *dev = wrap_device(&w, NULL);
  tg_model_records *mr = NULL;
  tg_error_info err = {{0}};
  mr = tg_test_model_records(md, storage, TG_PRECISION_FP32, &tg_device_get_info(dev)->limits);
  const tg_record_set *set = mr->records;
  tg_tensor_resource *res = tg_test_resources_for(set, storage, TG_PRECISION_FP32);
  tg_record_set *arena = NULL;
  tg_plan *plan = tg_test_plan_for_device(dev, set, res, TG_PRECISION_FP32, mode, NULL, 0, &arena);
  const tg_record_set *planned = arena ? arena : set;
  tg_realize_desc desc = {plan, planned->records, planned->count, planned->dims, res,
                          TG_PRECISION_FP32, 0};
  int64_t callbacks_before = atomic_load(&w.counting.live);
  char when[160];

  /* 1. Every device object creation of the generic layer (a fresh wrapped device each). */
  uint64_t n;
  for (n = 1;; ++n) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, 0);
    wrapped wf;
    wrapped_init(&wf, e, 1);
    wf.desc.fail_device_alloc_at = n;
    tg_device *d = wrap_device(&wf, &fa.base);
    tg_realization *z = NULL;
    tg_status st = tg_realization_create(d, &desc, &fa.base, &z, &err);
    snprintf(when, sizeof when, "%s %s %s: creation %llu", md->name, tg_storage_name(storage),
             tg_mode_name(mode), (unsigned long long)n);
    if (st == TG_OK) {
      tg_test_check_clean(z);
      close_wrapped(d, &wf, e, when);
      assert_int_equal(fa.live_blocks, 0);
      break;
    }
    if (st != TG_ERROR_OUT_OF_DEVICE_MEMORY) fail_msg("%s: %s", when, err.message);
    assert_null(z);
    assert_non_null(strstr(err.message, "TANGRAM_FAIL_DEVICE_ALLOC_AT"));
    assert_int_equal(wf.memory.live, 0);
    close_wrapped(d, &wf, e, when);
    assert_int_equal(fa.live_blocks, 0);
  }
  assert_int_equal(n - 1, (mode == TG_MODE_OBJECTS ? plan->object_count : 1) + set->count);
  *points += n - 1;

  /* 2. Every driver call inside allocate and bind, on one device. */
  void *impl = tg__device_impl(dev);
  tg__vulkan_fail_call_at(impl, 0);
  tg_realization *z = NULL;
  assert_int_equal(tg_realization_create(dev, &desc, NULL, &z, &err), TG_OK);
  uint64_t calls = tg__vulkan_calls(impl);
  tg_realization_destroy(z);
  for (uint64_t k = 1; k <= calls; ++k) {
    tg__vulkan_fail_call_at(impl, k);
    tg_status st = tg_realization_create(dev, &desc, NULL, &z, &err);
    if (st != TG_ERROR_OUT_OF_DEVICE_MEMORY)
      fail_msg("driver call %llu of %llu: %s: %s", (unsigned long long)k, (unsigned long long)calls,
               tg_status_name(st), err.message);
    assert_null(z);
    if (live_objects(dev) != 0 || w.memory.live != 0)
      fail_msg("driver call %llu: %lld objects, %lld engine blocks left", (unsigned long long)k,
               (long long)live_objects(dev), (long long)w.memory.live);
    if (atomic_load(&w.counting.live) != callbacks_before)
      fail_msg("driver call %llu: %lld VkAllocationCallbacks blocks left", (unsigned long long)k,
               (long long)(atomic_load(&w.counting.live) - callbacks_before));
  }
  tg__vulkan_fail_call_at(impl, 0);
  *points += calls;

  /* 3. Every allocation of the engine's allocator, the check's counters included. */
  uint64_t blocks;
  w.memory.allocations = 0;
  assert_int_equal(tg_realization_create(dev, &desc, NULL, &z, &err), TG_OK);
  tg_check_result r = {0, NULL, 0};
  assert_int_equal(tg_realization_check(z, NULL, &r, &err), TG_OK);
  tg_realization_destroy(z);
  blocks = w.memory.allocations;
  for (uint64_t k = 1; k <= blocks; ++k) {
    w.memory.allocations = 0;
    w.memory.fail_at = k;
    tg_status st = tg_realization_create(dev, &desc, NULL, &z, &err);
    if (st == TG_OK) { /* the failure falls in the check */
      st = tg_realization_check(z, NULL, &r, &err);
      assert_int_equal(st, TG_ERROR_OUT_OF_DEVICE_MEMORY);
      assert_int_equal(live_objects(dev) > 0, 1); /* the realisation itself is still there */
      tg_realization_destroy(z);
    } else {
      assert_int_equal(st, TG_ERROR_OUT_OF_DEVICE_MEMORY);
      assert_null(z);
    }
    if (live_objects(dev) != 0 || w.memory.live != 0)
      fail_msg("engine block %llu: %lld objects, %lld engine blocks left", (unsigned long long)k,
               (long long)live_objects(dev), (long long)w.memory.live);
  }
  w.memory.fail_at = 0;
  *points += blocks;
  snprintf(when, sizeof when, "%s %s %s walks", md->name, tg_storage_name(storage), tg_mode_name(mode));
  engine_dispatch(e, when);
  print_message("%s %s %s: %llu creations, %llu driver calls, %llu engine blocks: each failure "
                "rolled back\n",
                md->name, tg_storage_name(storage), tg_mode_name(mode), (unsigned long long)(n - 1),
                (unsigned long long)calls, (unsigned long long)blocks);
  tg_plan_destroy(plan);
  tg_record_set_destroy(arena);
  free(res);
  tg_model_records_destroy(mr);
  close_wrapped(dev, &w, e, when);
}

static void borrowed_alloc_failures_roll_back(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  tg_test_model md;
  if (!tg_test_model_open(tg_test_quick() ? "face_detection_short_range" : "pose_landmark_lite", &md)) skip();
  engine e;
  new_engine(&e);
  uint64_t points = 0;
  for (size_t si = 0; si < TG_TEST_GPU_STORAGE_COUNT; ++si)
    for (int mode = 0; mode < 2; ++mode) {
      if (tg_test_quick() && !((si == 0 && mode == 0) || (si == 1 && mode == 1))) continue;
      walk_case(&e, &md, tg_test_gpu_storages[si], (tg_mode)mode, &points);
    }
  print_message("%llu failure points in all, the engine's device correct after each walk\n",
                (unsigned long long)points);
  tg_test_model_close(&md);
  engine_destroy_clean(&e);
}

/* Every host allocation of wrap + realise + check fails once: a clean status, nothing leaks,
 * nothing of the engine's touched. */
static void borrowed_host_alloc_failures_roll_back(void **state) {
  suite *s = *state;
  REQUIRE_DEVICE(s);
  engine e;
  new_engine(&e);
  tg_usage_record recs[4];
  tg_tensor_resource res[4];
  tg_test_walk_buffers(recs, res);
  tg_plan *plan = NULL;
  tg_plan_options po = {0};
  po.strategy = TG_STRATEGY_BEST;
  assert_int_equal(tg_plan_compute(recs, 4, 1, &po, NULL, &plan), TG_OK);
  uint64_t n;
  for (n = 1;; ++n) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, n);
    wrapped w;
    wrapped_init(&w, &e, 1);
    tg_device *d = NULL;
    tg_status st = tg_device_wrap_vulkan(&w.desc, &fa.base, &d, NULL);
    if (st == TG_OK) st = tg_test_walk_realise_check(d, plan, recs, res, &fa.base);
    if (d) close_wrapped(d, &w, &e, "host failure");
    assert_int_equal(atomic_load(&w.counting.live), 0);
    assert_int_equal(fa.live_blocks, 0);
    if (fa.failures == 0) break;
    assert_true(st == TG_ERROR_OUT_OF_HOST_MEMORY || st == TG_ERROR_OUT_OF_DEVICE_MEMORY);
  }
  print_message("host allocation failure injected at %llu points\n", (unsigned long long)(n - 1));
  assert_true(n > 5);
  tg_plan_destroy(plan);
  engine_dispatch(&e, "after the host walk");
  engine_destroy_clean(&e);
}

int main(int argc, char **argv) {
  tg_test_keep_vulkan_loaded();
  /* `test_vulkan_borrowed PATTERN` runs the tests whose names match. */
  if (argc >= 2) cmocka_set_test_filter(argv[1]);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(engine_messenger_hears_hazards),
      cmocka_unit_test(wrapped_device_describes_and_gives_back),
      cmocka_unit_test(wrong_borrowed_objects_are_refused),
      cmocka_unit_test(textures_need_storage_images),
      cmocka_unit_test(engine_usage_is_added),
      cmocka_unit_test(borrowed_models_realise_clean),
      cmocka_unit_test(engine_memory_errors_are_clean),
      cmocka_unit_test(borrowed_alloc_failures_roll_back),
      cmocka_unit_test(borrowed_host_alloc_failures_roll_back),
  };
  return cmocka_run_group_tests_name("vulkan_borrowed", tests, suite_setup, suite_teardown);
}
#endif
