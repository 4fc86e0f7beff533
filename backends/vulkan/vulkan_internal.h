/* Internals of the Vulkan backend that its tests and the public wrapping calls
 * (backends/vulkan/wrap.c) reach. Not installed; not public API. */
#ifndef TANGRAM_BACKENDS_VULKAN_INTERNAL_H
#define TANGRAM_BACKENDS_VULKAN_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "backends/protocol.h"

struct tg_vulkan_tensor;

/* The wrap function of tg__device_open_with for tg_device_wrap_vulkan: `borrowed` is the
 * caller's tg_vulkan_device_desc. */
tg_status tg__vulkan_wrap(const void *borrowed, const tg_device_options *options,
                          const tg_allocator *alloc, void **impl, tg_device_info *info,
                          tg_error_info *err);

/* Fill `*out` for one tensor: `memory` and `view` are what the backend's allocate() and bind()
 * returned for it (tg__realization_parts). */
void tg__vulkan_describe_tensor(const void *impl, const void *memory, const void *view,
                                struct tg_vulkan_tensor *out);

/* `impl` is the state of a device opened with the Vulkan backend
 * (tg__device_impl). */

/* Vulkan objects made for realisations and check runs that are still alive: buffers, images,
 * image views, device memory, events, descriptor pools and counter buffers. 0 when every
 * realisation is destroyed and no check is running. */
int64_t tg__vulkan_live_objects(const void *impl);

/* From now on, the `n`th driver call that creates or binds a realisation object (buffer,
 * image, image view, memory allocation, memory binding; resource probes included) fails with
 * VK_ERROR_OUT_OF_DEVICE_MEMORY; 0 turns this off. Resets the call count. */
void tg__vulkan_fail_call_at(void *impl, uint64_t n);

/* Those calls made since the last tg__vulkan_fail_call_at. */
uint64_t tg__vulkan_calls(const void *impl);

/* The id of the first validation message ("SYNC-HAZARD-READ-AFTER-WRITE", a VUID), or "". */
const char *tg__vulkan_first_message(const void *impl);

/* Destroy the VkDevice and everything made on it now rather than in close(), so that what the
 * validation layer reports while destroying it (objects leaked) is counted while the state can
 * still be read. Afterwards the device may only be closed. Returns the validation messages
 * counted so far, teardown included. */
uint64_t tg__vulkan_teardown_device(void *impl);

#endif
