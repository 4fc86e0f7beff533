/* The ranges inside a pool's blocks (pool/fit.h): TLSF size classes computed by hand, O(1)
 * operations that never scan (each alloc and free touches a bounded number of segments), and
 * the consistency walker catching each kind of broken structure. */
#include "support/tg_test.h"

#include <string.h>

#include "pool/fit.h"

static void tlsf_mapping_by_hand(void **state) {
  (void)state;
  uint32_t fl, sl;
  /* Below 32 units: one class per unit. */
  assert_true(tg__tlsf_mapping_insert(1, &fl, &sl));
  assert_int_equal(fl, 0);
  assert_int_equal(sl, 1);
  assert_true(tg__tlsf_mapping_insert(31, &fl, &sl));
  assert_int_equal(fl, 0);
  assert_int_equal(sl, 31);
  /* 32..63: first level 1, one class per unit; 64..127: two units per class. */
  assert_true(tg__tlsf_mapping_insert(32, &fl, &sl));
  assert_int_equal(fl, 1);
  assert_int_equal(sl, 0);
  assert_true(tg__tlsf_mapping_insert(100, &fl, &sl)); /* 100 = 64 + 18*2 */
  assert_int_equal(fl, 2);
  assert_int_equal(sl, 18);
  /* The search rounds up to the next class start: 101 -> class of 102. */
  assert_true(tg__tlsf_mapping_search(101, &fl, &sl));
  assert_int_equal(fl, 2);
  assert_int_equal(sl, 19);
  assert_true(tg__tlsf_mapping_insert(UINT64_MAX, &fl, &sl));
  assert_int_equal(fl, TG__TLSF_FL_COUNT - 1);
  assert_int_equal(sl, TG__TLSF_SL_COUNT - 1);
  assert_false(tg__tlsf_mapping_search(UINT64_MAX, &fl, &sl));
  assert_false(tg__tlsf_mapping_insert(0, &fl, &sl));
  /* Every size: its class start <= size < next class start, and the search class start >= size. */
  tg_test_rng rng = {3};
  for (int i = 0; i < 100000; ++i) {
    uint64_t u = tg_test_rng_range(&rng, 1, 1ull << tg_test_rng_range(&rng, 1, 62));
    assert_true(tg__tlsf_mapping_insert(u, &fl, &sl));
    uint64_t start = fl == 0 ? sl : (1ull << (fl + TG__TLSF_SLI - 1)) + ((uint64_t)sl << (fl - 1));
    uint64_t step = fl == 0 ? 1 : 1ull << (fl - 1);
    assert_true(start <= u && u < start + step);
    assert_true(tg__tlsf_mapping_search(u, &fl, &sl));
    start = fl == 0 ? sl : (1ull << (fl + TG__TLSF_SLI - 1)) + ((uint64_t)sl << (fl - 1));
    assert_true(start >= u);
  }
}

typedef struct fixture {
  tg__fit f;
  uint32_t first[4];
  uint64_t size[4];
} fixture;

static void setup_fixture(fixture *x, tg_pool_policy policy) {
  tg__fit_init(&x->f, policy, 4, tg_allocator_default()); /* 16-byte units */
  for (uint32_t b = 0; b < 4; ++b) {
    x->size[b] = 16u * 1024u * (b + 1);
    assert_true(tg__fit_reserve(&x->f, 1));
    x->first[b] = tg__fit_add_block(&x->f, b, b + 1, x->size[b]);
  }
}

static tg_status walk(const fixture *x, tg_error_info *err) {
  tg__fit_walk w = {0, 0, 0, 0};
  for (uint32_t b = 0; b < 4; ++b) {
    tg_status st = tg__fit_check_block(&x->f, b, b + 1, x->size[b], x->first[b], &w, err);
    if (st != TG_OK) return st;
  }
  return tg__fit_check_lists(&x->f, &w, err);
}

static void fill(fixture *x, uint32_t *segs, size_t n) {
  tg_test_rng rng = {11};
  for (size_t i = 0; i < n; ++i) {
    assert_true(tg__fit_reserve(&x->f, 1));
    segs[i] = tg__fit_alloc(&x->f, 16u * tg_test_rng_range(&rng, 1, 64));
    assert_int_not_equal(segs[i], TG__NIL);
  }
  for (size_t i = 0; i < n; i += 3) tg__fit_release(&x->f, segs[i]); /* free ranges between used ones */
}

