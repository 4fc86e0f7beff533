/* The scheduler: happens-before, waves, branches, reuse policies and the waits reuse adds. */
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tangram/graph.h"
#include "tangram/layout.h"
#include "tangram/model.h"
#include "tangram/planner.h"
#include "tangram/schedule.h"

/* ---- graphs from a compact spec -------------------------------------------------------- */

/* Each op is "IN,IN>OUT,OUT" with tensor indices (-1: an absent optional input). Tensors are
 * "t<i>", float32 of shape [16]. Tensors no op writes are graph inputs; tensors no op reads are
 * graph outputs (when `mark_outputs`). */
static void parse_list(const char *s, const char *end, int32_t *out, uint32_t *count) {
  *count = 0;
  while (s < end) {
    if (*s == ',') {
      ++s;
      continue;
    }
    char *next;
    out[(*count)++] = (int32_t)strtol(s, &next, 10);
    s = next;
  }
}

static tg_graph *graph_from_spec(const char *const *ops, size_t op_count, int mark_outputs) {
  int32_t ins[64][16], outs[64][8];
  uint32_t nin[64], nout[64];
  assert_true(op_count <= 64);
  int32_t max_tensor = -1;
  for (size_t i = 0; i < op_count; ++i) {
    const char *gt = strchr(ops[i], '>');
    assert_non_null(gt);
    parse_list(ops[i], gt, ins[i], &nin[i]);
    parse_list(gt + 1, gt + strlen(gt), outs[i], &nout[i]);
    for (uint32_t k = 0; k < nin[i]; ++k) if (ins[i][k] > max_tensor) max_tensor = ins[i][k];
    for (uint32_t k = 0; k < nout[i]; ++k) if (outs[i][k] > max_tensor) max_tensor = outs[i][k];
  }
  size_t tensors = (size_t)(max_tensor + 1);
  assert_true(tensors <= 256);
  tg_graph *g = NULL;
  assert_int_equal(tg_graph_create(tensors, op_count, NULL, &g), TG_OK);
  int written[256] = {0}, read[256] = {0};
  for (size_t i = 0; i < op_count; ++i) {
    char name[32];
    snprintf(name, sizeof name, "op%zu", i);
    assert_int_equal(tg_graph_set_op(g, i, name, nin[i], ins[i], nout[i], outs[i]), TG_OK);
    for (uint32_t k = 0; k < nin[i]; ++k)
      if (ins[i][k] >= 0) read[ins[i][k]] = 1;
    for (uint32_t k = 0; k < nout[i]; ++k) written[outs[i][k]] = 1;
  }
  uint32_t inputs[256], outputs[256];
  size_t ni = 0, no = 0;
  for (size_t t = 0; t < tensors; ++t) {
    char name[32];
    snprintf(name, sizeof name, "t%zu", t);
    static const int64_t shape[1] = {16};
    assert_int_equal(tg_graph_set_tensor(g, t, name, 1, shape, TG_DTYPE_FLOAT32, 0), TG_OK);
    if (!written[t]) inputs[ni++] = (uint32_t)t;
    else if (!read[t] && mark_outputs) outputs[no++] = (uint32_t)t;
  }
  assert_int_equal(tg_graph_set_io(g, ni, inputs, no, outputs), TG_OK);
  return g;
}

/* Records the way the library makes them: lifetimes, then buffer records. */
typedef struct graph_records {
  tg_lifetimes *lifetimes;
  tg_model_records *mr;
  const tg_usage_record *records;
  const uint32_t *tensor_of;
  size_t count;
} graph_records;

static void records_make(const tg_graph *g, graph_records *out) {
  tg_error_info err = {{0}};
  memset(out, 0, sizeof *out);
  tg_status st = tg_graph_compute_lifetimes(g, NULL, NULL, &out->lifetimes, &err);
  if (st != TG_OK) fail_msg("lifetimes: %s", err.message);
  st = tg_model_records_create(g, out->lifetimes, TG_STORAGE_BUFFER, TG_PRECISION_FP32, NULL,
                               NULL, &out->mr, &err);
  if (st != TG_OK) fail_msg("records: %s", err.message);
  assert_int_equal(out->mr->fallback ? out->mr->fallback->count : 0, 0);
  out->records = out->mr->records->records;
  out->tensor_of = out->mr->tensor_of;
  out->count = out->mr->records->count;
}

static void records_free(graph_records *r) {
  tg_model_records_destroy(r->mr);
  tg_lifetimes_destroy(r->lifetimes);
}

static size_t record_of_tensor(const graph_records *r, uint32_t t) {
  for (size_t i = 0; i < r->count; ++i)
    if (r->tensor_of[i] == t) return i;
  fail_msg("tensor t%u has no record", t);
  return 0;
}

static tg_schedule *schedule_make(const tg_graph *g) {
  tg_schedule *s = NULL;
  tg_error_info err = {{0}};
  tg_status st = tg_schedule_create(g, NULL, NULL, &s, &err);
  if (st != TG_OK) fail_msg("schedule: %s", err.message);
  return s;
}

static void assert_waves(const tg_schedule *s, const char *expected) {
  char buf[1024];
  size_t at = 0;
  tg_schedule_stats st;
  tg_schedule_get_stats(s, &st);
  for (size_t w = 0; w < st.wave_count; ++w) {
    size_t n = 0;
    const uint32_t *ops = tg_schedule_get_wave(s, w, &n);
    at += (size_t)snprintf(buf + at, sizeof buf - at, "%s[", w ? " " : "");
    for (size_t i = 0; i < n; ++i) {
      at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%u", i ? "," : "", ops[i]);
      assert_int_equal(tg_schedule_get_wave_of(s, ops[i]), w);
    }
    at += (size_t)snprintf(buf + at, sizeof buf - at, "]");
  }
  buf[at] = '\0';
  assert_string_equal(buf, expected);
}

/* Under `policy`, the pairs of records (named by tensor, "a-b" with a < b, space-separated in
 * ascending order) that have disjoint intervals and may share. */
static void assert_pairs(const tg_schedule *s, const graph_records *r, tg_policy policy,
                         const char *expected) {
  tg_policy_relation *pr = NULL;
  assert_int_equal(tg_policy_relation_create(s, policy, r->tensor_of, r->count, NULL, &pr), TG_OK);
  const tg_share_relation *rel = tg_policy_relation_get(pr);
  assert_int_equal(rel == NULL, policy == TG_POLICY_SERIAL);
  assert_int_equal(tg_policy_relation_get_policy(pr), policy);
  /* Collect as (tensor, tensor) sorted. */
  uint32_t pairs[512][2];
  size_t n = 0;
  for (size_t a = 0; a < r->count; ++a)
    for (size_t b = 0; b < r->count; ++b) {
      if (a == b) continue;
      const tg_usage_record *ra = &r->records[a], *rb = &r->records[b];
      if (ra->first_task <= rb->last_task && rb->first_task <= ra->last_task) continue;
      int may = rel ? rel->may_share(rel->user, a, b) : 1;
      int back = rel ? rel->may_share(rel->user, b, a) : 1;
      assert_int_equal(may, back); /* symmetric */
      if (!may || r->tensor_of[a] > r->tensor_of[b]) continue;
      pairs[n][0] = r->tensor_of[a];
      pairs[n][1] = r->tensor_of[b];
      ++n;
    }
  for (size_t i = 1; i < n; ++i)
    for (size_t j = i; j > 0 && (pairs[j - 1][0] > pairs[j][0] ||
                                 (pairs[j - 1][0] == pairs[j][0] && pairs[j - 1][1] > pairs[j][1]));
         --j) {
      uint32_t t0 = pairs[j][0], t1 = pairs[j][1];
      pairs[j][0] = pairs[j - 1][0];
      pairs[j][1] = pairs[j - 1][1];
      pairs[j - 1][0] = t0;
      pairs[j - 1][1] = t1;
    }
  char buf[2048];
  size_t at = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n; ++i)
    at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%u-%u", i ? " " : "", pairs[i][0],
                           pairs[i][1]);
  if (strcmp(buf, expected) != 0)
    fail_msg("policy %s: pairs '%s', expected '%s'", tg_policy_name(policy), buf, expected);
  tg_policy_relation_destroy(pr);
}

