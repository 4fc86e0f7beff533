/* Device profiles: what `tangram probe` measures on a device (bandwidth per storage and
 * access pattern, the cost of one dispatch, limits, alignments), saved as a small text file,
 * and the proxy times of a model estimated from a profile without the device (a phone's
 * profile evaluated on a desktop). The estimate prices the same memory traffic the speed
 * proxies (tangram/speed.h) make: it is no inference time either.
 *
 * File format (text, one entry per line, '#' comments; docs/speed.md):
 *   tangram-profile 1
 *   backend opencl
 *   device NAME...
 *   precision fp32
 *   dispatch_us 12.5
 *   bandwidth buffer linear 10.25         (GB/s; kinds buffer, texture_2d, texture_array,
 *   ...                                    texture_3d, image_buffer; patterns linear,
 *                                          neighbourhood, channel_strided; "none" when the
 *                                          device lacks it)
 *   limit max_buffer_bytes 134217728      (every tg_device_limits field)
 *   max_allocation N / buffer_alignment N / image_alignment N / images 0|1 / arena_images 0|1
 *   end
 * Every entry must be present once; the last line is `end` (a cut file is refused). Version 1
 * files (no image_buffer rows: image buffers were priced as buffers) are still read, their
 * image_buffer rows taken from buffer's. */
#ifndef TANGRAM_PROFILE_H
#define TANGRAM_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/allocator.h"
#include "tangram/graph.h"
#include "tangram/layout.h"
#include "tangram/op_class.h"
#include "tangram/status.h"

#include "tangram/export.h"

#ifdef __cplusplus
extern "C" {
#endif

TANGRAM_API_BEGIN

#define TG_PROFILE_VERSION 2

/* Storage kinds a profile measures: single_texture_2d is priced as texture_2d. */
typedef enum tg_profile_kind {
  TG_PROFILE_BUFFER = 0,
  TG_PROFILE_TEXTURE_2D,
  TG_PROFILE_TEXTURE_ARRAY,
  TG_PROFILE_TEXTURE_3D,
  TG_PROFILE_IMAGE_BUFFER, /* OpenCL image1d_buffer / Vulkan storage texel buffer (version 2) */
  TG_PROFILE_KIND_COUNT
} tg_profile_kind;

/* Access patterns: linear (elementwise and copy ops), neighbourhood (stencil and reduction:
 * a 2D window), channel_strided (channel mixing: every slice of a pixel). */
typedef enum tg_access_pattern {
  TG_ACCESS_LINEAR = 0,
  TG_ACCESS_NEIGHBOURHOOD,
  TG_ACCESS_CHANNEL_STRIDED,
  TG_ACCESS_COUNT
} tg_access_pattern;

/* "buffer", ...; "linear", "neighbourhood", "channel_strided"; NULL when out of range. */
const char *tg_profile_kind_name(tg_profile_kind kind);
const char *tg_access_pattern_name(tg_access_pattern pattern);
/* The kind a storage is priced as, and the pattern of an op class. */
tg_profile_kind tg_profile_kind_of(tg_storage storage);
tg_access_pattern tg_access_pattern_of(tg_op_class op_class);

typedef struct tg_device_profile {
  char backend[16];
  char device[256];
  tg_precision precision;
  double dispatch_us;                                      /* one dispatch of one texel */
  double gbps[TG_PROFILE_KIND_COUNT][TG_ACCESS_COUNT];     /* 0: the device lacks the kind */
  tg_device_limits limits;
  uint64_t max_allocation, buffer_alignment, image_alignment;
  int images, arena_images;
} tg_device_profile;

/* Write `profile` as the text above into a NUL-terminated string from `alloc` (free with
 * tg_report_free); `*length` (may be NULL) without the NUL. TG_ERROR_INVALID_ARGUMENT for NULL
 * arguments; TG_ERROR_OUT_OF_HOST_MEMORY. */
tg_status tg_device_profile_write(const tg_device_profile *profile, const tg_allocator *alloc, char **text,
                                  size_t *length);

/* Read a profile from `size` bytes (need not be NUL-terminated). TG_ERROR_PARSE, with `err`
 * naming the line ("line 7: ..."), for anything but a complete profile of TG_PROFILE_VERSION:
 * another version, a cut file (no `end`), an unknown, repeated or missing entry, a bad
 * number. `*out` is written only on success. */
tg_status tg_device_profile_read(const char *text, size_t size, tg_device_profile *out, tg_error_info *err);

/* Estimated proxy time of one storage's plan of `graph` from a profile: for every op, per
 * planned output, one dispatch cost plus its logical bytes (as the proxies read and write
 * them) over the bandwidth of its output's kind and its class's pattern. `records`: the
 * storage's records (tg_model_records_create or _chain: a tensor that fell back is priced in
 * the storage it fell to). TG_ERROR_UNSUPPORTED when the profile lacks a kind the plan uses
 * (named in `err`). */
typedef struct tg_profile_estimate {
  double total_ms;
  double class_ms[TG_OP_CLASS_COUNT];
  uint64_t bytes;                      /* logical bytes moved by every proxy */
} tg_profile_estimate;
tg_status tg_device_profile_estimate(const tg_device_profile *profile, const tg_graph *graph,
                                     const tg_model_records *records, tg_profile_estimate *out,
                                     tg_error_info *err);

/* The logical bytes one proxy moves: output texels [0, out_texels) of a tensor laid out as
 * (w, h, s) texels, reading `in` (w, h, s each; in_count of them) in `op_class`'s pattern
 * with stencil size k, texels of texel_bytes. What `tangram probe` divides by time. */
uint64_t tg_proxy_bytes(tg_op_class op_class, uint32_t k, const uint32_t out[3], const uint32_t (*in)[3],
                        uint32_t in_count, uint32_t texel_bytes);

TANGRAM_API_END

#ifdef __cplusplus
}
#endif
#endif
