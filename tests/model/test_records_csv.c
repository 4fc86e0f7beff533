/* The usage-record CSV reader: every format, and hostile input rejected with file:line. */
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static tg_status parse(const char *text, tg_record_set **out, tg_error_info *err) {
  return tg_records_parse_csv(text, strlen(text), "in.csv", NULL, out, err);
}

static void expect_error(const char *text, const char *needle) {
  tg_record_set *set = (tg_record_set *)1;
  tg_error_info err = {{0}};
  tg_failing_allocator fa;
  tg_failing_allocator_init(&fa, NULL, 0);
  tg_status st = tg_records_parse_csv(text, strlen(text), "in.csv", &fa.base, &set, &err);
  if (st == TG_OK) fail_msg("accepted: %s", text);
  assert_int_equal(st, TG_ERROR_PARSE);
  assert_null(set);
  if (strstr(err.message, needle) == NULL) fail_msg("message '%s' lacks '%s'", err.message, needle);
  assert_int_equal(fa.live_blocks, 0);
}

static void formats(void **state) {
  (void)state;
  tg_record_set *s = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(parse("name,size,first,last\na,16,0,1\nb,8,1,2\n", &s, &err), TG_OK);
  assert_int_equal(s->dims, 1);
  assert_int_equal(s->count, 2);
  assert_string_equal(s->names[1], "b");
  assert_int_equal(s->records[0].size.w, 16);
  assert_int_equal(s->records[0].size.h, 1);
  assert_int_equal(s->records[1].last_task, 2);
  tg_record_set_destroy(s);
  /* No name column, CRLF, blank lines and comments, spaces around fields. */
  assert_int_equal(parse("size,first,last\r\n\r\n# comment\n 16 , 0 , 1 \r\n", &s, &err), TG_OK);
  assert_int_equal(s->count, 1);
  assert_null(s->names[0]);
  tg_record_set_destroy(s);
  assert_int_equal(parse("name,width,height,first,last\nt,2,8,0,1\n", &s, &err), TG_OK);
  assert_int_equal(s->dims, 2);
  assert_int_equal(s->records[0].size.h, 8);
  assert_int_equal(s->records[0].size.d, 1);
  tg_record_set_destroy(s);
  assert_int_equal(parse("name,width,height,depth,first,last\nt,1,2,8,0,1\n", &s, &err), TG_OK);
  assert_int_equal(s->dims, 3);
  assert_int_equal(s->records[0].size.d, 8);
  tg_record_set_destroy(s);
  /* MiniMalloc: half-open [lower, upper), extra columns ignored, id becomes the name. */
  assert_int_equal(parse("id,lower,upper,size,extra\nb0,0,2,16,x\nb1,1,3,8,y\n", &s, &err), TG_OK);
  assert_int_equal(s->dims, 1);
  assert_int_equal(s->records[0].first_task, 0);
  assert_int_equal(s->records[0].last_task, 1);
  assert_int_equal(s->records[1].last_task, 2);
  assert_string_equal(s->names[0], "b0");
  tg_record_set_destroy(s);
  /* Quoted names may hold commas and quotes. */
  assert_int_equal(parse("name,size,first,last\n\"a,b \"\"c\"\"\",4,0,0\n", &s, &err), TG_OK);
  assert_string_equal(s->names[0], "a,b \"c\"");
  tg_record_set_destroy(s);
  /* Header only: a valid empty set. Zero-size tensors are allowed in 1D. */
  assert_int_equal(parse("name,size,first,last\n", &s, &err), TG_OK);
  assert_int_equal(s->count, 0);
  tg_record_set_destroy(s);
  assert_int_equal(parse("size,first,last\n0,3,3\n", &s, &err), TG_OK);
  assert_int_equal(s->records[0].size.w, 0);
  tg_record_set_destroy(s);
  /* The largest values that fit. */
  assert_int_equal(parse("size,first,last\n18446744073709551615,0,4294967280\n", &s, &err), TG_OK);
  assert_true(s->records[0].size.w == UINT64_MAX);
  tg_record_set_destroy(s);
}

