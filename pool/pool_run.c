/* A model's tensors through a run-time pool, and a realization over where they landed
 * (pool_run.h). */
#include <stdint.h>

#include "backends/backend_internal.h"
#include "planner/base/in_place.h"
#include "pool/pool_internal.h"
#include "pool/pool_run.h"

void tg__pool_run_free(tg__pool_run *run) {
  if (run == NULL || run->alloc == NULL) return;
  const tg_allocator *a = run->alloc;
  TG__FREE_EACH(a, run->memory_of, run->offset_of, run->block_of, run->size_of, run->memories,
                run->objects, run->memory_block);
  size_t failed = run->failed_record;
  memset(run, 0, sizeof *run);
  run->failed_record = failed;
}

/* Records sorted by a task key (counting sort): order[start[t] .. start[t+1]). */
static int by_task(const tg_usage_record *records, size_t count, int last, uint32_t tasks,
                   const tg_allocator *a, uint32_t **start, uint32_t **order) {
  *start = tg__calloc(a, (size_t)tasks + 2, sizeof **start);
  *order = tg__calloc(a, count ? count : 1, sizeof **order);
  if (*start == NULL || *order == NULL) return 0;
  for (size_t r = 0; r < count; ++r) (*start)[(last ? records[r].last_task : records[r].first_task) + 1]++;
  for (uint32_t t = 0; t <= tasks; ++t) (*start)[t + 1] += (*start)[t];
  uint32_t *fill = tg__calloc(a, (size_t)tasks + 1, sizeof *fill);
  if (fill == NULL) return 0;
  for (size_t r = 0; r < count; ++r) {
    uint32_t t = last ? records[r].last_task : records[r].first_task;
    (*order)[(*start)[t] + fill[t]++] = (uint32_t)r;
  }
  tg__free(a, fill);
  return 1;
}

