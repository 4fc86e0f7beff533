/* Run-time pools (tangram/pool.h): blocks from a device (or virtual ones), the exact policy
 * and pooled images here, the ranges of best-fit, first-fit and TLSF in fit.c. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>

#include "backends/backend_internal.h"
#include "pool/fit.h"
#include "pool/pool_internal.h"

enum { BLOCK_EMPTY = 0, BLOCK_FIT = 1, BLOCK_EXACT = 2, BLOCK_IMAGE = 3 };
enum { TAG_SEG = 1, TAG_BLOCK = 2 };

/* A driver allocation: a buffer block split into ranges (fit policies), an exact block, or an
 * image. Slots of released blocks are reused; `seq` is never. */
typedef struct pool_block {
  void *memory;                 /* the backend's allocation; NULL in a virtual pool */
  uint64_t native;              /* the driver's handle of it */
  uint64_t size;                /* bytes it takes from the capacity */
  uint64_t seq;                 /* creation number, the `block` callers see */
  tg_tensor_resource resource;  /* what was allocated */
  uint32_t first_seg;           /* fit: the segment at offset 0 */
  uint32_t live;                /* fit: live allocations inside; exact, image: 1 if taken */
  uint32_t generation;          /* exact, image: bumped when freed */
  uint32_t next, prev;          /* exact, image: free chain; empty slots: spare chain */
  uint8_t kind;
} pool_block;

struct tg_pool {
  tg_device *device;            /* borrowed; NULL: virtual */
  tg_allocator alloc;
  tg_pool_policy policy;
  uint64_t capacity, block_size, alignment, max_allocation;
  unsigned align_log2;
  tg_precision precision;
  int locked;
  pthread_mutex_t mutex;
  pool_block *blocks;
  uint32_t block_count, block_capacity, spare_block;
  uint64_t next_seq;
  tg__fit fit;
  /* Free exact blocks and free images: hashed (exact policy, tlsf images) or one list (images
   * of best-fit and first-fit, in `buckets[0]` of a one-bucket table). */
  uint32_t *buckets;
  uint32_t bucket_count;        /* power of two */
  uint32_t hashed;              /* free blocks in the table */
  uint32_t free_images;         /* fit policies' free image list */
  uint64_t reserved, in_use, peak_reserved, peak_in_use, blocks_held, live;
  uint64_t allocs, frees, driver_allocations, driver_releases, capacity_failures;
};

static const char *const k_policy_names[TG_POOL_POLICY_COUNT] = {"exact", "best-fit", "first-fit", "tlsf"};

const char *tg_pool_policy_name(tg_pool_policy p) {
  return (unsigned)p < TG_POOL_POLICY_COUNT ? k_policy_names[p] : NULL;
}

