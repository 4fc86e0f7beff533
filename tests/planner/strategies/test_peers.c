/* The peers' planners: beam (seed 000), allocation-tree (PyTorch inductor), greedy-coloring
 * (Mini-Infer), greedy-by-conflicts and hill-climb (TVM USMP).
 *
 * - Hand-worked plans on seed 000's six tensors (its CSV: the article's plan peaks at 7 units
 *   of 102400 bytes) and seed 004's four tensors (100/150/50/100 MiB, peak live 250 MiB; its
 *   exact-size pool needs 300 MiB). Every offset and object below is worked out in the
 *   comments, step by step, from the peer's rules as docs/strategies.md states them.
 * - Literal reference implementations of beam (full copies of every state), allocation-tree
 *   (PyTorch's recursive classes, sizes recomputed from the leaves), greedy-coloring (an
 *   interference matrix) and greedy-by-conflicts (TVM's conflict lists and offset walk), written
 *   for clarity, not speed: the library's plans must be identical on random record sets.
 * - hill-climb: never above the USMP greedy-by-size plan it starts from (reference below),
 *   below it on some sets, at the bound where that one is; a relation honoured by every peer.
 *
 * Seed 002's picture of two plans (same buffers, the right one smaller) has no numbers to
 * derive; the allocation-tree cases below show the tree's own rule instead (a record meeting
 * two children in time goes on top). */
#include "support/tg_test.h"

#include <stdlib.h>
#include <string.h>

#define REC(size, first, last) {{(size), 1, 1}, (first), (last), 0}
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static tg_plan *plan_with(const tg_usage_record *r, size_t n, uint32_t dims, tg_mode mode,
                          tg_strategy s, uint32_t width, uint64_t alignment,
                          const tg_share_relation *rel) {
  tg_plan_options o = {
      .mode = mode, .strategy = s, .beam_width = width, .alignment = alignment, .relation = rel
  };
  tg_plan *p = NULL;
  tg_status st = tg_plan_compute(r, n, dims, &o, NULL, &p);
  if (st != TG_OK) fail_msg("%s %s: %s", tg_mode_name(mode), tg_strategy_name(s), tg_status_name(st));
  tg_test_assert_valid(r, n, dims, p, mode == TG_MODE_OFFSETS ? alignment : 0, rel);
  assert_int_equal(p->strategy, s);
  return p;
}

static void expect_offsets(const tg_usage_record *r, size_t n, tg_strategy s, uint32_t width,
                           const uint64_t *offsets, uint64_t total) {
  tg_plan *p = plan_with(r, n, 1, TG_MODE_OFFSETS, s, width, 0, NULL);
  for (size_t i = 0; i < n; ++i)
    if (p->offset_of[i] != offsets[i])
      fail_msg("%s: record %zu at %llu, expected %llu", tg_strategy_name(s), i,
               (unsigned long long)p->offset_of[i], (unsigned long long)offsets[i]);
  assert_int_equal(p->total, total);
  tg_plan_destroy(p);
}

static void expect_objects(const tg_usage_record *r, size_t n, tg_strategy s, uint32_t width,
                           uint64_t alignment, const uint32_t *object_of, const uint64_t *sizes,
                           size_t objects, uint64_t total) {
  tg_plan *p = plan_with(r, n, 1, TG_MODE_OBJECTS, s, width, alignment, NULL);
  assert_int_equal(p->object_count, objects);
  for (size_t i = 0; i < n; ++i)
    if (p->object_of[i] != object_of[i])
      fail_msg("%s: record %zu in object %u, expected %u", tg_strategy_name(s), i,
               p->object_of[i], object_of[i]);
  for (size_t k = 0; k < objects; ++k) assert_int_equal(p->object_sizes[k].w, sizes[k]);
  assert_int_equal(p->total, total);
  tg_plan_destroy(p);
}

/* ---- seed 000: six tensors ----------------------------------------------------------------- */

/* tensor_name,size,offset,start_time,end_time: conv1_weight, layer1_activation, pool1_output,
 * conv2_weight, layer2_activation, output. In units u = 102400: A 1 [1,10], B 2 [5,15],
 * C 1 [16,25], D 2 [11,30], E 4 [20,35], F 1 [36,40]. Peak live 7u (C + D + E at 20..25), the
 * article's own plan. */
#define U 102400u
static const tg_usage_record k_seed000[] = {
    REC(1 * U, 1, 10), REC(2 * U, 5, 15), REC(1 * U, 16, 25),
    REC(2 * U, 11, 30), REC(4 * U, 20, 35), REC(1 * U, 36, 40)};

