/* The scheduler: happens-before as one reachability bitset per op, ASAP waves, branches
 * (classes of ops with the same concurrent ops), and the ops-per-tensor facts that the reuse
 * policies (policy.c) and the waits (waits.c) need. */
#include "schedule/schedule_internal.h"

#include "model/model_internal.h"

#include <string.h>

static const char *op_name(const tg_graph *g, size_t op) {
  const char *n = g->ops[op].name;
  return n ? n : "?";
}

static const char *tensor_name(const tg_graph *g, size_t t) {
  const char *n = g->tensors[t].name;
  return n ? n : "?";
}

void tg_schedule_destroy(tg_schedule *s) {
  if (s == NULL) return;
  tg_allocator a = s->alloc;
  tg__free(&a, s->producer);
  tg__free(&a, s->is_output);
  tg__free(&a, s->consumer_start);
  tg__free(&a, s->consumers);
  tg__free(&a, s->pred_start);
  tg__free(&a, s->preds);
  tg__free(&a, s->sched_pred_start);
  tg__free(&a, s->sched_preds);
  tg__free(&a, s->succ_start);
  tg__free(&a, s->succs);
  tg__free(&a, s->folded);
  tg__closure_free(&a, &s->reach);
  tg__free(&a, s->wave_of);
  tg__free(&a, s->wave_start);
  tg__free(&a, s->wave_ops);
  tg__free(&a, s->branch);
  tg__free(&a, s);
}

/* Allocate `n` elements of `size` bytes (at least one, so a NULL always means failure). */
static void *alloc_array(const tg_allocator *a, size_t n, size_t size) {
  return tg__calloc(a, n ? n : 1, size);
}

/* Pass 1: every tensor's producer, with the "written once, by an op that exists" rules. */
static tg_status find_producers(tg_schedule *s, const tg_graph *g, tg_error_info *err) {
  for (size_t t = 0; t < s->tensor_count; ++t) s->producer[t] = -1;
  for (size_t i = 0; i < s->op_count; ++i) {
    const tg_op *op = &g->ops[i];
    if (op->output_count > 0 && op->outputs == NULL)
      return tg__error(err, TG_ERROR_GRAPH, "op %zu (%s): outputs missing", i, op_name(g, i));
    for (uint32_t k = 0; k < op->output_count; ++k) {
      int32_t t = op->outputs[k];
      if (t < 0 || (size_t)t >= s->tensor_count)
        return tg__error(err, TG_ERROR_GRAPH, "op %zu (%s): output %u names tensor %d, out of range",
                         i, op_name(g, i), k, (int)t);
      if (s->producer[t] >= 0)
        return tg__error(err, TG_ERROR_GRAPH,
                         "op %zu (%s) writes tensor %d ('%s'), already written by op %d", i,
                         op_name(g, i), (int)t, tensor_name(g, (size_t)t), (int)s->producer[t]);
      s->producer[t] = (int32_t)i;
    }
  }
  return TG_OK;
}