tg_status tg_pool_policy_from_name(const char *name, tg_pool_policy *out) {
  if (name == NULL || out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  for (int i = 0; i < TG_POOL_POLICY_COUNT; ++i)
    if (strcmp(name, k_policy_names[i]) == 0) {
      *out = (tg_pool_policy)i;
      return TG_OK;
    }
  return TG_ERROR_INVALID_ARGUMENT;
}

static void lock(tg_pool *p) {
  if (p->locked) pthread_mutex_lock(&p->mutex);
}
static void unlock(tg_pool *p) {
  if (p->locked) pthread_mutex_unlock(&p->mutex);
}

static int is_fit(const tg_pool *p) { return p->policy != TG_POOL_EXACT; }
/* Images of best-fit and first-fit pools are reused by containment, from one list. */
static int images_listed(const tg_pool *p) {
  return p->policy == TG_POOL_BEST_FIT || p->policy == TG_POOL_FIRST_FIT;
}

static uint64_t make_id(unsigned tag, uint32_t generation, uint32_t index) {
  return ((uint64_t)tag << 62) | ((uint64_t)(generation & 0x3fffffffu) << 32) | ((uint64_t)index + 1);
}

tg_status tg_pool_create(tg_device *device, const tg_pool_options *options, const tg_allocator *alloc,
                         tg_pool **out, tg_error_info *err) {
  if (out == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "pool: no place for the result");
  *out = NULL;
  static const tg_pool_options k_defaults = {0};
  if (options == NULL) options = &k_defaults;
  alloc = tg__alloc_or_default(alloc);
  if ((unsigned)options->policy >= TG_POOL_POLICY_COUNT)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "pool: policy %d is not exact, best-fit, first-fit or tlsf",
                     (int)options->policy);
  if ((unsigned)options->precision >= TG_PRECISION_COUNT)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "pool: precision %d is not fp32 or fp16", (int)options->precision);
  uint64_t align = options->alignment;
  if (align & (align - 1))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "pool: alignment %llu is not a power of two",
                     (unsigned long long)align);
  if (options->policy == TG_POOL_EXACT && options->block_size != 0)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT,
                     "pool: exact gives each allocation a block of its own size; block size %llu must be 0",
                     (unsigned long long)options->block_size);
  const tg_device_info *info = device ? tg_device_get_info(device) : NULL;
  uint64_t capacity = options->capacity;
  if (capacity == 0) {
    if (info == NULL)
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "pool: a virtual pool needs a capacity (no device budget to default to)");
    capacity = info->memory_budget;
    if (capacity == 0)
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "pool: the device reports no memory budget; give a capacity");
  }
  if (info && align < info->buffer_alignment) align = info->buffer_alignment;
  if (align == 0) align = 1;
  if (align & (align - 1))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "pool: the device's buffer alignment %llu is not a power of two",
                     (unsigned long long)align);
  uint64_t block_size = 0;
  if (options->block_size && !tg__align_up(options->block_size, align, &block_size))
    return tg__error(err, TG_ERROR_OVERFLOW, "pool: block size %llu overflows when rounded up to the alignment %llu",
                     (unsigned long long)options->block_size, (unsigned long long)align);

  tg_pool *p = tg__calloc(alloc, 1, sizeof *p);
  if (p == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "pool: out of host memory");
  p->device = device;
  p->alloc = *alloc;
  p->policy = options->policy;
  p->capacity = capacity;
  p->block_size = block_size;
  p->alignment = align;
  p->align_log2 = (unsigned)__builtin_ctzll(align);
  p->max_allocation = info && info->max_allocation ? info->max_allocation : UINT64_MAX;
  p->precision = options->precision;
  p->spare_block = TG__NIL;
  p->free_images = TG__NIL;
  p->next_seq = 1;
  tg__fit_init(&p->fit, p->policy, p->align_log2, &p->alloc);
  p->bucket_count = 16;
  p->buckets = tg__malloc(alloc, p->bucket_count * sizeof *p->buckets);
  if (p->buckets == NULL) {
    tg__free(alloc, p);
    return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "pool: out of host memory");
  }
  for (uint32_t i = 0; i < p->bucket_count; ++i) p->buckets[i] = TG__NIL;
  p->locked = !options->unsynchronized;
  if (p->locked && pthread_mutex_init(&p->mutex, NULL) != 0) {
    tg__free(alloc, p->buckets);
    tg__free(alloc, p);
    return tg__error(err, TG_ERROR_INTERNAL, "pool: cannot create its lock");
  }
  *out = p;
  return TG_OK;
}

void tg_pool_destroy(tg_pool *p) {
  if (p == NULL) return;
  for (uint32_t b = 0; b < p->block_count; ++b)
    if (p->blocks[b].kind != BLOCK_EMPTY) tg__device_release(p->device, p->blocks[b].memory);
  tg__fit_free_all(&p->fit);
  if (p->locked) pthread_mutex_destroy(&p->mutex);
  tg_allocator a = p->alloc;
  tg__free(&a, p->blocks);
  tg__free(&a, p->buckets);
  tg__free(&a, p);
}

/* ---- free exact blocks and images: hash chains ---- */

static uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

static uint64_t image_key(tg_storage s, tg_extent e) {
  return mix64(mix64(mix64(mix64((uint64_t)s) ^ e.w) ^ e.h) ^ e.d);
}

static uint32_t bucket_of(const tg_pool *p, const pool_block *b) {
  if (images_listed(p) && b->kind == BLOCK_IMAGE) return TG__NIL; /* the list, not the table */
  uint64_t key = b->kind == BLOCK_IMAGE ? image_key(b->resource.storage, b->resource.extent) : mix64(b->size);
  return (uint32_t)(key & (p->bucket_count - 1));
}

static uint32_t *chain_head(tg_pool *p, const pool_block *b) {
  uint32_t k = bucket_of(p, b);
  return k == TG__NIL ? &p->free_images : &p->buckets[k];
}

