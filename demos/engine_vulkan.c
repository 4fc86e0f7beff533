/* A small inference engine on Vulkan that lets Tangram place its tensors: the file to copy.
 *
 * The engine owns everything Vulkan: instance, device, queue, shaders, descriptor sets. It
 * builds a 56-op network with branches and joins (pointwise arithmetic, 3x3 depthwise
 * convolutions, a mean reduction, channel concatenations, residual adds), and runs it with
 * real float compute shaders (GLSL in demos/engine_vulkan/, compiled by glslc at build time):
 *   1. naively, one allocation per tensor: the reference outputs;
 *   2. on Tangram's plan, through a Tangram device made of the engine's own objects
 *      (tg_device_wrap_vulkan): every tensor is a VkBuffer or VkImage Tangram created and bound
 *      where the plan says, which the engine binds to its descriptor sets like its own.
 * Planned runs: objects and offsets, each under the serial policy (ops in order, a barrier
 * between ops) and the parallel-safe policy (ops ordered only by the schedule's waits, as
 * events: independent ops may overlap, and reuse never needs more waits). Every output of
 * every planned run must equal the reference bit for bit; with --validation, the validation
 * layer and synchronization validation watch everything and must say nothing. Every plan runs
 * again with in-place pairs (tg_model_in_place_pairs: the network's ops carry TFLite's names, so
 * ADD, MUL and RELU may write over an input that dies there): the pointwise shader reads an
 * element before it writes the same element and declares no `restrict`, so its output binding
 * may alias an input binding, on buffers and on storage images alike.
 *
 *   engine_vulkan [--validation]      exit 0: all equal, no validation message; 1: otherwise;
 *                                     77: no Vulkan device (or no validation layer when asked) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vulkan/vulkan.h>

#include "tangram/backend.h"
#include "tangram/graph.h"
#include "tangram/layout.h"
#include "tangram/planner.h"
#include "tangram/schedule.h"
#include "tangram/vulkan.h"

/* ---- shaders: one per op family, for buffers ([0]) and for 2D images ([1]) ---- */

#define SPV(name) static const uint32_t spv_##name[] =
SPV(pointwise_buffer)
#include "pointwise_buffer.spv.h"
;
SPV(pointwise_image)
#include "pointwise_image.spv.h"
;
SPV(dwconv_buffer)
#include "dwconv_buffer.spv.h"
;
SPV(dwconv_image)
#include "dwconv_image.spv.h"
;
SPV(reduce_buffer)
#include "reduce_buffer.spv.h"
;
SPV(reduce_image)
#include "reduce_image.spv.h"
;
SPV(concat_buffer)
#include "concat_buffer.spv.h"
;
SPV(concat_image)
#include "concat_image.spv.h"
;
SPV(load_buffer)
#include "load_buffer.spv.h"
;
SPV(load_image)
#include "load_image.spv.h"
;
SPV(store_buffer)
#include "store_buffer.spv.h"
;
SPV(store_image)
#include "store_image.spv.h"
;
#undef SPV

enum { SH_POINTWISE, SH_DWCONV, SH_REDUCE, SH_CONCAT, SH_LOAD, SH_STORE, SH_COUNT };
static const struct { const uint32_t *code; size_t size; } k_spv[SH_COUNT][2] = {
    {{spv_pointwise_buffer, sizeof spv_pointwise_buffer}, {spv_pointwise_image, sizeof spv_pointwise_image}},
    {{spv_dwconv_buffer, sizeof spv_dwconv_buffer}, {spv_dwconv_image, sizeof spv_dwconv_image}},
    {{spv_reduce_buffer, sizeof spv_reduce_buffer}, {spv_reduce_image, sizeof spv_reduce_image}},
    {{spv_concat_buffer, sizeof spv_concat_buffer}, {spv_concat_image, sizeof spv_concat_image}},
    {{spv_load_buffer, sizeof spv_load_buffer}, {spv_load_image, sizeof spv_load_image}},
    {{spv_store_buffer, sizeof spv_store_buffer}, {spv_store_image, sizeof spv_store_image}},
};

/* Push constants: the Params block of engine_vulkan/tensor.glsl. */
typedef struct params {
  int32_t out_shape[4], a_shape[4], b_shape[4], arg[4];
  float k[4];
} params;

static void vk_check(VkResult r, const char *what) {
  if (r != VK_SUCCESS) {
    fprintf(stderr, "engine_vulkan: %s failed (VkResult %d)\n", what, (int)r);
    exit(1);
  }
}

static void tg_check(tg_status st, const tg_error_info *err, const char *what) {
  if (st != TG_OK) {
    fprintf(stderr, "engine_vulkan: %s: %s%s%s\n", what, tg_status_string(st),
            err && err->message[0] ? ": " : "", err ? err->message : "");
    exit(1);
  }
}

/* ---- the network: tensors [1, H, W, C] and ops, in execution order ---- */

enum kind { K_LOAD, K_STORE, K_ADD, K_MUL, K_MAX, K_RELU, K_AFFINE, K_SCALE, K_DWCONV, K_MEAN, K_CONCAT };
static const char *const k_kind_names[] = {"LOAD", "STORE", "ADD", "MUL", "MAX", "RELU", "AFFINE",
                                           "SCALE", "DEPTHWISE_CONV_3X3", "MEAN", "CONCATENATION"};

