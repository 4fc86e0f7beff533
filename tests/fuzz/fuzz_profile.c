/* libFuzzer target: the device-profile reader (tg_device_profile_read, tangram/profile.h).
 *
 * Properties: a refusal is TG_ERROR_PARSE with a message and leaves the output untouched; an
 * accepted profile has finite bandwidths >= 0 and writes back to a text that reads again to the
 * same profile, byte for byte when written once more (accepted files are canonical after one
 * round); with an allocation failing, writing fails with TG_ERROR_OUT_OF_HOST_MEMORY and no
 * text. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tangram/allocator.h"
#include "tangram/profile.h"
#include "tangram/report.h"

#define FUZZ_FAIL() (fprintf(stderr, "%s:%d: property violated\n", __FILE__, __LINE__), abort())

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tg_device_profile p, q;
  memset(&p, 0x5A, sizeof p);
  tg_device_profile untouched = p;
  tg_error_info err = {{0}};
  tg_status st = tg_device_profile_read((const char *)data, size, &p, &err);
  if (st != TG_OK) {
    if (st != TG_ERROR_PARSE || err.message[0] == '\0') FUZZ_FAIL();
    if (memcmp(&p, &untouched, sizeof p) != 0) FUZZ_FAIL();
    return 0;
  }
  for (int k = 0; k < TG_PROFILE_KIND_COUNT; ++k)
    for (int a = 0; a < TG_ACCESS_COUNT; ++a)
      if (!isfinite(p.gbps[k][a]) || p.gbps[k][a] < 0) FUZZ_FAIL();
  if (!isfinite(p.dispatch_us) || p.dispatch_us < 0) FUZZ_FAIL();
  char *text = NULL, *again = NULL;
  size_t len = 0, len2 = 0;
  if (tg_device_profile_write(&p, NULL, &text, &len) != TG_OK || text == NULL) FUZZ_FAIL();
  if (tg_device_profile_read(text, len, &q, &err) != TG_OK) FUZZ_FAIL();
  if (strcmp(q.backend, p.backend) != 0 || strcmp(q.device, p.device) != 0 || q.precision != p.precision ||
      q.images != p.images || q.arena_images != p.arena_images || memcmp(&q.limits, &p.limits, sizeof q.limits) != 0 ||
      q.max_allocation != p.max_allocation || q.buffer_alignment != p.buffer_alignment ||
      q.image_alignment != p.image_alignment)
    FUZZ_FAIL();
  if (tg_device_profile_write(&q, NULL, &again, &len2) != TG_OK) FUZZ_FAIL();
  tg_device_profile r;
  if (tg_device_profile_read(again, len2, &r, &err) != TG_OK) FUZZ_FAIL();
  char *third = NULL;
  size_t len3 = 0;
  if (tg_device_profile_write(&r, NULL, &third, &len3) != TG_OK) FUZZ_FAIL();
  if (len3 != len2 || memcmp(third, again, len2) != 0) FUZZ_FAIL();
  /* Allocation failures while writing. */
  for (uint64_t n = 1; n < 4; ++n) {
    tg_failing_allocator fa;
    tg_failing_allocator_init(&fa, NULL, n);
    char *t = NULL;
    tg_status ws = tg_device_profile_write(&p, &fa.base, &t, NULL);
    if (ws == TG_OK) {
      if (t == NULL) FUZZ_FAIL();
      tg_report_free(&fa.base, t);
      break;
    }
    if (ws != TG_ERROR_OUT_OF_HOST_MEMORY || t != NULL) FUZZ_FAIL();
  }
  tg_report_free(NULL, text);
  tg_report_free(NULL, again);
  tg_report_free(NULL, third);
  return 0;
}