/* Grow the table when it holds more free blocks than buckets; best effort (a failed growth
 * leaves longer chains, still correct). */
static void maybe_grow_table(tg_pool *p) {
  if (p->hashed <= p->bucket_count || p->bucket_count >= (1u << 30)) return;
  uint32_t n = p->bucket_count * 2;
  uint32_t *nb = tg__malloc(&p->alloc, (size_t)n * sizeof *nb);
  if (nb == NULL) return;
  for (uint32_t i = 0; i < n; ++i) nb[i] = TG__NIL;
  tg__free(&p->alloc, p->buckets);
  p->buckets = nb;
  p->bucket_count = n;
  for (uint32_t i = 0; i < p->block_count; ++i) {
    pool_block *b = &p->blocks[i];
    if ((b->kind != BLOCK_EXACT && b->kind != BLOCK_IMAGE) || b->live || bucket_of(p, b) == TG__NIL) continue;
    uint32_t *h = &p->buckets[bucket_of(p, b)];
    b->prev = TG__NIL;
    b->next = *h;
    if (*h != TG__NIL) p->blocks[*h].prev = i;
    *h = i;
  }
}

static void chain_insert(tg_pool *p, uint32_t i) {
  pool_block *b = &p->blocks[i];
  uint32_t *h = chain_head(p, b);
  b->prev = TG__NIL;
  b->next = *h;
  if (*h != TG__NIL) p->blocks[*h].prev = i;
  *h = i;
  if (h != &p->free_images) {
    p->hashed++;
    maybe_grow_table(p);
  }
}

static void chain_remove(tg_pool *p, uint32_t i) {
  pool_block *b = &p->blocks[i];
  uint32_t *h = chain_head(p, b);
  if (b->prev != TG__NIL) p->blocks[b->prev].next = b->next;
  else *h = b->next;
  if (b->next != TG__NIL) p->blocks[b->next].prev = b->prev;
  b->next = b->prev = TG__NIL;
  if (h != &p->free_images) p->hashed--;
}

/* ---- blocks ---- */

static int reserve_block_slot(tg_pool *p) {
  if (p->spare_block != TG__NIL || p->block_count < p->block_capacity) return 1;
  uint64_t want = p->block_capacity ? (uint64_t)p->block_capacity * 2 : 16;
  if (want > TG__NIL - 1) want = TG__NIL - 1;
  if (want <= p->block_capacity) return 0;
  pool_block *nb = tg__realloc(&p->alloc, p->blocks, (size_t)p->block_capacity * sizeof *nb,
                               (size_t)want * sizeof *nb);
  if (nb == NULL) return 0;
  p->blocks = nb;
  p->block_capacity = (uint32_t)want;
  return 1;
}

static tg_status capacity_error(tg_pool *p, uint64_t required, tg_error_info *err) {
  p->capacity_failures++;
  return tg__error(err, TG_ERROR_POOL_CAPACITY,
                   "pool capacity exceeded: required %llu bytes, in use %llu, reserved %llu "
                   "(%llu of them in free blocks), capacity %llu",
                   (unsigned long long)required, (unsigned long long)p->in_use,
                   (unsigned long long)p->reserved, (unsigned long long)(p->reserved - p->in_use),
                   (unsigned long long)p->capacity);
}

/* Make a block of `bytes` (already checked against the capacity) for `resource`. The slot is
 * reserved beforehand; on a driver failure nothing changes. */
static tg_status new_block(tg_pool *p, uint8_t kind, uint64_t bytes, const tg_tensor_resource *resource,
                           uint32_t *out, tg_error_info *err) {
  void *memory = NULL;
  if (p->device) {
    tg_status st = tg__device_allocate(p->device, resource, p->precision, kind != BLOCK_IMAGE, &memory, err);
    if (st != TG_OK) return st;
  }
  uint32_t i, generation = 0; /* a reused slot keeps counting, so its old ids stay stale */
  if (p->spare_block != TG__NIL) {
    i = p->spare_block;
    p->spare_block = p->blocks[i].next;
    generation = p->blocks[i].generation;
  } else {
    i = p->block_count++;
  }
  pool_block *b = &p->blocks[i];
  memset(b, 0, sizeof *b);
  b->generation = generation;
  b->memory = memory;
  b->native = tg__device_memory_native(p->device, memory);
  b->size = bytes;
  b->seq = p->next_seq++;
  b->resource = *resource;
  b->kind = kind;
  b->first_seg = TG__NIL;
  b->next = b->prev = TG__NIL;
  p->reserved += bytes;
  if (p->reserved > p->peak_reserved) p->peak_reserved = p->reserved;
  p->blocks_held++;
  p->driver_allocations++;
  *out = i;
  return TG_OK;
}

