/* Best-fit, first-fit and TLSF over the segments of a pool's buffer blocks (fit.h). TLSF
 * follows Masmano et al., "TLSF: a new dynamic memory allocator for real-time systems"
 * (ECRTS 2004): a first-level index by power of two, a second level of 2^SLI classes per
 * power, a bitmap per level, and the search rounded up so that the head of the class found
 * always fits. */
#include "pool/fit.h"

#include <stdio.h>

static inline unsigned fls64(uint64_t v) { return 63u - (unsigned)__builtin_clzll(v); } /* v > 0 */
static inline unsigned ctz64(uint64_t v) { return (unsigned)__builtin_ctzll(v); }
static inline unsigned ctz32(uint32_t v) { return (unsigned)__builtin_ctz(v); }

int tg__tlsf_mapping_insert(uint64_t units, uint32_t *fl, uint32_t *sl) {
  *fl = *sl = 0; /* defined on every return: callers that ignore a refusal read no garbage */
  if (units == 0) return 0;
  if (units < TG__TLSF_SL_COUNT) {
    *fl = 0;
    *sl = (uint32_t)units;
    return 1;
  }
  unsigned f = fls64(units);
  *fl = f - TG__TLSF_SLI + 1;
  *sl = (uint32_t)(units >> (f - TG__TLSF_SLI)) ^ TG__TLSF_SL_COUNT;
  return *fl < TG__TLSF_FL_COUNT;
}

int tg__tlsf_mapping_search(uint64_t units, uint32_t *fl, uint32_t *sl) {
  if (units >= TG__TLSF_SL_COUNT) {
    uint64_t round = (1ull << (fls64(units) - TG__TLSF_SLI)) - 1;
    if (units > UINT64_MAX - round) return 0;
    units += round;
  }
  return tg__tlsf_mapping_insert(units, fl, sl);
}

void tg__fit_init(tg__fit *f, tg_pool_policy policy, unsigned unit_log2, const tg_allocator *alloc) {
  memset(f, 0, sizeof *f);
  f->policy = policy;
  f->unit_log2 = unit_log2;
  f->alloc = alloc;
  f->spare = TG__NIL;
  f->free_head = TG__NIL;
  for (uint32_t i = 0; i < TG__TLSF_FL_COUNT; ++i)
    for (uint32_t j = 0; j < TG__TLSF_SL_COUNT; ++j) f->heads[i][j] = TG__NIL;
}

void tg__fit_free_all(tg__fit *f) {
  tg__free(f->alloc, f->segs);
  f->segs = NULL;
  f->count = f->capacity = 0;
}

int tg__fit_reserve(tg__fit *f, uint32_t n) {
  if (f->spares >= n || f->capacity - f->count >= n - f->spares) return 1;
  uint64_t want = (uint64_t)f->capacity * 2;
  if (want < 64) want = 64;
  if (want < (uint64_t)f->count + n) want = (uint64_t)f->count + n;
  if (want > TG__NIL - 1) {
    if ((uint64_t)f->count + n > TG__NIL - 1) return 0;
    want = TG__NIL - 1;
  }
  tg__seg *s = tg__realloc(f->alloc, f->segs, (size_t)f->capacity * sizeof *s, (size_t)want * sizeof *s);
  if (s == NULL) return 0;
  f->segs = s;
  f->capacity = (uint32_t)want;
  return 1;
}

/* A slot for a new segment (reserved beforehand). Generations carry over recycled slots. */
static uint32_t seg_new(tg__fit *f) {
  uint32_t i;
  if (f->spare != TG__NIL) {
    i = f->spare;
    f->spare = f->segs[i].free_next;
    f->spares--;
  } else {
    i = f->count++;
    f->segs[i].generation = 0;
  }
  uint32_t gen = f->segs[i].generation;
  memset(&f->segs[i], 0, sizeof f->segs[i]);
  f->segs[i].generation = gen;
  f->segs[i].phys_prev = f->segs[i].phys_next = TG__NIL;
  f->segs[i].free_prev = f->segs[i].free_next = TG__NIL;
  return i;
}

static void seg_recycle(tg__fit *f, uint32_t i) {
  tg__seg *s = &f->segs[i];
  s->state = TG__SEG_UNUSED;
  s->generation++;
  s->free_next = f->spare;
  f->spare = i;
  f->spares++;
}

