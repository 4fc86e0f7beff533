/* Run-time pools without a GPU: names and options, seed 004's example (exact reuse under a
 * 300 MiB capacity, and the capacity error one byte below), capacity edges, zero and absurd
 * sizes, bad frees, trim, images, every policy against a simple reference over thousands of
 * random operations (placements and statistics exact for exact, best-fit and first-fit; for
 * tlsf no two live allocations overlap and the statistics match), the structure walker after
 * every operation, host allocation failures walked one by one, and the host device. */
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tangram/backend.h"
#include "tangram/pool.h"

#define MiB (1024ull * 1024ull)

static void assert_pool_ok(tg_pool *p) {
  tg_error_info err = {{0}};
  tg_status st = tg_pool_check(p, &err);
  if (st != TG_OK) fail_msg("pool check: %s", err.message);
}

static tg_pool *make_pool(tg_device *dev, tg_pool_policy policy, uint64_t capacity, uint64_t block,
                          uint64_t align, const tg_allocator *alloc) {
  tg_pool_options o = {0};
  o.policy = policy;
  o.capacity = capacity;
  o.block_size = block;
  o.alignment = align;
  tg_pool *p = NULL;
  tg_error_info err = {{0}};
  tg_status st = tg_pool_create(dev, &o, alloc, &p, &err);
  if (st != TG_OK) fail_msg("tg_pool_create: %s (%s)", tg_status_name(st), err.message);
  return p;
}

/* ---- names and options ---- */