static void seed000_offsets(void **state) {
  (void)state;
  tg_bounds b;
  assert_int_equal(tg_bounds_compute(k_seed000, 6, 1, NULL, &b), TG_OK);
  assert_int_equal(b.peak_live, 7 * U);
  /* beam, first-task order A B D C E F. A at 0 (total 1). B meets A: top, 1 (total 3). D: A
   * gone, B at [1,3); the block [0,1) is too small: top, 3 (total 5). C: B gone, D at [3,5):
   * block [0,3) at 0 keeps 5 (the top would give 6): C at 0. E (4): block [1,3) too small: top,
   * 5 (total 9). F: all gone, 0. Width 8 keeps the other branch too (C on top, total 6), but it
   * ends at 10: the first-task order has placed D too high before E is seen. */
  const uint64_t beam[] = {0, 1 * U, 0, 3 * U, 5 * U, 0};
  expect_offsets(k_seed000, 6, TG_STRATEGY_BEAM, 1, beam, 9 * U);
  expect_offsets(k_seed000, 6, TG_STRATEGY_BEAM, 8, beam, 9 * U);
  /* greedy-in-order with best fit is beam of width 1. */
  expect_offsets(k_seed000, 6, TG_STRATEGY_GREEDY_IN_ORDER, 0, beam, 9 * U);

  /* allocation-tree, order by size then live length: E D B A C F (A and C tie: input order).
   * E: root T[E] (4). D meets E: refused, on top: T[S(T[E], T[D])], D at 4 (6). B [5,16)
   * meets the S: left T[E] (may not grow) takes it beside an Empty(2): B at 0. A [1,11)
   * meets the S, then in T[E] only S(B, Empty): left T[B] refuses (meets B), right
   * T[Empty(2)] takes it: A at 0 + 2. C [16,26) meets E in the left and D in the right: the
   * root refuses, on top: C at 6 (7). F [36,41) meets nothing: a new child of the root, F at
   * 0. Total 7u: the bound. */
  const uint64_t tree[] = {2 * U, 0, 6 * U, 4 * U, 0, 0};
  expect_offsets(k_seed000, 6, TG_STRATEGY_ALLOCATION_TREE, 0, tree, 7 * U);

  /* greedy-by-conflicts: conflicts A 1, B 2, C 2, D 3, E 2, F 0; order D E B C A F. D 0; E
   * jumps past D: 2; B past D: 2; C past D then E: 6; A below B: 0; F 0. */
  const uint64_t conflicts[] = {0, 2 * U, 6 * U, 0, 2 * U, 0};
  expect_offsets(k_seed000, 6, TG_STRATEGY_GREEDY_BY_CONFLICTS, 0, conflicts, 7 * U);

  /* hill-climb starts from USMP greedy-by-size: E D B C A F (size, then conflicts). E 0, D 4,
   * B 0 (D is higher), C past E and D: 6, A past B: 2, F 0. Total 7u is the bound: no round. */
  const uint64_t hill[] = {2 * U, 0, 6 * U, 4 * U, 0, 0};
  expect_offsets(k_seed000, 6, TG_STRATEGY_HILL_CLIMB, 0, hill, 7 * U);
}

static void seed000_objects(void **state) {
  (void)state;
  /* greedy-coloring, by size: E B D A C F. E pool 0; B meets no member of pool 0: pool 0; D
   * meets E: pool 1; A meets B (pool 0), not D: pool 1; C meets E and D: pool 2; F: pool 0.
   * Pools 4u, 2u, 1u: 7u, the positional maximum. With alignment 256 (Mini-Infer's), the
   * sizes are already multiples: the same. */
  const uint32_t coloring[] = {1, 0, 2, 1, 0, 0};
  const uint64_t coloring_sizes[] = {4 * U, 2 * U, 1 * U};
  expect_objects(k_seed000, 6, TG_STRATEGY_GREEDY_COLORING, 0, 0, coloring, coloring_sizes, 3, 7 * U);
  expect_objects(k_seed000, 6, TG_STRATEGY_GREEDY_COLORING, 0, 256, coloring, coloring_sizes, 3, 7 * U);

  /* beam of width 1, order A B D C E F: A new (1); B new (3); D grows A's object 1 -> 2
   * (total 4, cheaper than new: 5); C takes B's object (free, 2: total 4); E (4): both busy,
   * new (8); F: the three are free and hold it, the tightest are objects 0 and 1 (waste 1):
   * object 0. Total 8u. */
  const uint32_t beam1[] = {0, 1, 1, 0, 2, 0};
  const uint64_t beam1_sizes[] = {2 * U, 2 * U, 4 * U};
  expect_objects(k_seed000, 6, TG_STRATEGY_BEAM, 1, 0, beam1, beam1_sizes, 3, 8 * U);
  /* Width 8 also keeps D in a new object (total 5) and, after D grew A's object, C in a new
   * one (5). From the latter E grows B's free object 2 -> 4 (7), and so it does where D got a
   * new object and C took A's (7, a later parent). F: in the first of those, C's object (size
   * 1) holds it exactly. Total 7u: A 0, B 1, C 2, D 0, E 1, F 2. */
  const uint32_t beam8[] = {0, 1, 2, 0, 1, 2};
  const uint64_t beam8_sizes[] = {2 * U, 4 * U, 1 * U};
  expect_objects(k_seed000, 6, TG_STRATEGY_BEAM, 8, 0, beam8, beam8_sizes, 3, 7 * U);
}

/* ---- seed 004: four tensors -------------------------------------------------------------- */

/* T_A 100 MiB dies after OpB, T_B 150 MiB after OpC, T_C 50 MiB after OpD, T_D 100 MiB at the
 * end: A [0,1], B [1,2], C [2,3], D [3,3]. Peak live 250 MiB (A + B); the seed's exact-size
 * pool reaches 300 MiB (its T_C cannot reuse T_A's block). Units v = 50 MiB. */
