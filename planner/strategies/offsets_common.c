/* Shared machinery of the offsets-mode strategies: a stable sort, task points and the gap
 * index. See offsets_common.h. */
#include "planner/strategies/offsets_common.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* ---- stable sort ---------------------------------------------------------------------- */

void tg__sort_items_stable(tg__sort_item *a, size_t n, tg__sort_item *tmp) {
  if (n < 64) {
    /* Insertion sort: stable, and fastest for short inputs. */
    for (size_t i = 1; i < n; ++i) {
      tg__sort_item x = a[i];
      size_t j = i;
      while (j > 0 && a[j - 1].key > x.key) {
        a[j] = a[j - 1];
        --j;
      }
      a[j] = x;
    }
    return;
  }
  /* LSD radix sort on bytes (stable by construction); bytes where every key agrees are
   * skipped, so small keys (tasks, typical sizes) take few passes. */
  uint64_t differ = 0;
  for (size_t i = 1; i < n; ++i) differ |= a[i].key ^ a[0].key;
  size_t count[8][256];
  memset(count, 0, sizeof count);
  int digits[8], nd = 0;
  for (int d = 0; d < 8; ++d)
    if ((differ >> (8 * d)) & 0xFF) digits[nd++] = d;
  for (size_t i = 0; i < n; ++i) {
    uint64_t k = a[i].key;
    for (int j = 0; j < nd; ++j) count[digits[j]][(k >> (8 * digits[j])) & 0xFF]++;
  }
  tg__sort_item *src = a, *dst = tmp;
  for (int j = 0; j < nd; ++j) {
    int d = digits[j];
    size_t pos = 0;
    for (int b = 0; b < 256; ++b) {
      size_t c = count[d][b];
      count[d][b] = pos;
      pos += c;
    }
    for (size_t i = 0; i < n; ++i) dst[count[d][(src[i].key >> (8 * d)) & 0xFF]++] = src[i];
    tg__sort_item *t = src;
    src = dst;
    dst = t;
  }
  if (src != a) memcpy(a, src, n * sizeof *a);
}

tg_status tg__order_by_size_desc(const tg__plan_input *in, size_t *order) {
  size_t n = in->count;
  tg__sort_item *items = tg__alloc_array(in->alloc, n ? 2 * n : 1, sizeof *items);
  if (items == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t r = 0; r < n; ++r) items[r] = (tg__sort_item){UINT64_MAX - in->volumes[r], r};
  tg__sort_items_stable(items, n, items + n);
  for (size_t i = 0; i < n; ++i) order[i] = items[i].idx;
  tg__free(in->alloc, items);
  return TG_OK;
}

/* ---- task points ---------------------------------------------------------------------- */

/* Points for the ranges [lo[r], hi[r]] (lo[r] <= hi[r]), or for the records' task intervals
 * when lo is NULL: the distinct starts, ascending; pf[r] the index of r's start, pl[r] the
 * last point <= its end. */
