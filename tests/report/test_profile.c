/* Device profiles (tangram/profile.h): the text round trip, refusals with the line named
 * (cut files, other versions, missing, repeated and bad entries), and estimates that add up. */
#define _POSIX_C_SOURCE 200809L
#include "support/tg_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tangram/model.h"
#include "tangram/profile.h"
#include "tangram/report.h"

static tg_device_profile sample(void) {
  tg_device_profile p;
  memset(&p, 0, sizeof p);
  snprintf(p.backend, sizeof p.backend, "opencl");
  snprintf(p.device, sizeof p.device, "Mali-G78 r0p0");
  p.precision = TG_PRECISION_FP16;
  p.dispatch_us = 12.5;
  for (int k = 0; k < TG_PROFILE_KIND_COUNT; ++k)
    for (int a = 0; a < TG_ACCESS_COUNT; ++a) p.gbps[k][a] = 1.0 + k * 10 + a;
  p.gbps[TG_PROFILE_TEXTURE_3D][TG_ACCESS_LINEAR] = 0; /* none */
  p.limits = tg_device_limits_default();
  p.max_allocation = 1ull << 30;
  p.buffer_alignment = 64;
  p.image_alignment = 256;
  p.images = 1;
  return p;
}

static void round_trip(void **state) {
  (void)state;
  tg_device_profile p = sample(), q;
  char *text = NULL;
  size_t len = 0;
  assert_int_equal(tg_device_profile_write(&p, NULL, &text, &len), TG_OK);
  assert_int_equal(strlen(text), len);
  assert_non_null(strstr(text, "bandwidth texture_3d linear none\n"));
  tg_error_info err = {{0}};
  assert_int_equal(tg_device_profile_read(text, len, &q, &err), TG_OK);
  assert_string_equal(q.device, "Mali-G78 r0p0");
  assert_int_equal(q.precision, TG_PRECISION_FP16);
  for (int k = 0; k < TG_PROFILE_KIND_COUNT; ++k)
    for (int a = 0; a < TG_ACCESS_COUNT; ++a) assert_true(q.gbps[k][a] == p.gbps[k][a]);
  assert_memory_equal(&q.limits, &p.limits, sizeof q.limits);
  assert_int_equal(q.image_alignment, 256);
  /* Every proper prefix is refused; the whole text (and with comments and CRLF) is not. */
  for (size_t cut = 0; cut + 1 < len; ++cut) {
    err.message[0] = '\0';
    if (tg_device_profile_read(text, cut, &q, &err) != TG_ERROR_PARSE) fail_msg("prefix of %zu bytes accepted", cut);
    assert_true(err.message[0] != '\0');
  }
  tg_report_free(NULL, text);
}

static void refusals_name_the_line(void **state) {
  (void)state;
  tg_device_profile p = sample(), q;
  char *text = NULL;
  size_t len = 0;
  assert_int_equal(tg_device_profile_write(&p, NULL, &text, &len), TG_OK);
  static const struct {
    const char *from, *to, *message;
  } cases[] = {
      {"tangram-profile 2", "tangram-profile 3", "profile version 3; this build reads versions 1 and 2"},
      {"tangram-profile 2", "hello", "not a Tangram device profile"},
      /* Version 1 had no image_buffer kind; version 2 must give it. */
      {"tangram-profile 2", "tangram-profile 1", "line 19: unknown kind or pattern 'image_buffer linear'"},
      {"bandwidth image_buffer linear 41\n", "", "'bandwidth image_buffer linear' is missing"},
      {"\nend\n", "\n", "cut short"},
      {"dispatch_us 12.5\n", "", "'dispatch_us' is missing"},
      {"bandwidth buffer linear 1\n", "", "'bandwidth buffer linear' is missing"},
      {"bandwidth buffer linear 1\n", "bandwidth buffer linear 1\nbandwidth buffer linear 2\n", "given twice"},
      {"bandwidth buffer linear 1\n", "bandwidth buffer linear -1\n", "bad bandwidth"},
      {"bandwidth buffer linear 1\n", "bandwidth buffer linear nan\n", "bad bandwidth"},
      {"bandwidth buffer linear 1\n", "bandwidth buffer zigzag 1\n", "unknown kind or pattern"},
      {"images 1\n", "images 2\n", "images must be 0 or 1"},
      {"buffer_alignment 64\n", "buffer_alignment 99999999999999999999999\n", "bad number"},
      {"buffer_alignment 64\n", "colour blue\n", "unknown entry 'colour'"},
      {"\nend\n", "\nend\nbackend vulkan\n", "text after 'end'"},
      /* The writer turns CR into a space: a CR inside a line could not come back. */
      {"\ndevice ", "\ndevice x\ry", "control character 0x0d at column 9"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
    const char *at = strstr(text, cases[i].from);
    assert_non_null(at);
    char buf[4096];
    snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - text), text, cases[i].to, at + strlen(cases[i].from));
    tg_error_info err = {{0}};
    memset(&q, 0x33, sizeof q);
    tg_device_profile before = q;
    tg_status st = tg_device_profile_read(buf, strlen(buf), &q, &err);
    if (st != TG_ERROR_PARSE || strstr(err.message, cases[i].message) == NULL)
      fail_msg("case %zu: status %d, message '%s', expected '%s'", i, (int)st, err.message, cases[i].message);
    assert_memory_equal(&q, &before, sizeof q);
  }
  tg_report_free(NULL, text);
}