/* Pass 2: inputs in range and written before they are read; consumers per tensor; folding. */
static tg_status check_inputs(tg_schedule *s, const tg_graph *g, int keep_constant_ops,
                              uint8_t *is_const, uint8_t *is_input, tg_error_info *err) {
  for (size_t t = 0; t < s->tensor_count; ++t) {
    is_const[t] = (g->tensors[t].flags & TG_TENSOR_CONSTANT) != 0;
    is_input[t] = (g->tensors[t].flags & TG_TENSOR_INPUT) != 0;
  }
  for (size_t k = 0; k < g->input_count; ++k)
    if (g->inputs[k] < s->tensor_count) is_input[g->inputs[k]] = 1;
  for (size_t i = 0; i < s->op_count; ++i) {
    const tg_op *op = &g->ops[i];
    if (op->input_count > 0 && op->inputs == NULL)
      return tg__error(err, TG_ERROR_GRAPH, "op %zu (%s): inputs missing", i, op_name(g, i));
    size_t present = 0, constant = 0;
    for (uint32_t k = 0; k < op->input_count; ++k) {
      int32_t t = op->inputs[k];
      if (t == -1) continue;
      if (t < 0 || (size_t)t >= s->tensor_count)
        return tg__error(err, TG_ERROR_GRAPH, "op %zu (%s): input %u names tensor %d, out of range",
                         i, op_name(g, i), k, (int)t);
      if (s->producer[t] >= (int32_t)i)
        return tg__error(err, TG_ERROR_GRAPH,
                         "op %zu (%s) reads tensor %d ('%s') before op %d writes it: ops are not "
                         "in a topological order",
                         i, op_name(g, i), (int)t, tensor_name(g, (size_t)t), (int)s->producer[t]);
      if (s->producer[t] < 0 && !is_input[t] && !is_const[t] && tg__tensor_zero_elements(&g->tensors[t])) continue;
      if (s->producer[t] < 0 && !is_input[t] && !is_const[t])
        return tg__error(err, TG_ERROR_GRAPH,
                         "op %zu (%s) reads tensor %d ('%s'), which no op writes and which is "
                         "neither a graph input nor constant",
                         i, op_name(g, i), (int)t, tensor_name(g, (size_t)t));
      ++present;
      if (is_const[t]) ++constant;
    }
    /* An op computing only from constants (weights dequantized at load time) is not part of
     * a run; its outputs are constants for the ops after it. */
    if (!keep_constant_ops && present > 0 && constant == present && op->output_count > 0) {
      s->folded[i] = 1;
      for (uint32_t k = 0; k < op->output_count; ++k) is_const[op->outputs[k]] = 1;
    }
  }
  return TG_OK;
}

/* One pass over the reads, each (op, tensor) once although an op may read a tensor twice:
 * without `fill`, counts each tensor's readers into consumer_start[t + 1]; with it, writes
 * them into consumers. last_reader[t] = 1 + the last op met for t (zeroed before the pass). */
static void consumers_pass(tg_schedule *s, const tg_graph *g, uint32_t *last_reader, size_t *fill) {
  for (size_t i = 0; i < s->op_count; ++i) {
    const tg_op *op = &g->ops[i];
    for (uint32_t k = 0; k < op->input_count; ++k) {
      int32_t t = op->inputs[k];
      if (t < 0 || last_reader[t] == i + 1) continue;
      last_reader[t] = (uint32_t)(i + 1);
      if (fill == NULL) s->consumer_start[t + 1]++;
      else s->consumers[s->consumer_start[t] + fill[t]++] = (uint32_t)i;
    }
  }
}

