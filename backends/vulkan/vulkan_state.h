/* The Vulkan backend's state and what its files share (device.c, resources.c, memory.c,
 * check.c, speed.c, results.c). Private to backends/vulkan/: it includes volk, which the rest
 * of the library and the tests never see (they use vulkan_internal.h). */
#ifndef TANGRAM_BACKENDS_VULKAN_STATE_H
#define TANGRAM_BACKENDS_VULKAN_STATE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "tangram_volk_rename.h" /* before volk.h: see backends/vulkan/CMakeLists.txt */
#include <volk.h>

#include "backends/protocol.h"
#include "tangram/vulkan.h"

/* Speed proxies: [output kind][input kind][fp16], kinds 0 buffer, 1 2D array view, 2 3D,
 * 3 storage texel buffer (image_buffer tensors; with buffers only). */
#define PROXY_KINDS 4

/* Pipelines: buffers (verify, write), then images indexed by (3D, fp16, write). */
enum {
  PIPE_BUFFER_VERIFY = 0,
  PIPE_BUFFER_WRITE = 1,
  PIPE_IMAGE_FIRST = 2,
  PIPE_COUNT = PIPE_IMAGE_FIRST + 8
};

#define GROUP_SIZE 64u        /* local_size_x of every shader */

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

/* ---- results.c: driver results. ---- */

tg_status tg__vk_status_of(VkResult r);
VkResult tg__vk_injected(vk_device *v);
tg_status tg__vk_fail(vk_device *v, VkResult r);

/* ---- resources.c: buffers and images. ---- */

VkFormat tg__vk_image_format(tg_precision p);
tg_status tg__vk_shape_of(const vk_device *v, const tg_tensor_resource *res, resource_shape *out);
tg_status tg__vk_create_resource(vk_device *v, const resource_shape *s, tg_precision precision,
                                 VkBuffer *buffer, VkImage *image);
void tg__vk_destroy_resource(vk_device *v, VkBuffer *buffer, VkImage *image);
void tg__vk_resource_requirements(vk_device *v, VkBuffer buffer, VkImage image,
                                  VkMemoryRequirements *out);
tg_status tg__vk_probe_requirements(vk_device *v, const tg_tensor_resource *res,
                                    tg_precision precision, resource_shape *shape,
                                    VkMemoryRequirements *out);
tg_status tg__vk_requirements(void *impl, const tg_tensor_resource *res, tg_precision precision,
                              tg_resource_requirements *out);
int tg__vk_image_limits(vk_device *v, VkFormat format, VkImageType type, VkImageFormatProperties *out);

/* ---- memory.c: device memory, realisation and shared memory (the vtable's allocate ... unmap). ---- */

int tg__vk_pick_memory_type(const VkPhysicalDeviceMemoryProperties *mp, uint32_t bits,
                            VkMemoryPropertyFlags want, int prefer_device_local);
tg_status tg__vk_block_alloc(vk_device *v, const VkMemoryRequirements *req,
                             VkMemoryPropertyFlags required, int host_access, int tensor,
                             vk_block *out);
void tg__vk_block_free(vk_device *v, vk_block *block);
tg_status tg__vk_allocate(void *impl, const tg_tensor_resource *res, tg_precision precision,
                          int arena, void **memory);
void tg__vk_release(void *impl, void *memory);
tg_status tg__vk_bind(void *impl, void *memory, const tg_tensor_resource *object,
                      uint64_t offset, const tg_tensor_resource *tensor, tg_precision precision,
                      int arena, void **view);
void tg__vk_unbind(void *impl, void *view);
void tg__vk_handle(void *impl, void *memory, void *view, tg_tensor_handle *out);
tg_status tg__vk_allocate_shared(void *impl, const tg_tensor_resource *res,
                                 tg_precision precision, int arena, void **memory);
tg_status tg__vk_map(void *impl, void *memory, void **host);
tg_status tg__vk_unmap(void *impl, void *memory);

/* ---- check.c: the shadow run (the vtable's check_*). ---- */

/* A pipeline layout of `set_count` descriptor sets and `push_bytes` of push constants for the
 * compute stage; *out is VK_NULL_HANDLE on failure. */
tg_status tg__vk_make_pipeline_layout(vk_device *v, const VkDescriptorSetLayout *sets, uint32_t set_count,
                                      uint32_t push_bytes, VkPipelineLayout *out);
tg_status tg__vk_make_set_layout(vk_device *v, VkDescriptorType type, VkDescriptorSetLayout *out);
void tg__vk_destroy_check_objects(vk_device *v);
tg_status tg__vk_create_pipeline(vk_device *v, const uint32_t *words, size_t bytes, VkPipelineLayout layout,
                                 VkPipeline *out);
void tg__vk_check_abort(void *impl);
tg_status tg__vk_check_begin(void *impl, size_t record_count, size_t op_count,
                             int out_of_order, tg_precision precision);
tg_status tg__vk_allocate_set(vk_device *v, VkDescriptorSetLayout layout, VkDescriptorSet *out);
tg_status tg__vk_touch_view(vk_device *v, vk_view *w);
tg_status tg__vk_add_transition(vk_device *v, vk_view *w, size_t *count, VkAccessFlags src_access, int keep);
int tg__vk_written_over(const vk_view *w, const vk_view *r);
tg_status tg__vk_check_op(void *impl, size_t op, const tg__check_access *reads,
                          size_t read_count, const tg__check_access *writes,
                          size_t write_count, const uint32_t *waits, size_t wait_count);
tg_status tg__vk_check_end(void *impl, uint64_t *mismatches, uint64_t *checked_bytes);
tg_status tg__vk_check_sync(void *impl);

/* ---- speed.c: the speed proxies (the vtable's speed_*). ---- */

tg_status tg__vk_speed_begin(void *impl, size_t op_count, size_t dispatch_count, tg_precision precision,
                             int timed);
tg_status tg__vk_speed_dispatch(void *impl, const tg__proxy_dispatch *x);
tg_status tg__vk_speed_end(void *impl, double *op_ms);
void tg__vk_speed_abort(void *impl);

#endif