static void release_block(tg_pool *p, uint32_t i) {
  pool_block *b = &p->blocks[i];
  tg__device_release(p->device, b->memory);
  p->reserved -= b->size;
  p->blocks_held--;
  p->driver_releases++;
  uint32_t generation = b->generation + 1;
  memset(b, 0, sizeof *b);
  b->generation = generation;
  b->kind = BLOCK_EMPTY;
  b->next = p->spare_block;
  p->spare_block = i;
}

static void took(tg_pool *p, uint64_t size) {
  p->in_use += size;
  if (p->in_use > p->peak_in_use) p->peak_in_use = p->in_use;
  p->live++;
  p->allocs++;
}

static void fill_block_allocation(const tg_pool *p, uint32_t i, tg_pool_allocation *out) {
  const pool_block *b = &p->blocks[i];
  out->id = make_id(TAG_BLOCK, b->generation, i);
  out->block = b->seq;
  out->offset = 0;
  out->size = b->size;
  out->memory = b->native;
  out->storage = b->resource.storage;
  out->extent = b->resource.extent;
}

static tg_status alloc_exact(tg_pool *p, uint64_t size, tg_pool_allocation *out, tg_error_info *err) {
  uint32_t h = p->buckets[mix64(size) & (p->bucket_count - 1)];
  for (uint32_t i = h; i != TG__NIL; i = p->blocks[i].next)
    if (p->blocks[i].kind == BLOCK_EXACT && p->blocks[i].size == size) {
      chain_remove(p, i);
      p->blocks[i].live = 1;
      took(p, size);
      fill_block_allocation(p, i, out);
      return TG_OK;
    }
  if (size > p->capacity - p->reserved) return capacity_error(p, size, err);
  if (size > p->max_allocation)
    return tg__error(err, TG_ERROR_LIMIT, "pool: %llu bytes exceed the device's largest allocation (%llu)",
                     (unsigned long long)size, (unsigned long long)p->max_allocation);
  if (!reserve_block_slot(p)) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "pool: out of host memory");
  tg_tensor_resource res = {TG_STORAGE_BUFFER, {size, 1, 1}, size};
  uint32_t i;
  tg_status st = new_block(p, BLOCK_EXACT, size, &res, &i, err);
  if (st != TG_OK) return st;
  p->blocks[i].live = 1;
  took(p, size);
  fill_block_allocation(p, i, out);
  return TG_OK;
}

static void fill_seg_allocation(const tg_pool *p, uint32_t s, tg_pool_allocation *out) {
  const tg__seg *g = &p->fit.segs[s];
  const pool_block *b = &p->blocks[g->block];
  out->id = make_id(TAG_SEG, g->generation, s);
  out->block = b->seq;
  out->offset = g->offset;
  out->size = g->size;
  out->memory = b->native;
  out->storage = TG_STORAGE_BUFFER;
  out->extent = (tg_extent){g->size, 1, 1};
}

static tg_status alloc_fit(tg_pool *p, uint64_t size, tg_pool_allocation *out, tg_error_info *err) {
  if (!tg__fit_reserve(&p->fit, 2)) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "pool: out of host memory");
  uint32_t s = tg__fit_alloc(&p->fit, size);
  if (s == TG__NIL) {
    uint64_t left = (p->capacity - p->reserved) & ~(p->alignment - 1);
    if (size > left) return capacity_error(p, size, err);
    uint64_t limit = p->max_allocation == UINT64_MAX ? UINT64_MAX : p->max_allocation & ~(p->alignment - 1);
    if (size > limit)
      return tg__error(err, TG_ERROR_LIMIT, "pool: %llu bytes exceed the device's largest allocation (%llu)",
                       (unsigned long long)size, (unsigned long long)p->max_allocation);
    uint64_t bytes = p->block_size > size ? p->block_size : size;
    if (bytes > left) bytes = left;
    if (bytes > limit) bytes = limit;
    if (!reserve_block_slot(p)) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "pool: out of host memory");
    tg_tensor_resource res = {TG_STORAGE_BUFFER, {bytes, 1, 1}, bytes};
    uint32_t b;
    tg_status st = new_block(p, BLOCK_FIT, bytes, &res, &b, err);
    if (st != TG_OK) return st;
    p->blocks[b].first_seg = tg__fit_add_block(&p->fit, b, p->blocks[b].seq, bytes);
    s = tg__fit_alloc(&p->fit, size);
    if (s == TG__NIL) return tg__error(err, TG_ERROR_INTERNAL, "pool: a new block of %llu bytes does not hold %llu",
                                       (unsigned long long)bytes, (unsigned long long)size);
  }
  p->blocks[p->fit.segs[s].block].live++;
  took(p, size);
  fill_seg_allocation(p, s, out);
  return TG_OK;
}