/* ---- free structure: one list (best/first) or the TLSF classes ---- */

static void free_insert(tg__fit *f, uint32_t i) {
  tg__seg *s = &f->segs[i];
  s->state = TG__SEG_FREE;
  s->free_prev = TG__NIL;
  f->free_count++;
  if (f->policy == TG_POOL_TLSF) {
    uint32_t fl, sl;
    tg__tlsf_mapping_insert(s->size >> f->unit_log2, &fl, &sl);
    s->free_next = f->heads[fl][sl];
    if (s->free_next != TG__NIL) f->segs[s->free_next].free_prev = i;
    f->heads[fl][sl] = i;
    f->sl_bitmap[fl] |= 1u << sl;
    f->fl_bitmap |= 1ull << fl;
  } else {
    s->free_next = f->free_head;
    if (s->free_next != TG__NIL) f->segs[s->free_next].free_prev = i;
    f->free_head = i;
  }
}

static void free_remove(tg__fit *f, uint32_t i) {
  tg__seg *s = &f->segs[i];
  f->free_count--;
  if (s->free_next != TG__NIL) f->segs[s->free_next].free_prev = s->free_prev;
  if (f->policy == TG_POOL_TLSF) {
    uint32_t fl, sl;
    tg__tlsf_mapping_insert(s->size >> f->unit_log2, &fl, &sl);
    if (s->free_prev != TG__NIL) {
      f->segs[s->free_prev].free_next = s->free_next;
    } else {
      f->heads[fl][sl] = s->free_next;
      if (s->free_next == TG__NIL) {
        f->sl_bitmap[fl] &= ~(1u << sl);
        if (f->sl_bitmap[fl] == 0) f->fl_bitmap &= ~(1ull << fl);
      }
    }
  } else {
    if (s->free_prev != TG__NIL) f->segs[s->free_prev].free_next = s->free_next;
    else f->free_head = s->free_next;
  }
  s->free_prev = s->free_next = TG__NIL;
}

uint32_t tg__fit_add_block(tg__fit *f, uint32_t block, uint64_t seq, uint64_t size) {
  uint32_t i = seg_new(f);
  tg__seg *s = &f->segs[i];
  s->offset = 0;
  s->size = size;
  s->seq = seq;
  s->block = block;
  free_insert(f, i);
  return i;
}

void tg__fit_remove_block(tg__fit *f, uint32_t seg) {
  free_remove(f, seg);
  seg_recycle(f, seg);
}

static uint32_t find_tlsf(const tg__fit *f, uint64_t units) {
  uint32_t fl, sl;
  if (tg__tlsf_mapping_search(units, &fl, &sl)) {
    uint32_t sl_map = f->sl_bitmap[fl] & (~0u << sl);
    if (sl_map == 0) {
      uint64_t fl_map = fl + 1 < 64 ? f->fl_bitmap & (~0ull << (fl + 1)) : 0;
      if (fl_map != 0) {
        fl = ctz64(fl_map);
        sl_map = f->sl_bitmap[fl];
      }
    }
    if (sl_map != 0) return f->heads[fl][ctz32(sl_map)];
  }
  /* Nothing in the classes that surely fit: the head of the size's own class may (O(1)). */
  if (tg__tlsf_mapping_insert(units, &fl, &sl)) {
    uint32_t h = f->heads[fl][sl];
    if (h != TG__NIL && (f->segs[h].size >> f->unit_log2) >= units) return h;
  }
  return TG__NIL;
}

/* Best fit: the smallest free segment that holds `size` (ties: oldest block, lowest offset);
 * first fit: the first in (block age, offset) order. */
static uint32_t find_list(const tg__fit *f, uint64_t size) {
  uint32_t best = TG__NIL;
  for (uint32_t i = f->free_head; i != TG__NIL; i = f->segs[i].free_next) {
    const tg__seg *s = &f->segs[i];
    if (s->size < size) continue;
    if (best == TG__NIL) {
      best = i;
      continue;
    }
    const tg__seg *b = &f->segs[best];
    int better;
    if (f->policy == TG_POOL_BEST_FIT && s->size != b->size) better = s->size < b->size;
    else if (s->seq != b->seq) better = s->seq < b->seq;
    else better = s->offset < b->offset;
    if (better) best = i;
  }
  return best;
}