#define V (50u * 1048576u)
static const tg_usage_record k_seed004[] = {REC(2ull * V, 0, 1), REC(3ull * V, 1, 2),
                                            REC(1ull * V, 2, 3), REC(2ull * V, 3, 3)};

static void seed004(void **state) {
  (void)state;
  /* beam: A 0; B top 2 (5); C: A gone, block [0,2) under B: 0; D: B gone, C at [0,1): top 1,
   * still under the total 5. 250 MiB. */
  const uint64_t beam[] = {0, 2ull * V, 0, 1ull * V};
  expect_offsets(k_seed004, 4, TG_STRATEGY_BEAM, 0, beam, 5ull * V);
  /* allocation-tree: B A D C. B root (3); A meets B: on top at 3 (5); D [3,4) meets nothing:
   * beside an Empty(3) at 0; C [2,4) meets both children of the root: on top at 5. 300 MiB,
   * what the seed's pool needs too. */
  const uint64_t tree[] = {3ull * V, 0, 5ull * V, 0};
  expect_offsets(k_seed004, 4, TG_STRATEGY_ALLOCATION_TREE, 0, tree, 6ull * V);
  /* greedy-by-conflicts: A 1, B 2, C 2, D 1: order B C A D. B 0, C 3, A 3, D 0 (below C). */
  const uint64_t conflicts[] = {3ull * V, 0, 3ull * V, 0};
  expect_offsets(k_seed004, 4, TG_STRATEGY_GREEDY_BY_CONFLICTS, 0, conflicts, 5ull * V);
  /* hill-climb from B A D C: B 0, A 3, D 0, C past B and D: 3. At the bound. */
  const uint64_t hill[] = {3ull * V, 0, 3ull * V, 0};
  expect_offsets(k_seed004, 4, TG_STRATEGY_HILL_CLIMB, 0, hill, 5ull * V);
  /* greedy-coloring: B A D C. B pool 0; A meets B: pool 1; D: pool 0; C meets B, not A: pool
   * 1. Pools 150 + 100 MiB. */
  const uint32_t coloring[] = {1, 0, 1, 0};
  const uint64_t sizes[] = {3ull * V, 2ull * V};
  expect_objects(k_seed004, 4, TG_STRATEGY_GREEDY_COLORING, 0, 0, coloring, sizes, 2, 5ull * V);
}

/* Mini-Infer's 256-byte alignment: 100 and 300 bytes round up to 256 and 512; a pool is its
 * largest aligned member. */
static void coloring_alignment(void **state) {
  (void)state;
  const tg_usage_record r[] = {REC(100, 0, 1), REC(300, 1, 2), REC(200, 2, 3)};
  /* By aligned size: 300 (512) pool 0; 200 (256) meets 300: pool 1; 100 (256) meets 300,
   * not 200: pool 1. Pools 512 + 256. */
  const uint32_t obj[] = {1, 0, 1};
  const uint64_t sizes[] = {512, 256};
  expect_objects(r, 3, TG_STRATEGY_GREEDY_COLORING, 0, 256, obj, sizes, 2, 768);
  const uint64_t plain[] = {300, 200};
  expect_objects(r, 3, TG_STRATEGY_GREEDY_COLORING, 0, 0, obj, plain, 2, 500);
  /* 2D records: Mini-Infer sizes pools in bytes only. */
  tg_usage_record t[] = {{{4, 4, 1}, 0, 1, 0}};
  tg_plan_options o;
  memset(&o, 0, sizeof o);
  o.strategy = TG_STRATEGY_GREEDY_COLORING;
  tg_plan *p = NULL;
  assert_int_equal(tg_plan_compute(t, 1, 2, &o, NULL, &p), TG_ERROR_UNSUPPORTED);
  assert_null(p);
  assert_false(tg_strategy_applies(TG_STRATEGY_GREEDY_COLORING, TG_MODE_OBJECTS, 2));
}

