/* The Vulkan backend. Vulkan is loaded at run time through volk: libtangram has no link-time
 * dependency on libvulkan, and a machine without a driver gets TG_ERROR_NO_LOADER or
 * TG_ERROR_NO_DEVICE instead of a failure to start.
 *
 * Realising: every tensor is its own VkBuffer (storage buffer) or VkImage (RGBA32F / RGBA16F
 * storage image, 2D, 2D array or 3D, optimal tiling) bound to shared VkDeviceMemory: in objects
 * mode at offset 0 of its shared object's allocation, in arena mode at its planned offset in one
 * allocation that holds buffers and images alike. Sizes and alignments come from the driver
 * (vkGet*MemoryRequirements on a probe object), so plans made from
 * tg_device_compute_arena_records bind without surprises.
 *
 * Shadow run: GLSL compute shaders (shaders/, compiled by glslc at build time and embedded)
 * verify and write the signatures, all ops recorded into one command buffer and submitted once.
 * Ordering comes only from the scheduler's waits: after each op a vkCmdSetEvent, and before an
 * op that waits, a vkCmdWaitEvents for the ops it waits for. An event's first synchronisation
 * scope is everything recorded before its vkCmdSetEvent, so waiting for op j orders after j and
 * the ops recorded before it, and the latest op waited for stands for all of them; ops recorded
 * between it and the waiting op stay unordered with the waiting op. That is what lets
 * independent ops overlap, and what synchronisation validation checks when a needed wait is
 * missing. An op without waits waits for nothing (only its images' layout transitions, which
 * depend on nothing, precede it). Vulkan cannot say "only this op": a wait's second scope is
 * everything recorded after it, so a later op is ordered after whatever an earlier op waited
 * for. The run is therefore at least as ordered as the waits say, and no more than a queue can
 * express. In-order runs put a full compute barrier between consecutive ops. Mismatches are counted per access in host-visible counters, each
 * access with its own counter slot so that concurrent ops never write the same bytes.
 *
 * Entry points: volk's loader-level globals (vkGetInstanceProcAddr and the global commands) are
 * set once by volkInitialize and read only under a process-wide mutex; each device copies the
 * entry point, loads its own instance functions, and keeps its own VolkDeviceTable. volk's
 * instance-level globals are written only inside that mutex (volkLoadInstanceOnly), so that
 * volkLoadDeviceTable finds vkGetDeviceProcAddr for this instance; nothing else uses them. All
 * of volk's global names are renamed tg__volk_* at build time (see CMakeLists.txt), so they
 * never meet an application's own Vulkan symbols. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tangram_volk_rename.h" /* before volk.h: see backends/vulkan/CMakeLists.txt */
#include <volk.h>

#include "backends/protocol.h"
#include "backends/vulkan/vulkan_internal.h"
#include "tangram/vulkan.h"

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
/* Speed proxies: [output kind][input kind][fp16], kinds 0 buffer, 1 2D array view, 2 3D,
 * 3 storage texel buffer (image_buffer tensors; with buffers only). */
#define PROXY_KINDS 4
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

/* Pipelines: buffers (verify, write), then images indexed by (3D, fp16, write). */
enum {
  PIPE_BUFFER_VERIFY = 0,
  PIPE_BUFFER_WRITE = 1,
  PIPE_IMAGE_FIRST = 2,
  PIPE_COUNT = PIPE_IMAGE_FIRST + 8
};

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

#define GROUP_SIZE 64u        /* local_size_x of every shader */
/* Work groups per dispatch: invocations stride over the tensor, each visiting at least
 * ELEMENTS_PER_INVOCATION elements, in at most MAX_GROUPS groups (below the guaranteed
 * maxComputeWorkGroupCount[0] of 65535). A few hundred groups keep a GPU busy; CPU drivers pay
 * for every group (lavapipe allocates per group), so fewer, longer groups check faster there. */
#define ELEMENTS_PER_INVOCATION 256u
#define MAX_GROUPS 512u
#define MAX_ELEMENTS (1u << 31) /* words or texels per tensor the shaders' 32-bit indices reach */
#define COUNTER_SLOTS 1024u   /* mismatch counters per counter buffer */
#define POOL_SETS 256u        /* descriptor sets per descriptor pool */

/* ---- state ---- */

/* Instance-level entry points of one device's instance (not volk's globals). */
typedef struct instance_fns {
  PFN_vkDestroyInstance DestroyInstance;
  PFN_vkEnumeratePhysicalDevices EnumeratePhysicalDevices;
  PFN_vkGetPhysicalDeviceProperties GetPhysicalDeviceProperties;
  PFN_vkGetPhysicalDeviceProperties2 GetPhysicalDeviceProperties2;             /* may be NULL */
  PFN_vkGetPhysicalDeviceMemoryProperties GetPhysicalDeviceMemoryProperties;
  PFN_vkGetPhysicalDeviceMemoryProperties2 GetPhysicalDeviceMemoryProperties2; /* may be NULL */
  PFN_vkGetPhysicalDeviceQueueFamilyProperties GetPhysicalDeviceQueueFamilyProperties;
  PFN_vkGetPhysicalDeviceFormatProperties GetPhysicalDeviceFormatProperties;
  PFN_vkGetPhysicalDeviceImageFormatProperties GetPhysicalDeviceImageFormatProperties;
  PFN_vkEnumerateDeviceExtensionProperties EnumerateDeviceExtensionProperties;
  PFN_vkCreateDevice CreateDevice;
  PFN_vkCreateDebugUtilsMessengerEXT CreateDebugUtilsMessengerEXT;             /* validation */
  PFN_vkDestroyDebugUtilsMessengerEXT DestroyDebugUtilsMessengerEXT;
} instance_fns;

/* One block of device memory: Tangram's own allocation (offset 0), or a block of the engine's
 * (memory callbacks of a wrapped device). */
typedef struct vk_block {
  tg_vulkan_memory_block b;   /* memory is VK_NULL_HANDLE when nothing was allocated */
  int engine;                 /* from the engine's callbacks: give back through them */
  int coherent;               /* host-access blocks: no flush/invalidate needed */
} vk_block;

/* One allocation: a shared object's memory or the arena. */
typedef struct vk_memory {
  vk_block block;         /* block.b.memory is VK_NULL_HANDLE for an empty object */
  uint64_t size;
  uint32_t type;
  void *mapped;           /* shared memory: mapped for its whole life (freeing unmaps it) */
} vk_memory;

/* One tensor: its buffer or image (none for an empty tensor) and its state in a check run. */
typedef struct vk_view {
  vk_memory *memory;
  tg_tensor_resource resource;
  int image;              /* 1: image, 0: buffer */
  int three_d;
  uint32_t layers;        /* images */
  VkExtent3D extent;      /* images */
  tg_precision precision;
  VkDeviceSize offset;    /* where it is bound inside its memory */
  VkDeviceSize size;      /* its memory requirements' size */
  VkBuffer buffer;
  VkImage vk_image;
  VkImageView image_view;
  uint64_t run;           /* the check run that `set` and `ready` belong to */
  VkDescriptorSet set;    /* binds the tensor as set 0 during run `run` */
  int ready;              /* image in GENERAL layout during run `run` */
  uint64_t proxy_run;     /* speed proxies: the run and op that last wrote it */
  size_t proxy_op;
  int texel;              /* an image_buffer tensor: its buffer can back a storage texel buffer */
  VkBufferView texel_view;   /* made by the speed proxies on first use */
  uint64_t texel_run;     /* the check run that `texel_set` belongs to */
  VkDescriptorSet texel_set;
} vk_view;

typedef struct counter_chunk {
  VkBuffer buffer;
  vk_block memory;
  uint32_t *mapped;
  VkDescriptorSet set;
} counter_chunk;

/* One check run: everything recorded between check_begin and check_end. */
typedef struct check_run {
  int active;
  int pending;            /* submitted, fence not yet waited on */
  uint64_t serial;
  int out_of_order;
  tg_precision precision;
  size_t record_count, op_count;
  size_t ops_recorded;
  VkEvent *events;        /* op_count, out-of-order runs */
  VkDescriptorPool *pools;
  size_t pool_count, pool_capacity;
  counter_chunk *chunks;
  size_t chunk_count, chunk_capacity;
  uint32_t *slot_record;  /* record of each counter slot */
  size_t slot_count, slot_capacity;
  VkImageMemoryBarrier *barrier_scratch;
  size_t barrier_capacity;
  uint64_t checked_bytes;
} check_run;

typedef struct vk_device {
  tg_allocator alloc;
  /* A wrapped device (tg_device_wrap_vulkan): instance, device and queue are the engine's and
   * are never destroyed; objects are made with its allocation callbacks and, when given, memory
   * comes from its memory callbacks. */
  int borrowed;
  const VkAllocationCallbacks *vk_alloc;        /* NULL for opened devices */
  const tg_vulkan_memory_callbacks *memory_cb;  /* NULL: vkAllocateMemory */
  VkBufferUsageFlags buffer_usage;              /* of every tensor buffer */
  VkImageUsageFlags image_usage;                /* of every tensor image */
  VkImageCreateFlags image_flags;               /* ... and its create flags */
  VkDeviceSize arena_alignment;                 /* of an arena block inside engine memory */
  PFN_vkGetInstanceProcAddr get_instance_proc_addr;
  instance_fns fi;
  struct VolkDeviceTable vk;
  VkInstance instance;
  VkDebugUtilsMessengerEXT messenger;
  VkPhysicalDevice physical;
  VkDevice device;
  VkQueue queue;
  uint32_t queue_family;
  uint32_t api_version;               /* min(instance, device) */
  VkPhysicalDeviceProperties props;
  VkPhysicalDeviceMemoryProperties memory_props;
  uint32_t arena_type_bits;           /* memory types every kind of resource accepts */
  int fp32_images, fp16_images, fp32_images_3d, fp16_images_3d;
  VkResult last_error;
  _Atomic uint64_t validation_messages;
  char first_message[160];            /* id of the first validation message (tests) */
  int validation;
  int64_t live_objects;               /* realisation and check-run objects alive */
  uint64_t fail_call_at, calls;       /* tests: realisation calls made, and the one to fail */
  uint64_t run_serial;
  /* Check objects, created on the first check and kept. */
  int check_ready;
  VkCommandPool command_pool;
  VkCommandBuffer command_buffer;
  VkFence fence;
  VkDescriptorSetLayout tensor_buffer_layout, tensor_image_layout, counter_layout, tensor_texel_layout;
  VkPipelineLayout buffer_pipeline_layout, image_pipeline_layout;
  VkPipeline pipelines[PIPE_COUNT];
  uint32_t counter_stride;
  check_run run;
  /* Speed proxies: pipelines made on first use, a timestamp query pool kept and grown. */
  VkPipelineLayout proxy_layouts[3][3];       /* [output][inputs]: 0 buffer, 1 image, 2 texel buffer */
  VkPipeline proxy_pipelines[PROXY_KINDS][PROXY_KINDS][2];
  VkQueryPool query_pool;
  uint32_t query_capacity;
  int proxy_timed;
  size_t proxy_count;                         /* timed dispatches recorded */
  size_t *proxy_op_of;                        /* op of each timed dispatch */
  size_t proxy_op_capacity;
} vk_device;

/* Process-wide: guards volk's global entry points (see the file comment). */
static pthread_mutex_t k_volk_mutex = PTHREAD_MUTEX_INITIALIZER;

/* ---- small helpers ---- */

static uint64_t handle_u64(const void *handle, size_t size) {
  uint64_t u = 0;
  memcpy(&u, handle, size < sizeof u ? size : sizeof u);
  return u;
}
#define HANDLE_U64(h) handle_u64(&(h), sizeof(h))