uint32_t tg__fit_alloc(tg__fit *f, uint64_t size) {
  uint32_t i = f->policy == TG_POOL_TLSF ? find_tlsf(f, size >> f->unit_log2) : find_list(f, size);
  if (i == TG__NIL) return TG__NIL;
  free_remove(f, i);
  if (f->segs[i].size > size) {
    uint32_t t = seg_new(f); /* may move nothing: the slot was reserved */
    tg__seg *s = &f->segs[i], *r = &f->segs[t];
    r->offset = s->offset + size;
    r->size = s->size - size;
    r->seq = s->seq;
    r->block = s->block;
    r->phys_prev = i;
    r->phys_next = s->phys_next;
    if (s->phys_next != TG__NIL) f->segs[s->phys_next].phys_prev = t;
    s->phys_next = t;
    s->size = size;
    free_insert(f, t);
  }
  f->segs[i].state = TG__SEG_USED;
  return i;
}

void tg__fit_release(tg__fit *f, uint32_t i) {
  tg__seg *s = &f->segs[i];
  s->generation++;
  uint32_t n = s->phys_next;
  if (n != TG__NIL && f->segs[n].state == TG__SEG_FREE) {
    free_remove(f, n);
    s->size += f->segs[n].size;
    s->phys_next = f->segs[n].phys_next;
    if (s->phys_next != TG__NIL) f->segs[s->phys_next].phys_prev = i;
    seg_recycle(f, n);
  }
  uint32_t p = s->phys_prev;
  if (p != TG__NIL && f->segs[p].state == TG__SEG_FREE) {
    free_remove(f, p);
    tg__seg *q = &f->segs[p];
    q->size += s->size;
    q->phys_next = s->phys_next;
    if (q->phys_next != TG__NIL) f->segs[q->phys_next].phys_prev = p;
    seg_recycle(f, i);
    i = p;
  }
  free_insert(f, i);
}

void tg__fit_free_stats(const tg__fit *f, uint64_t *count, uint64_t *largest) {
  uint64_t c = 0, l = 0;
  for (uint32_t i = 0; i < f->count; ++i)
    if (f->segs[i].state == TG__SEG_FREE) {
      c++;
      if (f->segs[i].size > l) l = f->segs[i].size;
    }
  *count = c;
  *largest = l;
}

/* ---- consistency walk ---- */

tg_status tg__fit_check_block(const tg__fit *f, uint32_t block, uint64_t seq, uint64_t size,
                              uint32_t first, tg__fit_walk *walk, tg_error_info *err) {
  uint64_t at = 0, steps = 0;
  uint32_t prev = TG__NIL;
  int prev_free = 0;
  for (uint32_t i = first; i != TG__NIL; i = f->segs[i].phys_next) {
    if (i >= f->count || ++steps > f->count)
      return tg__error(err, TG_ERROR_INTERNAL, "pool check: block %u: segment chain leaves the table or loops", block);
    const tg__seg *s = &f->segs[i];
    if (s->state != TG__SEG_FREE && s->state != TG__SEG_USED)
      return tg__error(err, TG_ERROR_INTERNAL, "pool check: block %u: segment %u is not in use", block, i);
    if (s->block != block || s->seq != seq)
      return tg__error(err, TG_ERROR_INTERNAL, "pool check: segment %u says block %u, found in block %u", i, s->block, block);
    if (s->phys_prev != prev)
      return tg__error(err, TG_ERROR_INTERNAL, "pool check: block %u: segment %u has a wrong back link", block, i);
    if (s->offset != at || s->size == 0 || ((s->size | s->offset) & ((1ull << f->unit_log2) - 1)) != 0)
      return tg__error(err, TG_ERROR_INTERNAL, "pool check: block %u: segment %u at %llu (+%llu) should start at %llu, aligned and not empty",
                       block, i, (unsigned long long)s->offset, (unsigned long long)s->size, (unsigned long long)at);
    int is_free = s->state == TG__SEG_FREE;
    if (is_free && prev_free)
      return tg__error(err, TG_ERROR_INTERNAL, "pool check: block %u: free segments %u and %u touch (not merged)", block, prev, i);
    if (!tg__add_u64(at, s->size, &at) || at > size)
      return tg__error(err, TG_ERROR_INTERNAL, "pool check: block %u: segments run past its %llu bytes", block, (unsigned long long)size);
    walk->segments++;
    if (is_free) {
      walk->free_segments++;
    } else {
      walk->used_segments++;
      walk->used_bytes += s->size;
    }
    prev_free = is_free;
    prev = i;
  }
  if (at != size)
    return tg__error(err, TG_ERROR_INTERNAL, "pool check: block %u: segments cover %llu of its %llu bytes", block,
                     (unsigned long long)at, (unsigned long long)size);
  return TG_OK;
}