/* Modes, names and origins. */
static void names_and_modes(void **state) {
  (void)state;
  static const struct {
    tg_strategy s;
    const char *name, *origin;
    int objects, offsets;
  } k[] = {{TG_STRATEGY_BEAM, "beam", "seed 000", 1, 1},
           {TG_STRATEGY_ALLOCATION_TREE, "allocation-tree", "PyTorch", 0, 1},
           {TG_STRATEGY_GREEDY_COLORING, "greedy-coloring", "Mini-Infer", 1, 0},
           {TG_STRATEGY_GREEDY_BY_CONFLICTS, "greedy-by-conflicts", "TVM", 0, 1},
           {TG_STRATEGY_HILL_CLIMB, "hill-climb", "TVM", 0, 1},
           {TG_STRATEGY_GREEDY_BY_SIZE, "greedy-by-size", "TFLite", 1, 1},
           {TG_STRATEGY_BEST, "best", "Tangram", 1, 1}};
  const tg_usage_record r[] = {REC(8, 0, 1), REC(8, 1, 2)};
  for (size_t i = 0; i < COUNT(k); ++i) {
    assert_string_equal(tg_strategy_name(k[i].s), k[i].name);
    assert_string_equal(tg_strategy_origin(k[i].s), k[i].origin);
    tg_strategy parsed;
    assert_int_equal(tg_strategy_from_name(k[i].name, &parsed), TG_OK);
    assert_int_equal(parsed, k[i].s);
    for (int m = 0; m < 2; ++m) {
      int expect = m == 0 ? k[i].objects : k[i].offsets;
      assert_int_equal(tg_strategy_applies(k[i].s, (tg_mode)m, 1), expect);
      tg_plan_options o;
      memset(&o, 0, sizeof o);
      o.mode = (tg_mode)m;
      o.strategy = k[i].s;
      tg_plan *p = NULL;
      assert_int_equal(tg_plan_compute(r, 2, 1, &o, NULL, &p), expect ? TG_OK : TG_ERROR_UNSUPPORTED);
      tg_plan_destroy(p);
    }
  }
  assert_null(tg_strategy_origin(TG_STRATEGY_COUNT));
  assert_false(tg_strategy_applies(TG_STRATEGY_BEAM, TG_MODE_OFFSETS, 2));
  assert_false(tg_strategy_applies(TG_STRATEGY_COUNT, TG_MODE_OBJECTS, 1));
  /* Existing values did not move. */
  assert_int_equal(TG_STRATEGY_MIN_COST_FLOW, 5);
  assert_int_equal(TG_STRATEGY_BEST, 6);
}

/* Two records apart in time that a relation keeps apart: every peer honours it. */
static int never(void *user, size_t a, size_t b) {
  (void)user;
  (void)a;
  (void)b;
  return 0;
}

static void relation_honoured(void **state) {
  (void)state;
  const tg_usage_record r[] = {REC(64, 0, 0), REC(64, 1, 1), REC(32, 2, 2)};
  tg_share_relation rel = {never, NULL, NULL, 0, NULL};
  const tg_strategy offsets[] = {TG_STRATEGY_BEAM, TG_STRATEGY_ALLOCATION_TREE,
                                 TG_STRATEGY_GREEDY_BY_CONFLICTS, TG_STRATEGY_HILL_CLIMB};
  for (size_t i = 0; i < COUNT(offsets); ++i) {
    tg_plan *p = plan_with(r, 3, 1, TG_MODE_OFFSETS, offsets[i], 0, 0, &rel);
    assert_int_equal(p->total, 160); /* nothing may share */
    tg_plan_destroy(p);
    p = plan_with(r, 3, 1, TG_MODE_OFFSETS, offsets[i], 0, 0, NULL);
    assert_int_equal(p->total, 64); /* serial: one slot */
    tg_plan_destroy(p);
  }
  const tg_strategy objects[] = {TG_STRATEGY_BEAM, TG_STRATEGY_GREEDY_COLORING};
  for (size_t i = 0; i < COUNT(objects); ++i) {
    tg_plan *p = plan_with(r, 3, 1, TG_MODE_OBJECTS, objects[i], 0, 0, &rel);
    assert_int_equal(p->object_count, 3);
    tg_plan_destroy(p);
  }
}

/* ---- reference implementations -------------------------------------------------------------- */

#define MAXN 40

static int meet(const tg_usage_record *a, const tg_usage_record *b) {
  return a->first_task <= b->last_task && b->first_task <= a->last_task;
}

