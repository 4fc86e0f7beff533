/* Serial offsets inputs: blocks of records that are born and die together, planned as one.
 *
 * Two rules merge records into blocks, and blocks into larger ones, until neither applies:
 *   stack: records with the same task interval, placed one above the other, make a block of
 *          that interval whose size is the sum of theirs;
 *   chain: a block (or record) whose last task is c - 1 and one whose first task is c with the
 *          same size make one block over both intervals: the later takes the earlier's place.
 * A chain merges two stacks, each of all or (for at most TG__REDUCE_SUBSET_MAX members) some of
 * the records sharing an interval, whenever their sizes are equal; a stack of records all
 * spanning the whole input's time range is merged without a partner. A second candidate goes
 * on from the first's blocks, stacking every group when no chain is left, until neither rule
 * merges anything; it is skipped when stacking would leave more blocks than half the records
 * (a candidate with more is not planned). Every block covers, at every task, exactly the
 * volume of its records, so the reduced input has the same peak-live
 * bound and any plan of it unfolds into a plan of the records with the same total (blocks at
 * their offsets, stacked records above one another, chained ones at the block's offset).
 * Merging loses no memory but can lose freedom: records stacked or chained here may need other
 * neighbours in every optimal plan. So the reduced input's plan is one more candidate, kept
 * only when smaller than the incumbent.
 *
 * In-place chains of equal tensors and groups of equal lifetimes are the everyday case; inputs
 * cut from a full rectangle (docs/bench.md, perfect packing) are the extreme one: each cut
 * made one of the two patterns, and undoing the cuts leaves a few records for the search where
 * thousands were. Coincidences (two cuts at the same task) merge records that should not be,
 * which is why the merged plan is only a candidate. */
#include <string.h>

#include "planner/strategies/objects_common.h" /* tg__arena */
#include "planner/search/search.h"

enum { NODE_LEAF, NODE_STACK, NODE_CHAIN };

#define NO_NODE ((size_t)-1)

typedef struct rnode {
  uint64_t size;
  uint32_t first, last;
  int kind;
  size_t child, next; /* first child, next sibling (NO_NODE: none) */
} rnode;

/* Records (or blocks) with one task interval, in one pass. */
typedef struct group {
  uint32_t first, last;
  uint64_t sum;       /* UINT64_MAX: does not fit, never merged */
  size_t beg, end;    /* members: items[beg..end).idx */
  int taken;          /* merged as a whole */
} group;

typedef struct reducer {
  const tg__plan_input *in;
  uint64_t align;     /* every block's alignment: the largest record's */
  rnode *nodes;
  size_t count;       /* nodes in use; leaves are 0..in->count) */
  size_t *alive, alive_count;
  size_t *next_alive, next_count;   /* the next pass's list, filled during a pass */
  unsigned char *gone; /* per node: merged into a block */
  tg__sort_item *items, *tmp;
  group *groups;
  tg__sort_item *by_end, *by_start; /* key = boundary task, idx = group; sorted by (task, sum) */
  tg__sort_item *sums[2];           /* subset sums of two groups (key = sum, idx = mask) */
  size_t *scratch;                  /* a block's members */
  size_t *excluded, excluded_count; /* records that take no part */
  uint32_t span_first, span_last;   /* the input's time range */
  size_t stacked;                   /* the latest pass's intervals less its merges: about the
                                       blocks left if every group were stacked */
  void *mem;                        /* the block all arrays above are carved from */
} reducer;

/* Lays the working arrays out in one block (tg__arena: a measuring pass with base NULL, then
 * the carving one). */
static void reducer_layout(tg__arena *ar, reducer *rd, size_t n) {
  size_t cap = 2 * n; /* each merge adds at most as many blocks as it removes */
  size_t subsets = (size_t)1 << TG__REDUCE_SUBSET_MAX;
  rd->nodes = tg__arena_take(ar, cap, sizeof *rd->nodes);
  rd->gone = tg__arena_take(ar, cap, 1);
  rd->alive = tg__arena_take(ar, n, sizeof *rd->alive);
  rd->next_alive = tg__arena_take(ar, n, sizeof *rd->next_alive);
  rd->items = tg__arena_take(ar, n, sizeof *rd->items);
  rd->tmp = tg__arena_take(ar, n > subsets ? n : subsets, sizeof *rd->tmp);
  rd->groups = tg__arena_take(ar, n, sizeof *rd->groups);
  rd->by_end = tg__arena_take(ar, n, sizeof *rd->by_end);
  rd->by_start = tg__arena_take(ar, n, sizeof *rd->by_start);
  rd->sums[0] = tg__arena_take(ar, subsets, sizeof *rd->sums[0]);
  rd->sums[1] = tg__arena_take(ar, subsets, sizeof *rd->sums[1]);
  rd->scratch = tg__arena_take(ar, n, sizeof *rd->scratch);
  rd->excluded = tg__arena_take(ar, n, sizeof *rd->excluded);
}

