/* Tangram inside an engine's own OpenCL context: a device made from the engine's cl_context,
 * cl_device_id and cl_command_queue, whose realisations are cl_mem objects of that context
 * that the engine binds to its own kernels.
 *
 * This header includes the OpenCL API headers (as VMA includes Vulkan's); tangram/backend.h
 * stays API-neutral. It uses OpenCL 1.2 types only and leaves CL_TARGET_OPENCL_VERSION to the
 * engine. */
#ifndef TANGRAM_OPENCL_H
#define TANGRAM_OPENCL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __APPLE__
#include <OpenCL/cl.h>
#else
#include <CL/cl.h>
#endif

#include "tangram/backend.h"

#include "tangram/export.h"

#ifdef __cplusplus
extern "C" {
#endif

TANGRAM_API_BEGIN

/* The engine's objects, and how to use them. Read only during tg_device_wrap_opencl. */
typedef struct tg_opencl_device_desc {
  cl_context context;     /* required */
  cl_device_id device;    /* required: one of the context's devices, OpenCL 1.2 or later */
  cl_command_queue queue; /* required: a host queue of `context` on `device`, in order or out
                           * of order */
  /* The OpenCL library the engine's objects come from (a path or a name for dlopen), for an
   * engine that loads a vendor library itself; NULL = $TANGRAM_OPENCL_LIBRARY, else the usual
   * places (libOpenCL.so.1, the Android vendor paths). Through the ICD loader any of them
   * works. */
  const char *library;
  /* Fault injection, as tg_device_options.fail_device_alloc_at: the Nth device object
   * creation of a realisation fails with TG_ERROR_OUT_OF_DEVICE_MEMORY; 0 = read
   * TANGRAM_FAIL_DEVICE_ALLOC_AT. */
  uint64_t fail_device_alloc_at;
} tg_opencl_device_desc;

/* Make a Tangram device from the engine's context, device and queue. Realisations on it are
 * cl_mem objects of `desc->context` (tg_realization_get_opencl_tensor), and the on-device
 * check (tg_realization_check) runs on `desc->queue`.
 *
 * Ownership: the three objects stay the engine's. Tangram neither retains nor releases them;
 * they must stay valid until tg_device_close, after which they are exactly as before (same
 * reference counts) and keep working. What Tangram creates in the context (realisations'
 * memory; the check's kernels and counters, on the first check) it releases itself.
 *
 * The queue: in order, checks run in order and the device reports out_of_order = 0; out of
 * order, it reports out_of_order = 1, parallel checks order their kernels with events, and
 * in-order checks put a barrier after each command. A check enqueues on the queue after what
 * the engine enqueued before it, and waits for the queue to drain (clFinish) before it
 * returns. The engine may enqueue its own work between Tangram's calls; use the device from
 * one thread at a time, like any tg_device.
 *
 * Images: the device reports images = 1 when the device supports them and the context offers
 * RGBA float images; a plan with textures on a device without them is refused by
 * tg_realization_create with TG_ERROR_UNSUPPORTED.
 *
 * Errors (nothing is created, the engine's objects are untouched, `*out` is NULL):
 * TG_ERROR_INVALID_ARGUMENT for a NULL desc, context, device or queue, a context or queue the
 * driver does not recognise, a device not in the context, a queue of another context or
 * device, or an on-device queue; TG_ERROR_UNSUPPORTED for a device older than OpenCL 1.2 or a
 * library built without the OpenCL backend; TG_ERROR_NO_LOADER when the library cannot be
 * loaded; TG_ERROR_OUT_OF_HOST_MEMORY. `err` names the field at fault. A handle that is
 * neither NULL nor a live object of the library (freed, or of another API) cannot be detected
 * and is undefined behaviour, as in OpenCL itself.
 *
 * Cost: loads the OpenCL library and makes a few dozen driver queries; creates nothing. */
tg_status tg_device_wrap_opencl(const tg_opencl_device_desc *desc, const tg_allocator *alloc,
                                tg_device **out, tg_error_info *err);

/* Where one tensor of a realisation on an OpenCL device lives, typed. */
typedef struct tg_opencl_tensor {
  /* What a kernel binds (clSetKernelArg with sizeof(cl_mem)); NULL for an empty tensor.
   *  objects mode, buffer: the shared object's buffer; the tensor is its first `region.w`
   *    bytes (the buffer may be larger).
   *  objects mode, image: the shared object's image (2D, 2D array or 3D, RGBA of the
   *    realisation's precision); the tensor is the texels [0, region) of it.
   *  offsets mode, buffer: a sub-buffer of exactly the tensor's bytes at `offset` in `memory`.
   *  offsets mode, 2D image: a 2D image over such a sub-buffer (cl_khr_image2d_from_buffer). */
  cl_mem mem;
  cl_mem memory;    /* the allocation holding the tensor: the object, or the arena buffer */
  size_t offset;    /* bytes from the start of `memory` (offsets mode), else 0 */
  tg_extent region; /* images: the texels the tensor uses; buffers: (bytes, 1, 1) */
} tg_opencl_tensor;

/* Fill `*out` for record `record` of a realisation made on an OpenCL device (a borrowed one
 * or one from tg_device_open). The cl_mem objects stay owned by the realisation and are valid
 * until tg_realization_destroy; an engine that keeps them longer retains them itself
 * (clRetainMemObject). TG_ERROR_INVALID_ARGUMENT for a NULL realisation or `out`, or a record
 * out of range; TG_ERROR_OVERFLOW when the offset does not fit a size_t. Cheap. */
static inline tg_status tg_realization_get_opencl_tensor(const tg_realization *realization,
                                                         size_t record, tg_opencl_tensor *out) {
  tg_tensor_handle h;
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  tg_status st = tg_realization_get_tensor(realization, record, &h);
  if (st != TG_OK) return st;
  if (h.offset > (uint64_t)SIZE_MAX) return TG_ERROR_OVERFLOW;
  out->mem = (cl_mem)(uintptr_t)h.native;
  out->memory = (cl_mem)(uintptr_t)h.memory;
  out->offset = (size_t)h.offset;
  out->region = h.region;
  return TG_OK;
}

TANGRAM_API_END

#ifdef __cplusplus
}
#endif
#endif
