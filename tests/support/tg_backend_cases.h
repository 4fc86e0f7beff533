/* What the device tests share across backends (host, OpenCL, Vulkan; owned or borrowed
 * devices): opening a backend's device, planning a record set for a device, the per-op waits
 * of an out-of-order check. */
#ifndef TG_TESTS_SUPPORT_TG_BACKEND_CASES_H
#define TG_TESTS_SUPPORT_TG_BACKEND_CASES_H

#include <stddef.h>
#include <stdint.h>

#include "support/tg_models.h"
#include "tangram/backend.h"
#include "tangram/schedule.h"

/* The public models and the storages the GPU backend tests realise (models not in the cache
 * are passed over). */
#define TG_TEST_GPU_MODEL_COUNT 4
extern const char *const tg_test_gpu_models[TG_TEST_GPU_MODEL_COUNT];
#define TG_TEST_GPU_STORAGE_COUNT 4
extern const tg_storage tg_test_gpu_storages[TG_TEST_GPU_STORAGE_COUNT];

/* The records of model `m` in `storage` and `precision` under `limits`
 * (tg_model_records_create); the test fails, naming the model, when they cannot be made. */
tg_model_records *tg_test_model_records(const tg_test_model *m, tg_storage storage, tg_precision precision,
                                        const tg_device_limits *limits);

/* The device of `opt->backend` opened with `opt`, or NULL after a message when the backend is
 * not available (a failure under CI, tg_test_in_ci). */
tg_device *tg_test_open_backend(const tg_device_options *opt);

/* Runs the executable `self` again as `self FLAG [MODE]` (no MODE when NULL) with `extra_env`
 * (NAME=value entries, NULL-terminated; they replace this process's own) for a fresh process
 * (a loader reads its configuration once per process): its stdout in `out`, NUL-terminated and
 * cut at `size`. The test fails unless it exits 0. */
void tg_test_probe(const char *self, const char *flag, const char *mode, char *const *extra_env, char *out,
                   size_t size);

/* The probe side: opens `backend` (TG_BACKEND_AUTO when `mode` is "auto") and prints what
 * happened: status=, reason= (on failure), "skipped BACKEND STATUS: reason" lines and
 * "chose BACKEND". Returns 0, the probe's exit status. */
int tg_test_run_probe(tg_backend_kind backend, const char *mode);

/* The records to plan in `mode`: `set` itself, or (offsets) the device's arena records of
 * `set`, returned and also stored in `*arena` for the caller to destroy (NULL otherwise). */
const tg_record_set *tg_test_planned_records(tg_device *d, const tg_record_set *set, const tg_tensor_resource *res,
                                             tg_precision precision, tg_mode mode, tg_record_set **arena);

/* `best` plans `set` for the device in `mode` (over the arena records of
 * tg_test_planned_records in offsets mode, aligned to the device's buffer alignment when
 * `aligned`) under `relation` (NULL: reuse); the plan passes the validator. */
tg_plan *tg_test_plan_for_device(tg_device *d, const tg_record_set *set, const tg_tensor_resource *res,
                                 tg_precision precision, tg_mode mode, const tg_share_relation *relation, int aligned,
                                 tg_record_set **arena);

/* Breaks `plan` of `set` (offsets: over `arena`, the arena records of tg_test_planned_records)
 * by putting two tensors alive at once in the same memory: the victim, the first record that
 * lives across tasks, and the intruder, a record written while the victim is still to be read
 * by a later op (first_task in (victim.first, victim.last)). Objects: the intruder takes the
 * victim's object, grown to hold both; offsets: the victim's offset. The test fails when `set`
 * has no such pair. */
void tg_test_break_plan(tg_plan *plan, const tg_record_set *set, const tg_record_set *arena, size_t *victim,
                        size_t *intruder);

/* Bytes a realisation must allocate for `plan` of `set`. */
uint64_t tg_test_expected_bytes(const tg_plan *plan, const tg_record_set *set, tg_precision precision);

/* Record r's tensor name, "?" when the set has none. */
const char *tg_test_record_name(const tg_record_set *set, size_t r);

/* Realise the two 2D images `recs` (FP32, each of its record's extent) in one 8x8 object
 * (tg_test_one_object_plan: `*plan`, the caller destroys it) on `d` without validation:
 * tg_realization_create's status, `*z` and `err`. */
tg_status tg_test_two_images_in_one_object(tg_device *d, const tg_usage_record recs[2], tg_plan **plan,
                                           tg_realization **z, tg_error_info *err);

/* Two images of different extents sharing one 8x8 object, realised on `d` with their
 * regions at the object's pitch: the narrower (record 1) written after the wider (record 0)
 * corrupts exactly record 0, in 48 < `mismatches[0]` <= 64 values (16 texels x 4 channels; a
 * few may coincide by chance). `mismatches`: both records' counts. */
void tg_test_shared_image_regions(tg_device *d, uint64_t mismatches[2]);

/* Buffer resources of `n` 1D records: res[r] a buffer of recs[r].size.w bytes. */
void tg_test_buffer_resources(const tg_usage_record *recs, size_t n, tg_tensor_resource *res);

/* The four 1D records of the host-allocation failure walks (ops 0..3, each op after the one
 * before) and their buffer resources. */
void tg_test_walk_buffers(tg_usage_record recs[4], tg_tensor_resource res[4]);

/* Realise `plan` over the walk's records `recs` (tg_test_walk_buffers, or their arena records)
 * on `d` through `alloc`, check it in order and then out of order (each op waiting for the
 * one before), and destroy it: the first failing status, or TG_OK when every step ran and the
 * checks found 0 corrupted (else the test fails). */
tg_status tg_test_walk_realise_check(tg_device *d, const tg_plan *plan, const tg_usage_record *recs,
                                     const tg_tensor_resource *res, const tg_allocator *alloc);

/* The stats of `z`, realised from `plan` of `records` records: the test fails unless it made
 * one allocation per object (one in offsets mode) and one view per record. */
tg_realization_stats tg_test_realization_counts(const tg_realization *z, const tg_plan *plan, size_t records);

/* Checks `z` (graph-less: each record written at its first task, read at its last) and
 * destroys it; the test fails unless the check runs and finds 0 corrupted. */
void tg_test_check_clean(tg_realization *z);

/* Per-op waits for an out-of-order check: the graph edges of `w`, plus its reuse edges when
 * `with_reuse` (tg_test_op_waits_free frees them). */
typedef struct tg_test_op_waits {
  size_t op_count;
  uint32_t *counts;
  const uint32_t **lists;
  uint32_t *storage;
} tg_test_op_waits;

void tg_test_op_waits_build(const tg_waits *w, int with_reuse, tg_test_op_waits *out);
void tg_test_op_waits_free(tg_test_op_waits *w);

#endif
