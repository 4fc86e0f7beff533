/* Placeholders until the offset strategies, bounds and validator land. */
#include "planner/strategies.h"
#define STUB(fn) tg_status fn(const tg__plan_input *in, tg_plan **out) { (void)in; *out = NULL; return TG_ERROR_UNSUPPORTED; }
STUB(tg__offsets_greedy_in_order)
STUB(tg__offsets_greedy_by_breadth)
STUB(tg__offsets_greedy_by_size)
tg_status tg_bounds_compute(const tg_usage_record *records, size_t count, uint32_t dims,
                            const tg_allocator *alloc, tg_bounds *out) {
  (void)records; (void)count; (void)dims; (void)alloc; (void)out;
  return TG_ERROR_UNSUPPORTED;
}
tg_status tg_plan_validate(const tg_usage_record *records, size_t count, uint32_t dims,
                           const tg_plan *plan, uint64_t alignment,
                           const tg_share_relation *relation, const tg_allocator *alloc,
                           tg_error_info *err) {
  (void)records; (void)count; (void)dims; (void)plan; (void)alignment; (void)relation; (void)alloc; (void)err;
  return TG_ERROR_UNSUPPORTED;
}