/* A version 1 profile (written before image buffers were measured) is read, its image_buffer
 * rows taken from buffer's; the same text as version 2 lacks them. */
static void version_1_prices_image_buffers_as_buffers(void **state) {
  (void)state;
  tg_device_profile p = sample(), q;
  char *text = NULL;
  size_t len = 0;
  assert_int_equal(tg_device_profile_write(&p, NULL, &text, &len), TG_OK);
  assert_non_null(strstr(text, "tangram-profile 2\n"));
  /* Drop the image_buffer rows and say version 1. */
  char v1[4096];
  size_t n = 0;
  for (const char *line = text; *line;) {
    const char *end = strchr(line, '\n');
    size_t l = end ? (size_t)(end - line) + 1 : strlen(line);
    if (strncmp(line, "bandwidth image_buffer ", 23) != 0) {
      assert_true(n + l < sizeof v1);
      memcpy(v1 + n, line, l);
      n += l;
    }
    line += l;
  }
  v1[n] = '\0';
  char *h = strstr(v1, "tangram-profile 2");
  assert_non_null(h);
  h[16] = '1';
  tg_error_info err = {{0}};
  assert_int_equal(tg_device_profile_read(v1, n, &q, &err), TG_OK);
  for (int a = 0; a < TG_ACCESS_COUNT; ++a) {
    assert_true(q.gbps[TG_PROFILE_IMAGE_BUFFER][a] == p.gbps[TG_PROFILE_BUFFER][a]);
    assert_true(q.gbps[TG_PROFILE_TEXTURE_2D][a] == p.gbps[TG_PROFILE_TEXTURE_2D][a]);
  }
  h[16] = '2';
  assert_int_equal(tg_device_profile_read(v1, n, &q, &err), TG_ERROR_PARSE);
  assert_non_null(strstr(err.message, "'bandwidth image_buffer linear' is missing"));
  tg_report_free(NULL, text);
}

/* The estimate of a graph: the sum of its classes, one dispatch per planned output, and the
 * bytes of tg_proxy_bytes; a kind the profile lacks is named. */
static void estimates_add_up(void **state) {
  (void)state;
  char path[1024];
  tg_model *m = NULL;
  tg_error_info err = {{0}};
  assert_int_equal(tg_model_load(tg_test_data_path(path, sizeof path, "graphs/speed.graph"), NULL, &m, &err), TG_OK);
  tg_lifetimes *lt = NULL;
  assert_int_equal(tg_graph_compute_lifetimes(m->graph, NULL, NULL, &lt, &err), TG_OK);
  tg_device_profile p = sample();
  p.precision = TG_PRECISION_FP32;
  tg_model_records *mr = NULL;
  assert_int_equal(tg_model_records_create(m->graph, lt, TG_STORAGE_BUFFER, TG_PRECISION_FP32, NULL, NULL, &mr, &err),
                   TG_OK);
  tg_profile_estimate e;
  assert_int_equal(tg_device_profile_estimate(&p, m->graph, mr, &e, &err), TG_OK);
  double sum = 0;
  for (int c = 0; c < TG_OP_CLASS_COUNT; ++c) {
    assert_true(e.class_ms[c] > 0);
    sum += e.class_ms[c];
  }
  assert_true(sum > e.total_ms * 0.999999 && sum < e.total_ms * 1.000001);
  /* Elementwise: GUARD writes 11 guards of 8 texels (no reads) and ADD reads 2 x 144 texels
   * to write 144 (1x6x8x12: 48 pixels x 3 slices); fp32 texels of 16 bytes; buffer linear at
   * 1 GB/s; 12 dispatches of 12.5 us. */
  double bytes = (11.0 * 8 + 3.0 * 144) * 16;
  double expect = 12 * 0.0125 + bytes / 1e9 * 1000.0;
  if (e.class_ms[TG_OP_CLASS_ELEMENTWISE] < expect * 0.999999 || e.class_ms[TG_OP_CLASS_ELEMENTWISE] > expect * 1.000001)
    fail_msg("elementwise %.9f ms, expected %.9f", e.class_ms[TG_OP_CLASS_ELEMENTWISE], expect);
  tg_model_records_destroy(mr);
  assert_int_equal(tg_model_records_create(m->graph, lt, TG_STORAGE_TEXTURE_3D, TG_PRECISION_FP32, NULL, NULL, &mr, &err),
                   TG_OK);
  assert_int_equal(tg_device_profile_estimate(&p, m->graph, mr, &e, &err), TG_ERROR_UNSUPPORTED);
  assert_non_null(strstr(err.message, "texture_3d linear"));
  tg_model_records_destroy(mr);
  tg_lifetimes_destroy(lt);
  tg_model_destroy(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(round_trip),
      cmocka_unit_test(refusals_name_the_line),
      cmocka_unit_test(version_1_prices_image_buffers_as_buffers),
      cmocka_unit_test(estimates_add_up),
  };
  return cmocka_run_group_tests_name("profile", tests, NULL, NULL);
}
