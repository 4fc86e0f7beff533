/* `tangram run`'s plans: one storage's plan of a model on a device, made here or loaded from a
 * plan file and checked against what this model, storage and device allow. */
#ifndef TANGRAM_TOOLS_RUN_PLAN_H
#define TANGRAM_TOOLS_RUN_PLAN_H

#include "tangram/backend.h"
#include "tangram/plan_file.h"
#include "tools/input.h"

/* The plan of one fallback group (NULL plan: the group is empty). */
typedef struct tg_cli_fallback_plan {
  const tg_model_fallback *group;
  tg_record_set *arena;           /* offsets mode: the device's real sizes/alignments */
  tg_tensor_resource *resources;
  tg_plan *plan;
} tg_cli_fallback_plan;

/* One storage's plan: records, the plan, and the plans of the tensors that do not fit the
 * storage, one per storage of the fallback chain they fell to. */
typedef struct tg_cli_storage_plan {
  tg_storage storage;
  tg_cli_input in;
  tg_record_set *arena_records;   /* offsets mode: the device's real sizes/alignments */
  const tg_record_set *planned;   /* arena_records or in.records */
  tg_tensor_resource *resources;
  tg_plan *plan;
  tg_cli_fallback_plan fb[TG_STORAGE_FALLBACK_COUNT];
  tg_mode mode;
  tg_strategy strategy;
  uint64_t bytes, naive_bytes, lower_bound_bytes;
  uint64_t plan_us;
  const char *note;                /* e.g. textures fell back to objects mode */
  tg_in_place_pair *pairs;         /* --in-place: the pairs this model, storage and device allow */
  size_t pair_count;
} tg_cli_storage_plan;

/* Plan MODEL (`path`) in `storage` on the device: its records under `limits` (tensors that do
 * not fit fall along the chain, unless `no_fallback`: then TG_ERROR_LIMIT naming one), the
 * in-place pairs this model, storage and device allow (`in_place`), the policy's relation in
 * every group, the primary plan and each fallback group's (offsets mode over the device's own
 * sizes and alignments; textures in objects mode where the device cannot place images in an
 * arena, with a note), each within `max_allocation`, and the bounds. On failure `*sp` is
 * empty and `err` says why. Free with tg_cli_storage_plan_free. */
tg_status tg_cli_storage_plan_build(tg_device *dev, const char *path, tg_storage storage, tg_precision precision,
                                    tg_mode mode, tg_strategy strategy, tg_policy policy, int plan_io, int in_place,
                                    uint32_t time_limit_ms, const tg_model_options *shapes, uint64_t max_allocation,
                                    const tg_device_limits *limits, int no_fallback, const tg_allocator *alloc,
                                    tg_cli_storage_plan *sp, tg_error_info *err);

/* --plan: the plan of a plan file for MODEL's records on this device (built with the file's
 * storage, precision and plan_io under the device's limits): the records must have the file's
 * fingerprint, the plan must hold under the file's policy, its in-place pairs must be among
 * those this model, storage and device allow (the pairs a plan made here may use), and in
 * offsets mode it must meet the device's own sizes and alignments. Takes the file's plan.
 * Statuses other than host memory and device failures mean this plan cannot run here (exit 2);
 * `err` says why. */
tg_status tg_cli_storage_plan_from_file(tg_device *dev, const char *path, tg_plan_file *pf, int plan_io,
                                        const tg_model_options *shapes, uint64_t max_allocation,
                                        const tg_device_limits *limits, const tg_allocator *alloc,
                                        tg_cli_storage_plan *sp, tg_error_info *err);

/* Objects mode: raise the lower bound with the LP bound over objects of the primary records
 * (often tighter than the shape-aware one; it proves most of best's plans optimal). Costs
 * more than the other bounds: for the chosen plan only. A bound that fails changes nothing. */
void tg_cli_storage_plan_lp_bound(tg_cli_storage_plan *sp, tg_precision precision);

/* Free everything a storage plan holds and zero it. */
void tg_cli_storage_plan_free(tg_cli_storage_plan *sp);

#endif
