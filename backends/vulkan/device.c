/* The Vulkan backend: opening, describing, wrapping and closing a device, and the backend's
 * vtable. Vulkan is loaded at run time through volk: libtangram has no link-time dependency on
 * libvulkan, and a machine without a driver gets TG_ERROR_NO_LOADER or TG_ERROR_NO_DEVICE
 * instead of a failure to start.
 *
 * The backend's other files: resources.c (buffers and images), memory.c (realisation: device
 * memory and the tensors bound in it, shared memory), check.c (the shadow run), speed.c (speed
 * proxies and their timestamps), results.c (driver results and fault injection); their shared
 * state is vulkan_state.h.
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

#include "backends/vulkan/vulkan_state.h"
#include "backends/vulkan/vulkan_internal.h"

/* Process-wide: guards volk's global entry points (see the file comment). */
static pthread_mutex_t k_volk_mutex = PTHREAD_MUTEX_INITIALIZER;

/* A VkResult by name, for messages. */
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

static int env_is_one(const char *name) {
  const char *e = getenv(name);
  return e != NULL && strcmp(e, "1") == 0;
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

/* ---- opening and closing ---- */

/* Destroy what Tangram made on the device, and the device itself unless it is borrowed. */
static void teardown_device(vk_device *v) {
  if (v->device == VK_NULL_HANDLE) return;
  tg__vk_check_abort(v);
  tg__vk_destroy_check_objects(v);
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
    return tg__error(err, tg__vk_status_of(r), "vkCreateInstance failed with %s (%d)", result_name(r),
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
      return tg__error(err, tg__vk_status_of(r), "vkCreateDebugUtilsMessengerEXT failed (%d)", (int)r);
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
    return tg__error(err, tg__vk_status_of(r), "vkEnumeratePhysicalDevices failed (%d)", (int)r);
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
    return tg__error(err, tg__vk_status_of(r) == TG_ERROR_NO_DEVICE ? TG_ERROR_DEVICE : tg__vk_status_of(r),
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

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* Probe the requirements of one resource into the running alignment / type-bit totals. */
static tg_status probe(vk_device *v, tg_storage storage, tg_extent e, uint64_t bytes,
                       tg_precision p, uint64_t *alignment, uint32_t *bits) {
  tg_tensor_resource res = {storage, e, bytes};
  resource_shape s;
  VkMemoryRequirements req;
  tg_status st = tg__vk_probe_requirements(v, &res, p, &s, &req);
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
  v->fp32_images = tg__vk_image_limits(v, VK_FORMAT_R32G32B32A32_SFLOAT, VK_IMAGE_TYPE_2D, &f2);
  v->fp16_images = tg__vk_image_limits(v, VK_FORMAT_R16G16B16A16_SFLOAT, VK_IMAGE_TYPE_2D, &h2);
  v->fp32_images_3d = tg__vk_image_limits(v, VK_FORMAT_R32G32B32A32_SFLOAT, VK_IMAGE_TYPE_3D, &f3);
  v->fp16_images_3d = tg__vk_image_limits(v, VK_FORMAT_R16G16B16A16_SFLOAT, VK_IMAGE_TYPE_3D, &h3);
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
  int arena_type = tg__vk_pick_memory_type(&v->memory_props, v->arena_type_bits, 0, 1);
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
    return tg__error(err, tg__vk_status_of(r), "tg_device_wrap_vulkan: vkEnumeratePhysicalDevices failed (%d)",
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
    return tg__error(err, tg__vk_status_of(r), "tg_device_wrap_vulkan: vkEnumeratePhysicalDevices failed (%d)",
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

/* ---- the backend ---- */

static const tg__backend_vtable k_vulkan = {
    TG_BACKEND_VULKAN,
    vk_open,
    vk_close,
    vk_native_error,
    vk_validation_messages,
    tg__vk_requirements,
    tg__vk_allocate,
    tg__vk_release,
    tg__vk_bind,
    tg__vk_unbind,
    tg__vk_handle,
    tg__vk_check_begin,
    tg__vk_check_op,
    tg__vk_check_end,
    tg__vk_check_abort,
    tg__vk_allocate_shared,
    tg__vk_map,
    tg__vk_unmap,
    tg__vk_check_sync,
    tg__vk_speed_begin,
    tg__vk_speed_dispatch,
    tg__vk_speed_end,
    tg__vk_speed_abort,
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