/* The memory index of a block number, adding the block on first use. */
static tg_status memory_index(tg_pool *pool, tg__pool_run *run, uint64_t id, uint64_t block, size_t *cap,
                              uint32_t *out) {
  for (size_t k = run->memory_count; k-- > 0;)
    if (run->memory_block[k] == block) {
      *out = (uint32_t)k;
      return TG_OK;
    }
  if (run->memory_count == *cap) {
    size_t n = *cap ? *cap * 2 : 16;
    void **m = tg__realloc(run->alloc, run->memories, *cap * sizeof *m, n * sizeof *m);
    if (m == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
    run->memories = m;
    tg_tensor_resource *o = tg__realloc(run->alloc, run->objects, *cap * sizeof *o, n * sizeof *o);
    if (o == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
    run->objects = o;
    uint64_t *b = tg__realloc(run->alloc, run->memory_block, *cap * sizeof *b, n * sizeof *b);
    if (b == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
    run->memory_block = b;
    *cap = n;
  }
  size_t k = run->memory_count;
  tg_status st = tg__pool_placement(pool, id, &run->memories[k], &run->objects[k]);
  if (st != TG_OK) return TG_ERROR_INTERNAL;
  run->memory_block[k] = block;
  run->memory_count++;
  *out = (uint32_t)k;
  return TG_OK;
}

static tg_status run_records(tg_pool *pool, const tg_usage_record *records, const tg_tensor_resource *resources,
                             const uint64_t *bytes, size_t count, int free_after_producer, const size_t *view_of,
                             const tg_allocator *alloc, tg__pool_run *run, uint64_t *views_used,
                             tg_error_info *err);

tg_status tg__pool_run_records(tg_pool *pool, const tg_usage_record *records, const tg_tensor_resource *resources,
                               const uint64_t *bytes, size_t count, int free_after_producer,
                               const tg_allocator *alloc, tg__pool_run *run, tg_error_info *err) {
  return run_records(pool, records, resources, bytes, count, free_after_producer, NULL, alloc, run, NULL, err);
}

tg_status tg__pool_run_records_views(tg_pool *pool, const tg_usage_record *records,
                                     const tg_tensor_resource *resources, const uint64_t *bytes, size_t count,
                                     const tg_in_place_pair *pairs, size_t pair_count, const tg_allocator *alloc,
                                     tg__pool_run *run, uint64_t *views_used, tg_error_info *err) {
  if (run != NULL) memset(run, 0, sizeof *run);
  if (pair_count == 0)
    return run_records(pool, records, resources, bytes, count, 0, NULL, alloc, run, views_used, err);
  if (run == NULL || pool == NULL || (count && (records == NULL || resources == NULL)))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "pooled run: missing records, resources or sizes");
  alloc = tg__alloc_or_default(alloc);
  char why[sizeof err->message];
  tg_status st = tg__in_place_check(records, count, 1, pairs, pair_count, alloc, why, sizeof why);
  if (st != TG_OK) return tg__error(err, st, "pooled run: %s", why);
  for (size_t i = 0; i < pair_count; ++i)
    if (resources[pairs[i].input].storage != resources[pairs[i].output].storage)
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "pooled run: in-place pair %zu joins records %zu and %zu of "
                       "different storages", i, pairs[i].input, pairs[i].output);
  size_t *view_of = tg__calloc(alloc, count ? count : 1, sizeof *view_of);
  if (view_of == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "pooled run: out of host memory");
  for (size_t r = 0; r < count; ++r) view_of[r] = SIZE_MAX;
  for (size_t i = 0; i < pair_count; ++i)
    if (pairs[i].view) view_of[pairs[i].output] = pairs[i].input;
  st = run_records(pool, records, resources, bytes, count, 0, view_of, alloc, run, views_used, err);
  tg__free(alloc, view_of);
  return st;
}

static tg_status run_records(tg_pool *pool, const tg_usage_record *records, const tg_tensor_resource *resources,
                             const uint64_t *bytes, size_t count, int free_after_producer, const size_t *view_of,
                             const tg_allocator *alloc, tg__pool_run *run, uint64_t *views_used,
                             tg_error_info *err) {
  if (run == NULL) return TG_ERROR_INVALID_ARGUMENT;
  memset(run, 0, sizeof *run);
  run->failed_record = SIZE_MAX;
  if (pool == NULL || (count && (records == NULL || resources == NULL || bytes == NULL)) || count > UINT32_MAX)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "pooled run: missing records, resources or sizes");
  alloc = tg__alloc_or_default(alloc);
  run->alloc = alloc;
  run->record_count = count;
  uint32_t tasks = 0;
  for (size_t r = 0; r < count; ++r) {
    if (records[r].last_task < records[r].first_task)
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "pooled run: record %zu ends (task %u) before it starts (%u)", r,
                       records[r].last_task, records[r].first_task);
    if (records[r].last_task > tasks) tasks = records[r].last_task;
  }
  if (tasks == UINT32_MAX) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "pooled run: task numbers too large");
  size_t n = count ? count : 1, cap = 0;
  uint64_t *ids = tg__calloc(alloc, n, sizeof *ids);
  uint32_t *born_start = NULL, *born = NULL, *dead_start = NULL, *dead = NULL;
  run->memory_of = tg__calloc(alloc, n, sizeof *run->memory_of);
  run->offset_of = tg__calloc(alloc, n, sizeof *run->offset_of);
  run->block_of = tg__calloc(alloc, n, sizeof *run->block_of);
  run->size_of = tg__calloc(alloc, n, sizeof *run->size_of);
  tg_status st = TG_OK;
  if (!ids || !run->memory_of || !run->offset_of || !run->block_of || !run->size_of ||
      !by_task(records, count, 0, tasks, alloc, &born_start, &born) ||
      !by_task(records, count, 1, tasks, alloc, &dead_start, &dead)) {
    st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "pooled run: out of host memory");
    goto done;
  }
  for (uint64_t t = 0; t <= tasks && st == TG_OK; ++t) {
    for (uint32_t i = born_start[t]; i < born_start[t + 1]; ++i) {
      uint32_t r = born[i];
      size_t in = view_of ? view_of[r] : SIZE_MAX;
      if (in != SIZE_MAX && ids[in] != 0) {
        /* A view: the input's allocation, handed over (the input dies at this op). */
        ids[r] = ids[in];
        ids[in] = 0;
        run->offset_of[r] = run->offset_of[in];
        run->block_of[r] = run->block_of[in];
        run->size_of[r] = run->size_of[in];
        run->memory_of[r] = run->memory_of[in];
        if (views_used) ++*views_used;
        continue;
      }
      tg_pool_allocation a;
      const tg_tensor_resource *res = &resources[r];
      st = tg_storage_is_texture(res->storage) ? tg_pool_alloc_image(pool, res->storage, res->extent, &a, err)
                                              : tg_pool_alloc(pool, bytes[r], &a, err);
      if (st != TG_OK) {
        run->failed_record = r;
        break;
      }
      ids[r] = a.id;
      run->offset_of[r] = a.offset;
      run->block_of[r] = a.block;
      run->size_of[r] = a.size;
      if ((st = memory_index(pool, run, a.id, a.block, &cap, &run->memory_of[r])) != TG_OK) {
        tg__error(err, st, "pooled run: out of host memory");
        run->failed_record = r;
        break;
      }
      if (free_after_producer) {
        tg_pool_free(pool, ids[r]);
        ids[r] = 0;
      }
    }
    if (st != TG_OK) break;
    for (uint32_t i = dead_start[t]; i < dead_start[t + 1]; ++i) {
      uint32_t r = dead[i];
      if (ids[r]) tg_pool_free(pool, ids[r]);
      ids[r] = 0;
    }
  }
done:
  if (st != TG_OK) {
    for (size_t r = 0; r < count; ++r)
      if (ids && ids[r]) tg_pool_free(pool, ids[r]);
    tg__pool_run_free(run);
  }
  tg__free(alloc, ids);
  tg__free(alloc, born_start);
  tg__free(alloc, born);
  tg__free(alloc, dead_start);
  tg__free(alloc, dead);
  return st;
}

tg_status tg__pool_run_realize(tg_device *device, const tg__pool_run *run, const tg_usage_record *records,
                               const tg_tensor_resource *resources, tg_precision precision,
                               const tg_allocator *alloc, tg_realization **out, tg_error_info *err) {
  if (run == NULL) return TG_ERROR_INVALID_ARGUMENT;
  for (size_t k = 0; k < run->memory_count; ++k)
    if (run->memories[k] == NULL)
      return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "pooled run: a virtual pool has no memory to check");
  tg__placed_desc d = {records, resources, run->record_count, precision, run->memories, run->objects,
                       run->memory_count, run->memory_of, run->offset_of};
  return tg__realization_create_placed(device, &d, alloc, out, err);
}
