/* tg_plan_validate: an independent check of a plan against its records. It deliberately
 * shares no code with the strategies (its own volumes, arithmetic and overlap tests), so a bug
 * there cannot hide itself here. The rules of in-place pairs are the exception: a rule, not a
 * way of planning, with one definition that the candidates, the planner and this check apply
 * (tg__in_place_pair_fits, tg__in_place_pair_ordered). */
#include <inttypes.h>
#include <stdlib.h>

#include "core/internal.h"
#include "planner/base/in_place.h"
#include "tangram/planner.h"

#define INVALID TG_ERROR_INVALID_PLAN

static int v_mul(uint64_t a, uint64_t b, uint64_t *out) {
  if (a != 0 && b > UINT64_MAX / a) return 0;
  *out = a * b;
  return 1;
}

static int v_add(uint64_t a, uint64_t b, uint64_t *out) {
  if (b > UINT64_MAX - a) return 0;
  *out = a + b;
  return 1;
}

static int v_volume(tg_extent e, uint64_t *out) {
  uint64_t v;
  return v_mul(e.w, e.h, &v) && v_mul(v, e.d, out);
}

static int intervals_meet(const tg_usage_record *a, const tg_usage_record *b) {
  return a->first_task <= b->last_task && b->first_task <= a->last_task;
}

/* A sortable (key1, key2, index) triple; qsort with the index as the last key is stable. */
typedef struct v_item {
  uint64_t k1, k2;
  size_t idx;
} v_item;

static int v_item_cmp(const void *pa, const void *pb) {
  const v_item *a = pa, *b = pb;
  if (a->k1 != b->k1) return a->k1 < b->k1 ? -1 : 1;
  if (a->k2 != b->k2) return a->k2 < b->k2 ? -1 : 1;
  if (a->idx != b->idx) return a->idx < b->idx ? -1 : 1;
  return 0;
}

/* partner[r]: the record r is the output of a declared pair with (its input), or SIZE_MAX. */
static int declared(const size_t *partner, size_t a, size_t b) {
  return partner != NULL && (partner[a] == b || partner[b] == a);
}