static tg_status check_chain(const tg__fit *f, uint32_t head, uint64_t *count, int tlsf, uint32_t fl,
                             uint32_t sl, tg_error_info *err) {
  uint32_t prev = TG__NIL;
  for (uint32_t i = head; i != TG__NIL; i = f->segs[i].free_next) {
    if (i >= f->count || *count > f->count)
      return tg__error(err, TG_ERROR_INTERNAL, "pool check: a free list leaves the table or loops");
    const tg__seg *s = &f->segs[i];
    if (s->state != TG__SEG_FREE)
      return tg__error(err, TG_ERROR_INTERNAL, "pool check: segment %u is on a free list but not free", i);
    if (s->free_prev != prev)
      return tg__error(err, TG_ERROR_INTERNAL, "pool check: segment %u has a wrong free-list back link", i);
    if (tlsf) {
      uint32_t want_fl, want_sl;
      if (!tg__tlsf_mapping_insert(s->size >> f->unit_log2, &want_fl, &want_sl) || want_fl != fl || want_sl != sl)
        return tg__error(err, TG_ERROR_INTERNAL, "pool check: segment %u of %llu bytes is in class (%u,%u), not (%u,%u)", i,
                         (unsigned long long)s->size, fl, sl, want_fl, want_sl);
    }
    ++*count;
    prev = i;
  }
  return TG_OK;
}

tg_status tg__fit_check_lists(const tg__fit *f, const tg__fit_walk *walk, tg_error_info *err) {
  uint64_t listed = 0;
  tg_status st;
  if (f->policy == TG_POOL_TLSF) {
    if (f->free_head != TG__NIL)
      return tg__error(err, TG_ERROR_INTERNAL, "pool check: tlsf pool has a plain free list");
    for (uint32_t fl = 0; fl < TG__TLSF_FL_COUNT; ++fl) {
      if (((f->fl_bitmap >> fl) & 1u) != (f->sl_bitmap[fl] != 0))
        return tg__error(err, TG_ERROR_INTERNAL, "pool check: first-level bit %u disagrees with its second level", fl);
      for (uint32_t sl = 0; sl < TG__TLSF_SL_COUNT; ++sl) {
        uint32_t h = f->heads[fl][sl];
        if (((f->sl_bitmap[fl] >> sl) & 1u) != (h != TG__NIL))
          return tg__error(err, TG_ERROR_INTERNAL, "pool check: bit (%u,%u) disagrees with its list", fl, sl);
        if ((st = check_chain(f, h, &listed, 1, fl, sl, err)) != TG_OK) return st;
      }
    }
  } else {
    if (f->fl_bitmap != 0)
      return tg__error(err, TG_ERROR_INTERNAL, "pool check: list pool has tlsf bits set");
    if ((st = check_chain(f, f->free_head, &listed, 0, 0, 0, err)) != TG_OK) return st;
  }
  if (listed != walk->free_segments || listed != f->free_count)
    return tg__error(err, TG_ERROR_INTERNAL, "pool check: %llu segments on free lists, %llu free in blocks, %llu counted",
                     (unsigned long long)listed, (unsigned long long)walk->free_segments,
                     (unsigned long long)f->free_count);
  uint64_t in_table = 0, spare = 0;
  for (uint32_t i = 0; i < f->count; ++i) in_table += f->segs[i].state != TG__SEG_UNUSED;
  for (uint32_t i = f->spare; i != TG__NIL && spare <= f->count; i = f->segs[i].free_next) {
    if (f->segs[i].state != TG__SEG_UNUSED)
      return tg__error(err, TG_ERROR_INTERNAL, "pool check: segment %u is spare but in use", i);
    spare++;
  }
  if (in_table != walk->segments || spare != f->spares || in_table + spare != f->count)
    return tg__error(err, TG_ERROR_INTERNAL, "pool check: %llu segments in the table, %llu in blocks, %llu spare of %u",
                     (unsigned long long)in_table, (unsigned long long)walk->segments,
                     (unsigned long long)spare, f->count);
  return TG_OK;
}