/* A plan in which the records of the tensors in `share` (pairs) use one object (objects
 * mode) or one offset (offsets mode); every other record its own. */
static tg_plan *hand_plan(const graph_records *r, tg_mode mode, const uint32_t (*share)[2],
                          size_t share_count) {
  tg_plan *p = NULL;
  assert_int_equal(tg_plan_create(mode, 1, r->count, r->count, NULL, &p), TG_OK);
  for (size_t i = 0; i < r->count; ++i) {
    if (mode == TG_MODE_OBJECTS) p->object_of[i] = (uint32_t)i;
    else p->offset_of[i] = (uint64_t)i * 1024;
  }
  for (size_t k = 0; k < share_count; ++k) {
    size_t a = record_of_tensor(r, share[k][0]), b = record_of_tensor(r, share[k][1]);
    if (mode == TG_MODE_OBJECTS) p->object_of[b] = p->object_of[a];
    else p->offset_of[b] = p->offset_of[a];
  }
  if (mode == TG_MODE_OBJECTS) {
    for (size_t i = 0; i < r->count; ++i) p->object_sizes[i] = (tg_extent){1024, 1, 1};
  }
  return p;
}

/* The reuse edges as "after->op(tensor/reuses)" in order. */
static void assert_reuse_edges(const tg_waits *w, const tg_graph *g, const char *expected) {
  char buf[2048];
  size_t at = 0;
  buf[0] = '\0';
  for (size_t e = 0; e < w->reuse_edge_count; ++e) {
    const tg_reuse_edge *r = &w->reuse_edges[e];
    at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%u->%u(%s/%s)", e ? " " : "", r->after,
                           r->op, g->tensors[r->tensor].name, g->tensors[r->reuses].name);
    assert_true(e >= w->reuse_start[r->op] && e < w->reuse_start[r->op + 1]);
  }
  if (strcmp(buf, expected) != 0) fail_msg("reuse edges '%s', expected '%s'", buf, expected);
}

static tg_waits *waits_make(const tg_schedule *s, const graph_records *r, const tg_plan *p) {
  tg_waits *w = NULL;
  tg_error_info err = {{0}};
  tg_status st = tg_schedule_compute_waits(s, r->records, r->tensor_of, r->count, p, NULL, &w, &err);
  if (st != TG_OK) fail_msg("waits: %s (%s)", err.message, tg_status_name(st));
  return w;
}

/* ---- hand-built graphs ------------------------------------------------------------------ */

/* Two arms of two ops between a fork (op 0) and a join (op 5). */
static const char *const k_diamond[] = {"0>1", "1>2", "2>3", "1>4", "4>5", "3,5>6", "6>7", "7>8"};

static void diamond(void **state) {
  (void)state;
  tg_graph *g = graph_from_spec(k_diamond, 8, 1);
  tg_schedule *s = schedule_make(g);
  tg_schedule_stats st;
  tg_schedule_get_stats(s, &st);
  assert_int_equal(st.op_count, 8);
  assert_int_equal(st.folded_count, 0);
  assert_int_equal(st.edge_count, 8);
  assert_int_equal(st.critical_path, 6);
  assert_int_equal(st.max_wave_width, 2);
  assert_int_equal(st.branch_count, 3);
  assert_waves(s, "[0] [1,3] [2,4] [5] [6] [7]");
  assert_true(tg_schedule_happens_before(s, 0, 7));
  assert_true(tg_schedule_happens_before(s, 1, 5));
  assert_false(tg_schedule_happens_before(s, 5, 1));
  assert_false(tg_schedule_happens_before(s, 3, 3));
  assert_false(tg_schedule_happens_before(s, 1, 3));
  assert_false(tg_schedule_happens_before(s, 0, 99));
  assert_true(tg_schedule_concurrent(s, 1, 4));
  assert_true(tg_schedule_concurrent(s, 2, 3));
  assert_false(tg_schedule_concurrent(s, 0, 4));
  assert_false(tg_schedule_concurrent(s, 2, 2));
  /* Branches: trunk {0,5,6,7}, left arm {1,2}, right arm {3,4}. */
  uint32_t trunk = tg_schedule_get_branch(s, 0);
  assert_int_equal(trunk, 0);
  assert_int_equal(tg_schedule_get_trunk(s), 0);
  assert_int_equal(tg_schedule_get_branch(s, 1), 1);
  assert_int_equal(tg_schedule_get_branch(s, 2), 1);
  assert_int_equal(tg_schedule_get_branch(s, 3), 2);
  assert_int_equal(tg_schedule_get_branch(s, 4), 2);
  for (size_t i = 5; i < 8; ++i) assert_int_equal(tg_schedule_get_branch(s, i), trunk);
  assert_int_equal(tg_schedule_get_branch(s, 8), TG_SCHEDULE_NONE);
  size_t n = 0;
  const uint32_t *pred = tg_schedule_get_predecessors(s, 5, &n);
  assert_int_equal(n, 2);
  assert_int_equal(pred[0], 2);
  assert_int_equal(pred[1], 4);

  graph_records r;
  records_make(g, &r);
  assert_int_equal(r.count, 7);
  assert_pairs(s, &r, TG_POLICY_SERIAL, "1-5 1-6 1-7 2-4 2-5 2-6 2-7 3-7 4-6 4-7 5-7");
  assert_pairs(s, &r, TG_POLICY_PARALLEL_SAFE, "1-6 1-7 2-6 2-7 3-7 4-6 4-7 5-7");
  assert_pairs(s, &r, TG_POLICY_BRANCH_LOCAL, "1-6 1-7");

  /* t4 (right arm) takes t2's memory (left arm): op 3 must wait for op 2; op 1 -> op 3 is
   * implied through op 2. */
  static const uint32_t share[][2] = {{2, 4}};
  for (int mode = 0; mode < 2; ++mode) {
    tg_plan *p = hand_plan(&r, (tg_mode)mode, share, 1);
    tg_waits *w = waits_make(s, &r, p);
    assert_reuse_edges(w, g, "2->3(t4/t2)");
    assert_int_equal(w->sharing_pairs, 1);
    assert_int_equal(w->unsafe_pairs, 1);
    assert_int_equal(w->critical_path, 6);
    assert_int_equal(w->critical_path_with_reuse, 8);
    assert_int_equal(w->after_start[5 + 1] - w->after_start[5], 2);
    if (mode == TG_MODE_OBJECTS) {
      char *json = NULL;
      size_t len = 0;
      assert_int_equal(tg_schedule_build_json(s, g, w, NULL, &json, &len), TG_OK);
      assert_string_equal(
          json,
          "{\"ops\":8,\"folded\":[],\"waves\":[[0],[1,3],[2,4],[5],[6],[7]],\"waits\":["
          "{\"op\":0,\"after\":[],\"reuse_edges\":[]},"
          "{\"op\":1,\"after\":[0],\"reuse_edges\":[]},"
          "{\"op\":2,\"after\":[1],\"reuse_edges\":[]},"
          "{\"op\":3,\"after\":[0],\"reuse_edges\":[{\"after\":2,\"tensor\":\"t4\",\"reuses\":\"t2\"}]},"
          "{\"op\":4,\"after\":[3],\"reuse_edges\":[]},"
          "{\"op\":5,\"after\":[2,4],\"reuse_edges\":[]},"
          "{\"op\":6,\"after\":[5],\"reuse_edges\":[]},"
          "{\"op\":7,\"after\":[6],\"reuse_edges\":[]}],"
          "\"critical_path\":6,\"critical_path_with_reuse\":8,\"max_wave_width\":2,"
          "\"branches\":3,\"reuse_edge_count\":1}");
      assert_int_equal(len, strlen(json));
      tg_schedule_free_json(NULL, json);
    }
    /* The same as the lists an engine's runtime and the check take: graph edges first, then
     * (with reuse) op 3's wait for op 2. */
    for (int with_reuse = 0; with_reuse < 2; ++with_reuse) {
      tg_wait_lists *l = NULL;
      assert_int_equal(tg_wait_lists_create(w, with_reuse, NULL, &l), TG_OK);
      assert_int_equal(l->op_count, 8);
      static const char *const want[2][8] = {{"", "0", "1", "0", "3", "2,4", "5", "6"},
                                             {"", "0", "1", "0,2", "3", "2,4", "5", "6"}};
      for (size_t o = 0; o < 8; ++o) {
        char got[64];
        size_t at = 0;
        got[0] = '\0';
        for (uint32_t k = 0; k < l->counts[o]; ++k)
          at += (size_t)snprintf(got + at, sizeof got - at, "%s%u", k ? "," : "", l->lists[o][k]);
        assert_string_equal(got, want[with_reuse][o]);
      }
      tg_wait_lists_destroy(l);
      /* Every allocation failing: a clean failure. */
      tg_failing_allocator fa;
      tg_failing_allocator_init(&fa, NULL, 1);
      l = (tg_wait_lists *)1;
      assert_int_equal(tg_wait_lists_create(w, with_reuse, &fa.base, &l), TG_ERROR_OUT_OF_HOST_MEMORY);
      assert_null(l);
    }
    tg_wait_lists *none = (tg_wait_lists *)1;
    assert_int_equal(tg_wait_lists_create(NULL, 0, NULL, &none), TG_ERROR_INVALID_ARGUMENT);
    assert_null(none);
    tg_wait_lists_destroy(NULL);
    tg_waits_destroy(w);
    tg_plan_destroy(p);
  }
  /* t1 -> t6: every op touching t1 (0, 1, 3) already happens before op 5. */
  static const uint32_t safe[][2] = {{1, 6}};
  tg_plan *p = hand_plan(&r, TG_MODE_OBJECTS, safe, 1);
  tg_waits *w = waits_make(s, &r, p);
  assert_int_equal(w->reuse_edge_count, 0);
  assert_int_equal(w->sharing_pairs, 1);
  assert_int_equal(w->unsafe_pairs, 0);
  assert_int_equal(w->critical_path_with_reuse, 6);
  tg_waits_destroy(w);
  tg_plan_destroy(p);
  /* Sharing between records whose intervals intersect is an invalid plan. */
  static const uint32_t bad[][2] = {{1, 2}};
  p = hand_plan(&r, TG_MODE_OBJECTS, bad, 1);
  tg_error_info err = {{0}};
  w = (tg_waits *)1;
  assert_int_equal(tg_schedule_compute_waits(s, r.records, r.tensor_of, r.count, p, NULL, &w, &err),
                   TG_ERROR_INVALID_PLAN);
  assert_null(w);
  assert_non_null(strstr(err.message, "intersect"));
  tg_plan_destroy(p);

  records_free(&r);
  tg_schedule_destroy(s);
  tg_graph_destroy(g);
}