static tg_status status_of(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return TG_OK;
    case VK_ERROR_OUT_OF_HOST_MEMORY: return TG_ERROR_OUT_OF_HOST_MEMORY;
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_TOO_MANY_OBJECTS:
    case VK_ERROR_OUT_OF_POOL_MEMORY: return TG_ERROR_OUT_OF_DEVICE_MEMORY;
    case VK_ERROR_INCOMPATIBLE_DRIVER: return TG_ERROR_NO_DEVICE;
    case VK_ERROR_LAYER_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_FORMAT_NOT_SUPPORTED: return TG_ERROR_UNSUPPORTED;
    case VK_TIMEOUT: return TG_ERROR_TIMEOUT;
    default: return TG_ERROR_DEVICE;
  }
}

/* Tests walk a failure over every driver call that creates or binds a realisation object
 * (the generic layer's injection fails whole allocate/bind steps; this reaches the steps
 * inside them). */
static VkResult injected(vk_device *v) {
  ++v->calls;
  return v->calls == v->fail_call_at ? VK_ERROR_OUT_OF_DEVICE_MEMORY : VK_SUCCESS;
}

/* Remember a failure for native_error() and map it. */
static tg_status fail(vk_device *v, VkResult r) {
  v->last_error = r;
  return status_of(r);
}

static const char *result_name(VkResult r) {
  switch (r) {
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    default: return "VkResult";
  }
}

/* Grow `*array` (of `*capacity` elements of `size` bytes) to hold at least `need`. */
static int grow(const tg_allocator *a, void **array, size_t *capacity, size_t need, size_t size) {
  if (need <= *capacity) return 1;
  size_t cap = *capacity ? *capacity : 8;
  while (cap < need) {
    if (cap > SIZE_MAX / 2) return 0;
    cap *= 2;
  }
  size_t old_bytes, new_bytes;
  if (!tg__mul_size(*capacity, size, &old_bytes) || !tg__mul_size(cap, size, &new_bytes)) return 0;
  void *p = tg__realloc(a, *array, old_bytes, new_bytes);
  if (p == NULL) return 0;
  *array = p;
  *capacity = cap;
  return 1;
}

static int env_is_one(const char *name) {
  const char *e = getenv(name);
  return e != NULL && strcmp(e, "1") == 0;
}

/* The memory type for `bits` with `want` flags. For tensors: device-local first, then not
 * host-visible (on discrete GPUs device-local host-visible memory is a small BAR window). For
 * the host's counters: coherent and cached first. Protected and lazily allocated types never
 * suit. -1 if none. */
static int pick_memory_type(const VkPhysicalDeviceMemoryProperties *mp, uint32_t bits,
                            VkMemoryPropertyFlags want, int prefer_device_local) {
  int best = -1, best_score = -1;
  for (uint32_t i = 0; i < mp->memoryTypeCount; ++i) {
    if (!(bits & (1u << i))) continue;
    VkMemoryPropertyFlags f = mp->memoryTypes[i].propertyFlags;
    if ((f & want) != want ||
        (f & (VK_MEMORY_PROPERTY_PROTECTED_BIT | VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT)))
      continue;
    int score = 0;
    if (prefer_device_local) {
      if (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) score += 2;
      if (!(f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)) score += 1;
    } else {
      if (f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) score += 2;
      if (f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT) score += 1;
    }
    if (score > best_score) {
      best = (int)i;
      best_score = score;
    }
  }
  return best;
}

/* ---- validation messages ---- */

static VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types,
    const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
  (void)types;
  vk_device *v = user;
  if (severity & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                  VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT)) {
    if (atomic_fetch_add(&v->validation_messages, 1) == 0)
      snprintf(v->first_message, sizeof v->first_message, "%s",
               data && data->pMessageIdName ? data->pMessageIdName : "(no id)");
    /* Validation is a debugging aid the caller asked for: say what was found. */
    fprintf(stderr, "tangram vulkan validation: %s\n",
            data && data->pMessage ? data->pMessage : "(no message)");
  }
  return VK_FALSE;
}

/* ---- resources ---- */

static VkFormat image_format(tg_precision p) {
  return p == TG_PRECISION_FP16 ? VK_FORMAT_R16G16B16A16_SFLOAT : VK_FORMAT_R32G32B32A32_SFLOAT;
}

#define RESOURCE_USAGE_BUFFER                                                          \
  (VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |             \
   VK_BUFFER_USAGE_TRANSFER_DST_BIT)
#define RESOURCE_USAGE_IMAGE                                                           \
  (VK_IMAGE_USAGE_STORAGE_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT | VK_IMAGE_USAGE_TRANSFER_DST_BIT)

/* What a resource is in Vulkan terms. `empty`: no object (zero bytes or a zero extent). */
typedef struct resource_shape {
  int empty;
  int image;
  int three_d;
  int texel;              /* image_buffer: also usable as a storage texel buffer */
  uint64_t buffer_bytes;  /* buffers: bytes rounded up to whole 32-bit words */
  VkExtent3D extent;      /* images; depth 1 for 2D */
  uint32_t layers;        /* images */
} resource_shape;

static tg_status shape_of(const vk_device *v, const tg_tensor_resource *res, resource_shape *out) {
  memset(out, 0, sizeof *out);
  if (!tg_storage_is_texture(res->storage)) {
    if (res->bytes == 0) {
      out->empty = 1;
      return TG_OK;
    }
    /* Whole words: the shaders address uint words; the padding belongs to the tensor. */
    if (!tg__align_up(res->bytes, 4, &out->buffer_bytes)) return TG_ERROR_OVERFLOW;
    out->texel = res->storage == TG_STORAGE_IMAGE_BUFFER;
    return TG_OK;
  }
  out->image = 1;
  const tg_extent e = res->extent;
  if (e.w == 0 || e.h == 0 || e.d == 0) {
    out->empty = 1;
    return TG_OK;
  }
  const VkPhysicalDeviceLimits *l = &v->props.limits;
  switch (res->storage) {
    case TG_STORAGE_TEXTURE_2D:
    case TG_STORAGE_SINGLE_TEXTURE_2D:
      if (e.d != 1) return TG_ERROR_INVALID_ARGUMENT;
      if (e.w > l->maxImageDimension2D || e.h > l->maxImageDimension2D) return TG_ERROR_LIMIT;
      out->layers = 1;
      break;
    case TG_STORAGE_TEXTURE_ARRAY:
      if (e.w > l->maxImageDimension2D || e.h > l->maxImageDimension2D ||
          e.d > l->maxImageArrayLayers)
        return TG_ERROR_LIMIT;
      out->layers = (uint32_t)e.d;
      break;
    case TG_STORAGE_TEXTURE_3D:
      if (e.w > l->maxImageDimension3D || e.h > l->maxImageDimension3D ||
          e.d > l->maxImageDimension3D)
        return TG_ERROR_LIMIT;
      out->three_d = 1;
      out->layers = 1;
      break;
    default: return TG_ERROR_INVALID_ARGUMENT;
  }
  out->extent.width = (uint32_t)e.w;
  out->extent.height = (uint32_t)e.h;
  out->extent.depth = out->three_d ? (uint32_t)e.d : 1u;
  return TG_OK;
}