static tg_status validate_objects(const tg_usage_record *records, size_t count,
                                  const tg_plan *plan, const tg_share_relation *relation,
                                  const size_t *partner, const tg_allocator *alloc,
                                  tg_error_info *err) {
  if ((count > 0 && plan->object_of == NULL) || (plan->object_count > 0 && plan->object_sizes == NULL))
    return tg__error(err, INVALID, "objects plan without object arrays");
  for (size_t r = 0; r < count; ++r) {
    uint32_t k = plan->object_of[r];
    if (k >= plan->object_count)
      return tg__error(err, INVALID, "record %zu: object id %" PRIu32 " out of range (%zu objects)",
                       r, k, plan->object_count);
    const tg_extent *s = &records[r].size, *o = &plan->object_sizes[k];
    const char *dim = s->w > o->w ? "width" : s->h > o->h ? "height" : s->d > o->d ? "depth" : NULL;
    if (dim != NULL)
      return tg__error(err, INVALID,
                       "record %zu (%" PRIu64 "x%" PRIu64 "x%" PRIu64 ") does not fit object %" PRIu32
                       " (%" PRIu64 "x%" PRIu64 "x%" PRIu64 ") in %s",
                       r, s->w, s->h, s->d, k, o->w, o->h, o->d, dim);
  }
  uint64_t total = 0;
  for (size_t k = 0; k < plan->object_count; ++k) {
    uint64_t v;
    if (!v_volume(plan->object_sizes[k], &v) || !v_add(total, v, &total))
      return tg__error(err, INVALID, "the sum of object volumes overflows 64 bits (at object %zu)", k);
  }
  if (total != plan->total)
    return tg__error(err, INVALID, "total %" PRIu64 " differs from the sum of object volumes %" PRIu64,
                     plan->total, total);
  if (plan->max_allocation > 0 && plan->dims == 1) {
    for (size_t k = 0; k < plan->object_count; ++k)
      if (plan->object_sizes[k].w > plan->max_allocation)
        return tg__error(err, INVALID, "object %zu (%" PRIu64 " bytes) exceeds the allocation cap %" PRIu64,
                         k, plan->object_sizes[k].w, plan->max_allocation);
  }
  if (count == 0) return TG_OK;

  /* Members of each object by first task. The records live when one starts (their last task
   * at or after its first) all hold that task, so each pair of them must be a declared pair
   * (which meets at its op only: check_pairs): at most three such records in a valid plan, so
   * keeping them costs nothing. Declared pairs come in either order (an input born at its op
   * ties with its output). */
  v_item *items = tg__calloc(alloc, count, sizeof *items);
  if (items == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t r = 0; r < count; ++r) items[r] = (v_item){plan->object_of[r], records[r].first_task, r};
  qsort(items, count, sizeof *items, v_item_cmp);
  tg_status st = TG_OK;
  for (size_t i = 0; i < count && st == TG_OK;) {
    size_t j = i;
    size_t live[3], nlive = 0;
    for (; j < count && items[j].k1 == items[i].k1 && st == TG_OK; ++j) {
      const size_t bi = items[j].idx;
      const tg_usage_record *b = &records[bi];
      size_t kept = 0;
      for (size_t k = 0; k < nlive; ++k)
        if (records[live[k]].last_task >= b->first_task) live[kept++] = live[k];
      nlive = kept;
      for (size_t k = 0; k < nlive && st == TG_OK; ++k) {
        const tg_usage_record *a = &records[live[k]];
        if (!declared(partner, live[k], bi))
          st = tg__error(err, INVALID,
                         "records %zu and %zu share object %" PRIu64
                         " but their task intervals [%" PRIu32 ", %" PRIu32 "] and [%" PRIu32 ", %" PRIu32
                         "] intersect",
                         live[k], bi, items[i].k1, a->first_task, a->last_task, b->first_task, b->last_task);
      }
      if (st == TG_OK && nlive == sizeof live / sizeof *live)
        st = tg__error(err, INVALID, "records %zu, %zu, %zu and %zu share object %" PRIu64 " at one task",
                       live[0], live[1], live[2], bi, items[i].k1);
      if (st == TG_OK) live[nlive++] = bi;
    }
    /* With a relation, every pair in the object must be allowed to share: quadratic in the
     * object's size, which is acceptable for a validator. */
    if (st == TG_OK && relation != NULL) {
      for (size_t x = i; x < j && st == TG_OK; ++x) {
        for (size_t y = x + 1; y < j; ++y) {
          size_t a = items[x].idx, b = items[y].idx;
          if (!intervals_meet(&records[a], &records[b]) && !relation->may_share(relation->user, a, b)) {
            st = tg__error(err, INVALID,
                           "records %zu and %zu share object %" PRIu64 " but the relation forbids sharing",
                           a < b ? a : b, a < b ? b : a, items[i].k1);
            break;
          }
        }
      }
    }
    i = j;
  }
  tg__free(alloc, items);
  return st;
}

/* Fenwick tree over offset ranks: which records are live, with predecessor/successor. */
typedef struct v_fenwick {
  size_t *t;
  size_t n, top_bit, total;
} v_fenwick;

static void fw_add(v_fenwick *f, size_t i, int delta) { /* i is 0-based */
  for (++i; i <= f->n; i += i & (~i + 1)) f->t[i] += (size_t)delta;
  f->total += (size_t)delta;
}

static size_t fw_prefix(const v_fenwick *f, size_t i) { /* live ranks < i */
  size_t s = 0;
  for (; i > 0; i -= i & (~i + 1)) s += f->t[i];
  return s;
}

static size_t fw_kth(const v_fenwick *f, size_t k) { /* 0-based rank of the k-th (1-based) */
  size_t pos = 0;
  for (size_t b = f->top_bit; b; b >>= 1) {
    if (pos + b <= f->n && f->t[pos + b] < k) {
      pos += b;
      k -= f->t[pos];
    }
  }
  return pos;
}