/* Consumers per tensor (CSR), ascending and distinct because ops are visited in order. */
static tg_status build_consumers(tg_schedule *s, const tg_graph *g) {
  const tg_allocator *a = &s->alloc;
  s->consumer_start = alloc_array(a, s->tensor_count + 1, sizeof *s->consumer_start);
  if (s->consumer_start == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  uint32_t *last_reader = alloc_array(a, s->tensor_count, sizeof *last_reader);
  if (last_reader == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  consumers_pass(s, g, last_reader, NULL);
  for (size_t t = 0; t < s->tensor_count; ++t) s->consumer_start[t + 1] += s->consumer_start[t];
  s->consumers = alloc_array(a, s->consumer_start[s->tensor_count], sizeof *s->consumers);
  if (s->consumers == NULL) {
    tg__free(a, last_reader);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  memset(last_reader, 0, s->tensor_count * sizeof *last_reader);
  size_t *fill = alloc_array(a, s->tensor_count, sizeof *fill);
  if (fill == NULL) {
    tg__free(a, last_reader);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  consumers_pass(s, g, last_reader, fill);
  tg__free(a, fill);
  tg__free(a, last_reader);
  return TG_OK;
}

/* Distinct predecessor ops per op (all of them, and the scheduled ones), then successors as
 * the transpose. Lists come out ascending. */
static tg_status build_edges(tg_schedule *s, const tg_graph *g) {
  const tg_allocator *a = &s->alloc;
  size_t n = s->op_count;
  s->pred_start = alloc_array(a, n + 1, sizeof *s->pred_start);
  s->sched_pred_start = alloc_array(a, n + 1, sizeof *s->sched_pred_start);
  s->succ_start = alloc_array(a, n + 1, sizeof *s->succ_start);
  uint32_t *mark = alloc_array(a, n, sizeof *mark);
  if (!s->pred_start || !s->sched_pred_start || !s->succ_start || !mark) {
    tg__free(a, mark);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  /* Count, then fill: the same walk twice, `mark[p] == i + 1` meaning "p already listed". */
  size_t total = 0;
  for (int fill = 0; fill < 2; ++fill) {
    if (fill) {
      s->preds = alloc_array(a, total, sizeof *s->preds);
      if (s->preds == NULL) break;
      memset(mark, 0, n * sizeof *mark);
    }
    for (size_t i = 0; i < n; ++i) {
      const tg_op *op = &g->ops[i];
      size_t at = fill ? s->pred_start[i] : 0, count = 0;
      for (uint32_t k = 0; k < op->input_count; ++k) {
        int32_t t = op->inputs[k];
        if (t < 0 || s->producer[t] < 0) continue;
        uint32_t p = (uint32_t)s->producer[t];
        if (mark[p] == i + 1) continue;
        mark[p] = (uint32_t)(i + 1);
        if (fill) s->preds[at + count] = p;
        ++count;
      }
      if (!fill) {
        s->pred_start[i + 1] = count;
        total += count;
      }
    }
    if (!fill)
      for (size_t i = 0; i < n; ++i) s->pred_start[i + 1] += s->pred_start[i];
  }
  tg__free(a, mark);
  if (s->preds == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;

  /* Sort each op's list (inputs come in any order); lists are short: insertion sort. */
  for (size_t i = 0; i < n; ++i) {
    uint32_t *p = s->preds + s->pred_start[i];
    size_t m = s->pred_start[i + 1] - s->pred_start[i];
    for (size_t x = 1; x < m; ++x) {
      uint32_t v = p[x];
      size_t y = x;
      for (; y > 0 && p[y - 1] > v; --y) p[y] = p[y - 1];
      p[y] = v;
    }
  }

  /* Scheduled predecessors: both ends scheduled. */
  size_t sched_total = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t c = 0;
    if (!s->folded[i])
      for (size_t e = s->pred_start[i]; e < s->pred_start[i + 1]; ++e) c += !s->folded[s->preds[e]];
    s->sched_pred_start[i + 1] = s->sched_pred_start[i] + c;
    sched_total += c;
  }
  s->sched_preds = alloc_array(a, sched_total, sizeof *s->sched_preds);
  if (s->sched_preds == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  for (size_t i = 0; i < n; ++i) {
    size_t at = s->sched_pred_start[i];
    if (s->folded[i]) continue;
    for (size_t e = s->pred_start[i]; e < s->pred_start[i + 1]; ++e)
      if (!s->folded[s->preds[e]]) s->sched_preds[at++] = s->preds[e];
  }
  s->edge_count = sched_total;

  /* Successors: the transpose, filled in ascending consumer order. */
  for (size_t e = 0; e < total; ++e) s->succ_start[s->preds[e] + 1]++;
  for (size_t i = 0; i < n; ++i) s->succ_start[i + 1] += s->succ_start[i];
  s->succs = alloc_array(a, total, sizeof *s->succs);
  size_t *fillp = alloc_array(a, n, sizeof *fillp);
  if (s->succs == NULL || fillp == NULL) {
    tg__free(a, fillp);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  for (size_t i = 0; i < n; ++i)
    for (size_t e = s->pred_start[i]; e < s->pred_start[i + 1]; ++e) {
      uint32_t p = s->preds[e];
      s->succs[s->succ_start[p] + fillp[p]++] = (uint32_t)i;
    }
  tg__free(a, fillp);
  return TG_OK;
}

tg_status tg__closure_alloc(const tg_allocator *a, size_t n, tg__closure *out) {
  memset(out, 0, sizeof *out);
  out->n = n;
  out->words = (n + 63) / 64;
  out->row_start = tg__calloc(a, n + 1, sizeof *out->row_start);
  if (out->row_start == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  size_t total = 0;
  for (size_t i = 0; i < n; ++i) {
    out->row_start[i] = total;
    size_t len = out->words - i / 64;
    if (total > SIZE_MAX / sizeof *out->bits - len) {
      tg__closure_free(a, out);
      return TG_ERROR_OVERFLOW;
    }
    total += len;
  }
  out->row_start[n] = total;
  out->bits = tg__calloc(a, total ? total : 1, sizeof *out->bits);
  if (out->bits == NULL) {
    tg__closure_free(a, out);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  return TG_OK;
}

void tg__closure_free(const tg_allocator *a, tg__closure *c) {
  tg__free(a, c->row_start);
  tg__free(a, c->bits);
  c->row_start = NULL;
  c->bits = NULL;
}

void tg__closure_compute(tg__closure *c, const size_t *succ_start, const uint32_t *succs) {
  /* Reverse topological order: every successor's row is final before it is used. A successor
   * already present was reached through an earlier (smaller) successor whose row holds all of
   * its row too, so its OR is skipped: most of the work on real graphs disappears there. */
  for (size_t i = c->n; i-- > 0;) {
    uint64_t *row = c->bits + c->row_start[i];
    size_t base = i / 64;
    for (size_t e = succ_start[i]; e < succ_start[i + 1]; ++e) {
      size_t t = succs[e];
      if ((row[t / 64 - base] >> (t % 64)) & 1u) continue;
      row[t / 64 - base] |= (uint64_t)1 << (t % 64);
      /* Everything t reaches lies in t's row, which starts at word t/64. */
      const uint64_t *src = c->bits + c->row_start[t];
      uint64_t *dst = row + (t / 64 - base);
      size_t len = c->words - t / 64;
      for (size_t w = 0; w < len; ++w) dst[w] |= src[w];
    }
  }
}

static tg_status build_waves(tg_schedule *s) {
  const tg_allocator *a = &s->alloc;
  size_t n = s->op_count;
  s->wave_of = alloc_array(a, n, sizeof *s->wave_of);
  if (s->wave_of == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  size_t waves = 0;
  for (size_t i = 0; i < n; ++i) {
    if (s->folded[i]) {
      s->wave_of[i] = TG_SCHEDULE_NONE;
      continue;
    }
    uint32_t level = 0;
    for (size_t e = s->sched_pred_start[i]; e < s->sched_pred_start[i + 1]; ++e) {
      uint32_t l = s->wave_of[s->sched_preds[e]] + 1;
      if (l > level) level = l;
    }
    s->wave_of[i] = level;
    if ((size_t)level + 1 > waves) waves = (size_t)level + 1;
  }
  s->wave_count = waves;
  s->wave_start = alloc_array(a, waves + 1, sizeof *s->wave_start);
  s->wave_ops = alloc_array(a, n - s->folded_count, sizeof *s->wave_ops);
  size_t *fill = alloc_array(a, waves, sizeof *fill);
  if (s->wave_start == NULL || s->wave_ops == NULL || fill == NULL) {
    tg__free(a, fill);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  for (size_t i = 0; i < n; ++i)
    if (!s->folded[i]) s->wave_start[s->wave_of[i] + 1]++;
  s->max_wave_width = 0;
  for (size_t w = 0; w < waves; ++w) {
    size_t width = s->wave_start[w + 1];
    if (width > s->max_wave_width) s->max_wave_width = width;
    s->wave_start[w + 1] += s->wave_start[w];
  }
  for (size_t i = 0; i < n; ++i)
    if (!s->folded[i]) s->wave_ops[s->wave_start[s->wave_of[i]] + fill[s->wave_of[i]]++] = (uint32_t)i;
  tg__free(a, fill);
  return TG_OK;
}

/* Transpose a 64x64 bit matrix in place: afterwards bit k of m[b] is what bit b of m[k] was. */
static void transpose64(uint64_t m[64]) {
  uint64_t mask = 0x00000000FFFFFFFFull;
  for (unsigned j = 32; j != 0; j >>= 1, mask ^= mask << j)
    for (unsigned k = 0; k < 64; k = (k + j + 1) & ~j) {
      uint64_t t = ((m[k] >> j) ^ m[k + j]) & mask;
      m[k] ^= t << j;
      m[k + j] ^= t;
    }
}

static unsigned popcount64(uint64_t v) {
  v = v - ((v >> 1) & 0x5555555555555555ull);
  v = (v & 0x3333333333333333ull) + ((v >> 2) & 0x3333333333333333ull);
  v = (v + (v >> 4)) & 0x0f0f0f0f0f0f0f0full;
  return (unsigned)((v * 0x0101010101010101ull) >> 56);
}

static uint64_t mix(uint64_t h, uint64_t v, uint64_t salt) {
  h ^= v + salt + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

typedef struct branch_key {
  uint64_t h1, h2;  /* two independent hashes of the comparability row */
  size_t count;     /* its population: scheduled ops comparable to the op, itself included */
} branch_key;

static void key_add(branch_key *k, uint64_t v, size_t block) {
  k->h1 = mix(k->h1, v, block);
  k->h2 = mix(k->h2, v ^ 0x9e3779b97f4a7c15ull, ~(uint64_t)block);
  k->count += popcount64(v);
}

/* Branches: ops grouped by their comparability row (ops they reach, ops reaching them, and
 * themselves, among scheduled ops): two ops with the same row have the same concurrent ops.
 * The rows are never materialised (that would be a second n^2 matrix): column block by column
 * block, an op's word is its own closure word OR'ed with its ancestors there, found by
 * transposing 64x64 tiles of the closure, and goes into two 64-bit hashes and a population
 * count. Ops are put in one class when both hashes and the count agree and they are ordered
 * (ops of one class always are). A 128-bit collision is astronomically unlikely, and even then
 * branch-local only ever narrows parallel-safe: it could never allow a data race. */
static tg_status build_branches(tg_schedule *s) {
  const tg_allocator *a = &s->alloc;
  size_t n = s->op_count, words = s->words;
  s->branch = alloc_array(a, n, sizeof *s->branch);
  if (s->branch == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  s->branch_count = 0;
  s->trunk = 0;
  size_t scheduled = n - s->folded_count;
  if (scheduled == 0) {
    for (size_t i = 0; i < n; ++i) s->branch[i] = TG_SCHEDULE_NONE;
    return TG_OK;
  }
  uint64_t *mask = alloc_array(a, words, sizeof *mask);
  branch_key *key = alloc_array(a, n, sizeof *key);
  size_t slots = 2;
  while (slots < 2 * scheduled) slots *= 2;
  uint32_t *table = alloc_array(a, slots, sizeof *table); /* op + 1 of a class's first op */
  if (mask == NULL || key == NULL || table == NULL) {
    tg__free(a, mask);
    tg__free(a, key);
    tg__free(a, table);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  for (size_t i = 0; i < n; ++i)
    if (!s->folded[i]) tg__bit_set(mask, i);
  for (size_t i = 0; i < n; ++i)
    key[i] = (branch_key){0x243f6a8885a308d3ull, 0x13198a2e03707344ull, 0};

  const tg__closure *c = &s->reach;
  uint64_t tile[64];
  /* An op in word block w takes column blocks 0..w from the tiles (ancestors, and at w its own
   * word), then w+1.. from its own row: always in column order, so equal rows hash equally. */
  for (size_t cb = 0; cb < words; ++cb) {
    /* Ops in word block w >= cb: their ancestors in this column block are column i of the
     * tile made of rows cb*64.. at word w. */
    for (size_t w = cb; w < words; ++w) {
      uint64_t any = 0;
      for (size_t k = 0; k < 64; ++k) {
        size_t j = cb * 64 + k;
        tile[k] = j < n ? tg__closure_word(c, j, w) : 0;
        any |= tile[k];
      }
      if (any) transpose64(tile);
      for (size_t b = 0; b < 64 && w * 64 + b < n; ++b) {
        size_t i = w * 64 + b;
        uint64_t v = any ? tile[b] : 0;
        if (w == cb) v |= tg__closure_word(c, i, cb) | ((uint64_t)1 << b);
        key_add(&key[i], v & mask[cb], cb);
      }
    }
  }
  /* The rest of each row: descendants only, read along the row. */
  for (size_t i = 0; i < n; ++i)
    for (size_t cb = i / 64 + 1; cb < words; ++cb)
      key_add(&key[i], tg__closure_word(c, i, cb) & mask[cb], cb);
  s->trunk = TG_SCHEDULE_NONE;
  for (size_t i = 0; i < n; ++i) {
    if (s->folded[i]) {
      s->branch[i] = TG_SCHEDULE_NONE;
      continue;
    }
    size_t slot = (size_t)(key[i].h1 ^ (key[i].h2 >> 7)) & (slots - 1);
    for (;;) {
      uint32_t rep = table[slot];
      if (rep == 0) {
        table[slot] = (uint32_t)(i + 1);
        s->branch[i] = (uint32_t)s->branch_count++;
        break;
      }
      const branch_key *r = &key[rep - 1];
      if (r->h1 == key[i].h1 && r->h2 == key[i].h2 && r->count == key[i].count &&
          tg__closure_get(c, rep - 1, i)) {
        s->branch[i] = s->branch[rep - 1];
        break;
      }
      slot = (slot + 1) & (slots - 1);
    }
    if (s->trunk == TG_SCHEDULE_NONE && key[i].count == scheduled) s->trunk = s->branch[i];
  }
  if (s->trunk == TG_SCHEDULE_NONE) s->trunk = (uint32_t)s->branch_count;
  tg__free(a, table);
  tg__free(a, key);
  tg__free(a, mask);
  return TG_OK;
}

static tg_status entry_schedule_create(const tg_graph *g, const tg_schedule_options *options,
                             const tg_allocator *alloc, tg_schedule **out, tg_error_info *err) {
  if (out == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  if (g == NULL || (g->op_count > 0 && g->ops == NULL) ||
      (g->tensor_count > 0 && g->tensors == NULL) || (g->output_count > 0 && g->outputs == NULL) ||
      (g->input_count > 0 && g->inputs == NULL))
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "schedule: graph is NULL or incomplete");
  /* Producers are int32_t, and op lists uint32_t with UINT32_MAX reserved for "none". */
  if (g->op_count > INT32_MAX || g->tensor_count > INT32_MAX)
    return tg__error(err, TG_ERROR_UNSUPPORTED, "schedule: %zu ops / %zu tensors is too many",
                     g->op_count, g->tensor_count);
  alloc = tg__alloc_or_default(alloc);
  int keep = options ? options->keep_constant_ops : 0;

  tg_schedule *s = tg__calloc(alloc, 1, sizeof *s);
  if (s == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "schedule: out of host memory");
  s->alloc = *alloc;
  s->op_count = g->op_count;
  s->tensor_count = g->tensor_count;
  s->words = (g->op_count + 63) / 64;

  tg_status st = TG_ERROR_OUT_OF_HOST_MEMORY;
  /* Both flags in one block: is_const = flags, is_input = flags + tensor_count. */
  uint8_t *flags = NULL;
  size_t flag_bytes;
  if (tg__mul_size(s->tensor_count, 2, &flag_bytes)) flags = alloc_array(alloc, flag_bytes, 1);
  uint8_t *is_const = flags, *is_input = flags ? flags + s->tensor_count : NULL;
  s->producer = alloc_array(alloc, s->tensor_count, sizeof *s->producer);
  s->is_output = alloc_array(alloc, s->tensor_count, 1);
  s->folded = alloc_array(alloc, s->op_count, 1);
  if (is_const == NULL || s->producer == NULL || s->is_output == NULL || s->folded == NULL)
    goto fail;
  for (size_t t = 0; t < s->tensor_count; ++t)
    s->is_output[t] = (g->tensors[t].flags & TG_TENSOR_OUTPUT) != 0;
  for (size_t k = 0; k < g->output_count; ++k)
    if (g->outputs[k] < s->tensor_count) s->is_output[g->outputs[k]] = 1;

  if ((st = find_producers(s, g, err)) != TG_OK) goto fail;
  if ((st = check_inputs(s, g, keep, is_const, is_input, err)) != TG_OK) goto fail;
  for (size_t i = 0; i < s->op_count; ++i) s->folded_count += s->folded[i];
  st = TG_ERROR_OUT_OF_HOST_MEMORY;
  if (build_consumers(s, g) != TG_OK || build_edges(s, g) != TG_OK) goto fail;
  if ((st = tg__closure_alloc(alloc, s->op_count, &s->reach)) != TG_OK) {
    size_t ops = s->op_count;
    tg__free(alloc, flags);
    tg_schedule_destroy(s);
    return tg__error(err, st, "schedule: the reachability of %zu ops does not fit in memory", ops);
  }
  tg__closure_compute(&s->reach, s->succ_start, s->succs);
  if ((st = build_waves(s)) != TG_OK) goto fail;
  if ((st = build_branches(s)) != TG_OK) goto fail;
  tg__free(alloc, flags);
  *out = s;
  return TG_OK;

fail:
  if (st == TG_ERROR_OUT_OF_HOST_MEMORY) tg__error(err, st, "schedule: out of host memory");
  tg__free(alloc, flags);
  tg_schedule_destroy(s);
  return st;
}

void tg_schedule_get_stats(const tg_schedule *s, tg_schedule_stats *out) {
  if (out == NULL) return;
  memset(out, 0, sizeof *out);
  if (s == NULL) return;
  out->op_count = s->op_count;
  out->folded_count = s->folded_count;
  out->edge_count = s->edge_count;
  out->wave_count = s->wave_count;
  out->critical_path = s->wave_count;
  out->max_wave_width = s->max_wave_width;
  out->branch_count = s->branch_count;
}

int32_t tg__sched_next_unordered(const tg_schedule *s, const tg__closure *reach, size_t t, size_t op, size_t *k) {
  const size_t first = s->consumer_start[t], touchers = s->consumer_start[t + 1] - first + 1;
  /* Position 0 stands for the producer, position i > 0 for consumer i - 1. */
  while (*k < touchers) {
    const size_t at = (*k)++;
    const int32_t x = at == 0 ? tg__sched_producer(s, t) : (int32_t)s->consumers[first + at - 1];
    if (x < 0 || (size_t)x == op || s->folded[x]) continue;
    if (!tg__closure_get(reach, (size_t)x, op)) return x;
  }
  return -1;
}

int tg_schedule_happens_before(const tg_schedule *s, size_t a, size_t b) {
  if (s == NULL || a >= s->op_count || b >= s->op_count) return 0;
  return tg__closure_get(&s->reach, a, b);
}

int tg_schedule_concurrent(const tg_schedule *s, size_t a, size_t b) {
  if (s == NULL || a >= s->op_count || b >= s->op_count || a == b) return 0;
  if (s->folded[a] || s->folded[b]) return 0;
  return !tg__closure_get(&s->reach, a, b) && !tg__closure_get(&s->reach, b, a);
}

uint32_t tg_schedule_get_wave_of(const tg_schedule *s, size_t op) {
  if (s == NULL || op >= s->op_count) return TG_SCHEDULE_NONE;
  return s->wave_of[op];
}

const uint32_t *tg_schedule_get_wave(const tg_schedule *s, size_t wave, size_t *count) {
  if (count) *count = 0;
  if (s == NULL || wave >= s->wave_count) return NULL;
  if (count) *count = s->wave_start[wave + 1] - s->wave_start[wave];
  return s->wave_ops + s->wave_start[wave];
}

const uint32_t *tg_schedule_get_predecessors(const tg_schedule *s, size_t op, size_t *count) {
  if (count) *count = 0;
  if (s == NULL || op >= s->op_count) return NULL;
  if (count) *count = s->sched_pred_start[op + 1] - s->sched_pred_start[op];
  return s->sched_preds + s->sched_pred_start[op];
}

uint32_t tg_schedule_get_branch(const tg_schedule *s, size_t op) {
  if (s == NULL || op >= s->op_count) return TG_SCHEDULE_NONE;
  return s->branch[op];
}

uint32_t tg_schedule_get_trunk(const tg_schedule *s) { return s ? s->trunk : TG_SCHEDULE_NONE; }

tg_status tg_schedule_create(const tg_graph *graph, const tg_schedule_options *options, const tg_allocator *alloc,
                             tg_schedule **out, tg_error_info *err) {
  tg__error_begin(err);
  return tg__error_entry(err, entry_schedule_create(graph, options, alloc, out, err), "tg_schedule_create", "schedule");
}
