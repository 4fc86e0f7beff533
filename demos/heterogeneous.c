/* A heterogeneous graph: a custom op runs on the CPU, the rest on the GPU.
 *
 * Places each op (the default profile puts ops a mobile GPU path lacks on the CPU), splits the
 * tensors into device, host and shared memory, plans each space in one call, lists the waits
 * between the processors, realises everything on a device (TANGRAM_BACKEND picks it; auto
 * otherwise), gets CPU pointers to the shared tensors without a copy, and runs the on-device
 * check over both processors.
 *
 *   heterogeneous */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tangram/backend.h"
#include "tangram/hetero.h"
#include "tangram/model.h"
#include "tangram/placement.h"
#include "tangram/schedule.h"

/* conv -> custom op (CPU) -> conv -> add(conv output, custom output) */
static const char k_graph[] =
    "tensor image 1x32x32x4 float32 input\n"
    "tensor w 4x3x3x4 float32 constant\n"
    "tensor a 1x32x32x8 float32\n"
    "tensor b 1x32x32x8 float32\n"
    "tensor c 1x32x32x8 float32\n"
    "tensor out 1x32x32x8 float32 output\n"
    "op CONV_2D inputs=image,w outputs=a\n"
    "op MyCustomOp inputs=a outputs=b\n"
    "op CONV_2D inputs=b,w outputs=c\n"
    "op ADD inputs=a,c outputs=out\n";

#define CHECK(call)                                                         \
  do {                                                                      \
    tg_status st_ = (call);                                                 \
    if (st_ != TG_OK) {                                                     \
      fprintf(stderr, "%s: %s (%s)\n", #call, err.message, tg_status_name(st_)); \
      return 1;                                                             \
    }                                                                       \
  } while (0)

int main(void) {
  tg_error_info err = {{0}};
  tg_graph *g = NULL;
  tg_lifetimes *l = NULL;
  tg_schedule *s = NULL;
  tg_model_records *mr = NULL;
  CHECK(tg_graph_parse_text(k_graph, sizeof k_graph - 1, "demo", NULL, &g, &err));
  CHECK(tg_graph_compute_lifetimes(g, NULL, NULL, &l, &err));
  CHECK(tg_schedule_create(g, NULL, NULL, &s, &err));
  CHECK(tg_model_records_create(g, l, TG_STORAGE_BUFFER, TG_PRECISION_FP32, NULL, NULL, &mr, &err));

  /* A processor per op, alongside the graph. */
  tg_processor proc[4];
  CHECK(tg_placement_apply_spec(g, "auto", proc, &err));
  for (size_t i = 0; i < g->op_count; ++i) printf("op %zu %-11s on the %s\n", i, g->ops[i].name, tg_processor_name(proc[i]));

  tg_spaces *sp = NULL;
  CHECK(tg_spaces_create(g, l, mr, proc, NULL, &sp, &err));
  /* Every set planned alone (best strategy; the GPU runs its ops in order, the CPU too), and the
   * waits between the processors. */
  tg_space_options opt[TG_SET_COUNT];
  for (int k = 0; k < TG_SET_COUNT; ++k)
    opt[k] = (tg_space_options){.plan = {.strategy = TG_STRATEGY_BEST}, .policy = TG_POLICY_SERIAL};
  tg_spaces_plan plan;
  CHECK(tg_spaces_plan_all(sp, s, opt, NULL, 0, 1, NULL, &plan, &err));
  for (int space = 0; space < TG_SPACE_COUNT; ++space)
    printf("%-6s %zu tensors, %llu bytes\n", tg_space_name((tg_space)space), tg_spaces_count(sp, (tg_space)space),
           (unsigned long long)plan.bytes[space]);
  const tg_spaces_waits *w = plan.waits;
  for (size_t e = 0; e < w->cross_count; ++e)
    printf("wait: op %u (%s) after op %u (%s), for tensor %s\n", w->cross[e].op, tg_processor_name(proc[w->cross[e].op]),
           w->cross[e].after, tg_processor_name(proc[w->cross[e].after]), g->tensors[w->cross[e].tensor].name);

  /* Realise: every set with its records (buffers here) and plan. */
  tg_device *dev = NULL;
  tg_device_options dopt = {0};
  CHECK(tg_device_open(&dopt, NULL, &dev, NULL, NULL, &err));
  tg_tensor_resource *res[TG_SET_COUNT];
  tg_hetero_set_desc sets[TG_SET_COUNT];
  for (int k = 0; k < TG_SET_COUNT; ++k) {
    const tg_record_set *rs = sp->sets[k].records;
    res[k] = calloc(rs->count ? rs->count : 1, sizeof *res[k]);
    if (res[k] == NULL) return 1;
    for (size_t r = 0; r < rs->count; ++r)
      res[k][r] = (tg_tensor_resource){TG_STORAGE_BUFFER, rs->records[r].size, rs->records[r].size.w};
    sets[k] = (tg_hetero_set_desc){sp->sets[k].space, plan.sets[k].plan, rs->records, rs->count, 1, res[k],
                                   sp->sets[k].tensor_of};
  }
  tg_hetero_realize_desc rd = {sets, TG_SET_COUNT, TG_PRECISION_FP32, 0};
  tg_hetero_realization *z = NULL;
  CHECK(tg_hetero_realization_create(dev, &rd, NULL, &z, &err));
  printf("device: %s\n", tg_backend_name(tg_device_get_info(dev)->backend));

  /* CPU pointers to the shared tensors, without a copy, while mapped. */
  CHECK(tg_hetero_realization_map(z, &err));
  size_t first = 0;
  for (int k = 0; k < TG_SET_COUNT; ++k) {
    for (size_t r = 0; r < sets[k].record_count; ++r) {
      tg_space space;
      void *host = NULL;
      CHECK(tg_hetero_realization_get_tensor(z, first + r, &space, NULL, &host));
      if (space == TG_SPACE_SHARED)
        printf("shared tensor %s: the CPU reads and writes it at %s\n", g->tensors[sets[k].tensor_of[r]].name,
               host ? "a mapped pointer" : "(none)");
    }
    first += sets[k].record_count;
  }
  CHECK(tg_hetero_realization_unmap(z, &err));

  /* Both processors, out of order where the waits allow. */
  tg_hetero_check_desc cd = {g, proc, 1, w->wait_start, w->waits};
  tg_check_result result = {0, NULL, 0};
  CHECK(tg_hetero_realization_check(z, &cd, &result, &err));
  printf("check: %llu corrupted tensors, %llu bytes verified\n", (unsigned long long)result.corrupted_records,
         (unsigned long long)result.checked_bytes);

  tg_hetero_realization_destroy(z);
  tg_device_close(dev);
  for (int k = 0; k < TG_SET_COUNT; ++k) free(res[k]);
  tg_spaces_plan_free(&plan);
  tg_spaces_destroy(sp);
  tg_model_records_destroy(mr);
  tg_schedule_destroy(s);
  tg_lifetimes_destroy(l);
  tg_graph_destroy(g);
  return result.corrupted_records ? 1 : 0;
}
