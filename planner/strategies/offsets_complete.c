/* Completing an offsets plan fast (offsets_common.h, tg__offsets_complete_on_top): each
 * remaining record goes right above the highest placed record live during its interval, found
 * with a segment tree over the task points that keeps the highest end (range max query,
 * range "raise to at least" update). Serial relation only. */
#include "planner/strategies/offsets_common.h"

typedef struct top_tree {
  size_t size;   /* leaves, a power of two */
  uint64_t *mx;  /* 2 * size: the highest end in the subtree, its own tag included */
  uint64_t *tag; /* 2 * size: an end that covers the whole subtree */
} top_tree;

/* The highest end over leaves [l, r] (inclusive), bottom-up. */
static uint64_t tt_query(const top_tree *t, size_t l, size_t r) {
  size_t lo = l + t->size, hi = r + t->size + 1;
  uint64_t m = 0;
  for (size_t a = lo, b = hi; a < b; a >>= 1, b >>= 1) {
    if (a & 1) { if (t->mx[a] > m) m = t->mx[a]; ++a; }
    if (b & 1) { --b; if (t->mx[b] > m) m = t->mx[b]; }
  }
  /* Tags above the range's two ends cover it too. */
  for (size_t i = lo >> 1; i > 0; i >>= 1) if (t->tag[i] > m) m = t->tag[i];
  for (size_t i = (hi - 1) >> 1; i > 0; i >>= 1) if (t->tag[i] > m) m = t->tag[i];
  return m;
}

static void tt_pull(top_tree *t, size_t i) {
  for (i >>= 1; i > 0; i >>= 1) {
    uint64_t m = t->mx[2 * i] > t->mx[2 * i + 1] ? t->mx[2 * i] : t->mx[2 * i + 1];
    if (t->tag[i] > m) m = t->tag[i];
    t->mx[i] = m;
  }
}

/* Raise leaves [l, r] to at least v. */
static void tt_raise(top_tree *t, size_t l, size_t r, uint64_t v) {
  size_t lo = l + t->size, hi = r + t->size + 1;
  for (size_t a = lo, b = hi; a < b; a >>= 1, b >>= 1) {
    if (a & 1) {
      if (v > t->mx[a]) t->mx[a] = v;
      if (v > t->tag[a]) t->tag[a] = v;
      ++a;
    }
    if (b & 1) {
      --b;
      if (v > t->mx[b]) t->mx[b] = v;
      if (v > t->tag[b]) t->tag[b] = v;
    }
  }
  tt_pull(t, lo);
  tt_pull(t, hi - 1);
}

tg_status tg__offsets_complete_on_top(const tg__plan_input *in, const size_t *rest, size_t count,
                                      uint64_t *offset_of) {
  if (in->options->relation != NULL) return TG_ERROR_INTERNAL;
  if (count == 0) return TG_OK;
  const size_t n = in->count;
  tg__task_points tp = {0, NULL, NULL};
  tg_status st = tg__task_points_init(in, &tp);
  if (st != TG_OK) return st;
  top_tree t = {1, NULL, NULL};
  while (t.size < tp.count) t.size *= 2;
  t.mx = tg__calloc(in->alloc, 4 * t.size, sizeof *t.mx);
  uint8_t *pending = tg__calloc(in->alloc, n ? n : 1, 1);
  if (t.mx == NULL || pending == NULL) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  t.tag = t.mx + 2 * t.size;
  for (size_t i = 0; i < count; ++i) pending[rest[i]] = 1;
  for (size_t r = 0; r < n; ++r) { /* the records placed already */
    if (pending[r] || in->volumes[r] == 0) continue;
    tt_raise(&t, tp.pf[r], tp.pl[r], offset_of[r] + in->volumes[r]);
  }
  for (size_t i = 0; i < count; ++i) {
    size_t r = rest[i];
    uint64_t top = in->volumes[r] ? tt_query(&t, tp.pf[r], tp.pl[r]) : 0, at, end;
    if (!tg__align_up(top, tg__record_alignment(in, r), &at) ||
        !tg__add_u64(at, in->volumes[r], &end)) {
      st = TG_ERROR_OVERFLOW;
      goto done;
    }
    offset_of[r] = at;
    if (in->volumes[r]) tt_raise(&t, tp.pf[r], tp.pl[r], end);
  }
done:
  tg__free(in->alloc, t.mx);
  tg__free(in->alloc, pending);
  tg__task_points_free(in, &tp);
  return st;
}