/* Record order by (first_task, index). */
static void by_first(const tg_usage_record *r, size_t n, size_t *order) {
  for (size_t i = 0; i < n; ++i) order[i] = i;
  for (size_t i = 1; i < n; ++i)
    for (size_t j = i; j > 0 && r[order[j - 1]].first_task > r[order[j]].first_task; --j) {
      size_t t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
}

/* Stable sort of order[0..n) by key descending (insertion sort). */
static void sort_desc(size_t *order, size_t n, const uint64_t *key) {
  for (size_t i = 1; i < n; ++i)
    for (size_t j = i; j > 0 && key[order[j - 1]] < key[order[j]]; --j) {
      size_t t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
}

/* Beam, offsets: each state a full offset array; successors enumerated and ranked by
 * (total, waste, parent, offset); equal states (same live offsets, same total) once. */
typedef struct ref_state {
  uint64_t off[MAXN];
  uint64_t total;
  int parent;
} ref_state;

typedef struct ref_succ {
  uint64_t total, waste, value;
  int parent;
} ref_succ;

static int succ_less(const ref_succ *a, const ref_succ *b) {
  if (a->total != b->total) return a->total < b->total;
  if (a->waste != b->waste) return a->waste < b->waste;
  if (a->parent != b->parent) return a->parent < b->parent;
  return a->value < b->value;
}

static uint64_t ref_beam_offsets(const tg_usage_record *r, size_t n, size_t k, uint64_t *out) {
  size_t order[MAXN], m = 0, all[MAXN];
  by_first(r, n, all);
  for (size_t i = 0; i < n; ++i)
    if (r[all[i]].size.w > 0) order[m++] = all[i];
  ref_state *cur = calloc(k, sizeof *cur), *next = calloc(k, sizeof *next);
  ref_succ *succ = calloc(k * (MAXN + 2), sizeof *succ);
  assert_true(cur && next && succ);
  size_t kept = 1;
  for (size_t i = 0; i < m; ++i) {
    size_t x = order[i], ns = 0;
    uint64_t size = r[x].size.w;
    for (size_t j = 0; j < kept; ++j) {
      /* The placed records live at x's start, by offset. */
      size_t live[MAXN], nl = 0;
      for (size_t s = 0; s < i; ++s)
        if (r[order[s]].last_task >= r[x].first_task) live[nl++] = order[s];
      for (size_t a = 1; a < nl; ++a)
        for (size_t b = a; b > 0 && cur[j].off[live[b - 1]] > cur[j].off[live[b]]; --b) {
          size_t t = live[b];
          live[b] = live[b - 1];
          live[b - 1] = t;
        }
      uint64_t prev = 0;
      for (size_t e = 0; e < nl; ++e) {
        uint64_t o = cur[j].off[live[e]];
        if (prev + size <= o)
          succ[ns++] = (ref_succ){prev + size > cur[j].total ? prev + size : cur[j].total,
                                  o - prev - size, prev, (int)j};
        uint64_t end = o + r[live[e]].size.w;
        if (end > prev) prev = end;
      }
      uint64_t t = prev + size > cur[j].total ? prev + size : cur[j].total;
      succ[ns++] = (ref_succ){t, t - prev - size, prev, (int)j};
    }
    for (size_t a = 1; a < ns; ++a) /* rank */
      for (size_t b = a; b > 0 && succ_less(&succ[b], &succ[b - 1]); --b) {
        ref_succ t = succ[b];
        succ[b] = succ[b - 1];
        succ[b - 1] = t;
      }
    size_t nk = 0;
    for (size_t q = 0; q < ns && nk < k; ++q) {
      ref_state s = cur[succ[q].parent];
      s.off[x] = succ[q].value;
      s.total = succ[q].total;
      s.parent = succ[q].parent;
      int dup = 0; /* the same live offsets and total as one kept already */
      for (size_t d = 0; d < nk && !dup; ++d) {
        if (next[d].total != s.total) continue;
        dup = 1;
        for (size_t e = 0; e <= i && dup; ++e)
          if (r[order[e]].last_task >= r[x].first_task && next[d].off[order[e]] != s.off[order[e]])
            dup = 0;
      }
      if (!dup) next[nk++] = s;
    }
    ref_state *t = cur;
    cur = next;
    next = t;
    kept = nk;
  }
  for (size_t i = 0; i < n; ++i) out[i] = r[i].size.w > 0 ? cur[0].off[i] : 0;
  uint64_t total = cur[0].total;
  free(cur);
  free(next);
  free(succ);
  return total;
}

/* Beam, objects (1D): each state its objects (size, last user's last task) and assignment. */
typedef struct ref_ostate {
  uint64_t size[MAXN];
  uint32_t busy[MAXN];
  uint32_t obj_of[MAXN];
  size_t nobj;
  uint64_t total;
} ref_ostate;

static uint64_t ref_beam_objects(const tg_usage_record *r, size_t n, size_t k, uint32_t *out) {
  size_t order[MAXN];
  by_first(r, n, order);
  ref_ostate *cur = calloc(k, sizeof *cur), *next = calloc(k, sizeof *next);
  ref_succ *succ = calloc(k * (MAXN + 2), sizeof *succ);
  assert_true(cur && next && succ);
  size_t kept = 1;
  for (size_t i = 0; i < n; ++i) {
    size_t x = order[i], ns = 0;
    uint64_t size = r[x].size.w;
    for (size_t j = 0; j < kept; ++j) {
      for (size_t o = 0; o < cur[j].nobj; ++o) {
        if (cur[j].busy[o] >= r[x].first_task) continue;
        uint64_t grown = cur[j].size[o] > size ? cur[j].size[o] : size;
        succ[ns++] = (ref_succ){cur[j].total + grown - cur[j].size[o], grown - size, o, (int)j};
      }
      succ[ns++] = (ref_succ){cur[j].total + size, 0, cur[j].nobj, (int)j};
    }
    for (size_t a = 1; a < ns; ++a)
      for (size_t b = a; b > 0 && succ_less(&succ[b], &succ[b - 1]); --b) {
        ref_succ t = succ[b];
        succ[b] = succ[b - 1];
        succ[b - 1] = t;
      }
    size_t nk = 0;
    for (size_t q = 0; q < ns && nk < k; ++q) {
      ref_ostate s = cur[succ[q].parent];
      size_t o = (size_t)succ[q].value;
      if (o == s.nobj) {
        s.nobj++;
        s.size[o] = 0;
      }
      if (size > s.size[o]) s.size[o] = size;
      s.busy[o] = r[x].last_task;
      s.obj_of[x] = (uint32_t)o;
      s.total = succ[q].total;
      int dup = 0; /* the same objects (sizes, users' last tasks) and total */
      for (size_t d = 0; d < nk && !dup; ++d)
        dup = next[d].total == s.total && next[d].nobj == s.nobj &&
              memcmp(next[d].size, s.size, s.nobj * sizeof s.size[0]) == 0 &&
              memcmp(next[d].busy, s.busy, s.nobj * sizeof s.busy[0]) == 0;
      if (!dup) next[nk++] = s;
    }
    ref_ostate *t = cur;
    cur = next;
    next = t;
    kept = nk;
  }
  memcpy(out, cur[0].obj_of, n * sizeof *out);
  uint64_t total = cur[0].total;
  free(cur);
  free(next);
  free(succ);
  return total;
}

/* allocation-tree: PyTorch's classes, recursive, every size and live range recomputed from the
 * leaves. */
enum { R_ALLOC, R_EMPTY, R_TEMPORAL, R_SPATIAL };
typedef struct ref_node {
  int type;
  uint64_t size; /* Allocation, Empty */
  size_t rec;
  int left, right;
  int kids[MAXN * 2];
  int nk;
} ref_node;

typedef struct ref_tree {
  const tg_usage_record *r;
  ref_node *node;
  int count;
  uint64_t align;
} ref_tree;

static int rt_new(ref_tree *t, int type) {
  assert_true(t->count < 16 * MAXN * MAXN);
  ref_node *x = &t->node[t->count];
  memset(x, 0, sizeof *x);
  x->type = type;
  return t->count++;
}

static uint64_t rt_align(const ref_tree *t, uint64_t v) { return (v + t->align - 1) / t->align * t->align; }

static uint64_t rt_size(const ref_tree *t, int x) {
  const ref_node *n = &t->node[x];
  if (n->type == R_ALLOC || n->type == R_EMPTY) return n->size;
  if (n->type == R_SPATIAL) return rt_align(t, rt_size(t, n->left)) + rt_size(t, n->right);
  uint64_t m = 0;
  for (int k = 0; k < n->nk; ++k)
    if (rt_size(t, n->kids[k]) > m) m = rt_size(t, n->kids[k]);
  return m;
}

/* Half-open [first, last + 1): do x's leaves meet record rec? */
static int rt_overlaps(const ref_tree *t, int x, size_t rec) {
  const ref_node *n = &t->node[x];
  if (n->type == R_ALLOC) return meet(&t->r[n->rec], &t->r[rec]);
  if (n->type == R_EMPTY) return 0;
  if (n->type == R_SPATIAL) return rt_overlaps(t, n->left, rec) || rt_overlaps(t, n->right, rec);
  for (int k = 0; k < n->nk; ++k)
    if (rt_overlaps(t, n->kids[k], rec)) return 1;
  return 0;
}

static int rt_temporal1(ref_tree *t, int kid) {
  int x = rt_new(t, R_TEMPORAL);
  t->node[x].kids[t->node[x].nk++] = kid;
  return x;
}

static int rt_spatial_create(ref_tree *t, int left, uint64_t extra) {
  int e = rt_new(t, R_EMPTY);
  t->node[e].size = extra;
  int l = rt_temporal1(t, left), r = rt_temporal1(t, e);
  int s = rt_new(t, R_SPATIAL);
  t->node[s].left = l;
  t->node[s].right = r;
  return s;
}

static int rt_allocate(ref_tree *t, int x, size_t rec, int is_last) {
  ref_node *n = &t->node[x];
  if (n->type == R_SPATIAL) {
    int l = n->left, r = n->right;
    return rt_allocate(t, l, rec, 0) || rt_allocate(t, r, rec, is_last);
  }
  if (n->type != R_TEMPORAL) return 0;
  uint64_t slot = rt_size(t, x), block = t->r[rec].size.w;
  if (!is_last && block > slot) return 0;
  int overlapping = 0, which = -1;
  for (int k = 0; k < n->nk; ++k)
    if (rt_overlaps(t, n->kids[k], rec)) {
      ++overlapping;
      which = n->kids[k];
    }
  if (overlapping > 1) return 0;
  if (overlapping == 1) return rt_allocate(t, which, rec, is_last);
  if (n->nk == 1 && t->node[n->kids[0]].type == R_EMPTY) n->nk = 0;
  int leaf = rt_new(t, R_ALLOC);
  n = &t->node[x];
  t->node[leaf].rec = rec;
  t->node[leaf].size = block;
  if (slot == block) {
    n->kids[n->nk++] = leaf;
  } else if (slot > block) {
    int s = rt_spatial_create(t, leaf, slot - block);
    t->node[x].kids[t->node[x].nk++] = s;
  } else {
    for (int k = 0; k < t->node[x].nk; ++k) {
      int s = rt_spatial_create(t, t->node[x].kids[k], block - slot);
      t->node[x].kids[k] = s;
    }
    t->node[x].kids[t->node[x].nk++] = leaf;
  }
  return 1;
}

static void rt_finalize(const ref_tree *t, int x, uint64_t off, uint64_t *out) {
  const ref_node *n = &t->node[x];
  if (n->type == R_ALLOC) out[n->rec] = off;
  if (n->type == R_TEMPORAL)
    for (int k = 0; k < n->nk; ++k) rt_finalize(t, n->kids[k], off, out);
  if (n->type == R_SPATIAL) {
    rt_finalize(t, n->left, off, out);
    rt_finalize(t, n->right, off + rt_align(t, rt_size(t, n->left)), out);
  }
}

static void ref_allocation_tree(const tg_usage_record *r, size_t n, uint64_t align, uint64_t *out) {
  ref_tree t = {r, calloc(16 * MAXN * MAXN, sizeof(ref_node)), 0, align};
  assert_non_null(t.node);
  size_t order[MAXN];
  uint64_t len[MAXN], size[MAXN];
  for (size_t i = 0; i < n; ++i) {
    order[i] = i;
    len[i] = (uint64_t)r[i].last_task - r[i].first_task;
    size[i] = r[i].size.w;
  }
  sort_desc(order, n, len);
  sort_desc(order, n, size);
  int root = -1;
  for (size_t i = 0; i < n; ++i) {
    size_t x = order[i];
    out[x] = 0;
    if (size[x] == 0) continue;
    if (root < 0) {
      int leaf = rt_new(&t, R_ALLOC);
      t.node[leaf].rec = x;
      t.node[leaf].size = size[x];
      root = rt_temporal1(&t, leaf);
    } else if (!rt_allocate(&t, root, x, 1)) {
      int leaf = rt_new(&t, R_ALLOC);
      t.node[leaf].rec = x;
      t.node[leaf].size = size[x];
      int right = rt_temporal1(&t, leaf);
      int s = rt_new(&t, R_SPATIAL);
      t.node[s].left = root;
      t.node[s].right = right;
      root = rt_temporal1(&t, s);
    }
  }
  if (root >= 0) rt_finalize(&t, root, 0, out);
  free(t.node);
}

/* greedy-coloring: the interference matrix, sizes descending, the first pool without an edge. */
static void ref_coloring(const tg_usage_record *r, size_t n, uint64_t align, uint32_t *obj,
                         uint64_t *pool_size, size_t *pools) {
  size_t order[MAXN];
  uint64_t size[MAXN];
  for (size_t i = 0; i < n; ++i) {
    order[i] = i;
    size[i] = (r[i].size.w + align - 1) / align * align;
  }
  sort_desc(order, n, size);
  *pools = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t x = order[i], p = 0;
    for (; p < *pools; ++p) {
      int edge = 0;
      for (size_t j = 0; j < i && !edge; ++j)
        edge = obj[order[j]] == p && meet(&r[order[j]], &r[x]);
      if (!edge) break;
    }
    if (p == *pools) pool_size[(*pools)++] = 0;
    obj[x] = (uint32_t)p;
    if (size[x] > pool_size[p]) pool_size[p] = size[x];
  }
}

/* TVM's greedy: conflict lists; for each buffer, the placed conflicts by offset, jumping past
 * each one the candidate offset would overlap (aligned). */
static void ref_usmp_place(const tg_usage_record *r, size_t n, const size_t *order, uint64_t *out) {
  int placed[MAXN] = {0};
  for (size_t i = 0; i < n; ++i) {
    size_t x = order[i], conf[MAXN], nc = 0;
    for (size_t y = 0; y < n; ++y)
      if (y != x && placed[y] && meet(&r[x], &r[y])) conf[nc++] = y;
    for (size_t a = 1; a < nc; ++a)
      for (size_t b = a; b > 0 && out[conf[b - 1]] > out[conf[b]]; --b) {
        size_t t = conf[b];
        conf[b] = conf[b - 1];
        conf[b - 1] = t;
      }
    uint64_t c = 0, size = r[x].size.w;
    for (size_t k = 0; k < nc; ++k) {
      uint64_t next = out[conf[k]] + r[conf[k]].size.w;
      if (next > c && c + size > out[conf[k]]) c = next;
    }
    out[x] = c;
    placed[x] = 1;
  }
}

static void conflict_counts(const tg_usage_record *r, size_t n, uint64_t *counts) {
  for (size_t i = 0; i < n; ++i) {
    counts[i] = 0;
    for (size_t j = 0; j < n; ++j) counts[i] += j != i && meet(&r[i], &r[j]);
  }
}

static void ref_greedy_by_conflicts(const tg_usage_record *r, size_t n, uint64_t *out) {
  size_t order[MAXN];
  uint64_t counts[MAXN], size[MAXN];
  conflict_counts(r, n, counts);
  for (size_t i = 0; i < n; ++i) {
    order[i] = i;
    size[i] = r[i].size.w;
  }
  sort_desc(order, n, size);
  sort_desc(order, n, counts);
  ref_usmp_place(r, n, order, out);
}

/* USMP greedy-by-size: hill-climb's start. */
static uint64_t ref_usmp_by_size(const tg_usage_record *r, size_t n) {
  size_t order[MAXN];
  uint64_t counts[MAXN], size[MAXN], out[MAXN], total = 0;
  conflict_counts(r, n, counts);
  for (size_t i = 0; i < n; ++i) {
    order[i] = i;
    size[i] = r[i].size.w;
  }
  sort_desc(order, n, counts);
  sort_desc(order, n, size);
  ref_usmp_place(r, n, order, out);
  for (size_t i = 0; i < n; ++i)
    if (out[i] + size[i] > total) total = out[i] + size[i];
  return total;
}

static void random_set(tg_test_rng *rng, tg_usage_record *r, size_t n, int zero_sizes) {
  tg_test_random_spec spec = {1, n, (uint32_t)(n / 2 + 2), (uint32_t)tg_test_rng_range(rng, 0, 6),
                              tg_test_rng_range(rng, 0, 1) ? 8 : 1000, zero_sizes,
                              (int)tg_test_rng_range(rng, 0, 1)};
  tg_test_random_records(rng, &spec, r);
}

static void against_references(void **state) {
  (void)state;
  tg_test_rng rng = {0xBEA7ull};
  size_t sets = tg_test_quick() ? 150 : 600, improved = 0, climbs = 0;
  for (size_t set = 0; set < sets; ++set) {
    size_t n = (size_t)tg_test_rng_range(&rng, 1, set % 10 == 0 ? MAXN : 16);
    tg_usage_record r[MAXN];
    random_set(&rng, r, n, set % 3 == 0);
    uint64_t ref[MAXN];
    uint32_t robj[MAXN];

    for (uint32_t k = 1; k <= 8; k *= 2) { /* beam, both modes */
      uint64_t total = ref_beam_offsets(r, n, k, ref);
      tg_plan *p = plan_with(r, n, 1, TG_MODE_OFFSETS, TG_STRATEGY_BEAM, k, 0, NULL);
      if (p->total != total || memcmp(p->offset_of, ref, n * sizeof *ref) != 0)
        fail_msg("set %zu: beam %u offsets differ from the reference (%llu vs %llu)", set, k,
                 (unsigned long long)p->total, (unsigned long long)total);
      tg_plan_destroy(p);
      total = ref_beam_objects(r, n, k, robj);
      p = plan_with(r, n, 1, TG_MODE_OBJECTS, TG_STRATEGY_BEAM, k, 0, NULL);
      if (p->total != total || memcmp(p->object_of, robj, n * sizeof *robj) != 0)
        fail_msg("set %zu: beam %u objects differ from the reference (%llu vs %llu)", set, k,
                 (unsigned long long)p->total, (unsigned long long)total);
      tg_plan_destroy(p);
    }

    uint64_t align = set % 4 == 0 ? 4 : 1;
    ref_allocation_tree(r, n, align, ref);
    tg_plan *p = plan_with(r, n, 1, TG_MODE_OFFSETS, TG_STRATEGY_ALLOCATION_TREE, 0, align, NULL);
    for (size_t i = 0; i < n; ++i)
      if (p->offset_of[i] != ref[i])
        fail_msg("set %zu: allocation-tree record %zu at %llu, reference %llu", set, i,
                 (unsigned long long)p->offset_of[i], (unsigned long long)ref[i]);
    tg_plan_destroy(p);

    uint64_t sizes[MAXN];
    size_t pools;
    ref_coloring(r, n, 16, robj, sizes, &pools);
    p = plan_with(r, n, 1, TG_MODE_OBJECTS, TG_STRATEGY_GREEDY_COLORING, 0, 16, NULL);
    assert_int_equal(p->object_count, pools);
    assert_memory_equal(p->object_of, robj, n * sizeof *robj);
    for (size_t k = 0; k < pools; ++k) assert_int_equal(p->object_sizes[k].w, sizes[k]);
    tg_plan_destroy(p);

    ref_greedy_by_conflicts(r, n, ref);
    p = plan_with(r, n, 1, TG_MODE_OFFSETS, TG_STRATEGY_GREEDY_BY_CONFLICTS, 0, 0, NULL);
    for (size_t i = 0; i < n; ++i)
      if (p->offset_of[i] != ref[i])
        fail_msg("set %zu: greedy-by-conflicts record %zu at %llu, reference %llu", set, i,
                 (unsigned long long)p->offset_of[i], (unsigned long long)ref[i]);
    tg_plan_destroy(p);

    uint64_t start = ref_usmp_by_size(r, n);
    tg_bounds b;
    assert_int_equal(tg_bounds_compute(r, n, 1, NULL, &b), TG_OK);
    p = plan_with(r, n, 1, TG_MODE_OFFSETS, TG_STRATEGY_HILL_CLIMB, 0, 0, NULL);
    if (p->total > start)
      fail_msg("set %zu: hill-climb %llu above its start %llu", set, (unsigned long long)p->total,
               (unsigned long long)start);
    if (start > b.peak_live) ++climbs;
    if (p->total < start) ++improved;
    tg_plan_destroy(p);
  }
  /* Where the start is above the bound, the climb must find something at least sometimes. */
  print_message("hill-climb improved %zu of %zu sets above the bound\n", improved, climbs);
  /* The climb is time-bounded, and the quick run (TANGRAM_TEST_QUICK, under the sanitizers) has
   * too few sets for the rate: there it must still never end above its start (checked above). */
  if (!tg_test_quick()) assert_true(climbs > 10 && improved > climbs / 10);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(seed000_offsets),   cmocka_unit_test(seed000_objects),
      cmocka_unit_test(seed004),           cmocka_unit_test(coloring_alignment),
      cmocka_unit_test(names_and_modes),   cmocka_unit_test(relation_honoured),
      cmocka_unit_test(against_references),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