static tg_status overlap_error(tg_error_info *err, const tg_usage_record *records,
                               const uint64_t *off, const uint64_t *vol, size_t a, size_t b,
                               const char *why) {
  if (a > b) {
    size_t t = a;
    a = b;
    b = t;
  }
  return tg__error(err, INVALID,
                   "records %zu and %zu overlap: addresses [%" PRIu64 ", %" PRIu64 ") and [%" PRIu64
                   ", %" PRIu64 ") intersect %s (task intervals [%" PRIu32 ", %" PRIu32 "] and [%" PRIu32
                   ", %" PRIu32 "])",
                   a, b, off[a], off[a] + vol[a], off[b], off[b] + vol[b], why, records[a].first_task,
                   records[a].last_task, records[b].first_task, records[b].last_task);
}

/* Several arenas: each record inside its arena, each arena's size the end of its highest
 * record, the total their sum, every arena within the cap. `*base` gets each arena's start in
 * one address space where the arenas lie back to back (so that records of different arenas
 * never overlap there). */
static tg_status validate_overlaps(const tg_usage_record *records, size_t count,
                                   const uint64_t *off, const uint64_t *vol, size_t m,
                                   const tg_share_relation *relation, const size_t *partner,
                                   const tg_allocator *alloc, tg_error_info *err);