static void hostile_input(void **state) {
  (void)state;
  expect_error("", "in.csv: empty file");
  expect_error("\n\n# only comments\n", "empty file");
  expect_error("name,size,first\na,1,0\n", "in.csv:1: header lacks the 'last' column");
  expect_error("name,bytes,first,last\n", "unknown column 'bytes'");
  expect_error("name,size,first,last\na,1,0\n", "in.csv:2: expected 4 fields");
  expect_error("name,size,first,last\na,1,0,1,9\n", "in.csv:2: expected 4 fields");
  expect_error("name,size,first,last\na,-5,0,1\n", "in.csv:2: size '-5' is negative");
  expect_error("name,size,first,last\na,-0,0,1\n", "is negative");
  expect_error("name,size,first,last\na,0x10,0,1\n", "not a plain decimal");
  expect_error("name,size,first,last\na,1e3,0,1\n", "not a plain decimal");
  expect_error("name,size,first,last\na,+4,0,1\n", "not a plain decimal");
  expect_error("name,size,first,last\na,4.0,0,1\n", "not a plain decimal");
  expect_error("name,size,first,last\na,,0,1\n", "size is empty");
  expect_error("name,size,first,last\na,18446744073709551616,0,1\n", "too large");
  expect_error("name,size,first,last\na,99999999999999999999999,0,1\n", "too large");
  expect_error("name,size,first,last\na,4,5,1\n", "in.csv:2: first 5 is after last 1");
  expect_error("name,size,first,last\na,4,0,4294967295\n", "exceeds the largest task index");
  expect_error("name,width,height,first,last\na,0,4,0,1\n", "at least 1");
  expect_error("name,width,height,depth,first,last\na,4294967296,4294967296,2,0,1\n", "overflows 64 bits");
  expect_error("id,lower,upper,size\na,3,3,4\n", "half-open");
  expect_error("name,size,first,last\n\"abc,4,0,1\n", "unterminated quoted field");
  expect_error("size,size,first,last\n", "appears twice");
  expect_error("name,size,width,first,last\n", "either 'size' or 'width,height'");
  /* Line numbers count blank and comment lines. */
  expect_error("size,first,last\n\n# c\n1,0,1\nx,0,1\n", "in.csv:5:");
  /* A NUL byte inside the text. */
  tg_record_set *s = NULL;
  tg_error_info err = {{0}};
  const char nul[] = "size,first,last\n1,0\0,1\n";
  assert_int_equal(tg_records_parse_csv(nul, sizeof nul - 1, "in.csv", NULL, &s, &err), TG_ERROR_PARSE);
  assert_null(s);
}

/* Every prefix of a valid file either parses (to a prefix of the records) or fails cleanly. */
static void truncation_and_flips(void **state) {
  (void)state;
  char path[1024];
  char *text = NULL;
  size_t len = 0;
  FILE *f = fopen(tg_test_data_path(path, sizeof path, "records/selfie_segmentation.buffer.csv"), "rb");
  assert_non_null(f);
  text = malloc(1 << 20);
  len = fread(text, 1, 1 << 20, f);
  fclose(f);
  for (size_t n = 0; n <= len; ++n) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, 0);
    tg_record_set *s = NULL;
    tg_status st = tg_records_parse_csv(text, n, "in.csv", &fa.base, &s, NULL);
    assert_true(st == TG_OK || st == TG_ERROR_PARSE);
    if (st == TG_OK) assert_true(s->count <= 135);
    tg_record_set_destroy(s);
    assert_int_equal(fa.live_blocks, 0);
  }
  tg_test_rng rng = {42};
  for (int i = 0; i < 3000; ++i) {
    char *copy = malloc(len);
    memcpy(copy, text, len);
    for (int k = 0; k < 3; ++k) copy[tg_test_rng_range(&rng, 0, len - 1)] = (char)tg_test_rng_next(&rng);
    tg_record_set *s = NULL;
    tg_status st = tg_records_parse_csv(copy, len, "in.csv", NULL, &s, NULL);
    assert_true(st == TG_OK || st == TG_ERROR_PARSE);
    tg_record_set_destroy(s);
    free(copy);
  }
  free(text);
}

/* Every host allocation the reader makes fails once: clean error, nothing leaked. */
static void allocation_failures(void **state) {
  (void)state;
  const char *text = "name,size,first,last\na,16,0,1\nb,8,1,2\n\"c,d\",4,2,3\n";
  for (uint64_t n = 1;; ++n) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, n);
    tg_record_set *s = NULL;
    tg_status st = tg_records_parse_csv(text, strlen(text), "in.csv", &fa.base, &s, NULL);
    tg_record_set_destroy(s);
    if (tg_test_walk_step(&fa, st, TG_OK)) break;
  }
}

/* Ten million records: read without wrap-around, then rejected above the limit. */
static void many_records(void **state) {
  (void)state;
  size_t n = 10000000;
  const char *line = "1,0,1\n";
  size_t len = strlen("size,first,last\n") + n * strlen(line);
  char *text = malloc(len + 1);
  strcpy(text, "size,first,last\n");
  char *p = text + strlen(text);
  for (size_t i = 0; i < n; ++i, p += 6) memcpy(p, line, 6);
  tg_record_set *s = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(tg_records_parse_csv(text, len, "big.csv", NULL, &s, &err), TG_OK);
  assert_int_equal(s->count, n);
  tg_bounds b;
  assert_int_equal(tg_bounds_compute(s->records, s->count, 1, NULL, &b), TG_OK);
  assert_int_equal(b.naive, n);
  assert_int_equal(b.peak_live, n);
  tg_record_set_destroy(s);
  free(text);
}

TG_TEST_MAIN(cmocka_unit_test(formats), cmocka_unit_test(hostile_input),
             cmocka_unit_test(truncation_and_flips), cmocka_unit_test(allocation_failures),
             cmocka_unit_test(many_records))