/* Create the buffer or image for a non-empty shape (not bound). Counted as live. */
static tg_status create_resource(vk_device *v, const resource_shape *s, tg_precision precision,
                                 VkBuffer *buffer, VkImage *image) {
  VkResult r = injected(v);
  if (r != VK_SUCCESS) return fail(v, r);
  if (!s->image) {
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = s->buffer_bytes;
    bi.usage = v->buffer_usage | (s->texel ? VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT : 0u);
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    r = v->vk.vkCreateBuffer(v->device, &bi, v->vk_alloc, buffer);
  } else {
    int fp16 = precision == TG_PRECISION_FP16;
    if (s->three_d ? !(fp16 ? v->fp16_images_3d : v->fp32_images_3d)
                   : !(fp16 ? v->fp16_images : v->fp32_images))
      return TG_ERROR_UNSUPPORTED;
    VkImageCreateInfo ii = {.sType = VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
    ii.imageType = s->three_d ? VK_IMAGE_TYPE_3D : VK_IMAGE_TYPE_2D;
    ii.format = image_format(precision);
    ii.extent = s->extent;
    ii.mipLevels = 1;
    ii.arrayLayers = s->layers;
    ii.samples = VK_SAMPLE_COUNT_1_BIT;
    ii.tiling = VK_IMAGE_TILING_OPTIMAL;
    ii.usage = v->image_usage;
    ii.flags = v->image_flags;
    ii.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    ii.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED;
    r = v->vk.vkCreateImage(v->device, &ii, v->vk_alloc, image);
  }
  if (r != VK_SUCCESS) return fail(v, r);
  v->live_objects++;
  return TG_OK;
}

static void destroy_resource(vk_device *v, VkBuffer *buffer, VkImage *image) {
  if (*buffer != VK_NULL_HANDLE) {
    v->vk.vkDestroyBuffer(v->device, *buffer, v->vk_alloc);
    *buffer = VK_NULL_HANDLE;
    v->live_objects--;
  }
  if (*image != VK_NULL_HANDLE) {
    v->vk.vkDestroyImage(v->device, *image, v->vk_alloc);
    *image = VK_NULL_HANDLE;
    v->live_objects--;
  }
}

static void resource_requirements(vk_device *v, VkBuffer buffer, VkImage image,
                                  VkMemoryRequirements *out) {
  if (buffer != VK_NULL_HANDLE) v->vk.vkGetBufferMemoryRequirements(v->device, buffer, out);
  else v->vk.vkGetImageMemoryRequirements(v->device, image, out);
  if (out->alignment == 0) out->alignment = 1;
}

/* Requirements of a resource through a short-lived probe object. */
static tg_status probe_requirements(vk_device *v, const tg_tensor_resource *res,
                                    tg_precision precision, resource_shape *shape,
                                    VkMemoryRequirements *out) {
  tg_status st = shape_of(v, res, shape);
  if (st != TG_OK) return st;
  memset(out, 0, sizeof *out);
  if (shape->empty) {
    out->alignment = 1;
    out->memoryTypeBits = ~0u;
    return TG_OK;
  }
  VkBuffer buffer = VK_NULL_HANDLE;
  VkImage image = VK_NULL_HANDLE;
  st = create_resource(v, shape, precision, &buffer, &image);
  if (st != TG_OK) return st;
  resource_requirements(v, buffer, image, out);
  destroy_resource(v, &buffer, &image);
  return TG_OK;
}

static tg_status vk_requirements(void *impl, const tg_tensor_resource *res, tg_precision precision,
                                 tg_resource_requirements *out) {
  vk_device *v = impl;
  resource_shape shape;
  VkMemoryRequirements req;
  tg_status st = probe_requirements(v, res, precision, &shape, &req);
  if (st != TG_OK) return st;
  out->size = req.size;
  out->alignment = req.alignment;
  out->linear = !shape.image; /* every image here is optimal tiling */
  return TG_OK;
}

/* ---- device memory ---- */

/* A block of device memory for `req` with every `required` flag: from the engine's memory
 * callbacks when it gave them, else vkAllocateMemory. `host_access`: mapped for the host
 * (coherent memory from the engine; Tangram's own may be non-coherent). `tensor`: a
 * realisation allocation (fault injection counts it; one larger than its heap is refused
 * without asking the driver). Counted as one live object. */
static tg_status block_alloc(vk_device *v, const VkMemoryRequirements *req,
                             VkMemoryPropertyFlags required, int host_access, int tensor,
                             vk_block *out) {
  memset(out, 0, sizeof *out);
  const VkPhysicalDeviceMemoryProperties *mp = &v->memory_props;
  VkResult r = tensor ? injected(v) : VK_SUCCESS;
  if (r != VK_SUCCESS) return fail(v, r);
  if (v->memory_cb != NULL) {
    if (host_access)
      required |= VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    VkMemoryPropertyFlags preferred =
        host_access ? VK_MEMORY_PROPERTY_HOST_CACHED_BIT : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    tg_vulkan_memory_block b;
    memset(&b, 0, sizeof b);
    r = v->memory_cb->allocate(v->memory_cb->user, req, required, preferred, host_access, &b);
    if (r != VK_SUCCESS) return fail(v, r < 0 ? r : VK_ERROR_OUT_OF_DEVICE_MEMORY);
    /* What the engine returned must be what was asked for: a wrong block would be bound
     * anyway by the driver, silently, with undefined results. */
    int ok = b.memory != VK_NULL_HANDLE && b.memory_type < mp->memoryTypeCount &&
             (req->memoryTypeBits & (1u << b.memory_type)) &&
             (mp->memoryTypes[b.memory_type].propertyFlags & required) == required &&
             b.offset % (req->alignment ? req->alignment : 1) == 0 &&
             (!host_access || b.mapped != NULL);
    if (!ok) {
      v->memory_cb->free(v->memory_cb->user, &b);
      v->last_error = VK_SUCCESS; /* no driver call failed: the engine's block was wrong */
      return TG_ERROR_DEVICE;
    }
    out->b = b;
    out->engine = 1;
    out->coherent = 1;
  } else {
    int type = pick_memory_type(mp, req->memoryTypeBits, required, !host_access);
    if (type < 0) return TG_ERROR_UNSUPPORTED;
    if (tensor && req->size > mp->memoryHeaps[mp->memoryTypes[type].heapIndex].size)
      return TG_ERROR_OUT_OF_DEVICE_MEMORY;
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = req->size;
    ai.memoryTypeIndex = (uint32_t)type;
    VkDeviceMemory memory;
    r = v->vk.vkAllocateMemory(v->device, &ai, v->vk_alloc, &memory);
    if (r != VK_SUCCESS) return fail(v, r);
    void *mapped = NULL;
    if (host_access && (r = v->vk.vkMapMemory(v->device, memory, 0, VK_WHOLE_SIZE, 0, &mapped)) !=
                           VK_SUCCESS) {
      v->vk.vkFreeMemory(v->device, memory, v->vk_alloc);
      return fail(v, r);
    }
    out->b.memory = memory;
    out->b.memory_type = (uint32_t)type;
    out->b.mapped = mapped;
    out->coherent =
        (mp->memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) != 0;
  }
  v->live_objects++;
  return TG_OK;
}

/* Give a block back (Tangram's own: freed, which also unmaps). NULL memory: nothing. */
static void block_free(vk_device *v, vk_block *block) {
  if (block->b.memory == VK_NULL_HANDLE) return;
  if (block->engine) v->memory_cb->free(v->memory_cb->user, &block->b);
  else v->vk.vkFreeMemory(v->device, block->b.memory, v->vk_alloc);
  v->live_objects--;
  memset(block, 0, sizeof *block);
}

/* ---- allocations and views ---- */

static tg_status vk_allocate(void *impl, const tg_tensor_resource *res, tg_precision precision,
                             int arena, void **memory) {
  vk_device *v = impl;
  VkMemoryRequirements req;
  if (arena) {
    /* One allocation for buffers and images at planned offsets: a memory type all of them
     * accept, sized exactly as planned (the records already carry the driver's sizes), starting
     * where every resource may start. */
    req.size = res->bytes;
    req.alignment = v->arena_alignment;
    req.memoryTypeBits = v->arena_type_bits;
  } else {
    /* The object's own resource: its members are no larger in any dimension, and bind()
     * checks that each member's real requirement fits. */
    resource_shape shape;
    tg_status st = probe_requirements(v, res, precision, &shape, &req);
    if (st != TG_OK) return st;
  }
  vk_memory *m = tg__calloc(&v->alloc, 1, sizeof *m);
  if (m == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  m->size = req.size;
  if (req.size == 0) { /* an empty object: nothing to allocate, nothing will be bound */
    *memory = m;
    return TG_OK;
  }
  tg_status st = block_alloc(v, &req, 0, 0, 1, &m->block);
  if (st != TG_OK) {
    tg__free(&v->alloc, m);
    return st;
  }
  m->type = m->block.b.memory_type;
  *memory = m;
  return TG_OK;
}

static void vk_release(void *impl, void *memory) {
  vk_device *v = impl;
  vk_memory *m = memory;
  if (m == NULL) return;
  block_free(v, &m->block);
  tg__free(&v->alloc, m);
}

static void destroy_view(vk_device *v, vk_view *w) {
  if (w->texel_view != VK_NULL_HANDLE) {
    v->vk.vkDestroyBufferView(v->device, w->texel_view, v->vk_alloc);
    v->live_objects--;
  }
  if (w->image_view != VK_NULL_HANDLE) {
    v->vk.vkDestroyImageView(v->device, w->image_view, v->vk_alloc);
    v->live_objects--;
  }
  destroy_resource(v, &w->buffer, &w->vk_image);
  tg__free(&v->alloc, w);
}

static tg_status vk_bind(void *impl, void *memory, const tg_tensor_resource *object,
                         uint64_t offset, const tg_tensor_resource *tensor, tg_precision precision,
                         int arena, void **view) {
  vk_device *v = impl;
  vk_memory *m = memory;
  (void)object;
  (void)arena;
  resource_shape s;
  tg_status st = shape_of(v, tensor, &s);
  if (st != TG_OK) return st;
  vk_view *w = tg__calloc(&v->alloc, 1, sizeof *w);
  if (w == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  w->memory = m;
  w->resource = *tensor;
  w->image = s.image;
  w->three_d = s.three_d;
  w->texel = s.texel;
  w->layers = s.layers;
  w->extent = s.extent;
  w->precision = precision;
  if (s.empty) {
    *view = w;
    return TG_OK;
  }
  st = create_resource(v, &s, precision, &w->buffer, &w->vk_image);
  if (st != TG_OK) {
    tg__free(&v->alloc, w);
    return st;
  }
  VkMemoryRequirements req;
  resource_requirements(v, w->buffer, w->vk_image, &req);
  /* The plan was made from the driver's own requirements; anything else is a plan that does
   * not fit this device (or, in objects mode, a member needing more than its object). */
  uint64_t end, at;
  if (m->block.b.memory == VK_NULL_HANDLE || !tg__add_u64(offset, req.size, &end) ||
      end > m->size || !tg__add_u64(m->block.b.offset, offset, &at) || at % req.alignment != 0 ||
      !(req.memoryTypeBits & (1u << m->type))) {
    destroy_view(v, w);
    return TG_ERROR_INVALID_PLAN;
  }
  w->offset = at;
  w->size = req.size;
  VkResult r = injected(v);
  if (r == VK_SUCCESS)
    r = w->image ? v->vk.vkBindImageMemory(v->device, w->vk_image, m->block.b.memory, at)
                 : v->vk.vkBindBufferMemory(v->device, w->buffer, m->block.b.memory, at);
  if (r != VK_SUCCESS) {
    destroy_view(v, w);
    return fail(v, r);
  }
  if (w->image) {
    VkImageViewCreateInfo vi = {.sType = VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
    vi.image = w->vk_image;
    /* 2D images are one-layer arrays to the shaders: one shader serves 2D and 2D arrays. */
    vi.viewType = w->three_d ? VK_IMAGE_VIEW_TYPE_3D : VK_IMAGE_VIEW_TYPE_2D_ARRAY;
    vi.format = image_format(precision);
    vi.subresourceRange.aspectMask = VK_IMAGE_ASPECT_COLOR_BIT;
    vi.subresourceRange.levelCount = 1;
    vi.subresourceRange.layerCount = w->layers;
    r = injected(v);
    if (r == VK_SUCCESS) r = v->vk.vkCreateImageView(v->device, &vi, v->vk_alloc, &w->image_view);
    if (r != VK_SUCCESS) {
      w->image_view = VK_NULL_HANDLE;
      destroy_view(v, w);
      return fail(v, r);
    }
    v->live_objects++;
  }
  *view = w;
  return TG_OK;
}

static void vk_unbind(void *impl, void *view) {
  if (view) destroy_view(impl, view);
}

static void vk_handle(void *impl, void *memory, void *view, tg_tensor_handle *out) {
  (void)impl;
  vk_memory *m = memory;
  vk_view *w = view;
  out->memory = HANDLE_U64(m->block.b.memory);
  out->offset = m->block.b.offset; /* the generic layer adds the tensor's place */
  out->native = w == NULL ? 0 : w->image ? HANDLE_U64(w->vk_image) : HANDLE_U64(w->buffer);
}

void tg__vulkan_describe_tensor(const void *impl, const void *memory, const void *view,
                                tg_vulkan_tensor *out) {
  const vk_device *v = impl;
  const vk_memory *m = memory;
  const vk_view *w = view;
  memset(out, 0, sizeof *out);
  out->buffer = w->buffer;
  out->image = w->vk_image;
  out->buffer_usage = v->buffer_usage;
  out->image_usage = v->image_usage;
  out->image_flags = v->image_flags;
  if (w->buffer == VK_NULL_HANDLE && w->vk_image == VK_NULL_HANDLE) return; /* empty */
  out->memory = m->block.b.memory;
  out->offset = w->offset;
  out->size = w->size;
  if (w->image) {
    out->image_type = w->three_d ? VK_IMAGE_TYPE_3D : VK_IMAGE_TYPE_2D;
    out->format = image_format(w->precision);
    out->extent = w->extent;
    out->layers = w->layers;
  } else {
    out->bytes = w->resource.bytes;
  }
}

/* ---- check objects (made on the first check, kept until close) ---- */

static tg_status make_set_layout(vk_device *v, VkDescriptorType type, VkDescriptorSetLayout *out) {
  VkDescriptorSetLayoutBinding b = {0};
  b.binding = 0;
  b.descriptorType = type;
  b.descriptorCount = 1;
  b.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  VkDescriptorSetLayoutCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  ci.bindingCount = 1;
  ci.pBindings = &b;
  VkResult r = v->vk.vkCreateDescriptorSetLayout(v->device, &ci, v->vk_alloc, out);
  return r == VK_SUCCESS ? TG_OK : fail(v, r);
}

static tg_status make_pipeline_layout(vk_device *v, VkDescriptorSetLayout tensor,
                                      VkPipelineLayout *out) {
  /* Set 0: the tensor; set 1: the counter (verify shaders only). Same push constants for all. */
  VkDescriptorSetLayout sets[2] = {tensor, v->counter_layout};
  VkPushConstantRange pc = {VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(shader_params)};
  VkPipelineLayoutCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  ci.setLayoutCount = 2;
  ci.pSetLayouts = sets;
  ci.pushConstantRangeCount = 1;
  ci.pPushConstantRanges = &pc;
  VkResult r = v->vk.vkCreatePipelineLayout(v->device, &ci, v->vk_alloc, out);
  return r == VK_SUCCESS ? TG_OK : fail(v, r);
}

static void destroy_check_objects(vk_device *v) {
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
  if (pick_memory_type(&v->memory_props, ~0u, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, 0) < 0)
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
  if ((st = make_set_layout(v, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, &v->tensor_buffer_layout)) != TG_OK ||
      (st = make_set_layout(v, VK_DESCRIPTOR_TYPE_STORAGE_IMAGE, &v->tensor_image_layout)) != TG_OK ||
      (st = make_set_layout(v, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC, &v->counter_layout)) != TG_OK ||
      (st = make_pipeline_layout(v, v->tensor_buffer_layout, &v->buffer_pipeline_layout)) != TG_OK ||
      (st = make_pipeline_layout(v, v->tensor_image_layout, &v->image_pipeline_layout)) != TG_OK) {
    destroy_check_objects(v);
    return st;
  }
  v->check_ready = 1;
  return TG_OK;
vk_fail:
  destroy_check_objects(v);
  return fail(v, r);
}

/* A compute pipeline from SPIR-V `words` (`bytes` long) with `layout`; *out stays
 * VK_NULL_HANDLE on failure. */
static tg_status create_pipeline(vk_device *v, const uint32_t *words, size_t bytes, VkPipelineLayout layout,
                                 VkPipeline *out) {
  VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mi.codeSize = bytes;
  mi.pCode = words;
  VkShaderModule module;
  VkResult r = v->vk.vkCreateShaderModule(v->device, &mi, v->vk_alloc, &module);
  if (r != VK_SUCCESS) return fail(v, r);
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
    return fail(v, r);
  }
  return TG_OK;
}

/* Pipelines are made on first use (each costs a shader compile in the driver) and cached. */
static tg_status ensure_pipeline(vk_device *v, int index) {
  if (v->pipelines[index] != VK_NULL_HANDLE) return TG_OK;
  return create_pipeline(v, k_shaders[index].words, k_shaders[index].bytes,
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
    block_free(v, &c->memory);
  }
  if (v->command_pool != VK_NULL_HANDLE) v->vk.vkResetCommandPool(v->device, v->command_pool, 0);
  tg__free(a, run->events);
  tg__free(a, run->pools);
  tg__free(a, run->chunks);
  tg__free(a, run->slot_record);
  tg__free(a, run->barrier_scratch);
  memset(run, 0, sizeof *run);
}

static void vk_check_abort(void *impl) {
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

static tg_status vk_check_begin(void *impl, size_t record_count, size_t op_count,
                                int out_of_order, tg_precision precision) {
  vk_device *v = impl;
  vk_check_abort(v); /* a run left unfinished by its caller */
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
    return fail(v, r);
  }
  run->active = 1;
  return TG_OK;
}

/* A descriptor set from the run's pools, adding a pool when the last one is full. */
static tg_status allocate_set(vk_device *v, VkDescriptorSetLayout layout, VkDescriptorSet *out) {
  check_run *run = &v->run;
  VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  ai.descriptorSetCount = 1;
  ai.pSetLayouts = &layout;
  if (run->pool_count) {
    ai.descriptorPool = run->pools[run->pool_count - 1];
    VkResult r = v->vk.vkAllocateDescriptorSets(v->device, &ai, out);
    if (r == VK_SUCCESS) return TG_OK;
    if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL) return fail(v, r);
  }
  if (!grow(&v->alloc, (void **)&run->pools, &run->pool_capacity, run->pool_count + 1,
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
  if (r != VK_SUCCESS) return fail(v, r);
  v->live_objects++;
  run->pools[run->pool_count++] = pool;
  ai.descriptorPool = pool;
  r = v->vk.vkAllocateDescriptorSets(v->device, &ai, out);
  return r == VK_SUCCESS ? TG_OK : fail(v, r);
}

/* A counter slot for one verify access: its chunk's set and the dynamic offset. */
static tg_status take_counter(vk_device *v, size_t record, VkDescriptorSet *set, uint32_t *offset) {
  check_run *run = &v->run;
  size_t slot = run->slot_count;
  if (!grow(&v->alloc, (void **)&run->slot_record, &run->slot_capacity, slot + 1,
            sizeof *run->slot_record))
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  size_t chunk = slot / COUNTER_SLOTS;
  if (chunk == run->chunk_count) {
    if (!grow(&v->alloc, (void **)&run->chunks, &run->chunk_capacity, chunk + 1, sizeof *run->chunks))
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
      return fail(v, r);
    }
    v->live_objects++;
    VkMemoryRequirements req;
    v->vk.vkGetBufferMemoryRequirements(v->device, c->buffer, &req);
    tg_status st = block_alloc(v, &req, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, 1, 0, &c->memory);
    if (st != TG_OK) return st;
    if ((r = v->vk.vkBindBufferMemory(v->device, c->buffer, c->memory.b.memory,
                                      c->memory.b.offset)) != VK_SUCCESS)
      return fail(v, r);
    c->mapped = c->memory.b.mapped;
    /* Zeroed by the host before the one submission that uses it. */
    memset(c->mapped, 0, (size_t)bytes);
    if (!c->memory.coherent) {
      VkMappedMemoryRange mr = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
      mr.memory = c->memory.b.memory;
      mr.size = VK_WHOLE_SIZE;
      if ((r = v->vk.vkFlushMappedMemoryRanges(v->device, 1, &mr)) != VK_SUCCESS) return fail(v, r);
    }
    st = allocate_set(v, v->counter_layout, &c->set);
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
static tg_status touch_view(vk_device *v, vk_view *w) {
  if (w->run == v->run.serial) return TG_OK;
  VkDescriptorSet set;
  tg_status st = allocate_set(v, w->image ? v->tensor_image_layout : v->tensor_buffer_layout, &set);
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
static tg_status add_transition(vk_device *v, vk_view *w, size_t *count, VkAccessFlags src_access, int keep) {
  check_run *run = &v->run;
  for (size_t i = 0; i < *count; ++i)
    if (run->barrier_scratch[i].image == w->vk_image) return TG_OK;
  if (!grow(&v->alloc, (void **)&run->barrier_scratch, &run->barrier_capacity, *count + 1,
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
static int written_over(const vk_view *w, const vk_view *r) {
  return r != w && r->image && r->vk_image != VK_NULL_HANDLE && r->ready && r->memory == w->memory &&
         r->offset == w->offset && r->three_d == w->three_d && r->layers == w->layers &&
         r->extent.width == w->extent.width && r->extent.height == w->extent.height &&
         r->extent.depth == w->extent.depth;
}

static int in_place_output(const vk_view *w, const tg__check_access *reads, size_t read_count) {
  for (size_t i = 0; i < read_count; ++i)
    if (written_over(w, reads[i].view)) return 1;
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

static tg_status vk_check_op(void *impl, size_t op, const tg__check_access *reads,
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
      if ((st = touch_view(v, w)) != TG_OK) return st;
      if (w->image && (pass == 1 || !w->ready) &&
          (st = add_transition(v, w, &transitions, src_access, pass == 1 && in_place_output(w, reads, read_count))) !=
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
      return fail(v, r);
    }
    v->live_objects++;
    v->vk.vkCmdSetEvent(cb, run->events[op], VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
  }
  run->ops_recorded++;
  return TG_OK;
}

static tg_status vk_check_end(void *impl, uint64_t *mismatches, uint64_t *checked_bytes) {
  vk_device *v = impl;
  check_run *run = &v->run;
  if (!run->active) return TG_ERROR_INVALID_ARGUMENT;
  VkCommandBuffer cb = v->command_buffer;
  /* Counters become visible to the host once everything has run. */
  VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  v->vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                             0, 1, &mb, 0, NULL, 0, NULL);
  VkResult r = v->vk.vkEndCommandBuffer(cb);
  if (r != VK_SUCCESS) {
    vk_check_abort(v);
    return fail(v, r);
  }
  VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  r = v->vk.vkQueueSubmit(v->queue, 1, &si, v->fence);
  if (r != VK_SUCCESS) {
    vk_check_abort(v);
    return fail(v, r);
  }
  run->pending = 1;
  r = v->vk.vkWaitForFences(v->device, 1, &v->fence, VK_TRUE, UINT64_MAX);
  if (r != VK_SUCCESS) {
    tg_status st = fail(v, r);
    vk_check_abort(v);
    return st;
  }
  v->vk.vkResetFences(v->device, 1, &v->fence);
  run->pending = 0;
  for (size_t c = 0; c < run->chunk_count; ++c) {
    if (!run->chunks[c].memory.coherent) {
      VkMappedMemoryRange mr = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
      mr.memory = run->chunks[c].memory.b.memory;
      mr.size = VK_WHOLE_SIZE;
      if ((r = v->vk.vkInvalidateMappedMemoryRanges(v->device, 1, &mr)) != VK_SUCCESS) {
        tg_status st = fail(v, r);
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

/* ---- speed proxies (tangram/speed.h) ----
 * A timed run is a check run without verify accesses: the proxies are recorded into its
 * command buffer, each after a full compute barrier, each followed by a bottom-of-pipe
 * timestamp; a dispatch's time is the difference to the timestamp before it, scaled by
 * timestampPeriod. An untimed run records the proxies into the running check, as its writers. */

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
      tg_status st = make_set_layout(v, VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER, &v->tensor_texel_layout);
      if (st != TG_OK) return st;
    }
    VkBufferViewCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
    bi.buffer = w->buffer;
    bi.format = format;
    bi.range = texels * tg__texel_bytes(v->run.precision);
    VkResult r = v->vk.vkCreateBufferView(v->device, &bi, v->vk_alloc, &w->texel_view);
    if (r != VK_SUCCESS) {
      w->texel_view = VK_NULL_HANDLE;
      return fail(v, r);
    }
    v->live_objects++;
  }
  if (w->texel_run == v->run.serial) return TG_OK;
  VkDescriptorSet set;
  tg_status st = allocate_set(v, v->tensor_texel_layout, &set);
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
    VkPushConstantRange pc = {VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(proxy_params)};
    VkPipelineLayoutCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    ci.setLayoutCount = 3;
    ci.pSetLayouts = sets;
    ci.pushConstantRangeCount = 1;
    ci.pPushConstantRanges = &pc;
    VkResult r = v->vk.vkCreatePipelineLayout(v->device, &ci, v->vk_alloc, layout);
    if (r != VK_SUCCESS) {
      *layout = VK_NULL_HANDLE;
      return fail(v, r);
    }
  }
  return create_pipeline(v, k_proxy_shaders[out][in][fp16].words, k_proxy_shaders[out][in][fp16].bytes, *layout,
                         &v->proxy_pipelines[out][in][fp16]);
}

static tg_status vk_speed_begin(void *impl, size_t op_count, size_t dispatch_count, tg_precision precision,
                                int timed) {
  vk_device *v = impl;
  v->proxy_timed = timed;
  v->proxy_count = 0;
  if (!timed) return v->run.active ? TG_OK : TG_ERROR_INVALID_ARGUMENT;
  /* Timestamps need a queue that writes them. */
  uint32_t n = 0;
  VkQueueFamilyProperties q[16];
  v->fi.GetPhysicalDeviceQueueFamilyProperties(v->physical, &n, NULL);
  if (n > 16) n = 16;
  v->fi.GetPhysicalDeviceQueueFamilyProperties(v->physical, &n, q);
  if (v->queue_family >= n || q[v->queue_family].timestampValidBits == 0 || v->props.limits.timestampPeriod <= 0)
    return TG_ERROR_UNSUPPORTED;
  if (dispatch_count >= UINT32_MAX - 1) return TG_ERROR_LIMIT;
  if (!grow(&v->alloc, (void **)&v->proxy_op_of, &v->proxy_op_capacity, dispatch_count + 1, sizeof *v->proxy_op_of))
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  tg_status st = vk_check_begin(impl, 0, op_count, 0, precision);
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
      vk_check_abort(v);
      return fail(v, r);
    }
    v->query_capacity = qi.queryCount;
  }
  v->vk.vkCmdResetQueryPool(v->command_buffer, v->query_pool, 0, need);
  v->vk.vkCmdWriteTimestamp(v->command_buffer, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, v->query_pool, 0);
  return TG_OK;
}

static tg_status vk_speed_dispatch(void *impl, const tg__proxy_dispatch *x) {
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
  if ((st = touch_view(v, out)) != TG_OK) return st;
  /* An output image starts over at its op's first proxy; inputs never written read garbage. */
  if (out->image && (out->proxy_run != run->serial || out->proxy_op != x->op) &&
      (st = add_transition(v, out, &transitions, VK_ACCESS_SHADER_WRITE_BIT,
                           written_over(out, in[0]) || written_over(out, in[1]))) != TG_OK)
    return st;
  out->proxy_run = run->serial;
  out->proxy_op = x->op;
  for (uint32_t i = 0; i < x->in_count; ++i) {
    vk_view *w = in[i];
    if ((st = touch_view(v, w)) != TG_OK) return st;
    if (w->image && !w->ready && (st = add_transition(v, w, &transitions, VK_ACCESS_SHADER_WRITE_BIT, 0)) != TG_OK)
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

static tg_status vk_speed_end(void *impl, double *op_ms) {
  vk_device *v = impl;
  if (!v->proxy_timed) return TG_OK; /* the check's end submits */
  uint64_t unused = 0, bytes = 0;
  tg_status st = vk_check_end(impl, &unused, &bytes);
  if (st != TG_OK) return st;
  size_t n = v->proxy_count + 1;
  uint64_t *t = tg__calloc(&v->alloc, n, sizeof *t);
  if (t == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  VkResult r = v->vk.vkGetQueryPoolResults(v->device, v->query_pool, 0, (uint32_t)n, n * sizeof *t, t, sizeof *t,
                                           VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
  if (r != VK_SUCCESS) {
    tg__free(&v->alloc, t);
    return fail(v, r);
  }
  uint32_t n_fam = 0, bits = 64;
  VkQueueFamilyProperties q[16];
  v->fi.GetPhysicalDeviceQueueFamilyProperties(v->physical, &n_fam, NULL);
  if (n_fam > 16) n_fam = 16;
  v->fi.GetPhysicalDeviceQueueFamilyProperties(v->physical, &n_fam, q);
  if (v->queue_family < n_fam && q[v->queue_family].timestampValidBits < 64) bits = q[v->queue_family].timestampValidBits;
  uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
  for (size_t i = 0; op_ms && i + 1 < n; ++i)
    op_ms[v->proxy_op_of[i]] += (double)((t[i + 1] - t[i]) & mask) * v->props.limits.timestampPeriod / 1e6;
  tg__free(&v->alloc, t);
  v->proxy_count = 0;
  return TG_OK;
}

static void vk_speed_abort(void *impl) {
  vk_device *v = impl;
  if (v->proxy_timed) vk_check_abort(v);
  v->proxy_count = 0;
}

/* ---- opening and closing ---- */

/* Destroy what Tangram made on the device, and the device itself unless it is borrowed. */
static void teardown_device(vk_device *v) {
  if (v->device == VK_NULL_HANDLE) return;
  vk_check_abort(v);
  destroy_check_objects(v);
  if (!v->borrowed) v->vk.vkDestroyDevice(v->device, NULL);
  v->device = VK_NULL_HANDLE;
}

static void vk_close(void *impl) {
  vk_device *v = impl;
  if (v == NULL) return;
  teardown_device(v);
  if (!v->borrowed && v->messenger != VK_NULL_HANDLE && v->fi.DestroyDebugUtilsMessengerEXT)
    v->fi.DestroyDebugUtilsMessengerEXT(v->instance, v->messenger, NULL);
  if (!v->borrowed && v->instance != VK_NULL_HANDLE && v->fi.DestroyInstance)
    v->fi.DestroyInstance(v->instance, NULL);
  tg_allocator a = v->alloc;
  tg__free(&a, v->proxy_op_of);
  tg__free(&a, v);
}

static int64_t vk_native_error(void *impl) { return ((vk_device *)impl)->last_error; }

static uint64_t vk_validation_messages(void *impl) {
  return atomic_load(&((vk_device *)impl)->validation_messages);
}

/* Names of instance extensions (`layer` NULL) or of a layer's, into a host array. */
static tg_status list_instance_extensions(vk_device *v, PFN_vkEnumerateInstanceExtensionProperties fn,
                                          const char *layer, VkExtensionProperties **out,
                                          uint32_t *count) {
  *out = NULL;
  *count = 0;
  if (fn == NULL) return TG_OK;
  uint32_t n = 0;
  if (fn(layer, &n, NULL) != VK_SUCCESS || n == 0) return TG_OK;
  VkExtensionProperties *p = tg__calloc(&v->alloc, n, sizeof *p);
  if (p == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  if (fn(layer, &n, p) < 0) n = 0;
  *out = p;
  *count = n;
  return TG_OK;
}

static int has_extension(const VkExtensionProperties *p, uint32_t n, const char *name) {
  for (uint32_t i = 0; i < n; ++i)
    if (strcmp(p[i].extensionName, name) == 0) return 1;
  return 0;
}

#define GET_GLOBAL(v, name) ((PFN_##name)(v)->get_instance_proc_addr(VK_NULL_HANDLE, #name))
#define GET_INSTANCE(v, name) ((PFN_##name)(v)->get_instance_proc_addr((v)->instance, #name))

/* The instance functions of v->instance through v->get_instance_proc_addr; the
 * properties2 queries when `props2` (core in 1.1, else the KHR extension's). 0 when a core
 * function is missing. */
static int load_instance_functions(vk_device *v, int props2, int core11) {
  instance_fns *f = &v->fi;
  f->DestroyInstance = GET_INSTANCE(v, vkDestroyInstance);
  f->EnumeratePhysicalDevices = GET_INSTANCE(v, vkEnumeratePhysicalDevices);
  f->GetPhysicalDeviceProperties = GET_INSTANCE(v, vkGetPhysicalDeviceProperties);
  f->GetPhysicalDeviceMemoryProperties = GET_INSTANCE(v, vkGetPhysicalDeviceMemoryProperties);
  f->GetPhysicalDeviceQueueFamilyProperties = GET_INSTANCE(v, vkGetPhysicalDeviceQueueFamilyProperties);
  f->GetPhysicalDeviceFormatProperties = GET_INSTANCE(v, vkGetPhysicalDeviceFormatProperties);
  f->GetPhysicalDeviceImageFormatProperties = GET_INSTANCE(v, vkGetPhysicalDeviceImageFormatProperties);
  f->EnumerateDeviceExtensionProperties = GET_INSTANCE(v, vkEnumerateDeviceExtensionProperties);
  f->CreateDevice = GET_INSTANCE(v, vkCreateDevice);
  if (props2) {
    if (core11) {
      f->GetPhysicalDeviceProperties2 = GET_INSTANCE(v, vkGetPhysicalDeviceProperties2);
      f->GetPhysicalDeviceMemoryProperties2 = GET_INSTANCE(v, vkGetPhysicalDeviceMemoryProperties2);
    } else {
      f->GetPhysicalDeviceProperties2 =
          (PFN_vkGetPhysicalDeviceProperties2)GET_INSTANCE(v, vkGetPhysicalDeviceProperties2KHR);
      f->GetPhysicalDeviceMemoryProperties2 = (PFN_vkGetPhysicalDeviceMemoryProperties2)GET_INSTANCE(
          v, vkGetPhysicalDeviceMemoryProperties2KHR);
    }
  }
  return f->DestroyInstance && f->EnumeratePhysicalDevices && f->GetPhysicalDeviceProperties &&
         f->GetPhysicalDeviceMemoryProperties && f->GetPhysicalDeviceQueueFamilyProperties &&
         f->GetPhysicalDeviceFormatProperties && f->GetPhysicalDeviceImageFormatProperties &&
         f->EnumerateDeviceExtensionProperties && f->CreateDevice;
}

static tg_status create_instance(vk_device *v, const tg_device_options *options, int *has_props2,
                                 tg_error_info *err) {
  PFN_vkCreateInstance create_instance_fn = GET_GLOBAL(v, vkCreateInstance);
  PFN_vkEnumerateInstanceVersion version_fn = GET_GLOBAL(v, vkEnumerateInstanceVersion);
  PFN_vkEnumerateInstanceExtensionProperties extensions_fn =
      GET_GLOBAL(v, vkEnumerateInstanceExtensionProperties);
  PFN_vkEnumerateInstanceLayerProperties layers_fn = GET_GLOBAL(v, vkEnumerateInstanceLayerProperties);
  if (create_instance_fn == NULL)
    return tg__error(err, TG_ERROR_NO_LOADER, "the Vulkan loader has no vkCreateInstance");
  /* 1.1 when the loader knows it (core vkGetPhysicalDeviceProperties2); a 1.0 loader rejects
   * anything newer. Nothing here needs more. */
  uint32_t api = VK_API_VERSION_1_0, loader = 0;
  if (version_fn && version_fn(&loader) == VK_SUCCESS && loader >= VK_API_VERSION_1_1)
    api = VK_API_VERSION_1_1;
  v->api_version = api;
  v->validation = (options && options->validation) || env_is_one("TANGRAM_VULKAN_VALIDATION");

  VkExtensionProperties *ext = NULL, *layer_ext = NULL;
  uint32_t ext_n = 0, layer_ext_n = 0;
  tg_status st = list_instance_extensions(v, extensions_fn, NULL, &ext, &ext_n);
  if (st != TG_OK) return tg__error(err, st, "out of host memory");
  const char *names[4];
  uint32_t name_n = 0;
  VkInstanceCreateFlags flags = 0;
  *has_props2 = api >= VK_API_VERSION_1_1;
  if (!*has_props2 && has_extension(ext, ext_n, VK_KHR_GET_PHYSICAL_DEVICE_PROPERTIES_2_EXTENSION_NAME)) {
    names[name_n++] = VK_KHR_GET_PHYSICAL_DEVICE_PROPERTIES_2_EXTENSION_NAME;
    *has_props2 = 1;
  }
#ifdef VK_KHR_portability_enumeration
  /* Layered implementations (MoltenVK) are listed only when asked for. */
  if (has_extension(ext, ext_n, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
    names[name_n++] = VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME;
    flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
  }
#endif
  const char *layer = "VK_LAYER_KHRONOS_validation";
  VkDebugUtilsMessengerCreateInfoEXT dbg = {.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkValidationFeaturesEXT features = {.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  const void *chain = NULL;
  if (v->validation) {
    int found = 0;
    uint32_t n = 0;
    if (layers_fn && layers_fn(&n, NULL) == VK_SUCCESS && n) {
      VkLayerProperties *lp = tg__calloc(&v->alloc, n, sizeof *lp);
      if (lp == NULL) {
        tg__free(&v->alloc, ext);
        return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
      }
      if (layers_fn(&n, lp) >= 0)
        for (uint32_t i = 0; i < n; ++i) found |= strcmp(lp[i].layerName, layer) == 0;
      tg__free(&v->alloc, lp);
    }
    if (found) st = list_instance_extensions(v, extensions_fn, layer, &layer_ext, &layer_ext_n);
    int debug_utils = has_extension(ext, ext_n, VK_EXT_DEBUG_UTILS_EXTENSION_NAME) ||
                      has_extension(layer_ext, layer_ext_n, VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    int sync = has_extension(layer_ext, layer_ext_n, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
    tg__free(&v->alloc, layer_ext);
    if (st != TG_OK || !found || !debug_utils || !sync) {
      tg__free(&v->alloc, ext);
      if (st != TG_OK) return tg__error(err, st, "out of host memory");
      return tg__error(err, TG_ERROR_UNSUPPORTED,
                       "Vulkan validation was requested but %s", !found
                           ? "the layer VK_LAYER_KHRONOS_validation is not installed"
                           : !debug_utils ? "VK_EXT_debug_utils is missing"
                                          : "the layer lacks VK_EXT_validation_features");
    }
    names[name_n++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    names[name_n++] = VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME;
    dbg.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    dbg.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                      VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                      VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    dbg.pfnUserCallback = on_debug_message;
    dbg.pUserData = v;
    features.enabledValidationFeatureCount = 1;
    features.pEnabledValidationFeatures = enables;
    /* Chained messenger: also hears vkCreateInstance and vkDestroyInstance. */
    features.pNext = &dbg;
    chain = &features;
  }
  tg__free(&v->alloc, ext);

  VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "tangram";
  app.pEngineName = "tangram";
  app.apiVersion = api;
  VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pNext = chain;
  ci.flags = flags;
  ci.pApplicationInfo = &app;
  ci.enabledLayerCount = v->validation ? 1 : 0;
  ci.ppEnabledLayerNames = &layer;
  ci.enabledExtensionCount = name_n;
  ci.ppEnabledExtensionNames = names;
  VkResult r = create_instance_fn(&ci, NULL, &v->instance);
  if (r != VK_SUCCESS) {
    v->instance = VK_NULL_HANDLE;
    v->last_error = r;
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER || r == VK_ERROR_INITIALIZATION_FAILED)
      return tg__error(err, TG_ERROR_NO_DEVICE,
                       "vkCreateInstance failed with %s (%d): no usable Vulkan driver is installed",
                       result_name(r), (int)r);
    return tg__error(err, status_of(r), "vkCreateInstance failed with %s (%d)", result_name(r),
                     (int)r);
  }
  if (!load_instance_functions(v, *has_props2, api >= VK_API_VERSION_1_1))
    return tg__error(err, TG_ERROR_NO_LOADER, "the Vulkan loader lacks core instance functions");
  instance_fns *f = &v->fi;
  if (v->validation) {
    f->CreateDebugUtilsMessengerEXT = GET_INSTANCE(v, vkCreateDebugUtilsMessengerEXT);
    f->DestroyDebugUtilsMessengerEXT = GET_INSTANCE(v, vkDestroyDebugUtilsMessengerEXT);
    if (!f->CreateDebugUtilsMessengerEXT || !f->DestroyDebugUtilsMessengerEXT)
      return tg__error(err, TG_ERROR_UNSUPPORTED, "VK_EXT_debug_utils functions are missing");
    r = f->CreateDebugUtilsMessengerEXT(v->instance, &dbg, NULL, &v->messenger);
    if (r != VK_SUCCESS) {
      v->messenger = VK_NULL_HANDLE;
      v->last_error = r;
      return tg__error(err, status_of(r), "vkCreateDebugUtilsMessengerEXT failed (%d)", (int)r);
    }
  }
  return TG_OK;
}

static int device_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 4;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 3;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 1;
    default: return 0;
  }
}

/* The first queue family that can compute, or UINT32_MAX. */
static uint32_t compute_family(vk_device *v, VkPhysicalDevice pd) {
  uint32_t n = 0;
  v->fi.GetPhysicalDeviceQueueFamilyProperties(pd, &n, NULL);
  VkQueueFamilyProperties q[16];
  if (n > 16) n = 16;
  v->fi.GetPhysicalDeviceQueueFamilyProperties(pd, &n, q);
  for (uint32_t i = 0; i < n; ++i)
    if ((q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && q[i].queueCount > 0) return i;
  return UINT32_MAX;
}

static int contains_ci(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (; *hay; ++hay) {
    size_t i = 0;
    while (i < n && hay[i] && (hay[i] | 0x20) == (needle[i] | 0x20)) ++i;
    if (i == n) return 1;
  }
  return n == 0;
}

static tg_status choose_physical_device(vk_device *v, const tg_device_options *options,
                                        tg_error_info *err) {
  uint32_t n = 0;
  VkResult r = v->fi.EnumeratePhysicalDevices(v->instance, &n, NULL);
  if (r < 0 || n == 0) {
    if (r < 0) v->last_error = r;
    return tg__error(err, TG_ERROR_NO_DEVICE,
                     "the Vulkan loader found no device (driver code %d); is a driver (ICD) "
                     "installed, or do VK_DRIVER_FILES / VK_ICD_FILENAMES point elsewhere?",
                     (int)r);
  }
  VkPhysicalDevice *list = tg__calloc(&v->alloc, n, sizeof *list);
  if (list == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
  r = v->fi.EnumeratePhysicalDevices(v->instance, &n, list);
  if (r < 0) {
    tg__free(&v->alloc, list);
    v->last_error = r;
    return tg__error(err, status_of(r), "vkEnumeratePhysicalDevices failed (%d)", (int)r);
  }
  const char *want = options ? options->device : NULL;
  int by_index = want && *want != '\0';
  for (const char *p = want; by_index && *p; ++p) by_index = *p >= '0' && *p <= '9';
  int best = -1, best_rank = -1;
  char names[200] = "";
  for (uint32_t i = 0; i < n; ++i) {
    VkPhysicalDeviceProperties p;
    v->fi.GetPhysicalDeviceProperties(list[i], &p);
    size_t used = strlen(names);
    snprintf(names + used, sizeof names - used, "%s%u: %.60s", i ? ", " : "", i, p.deviceName);
    if (compute_family(v, list[i]) == UINT32_MAX) continue;
    if (by_index) {
      if (strtoul(want, NULL, 10) == i) best = (int)i;
    } else if (want && *want) {
      if (best < 0 && contains_ci(p.deviceName, want)) best = (int)i;
    } else if (device_rank(p.deviceType) > best_rank) {
      best = (int)i;
      best_rank = device_rank(p.deviceType);
    }
  }
  if (best < 0) {
    tg__free(&v->alloc, list);
    if (want && *want)
      return tg__error(err, TG_ERROR_NO_DEVICE, "no Vulkan device with compute matches '%s' (have %s)",
                       want, names);
    return tg__error(err, TG_ERROR_NO_DEVICE, "no Vulkan device has a compute queue (have %s)", names);
  }
  v->physical = list[best];
  tg__free(&v->alloc, list);
  v->queue_family = compute_family(v, v->physical);
  v->fi.GetPhysicalDeviceProperties(v->physical, &v->props);
  v->fi.GetPhysicalDeviceMemoryProperties(v->physical, &v->memory_props);
  if (v->props.apiVersion < v->api_version) v->api_version = v->props.apiVersion;
  return TG_OK;
}

/* Device-level facts found while creating the device. */
typedef struct device_caps {
  int memory_budget;
  int maintenance3;
  int driver_properties;
} device_caps;

/* What the physical device's extensions and API version allow Tangram to query.
 * `*portability`: a portability (layered) implementation. */
static tg_status query_caps(vk_device *v, device_caps *caps, int *portability, tg_error_info *err) {
  memset(caps, 0, sizeof *caps);
  uint32_t n = 0;
  VkExtensionProperties *ext = NULL;
  if (v->fi.EnumerateDeviceExtensionProperties(v->physical, NULL, &n, NULL) == VK_SUCCESS && n) {
    ext = tg__calloc(&v->alloc, n, sizeof *ext);
    if (ext == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    if (v->fi.EnumerateDeviceExtensionProperties(v->physical, NULL, &n, ext) < 0) n = 0;
  }
  int props2 = v->fi.GetPhysicalDeviceProperties2 != NULL;
  caps->memory_budget = props2 && has_extension(ext, n, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
  caps->maintenance3 = props2 && (v->api_version >= VK_API_VERSION_1_1 ||
                                  has_extension(ext, n, VK_KHR_MAINTENANCE_3_EXTENSION_NAME));
  caps->driver_properties = props2 && has_extension(ext, n, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
  *portability = has_extension(ext, n, "VK_KHR_portability_subset");
  tg__free(&v->alloc, ext);
  return TG_OK;
}

static tg_status create_device(vk_device *v, device_caps *caps, tg_error_info *err) {
  int portability = 0;
  tg_status st = query_caps(v, caps, &portability, err);
  if (st != TG_OK) return st;
  const char *names[1];
  uint32_t name_n = 0;
  /* A portability (layered) implementation must be told we know it is one. */
  if (portability) names[name_n++] = "VK_KHR_portability_subset";

  float priority = 1.0f;
  VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qi.queueFamilyIndex = v->queue_family;
  qi.queueCount = 1;
  qi.pQueuePriorities = &priority;
  VkDeviceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  ci.queueCreateInfoCount = 1;
  ci.pQueueCreateInfos = &qi;
  ci.enabledExtensionCount = name_n;
  ci.ppEnabledExtensionNames = names;
  VkResult r = v->fi.CreateDevice(v->physical, &ci, NULL, &v->device);
  if (r != VK_SUCCESS) {
    v->device = VK_NULL_HANDLE;
    v->last_error = r;
    return tg__error(err, status_of(r) == TG_ERROR_NO_DEVICE ? TG_ERROR_DEVICE : status_of(r),
                     "vkCreateDevice on %s failed with %s (%d)", v->props.deviceName,
                     result_name(r), (int)r);
  }
  /* volkLoadDeviceTable reads volk's global vkGetDeviceProcAddr: load this instance's under
   * the lock, and keep only the device table. */
  pthread_mutex_lock(&k_volk_mutex);
  volkLoadInstanceOnly(v->instance);
  volkLoadDeviceTable(&v->vk, v->device);
  pthread_mutex_unlock(&k_volk_mutex);
  if (!v->vk.vkGetDeviceQueue || !v->vk.vkCreateBuffer || !v->vk.vkCmdDispatch)
    return tg__error(err, TG_ERROR_DEVICE, "the Vulkan device lacks core functions");
  v->vk.vkGetDeviceQueue(v->device, v->queue_family, 0, &v->queue);
  return TG_OK;
}

/* Image format limits for storage images of `format` and `type`; 0 when unsupported. */
static int image_limits(vk_device *v, VkFormat format, VkImageType type, VkImageFormatProperties *out) {
  VkFormatProperties fp;
  v->fi.GetPhysicalDeviceFormatProperties(v->physical, format, &fp);
  if (!(fp.optimalTilingFeatures & VK_FORMAT_FEATURE_STORAGE_IMAGE_BIT)) return 0;
  return v->fi.GetPhysicalDeviceImageFormatProperties(v->physical, format, type,
                                                      VK_IMAGE_TILING_OPTIMAL, v->image_usage,
                                                      v->image_flags, out) == VK_SUCCESS;
}

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* Probe the requirements of one resource into the running alignment / type-bit totals. */
static tg_status probe(vk_device *v, tg_storage storage, tg_extent e, uint64_t bytes,
                       tg_precision p, uint64_t *alignment, uint32_t *bits) {
  tg_tensor_resource res = {storage, e, bytes};
  resource_shape s;
  VkMemoryRequirements req;
  tg_status st = probe_requirements(v, &res, p, &s, &req);
  if (st != TG_OK) return st;
  if (req.alignment > *alignment) *alignment = req.alignment;
  *bits &= req.memoryTypeBits;
  return TG_OK;
}

/* Version fields, spelled out: older headers lack VK_API_VERSION_MAJOR and friends. */
#define API_MAJOR(v) (((v) >> 22) & 0x7Fu)
#define API_MINOR(v) (((v) >> 12) & 0x3FFu)
#define API_PATCH(v) ((v) & 0xFFFu)

static tg_status describe_device(vk_device *v, const device_caps *caps, tg_device_info *info,
                                 tg_error_info *err) {
  const VkPhysicalDeviceProperties *p = &v->props;
  const VkPhysicalDeviceLimits *l = &p->limits;
  /* Tensors that share memory are images of their own: created alike with the alias flag, the
   * two images of an in-place pair (identical, bound at one offset) share their texels. */
  v->image_flags = v->api_version >= VK_API_VERSION_1_1 ? VK_IMAGE_CREATE_ALIAS_BIT : 0;
  snprintf(info->name, sizeof info->name, "%s", p->deviceName);
  const char *kind = "other";
  switch (p->deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: kind = "gpu"; break;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: kind = "integrated-gpu"; break;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: kind = "cpu"; break;
    default: break;
  }
  snprintf(info->kind, sizeof info->kind, "%s", kind);
  VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  VkPhysicalDeviceMaintenance3Properties m3 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceDriverPropertiesKHR dp = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES_KHR};
  if (caps->maintenance3) {
    m3.pNext = p2.pNext;
    p2.pNext = &m3;
  }
  if (caps->driver_properties) {
    dp.pNext = p2.pNext;
    p2.pNext = &dp;
  }
  if (p2.pNext) v->fi.GetPhysicalDeviceProperties2(v->physical, &p2);
  uint32_t av = p->apiVersion;
  if (caps->driver_properties)
    snprintf(info->driver, sizeof info->driver, "Vulkan %u.%u.%u, %.100s (%.100s)", API_MAJOR(av),
             API_MINOR(av), API_PATCH(av), dp.driverName, dp.driverInfo);
  else
    snprintf(info->driver, sizeof info->driver, "Vulkan %u.%u.%u, driver version 0x%x, vendor 0x%04x",
             API_MAJOR(av), API_MINOR(av), API_PATCH(av), p->driverVersion, p->vendorID);

  VkImageFormatProperties f2, f3, h2, h3;
  v->fp32_images = image_limits(v, VK_FORMAT_R32G32B32A32_SFLOAT, VK_IMAGE_TYPE_2D, &f2);
  v->fp16_images = image_limits(v, VK_FORMAT_R16G16B16A16_SFLOAT, VK_IMAGE_TYPE_2D, &h2);
  v->fp32_images_3d = image_limits(v, VK_FORMAT_R32G32B32A32_SFLOAT, VK_IMAGE_TYPE_3D, &f3);
  v->fp16_images_3d = image_limits(v, VK_FORMAT_R16G16B16A16_SFLOAT, VK_IMAGE_TYPE_3D, &h3);
  tg_device_limits *lim = &info->limits;
  memset(lim, 0, sizeof *lim);
  lim->max_buffer_bytes = l->maxStorageBufferRange; /* the check binds whole buffers */
  lim->max_image_buffer_texels = l->maxTexelBufferElements;
  lim->max_texture_2d_width = l->maxImageDimension2D;
  lim->max_texture_2d_height = l->maxImageDimension2D;
  lim->max_texture_array_layers = l->maxImageArrayLayers;
  lim->max_texture_3d_width = lim->max_texture_3d_height = lim->max_texture_3d_depth =
      l->maxImageDimension3D;
  if (v->fp32_images) {
    lim->max_texture_2d_width = min_u64(lim->max_texture_2d_width, f2.maxExtent.width);
    lim->max_texture_2d_height = min_u64(lim->max_texture_2d_height, f2.maxExtent.height);
    lim->max_texture_array_layers = min_u64(lim->max_texture_array_layers, f2.maxArrayLayers);
  }
  if (v->fp32_images_3d) {
    lim->max_texture_3d_width = min_u64(lim->max_texture_3d_width, f3.maxExtent.width);
    lim->max_texture_3d_height = min_u64(lim->max_texture_3d_height, f3.maxExtent.height);
    lim->max_texture_3d_depth = min_u64(lim->max_texture_3d_depth, f3.maxExtent.depth);
  }

  /* Probes: the real alignments, and the memory types that take buffers and images alike. */
  uint64_t buffer_align = 1, image_align = 1;
  uint32_t buffer_bits = ~0u, image_bits = ~0u;
  tg_status st = probe(v, TG_STORAGE_BUFFER, (tg_extent){256, 1, 1}, 256, TG_PRECISION_FP32,
                       &buffer_align, &buffer_bits);
  for (int fp16 = 0; fp16 < 2 && st == TG_OK; ++fp16) {
    tg_precision prec = fp16 ? TG_PRECISION_FP16 : TG_PRECISION_FP32;
    if (!(fp16 ? v->fp16_images : v->fp32_images)) continue;
    st = probe(v, TG_STORAGE_TEXTURE_2D, (tg_extent){8, 8, 1}, 0, prec, &image_align, &image_bits);
    if (st == TG_OK)
      st = probe(v, TG_STORAGE_TEXTURE_ARRAY, (tg_extent){8, 8, 4}, 0, prec, &image_align, &image_bits);
    if (st == TG_OK && (fp16 ? v->fp16_images_3d : v->fp32_images_3d))
      st = probe(v, TG_STORAGE_TEXTURE_3D, (tg_extent){8, 8, 8}, 0, prec, &image_align, &image_bits);
  }
  if (st != TG_OK)
    return tg__error(err, st, "probing resource requirements on %s failed (driver code %lld)",
                     p->deviceName, (long long)v->last_error);
  int images = v->fp32_images;
  v->arena_type_bits = images && (buffer_bits & image_bits) ? buffer_bits & image_bits : buffer_bits;
  int arena_type = pick_memory_type(&v->memory_props, v->arena_type_bits, 0, 1);
  if (arena_type < 0)
    return tg__error(err, TG_ERROR_NO_DEVICE, "%s has no memory type for storage buffers", p->deviceName);

  uint32_t heap = v->memory_props.memoryTypes[arena_type].heapIndex;
  uint64_t heap_size = v->memory_props.memoryHeaps[heap].size;
  info->memory_budget = heap_size;
  if (caps->memory_budget && v->fi.GetPhysicalDeviceMemoryProperties2) {
    VkPhysicalDeviceMemoryBudgetPropertiesEXT budget = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
    VkPhysicalDeviceMemoryProperties2 mp2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
    mp2.pNext = &budget;
    v->fi.GetPhysicalDeviceMemoryProperties2(v->physical, &mp2);
    if (budget.heapBudget[heap] > 0) info->memory_budget = min_u64(budget.heapBudget[heap], heap_size);
  }
  info->max_allocation = heap_size;
  if (caps->maintenance3 && m3.maxMemoryAllocationSize > 0)
    info->max_allocation = min_u64(m3.maxMemoryAllocationSize, heap_size);
  /* A tensor's own VkBuffer at an offset needs the memory alignment; a descriptor at an offset
   * needs minStorageBufferOffsetAlignment: honour both. */
  info->buffer_alignment = buffer_align > l->minStorageBufferOffsetAlignment
                               ? buffer_align
                               : l->minStorageBufferOffsetAlignment;
  info->image_alignment = image_align;
  v->arena_alignment = info->buffer_alignment > image_align ? info->buffer_alignment : image_align;
  info->buffer_image_granularity = l->bufferImageGranularity ? l->bufferImageGranularity : 1;
  info->images = images;
  info->fp16_images = v->fp16_images;
  info->image2d_from_buffer = 0;
  info->arena_images = images && (buffer_bits & image_bits) != 0;
  info->out_of_order = 1;
  info->read_write_images = v->image_flags != 0; /* in-place images alias only with the flag */
  return TG_OK;
}

static tg_status vk_open(const tg_device_options *options, const tg_allocator *alloc, void **impl,
                         tg_device_info *info, tg_error_info *err) {
  vk_device *v = tg__calloc(alloc, 1, sizeof *v);
  if (v == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
  v->alloc = *alloc;
  v->buffer_usage = RESOURCE_USAGE_BUFFER;
  v->image_usage = RESOURCE_USAGE_IMAGE;
  atomic_init(&v->validation_messages, 0);
  /* The loader is loaded once per process and stays (volk keeps no handle to unload it). */
  pthread_mutex_lock(&k_volk_mutex);
  if (vkGetInstanceProcAddr == NULL) (void)volkInitialize();
  v->get_instance_proc_addr = vkGetInstanceProcAddr;
  pthread_mutex_unlock(&k_volk_mutex);
  if (v->get_instance_proc_addr == NULL) {
    tg__free(alloc, v);
    return tg__error(err, TG_ERROR_NO_LOADER,
                     "the Vulkan loader (libvulkan.so.1) was not found: install a Vulkan loader and driver");
  }
  int props2 = 0;
  device_caps caps;
  tg_status st = create_instance(v, options, &props2, err);
  if (st == TG_OK) st = choose_physical_device(v, options, err);
  if (st == TG_OK) st = create_device(v, &caps, err);
  if (st == TG_OK) st = describe_device(v, &caps, info, err);
  if (st != TG_OK) {
    vk_close(v);
    return st;
  }
  *impl = v;
  return TG_OK;
}


/* ---- wrapping an engine's device ---- */

/* Check what the engine lent: the physical device is one of the instance's, the queue family
 * exists and computes. Nothing is created. */
static tg_status check_borrowed(vk_device *v, const tg_vulkan_device_desc *d, tg_error_info *err) {
  uint32_t n = 0;
  VkResult r = v->fi.EnumeratePhysicalDevices(v->instance, &n, NULL);
  if (r < 0) {
    v->last_error = r;
    return tg__error(err, status_of(r), "tg_device_wrap_vulkan: vkEnumeratePhysicalDevices failed (%d)",
                     (int)r);
  }
  VkPhysicalDevice *list = tg__calloc(&v->alloc, n ? n : 1, sizeof *list);
  if (list == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
  r = v->fi.EnumeratePhysicalDevices(v->instance, &n, list);
  int found = 0;
  for (uint32_t i = 0; r >= 0 && i < n; ++i) found |= list[i] == d->physical_device;
  tg__free(&v->alloc, list);
  if (r < 0) {
    v->last_error = r;
    return tg__error(err, status_of(r), "tg_device_wrap_vulkan: vkEnumeratePhysicalDevices failed (%d)",
                     (int)r);
  }
  if (!found)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                     "tg_device_wrap_vulkan: physical_device is not one of the %u physical devices "
                     "of instance", n);
  v->fi.GetPhysicalDeviceProperties(v->physical, &v->props);
  n = 0;
  v->fi.GetPhysicalDeviceQueueFamilyProperties(v->physical, &n, NULL);
  if (d->queue_family_index >= n)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                     "tg_device_wrap_vulkan: queue_family_index %u is out of range: %s has %u "
                     "queue families", d->queue_family_index, v->props.deviceName, n);
  VkQueueFamilyProperties *q = tg__calloc(&v->alloc, n, sizeof *q);
  if (q == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
  v->fi.GetPhysicalDeviceQueueFamilyProperties(v->physical, &n, q);
  VkQueueFlags flags = d->queue_family_index < n ? q[d->queue_family_index].queueFlags : 0;
  tg__free(&v->alloc, q);
  if (!(flags & VK_QUEUE_COMPUTE_BIT))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                     "tg_device_wrap_vulkan: queue family %u of %s has no compute (flags 0x%x): "
                     "Tangram's on-device check runs compute shaders on the queue",
                     d->queue_family_index, v->props.deviceName, (unsigned)flags);
  return TG_OK;
}

/* The device functions, through the engine's vkGetDeviceProcAddr. volkLoadDeviceTable reads
 * volk's global vkGetDeviceProcAddr: set it to the engine's under the lock, then put back what
 * was there. */
static tg_status load_borrowed_device(vk_device *v, tg_error_info *err) {
  PFN_vkGetDeviceProcAddr gdpa = GET_INSTANCE(v, vkGetDeviceProcAddr);
  if (gdpa == NULL)
    return tg__error(err, TG_ERROR_NO_LOADER,
                     "tg_device_wrap_vulkan: get_instance_proc_addr gives no vkGetDeviceProcAddr");
  pthread_mutex_lock(&k_volk_mutex);
  PFN_vkGetDeviceProcAddr saved = vkGetDeviceProcAddr;
  vkGetDeviceProcAddr = gdpa;
  volkLoadDeviceTable(&v->vk, v->device);
  vkGetDeviceProcAddr = saved;
  pthread_mutex_unlock(&k_volk_mutex);
  /* Every device function Tangram calls. */
  const struct VolkDeviceTable *t = &v->vk;
#define NEED(f) {#f, (PFN_vkVoidFunction)t->f}
  struct {
    const char *name;
    PFN_vkVoidFunction fn;
  } need[] = {
      NEED(vkCreateBuffer), NEED(vkDestroyBuffer), NEED(vkCreateImage),
      NEED(vkDestroyImage), NEED(vkCreateImageView), NEED(vkDestroyImageView),
      NEED(vkGetBufferMemoryRequirements), NEED(vkGetImageMemoryRequirements), NEED(vkAllocateMemory),
      NEED(vkFreeMemory), NEED(vkMapMemory), NEED(vkFlushMappedMemoryRanges),
      NEED(vkInvalidateMappedMemoryRanges), NEED(vkBindBufferMemory), NEED(vkBindImageMemory),
      NEED(vkCreateCommandPool), NEED(vkDestroyCommandPool), NEED(vkResetCommandPool),
      NEED(vkAllocateCommandBuffers), NEED(vkBeginCommandBuffer), NEED(vkEndCommandBuffer),
      NEED(vkCreateFence), NEED(vkDestroyFence), NEED(vkWaitForFences),
      NEED(vkResetFences), NEED(vkCreateEvent), NEED(vkDestroyEvent),
      NEED(vkCreateDescriptorSetLayout), NEED(vkDestroyDescriptorSetLayout), NEED(vkCreatePipelineLayout),
      NEED(vkDestroyPipelineLayout), NEED(vkCreateShaderModule), NEED(vkDestroyShaderModule),
      NEED(vkCreateComputePipelines), NEED(vkDestroyPipeline), NEED(vkCreateDescriptorPool),
      NEED(vkDestroyDescriptorPool), NEED(vkAllocateDescriptorSets), NEED(vkUpdateDescriptorSets),
      NEED(vkCmdBindPipeline), NEED(vkCmdBindDescriptorSets), NEED(vkCmdPushConstants),
      NEED(vkCmdDispatch), NEED(vkCmdPipelineBarrier), NEED(vkCmdSetEvent),
      NEED(vkCmdWaitEvents), NEED(vkQueueSubmit), NEED(vkQueueWaitIdle),
  };
#undef NEED
  for (size_t i = 0; i < sizeof need / sizeof need[0]; ++i)
    if (need[i].fn == NULL)
      return tg__error(err, TG_ERROR_NO_LOADER,
                       "tg_device_wrap_vulkan: the device gives no %s through "
                       "get_instance_proc_addr's vkGetDeviceProcAddr", need[i].name);
  return TG_OK;
}

tg_status tg__vulkan_wrap(const void *borrowed, const tg_device_options *options,
                          const tg_allocator *alloc, void **impl, tg_device_info *info,
                          tg_error_info *err) {
  (void)options;
  const tg_vulkan_device_desc *d = borrowed;
  const char *missing = d == NULL                                   ? "desc"
                        : d->get_instance_proc_addr == NULL         ? "desc->get_instance_proc_addr"
                        : d->instance == VK_NULL_HANDLE             ? "desc->instance"
                        : d->physical_device == VK_NULL_HANDLE      ? "desc->physical_device"
                        : d->device == VK_NULL_HANDLE               ? "desc->device"
                        : d->queue == VK_NULL_HANDLE                ? "desc->queue"
                        : d->memory && (!d->memory->allocate || !d->memory->free)
                            ? "desc->memory->allocate or ->free"
                            : NULL;
  if (missing)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "tg_device_wrap_vulkan: %s is NULL", missing);
  vk_device *v = tg__calloc(alloc, 1, sizeof *v);
  if (v == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
  v->alloc = *alloc;
  v->borrowed = 1;
  v->vk_alloc = d->allocation_callbacks;
  v->memory_cb = d->memory;
  v->buffer_usage = RESOURCE_USAGE_BUFFER | d->buffer_usage;
  v->image_usage = RESOURCE_USAGE_IMAGE | d->image_usage;
  v->get_instance_proc_addr = d->get_instance_proc_addr;
  v->instance = d->instance;
  v->physical = d->physical_device;
  v->queue_family = d->queue_family_index;
  atomic_init(&v->validation_messages, 0);
  uint32_t api = d->api_version ? d->api_version : VK_API_VERSION_1_0;
  tg_status st = TG_OK;
  if (!load_instance_functions(v, api >= VK_API_VERSION_1_1, 1))
    st = tg__error(err, TG_ERROR_NO_LOADER,
                   "tg_device_wrap_vulkan: get_instance_proc_addr gives no core instance functions "
                   "for instance");
  if (st == TG_OK) st = check_borrowed(v, d, err);
  if (st == TG_OK) {
    v->fi.GetPhysicalDeviceMemoryProperties(v->physical, &v->memory_props);
    v->api_version = api < v->props.apiVersion ? api : v->props.apiVersion;
    if (v->api_version < VK_API_VERSION_1_1) {
      v->fi.GetPhysicalDeviceProperties2 = NULL;
      v->fi.GetPhysicalDeviceMemoryProperties2 = NULL;
    }
    v->device = d->device;
    v->queue = d->queue;
    st = load_borrowed_device(v, err);
  }
  device_caps caps;
  int portability;
  if (st == TG_OK) st = query_caps(v, &caps, &portability, err);
  if (st == TG_OK) st = describe_device(v, &caps, info, err);
  if (st != TG_OK) {
    vk_close(v);
    return st;
  }
  *impl = v;
  return TG_OK;
}

/* ---- shared memory ----
 * A HOST_VISIBLE block (block_alloc with host access: Tangram's own, or the engine's through its
 * memory callbacks on a wrapped device), mapped for its whole life. map() invalidates and unmap() flushes the whole range when the type is not
 * HOST_COHERENT; coherent memory needs neither. The device's writes are made available to the
 * host by check_sync's barrier and fence; the host's writes reach device work submitted later
 * through the submission itself. */

/* Own blocks of a non-coherent type need flush/invalidate; the engine's are coherent. */
static int host_coherent(const vk_memory *m) { return m->block.coherent; }

static tg_status vk_allocate_shared(void *impl, const tg_tensor_resource *res,
                                    tg_precision precision, int arena, void **memory) {
  vk_device *v = impl;
  (void)arena;
  if (tg_storage_is_texture(res->storage)) return TG_ERROR_UNSUPPORTED; /* optimal tiling */
  resource_shape shape;
  VkMemoryRequirements req;
  tg_status st = probe_requirements(v, res, precision, &shape, &req);
  if (st != TG_OK) return st;
  vk_memory *m = tg__calloc(&v->alloc, 1, sizeof *m);
  if (m == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  uint64_t size = res->bytes;
  if (req.size > size) size = req.size;
  m->size = size;
  if (size == 0) {
    *memory = m;
    return TG_OK;
  }
  req.size = size;
  /* A host-visible block, mapped for its whole life: Tangram's own, or the engine's through
   * its memory callbacks (host_access) on a wrapped device. */
  st = block_alloc(v, &req, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, 1, 1, &m->block);
  if (st != TG_OK) {
    tg__free(&v->alloc, m);
    return st;
  }
  m->type = m->block.b.memory_type;
  m->mapped = m->block.b.mapped;
  *memory = m;
  return TG_OK;
}

/* Flush (host writes -> device) or invalidate (device writes -> host) a shared block. */
static tg_status sync_mapped(vk_device *v, vk_memory *m, int flush) {
  if (host_coherent(m)) return TG_OK;
  VkMappedMemoryRange mr = {.sType = VK_STRUCTURE_TYPE_MAPPED_MEMORY_RANGE};
  mr.memory = m->block.b.memory;
  mr.offset = m->block.b.offset;
  mr.size = VK_WHOLE_SIZE;
  VkResult r = flush ? v->vk.vkFlushMappedMemoryRanges(v->device, 1, &mr)
                     : v->vk.vkInvalidateMappedMemoryRanges(v->device, 1, &mr);
  return r == VK_SUCCESS ? TG_OK : fail(v, r);
}

static tg_status vk_map(void *impl, void *memory, void **host) {
  vk_device *v = impl;
  vk_memory *m = memory;
  *host = NULL;
  if (m == NULL) return TG_ERROR_INVALID_ARGUMENT;
  if (m->block.b.memory == VK_NULL_HANDLE) return TG_OK;
  if (m->mapped == NULL) return TG_ERROR_INVALID_ARGUMENT; /* not shared memory */
  tg_status st = sync_mapped(v, m, 0);
  if (st != TG_OK) return st;
  *host = m->mapped;
  return TG_OK;
}

static tg_status vk_unmap(void *impl, void *memory) {
  vk_device *v = impl;
  vk_memory *m = memory;
  if (m == NULL) return TG_ERROR_INVALID_ARGUMENT;
  if (m->block.b.memory == VK_NULL_HANDLE) return TG_OK;
  if (m->mapped == NULL) return TG_ERROR_INVALID_ARGUMENT;
  return sync_mapped(v, m, 1);
}

/* Submit what the run recorded so far, wait for it, and go on recording into a fresh command
 * buffer that starts after everything before it (and after the host's writes). */
static tg_status vk_check_sync(void *impl) {
  vk_device *v = impl;
  check_run *run = &v->run;
  if (!run->active || run->pending) return TG_ERROR_INVALID_ARGUMENT;
  VkCommandBuffer cb = v->command_buffer;
  VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  v->vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                             0, 1, &mb, 0, NULL, 0, NULL);
  VkResult r = v->vk.vkEndCommandBuffer(cb);
  if (r != VK_SUCCESS) return fail(v, r);
  VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  r = v->vk.vkQueueSubmit(v->queue, 1, &si, v->fence);
  if (r != VK_SUCCESS) return fail(v, r);
  run->pending = 1;
  r = v->vk.vkWaitForFences(v->device, 1, &v->fence, VK_TRUE, UINT64_MAX);
  if (r != VK_SUCCESS) return fail(v, r);
  v->vk.vkResetFences(v->device, 1, &v->fence);
  run->pending = 0;
  if ((r = v->vk.vkResetCommandPool(v->device, v->command_pool, 0)) != VK_SUCCESS) return fail(v, r);
  VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  if ((r = v->vk.vkBeginCommandBuffer(cb, &bi)) != VK_SUCCESS) return fail(v, r);
  VkMemoryBarrier after = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  after.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT;
  after.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  v->vk.vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                             VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &after, 0, NULL, 0, NULL);
  return TG_OK;
}

/* ---- the backend ---- */

static const tg__backend_vtable k_vulkan = {
    TG_BACKEND_VULKAN, vk_open,        vk_close,       vk_native_error, vk_validation_messages,
    vk_requirements,   vk_allocate,    vk_release,     vk_bind,         vk_unbind,
    vk_handle,         vk_check_begin, vk_check_op,    vk_check_end,    vk_check_abort,
    vk_allocate_shared, vk_map,        vk_unmap,       vk_check_sync,
    vk_speed_begin,    vk_speed_dispatch, vk_speed_end, vk_speed_abort,
};

const tg__backend_vtable *tg__vulkan_backend(void) { return &k_vulkan; }

int64_t tg__vulkan_live_objects(const void *impl) { return ((const vk_device *)impl)->live_objects; }

void tg__vulkan_fail_call_at(void *impl, uint64_t n) {
  vk_device *v = impl;
  v->fail_call_at = n;
  v->calls = 0;
}

uint64_t tg__vulkan_calls(const void *impl) { return ((const vk_device *)impl)->calls; }

const char *tg__vulkan_first_message(const void *impl) {
  return ((const vk_device *)impl)->first_message;
}

uint64_t tg__vulkan_teardown_device(void *impl) {
  vk_device *v = impl;
  teardown_device(v);
  return atomic_load(&v->validation_messages);
}