/* An inception block: four branches of one or two ops joined by a concat. */
static const char *const k_inception[] = {"0>1", "1>2", "1>3", "3>4", "1>5",
                                          "5>6", "1>7", "7>8", "2,4,6,8>9", "9>10"};

static void inception(void **state) {
  (void)state;
  tg_graph *g = graph_from_spec(k_inception, 10, 1);
  tg_schedule *s = schedule_make(g);
  tg_schedule_stats st;
  tg_schedule_get_stats(s, &st);
  assert_int_equal(st.critical_path, 5);
  assert_int_equal(st.max_wave_width, 4);
  assert_int_equal(st.branch_count, 5);
  assert_waves(s, "[0] [1,2,4,6] [3,5,7] [8] [9]");
  static const uint32_t branch[10] = {0, 1, 2, 2, 3, 3, 4, 4, 0, 0};
  for (size_t i = 0; i < 10; ++i) assert_int_equal(tg_schedule_get_branch(s, i), branch[i]);
  for (size_t a = 1; a < 8; ++a)
    for (size_t b = 1; b < 8; ++b) {
      int same = branch[a] == branch[b];
      assert_int_equal(tg_schedule_concurrent(s, a, b), !same);
      assert_int_equal(tg_schedule_happens_before(s, a, b), same && a < b);
    }

  graph_records r;
  records_make(g, &r);
  assert_pairs(s, &r, TG_POLICY_SERIAL, "1-8 1-9 3-5 3-6 3-7 3-8 3-9 5-7 5-8 5-9 7-9");
  assert_pairs(s, &r, TG_POLICY_PARALLEL_SAFE, "1-9 3-9 5-9 7-9");
  assert_pairs(s, &r, TG_POLICY_BRANCH_LOCAL, "1-9");

  /* A serial chain of reuse through three branches: t3 -> t5 -> t7 in one object. Pairs are
   * consecutive users: op 3 -> op 4 and op 5 -> op 6 (op 2 -> op 4 is implied via op 3). */
  static const uint32_t share[][2] = {{3, 5}, {3, 7}};
  for (int mode = 0; mode < 2; ++mode) {
    tg_plan *p = hand_plan(&r, (tg_mode)mode, share, 2);
    tg_waits *w = waits_make(s, &r, p);
    /* Offsets mode also pairs t3 with t7 directly; its edges are implied by the others. */
    assert_reuse_edges(w, g, "3->4(t5/t3) 5->6(t7/t5)");
    assert_int_equal(w->critical_path_with_reuse, 9);
    assert_int_equal(w->sharing_pairs, mode == TG_MODE_OBJECTS ? 2 : 3);
    tg_waits_destroy(w);
    tg_plan_destroy(p);
  }
  records_free(&r);
  tg_schedule_destroy(s);
  tg_graph_destroy(g);
}

/* Residual blocks: every op is ordered with every other, so all policies agree. */
static const char *const k_residual[] = {"0>1", "1>2", "2>3", "1,3>4", "4>5", "5>6", "4,6>7", "7>8"};

static void residual_chain(void **state) {
  (void)state;
  tg_graph *g = graph_from_spec(k_residual, 8, 1);
  tg_schedule *s = schedule_make(g);
  tg_schedule_stats st;
  tg_schedule_get_stats(s, &st);
  assert_int_equal(st.critical_path, 8);
  assert_int_equal(st.max_wave_width, 1);
  assert_int_equal(st.branch_count, 1);
  assert_waves(s, "[0] [1] [2] [3] [4] [5] [6] [7]");
  for (size_t a = 0; a < 8; ++a)
    for (size_t b = 0; b < 8; ++b) assert_int_equal(tg_schedule_happens_before(s, a, b), a < b);
  graph_records r;
  records_make(g, &r);
  const char *all = "1-5 1-6 1-7 2-4 2-5 2-6 2-7 3-5 3-6 3-7 5-7";
  assert_pairs(s, &r, TG_POLICY_SERIAL, all);
  assert_pairs(s, &r, TG_POLICY_PARALLEL_SAFE, all);
  assert_pairs(s, &r, TG_POLICY_BRANCH_LOCAL, all);
  records_free(&r);
  tg_schedule_destroy(s);
  tg_graph_destroy(g);
}

/* Two heads on one trunk. */
static const char *const k_heads[] = {"0>1", "1>2", "2>3", "3>4", "2>5", "5>6", "6>7"};

