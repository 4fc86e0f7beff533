/* In-place pairs: their rules and the chains they form (in_place.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/base/in_place.h"

#define NONE SIZE_MAX
/* Longest chain formed; a pair that would make a longer one is left out (keeps the joining
 * test, quadratic in the chain, cheap). */
#define MAX_CHAIN 64

static tg_status check_unique(size_t count, const tg_in_place_pair *pairs, size_t pair_count,
                              const tg_allocator *alloc, char *why, size_t why_size) {
  unsigned char *seen = tg__calloc(alloc, count ? count : 1, 1);
  if (seen == NULL) return TG_ERROR_OUT_OF_HOST_MEMORY;
  tg_status st = TG_OK;
  for (size_t i = 0; i < pair_count && st == TG_OK; ++i) {
    if (seen[pairs[i].input] & 1u) {
      snprintf(why, why_size, "in-place pair %zu: record %zu is the input of two pairs", i, pairs[i].input);
      st = TG_ERROR_INVALID_ARGUMENT;
    } else if (seen[pairs[i].output] & 2u) {
      snprintf(why, why_size, "in-place pair %zu: record %zu is the output of two pairs", i, pairs[i].output);
      st = TG_ERROR_INVALID_ARGUMENT;
    }
    seen[pairs[i].input] |= 1u;
    seen[pairs[i].output] |= 2u;
  }
  tg__free(alloc, seen);
  return st;
}

tg_status tg__in_place_check(const tg_usage_record *records, size_t count, uint32_t dims,
                             const tg_in_place_pair *pairs, size_t pair_count,
                             const tg_allocator *alloc, char *why, size_t why_size) {
  (void)dims;
  char scratch[8];
  if (why == NULL) {
    why = scratch;
    why_size = sizeof scratch;
  }
  if (pair_count > 0 && pairs == NULL) {
    snprintf(why, why_size, "in-place pairs missing");
    return TG_ERROR_INVALID_ARGUMENT;
  }
  for (size_t i = 0; i < pair_count; ++i)
    if (!tg__in_place_pair_fits(records, count, &pairs[i], i, why, why_size)) return TG_ERROR_INVALID_ARGUMENT;
  return check_unique(count, pairs, pair_count, alloc, why, why_size);
}

int tg__in_place_pair_ordered(const tg_share_relation *relation, const tg_in_place_pair *p, uint32_t *other) {
  uint32_t scratch;
  if (other == NULL) other = &scratch;
  *other = UINT32_MAX;
  if (relation == NULL) return 1;
  return relation->in_place != NULL && relation->in_place(relation->user, p->input, p->output, p->op, other);
}

static int intervals_meet(const tg_usage_record *a, const tg_usage_record *b) {
  return a->first_task <= b->last_task && b->first_task <= a->last_task;
}

static int group_may_share(void *user, size_t a, size_t b) {
  const tg__in_place_groups *g = user;
  const tg_share_relation *rel = g->base_relation;
  for (size_t i = g->member_start[a]; i < g->member_start[a + 1]; ++i)
    for (size_t j = g->member_start[b]; j < g->member_start[b + 1]; ++j)
      if (!rel->may_share(rel->user, g->members[i], g->members[j])) return 0;
  return 1;
}

static void group_window(void *user, size_t r, uint64_t *lo, uint64_t *hi) {
  const tg__in_place_groups *g = user;
  const tg_share_relation *rel = g->base_relation;
  uint64_t l = UINT64_MAX, h = 0;
  for (size_t i = g->member_start[r]; i < g->member_start[r + 1]; ++i) {
    uint64_t a, b;
    rel->window(rel->user, g->members[i], &a, &b);
    if (a < l) l = a;
    if (b > h) h = b;
  }
  *lo = l;
  *hi = h;
}

