#include "tools/range_sizes.h"

#include <stdio.h>
#include <string.h>

#include "tools/cli.h"

void tg_cli_sizes_free(tg_cli_sizes *s) {
  if (s->point != NULL) tg__free(s->alloc, s->point);
  memset(s, 0, sizeof *s);
}

void tg_cli_range_size_name(const tg_size_range *range, const int64_t *dims, char *buf, size_t size) {
  if (range->count == 1) snprintf(buf, size, "%lld", (long long)dims[0]);
  else snprintf(buf, size, "%lldx%lld", (long long)dims[0], (long long)dims[1]);
}

void tg_cli_range_text(const tg_model_range *r, char *buf, size_t size) {
  const tg_graph *g = r->model->graph;
  size_t len = 0;
  if (size == 0) return;
  buf[0] = '\0';
  for (uint32_t d = 0; d < r->range.count && len < size; ++d) {
    const char *name = "?";
    uint32_t axis = 0;
    for (size_t k = 0; k < r->axis_count; ++k)
      if (r->axes[k].dim == d) {
        name = g->tensors[g->inputs[r->axes[k].input]].name;
        axis = r->axes[k].axis;
        break;
      }
    int n = snprintf(buf + len, size - len, "%s%s[%u] %lld..%lld/%lld", d ? ", " : "", name, axis,
                     (long long)r->range.dim[d].lo, (long long)r->range.dim[d].hi, (long long)r->range.dim[d].step);
    if (n < 0) break;
    len += (size_t)n;
  }
}

static int sizes_alloc(const char *cmd, size_t count, const tg_allocator *alloc, tg_cli_sizes *out) {
  memset(out, 0, sizeof *out);
  out->alloc = alloc;
  out->point = tg__calloc(alloc, count ? count : 1, sizeof *out->point);
  if (out->point != NULL) return TG_EXIT_OK;
  tg_cli_error("%s: out of memory", cmd);
  return TG_EXIT_FAILURE;
}

/* `dims`, given as `item` to `option`, into its point index of `r`'s range; 0 with the problem
 * printed, naming the size and the range. */
static int size_point(const char *cmd, const char *option, const char *item, const tg_model_range *r,
                      const int64_t *dims, uint64_t *point) {
  const tg_size_range *range = &r->range;
  char what[160];
  tg_cli_range_text(r, what, sizeof what);
  for (uint32_t d = 0; d < range->count; ++d) {
    const tg_dim_range *dr = &range->dim[d];
    if (dims[d] < dr->lo || dims[d] > dr->hi) {
      tg_cli_error("%s: %s: %s is outside the range: dimension %u is %lld, the range takes %lld..%lld/%lld (%s)", cmd,
                   option, item, d + 1, (long long)dims[d], (long long)dr->lo, (long long)dr->hi, (long long)dr->step,
                   what);
      return 0;
    }
    if ((dims[d] - dr->lo) % dr->step != 0) {
      int64_t below = dr->lo + (dims[d] - dr->lo) / dr->step * dr->step;
      tg_cli_error("%s: %s: %s is off the range's step: dimension %u is %lld, the range takes %lld..%lld/%lld "
                   "(%lld or %lld; %s)",
                   cmd, option, item, d + 1, (long long)dims[d], (long long)dr->lo, (long long)dr->hi,
                   (long long)dr->step, (long long)below, (long long)(below + dr->step), what);
      return 0;
    }
  }
  return tg_size_range_index(range, dims, point) == TG_OK;
}

