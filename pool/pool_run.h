/* Pooled runs of a model's tensors (pool_run.c), for the CLI's `run --runtime-pool` and the
 * tests. Not installed. */
#ifndef TANGRAM_POOL_POOL_RUN_H
#define TANGRAM_POOL_POOL_RUN_H

#include "tangram/backend.h"
#include "tangram/pool.h"

/* A model's tensors run through a pool (seed 004's simulation on real memory): in task
 * order, each record is allocated when its producer runs (first_task) and freed after its
 * last reader (last_task); at one task, allocations come before frees, so an op's outputs
 * never take its inputs' memory. Buffers take `bytes[r]` from the pool (the device's size
 * for the resource), images their extent. The blocks stay with the pool (no trim), so the
 * placements stay valid for a check until the pool is trimmed or destroyed. */
typedef struct tg__pool_run {
  size_t record_count;
  uint32_t *memory_of;          /* per record: index into memories */
  uint64_t *offset_of;          /* per record: offset inside its block (images: 0) */
  uint64_t *block_of;           /* per record: the pool's block number */
  uint64_t *size_of;            /* per record: bytes taken from the pool */
  void **memories;              /* the blocks used, in first-use order (NULL: virtual) */
  tg_tensor_resource *objects;  /* per memory: the block or image allocated */
  uint64_t *memory_block;       /* per memory: the pool's block number */
  size_t memory_count;
  size_t failed_record;         /* on failure: the record that could not be allocated, else SIZE_MAX */
  const tg_allocator *alloc;
} tg__pool_run;

/* Run `count` records through `pool`. `free_after_producer` (tests only) frees each record
 * right after its producer, breaking its lifetime on purpose so that a check must see
 * corruption. On failure (capacity, device, host memory) every allocation made is freed, the
 * pool stays usable, `run->failed_record` names the record, and `err` says why; the arrays
 * are released. */
tg_status tg__pool_run_records(tg_pool *pool, const tg_usage_record *records, const tg_tensor_resource *resources,
                               const uint64_t *bytes, size_t count, int free_after_producer,
                               const tg_allocator *alloc, tg__pool_run *run, tg_error_info *err);

/* tg__pool_run_records with in-place pairs (`pairs`, `pair_count`; NULL / 0: none). The view
 * pairs (RESHAPE-like ops) allocate nothing: the view takes over its input's allocation, which
 * is then freed after the view's last reader instead of the input's; the other pairs write in
 * place in their kernels and get memory of their own here. Every pair must follow the rules
 * of in-place pairs over `records` (tg__in_place_check: the input dies where the output is
 * born, at the pair's op, with the output's extent; one pair per record as input and as output;
 * the run is in task order, where those rules suffice) and join records of one storage, else
 * TG_ERROR_INVALID_ARGUMENT naming the pair (nothing allocated). */
tg_status tg__pool_run_records_views(tg_pool *pool, const tg_usage_record *records,
                                     const tg_tensor_resource *resources, const uint64_t *bytes, size_t count,
                                     const tg_in_place_pair *pairs, size_t pair_count, const tg_allocator *alloc,
                                     tg__pool_run *run, uint64_t *views_used, tg_error_info *err);
void tg__pool_run_free(tg__pool_run *run);

/* A realization over a run's placements, for tg_realization_check (the run's pool must be
 * over `device` and keep its blocks while the realization lives). */
tg_status tg__pool_run_realize(tg_device *device, const tg__pool_run *run, const tg_usage_record *records,
                               const tg_tensor_resource *resources, tg_precision precision,
                               const tg_allocator *alloc, tg_realization **out, tg_error_info *err);

#endif