tg_status tg_pool_alloc(tg_pool *p, uint64_t bytes, tg_pool_allocation *out, tg_error_info *err) {
  if (out) memset(out, 0, sizeof *out);
  if (p == NULL || out == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "pool: NULL pool or result");
  uint64_t size = bytes ? bytes : 1, mask = p->alignment - 1; /* a power of two */
  if (size > UINT64_MAX - mask || ((size = (size + mask) & ~mask), 0))
    return tg__error(err, TG_ERROR_OVERFLOW, "pool: %llu bytes overflow when rounded up to the alignment %llu",
                     (unsigned long long)bytes, (unsigned long long)p->alignment);
  lock(p);
  tg_status st = p->policy == TG_POOL_EXACT ? alloc_exact(p, size, out, err) : alloc_fit(p, size, out, err);
  unlock(p);
  if (st != TG_OK) memset(out, 0, sizeof *out);
  return st;
}

/* ---- images ---- */

static int holds(tg_extent big, tg_extent small) {
  return big.w >= small.w && big.h >= small.h && big.d >= small.d;
}

static uint32_t find_free_image(tg_pool *p, tg_storage storage, tg_extent e) {
  if (!images_listed(p)) {
    uint32_t h = p->buckets[image_key(storage, e) & (p->bucket_count - 1)];
    for (uint32_t i = h; i != TG__NIL; i = p->blocks[i].next) {
      const pool_block *b = &p->blocks[i];
      if (b->kind == BLOCK_IMAGE && b->resource.storage == storage && b->resource.extent.w == e.w &&
          b->resource.extent.h == e.h && b->resource.extent.d == e.d)
        return i;
    }
    return TG__NIL;
  }
  uint32_t best = TG__NIL;
  for (uint32_t i = p->free_images; i != TG__NIL; i = p->blocks[i].next) {
    const pool_block *b = &p->blocks[i];
    if (b->resource.storage != storage || !holds(b->resource.extent, e)) continue;
    if (best == TG__NIL) {
      best = i;
      continue;
    }
    const pool_block *c = &p->blocks[best];
    int better = p->policy == TG_POOL_BEST_FIT && b->size != c->size ? b->size < c->size : b->seq < c->seq;
    if (better) best = i;
  }
  return best;
}

