/* The ranges of a pool's buffer blocks: best-fit, first-fit and TLSF over segments that tile
 * each block. Bookkeeping lives in host arrays (device memory is never touched), so a
 * segment is an index into `segs`, linked to its physical neighbours (for merging) and to
 * the other free segments of its list. Sizes are multiples of the unit (the pool's
 * alignment), so every offset is aligned. Not thread-safe: the pool locks around it. */
#ifndef TANGRAM_POOL_FIT_H
#define TANGRAM_POOL_FIT_H

#include <stdint.h>

#include "core/internal.h"
#include "tangram/pool.h"

#define TG__NIL UINT32_MAX

/* TLSF size classes: in units, sizes below 2^SLI map one class per unit; above, each power
 * of two splits into 2^SLI classes. */
#define TG__TLSF_SLI 5
#define TG__TLSF_SL_COUNT (1u << TG__TLSF_SLI)
#define TG__TLSF_FL_COUNT (64 - TG__TLSF_SLI + 1)

enum { TG__SEG_UNUSED = 0, TG__SEG_FREE = 1, TG__SEG_USED = 2 };

typedef struct tg__seg {
  uint64_t offset, size;         /* bytes */
  uint64_t seq;                  /* its block's sequence number (creation order) */
  uint32_t block;                /* its block's slot in the pool */
  uint32_t phys_prev, phys_next; /* neighbours in the block, TG__NIL at the ends */
  uint32_t free_prev, free_next; /* free list (or the chain of unused slots) */
  uint32_t generation;           /* bumped when freed or recycled: stale ids are refused */
  uint8_t state;
} tg__seg;

typedef struct tg__fit {
  tg_pool_policy policy;         /* BEST_FIT, FIRST_FIT or TLSF */
  unsigned unit_log2;
  const tg_allocator *alloc;
  tg__seg *segs;
  uint32_t count, capacity;      /* slots used so far / allocated */
  uint32_t spare;                /* chain of unused slots */
  uint32_t spares;               /* its length */
  uint32_t free_head;            /* best/first: the free segments */
  uint64_t free_count;           /* free segments */
  uint64_t fl_bitmap;            /* tlsf */
  uint32_t sl_bitmap[TG__TLSF_FL_COUNT];
  uint32_t heads[TG__TLSF_FL_COUNT][TG__TLSF_SL_COUNT];
} tg__fit;

void tg__fit_init(tg__fit *f, tg_pool_policy policy, unsigned unit_log2, const tg_allocator *alloc);
void tg__fit_free_all(tg__fit *f);
/* Make room for `n` more segments (host memory). 0 on allocation failure, nothing changed. */
int tg__fit_reserve(tg__fit *f, uint32_t n);
/* A new block of `size` bytes as one free segment (needs one reserved slot). Returns it. */
uint32_t tg__fit_add_block(tg__fit *f, uint32_t block, uint64_t seq, uint64_t size);
/* Take `size` bytes (a multiple of the unit) by the policy; needs one reserved slot.
 * TG__NIL when no free segment holds them. */
uint32_t tg__fit_alloc(tg__fit *f, uint64_t size);
/* Free a used segment, merging it with free neighbours. */
void tg__fit_release(tg__fit *f, uint32_t seg);
/* Remove a block's only segment (free, covering the block) before the block goes. */
void tg__fit_remove_block(tg__fit *f, uint32_t seg);
/* Free segments and the largest of them. */
void tg__fit_free_stats(const tg__fit *f, uint64_t *count, uint64_t *largest);

/* Consistency walk. tg__fit_check_block: the segments of one block tile [0, size) from
 * `first`, belong to it, alternate so that no two free ones touch; adds its segments, free
 * segments, used segments and used bytes to the counters. tg__fit_check_lists: the free
 * lists (and tlsf classes and bitmaps) hold exactly `free_segments` free segments, and the
 * slots in use are `segments`. TG_ERROR_INTERNAL naming the fault. */
typedef struct tg__fit_walk {
  uint64_t segments, free_segments, used_segments, used_bytes;
} tg__fit_walk;
tg_status tg__fit_check_block(const tg__fit *f, uint32_t block, uint64_t seq, uint64_t size,
                              uint32_t first, tg__fit_walk *walk, tg_error_info *err);
tg_status tg__fit_check_lists(const tg__fit *f, const tg__fit_walk *walk, tg_error_info *err);

/* TLSF class of a size in units (insert: the class holding it; search: the first class whose
 * every segment holds it). Return 0 when the size is out of range. */
int tg__tlsf_mapping_insert(uint64_t units, uint32_t *fl, uint32_t *sl);
int tg__tlsf_mapping_search(uint64_t units, uint32_t *fl, uint32_t *sl);

#endif
