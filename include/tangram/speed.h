/* Speed: time a realised plan on its device with memory-access proxies of the model's ops.
 *
 * Each op becomes a proxy kernel of its class (tg_op_class) that reads the op's planned
 * inputs and writes its planned outputs where and how the realisation placed them (the
 * storage, texel layout, reuse and aliasing of the plan), timed with device timestamps. The
 * proxies model memory traffic only: weights are not read and no arithmetic is done, so the
 * times compare storages and plans, not inference times. */
#ifndef TANGRAM_SPEED_H
#define TANGRAM_SPEED_H

#include <stddef.h>
#include <stdint.h>

#include "tangram/backend.h"
#include "tangram/graph.h"
#include "tangram/op_class.h"
#include "tangram/status.h"

#include "tangram/export.h"

#ifdef __cplusplus
extern "C" {
#endif

TANGRAM_API_BEGIN

/* One realization of the plan and which graph tensor each of its records is. A storage whose
 * tensors partly fall back to buffers has two: the storage's and the fallback buffers'. */
typedef struct tg_speed_part {
  tg_realization *realization;
  const uint32_t *tensor_of_record;
} tg_speed_part;

typedef struct tg_speed_desc {
  const tg_graph *graph;
  const tg_speed_part *parts;  /* all on one device */
  size_t part_count;
  uint32_t repeats;            /* timed runs, >= 1 */
  uint32_t warmup;             /* untimed runs before them */
  /* 1: before timing, one run where the proxies are the shadow run's writers
   * (tg_realization_check): each proxy writes its outputs' signatures, each op's inputs are
   * verified before it runs. Needs part_count == 1. Its findings are in `corrupted_records`. */
  int verify;
  double *op_ms;               /* caller array of graph->op_count entries, or NULL: median per op */
} tg_speed_desc;

typedef struct tg_speed_result {
  double median_ms, min_ms, max_ms;          /* device time of one whole run of every proxy */
  uint32_t repeats;
  double class_ms[TG_OP_CLASS_COUNT];        /* median over the runs of each class's time */
  size_t class_ops[TG_OP_CLASS_COUNT];       /* ops of each class with something to write */
  uint64_t dispatches;                       /* kernel launches per run */
  uint64_t corrupted_records;                /* verify: records the shadow run found corrupted */
} tg_speed_result;

/* Run the proxies of every op of desc->graph on the realizations: desc->warmup runs, then
 * desc->repeats timed runs; fill `*out`. TG_ERROR_INVALID_ARGUMENT for NULL, repeats 0, parts
 * on different devices or a record whose layout does not match its tensor's shape;
 * TG_ERROR_UNSUPPORTED when the device's backend has no proxies (host) or cannot run one
 * (3D image writes missing), with `err` naming the op; a driver failure's status otherwise. */
tg_status tg_realization_time(const tg_speed_desc *desc, tg_speed_result *out, tg_error_info *err);

TANGRAM_API_END

#ifdef __cplusplus
}
#endif
#endif