typedef struct net_op {
  enum kind kind;
  int a, b, out;                      /* tensor indices; b = -1 for unary ops */
  int a_first, a_count, b_first;      /* concatenation / slicing, in slices of 4 channels */
  float k0, k1;                       /* affine: scale, bias */
} net_op;

#define MAX_OPS 64
#define MAX_TENSORS 96
typedef struct net {
  int op_count, tensor_count;
  net_op ops[MAX_OPS];
  int w[MAX_TENSORS], h[MAX_TENSORS], c[MAX_TENSORS];
  int input, outputs[4], output_count; /* the engine's own I/O tensors (graph input/outputs) */
} net;

static int add_tensor(net *n, int w, int h, int c) {
  n->w[n->tensor_count] = w;
  n->h[n->tensor_count] = h;
  n->c[n->tensor_count] = c;
  return n->tensor_count++;
}

/* Add an op writing a new tensor of the given shape (or of a's shape when w == 0). */
static int add_op(net *n, enum kind kind, int a, int b, int w, int h, int c, net_op extra) {
  net_op *o = &n->ops[n->op_count++];
  *o = extra;
  o->kind = kind;
  o->a = a;
  o->b = b;
  o->out = add_tensor(n, w ? w : n->w[a], w ? h : n->h[a], w ? c : n->c[a]);
  return o->out;
}
#define OP(n, kind, a, b) add_op(n, kind, a, b, 0, 0, 0, (net_op){0})

static void build_network(net *n) {
  memset(n, 0, sizeof *n);
  const int W = 24, H = 24, C = 16;
  n->input = add_tensor(n, W, H, C);
  int x0 = add_op(n, K_LOAD, n->input, -1, W, H, C, (net_op){0});
  int x = x0;
  for (int block = 0; block < 4; ++block) {
    /* Split the channels; one branch convolves, the other convolves and rescales itself by
     * its own channel means (squeeze and excite); join them and add the block's input. */
    int lo = add_op(n, K_CONCAT, x, -1, W, H, C / 2, (net_op){.a_first = 0, .a_count = C / 8});
    int hi = add_op(n, K_CONCAT, x, -1, W, H, C / 2, (net_op){.a_first = C / 8, .a_count = C / 8});
    int a = OP(n, K_DWCONV, lo, -1);
    a = OP(n, K_RELU, a, -1);
    a = add_op(n, K_AFFINE, a, -1, 0, 0, 0, (net_op){.k0 = 0.5f, .k1 = 0.1f * (float)block});
    int b = add_op(n, K_AFFINE, hi, -1, 0, 0, 0, (net_op){.k0 = 1.5f, .k1 = -0.2f});
    b = OP(n, K_DWCONV, b, -1);
    int mean = add_op(n, K_MEAN, b, -1, 1, 1, C / 2, (net_op){0});
    mean = add_op(n, K_AFFINE, mean, -1, 0, 0, 0, (net_op){.k0 = 0.25f, .k1 = 1.0f});
    b = OP(n, K_SCALE, b, mean);
    int joined = add_op(n, K_CONCAT, a, b, W, H, C, (net_op){.a_first = 0, .a_count = C / 8, .b_first = 0});
    x = OP(n, K_ADD, x, joined);
    if (block == 1) n->outputs[n->output_count++] = OP(n, K_STORE, x, -1);
  }
  n->outputs[n->output_count++] = OP(n, K_STORE, x, -1);
  int g = add_op(n, K_MEAN, x, -1, 1, 1, C, (net_op){0});
  n->outputs[n->output_count++] = OP(n, K_STORE, g, -1);
  int y = OP(n, K_MAX, x, x0); /* x0 lives from the first op to the last: a long skip */
  y = OP(n, K_MUL, y, x);
  n->outputs[n->output_count++] = OP(n, K_STORE, y, -1);
}

/* The same network as a Tangram graph: what the planner, the scheduler and the layouts see. */
static tg_graph *network_graph(const net *n) {
  tg_graph *g = NULL;
  tg_check(tg_graph_create((size_t)n->tensor_count, (size_t)n->op_count, NULL, &g), NULL, "graph");
  for (int t = 0; t < n->tensor_count; ++t) {
    char name[16];
    snprintf(name, sizeof name, "t%d", t);
    int64_t shape[4] = {1, n->h[t], n->w[t], n->c[t]};
    tg_check(tg_graph_set_tensor(g, (size_t)t, name, 4, shape, TG_DTYPE_FLOAT32, 0), NULL, "tensor");
  }
  for (int o = 0; o < n->op_count; ++o) {
    const net_op *op = &n->ops[o];
    int32_t in[2] = {op->a, op->b}, out = op->out;
    tg_check(tg_graph_set_op(g, (size_t)o, k_kind_names[op->kind], op->b >= 0 ? 2 : 1, in, 1, &out),
             NULL, "op");
  }
  uint32_t in = (uint32_t)n->input, outs[4];
  for (int i = 0; i < n->output_count; ++i) outs[i] = (uint32_t)n->outputs[i];
  tg_check(tg_graph_set_io(g, 1, &in, (size_t)n->output_count, outs), NULL, "graph io");
  return g;
}

