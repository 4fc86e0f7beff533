/* GREEDY_COLORING, objects mode: Mini-Infer's MemoryPlanner::greedy_coloring. Records (the
 * interference graph's nodes; an edge where two may not share: intervals that intersect, as
 * Mini-Infer's lifetimes_overlap, or the relation says no) go by decreasing size (ties in
 * input order; Mini-Infer's std::sort leaves them unspecified); each joins the first pool, in
 * creation order, holding no record it conflicts with, or else opens a new pool. A pool's
 * size is its largest member's size, each size rounded up to options->alignment first (1D
 * only; Mini-Infer rounds to 256 bytes, pass alignment 256 to match), so with an alignment an
 * object may be larger than its records. 2D/3D: sizes are texel extents ordered by volume, a
 * pool's extent the per-dimension maximum of its members' (Mini-Infer plans bytes only).
 * Mini-Infer's persistent tensors (graph inputs, outputs, weights) are not usage records here.
 *
 * The interference graph is not built: a test of a pool is a look at its occupancy in time
 * (and, with a relation, at its members), which gives the same answers. Cost O(n * pools). */
#include "planner/strategies/objects_common.h"

tg_status tg__objects_greedy_coloring(const tg__plan_input *in, tg_plan **out) {
  *out = NULL;
  tg_status st = tg__obj_check_count(in);
  if (st != TG_OK) return st;
  const size_t n = in->count;
  const uint64_t align = in->dims == 1 && in->options->alignment > 1 ? in->options->alignment : 1;
  /* Sizes as Mini-Infer compares them: volume, each 1D size aligned up. */
  uint64_t *key = tg__obj_alloc(in->alloc, n, sizeof *key);
  uint32_t *order = tg__obj_alloc(in->alloc, n, sizeof *order);
  uint32_t *tmp = tg__obj_alloc(in->alloc, n, sizeof *tmp);
  uint32_t *pf = tg__obj_alloc(in->alloc, n, sizeof *pf);
  uint32_t *pl = tg__obj_alloc(in->alloc, n, sizeof *pl);
  uint32_t *pts = tg__obj_alloc(in->alloc, n, sizeof *pts);
  uint32_t *object_of = tg__obj_alloc(in->alloc, n, sizeof *object_of);
  tg__obj_occ occ;
  memset(&occ, 0, sizeof occ);
  tg__obj_members mem;
  memset(&mem, 0, sizeof mem);
  int occ_ready = 0;
  size_t pools = 0;
  if (key == NULL || order == NULL || tmp == NULL || pf == NULL || pl == NULL || pts == NULL ||
      object_of == NULL) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  for (size_t r = 0; r < n; ++r) {
    if (!tg__align_up(in->volumes[r], align, &key[r])) {
      st = TG_ERROR_OVERFLOW;
      goto done;
    }
    order[r] = (uint32_t)r;
  }
  if (n > 0) {
    tg__sort_key k = tg__key_u64(key, 1);
    tg__sort_idx(order, tmp, n, &k);
    /* pts doubles as scratch for the points; `object_of` too, before it is filled. */
    size_t points = tg__obj_points(in, pf, pl, pts, object_of, tmp);
    if ((st = tg__obj_occ_init(&occ, in, pf, pl, points)) != TG_OK) goto done;
    occ_ready = 1;
  }
  if ((st = tg__obj_members_init(&mem, in)) != TG_OK) goto done;
  for (size_t i = 0; i < n; ++i) {
    /* `best` under a time limit: no plan when the deadline comes first (a pass can cost
     * records x pools tests). */
    if (in->deadline_us != 0 && (i & 255) == 255 && tg__now_us() >= in->deadline_us) {
      st = TG_ERROR_TIMEOUT;
      goto done;
    }
    uint32_t r = order[i], p = 0;
    while (p < pools && !(tg__obj_occ_free_for(&occ, p, r) && tg__obj_may_join(&mem, p, r))) ++p;
    if (p == pools) ++pools;
    object_of[r] = p;
    if ((st = tg__obj_occ_add(&occ, p, r)) != TG_OK) goto done;
    if ((st = tg__obj_members_add(&mem, p, r)) != TG_OK) goto done;
  }
  if ((st = tg__obj_emit(in, object_of, pools, out)) != TG_OK) goto done;
  if (align > 1) {
    /* Pools sized by their aligned members. */
    uint64_t total = 0;
    for (size_t k = 0; k < pools; ++k) {
      tg_extent *e = &(*out)->object_sizes[k];
      if (!tg__align_up(e->w, align, &e->w) || !tg__add_u64(total, e->w, &total)) {
        st = TG_ERROR_OVERFLOW;
        break;
      }
    }
    (*out)->total = total;
  }
done:
  if (occ_ready) tg__obj_occ_free(&occ);
  tg__obj_members_free(&mem);
  tg__free(in->alloc, key);
  tg__free(in->alloc, order);
  tg__free(in->alloc, tmp);
  tg__free(in->alloc, pf);
  tg__free(in->alloc, pl);
  tg__free(in->alloc, pts);
  tg__free(in->alloc, object_of);
  if (st != TG_OK) {
    tg_plan_destroy(*out);
    *out = NULL;
  }
  return st;
}