static void policy_names_round_trip(void **state) {
  (void)state;
  static const char *const names[] = {"exact", "best-fit", "first-fit", "tlsf"};
  for (int i = 0; i < TG_POOL_POLICY_COUNT; ++i) {
    assert_string_equal(tg_pool_policy_name((tg_pool_policy)i), names[i]);
    tg_pool_policy p = TG_POOL_POLICY_COUNT;
    assert_int_equal(tg_pool_policy_from_name(names[i], &p), TG_OK);
    assert_int_equal(p, i);
  }
  tg_pool_policy p = TG_POOL_TLSF;
  assert_int_equal(tg_pool_policy_from_name("best_fit", &p), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_pool_policy_from_name(NULL, &p), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(p, TG_POOL_TLSF);
  assert_null(tg_pool_policy_name(TG_POOL_POLICY_COUNT));
  assert_int_equal(TG_ERROR_POOL_CAPACITY, 18);
  assert_string_equal(tg_status_name(TG_ERROR_POOL_CAPACITY), "TG_ERROR_POOL_CAPACITY");
  assert_string_equal(tg_status_string(TG_ERROR_POOL_CAPACITY), "pool capacity exceeded");
}

static void bad_options_are_refused(void **state) {
  (void)state;
  tg_pool *p = (tg_pool *)&p;
  tg_error_info err = {{0}};
  tg_pool_options o = {0};
  assert_int_equal(tg_pool_create(NULL, &o, NULL, &p, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_null(p);
  assert_non_null(strstr(err.message, "virtual pool needs a capacity"));
  o.capacity = 1000;
  o.alignment = 48;
  assert_int_equal(tg_pool_create(NULL, &o, NULL, &p, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "not a power of two"));
  o.alignment = 0;
  o.block_size = 4096;
  assert_int_equal(tg_pool_create(NULL, &o, NULL, &p, &err), TG_ERROR_INVALID_ARGUMENT);
  assert_non_null(strstr(err.message, "block size"));
  o.block_size = 0;
  o.policy = TG_POOL_POLICY_COUNT;
  assert_int_equal(tg_pool_create(NULL, &o, NULL, &p, &err), TG_ERROR_INVALID_ARGUMENT);
  o.policy = TG_POOL_TLSF;
  o.block_size = UINT64_MAX;
  o.alignment = 64;
  assert_int_equal(tg_pool_create(NULL, &o, NULL, &p, &err), TG_ERROR_OVERFLOW);
  assert_int_equal(tg_pool_create(NULL, &o, NULL, NULL, &err), TG_ERROR_INVALID_ARGUMENT);
  /* NULL everywhere is harmless. */
  tg_pool_destroy(NULL);
  tg_pool_stats s;
  tg_pool_get_stats(NULL, &s);
  assert_int_equal(s.reserved, 0);
  assert_int_equal(tg_pool_free(NULL, 1), TG_ERROR_INVALID_ARGUMENT);
  assert_int_equal(tg_pool_trim(NULL, NULL), TG_ERROR_INVALID_ARGUMENT);
  tg_pool_allocation a;
  assert_int_equal(tg_pool_alloc(NULL, 8, &a, NULL), TG_ERROR_INVALID_ARGUMENT);
}

/* ---- seed 004's example ---- */

typedef struct seed_run {
  tg_status status[4];          /* alloc T_A, T_B, T_C, T_D */
  tg_pool_allocation a[4];
  tg_pool_stats stats;
  char message[TG_ERROR_MESSAGE_MAX];
} seed_run;

/* OpA -> T_A (100 MiB); OpB reads T_A, writes T_B (150 MiB), then T_A is released; OpC reads
 * T_B, writes T_C (50 MiB), then T_B is released; OpD reads T_C, writes T_D (100 MiB). The
 * allocations a failed step needs are skipped, as an engine would stop. */
static void seed_example(tg_pool *p, seed_run *r) {
  static const uint64_t sizes[4] = {100 * MiB, 150 * MiB, 50 * MiB, 100 * MiB};
  memset(r, 0, sizeof *r);
  for (int t = 0; t < 4; ++t) {
    tg_error_info err = {{0}};
    r->status[t] = tg_pool_alloc(p, sizes[t], &r->a[t], &err);
    if (r->status[t] != TG_OK) {
      snprintf(r->message, sizeof r->message, "%s", err.message);
      break;
    }
    if (t > 0) assert_int_equal(tg_pool_free(p, r->a[t - 1].id), TG_OK); /* after op t */
    assert_pool_ok(p);
  }
  tg_pool_get_stats(p, &r->stats);
}

static void seed_004_exact_reuses_t_a_for_t_d(void **state) {
  (void)state;
  tg_failing_allocator fa;
  tg_failing_allocator_init(&fa, NULL, 0);
  tg_pool *p = make_pool(NULL, TG_POOL_EXACT, 300 * MiB, 0, 0, &fa.base);
  seed_run r;
  seed_example(p, &r);
  for (int t = 0; t < 4; ++t) assert_int_equal(r.status[t], TG_OK);
  /* T_D takes T_A's block: same block, same size; three driver allocations, 300 MiB peak. */
  assert_int_equal(r.a[3].block, r.a[0].block);
  assert_int_equal(r.a[3].offset, 0);
  assert_int_equal(r.stats.peak_reserved, 300 * MiB);
  assert_int_equal(r.stats.reserved, 300 * MiB);
  assert_int_equal(r.stats.driver_allocations, 3);
  assert_int_equal(r.stats.in_use, 100 * MiB);
  assert_int_equal(r.stats.peak_in_use, 250 * MiB);
  assert_int_equal(r.stats.allocs, 4);
  assert_int_equal(r.stats.frees, 3);
  assert_int_equal(r.stats.free_blocks, 2); /* T_B's and T_C's */
  assert_int_equal(r.stats.largest_free_block, 150 * MiB);
  tg_pool_destroy(p);
  assert_int_equal(fa.live_blocks, 0);
}

static void seed_004_one_byte_less_fails_cleanly(void **state) {
  (void)state;
  tg_failing_allocator fa;
  tg_failing_allocator_init(&fa, NULL, 0);
  tg_pool *p = make_pool(NULL, TG_POOL_EXACT, 300 * MiB - 1, 0, 0, &fa.base);
  seed_run r;
  seed_example(p, &r);
  assert_int_equal(r.status[0], TG_OK);
  assert_int_equal(r.status[1], TG_OK);
  assert_int_equal(r.status[2], TG_ERROR_POOL_CAPACITY); /* T_C: 100 + 150 + 50 > capacity */
  /* The message in seed 004's terms: required, in use, capacity. */
  assert_non_null(strstr(r.message, "required 52428800 bytes"));
  assert_non_null(strstr(r.message, "in use 157286400"));
  assert_non_null(strstr(r.message, "reserved 262144000"));
  assert_non_null(strstr(r.message, "capacity 314572799"));
  /* Nothing leaked, nothing changed: T_A's free block and T_B live. */
  assert_int_equal(r.stats.reserved, 250 * MiB);
  assert_int_equal(r.stats.in_use, 150 * MiB);
  assert_int_equal(r.stats.driver_allocations, 2);
  assert_int_equal(r.stats.capacity_failures, 1);
  assert_int_equal(r.stats.allocs, 2);
  assert_pool_ok(p);
  /* Still usable: release T_B, give the free blocks back, and the rest of the run fits. */
  assert_int_equal(tg_pool_free(p, r.a[1].id), TG_OK);
  uint64_t released = 0;
  assert_int_equal(tg_pool_trim(p, &released), TG_OK);
  assert_int_equal(released, 250 * MiB);
  tg_pool_allocation c, d;
  assert_int_equal(tg_pool_alloc(p, 50 * MiB, &c, NULL), TG_OK);
  assert_int_equal(tg_pool_alloc(p, 100 * MiB, &d, NULL), TG_OK);
  assert_pool_ok(p);
  tg_pool_destroy(p);
  assert_int_equal(fa.live_blocks, 0);
}

static void seed_004_fit_policies_peak_lower(void **state) {
  (void)state;
  /* Splitting free blocks: T_C takes half of T_A's block, T_D most of T_B's: 250 MiB. */
  for (int pol = TG_POOL_BEST_FIT; pol < TG_POOL_POLICY_COUNT; ++pol) {
    tg_pool *p = make_pool(NULL, (tg_pool_policy)pol, 300 * MiB - 1, 0, 0, NULL);
    seed_run r;
    seed_example(p, &r);
    for (int t = 0; t < 4; ++t) assert_int_equal(r.status[t], TG_OK);
    assert_int_equal(r.stats.peak_reserved, 250 * MiB);
    assert_int_equal(r.a[2].block, r.a[0].block);
    assert_int_equal(r.a[3].block, r.a[1].block);
    tg_pool_destroy(p);
  }
}

/* ---- capacity edges, sizes, frees ---- */

static void capacity_edges(void **state) {
  (void)state;
  for (int pol = 0; pol < TG_POOL_POLICY_COUNT; ++pol) {
    tg_pool *p = make_pool(NULL, (tg_pool_policy)pol, 1 << 20, 0, 64, NULL);
    tg_pool_allocation a, b;
    tg_error_info err = {{0}};
    /* One byte over, alone. */
    assert_int_equal(tg_pool_alloc(p, (1 << 20) + 1, &a, &err), TG_ERROR_POOL_CAPACITY);
    assert_int_equal(a.id, 0);
    assert_non_null(strstr(err.message, "capacity 1048576"));
    /* Exactly full. */
    assert_int_equal(tg_pool_alloc(p, 1 << 20, &a, NULL), TG_OK);
    assert_int_equal(a.size, 1 << 20);
    assert_int_equal(tg_pool_alloc(p, 1, &b, &err), TG_ERROR_POOL_CAPACITY);
    assert_non_null(strstr(err.message, "required 64 bytes"));
    tg_pool_stats s;
    tg_pool_get_stats(p, &s);
    assert_int_equal(s.reserved, 1 << 20);
    assert_int_equal(s.capacity_failures, 2);
    assert_int_equal(s.driver_allocations, 1);
    /* Freed, the full block serves the same request again (no driver call). */
    assert_int_equal(tg_pool_free(p, a.id), TG_OK);
    assert_int_equal(tg_pool_alloc(p, 1 << 20, &a, NULL), TG_OK);
    tg_pool_get_stats(p, &s);
    assert_int_equal(s.driver_allocations, 1);
    assert_pool_ok(p);
    tg_pool_destroy(p);
  }
  /* A capacity that is not a multiple of the alignment: the rounded size counts. */
  tg_pool *p = make_pool(NULL, TG_POOL_TLSF, 1000, 0, 64, NULL);
  tg_pool_allocation a;
  assert_int_equal(tg_pool_alloc(p, 1000, &a, NULL), TG_ERROR_POOL_CAPACITY);
  assert_int_equal(tg_pool_alloc(p, 960, &a, NULL), TG_OK);
  tg_pool_destroy(p);
  /* A block size larger than what is left is cut to fit. */
  p = make_pool(NULL, TG_POOL_FIRST_FIT, 3 * MiB, 2 * MiB, 0, NULL);
  tg_pool_allocation x, y;
  assert_int_equal(tg_pool_alloc(p, MiB + 1, &x, NULL), TG_OK);
  assert_int_equal(tg_pool_alloc(p, MiB, &y, NULL), TG_OK);
  assert_int_not_equal(x.block, y.block);
  tg_pool_stats s;
  tg_pool_get_stats(p, &s);
  assert_int_equal(s.reserved, 3 * MiB);
  assert_pool_ok(p);
  tg_pool_destroy(p);
}

static void zero_and_absurd_sizes(void **state) {
  (void)state;
  for (int pol = 0; pol < TG_POOL_POLICY_COUNT; ++pol) {
    tg_pool *p = make_pool(NULL, (tg_pool_policy)pol, 1ull << 40, 0, 256, NULL);
    tg_pool_allocation a, b;
    tg_error_info err = {{0}};
    /* Zero bytes: one alignment unit, a place of its own. */
    assert_int_equal(tg_pool_alloc(p, 0, &a, NULL), TG_OK);
    assert_int_equal(tg_pool_alloc(p, 0, &b, NULL), TG_OK);
    assert_int_equal(a.size, 256);
    assert_true(a.block != b.block || a.offset != b.offset);
    /* 2^63: over the capacity, named. UINT64_MAX: overflows the alignment. */
    assert_int_equal(tg_pool_alloc(p, 1ull << 63, &a, &err), TG_ERROR_POOL_CAPACITY);
    assert_non_null(strstr(err.message, "required 9223372036854775808 bytes"));
    assert_int_equal(tg_pool_alloc(p, UINT64_MAX, &a, &err), TG_ERROR_OVERFLOW);
    assert_non_null(strstr(err.message, "18446744073709551615"));
    assert_int_equal(tg_pool_alloc(p, UINT64_MAX - 255, &a, &err), TG_ERROR_POOL_CAPACITY);
    tg_pool_stats s;
    tg_pool_get_stats(p, &s);
    assert_int_equal(s.live, 2);
    assert_int_equal(s.in_use, 512);
    assert_int_equal(a.id, 0); /* zeroed by the failures */
    assert_pool_ok(p);
    tg_pool_destroy(p);
  }
  /* A virtual pool of (almost) all 64 bits: 2^63 fits, twice does not. */
  tg_pool *p = make_pool(NULL, TG_POOL_TLSF, UINT64_MAX, 0, 1, NULL);
  tg_pool_allocation a, b;
  assert_int_equal(tg_pool_alloc(p, 1ull << 63, &a, NULL), TG_OK);
  assert_int_equal(tg_pool_alloc(p, 1ull << 63, &b, NULL), TG_ERROR_POOL_CAPACITY);
  assert_int_equal(tg_pool_alloc(p, (1ull << 63) - 1, &b, NULL), TG_OK);
  assert_pool_ok(p);
  assert_int_equal(tg_pool_free(p, a.id), TG_OK);
  assert_int_equal(tg_pool_free(p, b.id), TG_OK);
  assert_pool_ok(p);
  tg_pool_destroy(p);
}

static void bad_frees_change_nothing(void **state) {
  (void)state;
  for (int pol = 0; pol < TG_POOL_POLICY_COUNT; ++pol) {
    tg_pool *p = make_pool(NULL, (tg_pool_policy)pol, 1 << 30, 0, 16, NULL);
    tg_pool *q = make_pool(NULL, (tg_pool_policy)pol, 1 << 30, 0, 16, NULL);
    tg_pool_allocation a, b, c;
    assert_int_equal(tg_pool_alloc(p, 100, &a, NULL), TG_OK);
    assert_int_equal(tg_pool_alloc(p, 100, &b, NULL), TG_OK);
    assert_int_equal(tg_pool_free(p, a.id), TG_OK);
    /* Freed twice, a reused slot's old id, 0, garbage, another pool's id. */
    assert_int_equal(tg_pool_free(p, a.id), TG_ERROR_INVALID_ARGUMENT);
    assert_int_equal(tg_pool_alloc(p, 100, &c, NULL), TG_OK);
    assert_int_not_equal(c.id, a.id);
    assert_int_equal(tg_pool_free(p, a.id), TG_ERROR_INVALID_ARGUMENT);
    assert_int_equal(tg_pool_free(p, 0), TG_ERROR_INVALID_ARGUMENT);
    assert_int_equal(tg_pool_free(p, UINT64_MAX), TG_ERROR_INVALID_ARGUMENT);
    assert_int_equal(tg_pool_free(p, b.id + 12345), TG_ERROR_INVALID_ARGUMENT);
    assert_int_equal(tg_pool_free(q, b.id), TG_ERROR_INVALID_ARGUMENT);
    tg_pool_stats s;
    tg_pool_get_stats(p, &s);
    assert_int_equal(s.live, 2);
    assert_int_equal(s.frees, 1);
    assert_pool_ok(p);
    assert_int_equal(tg_pool_free(p, b.id), TG_OK);
    assert_int_equal(tg_pool_free(p, c.id), TG_OK);
    tg_pool_destroy(p);
    tg_pool_destroy(q);
  }
}

static void trim_gives_back_only_unused_blocks(void **state) {
  (void)state;
  for (int pol = 0; pol < TG_POOL_POLICY_COUNT; ++pol) {
    tg_pool *p = make_pool(NULL, (tg_pool_policy)pol, 1 << 30, 0, 0, NULL);
    tg_pool_allocation a[6];
    for (int i = 0; i < 6; ++i) assert_int_equal(tg_pool_alloc(p, 1000u * (uint64_t)(i + 1), &a[i], NULL), TG_OK);
    for (int i = 0; i < 6; i += 2) assert_int_equal(tg_pool_free(p, a[i].id), TG_OK);
    uint64_t released = 0;
    assert_int_equal(tg_pool_trim(p, &released), TG_OK);
    assert_int_equal(released, 1000 + 3000 + 5000); /* each request had a block of its own */
    tg_pool_stats s;
    tg_pool_get_stats(p, &s);
    assert_int_equal(s.reserved, 2000 + 4000 + 6000);
    assert_int_equal(s.blocks, 3);
    assert_int_equal(s.free_blocks, 0);
    assert_int_equal(s.driver_releases, 3);
    assert_pool_ok(p);
    for (int i = 1; i < 6; i += 2) assert_int_equal(tg_pool_free(p, a[i].id), TG_OK);
    assert_int_equal(tg_pool_trim(p, &released), TG_OK);
    tg_pool_get_stats(p, &s);
    assert_int_equal(s.reserved, 0);
    assert_int_equal(s.blocks, 0);
    assert_int_equal(s.peak_reserved, 21000);
    assert_pool_ok(p);
    tg_pool_destroy(p);
  }
}

/* ---- images (virtual) ---- */

static void images_are_pooled_whole(void **state) {
  (void)state;
  for (int pol = 0; pol < TG_POOL_POLICY_COUNT; ++pol) {
    int contain = pol == TG_POOL_BEST_FIT || pol == TG_POOL_FIRST_FIT;
    tg_pool *p = make_pool(NULL, (tg_pool_policy)pol, 1 << 30, 0, 0, NULL);
    tg_pool_allocation big, small, again, other;
    tg_error_info err = {{0}};
    assert_int_equal(tg_pool_alloc_image(p, TG_STORAGE_TEXTURE_2D, (tg_extent){64, 32, 1}, &big, NULL), TG_OK);
    assert_int_equal(big.size, 64 * 32 * 16);
    assert_int_equal(big.storage, TG_STORAGE_TEXTURE_2D);
    assert_int_equal(tg_pool_free(p, big.id), TG_OK);
    /* A smaller image reuses the big one only where the policy reuses by containment. */
    assert_int_equal(tg_pool_alloc_image(p, TG_STORAGE_TEXTURE_2D, (tg_extent){16, 32, 1}, &small, NULL), TG_OK);
    assert_int_equal(small.block == big.block, contain);
    assert_int_equal(small.extent.w, contain ? 64 : 16);
    /* The same extent in another storage is another image. */
    assert_int_equal(tg_pool_alloc_image(p, TG_STORAGE_SINGLE_TEXTURE_2D, (tg_extent){64, 32, 1}, &other, NULL), TG_OK);
    assert_int_not_equal(other.block, big.block);
    assert_int_equal(tg_pool_free(p, small.id), TG_OK);
    assert_int_equal(tg_pool_alloc_image(p, TG_STORAGE_TEXTURE_2D, (tg_extent){64, 32, 1}, &again, NULL), TG_OK);
    assert_int_equal(again.block, big.block);
    /* Refusals. */
    assert_int_equal(tg_pool_alloc_image(p, TG_STORAGE_BUFFER, (tg_extent){4, 1, 1}, &again, &err), TG_ERROR_INVALID_ARGUMENT);
    assert_non_null(strstr(err.message, "not an image"));
    assert_int_equal(tg_pool_alloc_image(p, TG_STORAGE_TEXTURE_3D, (tg_extent){4, 0, 1}, &again, &err), TG_ERROR_INVALID_ARGUMENT);
    assert_int_equal(tg_pool_alloc_image(p, TG_STORAGE_TEXTURE_2D, (tg_extent){4, 4, 2}, &again, &err), TG_ERROR_INVALID_ARGUMENT);
    assert_int_equal(tg_pool_alloc_image(p, TG_STORAGE_TEXTURE_3D, (tg_extent){1ull << 40, 1ull << 30, 1}, &again, &err), TG_ERROR_OVERFLOW);
    assert_int_equal(tg_pool_alloc_image(p, TG_STORAGE_TEXTURE_3D, (tg_extent){1 << 20, 1 << 10, 8}, &again, &err), TG_ERROR_POOL_CAPACITY);
    assert_pool_ok(p);
    tg_pool_stats s;
    tg_pool_get_stats(p, &s);
    assert_int_equal(s.live, 2);
    assert_int_equal(s.driver_allocations, contain ? 2 : 3);
    tg_pool_destroy(p);
  }
}

/* ---- every policy against a reference ---- */

typedef struct ref_range {
  uint64_t off, size;
  int used;
} ref_range;

typedef struct ref_block {
  uint64_t seq, size;
  ref_range *r;
  size_t n;
  int present;
} ref_block;

/* What a simple pool would do: blocks as arrays of ranges, searched linearly. */
typedef struct ref_pool {
  tg_pool_policy policy;
  uint64_t capacity, block_size, align, reserved, in_use, peak_reserved, peak_in_use;
  uint64_t next_seq, allocs, frees, driver_allocations, driver_releases, capacity_failures;
  ref_block *b;
  size_t nb;
} ref_pool;

typedef struct live_alloc {
  tg_pool_allocation a;
} live_alloc;

static ref_block *ref_find_block(ref_pool *r, uint64_t seq) {
  for (size_t i = 0; i < r->nb; ++i)
    if (r->b[i].present && r->b[i].seq == seq) return &r->b[i];
  return NULL;
}

static void ref_insert_range(ref_block *b, size_t at, ref_range x) {
  b->r = realloc(b->r, (b->n + 1) * sizeof *b->r);
  assert_non_null(b->r);
  memmove(&b->r[at + 1], &b->r[at], (b->n - at) * sizeof *b->r);
  b->r[at] = x;
  b->n++;
}

static void ref_erase_range(ref_block *b, size_t at) {
  memmove(&b->r[at], &b->r[at + 1], (b->n - at - 1) * sizeof *b->r);
  b->n--;
}

static ref_block *ref_new_block(ref_pool *r, uint64_t size) {
  r->b = realloc(r->b, (r->nb + 1) * sizeof *r->b);
  assert_non_null(r->b);
  ref_block *b = &r->b[r->nb++];
  memset(b, 0, sizeof *b);
  b->present = 1;
  b->seq = r->next_seq++;
  b->size = size;
  ref_insert_range(b, 0, (ref_range){0, size, 0});
  r->reserved += size;
  if (r->reserved > r->peak_reserved) r->peak_reserved = r->reserved;
  r->driver_allocations++;
  return b;
}

/* Predict an allocation: TG_OK with (block, offset), or TG_ERROR_POOL_CAPACITY. For exact the
 * block among free ones of that size is not predicted (`*block` = 0 then means "a reused one"). */
static tg_status ref_alloc(ref_pool *r, uint64_t bytes, uint64_t *block, uint64_t *offset, uint64_t *size) {
  uint64_t s = ((bytes ? bytes : 1) + r->align - 1) / r->align * r->align;
  *size = s;
  if (r->policy == TG_POOL_EXACT) {
    for (size_t i = 0; i < r->nb; ++i)
      if (r->b[i].present && !r->b[i].r[0].used && r->b[i].size == s) {
        *block = 0;
        *offset = 0;
        r->in_use += s;
        if (r->in_use > r->peak_in_use) r->peak_in_use = r->in_use;
        r->allocs++;
        return TG_OK; /* marked used by ref_mark_exact once the pool says which */
      }
    if (s > r->capacity - r->reserved) {
      r->capacity_failures++;
      return TG_ERROR_POOL_CAPACITY;
    }
    ref_block *b = ref_new_block(r, s);
    b->r[0].used = 1;
    *block = b->seq;
    *offset = 0;
  } else {
    ref_block *best = NULL;
    size_t best_i = 0;
    for (size_t i = 0; i < r->nb; ++i) {
      ref_block *b = &r->b[i];
      if (!b->present) continue;
      for (size_t k = 0; k < b->n; ++k) {
        const ref_range *x = &b->r[k];
        if (x->used || x->size < s) continue;
        int better = best == NULL;
        if (!better) {
          const ref_range *y = &best->r[best_i];
          if (r->policy == TG_POOL_BEST_FIT && x->size != y->size) better = x->size < y->size;
          else if (b->seq != best->seq) better = b->seq < best->seq;
          else better = x->off < y->off;
        }
        if (better) {
          best = b;
          best_i = k;
        }
      }
    }
    if (best == NULL) {
      uint64_t left = (r->capacity - r->reserved) / r->align * r->align;
      if (s > left) {
        r->capacity_failures++;
        return TG_ERROR_POOL_CAPACITY;
      }
      uint64_t bytes_block = r->block_size > s ? r->block_size : s;
      if (bytes_block > left) bytes_block = left;
      best = ref_new_block(r, bytes_block);
      best_i = 0;
    }
    ref_range *x = &best->r[best_i];
    if (x->size > s) ref_insert_range(best, best_i + 1, (ref_range){x->off + s, x->size - s, 0});
    best->r[best_i].size = s;
    best->r[best_i].used = 1;
    *block = best->seq;
    *offset = best->r[best_i].off;
  }
  r->in_use += s;
  if (r->in_use > r->peak_in_use) r->peak_in_use = r->in_use;
  r->allocs++;
  return TG_OK;
}

static void ref_mark_exact(ref_pool *r, uint64_t seq, uint64_t size) {
  ref_block *b = ref_find_block(r, seq);
  assert_non_null(b);
  assert_int_equal(b->size, size);
  assert_false(b->r[0].used);
  b->r[0].used = 1;
}

static void ref_free(ref_pool *r, uint64_t seq, uint64_t off) {
  ref_block *b = ref_find_block(r, seq);
  assert_non_null(b);
  size_t k = 0;
  while (k < b->n && b->r[k].off != off) ++k;
  assert_true(k < b->n && b->r[k].used);
  b->r[k].used = 0;
  r->in_use -= b->r[k].size;
  r->frees++;
  if (k + 1 < b->n && !b->r[k + 1].used) {
    b->r[k].size += b->r[k + 1].size;
    ref_erase_range(b, k + 1);
  }
  if (k > 0 && !b->r[k - 1].used) {
    b->r[k - 1].size += b->r[k].size;
    ref_erase_range(b, k);
  }
}

static void ref_trim(ref_pool *r) {
  for (size_t i = 0; i < r->nb; ++i) {
    ref_block *b = &r->b[i];
    if (b->present && b->n == 1 && !b->r[0].used) {
      b->present = 0;
      r->reserved -= b->size;
      r->driver_releases++;
    }
  }
}

static void ref_free_stats(const ref_pool *r, uint64_t *count, uint64_t *largest) {
  *count = *largest = 0;
  for (size_t i = 0; i < r->nb; ++i)
    if (r->b[i].present)
      for (size_t k = 0; k < r->b[i].n; ++k)
        if (!r->b[i].r[k].used) {
          ++*count;
          if (r->b[i].r[k].size > *largest) *largest = r->b[i].r[k].size;
        }
}

static void ref_destroy(ref_pool *r) {
  for (size_t i = 0; i < r->nb; ++i) free(r->b[i].r);
  free(r->b);
}

/* Sizes like a model's tensors: a few hundred bytes to a few MiB, many repeats, some zero. */
static uint64_t random_size(tg_test_rng *rng, const tg_record_set *model) {
  switch (tg_test_rng_range(rng, 0, 9)) {
    case 0: return 0;
    case 1: case 2: return tg_test_rng_range(rng, 1, 4096);
    case 3: return tg_test_rng_range(rng, 1, 1 << 20);
    default: return model->records[tg_test_rng_range(rng, 0, model->count - 1)].size.w;
  }
}

static void no_overlap(const live_alloc *live, size_t n, const tg_pool_allocation *a) {
  for (size_t i = 0; i < n; ++i) {
    const tg_pool_allocation *b = &live[i].a;
    if (a->block != b->block) continue;
    if (a->offset < b->offset + b->size && b->offset < a->offset + a->size)
      fail_msg("allocation [%llu,+%llu) in block %llu overlaps [%llu,+%llu)", (unsigned long long)a->offset,
               (unsigned long long)a->size, (unsigned long long)a->block, (unsigned long long)b->offset,
               (unsigned long long)b->size);
  }
}

static void random_run(tg_pool_policy policy, uint64_t seed, int ops, const tg_record_set *model) {
  tg_test_rng rng = {seed};
  static const uint64_t aligns[] = {1, 16, 64, 256, 4096};
  static const uint64_t blocks[] = {0, 64 * 1024, 4 * MiB};
  ref_pool r;
  memset(&r, 0, sizeof r);
  r.policy = policy;
  r.align = aligns[tg_test_rng_range(&rng, 0, 4)];
  r.block_size = policy == TG_POOL_EXACT ? 0 : blocks[tg_test_rng_range(&rng, 0, 2)];
  r.block_size = (r.block_size + r.align - 1) / r.align * r.align;
  r.capacity = tg_test_rng_range(&rng, 0, 1) ? 1ull << 40 : tg_test_rng_range(&rng, 8 * MiB, 40 * MiB);
  r.next_seq = 1;
  tg_pool *p = make_pool(NULL, policy, r.capacity, r.block_size, r.align, NULL);
  live_alloc *live = calloc((size_t)ops + 1, sizeof *live);
  assert_non_null(live);
  size_t n = 0;
  int predicted = policy != TG_POOL_TLSF;
  for (int op = 0; op < ops; ++op) {
    uint64_t dice = tg_test_rng_range(&rng, 0, 99);
    if (dice < 55 || n == 0) {
      uint64_t bytes = random_size(&rng, model);
      tg_pool_allocation a;
      tg_error_info err = {{0}};
      tg_status st = tg_pool_alloc(p, bytes, &a, &err);
      if (predicted) {
        uint64_t blk = 0, off = 0, size = 0;
        tg_status want = ref_alloc(&r, bytes, &blk, &off, &size);
        if (st != want) fail_msg("op %d: alloc %llu: %s, the reference says %s (%s)", op, (unsigned long long)bytes,
                                 tg_status_name(st), tg_status_name(want), err.message);
        if (st == TG_OK) {
          if (policy == TG_POOL_EXACT && blk == 0) ref_mark_exact(&r, a.block, size);
          else {
            assert_int_equal(a.block, blk);
            assert_int_equal(a.offset, off);
          }
          assert_int_equal(a.size, size);
        }
      } else if (st != TG_OK && st != TG_ERROR_POOL_CAPACITY) {
        fail_msg("op %d: alloc %llu: %s (%s)", op, (unsigned long long)bytes, tg_status_name(st), err.message);
      }
      if (st == TG_OK) {
        assert_int_equal(a.offset % r.align, 0);
        assert_true(a.size >= bytes && a.size % r.align == 0);
        no_overlap(live, n, &a);
        live[n++].a = a;
      }
    } else if (dice < 97) {
      size_t k = (size_t)tg_test_rng_range(&rng, 0, n - 1);
      assert_int_equal(tg_pool_free(p, live[k].a.id), TG_OK);
      if (predicted) ref_free(&r, live[k].a.block, live[k].a.offset);
      live[k] = live[--n];
    } else {
      uint64_t released;
      tg_pool_stats before;
      tg_pool_get_stats(p, &before);
      assert_int_equal(tg_pool_trim(p, &released), TG_OK);
      if (predicted) ref_trim(&r);
      tg_pool_stats after;
      tg_pool_get_stats(p, &after);
      assert_int_equal(before.reserved - after.reserved, released);
    }
    assert_pool_ok(p);
    tg_pool_stats s;
    tg_pool_get_stats(p, &s);
    uint64_t in_use = 0;
    for (size_t i = 0; i < n; ++i) in_use += live[i].a.size;
    assert_int_equal(s.in_use, in_use);
    assert_int_equal(s.live, n);
    assert_true(s.reserved <= r.capacity && s.peak_reserved <= r.capacity);
    if (predicted) {
      uint64_t fc, fl;
      ref_free_stats(&r, &fc, &fl);
      assert_int_equal(s.reserved, r.reserved);
      assert_int_equal(s.peak_reserved, r.peak_reserved);
      assert_int_equal(s.peak_in_use, r.peak_in_use);
      assert_int_equal(s.allocs, r.allocs);
      assert_int_equal(s.frees, r.frees);
      assert_int_equal(s.driver_allocations, r.driver_allocations);
      assert_int_equal(s.driver_releases, r.driver_releases);
      assert_int_equal(s.capacity_failures, r.capacity_failures);
      assert_int_equal(s.free_blocks, fc);
      assert_int_equal(s.largest_free_block, fl);
    }
  }
  while (n) assert_int_equal(tg_pool_free(p, live[--n].a.id), TG_OK);
  assert_int_equal(tg_pool_trim(p, NULL), TG_OK);
  tg_pool_stats s;
  tg_pool_get_stats(p, &s);
  assert_int_equal(s.reserved, 0);
  assert_int_equal(s.in_use, 0);
  assert_pool_ok(p);
  tg_pool_destroy(p);
  free(live);
  ref_destroy(&r);
}

static void every_policy_matches_the_reference(void **state) {
  (void)state;
  tg_record_set *model = tg_test_load_records("records/pose_landmark_lite.buffer.csv");
  int seeds = tg_test_quick() ? 6 : 24, ops = tg_test_quick() ? 1500 : 3000;
  for (int pol = 0; pol < TG_POOL_POLICY_COUNT; ++pol)
    for (int s = 0; s < seeds; ++s) random_run((tg_pool_policy)pol, 1000u * (uint64_t)pol + (uint64_t)s + 1, ops, model);
  tg_record_set_destroy(model);
}

/* TLSF classes: every size maps into range, and the search class only holds sizes >= it. */
static void tlsf_classes_hold_what_they_promise(void **state) {
  (void)state;
  tg_pool *p = make_pool(NULL, TG_POOL_TLSF, UINT64_MAX, 0, 1, NULL);
  tg_test_rng rng = {7};
  /* Free ranges of many sizes, then requests just above, at and below each: the pool either
   * finds a range that holds the request or makes a block exactly its size. */
  for (int round = 0; round < 200; ++round) {
    uint64_t sz = tg_test_rng_range(&rng, 1, 1ull << tg_test_rng_range(&rng, 1, 40));
    tg_pool_allocation a, b;
    assert_int_equal(tg_pool_alloc(p, sz, &a, NULL), TG_OK);
    assert_int_equal(tg_pool_alloc(p, 1, &b, NULL), TG_OK); /* keeps the range from merging */
    assert_int_equal(tg_pool_free(p, a.id), TG_OK);
    uint64_t ask = sz + (uint64_t)tg_test_rng_range(&rng, 0, 2) - 1;
    if (ask == 0) ask = 1;
    tg_pool_stats before, after;
    tg_pool_get_stats(p, &before);
    tg_pool_allocation c;
    assert_int_equal(tg_pool_alloc(p, ask, &c, NULL), TG_OK);
    tg_pool_get_stats(p, &after);
    if (after.driver_allocations == before.driver_allocations) assert_true(c.size >= ask);
    else assert_int_equal(after.reserved - before.reserved, ask);
    assert_pool_ok(p);
  }
  tg_pool_destroy(p);
}

/* ---- host allocation failures, one by one ---- */

static void host_alloc_failures_leave_the_pool_unchanged(void **state) {
  (void)state;
  for (int pol = 0; pol < TG_POOL_POLICY_COUNT; ++pol) {
    int failed_somewhere = 1;
    for (uint64_t at = 1; failed_somewhere; ++at) {
      tg_failing_allocator fa;
      tg_failing_allocator_init(&fa, NULL, at);
      tg_pool_options o = {(tg_pool_policy)pol, 1 << 30, 0, 16, TG_PRECISION_FP32, 0};
      tg_pool *p = NULL;
      tg_status st = tg_pool_create(NULL, &o, &fa.base, &p, NULL);
      failed_somewhere = fa.failures > 0;
      if (st != TG_OK) {
        assert_int_equal(st, TG_ERROR_OUT_OF_HOST_MEMORY);
        assert_null(p);
        assert_int_equal(fa.live_blocks, 0);
        continue;
      }
      tg_pool_allocation a[300];
      size_t n = 0;
      for (int i = 0; i < 300; ++i) {
        tg_pool_stats before, after;
        tg_pool_get_stats(p, &before);
        tg_status s1 = i % 7 == 3 ? tg_pool_alloc_image(p, TG_STORAGE_TEXTURE_2D, (tg_extent){(uint64_t)(i % 5 + 1), 4, 1}, &a[n], NULL)
                                  : tg_pool_alloc(p, (uint64_t)(i % 13) * 100 + 1, &a[n], NULL);
        if (s1 != TG_OK) {
          assert_int_equal(s1, TG_ERROR_OUT_OF_HOST_MEMORY);
          tg_pool_get_stats(p, &after);
          assert_memory_equal(&before, &after, sizeof before);
        } else {
          n++;
        }
        if (i % 3 == 2 && n) assert_int_equal(tg_pool_free(p, a[--n].id), TG_OK);
        if (fa.failures) failed_somewhere = 1;
      }
      assert_pool_ok(p);
      tg_pool_destroy(p);
      assert_int_equal(fa.live_blocks, 0);
    }
  }
}

/* ---- the host device ---- */

static void host_device_pool_hands_out_real_memory(void **state) {
  (void)state;
  tg_failing_allocator fa;
  tg_failing_allocator_init(&fa, NULL, 0);
  tg_device_options dopt = {0};
  dopt.backend = TG_BACKEND_HOST;
  tg_device *dev = NULL;
  assert_int_equal(tg_device_open(&dopt, &fa.base, &dev, NULL, NULL, NULL), TG_OK);
  for (int pol = 0; pol < TG_POOL_POLICY_COUNT; ++pol) {
    tg_pool *p = make_pool(dev, (tg_pool_policy)pol, 0, pol == TG_POOL_EXACT ? 0 : 1 << 16, 0, NULL);
    tg_pool_stats s;
    tg_pool_get_stats(p, &s);
    assert_int_equal(s.capacity, tg_device_get_info(dev)->memory_budget); /* 0 = the budget */
    assert_int_equal(s.alignment, tg_device_get_info(dev)->buffer_alignment);
    /* Write a pattern into every live allocation; each must still hold it when freed. */
    tg_test_rng rng = {42u + (uint64_t)pol};
    tg_pool_allocation live[64];
    uint8_t tag[64];
    size_t n = 0;
    for (int op = 0; op < 2000; ++op) {
      if (n < 64 && (n == 0 || tg_test_rng_range(&rng, 0, 1))) {
        uint64_t bytes = tg_test_rng_range(&rng, 1, 40000);
        assert_int_equal(tg_pool_alloc(p, bytes, &live[n], NULL), TG_OK);
        assert_int_not_equal(live[n].memory, 0);
        assert_int_equal((live[n].memory + live[n].offset) % 64, 0);
        tag[n] = (uint8_t)op;
        memset((void *)(uintptr_t)(live[n].memory + live[n].offset), tag[n], (size_t)live[n].size);
        n++;
      } else {
        size_t k = (size_t)tg_test_rng_range(&rng, 0, n - 1);
        const uint8_t *m = (const uint8_t *)(uintptr_t)(live[k].memory + live[k].offset);
        for (uint64_t i = 0; i < live[k].size; ++i)
          if (m[i] != tag[k]) fail_msg("byte %llu of an allocation was overwritten", (unsigned long long)i);
        assert_int_equal(tg_pool_free(p, live[k].id), TG_OK);
        live[k] = live[--n];
        tag[k] = tag[n];
      }
    }
    assert_pool_ok(p);
    tg_pool_allocation img;
    assert_int_equal(tg_pool_alloc_image(p, TG_STORAGE_TEXTURE_3D, (tg_extent){8, 8, 3}, &img, NULL), TG_OK);
    assert_int_not_equal(img.memory, 0);
    tg_pool_destroy(p); /* releases blocks with live allocations too */
  }
  tg_device_close(dev);
  assert_int_equal(fa.live_blocks, 0);
}

static void host_device_failures_roll_back(void **state) {
  (void)state;
  /* The Nth device allocation fails: that call fails, nothing changes, later calls work. */
  for (int pol = 0; pol < TG_POOL_POLICY_COUNT; ++pol) {
    for (uint64_t at = 1; at <= 12; ++at) {
      tg_failing_allocator fa;
      tg_failing_allocator_init(&fa, NULL, 0);
      tg_device_options dopt = {0};
      dopt.backend = TG_BACKEND_HOST;
      dopt.fail_device_alloc_at = at;
      tg_device *dev = NULL;
      assert_int_equal(tg_device_open(&dopt, &fa.base, &dev, NULL, NULL, NULL), TG_OK);
      tg_pool *p = make_pool(dev, (tg_pool_policy)pol, 64 * MiB, 0, 0, NULL);
      tg_pool_allocation a[12];
      int failures = 0;
      for (int i = 0; i < 12; ++i) {
        tg_pool_stats before, after;
        tg_pool_get_stats(p, &before);
        tg_error_info err = {{0}};
        tg_status st = i % 4 == 3 ? tg_pool_alloc_image(p, TG_STORAGE_TEXTURE_2D, (tg_extent){(uint64_t)i, 8, 1}, &a[i], &err)
                                  : tg_pool_alloc(p, 1000u * (uint64_t)(i + 1), &a[i], &err);
        if (st != TG_OK) {
          assert_int_equal(st, TG_ERROR_OUT_OF_DEVICE_MEMORY);
          assert_non_null(strstr(err.message, "TANGRAM_FAIL_DEVICE_ALLOC_AT"));
          tg_pool_get_stats(p, &after);
          assert_memory_equal(&before, &after, sizeof before);
          failures++;
          a[i].id = 0;
        }
      }
      assert_int_equal(failures, 1);
      assert_pool_ok(p);
      for (int i = 0; i < 12; ++i)
        if (a[i].id) assert_int_equal(tg_pool_free(p, a[i].id), TG_OK);
      assert_int_equal(tg_pool_trim(p, NULL), TG_OK);
      tg_pool_stats s;
      tg_pool_get_stats(p, &s);
      assert_int_equal(s.reserved, 0);
      assert_int_equal(s.driver_allocations, 11);
      tg_pool_destroy(p);
      tg_device_close(dev);
      assert_int_equal(fa.live_blocks, 0);
    }
  }
}

static void unsynchronized_pool_behaves_the_same(void **state) {
  (void)state;
  tg_pool_options o = {TG_POOL_TLSF, 1 << 20, 0, 0, TG_PRECISION_FP16, 1};
  tg_pool *p = NULL;
  assert_int_equal(tg_pool_create(NULL, &o, NULL, &p, NULL), TG_OK);
  tg_pool_allocation a;
  assert_int_equal(tg_pool_alloc_image(p, TG_STORAGE_TEXTURE_2D, (tg_extent){4, 4, 1}, &a, NULL), TG_OK);
  assert_int_equal(a.size, 4 * 4 * 8); /* fp16 texels */
  assert_int_equal(tg_pool_free(p, a.id), TG_OK);
  assert_pool_ok(p);
  tg_pool_destroy(p);
}

TG_TEST_MAIN(cmocka_unit_test(policy_names_round_trip), cmocka_unit_test(bad_options_are_refused),
             cmocka_unit_test(seed_004_exact_reuses_t_a_for_t_d),
             cmocka_unit_test(seed_004_one_byte_less_fails_cleanly),
             cmocka_unit_test(seed_004_fit_policies_peak_lower), cmocka_unit_test(capacity_edges),
             cmocka_unit_test(zero_and_absurd_sizes), cmocka_unit_test(bad_frees_change_nothing),
             cmocka_unit_test(trim_gives_back_only_unused_blocks),
             cmocka_unit_test(images_are_pooled_whole),
             cmocka_unit_test(every_policy_matches_the_reference),
             cmocka_unit_test(tlsf_classes_hold_what_they_promise),
             cmocka_unit_test(host_alloc_failures_leave_the_pool_unchanged),
             cmocka_unit_test(host_device_pool_hands_out_real_memory),
             cmocka_unit_test(host_device_failures_roll_back),
             cmocka_unit_test(unsynchronized_pool_behaves_the_same))