static int slices(const net *n, int t) { return (n->c[t] + 3) / 4; }
static uint64_t tensor_bytes(const net *n, int t) {
  return (uint64_t)n->w[t] * (uint64_t)n->h[t] * (uint64_t)slices(n, t) * 16u;
}

/* ---- the engine's Vulkan objects ---- */

typedef struct engine {
  VkInstance instance;
  VkDebugUtilsMessengerEXT messenger;
  uint32_t messages;                  /* validation warnings and errors */
  VkPhysicalDevice physical;
  VkPhysicalDeviceMemoryProperties memory;
  uint32_t family;
  VkDevice device;
  VkQueue queue;
  int images;                         /* rgba32f storage images */
  VkDescriptorSetLayout set_layout[2];
  VkPipelineLayout pipeline_layout[2];
  VkPipeline pipelines[SH_COUNT][2];
  VkCommandPool command_pool;
  VkCommandBuffer cmd;
  VkFence fence;
} engine;

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT types,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                 void *user) {
  (void)types;
  (void)severity;
  ((engine *)user)->messages++;
  fprintf(stderr, "validation: %s\n", data->pMessage);
  return VK_FALSE;
}

static int has_layer(const char *name) {
  uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, NULL);
  VkLayerProperties *p = calloc(n ? n : 1, sizeof *p);
  if (p == NULL) return 0;
  vkEnumerateInstanceLayerProperties(&n, p);
  int found = 0;
  for (uint32_t i = 0; i < n; ++i) found |= strcmp(p[i].layerName, name) == 0;
  free(p);
  return found;
}

static uint32_t memory_type(const engine *e, uint32_t bits, VkMemoryPropertyFlags want) {
  for (uint32_t i = 0; i < e->memory.memoryTypeCount; ++i)
    if ((bits & (1u << i)) && (e->memory.memoryTypes[i].propertyFlags & want) == want) return i;
  for (uint32_t i = 0; i < e->memory.memoryTypeCount; ++i) /* any type the resource takes */
    if (bits & (1u << i)) return i;
  fprintf(stderr, "engine_vulkan: no memory type\n");
  exit(1);
}

/* Instance (with validation + synchronization validation when asked), the first device with a
 * compute queue, its queue, and the pipelines. Returns 0 when there is no device. */