tg_status tg_pool_alloc_image(tg_pool *p, tg_storage storage, tg_extent extent, tg_pool_allocation *out,
                              tg_error_info *err) {
  if (out) memset(out, 0, sizeof *out);
  if (p == NULL || out == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "pool: NULL pool or result");
  if (!tg_storage_is_texture(storage))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "pool: storage %s is not an image (allocate buffers with tg_pool_alloc)",
                     tg_storage_name(storage) ? tg_storage_name(storage) : "(out of range)");
  if (extent.w == 0 || extent.h == 0 || extent.d == 0)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "pool: image extent %llux%llux%llu has a zero dimension",
                     (unsigned long long)extent.w, (unsigned long long)extent.h, (unsigned long long)extent.d);
  if ((storage == TG_STORAGE_TEXTURE_2D || storage == TG_STORAGE_SINGLE_TEXTURE_2D) && extent.d != 1)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "pool: a 2D image has depth 1, not %llu", (unsigned long long)extent.d);
  if (p->device && !tg_device_get_info(p->device)->images)
    return tg__error(err, TG_ERROR_UNSUPPORTED, "pool: the %s device has no image support",
                     tg_backend_name(tg_device_get_info(p->device)->backend));
  uint64_t texels, bytes;
  if (tg_extent_volume(extent, &texels) != TG_OK || !tg__mul_u64(texels, tg_precision_texel_bytes(p->precision), &bytes))
    return tg__error(err, TG_ERROR_OVERFLOW, "pool: image %llux%llux%llu overflows 64 bits in bytes",
                     (unsigned long long)extent.w, (unsigned long long)extent.h, (unsigned long long)extent.d);
  tg_tensor_resource res = {storage, extent, bytes};
  lock(p);
  tg_status st = TG_OK;
  uint32_t i = find_free_image(p, storage, extent);
  if (i != TG__NIL) {
    chain_remove(p, i);
  } else {
    uint64_t size = bytes;
    if (p->device) {
      tg_resource_requirements req;
      st = tg_device_compute_requirements(p->device, &res, p->precision, &req);
      if (st != TG_OK) {
        tg__error(err, st, "pool: sizing image %llux%llux%llu failed: %s", (unsigned long long)extent.w,
                  (unsigned long long)extent.h, (unsigned long long)extent.d, tg_status_string(st));
        goto done;
      }
      size = req.size;
    }
    if (size > p->capacity - p->reserved) {
      st = capacity_error(p, size, err);
      goto done;
    }
    if (size > p->max_allocation) {
      st = tg__error(err, TG_ERROR_LIMIT, "pool: image of %llu bytes exceeds the device's largest allocation (%llu)",
                     (unsigned long long)size, (unsigned long long)p->max_allocation);
      goto done;
    }
    if (!reserve_block_slot(p)) {
      st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "pool: out of host memory");
      goto done;
    }
    if ((st = new_block(p, BLOCK_IMAGE, size, &res, &i, err)) != TG_OK) goto done;
  }
  p->blocks[i].live = 1;
  took(p, p->blocks[i].size);
  fill_block_allocation(p, i, out);
done:
  unlock(p);
  return st;
}

/* ---- free, trim, stats ---- */

tg_status tg_pool_free(tg_pool *p, uint64_t id) {
  if (p == NULL) return TG_ERROR_INVALID_ARGUMENT;
  unsigned tag = (unsigned)(id >> 62);
  uint32_t generation = (uint32_t)(id >> 32) & 0x3fffffffu;
  uint64_t low = id & 0xffffffffu;
  if (low == 0 || (tag != TAG_SEG && tag != TAG_BLOCK)) return TG_ERROR_INVALID_ARGUMENT;
  uint32_t index = (uint32_t)(low - 1);
  tg_status st = TG_ERROR_INVALID_ARGUMENT;
  lock(p);
  if (tag == TAG_SEG) {
    if (is_fit(p) && index < p->fit.count && p->fit.segs[index].state == TG__SEG_USED &&
        (p->fit.segs[index].generation & 0x3fffffffu) == generation) {
      tg__seg *s = &p->fit.segs[index];
      uint64_t size = s->size;
      p->blocks[s->block].live--;
      tg__fit_release(&p->fit, index);
      p->in_use -= size;
      st = TG_OK;
    }
  } else if (index < p->block_count) {
    pool_block *b = &p->blocks[index];
    if ((b->kind == BLOCK_EXACT || b->kind == BLOCK_IMAGE) && b->live && (b->generation & 0x3fffffffu) == generation) {
      b->live = 0;
      b->generation++;
      p->in_use -= b->size;
      chain_insert(p, index);
      st = TG_OK;
    }
  }
  if (st == TG_OK) {
    p->live--;
    p->frees++;
  }
  unlock(p);
  return st;
}

tg_status tg_pool_trim(tg_pool *p, uint64_t *released) {
  if (released) *released = 0;
  if (p == NULL) return TG_ERROR_INVALID_ARGUMENT;
  lock(p);
  uint64_t before = p->reserved;
  for (uint32_t i = 0; i < p->block_count; ++i) {
    pool_block *b = &p->blocks[i];
    if (b->kind == BLOCK_EMPTY || b->live) continue;
    if (b->kind == BLOCK_FIT) tg__fit_remove_block(&p->fit, b->first_seg);
    else chain_remove(p, i);
    release_block(p, i);
  }
  if (released) *released = before - p->reserved;
  unlock(p);
  return TG_OK;
}