static void reducer_free(reducer *rd) { tg__free(rd->in->alloc, rd->mem); }

/* Every record's alignment divides `align` and records whose volume is a positive multiple of
 * it take part; the others stay as they are. */
static tg_status reducer_init(reducer *rd, const tg__plan_input *in) {
  memset(rd, 0, sizeof *rd);
  rd->in = in;
  size_t n = in->count;
  if (n > SIZE_MAX / 2) return TG_ERROR_OUT_OF_HOST_MEMORY;
  tg__arena ar = {NULL, 0, 0};
  reducer_layout(&ar, rd, n);
  if (ar.overflow) return TG_ERROR_OUT_OF_HOST_MEMORY;
  if ((rd->mem = tg__malloc(in->alloc, ar.off)) == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  ar = (tg__arena){rd->mem, 0, 0};
  reducer_layout(&ar, rd, n);
  uint64_t align = 1;
  for (size_t r = 0; r < n; ++r) {
    uint64_t ar_r = tg__record_alignment(in, r);
    if (ar_r > align) align = ar_r;
  }
  rd->align = align;
  memset(rd->gone, 0, 2 * n);
  rd->span_first = UINT32_MAX;
  for (size_t r = 0; r < n; ++r) {
    const tg_usage_record *rec = &in->records[r];
    rd->nodes[r] = (rnode){in->volumes[r], rec->first_task, rec->last_task, NODE_LEAF, NO_NODE,
                           NO_NODE};
    if (rec->first_task < rd->span_first) rd->span_first = rec->first_task;
    if (rec->last_task > rd->span_last) rd->span_last = rec->last_task;
    if (in->volumes[r] > 0 && in->volumes[r] % align == 0 &&
        align % tg__record_alignment(in, r) == 0)
      rd->alive[rd->alive_count++] = r;
    else
      rd->excluded[rd->excluded_count++] = r;
  }
  rd->count = n;
  return TG_OK;
}

/* A new block of `kind` over the given nodes (linked as its children, in order). */
static size_t new_block(reducer *rd, int kind, const size_t *members, size_t m, uint32_t first,
                        uint32_t last, uint64_t size) {
  size_t id = rd->count++;
  rd->nodes[id] = (rnode){size, first, last, kind, members[0], NO_NODE};
  for (size_t i = 0; i < m; ++i) {
    rd->nodes[members[i]].next = i + 1 < m ? members[i + 1] : NO_NODE;
    rd->gone[members[i]] = 1;
  }
  return id;
}

/* The stack of group g's members selected by `mask` (bit i: the i-th member not yet gone), or
 * all of them (mask = ~0); a single member is returned as itself. */
static size_t stack_of(reducer *rd, const group *g, uint64_t mask, uint64_t sum) {
  size_t *tmp = rd->scratch;
  size_t m = 0, bit = 0;
  for (size_t i = g->beg; i < g->end; ++i) {
    size_t node = rd->items[i].idx;
    if (rd->gone[node]) continue;
    if (mask & ((uint64_t)1 << (bit < 63 ? bit : 63))) tmp[m++] = node;
    ++bit;
  }
  if (m == 1) return tmp[0];
  return new_block(rd, NODE_STACK, tmp, m, g->first, g->last, sum);
}

static void chain(reducer *rd, const group *e, uint64_t emask, const group *s, uint64_t smask,
                  uint64_t sum) {
  size_t pair[2];
  pair[0] = stack_of(rd, e, emask, sum);
  pair[1] = stack_of(rd, s, smask, sum);
  size_t id = new_block(rd, NODE_CHAIN, pair, 2, e->first, s->last, sum);
  rd->next_alive[rd->next_count++] = id;
}

/* Group g's live members' subset sums: out[0..(1 << k) - 1) (key = sum, idx = mask), sorted;
 * 0 when it has none or more than TG__REDUCE_SUBSET_MAX. */
static size_t subset_sums(reducer *rd, const group *g, tg__sort_item *out) {
  uint64_t vol[TG__REDUCE_SUBSET_MAX];
  size_t k = 0;
  for (size_t i = g->beg; i < g->end; ++i) {
    size_t node = rd->items[i].idx;
    if (rd->gone[node]) continue;
    if (k == TG__REDUCE_SUBSET_MAX) return 0;
    vol[k++] = rd->nodes[node].size;
  }
  if (k == 0) return 0;
  size_t count = ((size_t)1 << k) - 1;
  for (size_t mask = 1; mask <= count; ++mask) {
    /* the sum without the lowest set bit was computed before: g->sum fits, so these do */
    size_t low = mask & (~mask + 1), rest = mask ^ low, bit = 0;
    while (((size_t)1 << bit) != low) ++bit;
    out[mask - 1] = (tg__sort_item){(rest ? out[rest - 1].key : 0) + vol[bit], mask};
  }
  tg__sort_items_stable(out, count, rd->tmp);
  return count;
}

/* Subset chains between groups e (ending at c - 1) and s (starting at c): while some of e's
 * live members and some of s's have equal sums, the smallest such sum is chained. */
static size_t subset_chains(reducer *rd, group *e, group *s) {
  size_t merges = 0;
  for (;;) {
    size_t ne = subset_sums(rd, e, rd->sums[0]);
    size_t ns = ne ? subset_sums(rd, s, rd->sums[1]) : 0;
    size_t i = 0, j = 0;
    while (i < ne && j < ns && rd->sums[0][i].key != rd->sums[1][j].key) {
      if (rd->sums[0][i].key < rd->sums[1][j].key) ++i;
      else ++j;
    }
    if (i == ne || j == ns) return merges;
    chain(rd, e, rd->sums[0][i].idx, s, rd->sums[1][j].idx, rd->sums[0][i].key);
    ++merges;
  }
}

/* One pass of both rules over the live blocks; returns the merges made. */
static size_t reduce_pass(reducer *rd, int stack_all) {
  size_t m = rd->alive_count;
  for (size_t i = 0; i < m; ++i) {
    const rnode *nd = &rd->nodes[rd->alive[i]];
    rd->items[i] = (tg__sort_item){((uint64_t)nd->first << 32) | nd->last, rd->alive[i]};
  }
  tg__sort_items_stable(rd->items, m, rd->tmp);
  size_t ng = 0;
  for (size_t i = 0; i < m;) {
    size_t j = i;
    uint64_t sum = 0;
    for (; j < m && rd->items[j].key == rd->items[i].key; ++j)
      if (sum != UINT64_MAX && !tg__add_u64(sum, rd->nodes[rd->items[j].idx].size, &sum))
        sum = UINT64_MAX;
    const rnode *nd = &rd->nodes[rd->items[i].idx];
    rd->groups[ng++] = (group){nd->first, nd->last, sum, i, j, 0};
    i = j;
  }
  /* Groups by (boundary, sum): sorted by sum (once for both), then stably by the boundary. */
  for (size_t g = 0; g < ng; ++g) rd->by_end[g] = (tg__sort_item){rd->groups[g].sum, g};
  tg__sort_items_stable(rd->by_end, ng, rd->tmp);
  memcpy(rd->by_start, rd->by_end, ng * sizeof *rd->by_start);
  for (size_t g = 0; g < ng; ++g) {
    rd->by_end[g].key = (uint64_t)rd->groups[rd->by_end[g].idx].last + 1;
    rd->by_start[g].key = rd->groups[rd->by_start[g].idx].first;
  }
  tg__sort_items_stable(rd->by_end, ng, rd->tmp);
  tg__sort_items_stable(rd->by_start, ng, rd->tmp);
  rd->next_count = 0;
  size_t merges = 0;
  /* Whole groups with equal sums across a boundary. */
  for (size_t i = 0, j = 0; i < ng && j < ng;) {
    group *e = &rd->groups[rd->by_end[i].idx], *s = &rd->groups[rd->by_start[j].idx];
    uint64_t c = rd->by_end[i].key, cs = rd->by_start[j].key;
    if (c < cs || (c == cs && e->sum < s->sum) || e->taken || e->sum == UINT64_MAX) {
      ++i;
      continue;
    }
    if (c > cs || e->sum > s->sum || s->taken) {
      ++j;
      continue;
    }
    chain(rd, e, ~(uint64_t)0, s, ~(uint64_t)0, e->sum);
    e->taken = s->taken = 1;
    ++merges;
    ++i;
    ++j;
  }
  /* Subsets of the groups left at each boundary (a few pairs per boundary at most). */
  for (size_t i = 0, j = 0; i < ng && j < ng;) {
    uint64_t c = rd->by_end[i].key, cs = rd->by_start[j].key;
    if (c != cs) {
      if (c < cs) ++i;
      else ++j;
      continue;
    }
    size_t ie = i, js = j;
    while (ie < ng && rd->by_end[ie].key == c) ++ie;
    while (js < ng && rd->by_start[js].key == c) ++js;
    if ((ie - i) * (js - j) <= TG__REDUCE_PAIRS_MAX) {
      for (size_t a = i; a < ie; ++a) {
        group *e = &rd->groups[rd->by_end[a].idx];
        if (e->taken || e->sum == UINT64_MAX) continue;
        for (size_t b = j; b < js; ++b) {
          group *s = &rd->groups[rd->by_start[b].idx];
          if (!s->taken && s->sum != UINT64_MAX) merges += subset_chains(rd, e, s);
        }
      }
    }
    i = ie;
    j = js;
  }
  /* Stacks spanning the whole time range; then whatever was not merged. */
  for (size_t g = 0; g < ng; ++g) {
    group *gr = &rd->groups[g];
    if (gr->taken) continue;
    size_t live = 0;
    for (size_t k = gr->beg; k < gr->end; ++k) live += !rd->gone[rd->items[k].idx];
    if (live >= 2 && gr->sum != UINT64_MAX &&
        (stack_all || (gr->first == rd->span_first && gr->last == rd->span_last))) {
      uint64_t sum = 0;
      for (size_t k = gr->beg; k < gr->end; ++k)
        if (!rd->gone[rd->items[k].idx]) sum += rd->nodes[rd->items[k].idx].size;
      rd->next_alive[rd->next_count++] = stack_of(rd, gr, ~(uint64_t)0, sum);
      ++merges;
      continue;
    }
    for (size_t k = gr->beg; k < gr->end; ++k)
      if (!rd->gone[rd->items[k].idx]) rd->next_alive[rd->next_count++] = rd->items[k].idx;
  }
  rd->stacked = merges < ng ? ng - merges : 0;
  size_t *t = rd->alive;
  rd->alive = rd->next_alive;
  rd->next_alive = t;
  rd->alive_count = rd->next_count;
  return merges;
}

/* Offsets of every record from the blocks' offsets (node_off[alive[i]] set). */
static void unfold(const reducer *rd, uint64_t *node_off, uint64_t *offset_of) {
  for (size_t id = rd->count; id-- > rd->in->count;) {
    const rnode *nd = &rd->nodes[id];
    uint64_t off = node_off[id];
    for (size_t c = nd->child; c != NO_NODE; c = rd->nodes[c].next) {
      node_off[c] = off;
      if (nd->kind == NODE_STACK) off += rd->nodes[c].size;
    }
  }
  memcpy(offset_of, node_off, rd->in->count * sizeof *offset_of);
}

/* Plans the live blocks and the records left out of the merging (`best` within `b`, not
 * exact) and keeps the unfolded plan when it is smaller than `*best`. */
static tg_status try_blocks(const reducer *rd, tg__budget *b, tg__plan_records_fn plan_fn,
                            tg_plan **best) {
  const tg__plan_input *in = rd->in;
  const tg_allocator *a = in->alloc;
  size_t m = rd->alive_count + rd->excluded_count;
  tg_usage_record *recs = tg__alloc_array(a, m, sizeof *recs);
  uint64_t *node_off = tg__alloc_array(a, rd->count, sizeof *node_off);
  tg_plan *plan = NULL, *cand = NULL;
  tg_status st = TG_ERROR_OUT_OF_HOST_MEMORY;
  if (recs == NULL || node_off == NULL) goto done;
  for (size_t i = 0; i < m; ++i) {
    size_t id = i < rd->alive_count ? rd->alive[i] : rd->excluded[i - rd->alive_count];
    if (id < in->count) {
      recs[i] = in->records[id];
      continue;
    }
    const rnode *nd = &rd->nodes[id];
    memset(&recs[i], 0, sizeof recs[i]);
    recs[i].size = (tg_extent){nd->size, 1, 1};
    recs[i].first_task = nd->first;
    recs[i].last_task = nd->last;
    recs[i].alignment = rd->align;
  }
  tg_plan_options opt = *in->options;
  opt.strategy = TG_STRATEGY_BEST;
  opt.exact = 0;
  opt.exact_stats = NULL;
  if ((st = plan_fn(recs, m, &opt, b, a, &plan)) != TG_OK) goto done;
  for (size_t i = 0; i < m; ++i)
    node_off[i < rd->alive_count ? rd->alive[i] : rd->excluded[i - rd->alive_count]] =
        plan->offset_of[i];
  if ((st = tg_plan_create(TG_MODE_OFFSETS, 1, in->count, 0, a, &cand)) != TG_OK) goto done;
  unfold(rd, node_off, cand->offset_of);
  if ((st = tg__plan_finish_offsets(in, cand)) != TG_OK) goto done;
  cand->strategy = TG_STRATEGY_BEST;
  tg__keep_smaller(best, cand);
  cand = NULL;
done:
  tg_plan_destroy(cand);
  tg_plan_destroy(plan);
  tg__free(a, node_off);
  tg__free(a, recs);
  return st;
}

/* Passes until one merges nothing, or (the rules alone) until the blocks are still more than
 * `target` and a pass merged less than an eighth of the excess: the blocks would not reach it.
 * With `stack_when_stuck` (called after a pass that merged nothing), passes that stack every
 * group alternate with passes of the rules alone, until a stacking pass merges nothing too.
 * Stops at the deadline of `b`. */
static void reduce_all(reducer *rd, const tg__budget *b, int stack_when_stuck, size_t target) {
  int stuck = stack_when_stuck;
  for (int pass = 0; pass < TG__REDUCE_MAX_PASSES; ++pass) {
    if (tg__budget_expired(b)) return;
    size_t merges = reduce_pass(rd, stuck);
    if (merges == 0 && (stuck || !stack_when_stuck)) return;
    if (!stack_when_stuck && rd->alive_count > target && merges < (rd->alive_count - target) / 8)
      return;
    stuck = merges == 0;
  }
}

tg_status tg__search_reduced(const tg__plan_input *in, uint64_t bound, tg__budget *b,
                             tg__plan_records_fn plan, tg_plan **best, int *reduced) {
  *reduced = 0;
  const tg_plan_options *o = in->options;
  if (o->mode != TG_MODE_OFFSETS || o->relation != NULL || in->dims != 1 || in->count < 2)
    return TG_OK;
  /* Under a deadline: only with time for the merging passes (about 0.2 us per record each)
   * and some planning. */
  uint64_t now = tg__now_us(), deadline = tg__budget_deadline(b);
  if (now >= deadline || deadline - now < 1000 * (1 + (uint64_t)in->count / 2500)) return TG_OK;
  reducer rd;
  tg_status st = reducer_init(&rd, in);
  if (st != TG_OK) return st;
  /* Two candidates: the merges that pair equal sums only, then (if that is not at the bound)
   * with groups that find no partner stacked anyway. Each is planned only when it at least
   * halves the records (the blocks' long intervals make greedy passes slower per record): the
   * first with half of what `b` has left, the second with what is left then. */
  size_t last = rd.alive_count, target = in->count / 2;
  target = target > rd.excluded_count ? target - rd.excluded_count : 0;
  for (int stage = 0; stage < 2 && st == TG_OK && (*best)->total > bound; ++stage) {
    /* Stacking leaves one block per task interval (rd.stacked estimates them). When that is
     * above the target, the chains that stalled in the first candidate would have to make up
     * the rest: its passes are skipped (chains, wide DAGs, transformer blocks: one to three
     * passes that reached no plan). */
    if (stage == 1 && rd.stacked > target) break;
    reduce_all(&rd, b, stage, target);
    if (rd.alive_count == last) break; /* nothing to pair: nothing to stack either */
    last = rd.alive_count;
    if (rd.alive_count > target) continue;
    /* Planning the blocks runs greedy strategies on them, which nothing interrupts: not when
     * the work or the time is spent. */
    if (tg__budget_done(b)) break;
    *reduced = 1;
    tg__budget part = stage == 0 ? tg__budget_share(b, 1, 2) : tg__budget_share(b, 1, 1);
    st = try_blocks(&rd, &part, plan, best);
    tg__budget_charge(b, &part);
  }
  reducer_free(&rd);
  return st;
}