static tg_status validate_arenas(const tg_usage_record *records, size_t count, const tg_plan *plan,
                                 const uint64_t *vol, const tg_allocator *alloc, uint64_t **base,
                                 tg_error_info *err) {
  (void)records;
  size_t na = plan->arena_count;
  if (plan->arena_of == NULL || plan->arena_sizes == NULL)
    return tg__error(err, INVALID, "plan of %zu arenas without arena arrays", na);
  uint64_t *ends = tg__calloc(alloc, na, sizeof *ends), *b = tg__calloc(alloc, na, sizeof *b);
  if (ends == NULL || b == NULL) {
    tg__free(alloc, ends);
    tg__free(alloc, b);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  tg_status st = TG_OK;
  for (size_t r = 0; r < count && st == TG_OK; ++r) {
    uint32_t k = plan->arena_of[r];
    uint64_t end;
    if (k >= na)
      st = tg__error(err, INVALID, "record %zu: arena %" PRIu32 " out of range (%zu arenas)", r, k, na);
    else if (!v_add(plan->offset_of[r], vol[r], &end))
      st = tg__error(err, INVALID, "record %zu: offset %" PRIu64 " + size %" PRIu64 " overflows 64 bits",
                     r, plan->offset_of[r], vol[r]);
    else if (end > ends[k])
      ends[k] = end;
  }
  uint64_t total = 0;
  for (size_t k = 0; k < na && st == TG_OK; ++k) {
    if (plan->arena_sizes[k] != ends[k])
      st = tg__error(err, INVALID, "arena %zu: size %" PRIu64 " differs from max(offset + size) = %" PRIu64,
                     k, plan->arena_sizes[k], ends[k]);
    else if (plan->max_allocation > 0 && ends[k] > plan->max_allocation)
      st = tg__error(err, INVALID, "arena %zu: %" PRIu64 " bytes exceed the allocation cap %" PRIu64,
                     k, ends[k], plan->max_allocation);
    else if (!v_add(total, ends[k], &total))
      st = tg__error(err, INVALID, "the sum of arena sizes overflows 64 bits (at arena %zu)", k);
    else
      b[k] = total - ends[k];
  }
  if (st == TG_OK && total != plan->total)
    st = tg__error(err, INVALID, "total %" PRIu64 " differs from the sum of arena sizes %" PRIu64,
                   plan->total, total);
  tg__free(alloc, ends);
  if (st != TG_OK) {
    tg__free(alloc, b);
    return st;
  }
  *base = b;
  return TG_OK;
}

static tg_status validate_offsets(const tg_usage_record *records, size_t count,
                                  const tg_plan *plan, const uint64_t *vol, uint64_t alignment,
                                  const tg_share_relation *relation, const size_t *partner,
                                  const tg_allocator *alloc, tg_error_info *err) {
  if (plan->dims != 1) return tg__error(err, INVALID, "offsets plans must be 1D (plan has %" PRIu32 " dims)", plan->dims);
  if (count > 0 && plan->offset_of == NULL) return tg__error(err, INVALID, "offsets plan without offsets");
  const uint64_t *in_arena = plan->offset_of;
  uint64_t max_end = 0;
  size_t m = 0; /* records that occupy memory */
  for (size_t r = 0; r < count; ++r) {
    uint64_t a = alignment > records[r].alignment ? alignment : records[r].alignment, end;
    if (a > 1 && in_arena[r] % a != 0)
      return tg__error(err, INVALID, "record %zu: offset %" PRIu64 " is not a multiple of its alignment %" PRIu64,
                       r, in_arena[r], a);
    if (!v_add(in_arena[r], vol[r], &end))
      return tg__error(err, INVALID, "record %zu: offset %" PRIu64 " + size %" PRIu64 " overflows 64 bits",
                       r, in_arena[r], vol[r]);
    if (end > max_end) max_end = end;
    if (vol[r] > 0) ++m;
  }
  if (plan->arena_count > 1) {
    uint64_t *base = NULL;
    tg_status st = validate_arenas(records, count, plan, vol, alloc, &base, err);
    if (st != TG_OK) return st;
    uint64_t *virt = tg__calloc(alloc, count ? count : 1, sizeof *virt);
    if (virt == NULL) {
      tg__free(alloc, base);
      return TG_ERROR_OUT_OF_HOST_MEMORY;
    }
    for (size_t r = 0; r < count; ++r) virt[r] = base[plan->arena_of[r]] + in_arena[r];
    tg__free(alloc, base);
    st = m < 2 ? TG_OK : validate_overlaps(records, count, virt, vol, m, relation, partner, alloc, err);
    tg__free(alloc, virt);
    return st;
  }
  if (plan->total != max_end)
    return tg__error(err, INVALID, "total %" PRIu64 " differs from max(offset + size) = %" PRIu64,
                     plan->total, max_end);
  if (plan->max_allocation > 0 && plan->total > plan->max_allocation)
    return tg__error(err, INVALID, "arena 0: %" PRIu64 " bytes exceed the allocation cap %" PRIu64,
                     plan->total, plan->max_allocation);
  return m < 2 ? TG_OK : validate_overlaps(records, count, in_arena, vol, m, relation, partner, alloc, err);
}

/* No two conflicting records at intersecting addresses (`off`: one address space). */
static tg_status validate_overlaps(const tg_usage_record *records, size_t count,
                                   const uint64_t *off, const uint64_t *vol, size_t m,
                                   const tg_share_relation *relation, const size_t *partner,
                                   const tg_allocator *alloc, tg_error_info *err) {

  /* Time sweep. Records live at the start of the next record all meet it (and each other), so
   * the live set must be address-disjoint; kept ordered by offset, a new record can only
   * overlap its neighbours there. Zero-size records occupy nothing and are left out. */
  v_item *by_off = tg__calloc(alloc, m, sizeof *by_off);
  v_item *by_first = tg__calloc(alloc, m, sizeof *by_first);
  v_item *by_last = tg__calloc(alloc, m, sizeof *by_last);
  size_t *rank = tg__calloc(alloc, count, sizeof *rank);
  v_fenwick fw = {tg__calloc(alloc, m + 1, sizeof(size_t)), m, 1, 0};
  tg_status st = TG_OK;
  if (by_off == NULL || by_first == NULL || by_last == NULL || rank == NULL || fw.t == NULL) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  while (fw.top_bit * 2 <= m) fw.top_bit *= 2;
  for (size_t r = 0, i = 0; r < count; ++r) {
    if (vol[r] == 0) continue;
    by_off[i] = (v_item){off[r], 0, r};
    by_first[i] = (v_item){records[r].first_task, 0, r};
    by_last[i] = (v_item){records[r].last_task, 0, r};
    ++i;
  }
  qsort(by_off, m, sizeof *by_off, v_item_cmp);
  qsort(by_first, m, sizeof *by_first, v_item_cmp);
  qsort(by_last, m, sizeof *by_last, v_item_cmp);
  for (size_t i = 0; i < m; ++i) rank[by_off[i].idx] = i;
  for (size_t i = 0, j = 0; i < m; ++i) {
    size_t r = by_first[i].idx;
    for (; j < m && by_last[j].k1 < records[r].first_task; ++j) fw_add(&fw, rank[by_last[j].idx], -1);
    size_t below = fw_prefix(&fw, rank[r]);
    /* r's declared partners (its input or its output: same offset and size, checked before)
     * may be live here and are skipped: the neighbours beyond them are checked instead. */
    size_t lo = below, hi = below + 1;
    while (lo > 0 && declared(partner, by_off[fw_kth(&fw, lo)].idx, r)) --lo;
    while (hi <= fw.total && declared(partner, by_off[fw_kth(&fw, hi)].idx, r)) ++hi;
    if (lo > 0) {
      size_t p = by_off[fw_kth(&fw, lo)].idx;
      if (off[p] + vol[p] > off[r]) {
        st = overlap_error(err, records, off, vol, p, r, "while their task intervals intersect");
        goto done;
      }
    }
    if (hi <= fw.total) {
      size_t s = by_off[fw_kth(&fw, hi)].idx;
      if (off[s] < off[r] + vol[r]) {
        st = overlap_error(err, records, off, vol, r, s, "while their task intervals intersect");
        goto done;
      }
    }
    fw_add(&fw, rank[r], +1);
  }

  /* With a relation, every pair of address-overlapping records must be allowed to share.
   * Walking each record's address successors visits exactly the overlapping pairs: O(n log n)
   * plus their number, which can reach O(n^2); acceptable for a validator. */
  if (relation != NULL) {
    for (size_t i = 0; i < m; ++i) {
      size_t a = by_off[i].idx;
      for (size_t k = i + 1; k < m && off[by_off[k].idx] < off[a] + vol[a]; ++k) {
        size_t b = by_off[k].idx;
        if (!intervals_meet(&records[a], &records[b]) && !relation->may_share(relation->user, a, b)) {
          st = overlap_error(err, records, off, vol, a, b, "but the relation forbids sharing");
          goto done;
        }
      }
    }
  }
done:
  tg__free(alloc, by_off);
  tg__free(alloc, by_first);
  tg__free(alloc, by_last);
  tg__free(alloc, rank);
  tg__free(alloc, fw.t);
  return st;
}

/* The plan's declared in-place pairs: each follows the rules (input dies and output is born at
 * the op, equal sizes, one pair per record as input and as output), is allowed by the relation
 * (every other op touching the input ordered before the op) and puts both records in one object
 * or at one offset. `*partner_out[output] = input`. */
static tg_status check_pairs(const tg_usage_record *records, size_t count, const tg_plan *plan,
                             const tg_share_relation *relation, const tg_allocator *alloc, size_t **partner_out,
                             tg_error_info *err) {
  if (plan->in_place == NULL) return tg__error(err, INVALID, "plan declares in-place pairs without the array");
  size_t *partner = tg__calloc(alloc, count ? count : 1, sizeof *partner);
  unsigned char *is_input = tg__calloc(alloc, count ? count : 1, 1);
  tg_status st = TG_OK;
  if (partner == NULL || is_input == NULL) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  for (size_t r = 0; r < count; ++r) partner[r] = SIZE_MAX;
  for (size_t i = 0; i < plan->in_place_count && st == TG_OK; ++i) {
    const tg_in_place_pair *p = &plan->in_place[i];
    char why[sizeof err->message];
    uint32_t other = UINT32_MAX;
    if (!tg__in_place_pair_fits(records, count, p, i, why, sizeof why))
      st = tg__error(err, INVALID, "%s", why);
    else if (partner[p->output] != SIZE_MAX)
      st = tg__error(err, INVALID, "in-place pair %zu: record %zu is the output of two pairs", i, p->output);
    else if (is_input[p->input])
      st = tg__error(err, INVALID, "in-place pair %zu: record %zu is the input of two pairs", i, p->input);
    else if (!tg__in_place_pair_ordered(relation, p, &other))
      st = other != UINT32_MAX
               ? tg__error(err, INVALID,
                           "in-place pair %zu: op %" PRIu32 " writes record %zu over record %zu, but op %" PRIu32
                           " also touches record %zu and the relation does not order it before op %" PRIu32,
                           i, p->op, p->output, p->input, other, p->input, p->op)
               : tg__error(err, INVALID,
                           "in-place pair %zu: the relation does not let op %" PRIu32
                           " write record %zu over record %zu",
                           i, p->op, p->output, p->input);
    else if (plan->mode == TG_MODE_OBJECTS && plan->object_of != NULL &&
             plan->object_of[p->input] != plan->object_of[p->output])
      st = tg__error(err, INVALID, "in-place pair %zu: records %zu and %zu are in different objects", i, p->input,
                     p->output);
    else if (plan->mode == TG_MODE_OFFSETS && plan->offset_of != NULL &&
             (plan->offset_of[p->input] != plan->offset_of[p->output] ||
              (plan->arena_count > 1 && plan->arena_of != NULL &&
               plan->arena_of[p->input] != plan->arena_of[p->output])))
      st = tg__error(err, INVALID, "in-place pair %zu: records %zu and %zu are at different offsets", i, p->input,
                     p->output);
    if (st != TG_OK) break;
    partner[p->output] = p->input;
    is_input[p->input] = 1;
  }
done:
  tg__free(alloc, is_input);
  if (st != TG_OK) {
    tg__free(alloc, partner);
    partner = NULL;
  }
  *partner_out = partner;
  return st;
}

tg_status tg_plan_validate(const tg_usage_record *records, size_t count, uint32_t dims,
                           const tg_plan *plan, uint64_t alignment,
                           const tg_share_relation *relation, const tg_allocator *alloc,
                           tg_error_info *err) {
  if (plan == NULL || (records == NULL && count > 0))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "no plan or no records");
  if (dims < 1 || dims > 3)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "dims %" PRIu32 " is not 1, 2 or 3", dims);
  if (relation != NULL && relation->may_share == NULL)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "relation without may_share");
  alloc = tg__alloc_or_default(alloc);
  if (plan->mode != TG_MODE_OBJECTS && plan->mode != TG_MODE_OFFSETS)
    return tg__error(err, INVALID, "plan mode %d is unknown", (int)plan->mode);
  if (plan->dims != dims)
    return tg__error(err, INVALID, "plan is %" PRIu32 "D but the records are %" PRIu32 "D", plan->dims, dims);
  if (plan->record_count != count)
    return tg__error(err, INVALID, "plan has %zu records, expected %zu", plan->record_count, count);
  uint64_t *vol = tg__calloc(alloc, count ? count : 1, sizeof *vol);
  if (vol == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  tg_status st = TG_OK;
  for (size_t r = 0; r < count && st == TG_OK; ++r) {
    const tg_usage_record *rec = &records[r];
    if (rec->first_task > rec->last_task)
      st = tg__error(err, TG_ERROR_INVALID_ARGUMENT, "record %zu: first task %" PRIu32 " > last task %" PRIu32,
                     r, rec->first_task, rec->last_task);
    else if ((dims < 2 && rec->size.h != 1) || (dims < 3 && rec->size.d != 1))
      st = tg__error(err, TG_ERROR_INVALID_ARGUMENT, "record %zu: unused dimensions must be 1", r);
    else if (!v_volume(rec->size, &vol[r]))
      st = tg__error(err, TG_ERROR_INVALID_ARGUMENT, "record %zu: size overflows 64 bits", r);
  }
  size_t *partner = NULL;
  if (st == TG_OK && plan->in_place_count > 0) st = check_pairs(records, count, plan, relation, alloc, &partner, err);
  if (st == TG_OK) {
    st = plan->mode == TG_MODE_OBJECTS
             ? validate_objects(records, count, plan, relation, partner, alloc, err)
             : validate_offsets(records, count, plan, vol, alignment, relation, partner, alloc, err);
  }
  tg__free(alloc, partner);
  tg__free(alloc, vol);
  return st;
}