static void two_heads(void **state) {
  (void)state;
  tg_graph *g = graph_from_spec(k_heads, 7, 1);
  tg_schedule *s = schedule_make(g);
  tg_schedule_stats st;
  tg_schedule_get_stats(s, &st);
  assert_int_equal(st.critical_path, 5);
  assert_int_equal(st.max_wave_width, 2);
  assert_int_equal(st.branch_count, 3);
  assert_waves(s, "[0] [1] [2,4] [3,5] [6]");
  static const uint32_t branch[7] = {0, 0, 1, 1, 2, 2, 2};
  for (size_t i = 0; i < 7; ++i) assert_int_equal(tg_schedule_get_branch(s, i), branch[i]);
  graph_records r;
  records_make(g, &r);
  assert_int_equal(r.count, 5);
  assert_pairs(s, &r, TG_POLICY_SERIAL, "1-3 1-5 1-6 2-6 3-5 3-6");
  assert_pairs(s, &r, TG_POLICY_PARALLEL_SAFE, "1-3 1-5 1-6");
  assert_pairs(s, &r, TG_POLICY_BRANCH_LOCAL, "");

  static const uint32_t share[][2] = {{3, 6}};
  tg_plan *p = hand_plan(&r, TG_MODE_OBJECTS, share, 1);
  tg_waits *w = waits_make(s, &r, p);
  assert_reuse_edges(w, g, "3->5(t6/t3)");
  assert_int_equal(w->critical_path_with_reuse, 6);
  tg_waits_destroy(w);
  tg_plan_destroy(p);

  /* A trunk tensor handed to a head: already ordered. */
  static const uint32_t trunk_share[][2] = {{1, 6}};
  p = hand_plan(&r, TG_MODE_OFFSETS, trunk_share, 1);
  w = waits_make(s, &r, p);
  assert_int_equal(w->reuse_edge_count, 0);
  assert_int_equal(w->sharing_pairs, 1);
  tg_waits_destroy(w);
  tg_plan_destroy(p);
  records_free(&r);
  tg_schedule_destroy(s);
  tg_graph_destroy(g);
}

/* Graph inputs and outputs planned too (plan_io): inputs are written before the run, outputs
 * read after it. */