static int pair_op_cmp(const void *pa, const void *pb) {
  const tg_in_place_pair *a = *(const tg_in_place_pair *const *)pa, *b = *(const tg_in_place_pair *const *)pb;
  if (a->op != b->op) return a->op < b->op ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

void tg__in_place_groups_free(tg__in_place_groups *g, const tg_allocator *alloc) {
  TG__FREE_EACH(alloc, g->group_of, g->merged, g->members, g->member_start, g->used);
  memset(g, 0, sizeof *g);
}

tg_status tg__in_place_groups_build(const tg_usage_record *records, size_t count, uint32_t dims,
                                    const tg_in_place_pair *pairs, size_t pair_count,
                                    const tg_share_relation *relation, const tg_allocator *alloc,
                                    tg__in_place_groups *g) {
  memset(g, 0, sizeof *g);
  char why[8];
  tg_status st = tg__in_place_check(records, count, dims, pairs, pair_count, alloc, why, sizeof why);
  if (st != TG_OK) return st;
  size_t *next = tg__calloc(alloc, count ? count : 1, sizeof *next);
  size_t *prev = tg__calloc(alloc, count ? count : 1, sizeof *prev);
  const tg_in_place_pair **order = tg__calloc(alloc, pair_count ? pair_count : 1, sizeof *order);
  size_t *chain_a = tg__calloc(alloc, MAX_CHAIN, sizeof *chain_a);
  size_t *chain_b = tg__calloc(alloc, MAX_CHAIN, sizeof *chain_b);
  g->count = count;
  g->group_of = tg__calloc(alloc, count ? count : 1, sizeof *g->group_of);
  g->members = tg__calloc(alloc, count ? count : 1, sizeof *g->members);
  g->member_start = tg__calloc(alloc, count + 1, sizeof *g->member_start);
  g->merged = tg__calloc(alloc, count ? count : 1, sizeof *g->merged);
  g->used = tg__calloc(alloc, pair_count ? pair_count : 1, sizeof *g->used);
  if (!next || !prev || !order || !chain_a || !chain_b || !g->group_of || !g->members || !g->member_start ||
      !g->merged || !g->used) {
    st = TG_ERROR_OUT_OF_HOST_MEMORY;
    goto done;
  }
  for (size_t r = 0; r < count; ++r) next[r] = prev[r] = NONE;
  for (size_t i = 0; i < pair_count; ++i) order[i] = &pairs[i];
  qsort(order, pair_count, sizeof *order, pair_op_cmp);
  for (size_t i = 0; i < pair_count; ++i) {
    const tg_in_place_pair *p = order[i];
    if (!tg__in_place_pair_ordered(relation, p, NULL)) continue;
    size_t na = 0, nb = 0;
    for (size_t r = p->input; r != NONE && na < MAX_CHAIN; r = prev[r]) chain_a[na++] = r;
    for (size_t r = p->output; r != NONE && nb < MAX_CHAIN; r = next[r]) chain_b[nb++] = r;
    if (na + nb > MAX_CHAIN || (na == MAX_CHAIN) || (nb == MAX_CHAIN)) continue;
    int ok = 1;
    for (size_t x = 0; x < na && ok; ++x)
      for (size_t y = 0; y < nb && ok; ++y) {
        size_t a = chain_a[x], b = chain_b[y];
        if (a == p->input && b == p->output) continue;
        if (intervals_meet(&records[a], &records[b])) ok = 0;
        else if (relation != NULL && !relation->may_share(relation->user, a, b)) ok = 0;
      }
    if (!ok) continue;
    next[p->input] = p->output;
    prev[p->output] = p->input;
  }
  /* Groups in order of their first record's index; pairs used in the caller's order. */
  size_t m = 0;
  for (size_t r = 0; r < count; ++r) {
    if (prev[r] != NONE) continue;
    size_t gi = g->group_count++;
    g->member_start[gi] = m;
    tg_usage_record u = records[r];
    for (size_t x = r; x != NONE; x = next[x]) {
      g->members[m++] = x;
      g->group_of[x] = gi;
      if (records[x].first_task < u.first_task) u.first_task = records[x].first_task;
      if (records[x].last_task > u.last_task) u.last_task = records[x].last_task;
      if (records[x].alignment > u.alignment) u.alignment = records[x].alignment;
    }
    g->merged[gi] = u;
  }
  g->member_start[g->group_count] = m;
  for (size_t i = 0; i < pair_count; ++i)
    if (next[pairs[i].input] == pairs[i].output) g->used[g->used_count++] = pairs[i];
  if (relation != NULL) {
    g->base_relation = relation;
    g->relation.may_share = group_may_share;
    g->relation.user = g;
    g->relation.window = relation->window ? group_window : NULL;
    g->relation.transitive = 0;
  }
done:
  tg__free(alloc, next);
  tg__free(alloc, prev);
  tg__free(alloc, order);
  tg__free(alloc, chain_a);
  tg__free(alloc, chain_b);
  if (st != TG_OK) tg__in_place_groups_free(g, alloc);
  return st;
}

static uint32_t half_of(uint32_t x, int second) { return second ? x / 2 : x - x / 2; }

void tg__in_place_split_budget(const tg_plan_options *options, int second, tg_plan_options *out,
                               uint32_t *default_ms) {
  *out = *options;
  *default_ms = 0;
  if (options->strategy != TG_STRATEGY_BEST) return;
  const uint32_t t = options->time_limit_ms;
  if (t == 0 || (options->exact && t == TG_TIME_LIMIT_NONE)) {
    *default_ms = half_of(options->exact ? 1000u : TG_DEFAULT_TIME_LIMIT_MS, second);
  } else if (t != TG_TIME_LIMIT_NONE) {
    out->time_limit_ms = half_of(t, second);
    if (out->time_limit_ms == 0) out->time_limit_ms = TG_TIME_LIMIT_NONE;
  }
  if (options->work_limit > 1) out->work_limit = half_of(options->work_limit, second);
}