static int engine_create(engine *e, int validation) {
  memset(e, 0, sizeof *e);
  VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "engine_vulkan";
  app.apiVersion = VK_API_VERSION_1_1;
  const char *layer = "VK_LAYER_KHRONOS_validation";
  const char *exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME};
  VkValidationFeatureEnableEXT sync = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
  VkValidationFeaturesEXT features = {.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  features.enabledValidationFeatureCount = 1;
  features.pEnabledValidationFeatures = &sync;
  VkDebugUtilsMessengerCreateInfoEXT dbg = {.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  dbg.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                        VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  dbg.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT;
  dbg.pfnUserCallback = on_message;
  dbg.pUserData = e;
  features.pNext = &dbg;
  VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ici.pApplicationInfo = &app;
  if (validation) {
    if (!has_layer(layer)) {
      fprintf(stderr, "engine_vulkan: --validation, but %s is not installed\n", layer);
      return 0;
    }
    ici.pNext = &features;
    ici.enabledLayerCount = 1;
    ici.ppEnabledLayerNames = &layer;
    ici.enabledExtensionCount = 2;
    ici.ppEnabledExtensionNames = exts;
  }
  if (vkCreateInstance(&ici, NULL, &e->instance) != VK_SUCCESS) return 0;
  if (validation) {
    PFN_vkCreateDebugUtilsMessengerEXT create_messenger =
        (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(e->instance, "vkCreateDebugUtilsMessengerEXT");
    vk_check(create_messenger(e->instance, &dbg, NULL, &e->messenger), "vkCreateDebugUtilsMessengerEXT");
  }
  uint32_t count = 8;
  VkPhysicalDevice devices[8];
  vkEnumeratePhysicalDevices(e->instance, &count, devices);
  for (uint32_t i = 0; i < count && e->device == VK_NULL_HANDLE; ++i) {
    uint32_t nf = 8;
    VkQueueFamilyProperties families[8];
    vkGetPhysicalDeviceQueueFamilyProperties(devices[i], &nf, families);
    for (uint32_t f = 0; f < nf; ++f)
      if (families[f].queueFlags & VK_QUEUE_COMPUTE_BIT) {
        float priority = 1.0f;
        VkDeviceQueueCreateInfo qci = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
        qci.queueFamilyIndex = f;
        qci.queueCount = 1;
        qci.pQueuePriorities = &priority;
        VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
        dci.queueCreateInfoCount = 1;
        dci.pQueueCreateInfos = &qci;
        vk_check(vkCreateDevice(devices[i], &dci, NULL, &e->device), "vkCreateDevice");
        e->physical = devices[i];
        e->family = f;
        break;
      }
  }
  if (e->device == VK_NULL_HANDLE) return 0;
  vkGetDeviceQueue(e->device, e->family, 0, &e->queue);
  vkGetPhysicalDeviceMemoryProperties(e->physical, &e->memory);
  VkFormatProperties fp;
  vkGetPhysicalDeviceFormatProperties(e->physical, VK_FORMAT_R32G32B32A32_SFLOAT, &fp);
  e->images = (fp.optimalTilingFeatures & VK_FORMAT_FEATURE_STORAGE_IMAGE_BIT) != 0;

  /* Bindings 0-2: inputs a, b and the output (buffers, or storage images); 3: the I/O buffer. */
  for (int im = 0; im < 2; ++im) {
    VkDescriptorSetLayoutBinding b[4];
    for (uint32_t i = 0; i < 4; ++i)
      b[i] = (VkDescriptorSetLayoutBinding){i, im && i < 3 ? VK_DESCRIPTOR_TYPE_STORAGE_IMAGE
                                                           : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                            1, VK_SHADER_STAGE_COMPUTE_BIT, NULL};
    VkDescriptorSetLayoutCreateInfo lci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    lci.bindingCount = 4;
    lci.pBindings = b;
    vk_check(vkCreateDescriptorSetLayout(e->device, &lci, NULL, &e->set_layout[im]), "set layout");
    VkPushConstantRange pc = {VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(params)};
    VkPipelineLayoutCreateInfo pli = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pli.setLayoutCount = 1;
    pli.pSetLayouts = &e->set_layout[im];
    pli.pushConstantRangeCount = 1;
    pli.pPushConstantRanges = &pc;
    vk_check(vkCreatePipelineLayout(e->device, &pli, NULL, &e->pipeline_layout[im]), "pipeline layout");
    for (int s = 0; s < SH_COUNT; ++s) {
      VkShaderModuleCreateInfo mci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
      mci.codeSize = k_spv[s][im].size;
      mci.pCode = k_spv[s][im].code;
      VkShaderModule module;
      vk_check(vkCreateShaderModule(e->device, &mci, NULL, &module), "shader module");
      VkComputePipelineCreateInfo cpi = {.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
      cpi.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
      cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
      cpi.stage.module = module;
      cpi.stage.pName = "main";
      cpi.layout = e->pipeline_layout[im];
      vk_check(vkCreateComputePipelines(e->device, VK_NULL_HANDLE, 1, &cpi, NULL, &e->pipelines[s][im]),
               "pipeline");
      vkDestroyShaderModule(e->device, module, NULL);
    }
  }
  VkCommandPoolCreateInfo cpo = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  cpo.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  cpo.queueFamilyIndex = e->family;
  vk_check(vkCreateCommandPool(e->device, &cpo, NULL, &e->command_pool), "command pool");
  VkCommandBufferAllocateInfo cba = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cba.commandPool = e->command_pool;
  cba.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cba.commandBufferCount = 1;
  vk_check(vkAllocateCommandBuffers(e->device, &cba, &e->cmd), "command buffer");
  VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  vk_check(vkCreateFence(e->device, &fci, NULL, &e->fence), "fence");
  return 1;
}

/* ---- tensors on the device ---- */

/* One tensor as the engine binds it: a buffer, or an image and its view. */
typedef struct dev_tensor {
  VkBuffer buffer;
  VkImage image;
  VkImageView view;
  VkDeviceMemory memory;   /* the engine's own allocation (naive run and I/O), else none */
  void *mapped;            /* I/O buffers */
} dev_tensor;

static void make_view(engine *e, dev_tensor *t) {
  VkImageViewCreateInfo vci = {.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
  vci.image = t->image;
  vci.viewType = VK_IMAGE_VIEW_TYPE_2D;
  vci.format = VK_FORMAT_R32G32B32A32_SFLOAT;
  vci.subresourceRange = (VkImageSubresourceRange){VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
  vk_check(vkCreateImageView(e->device, &vci, NULL, &t->view), "image view");
}

/* The engine's own tensor: one allocation of its own (the naive way). Returns its bytes. */
static uint64_t own_tensor(engine *e, const net *n, int t, int image, int host, dev_tensor *out) {
  memset(out, 0, sizeof *out);
  VkMemoryRequirements req;
  if (image) {
    VkImageCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
    ici.imageType = VK_IMAGE_TYPE_2D;
    ici.format = VK_FORMAT_R32G32B32A32_SFLOAT;
    ici.extent = (VkExtent3D){(uint32_t)n->w[t], (uint32_t)(n->h[t] * slices(n, t)), 1};
    ici.mipLevels = ici.arrayLayers = 1;
    ici.samples = VK_SAMPLE_COUNT_1_BIT;
    ici.tiling = VK_IMAGE_TILING_OPTIMAL;
    ici.usage = VK_IMAGE_USAGE_STORAGE_BIT;
    vk_check(vkCreateImage(e->device, &ici, NULL, &out->image), "vkCreateImage");
    vkGetImageMemoryRequirements(e->device, out->image, &req);
  } else {
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bci.size = tensor_bytes(n, t);
    bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    vk_check(vkCreateBuffer(e->device, &bci, NULL, &out->buffer), "vkCreateBuffer");
    vkGetBufferMemoryRequirements(e->device, out->buffer, &req);
  }
  VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = memory_type(e, req.memoryTypeBits,
                                    host ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                         : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
  vk_check(vkAllocateMemory(e->device, &mai, NULL, &out->memory), "vkAllocateMemory");
  if (image) {
    vk_check(vkBindImageMemory(e->device, out->image, out->memory, 0), "vkBindImageMemory");
    make_view(e, out);
  } else {
    vk_check(vkBindBufferMemory(e->device, out->buffer, out->memory, 0), "vkBindBufferMemory");
  }
  if (host) vk_check(vkMapMemory(e->device, out->memory, 0, VK_WHOLE_SIZE, 0, &out->mapped), "vkMapMemory");
  return req.size;
}

static void release_tensor(engine *e, dev_tensor *t) {
  if (t->view) vkDestroyImageView(e->device, t->view, NULL);
  if (t->memory) { /* the engine's own; Tangram's stay with their realization */
    if (t->image) vkDestroyImage(e->device, t->image, NULL);
    if (t->buffer) vkDestroyBuffer(e->device, t->buffer, NULL);
    vkFreeMemory(e->device, t->memory, NULL);
  }
  memset(t, 0, sizeof *t);
}

/* ---- running the network ---- */

static int shader_of(enum kind k) {
  switch (k) {
    case K_LOAD: return SH_LOAD;
    case K_STORE: return SH_STORE;
    case K_DWCONV: return SH_DWCONV;
    case K_MEAN: return SH_REDUCE;
    case K_CONCAT: return SH_CONCAT;
    default: return SH_POINTWISE;
  }
}

static void set_shape(int32_t out[4], const net *n, int t) {
  out[0] = n->w[t];
  out[1] = n->h[t];
  out[2] = slices(n, t);
  out[3] = 0;
}

/* Record and run the whole network once. `t` holds every tensor (the I/O tensors are the
 * engine's host-visible buffers). With `waits` (per op: the ops it must wait for) ops are
 * ordered only by those waits, as events: an op waits for the latest op it depends on, whose
 * event also covers every op recorded before it. Without, ops run in order with a barrier
 * between each two. */
static void run_network(engine *e, const net *n, int images, dev_tensor *t, const uint32_t *wait_count,
                        const uint32_t *const *waits) {
  VkDescriptorPoolSize sizes[2] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 4u * (uint32_t)n->op_count},
                                   {VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, 3u * (uint32_t)n->op_count}};
  VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  dpi.maxSets = (uint32_t)n->op_count;
  dpi.poolSizeCount = 2;
  dpi.pPoolSizes = sizes;
  VkDescriptorPool pool;
  vk_check(vkCreateDescriptorPool(e->device, &dpi, NULL, &pool), "descriptor pool");
  VkEvent events[MAX_OPS] = {0};
  VkCommandBufferBeginInfo cbi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  cbi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vk_check(vkBeginCommandBuffer(e->cmd, &cbi), "vkBeginCommandBuffer");
  for (int o = 0; o < n->op_count; ++o) {
    const net_op *op = &n->ops[o];
    /* The descriptor set: the bindings this op's shader uses. Unary ops read a twice. */
    VkDescriptorSet set;
    VkDescriptorSetAllocateInfo sai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    sai.descriptorPool = pool;
    sai.descriptorSetCount = 1;
    sai.pSetLayouts = &e->set_layout[images];
    vk_check(vkAllocateDescriptorSets(e->device, &sai, &set), "descriptor set");
    int bound[4] = {op->kind == K_LOAD ? -1 : op->a, op->b >= 0 ? op->b : op->a,
                    op->kind == K_STORE ? -1 : op->out, -1};
    if (op->kind == K_LOAD) bound[1] = -1, bound[3] = op->a;
    if (op->kind == K_STORE) bound[1] = -1, bound[3] = op->out;
    if (op->kind == K_DWCONV || op->kind == K_MEAN) bound[1] = -1;
    VkWriteDescriptorSet writes[4];
    VkDescriptorBufferInfo bufs[4];
    VkDescriptorImageInfo imgs[4];
    uint32_t nw = 0;
    for (uint32_t i = 0; i < 4; ++i) {
      if (bound[i] < 0) continue;
      const dev_tensor *d = &t[bound[i]];
      VkWriteDescriptorSet *w = &writes[nw++];
      *w = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      w->dstSet = set;
      w->dstBinding = i;
      w->descriptorCount = 1;
      if (images && i < 3) {
        imgs[i] = (VkDescriptorImageInfo){VK_NULL_HANDLE, d->view, VK_IMAGE_LAYOUT_GENERAL};
        w->descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_IMAGE;
        w->pImageInfo = &imgs[i];
      } else {
        bufs[i] = (VkDescriptorBufferInfo){d->buffer, 0, VK_WHOLE_SIZE};
        w->descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        w->pBufferInfo = &bufs[i];
      }
    }
    vkUpdateDescriptorSets(e->device, nw, writes, 0, NULL);

    /* An image's memory may have held another tensor: its layout starts over (UNDEFINED ->
     * GENERAL) before the op writes it, ordered after whatever came before. */
    VkImageMemoryBarrier ib = {.sType = VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
    uint32_t transitions = 0;
    if (images && op->kind != K_STORE) {
      ib.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
      ib.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
      ib.oldLayout = VK_IMAGE_LAYOUT_UNDEFINED;
      ib.newLayout = VK_IMAGE_LAYOUT_GENERAL;
      ib.srcQueueFamilyIndex = ib.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
      ib.image = t[op->out].image;
      ib.subresourceRange = (VkImageSubresourceRange){VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
      transitions = 1;
    }
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    int has_waits = waits && wait_count[o] > 0;
    if (has_waits) {
      uint32_t latest = 0;
      for (uint32_t i = 0; i < wait_count[o]; ++i)
        if (waits[o][i] > latest) latest = waits[o][i];
      vkCmdWaitEvents(e->cmd, 1, &events[latest], VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 1, &mb, 0, NULL, transitions, &ib);
    } else if (!waits && o > 0) {
      vkCmdPipelineBarrier(e->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                           VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, transitions, &ib);
    } else if (transitions) { /* nothing before it: only the transition */
      ib.srcAccessMask = 0;
      vkCmdPipelineBarrier(e->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                           VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 0, NULL, 0, NULL, 1, &ib);
    }

    /* The dispatch: one invocation per output element (per slice for the mean). */
    params pc = {0};
    int shape_of_out = op->kind == K_STORE ? op->a : op->out;
    set_shape(pc.out_shape, n, shape_of_out);
    set_shape(pc.a_shape, n, op->a);
    set_shape(pc.b_shape, n, op->b >= 0 ? op->b : op->a);
    pc.arg[0] = op->kind >= K_ADD && op->kind <= K_SCALE ? (int32_t)(op->kind - K_ADD) : 0;
    if (op->kind == K_CONCAT) {
      pc.arg[0] = op->a_first;
      pc.arg[1] = op->a_count;
      pc.arg[2] = op->b_first;
    }
    pc.k[0] = op->k0;
    pc.k[1] = op->k1;
    int sh = shader_of(op->kind);
    vkCmdBindPipeline(e->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, e->pipelines[sh][images]);
    vkCmdBindDescriptorSets(e->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, e->pipeline_layout[images], 0,
                            1, &set, 0, NULL);
    vkCmdPushConstants(e->cmd, e->pipeline_layout[images], VK_SHADER_STAGE_COMPUTE_BIT, 0,
                       sizeof pc, &pc);
    vkCmdDispatch(e->cmd, (uint32_t)(pc.out_shape[0] + 7) / 8, (uint32_t)(pc.out_shape[1] + 7) / 8,
                  (uint32_t)pc.out_shape[2]);
    if (waits) {
      VkEventCreateInfo eci = {.sType = VK_STRUCTURE_TYPE_EVENT_CREATE_INFO};
      vk_check(vkCreateEvent(e->device, &eci, NULL, &events[o]), "vkCreateEvent");
      vkCmdSetEvent(e->cmd, events[o], VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
    }
  }
  /* The outputs become visible to the host. */
  VkMemoryBarrier hb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  hb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  hb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(e->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0,
                       1, &hb, 0, NULL, 0, NULL);
  vk_check(vkEndCommandBuffer(e->cmd), "vkEndCommandBuffer");
  VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &e->cmd;
  vk_check(vkQueueSubmit(e->queue, 1, &si, e->fence), "vkQueueSubmit");
  vk_check(vkWaitForFences(e->device, 1, &e->fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
  vk_check(vkResetFences(e->device, 1, &e->fence), "vkResetFences");
  for (int o = 0; o < n->op_count; ++o)
    if (events[o]) vkDestroyEvent(e->device, events[o], NULL);
  vkDestroyDescriptorPool(e->device, pool, NULL);
}

/* ---- main: naive reference, then Tangram's plans ---- */

int main(int argc, char **argv) {
  int validation = argc > 1 && strcmp(argv[1], "--validation") == 0;
  engine e;
  if (!engine_create(&e, validation)) {
    fprintf(stderr, "engine_vulkan: no Vulkan device with a compute queue\n");
    return 77;
  }
  net n;
  build_network(&n);
  tg_graph *graph = network_graph(&n);
  tg_error_info err = {{0}};
  tg_lifetimes *lifetimes = NULL;
  tg_check(tg_graph_compute_lifetimes(graph, NULL, NULL, &lifetimes, &err), &err, "lifetimes");
  tg_schedule *schedule = NULL;
  tg_check(tg_schedule_create(graph, NULL, NULL, &schedule, &err), &err, "schedule");

  /* Tangram on the engine's own instance, device and queue. Add `.memory` (callbacks into the
   * engine's allocator, VMA say) to keep one allocator; here Tangram allocates itself. */
  tg_vulkan_device_desc desc = {0};
  desc.instance = e.instance;
  desc.physical_device = e.physical;
  desc.device = e.device;
  desc.queue_family_index = e.family;
  desc.queue = e.queue;
  desc.get_instance_proc_addr = vkGetInstanceProcAddr;
  desc.api_version = VK_API_VERSION_1_1;
  tg_device *tgd = NULL;
  tg_check(tg_device_wrap_vulkan(&desc, NULL, &tgd, &err), &err, "tg_device_wrap_vulkan");
  const tg_device_info *info = tg_device_get_info(tgd);

  /* The engine's own I/O: host-visible buffers, in every run. */
  dev_tensor t[MAX_TENSORS];
  memset(t, 0, sizeof t);
  own_tensor(&e, &n, n.input, 0, 1, &t[n.input]);
  float *input = t[n.input].mapped;
  uint32_t seed = 12345;
  for (uint64_t i = 0; i < tensor_bytes(&n, n.input) / 4; ++i) {
    seed = seed * 1664525u + 1013904223u;
    input[i] = (float)(seed >> 8) / 8388608.0f - 1.0f; /* [-1, 1) */
  }
  size_t out_floats = 0;
  for (int i = 0; i < n.output_count; ++i) {
    own_tensor(&e, &n, n.outputs[i], 0, 1, &t[n.outputs[i]]);
    out_floats += tensor_bytes(&n, n.outputs[i]) / 4;
  }
  float *reference = malloc(out_floats * sizeof *reference);
  if (reference == NULL) return 1;

  printf("network: %d ops, %d tensors (%d planned by Tangram, %d the engine's I/O)\n", n.op_count,
         n.tensor_count, n.tensor_count - 1 - n.output_count, 1 + n.output_count);
  printf("device: %s, validation %s\n", info->name, validation ? "on (+ synchronization)" : "off");
  int runs = 0, equal_runs = 0;
  for (int images = 0; images <= e.images && images <= info->images; ++images) {
    tg_storage storage = images ? TG_STORAGE_TEXTURE_2D : TG_STORAGE_BUFFER;
    /* 1. Naive: one allocation per tensor, in order: the reference outputs. */
    uint64_t naive_bytes = 0;
    for (int k = 0; k < n.op_count; ++k)
      if (n.ops[k].kind != K_STORE) naive_bytes += own_tensor(&e, &n, n.ops[k].out, images, 0, &t[n.ops[k].out]);
    run_network(&e, &n, images, t, NULL, NULL);
    float *r = reference;
    for (int i = 0; i < n.output_count; ++i) {
      size_t bytes = tensor_bytes(&n, n.outputs[i]);
      memcpy(r, t[n.outputs[i]].mapped, bytes);
      r += bytes / 4;
    }
    for (int k = 0; k < n.op_count; ++k)
      if (n.ops[k].kind != K_STORE) release_tensor(&e, &t[n.ops[k].out]);

    /* 2. Tangram: the records of the graph in this storage, one plan per mode and policy. */
    tg_model_records *mr = NULL;
    tg_check(tg_model_records_create(graph, lifetimes, storage, TG_PRECISION_FP32, &info->limits,
                                     NULL, &mr, &err), &err, "records");
    if (mr->fallback->count) {
      fprintf(stderr, "engine_vulkan: %zu tensors do not fit %s\n", mr->fallback->count, tg_storage_name(storage));
      return 1;
    }
    const tg_record_set *set = mr->records; /* one record per tensor between two ops */
    tg_tensor_resource *res = calloc(set->count, sizeof *res);
    if (res == NULL) return 1;
    for (size_t k = 0; k < set->count; ++k) {
      tg_extent s = set->records[k].size;
      res[k] = images ? (tg_tensor_resource){storage, s, s.w * s.h * 16}
                      : (tg_tensor_resource){storage, s, s.w};
    }
    for (int mode = TG_MODE_OBJECTS; mode <= TG_MODE_OFFSETS; ++mode) {
      if (mode == TG_MODE_OFFSETS && images && !info->arena_images) continue;
      for (int policy = TG_POLICY_SERIAL; policy <= TG_POLICY_PARALLEL_SAFE; ++policy)
      for (int in_place = 0; in_place < 2; ++in_place) {
        tg_policy_relation *rel = NULL;
        tg_check(tg_policy_relation_create(schedule, (tg_policy)policy, mr->tensor_of, set->count,
                                           NULL, &rel), &err, "policy");
        /* Offsets: one arena; records with the device's real sizes and alignments. */
        tg_record_set *arena = NULL;
        if (mode == TG_MODE_OFFSETS)
          tg_check(tg_device_compute_arena_records(tgd, res, set->records, set->count,
                                                   TG_PRECISION_FP32, NULL, &arena), &err, "arena records");
        const tg_record_set *planned = arena ? arena : set;
        tg_plan_options po = {0};
        po.mode = (tg_mode)mode;
        po.strategy = TG_STRATEGY_BEST;
        po.relation = tg_policy_relation_get(rel);
        tg_in_place_pair *pairs = NULL;
        size_t pair_count = 0;
        if (in_place) {
          tg_check(tg_model_in_place_pairs(graph, lifetimes, mr, 1, NULL, &pairs, &pair_count), NULL, "pairs");
          /* Offsets: pairs whose device sizes differ cannot share one place. */
          size_t kept = 0;
          for (size_t k = 0; k < pair_count; ++k)
            if (planned->records[pairs[k].input].size.w == planned->records[pairs[k].output].size.w)
              pairs[kept++] = pairs[k];
          pair_count = kept;
          po.in_place = pairs;
          po.in_place_count = pair_count;
        }
        tg_plan *plan = NULL;
        tg_check(tg_plan_compute(planned->records, planned->count, planned->dims, &po, NULL, &plan),
                 NULL, "plan");
        tg_check(tg_plan_validate(planned->records, planned->count, planned->dims, plan, 0,
                                  po.relation, NULL, &err), &err, "validate");
        tg_realize_desc rd = {plan, planned->records, planned->count, planned->dims, res,
                              TG_PRECISION_FP32, 0};
        tg_realization *z = NULL;
        tg_check(tg_realization_create(tgd, &rd, NULL, &z, &err), &err, "realize");
        /* Bind Tangram's buffers and images like the engine's own. */
        for (size_t k = 0; k < set->count; ++k) {
          tg_vulkan_tensor vt;
          tg_check(tg_vulkan_get_tensor(z, k, &vt), NULL, "tensor");
          dev_tensor *d = &t[mr->tensor_of[k]];
          memset(d, 0, sizeof *d);
          d->buffer = vt.buffer;
          d->image = vt.image;
          if (images) make_view(&e, d);
        }
        /* What each op waits for on a parallel queue: its inputs' producers (graph edges) and,
         * for memory the plan reuses across branches, the ops that last touched it (reuse
         * edges; none under parallel-safe). Serial plans run in order instead. */
        tg_waits *w = NULL;
        tg_check(tg_schedule_compute_waits(schedule, planned->records, mr->tensor_of, set->count,
                                           plan, NULL, &w, &err), &err, "waits");
        uint32_t counts[MAX_OPS];
        const uint32_t *lists[MAX_OPS];
        uint32_t storage_w[4 * MAX_OPS];
        size_t used = 0;
        for (size_t o = 0; o < w->op_count; ++o) {
          lists[o] = storage_w + used;
          for (size_t i = w->after_start[o]; i < w->after_start[o + 1]; ++i) storage_w[used++] = w->after[i];
          for (size_t i = w->reuse_start[o]; i < w->reuse_start[o + 1]; ++i)
            storage_w[used++] = w->reuse_edges[i].after;
          counts[o] = (uint32_t)(storage_w + used - lists[o]);
        }
        int parallel = policy == TG_POLICY_PARALLEL_SAFE;
        for (int i = 0; i < n.output_count; ++i) memset(t[n.outputs[i]].mapped, 0xFF, tensor_bytes(&n, n.outputs[i]));
        run_network(&e, &n, images, t, parallel ? counts : NULL, parallel ? lists : NULL);
        /* Every output, bit for bit. */
        size_t equal = 0;
        r = reference;
        for (int i = 0; i < n.output_count; ++i) {
          const uint32_t *got = t[n.outputs[i]].mapped, *want = (const uint32_t *)r;
          size_t words = tensor_bytes(&n, n.outputs[i]) / 4;
          for (size_t k = 0; k < words; ++k) equal += got[k] == want[k];
          r += words;
        }
        tg_realization_stats stats;
        tg_realization_get_stats(z, &stats);
        char ip[32] = "";
        if (in_place) snprintf(ip, sizeof ip, ", %zu in place", plan->in_place_count);
        printf("%-10s %-7s %-13s %-8s %2llu allocations%s, %6llu bytes (naive %llu: %2.0f%%); "
               "outputs %d (%zu floats), equal %zu%s\n",
               tg_storage_name(storage), tg_mode_name((tg_mode)mode), tg_policy_name((tg_policy)policy),
               parallel ? "events" : "in order", (unsigned long long)stats.allocations, ip,
               (unsigned long long)stats.allocated_bytes, (unsigned long long)naive_bytes,
               100.0 * (double)stats.allocated_bytes / (double)naive_bytes, n.output_count,
               out_floats, equal, equal == out_floats ? "" : "  MISMATCH");
        ++runs;
        equal_runs += equal == out_floats;
        for (size_t k = 0; k < set->count; ++k) release_tensor(&e, &t[mr->tensor_of[k]]);
        tg_waits_destroy(w);
        tg_realization_destroy(z);
        tg_plan_destroy(plan);
        free(pairs);
        tg_record_set_destroy(arena);
        tg_policy_relation_destroy(rel);
      }
    }
    free(res);
    tg_model_records_destroy(mr);
  }

  /* Tangram goes first: it destroys what it made and nothing of the engine's. */
  tg_device_close(tgd);
  release_tensor(&e, &t[n.input]);
  for (int i = 0; i < n.output_count; ++i) release_tensor(&e, &t[n.outputs[i]]);
  vkDestroyFence(e.device, e.fence, NULL);
  vkDestroyCommandPool(e.device, e.command_pool, NULL);
  for (int im = 0; im < 2; ++im) {
    for (int s = 0; s < SH_COUNT; ++s) vkDestroyPipeline(e.device, e.pipelines[s][im], NULL);
    vkDestroyPipelineLayout(e.device, e.pipeline_layout[im], NULL);
    vkDestroyDescriptorSetLayout(e.device, e.set_layout[im], NULL);
  }
  vkDestroyDevice(e.device, NULL); /* the layer reports anything left on it here */
  if (e.messenger) {
    PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger =
        (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(e.instance, "vkDestroyDebugUtilsMessengerEXT");
    destroy_messenger(e.instance, e.messenger, NULL);
  }
  vkDestroyInstance(e.instance, NULL);
  free(reference);
  tg_schedule_destroy(schedule);
  tg_lifetimes_destroy(lifetimes);
  tg_graph_destroy(graph);
  printf("%d planned runs, %d equal to the naive run bit for bit; validation messages: %u\n", runs,
         equal_runs, e.messages);
  return runs > 0 && equal_runs == runs && e.messages == 0 ? 0 : 1;
}