static void io_records(void **state) {
  (void)state;
  tg_graph *g = graph_from_spec(k_heads, 7, 1);
  tg_schedule *s = schedule_make(g);
  /* Records: input t0 [0,0], t1 [0,1], t2 [1,4], t3, output t4, t5, t6, output t7. */
  uint32_t tensor_of[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  tg_policy_relation *pr = NULL;
  assert_int_equal(tg_policy_relation_create(s, TG_POLICY_PARALLEL_SAFE, tensor_of, 8, NULL, &pr),
                   TG_OK);
  const tg_share_relation *rel = tg_policy_relation_get(pr);
  /* The input, read by op 0 only, may go to anything op 0 happens before... */
  assert_true(rel->may_share(rel->user, 0, 2));
  assert_true(rel->may_share(rel->user, 0, 7));
  /* An output is read after every op: nothing may take its memory. */
  assert_false(rel->may_share(rel->user, 4, 6));
  assert_false(rel->may_share(rel->user, 4, 7));
  /* ...but it may take memory whose ops are done: t1 (ops 0, 1) before op 3. */
  assert_true(rel->may_share(rel->user, 1, 4));
  tg_policy_relation_destroy(pr);

  assert_int_equal(tg_policy_relation_create(s, TG_POLICY_BRANCH_LOCAL, tensor_of, 8, NULL, &pr),
                   TG_OK);
  rel = tg_policy_relation_get(pr);
  /* The input counts as trunk: it may go to the trunk's t2... */
  assert_true(rel->may_share(rel->user, 0, 2));
  /* ...not to a head's tensor. */
  assert_false(rel->may_share(rel->user, 0, 3));
  tg_policy_relation_destroy(pr);

  uint32_t bad[1] = {99};
  pr = (tg_policy_relation *)1;
  assert_int_equal(tg_policy_relation_create(s, TG_POLICY_PARALLEL_SAFE, bad, 1, NULL, &pr),
                   TG_ERROR_INVALID_ARGUMENT);
  assert_null(pr);
  tg_schedule_destroy(s);
  tg_graph_destroy(g);
}

static void policy_names(void **state) {
  (void)state;
  static const char *const names[] = {"serial", "parallel-safe", "branch-local"};
  for (int p = 0; p < TG_POLICY_COUNT; ++p) {
    assert_string_equal(tg_policy_name((tg_policy)p), names[p]);
    tg_policy got = TG_POLICY_COUNT;
    assert_int_equal(tg_policy_from_name(names[p], &got), TG_OK);
    assert_int_equal(got, p);
  }
  assert_null(tg_policy_name(TG_POLICY_COUNT));
  tg_policy got = TG_POLICY_SERIAL;
  assert_int_equal(tg_policy_from_name("parallel", &got), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_policy_from_name(NULL, &got), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(got, TG_POLICY_SERIAL);
}

static void not_topological(void **state) {
  (void)state;
  static const char *const read_early[] = {"0>1", "2>3", "1>2"};
  tg_graph *g = graph_from_spec(read_early, 3, 1);
  tg_schedule *s = (tg_schedule *)1;
  tg_error_info err = {{0}};
  assert_int_equal(tg_schedule_create(g, NULL, NULL, &s, &err), TG_ERROR_GRAPH);
  assert_null(s);
  assert_non_null(strstr(err.message, "op 1 (op1)"));
  tg_graph_destroy(g);

  static const char *const twice[] = {"0>1", "1>2", "1>2"};
  g = graph_from_spec(twice, 3, 1);
  assert_int_equal(tg_schedule_create(g, NULL, NULL, &s, &err), TG_ERROR_GRAPH);
  assert_non_null(strstr(err.message, "op 2 (op2)"));
  tg_graph_destroy(g);

  static const char *const self[] = {"0>1", "1,2>2"};
  g = graph_from_spec(self, 2, 1);
  assert_int_equal(tg_schedule_create(g, NULL, NULL, &s, &err), TG_ERROR_GRAPH);
  assert_non_null(strstr(err.message, "op 1 (op1)"));
  tg_graph_destroy(g);

  assert_int_equal(tg_schedule_create(NULL, NULL, NULL, &s, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_schedule_create(NULL, NULL, NULL, NULL, &err), TG_ERROR_INVALID_ARGUMENT);
}

/* Ops computing only from constants run at load time: outside the waves. */
static void folded_constants(void **state) {
  (void)state;
  /* t1 is a weight; op 0 dequantizes it; op 1 reads the input and the weight; optional
   * input absent (-1) on op 2. */
  static const char *const spec[] = {"1>2", "0,2>3", "3,-1>4"};
  tg_graph *g = graph_from_spec(spec, 3, 1);
  static const uint32_t input[1] = {0}, output[1] = {4};
  static const int64_t shape[1] = {16};
  assert_int_equal(tg_graph_set_tensor(g, 1, "t1", 1, shape, TG_DTYPE_FLOAT32, TG_TENSOR_CONSTANT),
                   TG_OK);
  assert_int_equal(tg_graph_set_io(g, 1, input, 1, output), TG_OK);
  tg_schedule *s = schedule_make(g);
  tg_schedule_stats st;
  tg_schedule_get_stats(s, &st);
  assert_int_equal(st.folded_count, 1);
  assert_int_equal(st.critical_path, 2);
  assert_int_equal(st.edge_count, 1);
  assert_waves(s, "[1] [2]");
  assert_int_equal(tg_schedule_get_wave_of(s, 0), TG_SCHEDULE_NONE);
  assert_int_equal(tg_schedule_get_branch(s, 0), TG_SCHEDULE_NONE);
  assert_true(tg_schedule_happens_before(s, 0, 1));
  assert_false(tg_schedule_concurrent(s, 0, 2));
  size_t n = 9;
  tg_schedule_get_predecessors(s, 1, &n);
  assert_int_equal(n, 0);
  char *json = NULL;
  assert_int_equal(tg_schedule_build_json(s, g, NULL, NULL, &json, NULL), TG_OK);
  assert_non_null(strstr(json, "\"folded\":[0],\"waves\":[[1],[2]]"));
  tg_schedule_free_json(NULL, json);
  /* The folded op has no waits either way (the contract of tg_wait_lists_create): op 1 does
   * not wait for op 0, which runs at load time. */
  graph_records r;
  records_make(g, &r);
  tg_plan *p = hand_plan(&r, TG_MODE_OBJECTS, NULL, 0);
  tg_waits *w = waits_make(s, &r, p);
  tg_wait_lists *l = NULL;
  assert_int_equal(tg_wait_lists_create(w, 1, NULL, &l), TG_OK);
  assert_int_equal(l->op_count, 3);
  assert_int_equal(l->counts[0], 0);
  assert_int_equal(l->counts[1], 0);
  assert_int_equal(l->counts[2], 1);
  assert_int_equal(l->lists[2][0], 1);
  tg_wait_lists_destroy(l);
  tg_waits_destroy(w);
  tg_plan_destroy(p);
  records_free(&r);
  tg_schedule_destroy(s);

  tg_schedule_options keep = {1};
  assert_int_equal(tg_schedule_create(g, &keep, NULL, &s, NULL), TG_OK);
  tg_schedule_get_stats(s, &st);
  assert_int_equal(st.folded_count, 0);
  assert_waves(s, "[0] [1] [2]");
  tg_schedule_destroy(s);
  tg_graph_destroy(g);
}

static void empty_graph(void **state) {
  (void)state;
  tg_graph *g = NULL;
  assert_int_equal(tg_graph_create(0, 0, NULL, &g), TG_OK);
  tg_schedule *s = schedule_make(g);
  tg_schedule_stats st;
  tg_schedule_get_stats(s, &st);
  assert_int_equal(st.op_count, 0);
  assert_int_equal(st.critical_path, 0);
  assert_int_equal(st.max_wave_width, 0);
  size_t n = 7;
  assert_null(tg_schedule_get_wave(s, 0, &n));
  assert_int_equal(n, 0);
  tg_policy_relation *pr = NULL;
  assert_int_equal(tg_policy_relation_create(s, TG_POLICY_BRANCH_LOCAL, NULL, 0, NULL, &pr), TG_OK);
  tg_policy_relation_destroy(pr);
  tg_plan *p = NULL;
  assert_int_equal(tg_plan_create(TG_MODE_OBJECTS, 1, 0, 0, NULL, &p), TG_OK);
  tg_waits *w = NULL;
  assert_int_equal(tg_schedule_compute_waits(s, NULL, NULL, 0, p, NULL, &w, NULL), TG_OK);
  assert_int_equal(w->reuse_edge_count, 0);
  char *json = NULL;
  assert_int_equal(tg_schedule_build_json(s, g, w, NULL, &json, NULL), TG_OK);
  assert_string_equal(json,
                      "{\"ops\":0,\"folded\":[],\"waves\":[],\"waits\":[],\"critical_path\":0,"
                      "\"critical_path_with_reuse\":0,\"max_wave_width\":0,\"branches\":0,"
                      "\"reuse_edge_count\":0}");
  tg_schedule_free_json(NULL, json);
  tg_waits_destroy(w);
  tg_plan_destroy(p);
  tg_schedule_destroy(s);
  tg_graph_destroy(g);
  tg_schedule_destroy(NULL);
  tg_policy_relation_destroy(NULL);
  tg_waits_destroy(NULL);
  tg_schedule_free_json(NULL, NULL);
}

/* ---- TFLite's reallocation graph (types_test) ------------------------------------------- */

/* deps[i] lists the tensors computed from tensor i. As a graph: op i writes tensor i and reads
 * every tensor j with i in deps[j]. TFLite's answer for i lists the tensors that may reuse
 * tensor i's memory or whose memory tensor i may reuse: the parallel-safe pairs. */
static void check_reallocation(const int (*deps)[4], size_t n, const char *const *expected) {
  char specs[16][64];
  const char *ops[16];
  for (size_t i = 0; i < n; ++i) {
    size_t at = 0;
    specs[i][0] = '\0';
    for (size_t j = 0; j < n; ++j)
      for (int k = 0; k < 4 && deps[j][k] >= 0; ++k)
        if ((size_t)deps[j][k] == i)
          at += (size_t)snprintf(specs[i] + at, sizeof specs[i] - at, "%s%zu", at ? "," : "", j);
    if (at == 0) at += (size_t)snprintf(specs[i], sizeof specs[i], "%zu", n); /* graph input */
    snprintf(specs[i] + at, sizeof specs[i] - at, ">%zu", i);
    ops[i] = specs[i];
  }
  tg_graph *g = graph_from_spec(ops, n, 0);
  tg_schedule *s = schedule_make(g);
  uint32_t tensor_of[16];
  for (size_t i = 0; i < n; ++i) tensor_of[i] = (uint32_t)i;
  tg_policy_relation *pr = NULL;
  assert_int_equal(tg_policy_relation_create(s, TG_POLICY_PARALLEL_SAFE, tensor_of, n, NULL, &pr),
                   TG_OK);
  const tg_share_relation *rel = tg_policy_relation_get(pr);
  for (size_t i = 0; i < n; ++i) {
    char got[128];
    size_t at = 0;
    got[0] = '\0';
    for (size_t j = 0; j < n; ++j)
      if (j != i && rel->may_share(rel->user, i, j))
        at += (size_t)snprintf(got + at, sizeof got - at, "%s%zu", at ? "," : "", j);
    if (strcmp(got, expected[i]) != 0)
      fail_msg("tensor %zu: may share with [%s], TFLite says [%s]", i, got, expected[i]);
  }
  tg_policy_relation_destroy(pr);
  tg_schedule_destroy(s);
  tg_graph_destroy(g);
}

static void tflite_reallocation_graph(void **state) {
  (void)state;
  static const int two[][4] = {{1, -1}, {-1}};
  static const char *const two_expected[] = {"", ""};
  check_reallocation(two, 2, two_expected);

  static const int chain[][4] = {{1, -1}, {2, -1}, {3, -1}, {4, -1}, {-1}};
  static const char *const chain_expected[] = {"2,3,4", "3,4", "0,4", "0,1", "0,1,2"};
  check_reallocation(chain, 5, chain_expected);

  static const int complex[][4] = {{1, -1},    {2, 3, 4, -1}, {7, -1},  {5, -1},
                                   {7, -1},    {6, -1},       {7, -1},  {8, 9, -1},
                                   {10, -1},   {10, -1},      {11, -1}, {-1}};
  static const char *const complex_expected[] = {
      "2,3,4,5,6,7,8,9,10,11", "7,8,9,10,11",   "0,8,9,10,11",     "0,6,7,8,9,10,11",
      "0,8,9,10,11",           "0,7,8,9,10,11", "0,3,8,9,10,11",   "0,1,3,5,10,11",
      "0,1,2,3,4,5,6,11",      "0,1,2,3,4,5,6,11", "0,1,2,3,4,5,6,7", "0,1,2,3,4,5,6,7,8,9"};
  check_reallocation(complex, 12, complex_expected);
}

/* ---- allocation failures ---------------------------------------------------------------- */

static void allocation_failures(void **state) {
  (void)state;
  tg_graph *g = graph_from_spec(k_diamond, 8, 1);
  graph_records r;
  records_make(g, &r);
  static const uint32_t share[][2] = {{2, 4}};
  int succeeded = 0;
  for (int mode = 0; mode < 2; ++mode) {
    tg_plan *p = hand_plan(&r, (tg_mode)mode, share, 1);
    for (uint64_t fail_at = 1; fail_at < 200 && !succeeded; ++fail_at) {
      tg_failing_allocator fa;
      tg_failing_allocator_init(&fa, NULL, fail_at);
      tg_schedule *s = NULL;
      tg_policy_relation *pr = NULL;
      tg_waits *w = NULL;
      char *json = NULL;
      tg_status st = tg_schedule_create(g, NULL, &fa.base, &s, NULL);
      if (st == TG_OK)
        st = tg_policy_relation_create(s, TG_POLICY_BRANCH_LOCAL, r.tensor_of, r.count, &fa.base, &pr);
      if (st == TG_OK)
        st = tg_schedule_compute_waits(s, r.records, r.tensor_of, r.count, p, &fa.base, &w, NULL);
      if (st == TG_OK) st = tg_schedule_build_json(s, g, w, &fa.base, &json, NULL);
      if (st == TG_OK) {
        succeeded = fa.failures == 0;
      } else {
        assert_int_equal(st, TG_ERROR_OUT_OF_HOST_MEMORY);
        assert_int_equal(fa.failures, 1);
      }
      tg_schedule_free_json(&fa.base, json);
      tg_waits_destroy(w);
      tg_policy_relation_destroy(pr);
      tg_schedule_destroy(s);
      assert_int_equal(fa.live_blocks, 0);
    }
    assert_true(succeeded);
    succeeded = 0;
    tg_plan_destroy(p);
  }
  records_free(&r);
  tg_graph_destroy(g);
}

/* ---- properties over random DAGs -------------------------------------------------------- */

/* A random DAG: ops read 1-3 earlier tensors (mostly recent ones: chains; sometimes any:
 * joins and long skips; sometimes only the graph input: new branches) and write 1-2. */
static tg_graph *random_graph(tg_test_rng *rng, size_t ops) {
  int32_t(*in)[3] = calloc(ops + 1, sizeof *in), (*out)[2] = calloc(ops + 1, sizeof *out);
  uint32_t *nin = calloc(ops + 1, sizeof *nin), *nout = calloc(ops + 1, sizeof *nout);
  uint8_t *read = calloc(2 * ops + 2, 1);
  size_t tensors = 1; /* tensor 0: the graph input */
  for (size_t i = 0; i < ops; ++i) {
    nin[i] = (uint32_t)tg_test_rng_range(rng, 1, 3);
    uint64_t kind = tg_test_rng_range(rng, 0, 9);
    for (uint32_t k = 0; k < nin[i]; ++k) {
      uint64_t t;
      if (kind == 0) t = 0;
      else if (kind < 7) t = tensors - 1 - tg_test_rng_range(rng, 0, tensors - 1 < 3 ? tensors - 1 : 3);
      else t = tg_test_rng_range(rng, 0, tensors - 1);
      in[i][k] = (int32_t)t;
      read[t] = 1;
    }
    nout[i] = tg_test_rng_range(rng, 0, 5) == 0 ? 2 : 1;
    for (uint32_t k = 0; k < nout[i]; ++k) out[i][k] = (int32_t)tensors++;
  }
  tg_graph *g = NULL;
  assert_int_equal(tg_graph_create(tensors, ops, NULL, &g), TG_OK);
  for (size_t i = 0; i < ops; ++i) {
    char name[32];
    snprintf(name, sizeof name, "op%zu", i);
    assert_int_equal(tg_graph_set_op(g, i, name, nin[i], in[i], nout[i], out[i]), TG_OK);
  }
  uint32_t *outputs = calloc(tensors, sizeof *outputs), input = 0;
  size_t no = 0;
  for (size_t t = 0; t < tensors; ++t) {
    char name[32];
    snprintf(name, sizeof name, "t%zu", t);
    int64_t shape[1] = {(int64_t)tg_test_rng_range(rng, 1, 64)};
    assert_int_equal(tg_graph_set_tensor(g, t, name, 1, shape, TG_DTYPE_FLOAT32, 0), TG_OK);
    if (t > 0 && !read[t]) outputs[no++] = (uint32_t)t;
  }
  assert_int_equal(tg_graph_set_io(g, 1, &input, no, outputs), TG_OK);
  free(outputs);
  free(read);
  free(in);
  free(out);
  free(nin);
  free(nout);
  return g;
}

/* Reachability by plain depth-first search over adjacency lists built from the graph (no
 * bitsets, no op-order tricks): reach[a * n + b] = 1 when a path leads from op a to op b.
 * `extra` adds edges (after, op) except the one at index `skip_extra`. */
static uint8_t *dfs_reach(const tg_graph *g, const uint32_t (*extra)[2], size_t extra_count,
                          size_t skip_extra) {
  size_t n = g->op_count;
  int32_t *producer = malloc((g->tensor_count + 1) * sizeof *producer);
  for (size_t t = 0; t < g->tensor_count; ++t) producer[t] = -1;
  for (size_t i = 0; i < n; ++i)
    for (uint32_t k = 0; k < g->ops[i].output_count; ++k) producer[g->ops[i].outputs[k]] = (int32_t)i;
  /* Edge list (from, to), duplicates allowed. */
  size_t max_edges = extra_count + 1;
  for (size_t i = 0; i < n; ++i) max_edges += g->ops[i].input_count;
  size_t *from = malloc(max_edges * sizeof *from), *to = malloc(max_edges * sizeof *to), m = 0;
  for (size_t i = 0; i < n; ++i)
    for (uint32_t k = 0; k < g->ops[i].input_count; ++k) {
      int32_t t = g->ops[i].inputs[k];
      if (t >= 0 && producer[t] >= 0) {
        from[m] = (size_t)producer[t];
        to[m++] = i;
      }
    }
  for (size_t e = 0; e < extra_count; ++e)
    if (e != skip_extra) {
      from[m] = extra[e][0];
      to[m++] = extra[e][1];
    }
  size_t *start = calloc(n + 2, sizeof *start), *adj = malloc((m + 1) * sizeof *adj);
  for (size_t e = 0; e < m; ++e) start[from[e] + 1]++;
  for (size_t i = 0; i < n; ++i) start[i + 1] += start[i];
  size_t *fill = calloc(n + 1, sizeof *fill);
  for (size_t e = 0; e < m; ++e) adj[start[from[e]] + fill[from[e]]++] = to[e];
  uint8_t *reach = calloc(n * n + 1, 1);
  size_t *stack = malloc((n + 1) * sizeof *stack);
  for (size_t src = 0; src < n; ++src) {
    size_t top = 0;
    stack[top++] = src;
    while (top > 0) {
      size_t v = stack[--top];
      for (size_t e = start[v]; e < start[v + 1]; ++e) {
        size_t j = adj[e];
        if (!reach[src * n + j]) {
          reach[src * n + j] = 1;
          stack[top++] = j;
        }
      }
    }
  }
  free(stack);
  free(fill);
  free(start);
  free(adj);
  free(from);
  free(to);
  free(producer);
  return reach;
}

/* Ops touching tensor t (producer and readers), from the graph directly. */
static size_t touching_ops(const tg_graph *g, uint32_t t, uint32_t *out, int32_t *producer) {
  size_t n = 0;
  *producer = -1;
  for (size_t i = 0; i < g->op_count; ++i) {
    int touch = 0;
    for (uint32_t k = 0; k < g->ops[i].output_count; ++k)
      if (g->ops[i].outputs[k] == (int32_t)t) {
        touch = 1;
        *producer = (int32_t)i;
      }
    for (uint32_t k = 0; k < g->ops[i].input_count; ++k)
      if (g->ops[i].inputs[k] == (int32_t)t) touch = 1;
    if (touch) out[n++] = (uint32_t)i;
  }
  return n;
}

static int records_share(const tg_plan *p, const tg_usage_record *rec, size_t a, size_t b) {
  if (p->mode == TG_MODE_OBJECTS) return p->object_of[a] == p->object_of[b];
  uint64_t sa = rec[a].size.w, sb = rec[b].size.w;
  if (sa == 0 || sb == 0) return 0;
  return p->offset_of[a] < p->offset_of[b] + sb && p->offset_of[b] < p->offset_of[a] + sa;
}

/* Every pair sharing memory is ordered by `reach`: all ops touching the earlier record reach
 * the later record's producer. Returns the number of sharing pairs. */
static size_t check_sharing_ordered(const tg_graph *g, const graph_records *r, const tg_plan *p,
                                    const uint8_t *reach, const char *what) {
  size_t n = g->op_count, pairs = 0;
  uint32_t *touch = malloc((n + 1) * sizeof *touch), *touch_b = malloc((n + 1) * sizeof *touch_b);
  for (size_t a = 0; a < r->count; ++a)
    for (size_t b = 0; b < r->count; ++b) {
      if (a == b || !records_share(p, r->records, a, b)) continue;
      if (r->records[a].last_task >= r->records[b].first_task) continue; /* a first */
      ++pairs;
      int32_t pa, pb;
      size_t m = touching_ops(g, r->tensor_of[a], touch, &pa);
      touching_ops(g, r->tensor_of[b], touch_b, &pb);
      if (pb < 0) fail_msg("%s: record %zu has no producer but comes second", what, b);
      for (size_t k = 0; k < m; ++k)
        if (!reach[touch[k] * n + (size_t)pb])
          fail_msg("%s: t%u and t%u share memory but op %u does not happen before op %d", what,
                   r->tensor_of[a], r->tensor_of[b], touch[k], pb);
    }
  free(touch);
  free(touch_b);
  return pairs;
}

typedef struct plan_case {
  tg_mode mode;
  tg_strategy strategy;
  tg_fit fit;
} plan_case;

static const plan_case k_cases[] = {
    {TG_MODE_OBJECTS, TG_STRATEGY_NAIVE, TG_FIT_BEST},
    {TG_MODE_OBJECTS, TG_STRATEGY_EQUALITY, TG_FIT_BEST},
    {TG_MODE_OBJECTS, TG_STRATEGY_GREEDY_IN_ORDER, TG_FIT_BEST},
    {TG_MODE_OBJECTS, TG_STRATEGY_GREEDY_BY_BREADTH, TG_FIT_BEST},
    {TG_MODE_OBJECTS, TG_STRATEGY_GREEDY_BY_SIZE, TG_FIT_BEST},
    {TG_MODE_OBJECTS, TG_STRATEGY_MIN_COST_FLOW, TG_FIT_BEST},
    {TG_MODE_OBJECTS, TG_STRATEGY_BEST, TG_FIT_BEST},
    {TG_MODE_OFFSETS, TG_STRATEGY_NAIVE, TG_FIT_BEST},
    {TG_MODE_OFFSETS, TG_STRATEGY_GREEDY_IN_ORDER, TG_FIT_BEST},
    {TG_MODE_OFFSETS, TG_STRATEGY_GREEDY_IN_ORDER, TG_FIT_FIRST},
    {TG_MODE_OFFSETS, TG_STRATEGY_GREEDY_IN_ORDER, TG_FIT_WORST},
    {TG_MODE_OFFSETS, TG_STRATEGY_GREEDY_BY_BREADTH, TG_FIT_BEST},
    {TG_MODE_OFFSETS, TG_STRATEGY_GREEDY_BY_SIZE, TG_FIT_BEST},
    {TG_MODE_OFFSETS, TG_STRATEGY_BEST, TG_FIT_BEST},
};

static tg_plan *plan_or_fail(const graph_records *r, const plan_case *c,
                             const tg_share_relation *rel, size_t iteration) {
  tg_plan_options opt = {0};
  opt.mode = c->mode;
  opt.strategy = c->strategy;
  opt.fit = c->fit;
  opt.relation = rel;
  tg_plan *p = NULL;
  tg_status st = tg_plan_compute(r->records, r->count, 1, &opt, NULL, &p);
  if (st != TG_OK)
    fail_msg("dag %zu: %s %s: %s", iteration, tg_mode_name(c->mode), tg_strategy_name(c->strategy),
             tg_status_name(st));
  tg_test_assert_valid(r->records, r->count, 1, p, 0, rel);
  return p;
}

/* Independent branch check: same branch <=> same set of concurrent ops; the trunk is the
 * branch of ops concurrent with nothing. */
static void check_branches(const tg_schedule *s, const uint8_t *reach, size_t n) {
  uint8_t *conc = calloc(n * n + 1, 1);
  size_t *count = calloc(n + 1, sizeof *count);
  for (size_t a = 0; a < n; ++a)
    for (size_t c = 0; c < n; ++c) {
      conc[a * n + c] = c != a && !reach[a * n + c] && !reach[c * n + a];
      count[a] += conc[a * n + c];
    }
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = a + 1; b < n; ++b) {
      int same = memcmp(conc + a * n, conc + b * n, n) == 0;
      if ((tg_schedule_get_branch(s, a) == tg_schedule_get_branch(s, b)) != same)
        fail_msg("ops %zu and %zu: branches %u and %u, same concurrent ops: %d", a, b,
                 tg_schedule_get_branch(s, a), tg_schedule_get_branch(s, b), same);
    }
    assert_int_equal(tg_schedule_get_branch(s, a) == tg_schedule_get_trunk(s), count[a] == 0);
  }
  free(count);
  free(conc);
}

/* The facts a policy relation declares (tg_share_relation.window, .transitive) hold: records
 * whose widened windows are disjoint may share, and sharing chains along time. Returns how
 * many pairs the window vouched for. */
static size_t check_relation_facts(const tg_share_relation *rel, const graph_records *r,
                                   tg_test_rng *rng, size_t it) {
  const tg_usage_record *rec = r->records;
  const size_t n = r->count;
  size_t vouched = 0;
  assert_true(rel->transitive);
  for (size_t a = 0; a < n; ++a)
    for (size_t b = 0; b < n; ++b) {
      if (a == b || rel->window == NULL) continue;
      if (rec[a].first_task <= rec[b].last_task && rec[b].first_task <= rec[a].last_task) continue;
      uint64_t alo, ahi, blo, bhi;
      rel->window(rel->user, a, &alo, &ahi);
      rel->window(rel->user, b, &blo, &bhi);
      if (rec[a].first_task < alo) alo = rec[a].first_task;
      if (rec[a].last_task > ahi) ahi = rec[a].last_task;
      if (rec[b].first_task < blo) blo = rec[b].first_task;
      if (rec[b].last_task > bhi) bhi = rec[b].last_task;
      if (ahi < blo || bhi < alo) {
        ++vouched;
        if (!rel->may_share(rel->user, a, b))
          fail_msg("dag %zu: records %zu and %zu have disjoint windows but may not share", it, a, b);
      }
    }
  /* Transitivity over time-ordered triples: all of them on small sets, a sample on big ones. */
  size_t triples = n <= 40 ? n * n * n : 20000;
  for (size_t k = 0; k < triples; ++k) {
    size_t a, b, c;
    if (n <= 40) {
      a = k / (n * n);
      b = (k / n) % n;
      c = k % n;
    } else {
      a = tg_test_rng_range(rng, 0, n - 1);
      b = tg_test_rng_range(rng, 0, n - 1);
      c = tg_test_rng_range(rng, 0, n - 1);
    }
    if (!(rec[a].last_task < rec[b].first_task && rec[b].last_task < rec[c].first_task)) continue;
    if (rel->may_share(rel->user, a, b) && rel->may_share(rel->user, b, c) &&
        !rel->may_share(rel->user, a, c))
      fail_msg("dag %zu: %zu~%zu and %zu~%zu may share but %zu~%zu may not", it, a, b, b, c, a, c);
  }
  return vouched;
}

static void random_dags(void **state) {
  (void)state;
  tg_test_rng rng = {20240611};
  size_t dags = tg_test_scale(1000, 1500, 5000), shared_pairs = 0, serial_edges = 0, vouched = 0;
  for (size_t it = 0; it < dags; ++it) {
    /* Mostly small graphs (fast, many shapes), some up to 300 ops. */
    size_t ops = (it % 50 == 0) ? tg_test_rng_range(&rng, 100, 300) : tg_test_rng_range(&rng, 1, 40);
    tg_graph *g = random_graph(&rng, ops);
    tg_schedule *s = schedule_make(g);
    uint8_t *reach = dfs_reach(g, NULL, 0, SIZE_MAX);
    size_t n = g->op_count;
    for (size_t a = 0; a < n; ++a)
      for (size_t b = 0; b < n; ++b)
        if (tg_schedule_happens_before(s, a, b) != reach[a * n + b])
          fail_msg("dag %zu: happens_before(%zu, %zu) disagrees with DFS", it, a, b);
    /* Waves: every op after all its predecessors, in the wave right after the latest one. */
    for (size_t b = 0; b < n; ++b) {
      uint32_t want = 0;
      for (size_t a = 0; a < n; ++a)
        if (reach[a * n + b] && tg_schedule_get_wave_of(s, a) + 1 > want)
          want = tg_schedule_get_wave_of(s, a) + 1;
      assert_int_equal(tg_schedule_get_wave_of(s, b), want);
    }
    check_branches(s, reach, n);

    graph_records r;
    records_make(g, &r);
    for (int pol = TG_POLICY_PARALLEL_SAFE; pol <= TG_POLICY_BRANCH_LOCAL; ++pol) {
      /* Branch-local on a sample: it is parallel-safe plus a filter. */
      if (pol == TG_POLICY_BRANCH_LOCAL && it % 10 != 0) continue;
      tg_policy_relation *pr = NULL;
      assert_int_equal(tg_policy_relation_create(s, (tg_policy)pol, r.tensor_of, r.count, NULL, &pr),
                       TG_OK);
      const tg_share_relation *rel = tg_policy_relation_get(pr);
      vouched += check_relation_facts(rel, &r, &rng, it);
      for (size_t c = 0; c < sizeof k_cases / sizeof k_cases[0]; ++c) {
        /* min-cost-flow is quadratic: the big graphs use the others. */
        if (k_cases[c].strategy == TG_STRATEGY_MIN_COST_FLOW && r.count > 80) continue;
        tg_plan *p = plan_or_fail(&r, &k_cases[c], rel, it);
        shared_pairs += check_sharing_ordered(g, &r, p, reach, "parallel plan");
        if (pol == TG_POLICY_BRANCH_LOCAL)
          for (size_t a = 0; a < r.count; ++a)
            for (size_t b = 0; b < r.count; ++b)
              if (a != b && records_share(p, r.records, a, b)) {
                int32_t pa = -1, pb = -1;
                uint32_t touch[1024];
                touching_ops(g, r.tensor_of[a], touch, &pa);
                touching_ops(g, r.tensor_of[b], touch, &pb);
                assert_true(pa >= 0 && pb >= 0);
                assert_int_equal(tg_schedule_get_branch(s, (size_t)pa),
                                 tg_schedule_get_branch(s, (size_t)pb));
              }
        tg_waits *w = waits_make(s, &r, p);
        assert_int_equal(w->reuse_edge_count, 0);
        assert_int_equal(w->unsafe_pairs, 0);
        tg_waits_destroy(w);
        tg_plan_destroy(p);
      }
      tg_policy_relation_destroy(pr);
    }

    /* A serial plan on a parallel runtime: with its reuse edges added, every sharing pair is
     * ordered; no reuse edge is implied by the rest; the critical path matches. */
    for (int mode = 0; mode < 2; ++mode) {
      plan_case c = {(tg_mode)mode, TG_STRATEGY_BEST, TG_FIT_BEST};
      if (n > 150) continue; /* one DFS closure per reuse edge below */
      tg_plan *p = plan_or_fail(&r, &c, NULL, it);
      tg_waits *w = waits_make(s, &r, p);
      size_t e_count = w->reuse_edge_count;
      serial_edges += e_count;
      uint32_t(*extra)[2] = malloc((e_count + 1) * sizeof *extra);
      for (size_t e = 0; e < e_count; ++e) {
        extra[e][0] = w->reuse_edges[e].after;
        extra[e][1] = w->reuse_edges[e].op;
        assert_false(reach[extra[e][0] * n + extra[e][1]]);
      }
      uint8_t *aug = dfs_reach(g, (const uint32_t(*)[2])extra, e_count, SIZE_MAX);
      check_sharing_ordered(g, &r, p, aug, "serial plan with reuse edges");
      for (size_t e = 0; e < e_count && e_count <= 40; ++e) {
        uint8_t *without = dfs_reach(g, (const uint32_t(*)[2])extra, e_count, e);
        if (without[extra[e][0] * n + extra[e][1]])
          fail_msg("dag %zu: reuse edge %u->%u is implied by the others", it, extra[e][0], extra[e][1]);
        free(without);
      }
      /* Longest chain over graph + reuse edges, by DP over the DFS closure's direct edges. */
      size_t *len = calloc(n + 1, sizeof *len), longest = 0;
      for (size_t b = 0; b < n; ++b) {
        len[b] = 1;
        for (size_t a = 0; a < b; ++a)
          if (aug[a * n + b] && len[a] + 1 > len[b]) len[b] = len[a] + 1;
        if (len[b] > longest) longest = len[b];
      }
      assert_int_equal(w->critical_path_with_reuse, longest);
      free(len);
      free(aug);
      free(extra);
      tg_waits_destroy(w);
      tg_plan_destroy(p);
    }
    records_free(&r);
    free(reach);
    tg_schedule_destroy(s);
    tg_graph_destroy(g);
  }
  char msg[200];
  snprintf(msg, sizeof msg, "%zu random DAGs: %zu sharing pairs under parallel policies, %zu reuse edges under serial, %zu pairs vouched for by windows\n",
           dags, shared_pairs, serial_edges, vouched);
  print_message("%s", msg);
  assert_true(shared_pairs > 0);
  assert_true(serial_edges > 0);
  assert_true(vouched > 0);
}

/* ---- the public models ------------------------------------------------------------------ */

static void public_models(void **state) {
  (void)state;
  static const char *const models[] = {"selfie_segmentation.tflite",
                                       "face_detection_short_range.tflite",
                                       "hand_landmark_lite.tflite", "pose_landmark_lite.tflite"};
  for (size_t m = 0; m < sizeof models / sizeof models[0]; ++m) {
    char path[1024];
    if (tg_test_model_path(path, sizeof path, models[m]) == NULL) continue;
    tg_error_info err = {{0}};
    tg_graph *g = NULL;
    if (tg_graph_read_tflite(path, NULL, &g, &err) != TG_OK) fail_msg("%s", err.message);
    tg_schedule *s = schedule_make(g);
    graph_records r;
    records_make(g, &r);
    tg_schedule_stats st;
    tg_schedule_get_stats(s, &st);
    print_message("%s: %zu ops (%zu folded), %zu waves, width %zu, %zu branches, %zu records\n",
                  models[m], st.op_count, st.folded_count, st.critical_path, st.max_wave_width,
                  st.branch_count, r.count);
    for (int pol = 0; pol < TG_POLICY_COUNT; ++pol) {
      tg_policy_relation *pr = NULL;
      assert_int_equal(tg_policy_relation_create(s, (tg_policy)pol, r.tensor_of, r.count, NULL, &pr),
                       TG_OK);
      const tg_share_relation *rel = tg_policy_relation_get(pr);
      uint64_t totals[2];
      size_t edges[2], cp[2];
      for (int mode = 0; mode < 2; ++mode) {
        plan_case c = {(tg_mode)mode, TG_STRATEGY_BEST, TG_FIT_BEST};
        tg_plan *p = plan_or_fail(&r, &c, rel, m);
        tg_waits *w = waits_make(s, &r, p);
        if (pol != TG_POLICY_SERIAL) assert_int_equal(w->reuse_edge_count, 0);
        totals[mode] = p->total;
        edges[mode] = w->reuse_edge_count;
        cp[mode] = w->critical_path_with_reuse;
        tg_waits_destroy(w);
        tg_plan_destroy(p);
      }
      print_message("  %-13s objects %10llu B (%zu reuse edges, critical path %zu -> %zu)   "
                    "offsets %10llu B (%zu reuse edges, critical path %zu -> %zu)\n",
                    tg_policy_name((tg_policy)pol), (unsigned long long)totals[0], edges[0],
                    st.critical_path, cp[0], (unsigned long long)totals[1], edges[1],
                    st.critical_path, cp[1]);
      tg_policy_relation_destroy(pr);
    }
    records_free(&r);
    tg_schedule_destroy(s);
    tg_graph_destroy(g);
  }
}

TG_TEST_MAIN(cmocka_unit_test(diamond), cmocka_unit_test(inception),
             cmocka_unit_test(residual_chain), cmocka_unit_test(two_heads),
             cmocka_unit_test(io_records), cmocka_unit_test(policy_names),
             cmocka_unit_test(not_topological), cmocka_unit_test(folded_constants),
             cmocka_unit_test(empty_graph), cmocka_unit_test(tflite_reallocation_graph),
             cmocka_unit_test(allocation_failures), cmocka_unit_test(random_dags),
             cmocka_unit_test(public_models))
