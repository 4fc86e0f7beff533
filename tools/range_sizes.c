#include "tools/range_sizes.h"

#include <stdio.h>
#include <string.h>

#include "tools/cli.h"

int tg_cli_sizes_option(int argc, char **argv, int *i, const char **text) {
  return tg_cli_option(argc, argv, i, "--sizes", text);
}

void tg_cli_sizes_free(tg_cli_sizes *s) {
  if (s->at != NULL) tg__free(s->alloc, s->at);
  memset(s, 0, sizeof *s);
}

void tg_cli_size_text(const int64_t *dims, uint32_t count, char *buf, size_t size) {
  if (count >= 2) snprintf(buf, size, "%lldx%lld", (long long)dims[0], (long long)dims[1]);
  else snprintf(buf, size, "%lld", count ? (long long)dims[0] : 0ll);
}

static int dim_text(const tg_dim_range *d, char *buf, size_t size) {
  if (d->step == 1) return snprintf(buf, size, "%lld..%lld", (long long)d->lo, (long long)d->hi);
  return snprintf(buf, size, "%lld..%lld/%lld", (long long)d->lo, (long long)d->hi, (long long)d->step);
}

void tg_cli_range_text(const tg_size_range *range, char *buf, size_t size) {
  if (size == 0) return;
  buf[0] = '\0';
  int n = range->count >= 1 ? dim_text(&range->dim[0], buf, size) : 0;
  if (range->count >= 2 && n >= 0 && (size_t)n + 1 < size) {
    buf[n] = 'x';
    dim_text(&range->dim[1], buf + n + 1, size - (size_t)n - 1);
  }
}

static int alloc_sizes(const tg_size_range *range, size_t count, const tg_allocator *alloc, tg_cli_sizes *out) {
  memset(out, 0, sizeof *out);
  out->alloc = alloc;
  out->dims = range->count;
  out->at = tg__calloc(alloc, count ? count * range->count : 1, sizeof *out->at);
  return out->at != NULL;
}

/* Why `dims` is not a size of `range` (into `why`), or 0 when it is one. */
static int size_problem(const tg_size_range *range, const int64_t *dims, char *why, size_t size) {
  uint64_t index;
  if (tg_size_range_index(range, dims, &index) == TG_OK) return 0;
  char s[64], r[128];
  tg_cli_size_text(dims, range->count, s, sizeof s);
  tg_cli_range_text(range, r, sizeof r);
  int outside = 0;
  for (uint32_t d = 0; d < range->count; ++d) outside |= dims[d] < range->dim[d].lo || dims[d] > range->dim[d].hi;
  if (outside) snprintf(why, size, "size %s is outside the range %s", s, r);
  else snprintf(why, size, "size %s is not on the range's grid %s (each dimension LO + a multiple of STEP)", s, r);
  return 1;
}

int tg_cli_sizes_parse(const char *cmd, const char *text, const tg_size_range *range, const tg_allocator *alloc,
                       tg_cli_sizes *out) {
  memset(out, 0, sizeof *out);
  size_t count = 1;
  for (const char *p = text; *p; ++p) count += *p == ',';
  if (count > TG_CLI_SIZES_MAX) {
    tg_cli_error("%s: --sizes: %zu sizes, at most %u", cmd, count, TG_CLI_SIZES_MAX);
    return 0;
  }
  if (!alloc_sizes(range, count, alloc, out)) {
    tg_cli_error("%s: out of memory", cmd);
    return 0;
  }
  const char *p = text;
  for (size_t k = 0; k < count; ++k) {
    const char *start = p;
    uint32_t d = 0;
    int64_t *dims = &out->at[k * range->count];
    for (;;) {
      uint64_t v = 0;
      const char *digits = p;
      while (*p >= '0' && *p <= '9') {
        if (v > (uint64_t)INT64_MAX / 10 || v * 10 + (uint64_t)(*p - '0') > (uint64_t)INT64_MAX) break;
        v = v * 10 + (uint64_t)(*p++ - '0');
      }
      int ok = p > digits && !(*p >= '0' && *p <= '9') && d < range->count;
      if (ok) dims[d++] = (int64_t)v;
      if (ok && *p == 'x') {
        ++p;
        continue;
      }
      if (!ok || (*p != ',' && *p != '\0') || d != range->count) {
        size_t len = strcspn(start, ",");
        tg_cli_error("%s: --sizes %s: '%.*s' is not a size: give %s, the range's %u dynamic dimension%s in order%s "
                     "(e.g. --sizes %s)", cmd, text, (int)(len > 64 ? 64 : len), start,
                     range->count == 1 ? "one number" : "two numbers joined by 'x'", range->count,
                     range->count == 1 ? "" : "s", range->count == 1 ? "" : ", the last fastest",
                     range->count == 1 ? "320,640" : "320x640,960x960");
        tg_cli_sizes_free(out);
        return 0;
      }
      break;
    }
    char why[256];
    if (size_problem(range, dims, why, sizeof why)) {
      tg_cli_error("%s: --sizes %s: %s", cmd, text, why);
      tg_cli_sizes_free(out);
      return 0;
    }
    if (*p == ',') ++p;
  }
  out->count = count;
  return 1;
}

int tg_cli_sizes_default(const tg_size_range *range, uint64_t all_up_to, uint64_t between, const tg_allocator *alloc,
                         tg_cli_sizes *out) {
  uint64_t points = tg_size_range_point_count(range);
  uint64_t count = points <= all_up_to || points <= between + 2 ? points : between + 2;
  if (!alloc_sizes(range, (size_t)count, alloc, out)) return 0;
  for (uint64_t k = 0; k < count; ++k) {
    /* Evenly spaced point indices, both ends included (all of them when count == points),
     * computed without overflow for any point count. */
    uint64_t p = 0;
    if (count > 1) {
      uint64_t q = (points - 1) / (count - 1), r = (points - 1) % (count - 1);
      p = q * k + (r * k + (count - 1) / 2) / (count - 1);
    }
    tg_size_range_point(range, p, &out->at[k * range->count]);
  }
  out->count = (size_t)count;
  return 1;
}

int tg_cli_sizes_single(const char *cmd, const tg_size_range *range, const int64_t *dims, const tg_allocator *alloc,
                        tg_cli_sizes *out) {
  char why[256];
  memset(out, 0, sizeof *out);
  if (size_problem(range, dims, why, sizeof why)) {
    tg_cli_error("%s: %s", cmd, why);
    return 0;
  }
  if (!alloc_sizes(range, 1, alloc, out)) {
    tg_cli_error("%s: out of memory", cmd);
    return 0;
  }
  memcpy(out->at, dims, range->count * sizeof *out->at);
  out->count = 1;
  return 1;
}