/* One --sizes entry (`len` bytes at `item`) into its point index; 0 with the problem printed. */
static int parse_size(const char *cmd, const char *text, const char *item, size_t len, const tg_model_range *r,
                      uint64_t *point) {
  const tg_size_range *range = &r->range;
  char name[96], buf[96], what[160];
  if (len == 0) {
    tg_cli_error("%s: --sizes '%s': an empty size (sizes are separated by one comma)", cmd, text);
    return 0;
  }
  snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), item);
  memcpy(buf, name, sizeof buf);
  int64_t dims[TG_RANGE_MAX_DIMS] = {0, 0};
  uint32_t n = 0;
  int ok = len < sizeof buf;
  for (char *p = buf; ok;) {
    char *x = strchr(p, 'x');
    if (x) *x = '\0';
    uint64_t v;
    ok = n < range->count && tg_cli_parse_u64(p, 0, &v) && v <= (uint64_t)INT64_MAX;
    if (ok) dims[n++] = (int64_t)v;
    if (x == NULL) break;
    p = x + 1;
  }
  if (!ok || n != range->count) {
    tg_cli_range_text(r, what, sizeof what);
    tg_cli_error("%s: --sizes: '%.*s%s' is not a size of the range %s: give %s", cmd, (int)(len < 64 ? len : 64), item,
                 len > 64 ? "..." : "", what,
                 range->count == 1 ? "one number, the dynamic dimension"
                                   : "the two dynamic dimensions in order, joined by x (e.g. 320x640)");
    return 0;
  }
  return size_point(cmd, "--sizes", name, r, dims, point);
}

int tg_cli_sizes_parse(const char *cmd, const char *text, const tg_model_range *r, const tg_allocator *alloc,
                       tg_cli_sizes *out) {
  memset(out, 0, sizeof *out);
  size_t count = 1;
  for (const char *c = text; *c; ++c) count += *c == ',';
  if (count > TG_CLI_SIZES_MAX) {
    tg_cli_error("%s: --sizes: %zu sizes, at most %u", cmd, count, TG_CLI_SIZES_MAX);
    return TG_EXIT_USAGE;
  }
  int code = sizes_alloc(cmd, count, alloc, out);
  const char *at = text;
  for (size_t k = 0; k < count && code == TG_EXIT_OK; ++k) {
    const char *comma = strchr(at, ',');
    size_t len = comma ? (size_t)(comma - at) : strlen(at);
    if (!parse_size(cmd, text, at, len, r, &out->point[k])) code = TG_EXIT_USAGE;
    at = comma ? comma + 1 : at + len;
  }
  if (code != TG_EXIT_OK) {
    tg_cli_sizes_free(out);
    return code;
  }
  out->count = count;
  return TG_EXIT_OK;
}

int tg_cli_sizes_single(const char *cmd, const char *option, const tg_model_range *r, const int64_t *dims,
                        const tg_allocator *alloc, tg_cli_sizes *out) {
  char name[64];
  uint64_t point;
  memset(out, 0, sizeof *out);
  tg_cli_range_size_name(&r->range, dims, name, sizeof name);
  if (!size_point(cmd, option, name, r, dims, &point)) return TG_EXIT_USAGE;
  int code = sizes_alloc(cmd, 1, alloc, out);
  if (code != TG_EXIT_OK) return code;
  out->point[0] = point;
  out->count = 1;
  return TG_EXIT_OK;
}

int tg_cli_sizes_default(const char *cmd, const tg_size_range *range, uint64_t all_up_to, uint64_t between,
                         const tg_allocator *alloc, tg_cli_sizes *out) {
  uint64_t points = tg_size_range_point_count(range);
  uint64_t count = points <= all_up_to || points <= between + 2 ? points : between + 2;
  int code = sizes_alloc(cmd, (size_t)count, alloc, out);
  if (code != TG_EXIT_OK) return code;
  for (uint64_t k = 0; k < count; ++k) {
    /* Evenly spread point indices, both ends included (all of them when count == points),
     * computed without overflow for any point count. */
    uint64_t p = 0;
    if (count > 1) {
      uint64_t q = (points - 1) / (count - 1), rest = (points - 1) % (count - 1);
      p = q * k + (rest * k + (count - 1) / 2) / (count - 1);
    }
    out->point[k] = p;
  }
  out->count = (size_t)count;
  return TG_EXIT_OK;
}