static tg_status points_init(const tg__plan_input *in, const uint64_t *lo, const uint64_t *hi,
                             tg__task_points *tp) {
  size_t n = in->count;
  tp->count = 0;
  tp->pf = tg__alloc_array(in->alloc, n ? n : 1, sizeof *tp->pf);
  tp->pl = tg__alloc_array(in->alloc, n ? n : 1, sizeof *tp->pl);
  tg__sort_item *items = tg__alloc_array(in->alloc, n ? 2 * n : 1, sizeof *items);
  uint64_t *values = tg__alloc_array(in->alloc, n ? n : 1, sizeof *values);
  if (tp->pf == NULL || tp->pl == NULL || items == NULL || values == NULL) {
    tg__free(in->alloc, items);
    tg__free(in->alloc, values);
    tg__task_points_free(in, tp);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  for (size_t r = 0; r < n; ++r) items[r] = (tg__sort_item){lo ? lo[r] : in->records[r].first_task, r};
  tg__sort_items_stable(items, n, items + n);
  size_t np = 0;
  for (size_t i = 0; i < n; ++i) {
    if (np == 0 || values[np - 1] != items[i].key) values[np++] = items[i].key;
    tp->pf[items[i].idx] = (uint32_t)(np - 1);
  }
  /* Last point <= the end, by a sweep over the ranges sorted by end (the range's own start
   * qualifies, so the point exists). */
  for (size_t r = 0; r < n; ++r) items[r] = (tg__sort_item){hi ? hi[r] : in->records[r].last_task, r};
  tg__sort_items_stable(items, n, items + n);
  for (size_t i = 0, p = 0; i < n; ++i) {
    while (p + 1 < np && values[p + 1] <= items[i].key) ++p;
    tp->pl[items[i].idx] = (uint32_t)p;
  }
  tp->count = np;
  tg__free(in->alloc, items);
  tg__free(in->alloc, values);
  return TG_OK;
}

tg_status tg__task_points_init(const tg__plan_input *in, tg__task_points *tp) {
  return points_init(in, NULL, NULL, tp);
}

/* Points over the relation's windows, each widened to contain its record's interval. Two
 * records whose point covers are disjoint have disjoint windows, so they may share. */
static tg_status window_points_init(const tg__plan_input *in, tg__task_points *tp) {
  size_t n = in->count;
  const tg_share_relation *rel = in->options->relation;
  uint64_t *lo = tg__alloc_array(in->alloc, n ? n : 1, sizeof *lo);
  uint64_t *hi = tg__alloc_array(in->alloc, n ? n : 1, sizeof *hi);
  tg_status st = TG_ERROR_OUT_OF_HOST_MEMORY;
  if (lo != NULL && hi != NULL) {
    for (size_t r = 0; r < n; ++r) {
      uint64_t l = 0, h = UINT64_MAX;
      rel->window(rel->user, r, &l, &h);
      if (l > in->records[r].first_task) l = in->records[r].first_task;
      if (h < in->records[r].last_task) h = in->records[r].last_task;
      lo[r] = l;
      hi[r] = h;
    }
    st = points_init(in, lo, hi, tp);
  }
  tg__free(in->alloc, lo);
  tg__free(in->alloc, hi);
  return st;
}

void tg__task_points_free(const tg__plan_input *in, tg__task_points *tp) {
  tg__free(in->alloc, tp->pf);
  tg__free(in->alloc, tp->pl);
  tp->pf = tp->pl = NULL;
  tp->count = 0;
}

/* ---- gap index ------------------------------------------------------------------------ */

/* A placed record as the index stores it: everything a search needs, contiguous, so that
 * scanning a block touches nothing else. Offsets and ends are in the index's unit (see
 * tg__gap_index.unit). A narrow index, whose offsets provably stay below 2^32 units, stores
 * them in 32 bits: 16 bytes an entry instead of 24, which the walks and inserts, bound by the
 * bytes they move, repay. */
typedef struct gap_entry_w {
  uint64_t off, end;
  uint64_t key; /* the point cover [pf, pl], as cover_key() packs it */
} gap_entry_w;
typedef struct gap_entry_n {
  uint32_t off, end;
  uint64_t key;
} gap_entry_n;

/* Point covers are below 2^31 (tg__gap_index_create checks), which lets one addition test
 * whether two covers meet. An entry's key holds 2^31 + pl in its high half and 2^31 - pf in
 * its low half; a query [qf, ql] is ql - qf * 2^32. In their sum the low half is
 * 2^31 + ql - pf and the high half 2^31 + pl - qf, each in [0, 2^32) (no carry or borrow
 * crosses the halves), and each has its top bit set exactly when it is at least 2^31: the
 * covers meet, pf <= ql and pl >= qf, exactly when both top bits are set. */
#define TG__HALF (UINT64_C(1) << 31)
#define TG__MEET ((UINT64_C(1) << 63) | TG__HALF)

static inline uint64_t cover_key(uint32_t pf, uint32_t pl) {
  return ((TG__HALF + pl) << 32) + (TG__HALF - pf);
}
static inline uint64_t cover_query(uint32_t pf, uint32_t pl) {
  return (uint64_t)pl - ((uint64_t)pf << 32);
}
/* 1 when the entry's cover meets the query's, else 0. */
static inline uint64_t meets(uint64_t key, uint64_t query) {
  return ((key + query) & TG__MEET) == TG__MEET;
}

/* An entry's address range, as a fast walk collects the conflicting ones. */
typedef struct gap_span_w {
  uint64_t off, end;
} gap_span_w;
typedef struct gap_span_n {
  uint32_t off, end;
} gap_span_n;

/* What a search needs about a record, in one place: placement order is unrelated to record
 * order, so on large inputs each separate per-record array read would be a cache miss. Size
 * and alignment are in the index's unit. */
typedef struct gap_record {
  uint64_t size, align;
  uint32_t pf, pl;
} gap_record;

struct tg__gap_index {
  const tg__plan_input *in;
  gap_record *rec;
  int relation;          /* 1: one list with every record, conflicts via tg__records_conflict */
  /* 1: a relation with windows. Points, blocks and lists are those of the serial index built
   * over the windows instead of the intervals (pf, pl are window points); a search visits the
   * entries whose windows meet the new record's and tests each with tg__records_conflict. */
  int windowed;
  unsigned shift;        /* block of point p = p >> shift */
  size_t nblocks;
  /* Per block b, in CSR storage: `all` holds the records whose cover meets the window of
   * blocks b and b+1, so a record at most a block long, starting in block b, finds every
   * record it meets there. A longer record also needs those born in blocks bf+2..bl: it takes
   * them from the windows bf+2, bf+4, ..., each contributing the records born in its own two
   * blocks (a few percent of searches; separate lists of the records born per block would
   * cost every insert one more list). */
  size_t *all_begin, *all_len;
  void *all;             /* gap_entry_n when narrow, else gap_entry_w */
  size_t *rel_idx;       /* relation mode: record index of all[i] */
  size_t *all_idx;       /* windowed: record index of all[i] */
  int small_arena;       /* every placement stays below 2^63 (see tg__gap_index_create) */
  /* Offsets are kept in units of `unit`: 1, or for an index created for one placement order
   * (whose inserts take offsets its searches returned) the greatest common divisor of the
   * sizes and the alignments above 1. Every offset a search returns and every end is then a
   * multiple of it - a record goes at 0, at an end, or at an aligned address -, and dividing
   * every length by one number changes no comparison. */
  uint64_t unit;
  int narrow;            /* serial, and offsets below 2^32 units: gap_entry_n */
  /* A - 1 when every record has the same power-of-two alignment A and the arena is small,
   * else 0. Entries then store their end aligned up to A, which changes no walk (aligning
   * the highest end equals taking the highest aligned end) and spares the fast walk its
   * aligning step. */
  uint64_t end_mask;
  int has_zero;          /* some record has size 0: ties at one offset need the end order */
  void *scratch[2];      /* searches spanning several blocks: merge buffers (entries) */
  void *hits;            /* serial fast walks: the conflicting entries of one list (spans) */
  size_t *runs;          /* run boundaries for those merges */
};

static uint64_t gcd_u64(uint64_t a, uint64_t b) {
  while (b != 0) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* The first window a record belongs to: the one starting at the block before its first. */
static inline size_t first_window(size_t bf) { return bf ? bf - 1 : 0; }

/* Blocks are sized from the records' point lengths: at least the mean, so most records are
 * answered by one window, and grown while the entries replicated over windows would exceed a
 * few per record, which bounds memory at O(n). */
static unsigned choose_shift(const tg__task_points *tp, size_t n) {
  if (n == 0) return 0;
  uint64_t sum = 0;
  for (size_t r = 0; r < n; ++r) sum += (uint64_t)(tp->pl[r] - tp->pf[r]) + 1;
  uint64_t mean = sum / n;
  unsigned shift = 0;
  while (shift < 31 && ((uint64_t)1 << shift) < mean) ++shift;
  for (; shift < 31; ++shift) {
    uint64_t total = 0;
    for (size_t r = 0; r < n; ++r)
      total += (uint64_t)((tp->pl[r] >> shift) - first_window(tp->pf[r] >> shift)) + 1;
    if (total <= 5 * (uint64_t)n + 1024) break;
  }
  return shift;
}

void tg__gap_index_destroy(tg__gap_index *ix) {
  if (ix == NULL) return;
  const tg_allocator *a = ix->in->alloc;
  tg__free(a, ix->all_begin);
  tg__free(a, ix->all_len);
  tg__free(a, ix->all);
  tg__free(a, ix->rel_idx);
  tg__free(a, ix->all_idx);
  tg__free(a, ix->rec);
  tg__free(a, ix->scratch[0]);
  tg__free(a, ix->scratch[1]);
  tg__free(a, ix->hits);
  tg__free(a, ix->runs);
  tg__free(a, ix);
}

tg_status tg__gap_index_create(const tg__plan_input *in, tg__gap_index **out) {
  return tg__gap_index_create_ordered(in, NULL, out);
}

tg_status tg__gap_index_create_ordered(const tg__plan_input *in, const size_t *order,
                                       tg__gap_index **out) {
  *out = NULL;
  if (order != NULL && in->options->relation != NULL) return TG_ERROR_INTERNAL;
  size_t n = in->count;
  if ((uint64_t)n >= TG__HALF) return TG_ERROR_UNSUPPORTED; /* covers must fit cover_key() */
  tg__gap_index *ix = tg__calloc(in->alloc, 1, sizeof *ix);
  if (ix == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  ix->in = in;
  const tg_share_relation *rel = in->options->relation;
  ix->windowed = rel != NULL && rel->window != NULL;
  ix->relation = rel != NULL && !ix->windowed;
  tg__task_points tp;
  tg_status st = ix->windowed ? window_points_init(in, &tp) : tg__task_points_init(in, &tp);
  if (st != TG_OK) {
    tg__free(in->alloc, ix);
    return st;
  }
  ix->rec = tg__alloc_array(in->alloc, n ? n : 1, sizeof *ix->rec);
  if (ix->rec == NULL) {
    tg__task_points_free(in, &tp);
    tg__free(in->alloc, ix);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  uint64_t unit = 0;
  if (order != NULL) /* placements only from searches: see tg__gap_index.unit */
    for (size_t x = 0; x < n; ++x) {
      uint64_t a = tg__record_alignment(in, x);
      unit = gcd_u64(gcd_u64(unit, in->volumes[x]), a > 1 ? a : 0);
    }
  ix->unit = unit ? unit : 1;
  /* Any walk places a record at most at the aligned end of those already placed, so no
   * offset or end can exceed the sum of (size + alignment - 1): when that is below 2^63, the
   * hot loop can skip its overflow checks (see fast_visit); below 2^32, an index for one
   * placement order is narrow. All in units. */
  uint64_t bound = 0;
  ix->small_arena = 1;
  for (size_t r = 0; r < n; ++r) {
    size_t x = order != NULL ? order[r] : r; /* slot r holds record x */
    uint64_t a = tg__record_alignment(in, x);
    ix->rec[r] = (gap_record){in->volumes[x] / ix->unit, a > 1 ? a / ix->unit : 1, tp.pf[x], tp.pl[x]};
    if (!tg__add_u64(bound, ix->rec[r].size, &bound) || !tg__add_u64(bound, ix->rec[r].align - 1, &bound) ||
        bound >= (UINT64_C(1) << 63))
      ix->small_arena = 0;
    if (in->volumes[x] == 0) ix->has_zero = 1;
  }
  ix->narrow = order != NULL && ix->small_arena && bound < (UINT64_C(1) << 32);
  const size_t entry_size = ix->narrow ? sizeof(gap_entry_n) : sizeof(gap_entry_w);
  uint64_t a0 = n > 0 ? ix->rec[0].align : 1;
  int uniform = ix->small_arena && (a0 & (a0 - 1)) == 0;
  for (size_t r = 1; r < n && uniform; ++r) uniform = ix->rec[r].align == a0;
  ix->end_mask = uniform ? a0 - 1 : 0;
  ix->shift = ix->relation ? 0 : choose_shift(&tp, n);
  size_t nb = ix->relation ? 1 : (n == 0) ? 0 : (((tp.count - 1) >> ix->shift) + 1);
  tg__task_points_free(in, &tp);
  ix->nblocks = nb;
  ix->all_begin = tg__calloc(in->alloc, nb + 1, sizeof *ix->all_begin);
  ix->all_len = tg__calloc(in->alloc, nb + 1, sizeof *ix->all_len);
  if (!ix->all_begin || !ix->all_len) goto oom;
  size_t scratch = 0; /* the most entries a search spanning several blocks can collect */
  if (ix->relation) {
    ix->all_begin[1] = n;
    ix->rel_idx = tg__alloc_array(in->alloc, n ? n : 1, sizeof *ix->rel_idx);
    if (ix->rel_idx == NULL) goto oom;
  } else {
    for (size_t r = 0; r < n; ++r) {
      size_t bf = ix->rec[r].pf >> ix->shift, bl = ix->rec[r].pl >> ix->shift;
      for (size_t b = first_window(bf); b <= bl; ++b) ix->all_begin[b + 1]++;
    }
    for (size_t b = 0; b < nb; ++b) ix->all_begin[b + 1] += ix->all_begin[b];
    /* A long record gathers from the later windows (and, windowed, from its first too). */
    for (size_t r = 0; r < n; ++r) {
      size_t bf = ix->rec[r].pf >> ix->shift, bl = ix->rec[r].pl >> ix->shift, span = 0;
      if (bl < bf + 2) continue;
      for (size_t b = bf + 2; b <= bl; b += 2) span += ix->all_begin[b + 1] - ix->all_begin[b];
      if (ix->windowed) span += ix->all_begin[bf + 1] - ix->all_begin[bf];
      if (span > scratch) scratch = span;
    }
  }
  ix->all = tg__alloc_array(in->alloc, n ? ix->all_begin[nb] : 1, entry_size);
  if (ix->all == NULL) goto oom;
  if (ix->windowed) {
    ix->all_idx = tg__alloc_array(in->alloc, n ? ix->all_begin[nb] : 1, sizeof *ix->all_idx);
    if (ix->all_idx == NULL) goto oom;
  }
  if (!ix->relation && !ix->windowed) {
    size_t longest = 1;
    for (size_t b = 0; b < nb; ++b)
      if (ix->all_begin[b + 1] - ix->all_begin[b] > longest) longest = ix->all_begin[b + 1] - ix->all_begin[b];
    ix->hits = tg__alloc_array(in->alloc, longest, ix->narrow ? sizeof(gap_span_n) : sizeof(gap_span_w));
    if (ix->hits == NULL) goto oom;
  }
  if (scratch > 0) {
    ix->scratch[0] = tg__alloc_array(in->alloc, scratch, entry_size);
    ix->scratch[1] = tg__alloc_array(in->alloc, scratch, entry_size);
    ix->runs = tg__alloc_array(in->alloc, nb + 2, sizeof *ix->runs);
    if (ix->scratch[0] == NULL || ix->scratch[1] == NULL || ix->runs == NULL) goto oom;
  }
  *out = ix;
  return TG_OK;
oom:
  tg__gap_index_destroy(ix);
  return TG_ERROR_OUT_OF_HOST_MEMORY;
}

/* The state of one gap search (see tg__gap_index_find). For best fit, best_len starts at
 * UINT64_MAX and a candidate must be strictly shorter, as in TFLite. */
typedef struct gap_search {
  uint64_t size, align, mask;
  uint64_t prev;      /* highest end among the conflicting records visited so far */
  uint64_t best_off, best_len;
  uint32_t pf, pl;    /* the new record's point cover */
  uint64_t query;     /* the same, as cover_query() packs it */
  tg_fit fit;
  int found, done;
  int exact_ties;     /* order equal offsets by end (only zero-size entries make it matter) */
} gap_search;

/* One step of the walk for any fit and alignment, on a conflicting entry. */
static void gap_visit(gap_search *g, uint64_t off, uint64_t end) {
  if (off >= g->prev) {
    uint64_t start;
    if (tg__align_up(g->prev, g->align, &start) && off >= start) {
      uint64_t len = off - start;
      if (len >= g->size) {
        switch (g->fit) {
          case TG_FIT_FIRST:
            g->best_off = start;
            g->found = g->done = 1;
            break;
          case TG_FIT_WORST:
            if (!g->found || len > g->best_len) {
              g->best_off = start;
              g->best_len = len;
              g->found = 1;
            }
            break;
          default:
            if (len < g->best_len) {
              g->best_off = start;
              g->best_len = len;
              g->found = 1;
            }
            break;
        }
      }
    }
  }
  if (end > g->prev) g->prev = end;
}

/* The hot case - best fit with a power-of-two alignment and a small arena, which is what
 * greedy-by-size and greedy-by-breadth run on real inputs - takes its steps through this
 * accumulator, kept in locals by the walks below, with no data-dependent branches: whether an
 * entry conflicts is close to a coin flip, which a branch would keep mispredicting. `hit` is 1
 * for a conflicting entry, else 0 (the entry then changes nothing).
 *
 * With every offset and end below 2^63, aligning prev cannot overflow, and best_len can start
 * at 2^63 instead of UINT64_MAX (no gap is that long): then a gap [start, off) is a candidate
 * exactly when size <= off - start < best_len, which one unsigned comparison decides - when
 * off < start the difference wraps to at least 2^63 and fails it. */
#define TG__NO_GAP (UINT64_C(1) << 63)

typedef struct fast_acc {
  uint64_t prev;
  uint64_t slack; /* best_len - size: the loop-carried comparison then needs no subtraction */
  uint64_t best_off;
} fast_acc;

static inline fast_acc fast_begin(const gap_search *g) {
  return (fast_acc){g->prev, g->best_len - g->size, g->best_off};
}

static inline void fast_end(gap_search *g, const fast_acc *s) {
  g->prev = s->prev;
  g->best_len = s->slack + g->size;
  g->best_off = s->best_off;
}

static inline void fast_visit(fast_acc *s, uint64_t mask, uint64_t size, uint64_t off,
                              uint64_t end, uint64_t hit) {
  uint64_t prev = s->prev;
  uint64_t start = (prev + mask) & ~mask;
  uint64_t over = off - start - size;
  uint64_t take = hit & (over < s->slack);
  s->slack = take ? over : s->slack;
  s->best_off = take ? start : s->best_off;
  uint64_t reach = end & (0 - hit);
  s->prev = reach > prev ? reach : prev;
}

#define GW(name) name##_w
#define GW_ENTRY gap_entry_w
#define GW_SPAN gap_span_w
#include "planner/strategies/gap_lists.inc"

#define GW(name) name##_n
#define GW_ENTRY gap_entry_n
#define GW_SPAN gap_span_n
#define GW_NARROW 1
#include "planner/strategies/gap_lists.inc"

/* The windowed search for record r: the entries whose window meets r's are found as the
 * serial walk finds the entries whose interval meets r's; each is then tested exactly. A
 * window reaching past the window of its first block gathers the conflicting entries of that
 * list and of the records born up to its last block (as walk_blocks), and merges them. */
static void walk_windowed(tg__gap_index *ix, gap_search *g, size_t r) {
  const tg__plan_input *in = ix->in;
  const uint64_t query = g->query;
  size_t bf = g->pf >> ix->shift, bl = g->pl >> ix->shift;
  const gap_entry_w *all = ix->all; /* windowed indexes are wide */
  const gap_entry_w *a = all + ix->all_begin[bf];
  const size_t *ai = ix->all_idx + ix->all_begin[bf];
  size_t len = ix->all_len[bf];
  if (bl <= bf + 1) {
    for (size_t i = 0; i < len && !g->done; ++i)
      if (meets(a[i].key, query) && tg__records_conflict(in, ai[i], r))
        gap_visit(g, a[i].off, a[i].end);
    return;
  }
  gap_entry_w *s = ix->scratch[0];
  size_t k = 0, nruns = 0;
  for (size_t i = 0; i < len; ++i)
    if (meets(a[i].key, query) && tg__records_conflict(in, ai[i], r)) s[k++] = a[i];
  if (k != 0) ix->runs[nruns++] = 0;
  for (size_t b = bf + 2; b <= bl; b += 2) { /* as walk_blocks */
    size_t before = k;
    const gap_entry_w *e = all + ix->all_begin[b];
    const size_t *ei = ix->all_idx + ix->all_begin[b];
    for (size_t i = 0; i < ix->all_len[b]; ++i) {
      uint32_t pf = entry_pf_w(&e[i]);
      if ((pf >> ix->shift) - b <= 1 && meets(e[i].key, query) && tg__records_conflict(in, ei[i], r))
        s[k++] = e[i];
    }
    if (k != before) ix->runs[nruns++] = before;
  }
  ix->runs[nruns] = k;
  const gap_entry_w *m = merge_runs_w(ix, nruns);
  for (size_t i = 0; i < k && !g->done; ++i) gap_visit(g, m[i].off, m[i].end);
}

tg_status tg__gap_index_find(tg__gap_index *ix, size_t r, tg_fit fit, uint64_t *offset) {
  const tg__plan_input *in = ix->in;
  const gap_record *rec = &ix->rec[r];
  gap_search g;
  g.size = rec->size;
  g.align = rec->align;
  g.mask = g.align - 1;
  g.prev = 0;
  g.best_off = 0;
  g.best_len = UINT64_MAX;
  g.pf = rec->pf;
  g.pl = rec->pl;
  g.query = cover_query(rec->pf, rec->pl);
  g.fit = fit;
  g.found = g.done = 0;
  g.exact_ties = ix->has_zero;
  int fast = fit == TG_FIT_BEST && (g.align & g.mask) == 0 && ix->small_arena;
  if (fast) g.best_len = TG__NO_GAP;
  if (ix->relation) {
    fast = 0;
    const gap_entry_w *all = ix->all;
    for (size_t i = 0; i < ix->all_len[0] && !g.done; ++i)
      if (tg__records_conflict(in, ix->rel_idx[i], r)) gap_visit(&g, all[i].off, all[i].end);
  } else if (ix->windowed) {
    fast = 0;
    walk_windowed(ix, &g, r);
  } else {
    /* 2: ends are stored aligned, no aligning in the walk. */
    int kind = !fast ? 0 : ix->end_mask == g.mask ? 2 : 1;
    if (ix->narrow)
      walk_kind_n(ix, &g, kind);
    else
      walk_kind_w(ix, &g, kind);
  }
  if (fast) g.found = g.best_len != TG__NO_GAP;
  uint64_t at = g.best_off;
  if (!g.found && !tg__align_up(g.prev, g.align, &at)) return TG_ERROR_OVERFLOW;
  return tg__mul_u64(at, ix->unit, offset) ? TG_OK : TG_ERROR_OVERFLOW;
}

/* Insert r at position pos of the index array base[0..len). */
static void idx_insert(size_t *base, size_t len, size_t pos, size_t r) {
  memmove(base + pos + 1, base + pos, (len - pos) * sizeof *base);
  base[pos] = r;
}

/* Slot r placed at `offset` (bytes), as the index stores it: in units, its end aligned when
 * end_mask says so (a narrow index takes the same values in 32 bits). */
static gap_entry_w entry_of(const tg__gap_index *ix, size_t r, uint64_t offset) {
  const gap_record *rec = &ix->rec[r];
  offset /= ix->unit; /* a multiple of it: see tg__gap_index_create_ordered */
  return (gap_entry_w){offset, (offset + rec->size + ix->end_mask) & ~ix->end_mask,
                       cover_key(rec->pf, rec->pl)};
}

static gap_entry_n narrow_entry(const gap_entry_w *e) {
  return (gap_entry_n){(uint32_t)e->off, (uint32_t)e->end, e->key};
}

void tg__gap_index_insert(tg__gap_index *ix, size_t r, uint64_t offset) {
  const gap_record *rec = &ix->rec[r];
  gap_entry_w e = entry_of(ix, r, offset), *all = ix->all;
  size_t bf = rec->pf >> ix->shift, bl = rec->pl >> ix->shift;
  if (ix->narrow) {
    gap_entry_n n = narrow_entry(&e);
    serial_insert_n(ix, bf, bl, &n);
    return;
  }
  if (ix->relation) {
    size_t len = ix->all_len[0];
    size_t pos = list_insert_w(all, &ix->all_len[0], &e);
    idx_insert(ix->rel_idx, len, pos, r);
  } else if (ix->windowed) {
    for (size_t b = first_window(bf); b <= bl; ++b) {
      size_t len = ix->all_len[b];
      size_t pos = list_insert_w(all + ix->all_begin[b], &ix->all_len[b], &e);
      idx_insert(ix->all_idx + ix->all_begin[b], len, pos, r);
    }
  } else {
    serial_insert_w(ix, bf, bl, &e);
  }
}

/* Relation lists: the entry of record r leaves the list (entries `all`, record of each in
 * `idx`, `*len` of them). */
static void list_remove_rec(gap_entry_w *all, size_t *idx, size_t *len, size_t r) {
  for (size_t i = 0; i < *len; ++i) {
    if (idx[i] != r) continue;
    memmove(all + i, all + i + 1, (*len - i - 1) * sizeof *all);
    memmove(idx + i, idx + i + 1, (*len - i - 1) * sizeof *idx);
    --*len;
    return;
  }
}

void tg__gap_index_remove(tg__gap_index *ix, size_t r, uint64_t offset) {
  const gap_record *rec = &ix->rec[r];
  if (ix->relation) {
    list_remove_rec(ix->all, ix->rel_idx, &ix->all_len[0], r);
    return;
  }
  if (ix->windowed) {
    size_t bf = rec->pf >> ix->shift, bl = rec->pl >> ix->shift;
    for (size_t b = first_window(bf); b <= bl; ++b)
      list_remove_rec((gap_entry_w *)ix->all + ix->all_begin[b], ix->all_idx + ix->all_begin[b],
                      &ix->all_len[b], r);
    return;
  }
  gap_entry_w e = entry_of(ix, r, offset);
  size_t bf = rec->pf >> ix->shift, bl = rec->pl >> ix->shift;
  if (ix->narrow) {
    gap_entry_n n = narrow_entry(&e);
    serial_remove_n(ix, bf, bl, &n);
  } else {
    serial_remove_w(ix, bf, bl, &e);
  }
}

/* (Here rather than with the bounds: greedy-by-breadth orders its tasks by it.) */
tg_status tg__live_at_points(const tg__plan_input *in, const tg__task_points *tp,
                             uint64_t *live) {
  size_t np = tp->count;
  uint64_t *sub = tg__calloc(in->alloc, np ? np : 1, sizeof *sub);
  if (sub == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  tg_status st = TG_OK;
  memset(live, 0, np * sizeof *live);
  for (size_t r = 0; r < in->count; ++r)
    if (!tg__add_u64(live[tp->pf[r]], in->volumes[r], &live[tp->pf[r]]) ||
        !tg__add_u64(sub[tp->pl[r]], in->volumes[r], &sub[tp->pl[r]])) {
      st = TG_ERROR_OVERFLOW;
      goto done;
    }
  /* live[p] holds what starts at p: add the running sum, less what ended at p - 1. */
  uint64_t cur = 0;
  for (size_t p = 0; p < np; ++p) {
    if (p > 0) cur -= sub[p - 1];
    if (!tg__add_u64(cur, live[p], &cur)) {
      st = TG_ERROR_OVERFLOW;
      goto done;
    }
    live[p] = cur;
  }
done:
  tg__free(in->alloc, sub);
  return st;
}