static void free_block_stats(const tg_pool *p, uint64_t *count, uint64_t *largest) {
  uint64_t c = 0, l = 0;
  if (is_fit(p)) tg__fit_free_stats(&p->fit, &c, &l);
  for (uint32_t i = 0; i < p->block_count; ++i) {
    const pool_block *b = &p->blocks[i];
    if ((b->kind == BLOCK_EXACT || b->kind == BLOCK_IMAGE) && !b->live) {
      c++;
      if (b->size > l) l = b->size;
    }
  }
  *count = c;
  *largest = l;
}

void tg_pool_get_stats(tg_pool *p, tg_pool_stats *out) {
  if (out == NULL) return;
  memset(out, 0, sizeof *out);
  if (p == NULL) return;
  lock(p);
  out->policy = p->policy;
  out->capacity = p->capacity;
  out->alignment = p->alignment;
  out->block_size = p->block_size;
  out->reserved = p->reserved;
  out->in_use = p->in_use;
  out->peak_reserved = p->peak_reserved;
  out->peak_in_use = p->peak_in_use;
  out->blocks = p->blocks_held;
  out->live = p->live;
  free_block_stats(p, &out->free_blocks, &out->largest_free_block);
  out->allocs = p->allocs;
  out->frees = p->frees;
  out->driver_allocations = p->driver_allocations;
  out->driver_releases = p->driver_releases;
  out->capacity_failures = p->capacity_failures;
  unlock(p);
}

tg_status tg__pool_placement(tg_pool *p, uint64_t id, void **memory, tg_tensor_resource *object) {
  if (p == NULL || memory == NULL || object == NULL) return TG_ERROR_INVALID_ARGUMENT;
  unsigned tag = (unsigned)(id >> 62);
  uint32_t generation = (uint32_t)(id >> 32) & 0x3fffffffu;
  uint64_t low = id & 0xffffffffu;
  if (low == 0) return TG_ERROR_INVALID_ARGUMENT;
  uint32_t index = (uint32_t)(low - 1);
  tg_status st = TG_ERROR_INVALID_ARGUMENT;
  lock(p);
  const pool_block *b = NULL;
  if (tag == TAG_SEG && is_fit(p) && index < p->fit.count && p->fit.segs[index].state == TG__SEG_USED &&
      (p->fit.segs[index].generation & 0x3fffffffu) == generation)
    b = &p->blocks[p->fit.segs[index].block];
  else if (tag == TAG_BLOCK && index < p->block_count && p->blocks[index].live &&
           (p->blocks[index].kind == BLOCK_EXACT || p->blocks[index].kind == BLOCK_IMAGE) &&
           (p->blocks[index].generation & 0x3fffffffu) == generation)
    b = &p->blocks[index];
  if (b) {
    *memory = b->memory;
    *object = b->resource;
    st = TG_OK;
  }
  unlock(p);
  return st;
}

/* ---- consistency walk ---- */

