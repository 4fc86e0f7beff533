/* Run-time pools: allocate and free tensor memory while a model runs, for what cannot be
 * planned ahead (dynamic shapes, data-dependent control flow, engines without a planning
 * step). A pool takes memory from a device in blocks (driver allocations), hands out pieces of
 * them, keeps what is freed for the next request, and never holds more than its capacity.
 * A pool over no device is virtual: it hands out offsets and holds no memory, for simulating
 * a pool or managing memory the caller allocates itself.
 *
 * Thread safety: a pool may be called from several threads at once (alloc, free, trim, stats
 * and check take the pool's lock), unless it was created `unsynchronized`, in which case the
 * caller calls it from one thread at a time. A pool's driver calls happen under its lock; the
 * device's own rule still holds (one thread at a time), so nothing else may use the device
 * (another pool, a realization) while the pool may be allocating or trimming. */
#ifndef TANGRAM_POOL_H
#define TANGRAM_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/allocator.h"
#include "tangram/backend.h"
#include "tangram/layout.h"
#include "tangram/status.h"

#include "tangram/export.h"

#ifdef __cplusplus
extern "C" {
#endif

TANGRAM_API_BEGIN

/* How a pool reuses freed memory. Every request is first rounded up to the pool's alignment.
 *   exact:      a freed block is reused only by a request of the same rounded size; each block
 *               is one driver allocation of exactly that size, never split. Alloc and free
 *               O(1) on average.
 *   best-fit:   blocks are split into ranges; a request takes the low end of the smallest free
 *               range that holds it (ties: the oldest block, then the lowest offset); freed
 *               ranges merge with free neighbours. Alloc O(free ranges), free O(1).
 *   first-fit:  as best-fit, taking the first free range that holds it (oldest block, lowest
 *               offset). Alloc O(free ranges), free O(1).
 *   tlsf:       two-level segregated fit: ranges in size classes (32 per power of two), found
 *               through two bitmaps. Alloc and free O(1) in the worst case, excluding driver
 *               calls; a request may take a range up to 1/32 larger than a best fit would.
 * A request no free range holds gets a new block (a driver allocation; see block_size). */
typedef enum tg_pool_policy {
  TG_POOL_EXACT = 0,
  TG_POOL_BEST_FIT = 1,
  TG_POOL_FIRST_FIT = 2,
  TG_POOL_TLSF = 3,
  TG_POOL_POLICY_COUNT
} tg_pool_policy;

/* "exact", "best-fit", "first-fit", "tlsf"; NULL when out of range. Static string. */
const char *tg_pool_policy_name(tg_pool_policy policy);
/* Parse a policy name as above. TG_ERROR_INVALID_ARGUMENT if unknown (`*out` untouched). */
tg_status tg_pool_policy_from_name(const char *name, tg_pool_policy *out);

/* Options for tg_pool_create. Zero-initialised = exact, the device's budget as capacity, the
 * device's buffer alignment, fp32 images, locked. */
typedef struct tg_pool_options {
  tg_pool_policy policy;
  /* The most bytes the pool may hold at once (blocks and images, used or free). 0 = the
   * device's memory_budget; a virtual pool needs a nonzero capacity. */
  uint64_t capacity;
  /* best-fit, first-fit, tlsf: the least size of a new block; a larger request gets a block of
   * its own size, and a new block never takes the pool over its capacity (it is cut to what
   * is left, if the request still fits). 0 = no least size: each new block is just the size
   * of the request that needed it. Rounded up to the alignment. exact: must be 0. */
  uint64_t block_size;
  /* Offset and size granularity of buffer allocations: a power of two, or 0 for the device's
   * buffer_alignment (virtual pools: 1). Raised to the device's buffer_alignment if smaller. */
  uint64_t alignment;
  /* Texel format of the images the pool allocates. */
  tg_precision precision;
  /* 1: the caller guarantees that one thread at a time calls the pool; no lock is taken. */
  int unsynchronized;
} tg_pool_options;

/* A pool (opaque). */
typedef struct tg_pool tg_pool;

/* Create a pool over `device` (any backend; NULL = a virtual pool). The device is borrowed:
 * it must stay open until the pool is destroyed, and the pool releases only the blocks it
 * allocated. Creating a pool makes no driver allocation. TG_ERROR_INVALID_ARGUMENT for a
 * policy or precision out of range, an alignment that is not a power of two, a block size
 * with exact, or a virtual pool without a capacity; TG_ERROR_OVERFLOW for a block size that
 * overflows when rounded up to the alignment; TG_ERROR_OUT_OF_HOST_MEMORY; TG_ERROR_INTERNAL
 * when the lock cannot be made. `*out` is NULL on failure; host memory comes from `alloc`
 * (NULL = default). */
tg_status tg_pool_create(tg_device *device, const tg_pool_options *options,
                         const tg_allocator *alloc, tg_pool **out, tg_error_info *err);

/* Release every block of the pool, in use or not, and the pool. Allocations still live become
 * invalid. NULL is a no-op. */
void tg_pool_destroy(tg_pool *pool);

/* One allocation. `memory`, `offset` and `extent` stay valid until it is freed. */
typedef struct tg_pool_allocation {
  uint64_t id;          /* what tg_pool_free takes; never 0 */
  uint64_t block;       /* the block holding it: a number unique over the pool's life */
  uint64_t offset;      /* buffers: start inside the block, a multiple of the alignment; images: 0 */
  uint64_t size;        /* bytes it takes from the pool: buffers, the request rounded up to the
                           alignment; images, the whole image as the device sizes it */
  uint64_t memory;      /* the block's driver object: cl_mem, VkDeviceMemory (as uint64) or a
                           host pointer; 0 in a virtual pool */
  tg_storage storage;   /* TG_STORAGE_BUFFER, or the image's storage */
  tg_extent extent;     /* images: the image's extent, which holds the requested one and may
                           be larger in best-fit and first-fit pools; buffers: (size, 1, 1) */
} tg_pool_allocation;

/* Allocate `bytes` of buffer memory. A request of 0 bytes takes one alignment unit, so every
 * live allocation has a place of its own. To place a driver buffer there, size it with
 * tg_device_compute_requirements and allocate that many bytes (Vulkan buffers may need more
 * than their contents). Statuses: TG_ERROR_POOL_CAPACITY when a new block would take the pool
 * over its capacity (`err`: the bytes required, in use, reserved and the capacity; free blocks
 * held by the pool count until tg_pool_trim gives them back); TG_ERROR_OVERFLOW when the
 * rounded size does not fit 64 bits; TG_ERROR_LIMIT when it exceeds the device's largest
 * allocation; TG_ERROR_OUT_OF_DEVICE_MEMORY (or another driver status) when the driver
 * refuses; TG_ERROR_OUT_OF_HOST_MEMORY. On failure the pool is unchanged (no block made or
 * kept, statistics as before but for capacity_failures) and stays usable; `*out` is zeroed. */
tg_status tg_pool_alloc(tg_pool *pool, uint64_t bytes, tg_pool_allocation *out,
                        tg_error_info *err);

/* Allocate an image of `extent` texels in `storage` (TEXTURE_2D, TEXTURE_ARRAY, TEXTURE_3D,
 * SINGLE_TEXTURE_2D) at the pool's precision. Images are never placed inside buffer blocks:
 * each image is a block of its own (one driver allocation), kept when freed and reused
 * whole: exact and tlsf pools reuse a free image of the same storage and extent (O(1) on
 * average); best-fit and first-fit pools reuse the free image of the same storage that holds
 * the extent in every dimension with the fewest bytes (best-fit) or the oldest (first-fit),
 * the tensor then using its corner region. In a virtual pool an image takes its texels'
 * bytes. Statuses as tg_pool_alloc, plus TG_ERROR_INVALID_ARGUMENT for a storage that is not
 * an image or an extent with a zero dimension, and TG_ERROR_UNSUPPORTED for a device without
 * images. */
tg_status tg_pool_alloc_image(tg_pool *pool, tg_storage storage, tg_extent extent,
                              tg_pool_allocation *out, tg_error_info *err);

/* Return an allocation to the pool: its memory is kept for later requests (no driver call).
 * TG_ERROR_INVALID_ARGUMENT (pool unchanged) for an id that is not a live allocation of this
 * pool: 0, freed already, or another pool's. O(1) (exact and images: on average). */
tg_status tg_pool_free(tg_pool *pool, uint64_t id);

/* Give every block that holds no live allocation back to the driver. `*released` (may be
 * NULL) is the bytes given back. O(blocks), plus one driver call per block released. */
tg_status tg_pool_trim(tg_pool *pool, uint64_t *released);

/* What a pool holds and has done. All sizes in bytes. */
typedef struct tg_pool_stats {
  tg_pool_policy policy;
  uint64_t capacity;            /* as created (0 resolved to the device's budget) */
  uint64_t alignment;           /* as used */
  uint64_t block_size;          /* as used */
  uint64_t reserved;            /* held from the driver now: every block and image */
  uint64_t in_use;              /* taken by live allocations (their `size`) */
  uint64_t peak_reserved;       /* the most `reserved` has been */
  uint64_t peak_in_use;         /* the most `in_use` has been */
  uint64_t blocks;              /* blocks held now, images included */
  uint64_t live;                /* live allocations */
  uint64_t free_blocks;         /* free ranges: unused parts of buffer blocks (one per run of
                                   free bytes), unused exact blocks and unused images */
  uint64_t largest_free_block;  /* bytes of the largest free range */
  uint64_t allocs, frees;       /* successful tg_pool_alloc(_image) and tg_pool_free calls */
  uint64_t driver_allocations;  /* blocks and images allocated from the driver so far */
  uint64_t driver_releases;     /* of those, given back so far (trim) */
  uint64_t capacity_failures;   /* allocations refused with TG_ERROR_POOL_CAPACITY */
} tg_pool_stats;

/* Fill `*out` (zeros for a NULL pool). O(blocks + free ranges). */
void tg_pool_get_stats(tg_pool *pool, tg_pool_stats *out);

/* Walk every structure of the pool and verify it, as TLSF's tlsf_check does: each block's
 * ranges tile it exactly, no two free ranges are neighbours, the free lists (and the tlsf
 * size classes and bitmaps) hold exactly the free ranges, and the statistics match what the
 * walk counts. TG_OK when consistent, else TG_ERROR_INTERNAL with `err` naming the first
 * fault. For tests and debugging: O(blocks + ranges + size classes). */
tg_status tg_pool_check(tg_pool *pool, tg_error_info *err);

TANGRAM_API_END

#ifdef __cplusplus
}
#endif
#endif
