/* The plans an evaluation keeps per storage and mode (tg_evaluation_get_parts): for every
 * storage and mode's best row, its parts are exactly the plans whose bytes the row reports,
 * each valid over the records it was made for and under the policy's relation of its group
 * (tg_model_relations), with the fallback groups in chain order; other rows have none. */
#include "support/tg_test.h"

#include <string.h>

#include "tangram/model.h"
#include "tangram/report.h"
#include "tangram/schedule.h"

/* Four branches of a stem: at a 16x16 texture limit every tensor of a texture storage falls to
 * image buffers, where the branches' tensors may share only as the policy says. */
static const char k_graph[] =
    "tensor x 1x32x32x16 float32 input\n"
    "tensor w 3x3x16x16 float32 constant\n"
    "tensor stem 1x32x32x16 float32\n"
    "tensor b1 1x32x32x16 float32\n"
    "tensor b2a 1x32x32x16 float32\n"
    "tensor b2 1x32x32x16 float32\n"
    "tensor b3a 1x8x8x16 float32\n"
    "tensor b3 1x8x8x16 float32\n"
    "tensor r3 1x8x8x16 float32\n"
    "tensor cat 1x32x32x48 float32\n"
    "tensor y 1x32x32x16 float32 output\n"
    "op CONV_2D inputs=x,w outputs=stem\n"
    "op CONV_2D inputs=stem,w outputs=b1\n"
    "op CONV_2D inputs=stem,w outputs=b2a\n"
    "op RELU inputs=b2a outputs=b2\n"
    "op MAX_POOL_2D inputs=stem outputs=b3a\n"
    "op RELU inputs=b3a outputs=b3\n"
    "op RESIZE_NEAREST_NEIGHBOR inputs=b3 outputs=r3\n"
    "op CONCATENATION inputs=b1,b2,r3 outputs=cat\n"
    "op CONV_2D inputs=cat,w outputs=y\n";

static void parts_are_the_rows_plans(void **state) {
  (void)state;
  tg_graph *g = NULL;
  tg_error_info err = {{0}};
  if (tg_graph_parse_text(k_graph, strlen(k_graph), "branches.graph", NULL, &g, &err) != TG_OK)
    fail_msg("%s", err.message);
  tg_schedule *sched = NULL;
  assert_int_equal(tg_schedule_create(g, NULL, NULL, &sched, &err), TG_OK);
  tg_device_limits limits = tg_device_limits_default();
  limits.max_texture_2d_width = limits.max_texture_2d_height = 16;
  limits.max_texture_3d_width = limits.max_texture_3d_height = 16;
  size_t checked = 0, grouped = 0;
  for (int policy = 0; policy < TG_POLICY_COUNT; ++policy)
    for (int in_place = 0; in_place < 2; ++in_place) {
      tg_evaluation_options opt = {.policy = (tg_policy)policy, .limits = &limits, .in_place = in_place};
      tg_evaluation *ev = NULL;
      if (tg_evaluation_create_from_graph(g, &opt, NULL, &ev, &err) != TG_OK) fail_msg("%s", err.message);
      for (int s = 0; s < TG_STORAGE_COUNT; ++s) {
        const tg_model_records *mr = tg_evaluation_get_records(ev, (tg_storage)s);
        assert_non_null(mr);
        tg_model_relations rels;
        assert_int_equal(tg_model_relations_create(sched, opt.policy, mr, NULL, &rels), TG_OK);
        const size_t best = ev->best_of_storage[s];
        assert_true(best == ev->best_of_mode[s][0] || best == ev->best_of_mode[s][1]);
        for (int m = 0; m < 2; ++m) {
          const size_t i = ev->best_of_mode[s][m];
          if (i == TG_EVALUATION_NONE) continue;
          const tg_evaluation_result *r = &ev->results[i];
          assert_int_equal(r->storage, s);
          assert_int_equal(r->mode, m ? TG_MODE_OFFSETS : TG_MODE_OBJECTS);
          for (size_t k = 0; k < ev->result_count; ++k) {
            const tg_evaluation_result *o = &ev->results[k];
            if (o->storage == r->storage && o->mode == r->mode && o->valid && !o->skipped)
              assert_true(o->bytes > r->bytes || (o->bytes == r->bytes && k >= i));
          }
          tg_evaluation_part parts[TG_EVALUATION_MAX_PARTS];
          size_t n = 0;
          assert_int_equal(tg_evaluation_get_parts(ev, i, parts, &n), TG_OK);
          assert_true(n >= 1 && n <= TG_EVALUATION_MAX_PARTS);
          assert_int_equal(parts[0].storage, s);
          assert_ptr_equal(parts[0].records, mr->records);
          assert_ptr_equal(parts[0].tensor_of, mr->tensor_of);
          uint64_t bytes = 0;
          int last = -1;
          for (size_t p = 0; p < n; ++p) {
            const tg_evaluation_part *x = &parts[p];
            const tg_plan *plan = x->plan;
            const uint32_t dims = m ? 1 : x->records->dims;
            const tg_share_relation *rel =
                tg_policy_relation_get(p == 0 ? rels.primary : rels.fallback[x->storage]);
            tg_test_assert_valid(x->planned, x->records->count, dims, plan, 0, rel);
            const uint64_t unit = !m && dims > 1 ? tg_precision_texel_bytes(opt.precision) : 1;
            bytes += plan->total * unit;
            if (p > 0) {
              int g_at = -1;
              for (uint32_t k = 0; k < TG_STORAGE_FALLBACK_COUNT; ++k)
                if (tg_storage_fallback_at(k) == x->storage) g_at = (int)k;
              assert_true(g_at > last);
              last = g_at;
              assert_ptr_equal(x->records, mr->fallbacks[x->storage].records);
              assert_ptr_equal(x->tensor_of, mr->fallbacks[x->storage].tensor_of);
              ++grouped;
            }
            if (m && x->records->dims > 1) /* offsets of textures: the records' bytes */
              for (size_t q = 0; q < x->records->count; ++q) {
                uint64_t v = 0;
                assert_int_equal(tg_extent_volume(x->records->records[q].size, &v), TG_OK);
                assert_int_equal(x->planned[q].size.w, v * tg_precision_texel_bytes(opt.precision));
              }
          }
          assert_int_equal(bytes, r->bytes);
          ++checked;
        }
        tg_model_relations_clear(&rels);
      }
      /* Rows that are no storage and mode's best keep no plans. */
      size_t n = 0;
      tg_evaluation_part parts[TG_EVALUATION_MAX_PARTS];
      for (size_t k = 0; k < ev->result_count; ++k)
        if (k != ev->best_of_mode[ev->results[k].storage][ev->results[k].mode == TG_MODE_OFFSETS])
          assert_int_equal(tg_evaluation_get_parts(ev, k, parts, &n), TG_ERROR_INVALID_ARGUMENT);
      assert_int_equal(tg_evaluation_get_parts(ev, ev->result_count, parts, &n), TG_ERROR_INVALID_ARGUMENT);
      assert_null(tg_evaluation_get_records(ev, TG_STORAGE_COUNT));
      tg_evaluation_destroy(ev);
    }
  print_message("%zu best rows, %zu fallback parts: each the row's plans, valid under its policy\n", checked,
                grouped);
  assert_true(checked >= 3 * 2 * 10);
  assert_true(grouped > 0);
  tg_schedule_destroy(sched);
  tg_graph_destroy(g);
}

TG_TEST_MAIN(cmocka_unit_test(parts_are_the_rows_plans))