static tg_status check_locked(tg_pool *p, tg_error_info *err) {
  uint64_t reserved = 0, in_use = 0, blocks = 0, live = 0, hashed = 0;
  tg__fit_walk walk = {0, 0, 0, 0};
  tg_status st;
  for (uint32_t i = 0; i < p->block_count; ++i) {
    const pool_block *b = &p->blocks[i];
    if (b->kind == BLOCK_EMPTY) continue;
    blocks++;
    reserved += b->size;
    if ((p->device != NULL) != (b->memory != NULL))
      return tg__error(err, TG_ERROR_INTERNAL, "pool check: block %u has %s driver memory", i, b->memory ? "" : "no");
    if (b->kind == BLOCK_FIT) {
      if (!is_fit(p)) return tg__error(err, TG_ERROR_INTERNAL, "pool check: exact pool holds a split block %u", i);
      uint64_t used_before = walk.used_segments, bytes_before = walk.used_bytes;
      if ((st = tg__fit_check_block(&p->fit, i, b->seq, b->size, b->first_seg, &walk, err)) != TG_OK) return st;
      if (walk.used_segments - used_before != b->live)
        return tg__error(err, TG_ERROR_INTERNAL, "pool check: block %u counts %u live allocations, holds %llu", i, b->live,
                         (unsigned long long)(walk.used_segments - used_before));
      in_use += walk.used_bytes - bytes_before;
      live += b->live;
    } else {
      if (b->kind == BLOCK_EXACT && is_fit(p))
        return tg__error(err, TG_ERROR_INTERNAL, "pool check: %s pool holds an exact block %u", tg_pool_policy_name(p->policy), i);
      if (b->live > 1) return tg__error(err, TG_ERROR_INTERNAL, "pool check: block %u is taken %u times", i, b->live);
      if (b->live) {
        in_use += b->size;
        live++;
        continue;
      }
      /* Free: on its chain. */
      uint32_t *h = chain_head(p, b);
      uint32_t steps = 0, found = 0;
      for (uint32_t j = *h; j != TG__NIL && steps <= p->block_count; j = p->blocks[j].next, ++steps) found |= j == i;
      if (!found) return tg__error(err, TG_ERROR_INTERNAL, "pool check: free block %u is not on its free chain", i);
      if (h != &p->free_images) hashed++;
    }
  }
  /* Chains hold only free blocks of their bucket, with consistent back links. */
  uint64_t chained = 0;
  for (uint32_t k = 0; k <= p->bucket_count; ++k) {
    uint32_t head = k < p->bucket_count ? p->buckets[k] : p->free_images, prev = TG__NIL, steps = 0;
    for (uint32_t j = head; j != TG__NIL; prev = j, j = p->blocks[j].next) {
      const pool_block *b = &p->blocks[j];
      if (++steps > p->block_count || j >= p->block_count)
        return tg__error(err, TG_ERROR_INTERNAL, "pool check: a free chain loops or leaves the table");
      if ((b->kind != BLOCK_EXACT && b->kind != BLOCK_IMAGE) || b->live || b->prev != prev ||
          bucket_of(p, b) != (k < p->bucket_count ? k : TG__NIL))
        return tg__error(err, TG_ERROR_INTERNAL, "pool check: block %u does not belong on free chain %u", j, k);
      if (k < p->bucket_count) chained++;
    }
  }
  if (chained != hashed || hashed != p->hashed)
    return tg__error(err, TG_ERROR_INTERNAL, "pool check: %llu blocks chained, %llu free, %u counted",
                     (unsigned long long)chained, (unsigned long long)hashed, p->hashed);
  if (is_fit(p) && (st = tg__fit_check_lists(&p->fit, &walk, err)) != TG_OK) return st;
  if (!is_fit(p) && p->fit.count != 0) return tg__error(err, TG_ERROR_INTERNAL, "pool check: exact pool has segments");
  if (reserved != p->reserved || in_use != p->in_use || blocks != p->blocks_held || live != p->live)
    return tg__error(err, TG_ERROR_INTERNAL,
                     "pool check: walked reserved %llu, in use %llu, %llu blocks, %llu live; counted %llu, %llu, %llu, %llu",
                     (unsigned long long)reserved, (unsigned long long)in_use, (unsigned long long)blocks,
                     (unsigned long long)live, (unsigned long long)p->reserved, (unsigned long long)p->in_use,
                     (unsigned long long)p->blocks_held, (unsigned long long)p->live);
  if (p->reserved > p->capacity || p->peak_reserved > p->capacity || p->in_use > p->reserved ||
      p->peak_in_use > p->peak_reserved || p->reserved > p->peak_reserved || p->in_use > p->peak_in_use)
    return tg__error(err, TG_ERROR_INTERNAL, "pool check: figures out of order (reserved %llu, peak %llu, in use %llu, peak %llu, capacity %llu)",
                     (unsigned long long)p->reserved, (unsigned long long)p->peak_reserved, (unsigned long long)p->in_use,
                     (unsigned long long)p->peak_in_use, (unsigned long long)p->capacity);
  if (p->allocs - p->frees != p->live || p->driver_allocations - p->driver_releases != p->blocks_held)
    return tg__error(err, TG_ERROR_INTERNAL, "pool check: counters disagree (allocs %llu, frees %llu, live %llu)",
                     (unsigned long long)p->allocs, (unsigned long long)p->frees, (unsigned long long)p->live);
  return TG_OK;
}

tg_status tg_pool_check(tg_pool *p, tg_error_info *err) {
  if (p == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "pool check: NULL pool");
  lock(p);
  tg_status st = check_locked(p, err);
  unlock(p);
  return st;
}
