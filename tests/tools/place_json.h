/* Reading what the heterogeneous commands print, for the CLI tests: a few JSON values by key
 * (the documents are Tangram's own: compact, keys unique where used here), and an independent
 * check of the spaces against the placement from the per-op and per-record arrays alone. */
#ifndef TG_TESTS_TOOLS_PLACE_JSON_H
#define TG_TESTS_TOOLS_PLACE_JSON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Include after support/tg_test.h (cmocka's fail_msg and assertions). */

/* The text after `"key":` (the first occurrence), or fail. */
static const char *pj_key(const char *json, const char *key) {
  char pat[128];
  snprintf(pat, sizeof pat, "\"%s\":", key);
  const char *p = strstr(json, pat);
  if (p == NULL) fail_msg("no key \"%s\" in the JSON", key);
  return p + strlen(pat);
}

static long long pj_int(const char *json, const char *key) { return strtoll(pj_key(json, key), NULL, 10); }

/* An array of integers: its values into `out` (up to cap); returns the count. */
static size_t pj_ints(const char *json, const char *key, long long *out, size_t cap) {
  const char *p = pj_key(json, key);
  if (*p != '[') fail_msg("\"%s\" is not an array", key);
  ++p;
  size_t n = 0;
  while (*p && *p != ']') {
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p) fail_msg("\"%s\": not an integer at '%.20s'", key, p);
    if (n < cap) out[n] = v;
    ++n;
    p = end;
    if (*p == ',') ++p;
  }
  return n;
}

/* An array of short strings without escapes (names of processors and spaces): the first
 * letter of each into `out`. Returns the count. */
static size_t pj_tags(const char *json, const char *key, char *out, size_t cap) {
  const char *p = pj_key(json, key);
  if (*p != '[') fail_msg("\"%s\" is not an array", key);
  ++p;
  size_t n = 0;
  while (*p && *p != ']') {
    if (*p != '"') fail_msg("\"%s\": not a string at '%.20s'", key, p);
    if (n < cap) out[n] = p[1];
    ++n;
    p = strchr(p + 1, '"');
    if (p == NULL) fail_msg("\"%s\": unterminated string", key);
    ++p;
    if (*p == ',') ++p;
  }
  return n;
}

/* The number of strings in an array of strings (names may hold escapes). */
static size_t pj_string_count(const char *json, const char *key) {
  const char *p = pj_key(json, key);
  if (*p != '[') fail_msg("\"%s\" is not an array", key);
  ++p;
  size_t n = 0;
  while (*p && *p != ']') {
    if (*p != '"') fail_msg("\"%s\": not a string", key);
    ++p;
    while (*p && *p != '"') p += (*p == '\\') ? 2 : 1;
    if (*p != '"') fail_msg("\"%s\": unterminated string", key);
    ++p;
    ++n;
    if (*p == ',') ++p;
  }
  return n;
}

/* Check the records' spaces against the placement, with nothing but the JSON: a record touched
 * (written by producer_of, read by consumers_of) only by gpu ops is in device memory, only by cpu
 * ops in host memory, by both in shared memory (untouched: device). Also: zero_copy_tensors
 * lists exactly the shared records, and "spaces" counts them. Returns the shared records. */
static size_t pj_check_spaces(const char *json) {
  enum { CAP = 4096 };
  char *placement = malloc(CAP), *space = malloc(CAP);
  long long *producer = malloc(CAP * sizeof *producer);
  assert_true(placement && space && producer);
  size_t ops = pj_tags(json, "placement_of", placement, CAP);
  size_t n = pj_tags(json, "space_of", space, CAP);
  assert_true(ops < CAP && n < CAP);
  assert_int_equal(pj_ints(json, "producer_of", producer, CAP), n);
  assert_int_equal(pj_string_count(json, "names"), n);
  /* consumers_of: an array of arrays of ints. */
  const char *p = pj_key(json, "consumers_of");
  assert_true(*p == '[');
  ++p;
  size_t shared = 0, host = 0, device = 0;
  for (size_t r = 0; r < n; ++r) {
    int gpu = 0, cpu = 0;
    if (producer[r] >= 0) {
      assert_true((size_t)producer[r] < ops);
      if (placement[producer[r]] == 'c') cpu = 1;
      else gpu = 1;
    }
    if (*p != '[') fail_msg("consumers_of[%zu] is not an array", r);
    ++p;
    while (*p != ']') {
      char *end;
      long long op = strtoll(p, &end, 10);
      assert_true(end != p && op >= 0 && (size_t)op < ops);
      if (placement[op] == 'c') cpu = 1;
      else gpu = 1;
      p = end;
      if (*p == ',') ++p;
    }
    ++p;
    if (*p == ',') ++p;
    char want = gpu && cpu ? 's' : cpu ? 'h' : 'd';
    if (space[r] != want) fail_msg("record %zu: space '%c', its ops say '%c'", r, space[r], want);
    shared += want == 's';
    host += want == 'h';
    device += want == 'd';
  }
  assert_int_equal(pj_string_count(json, "zero_copy_tensors"), shared);
  /* "spaces": device, host, shared in that order, each with its record count. */
  const char *s = pj_key(json, "spaces");
  const char *d = strstr(s, "{\"space\":\"device\",\"records\":");
  const char *h = strstr(s, "{\"space\":\"host\",\"records\":");
  const char *sh = strstr(s, "{\"space\":\"shared\",\"records\":");
  assert_true(d && h && sh && d < h && h < sh);
  assert_int_equal(strtoull(d + strlen("{\"space\":\"device\",\"records\":"), NULL, 10), device);
  assert_int_equal(strtoull(h + strlen("{\"space\":\"host\",\"records\":"), NULL, 10), host);
  assert_int_equal(strtoull(sh + strlen("{\"space\":\"shared\",\"records\":"), NULL, 10), shared);
  free(placement);
  free(space);
  free(producer);
  return shared;
}

#endif