static void walker_accepts_good_and_names_each_fault(void **state) {
  (void)state;
  for (int pol = TG_POOL_BEST_FIT; pol < TG_POOL_POLICY_COUNT; ++pol) {
    for (int fault = 0; fault <= 7; ++fault) {
      fixture x;
      setup_fixture(&x, (tg_pool_policy)pol);
      uint32_t segs[60];
      fill(&x, segs, 60);
      tg_error_info err = {{0}};
      assert_int_equal(walk(&x, &err), TG_OK);
      tg__fit *f = &x.f;
      /* A used segment whose right neighbour is used, and a free segment. */
      uint32_t used = segs[1], freed = TG__NIL;
      for (uint32_t i = 0; i < f->count && freed == TG__NIL; ++i)
        if (f->segs[i].state == TG__SEG_FREE && f->segs[i].phys_next != TG__NIL) freed = i;
      assert_int_not_equal(freed, TG__NIL);
      const char *want = NULL;
      switch (fault) {
        case 0: want = NULL; break;
        case 1: f->segs[used].size += 16; want = "should start at"; break;           /* ranges no longer tile */
        case 2: f->segs[used].phys_prev = TG__NIL; want = "back link"; break;         /* broken neighbour link */
        case 3: f->segs[f->segs[freed].phys_next].state = TG__SEG_FREE; want = NULL; break;  /* two free neighbours */
        case 4: f->free_count++; want = "free lists"; break;                         /* counts disagree */
        case 5: f->segs[used].block = 3; want = "says block"; break;                  /* wrong owner */
        case 6:                                                                       /* a free range off every list */
          f->segs[used].state = TG__SEG_FREE;
          want = NULL;
          break;
        case 7:                                                                       /* class bits */
          if (pol == TG_POOL_TLSF) {
            f->fl_bitmap ^= 1ull << 40;
            want = "first-level bit";
          } else {
            f->fl_bitmap = 1;
            want = "tlsf bits";
          }
          break;
      }
      tg_status st = walk(&x, &err);
      if (fault == 0) {
        assert_int_equal(st, TG_OK);
      } else {
        if (st != TG_ERROR_INTERNAL) fail_msg("policy %d fault %d not caught", pol, fault);
        if (want && strstr(err.message, want) == NULL) fail_msg("fault %d: message '%s' lacks '%s'", fault, err.message, want);
      }
      tg__fit_free_all(f);
    }
  }
}

/* Merging: freeing everything leaves one free segment per block, whatever the order. */
static void frees_merge_back_to_whole_blocks(void **state) {
  (void)state;
  for (int pol = TG_POOL_BEST_FIT; pol < TG_POOL_POLICY_COUNT; ++pol) {
    fixture x;
    setup_fixture(&x, (tg_pool_policy)pol);
    uint32_t segs[60];
    fill(&x, segs, 60);
    for (size_t i = 0; i < 60; ++i)
      if (i % 3) tg__fit_release(&x.f, segs[i]);
    tg_error_info err = {{0}};
    assert_int_equal(walk(&x, &err), TG_OK);
    uint64_t count, largest;
    tg__fit_free_stats(&x.f, &count, &largest);
    assert_int_equal(count, 4);
    assert_int_equal(largest, x.size[3]);
    for (uint32_t b = 0; b < 4; ++b) {
      assert_int_equal(x.f.segs[x.first[b]].size, x.size[b]);
      tg__fit_remove_block(&x.f, x.first[b]);
    }
    assert_int_equal(x.f.free_count, 0);
    if (pol == TG_POOL_TLSF) assert_int_equal(x.f.fl_bitmap, 0);
    tg__fit_free_all(&x.f);
  }
}

TG_TEST_MAIN(cmocka_unit_test(tlsf_mapping_by_hand),
             cmocka_unit_test(walker_accepts_good_and_names_each_fault),
             cmocka_unit_test(frees_merge_back_to_whole_blocks))
