/* Device profiles: the text format, its reader, and estimates of proxy times from a profile
 * (tangram/profile.h). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "tangram/profile.h"

static const char *const k_kind_names[TG_PROFILE_KIND_COUNT] = {"buffer", "texture_2d", "texture_array",
                                                                "texture_3d", "image_buffer"};
static const char *const k_pattern_names[TG_ACCESS_COUNT] = {"linear", "neighbourhood", "channel_strided"};

const char *tg_profile_kind_name(tg_profile_kind k) {
  return (int)k >= 0 && k < TG_PROFILE_KIND_COUNT ? k_kind_names[k] : NULL;
}

const char *tg_access_pattern_name(tg_access_pattern p) {
  return (int)p >= 0 && p < TG_ACCESS_COUNT ? k_pattern_names[p] : NULL;
}

tg_profile_kind tg_profile_kind_of(tg_storage s) {
  switch (s) {
    case TG_STORAGE_TEXTURE_2D:
    case TG_STORAGE_SINGLE_TEXTURE_2D:
      return TG_PROFILE_TEXTURE_2D;
    case TG_STORAGE_TEXTURE_ARRAY:
      return TG_PROFILE_TEXTURE_ARRAY;
    case TG_STORAGE_TEXTURE_3D:
      return TG_PROFILE_TEXTURE_3D;
    case TG_STORAGE_IMAGE_BUFFER:
      return TG_PROFILE_IMAGE_BUFFER;
    default:
      return TG_PROFILE_BUFFER;
  }
}

tg_access_pattern tg_access_pattern_of(tg_op_class c) {
  switch (c) {
    case TG_OP_CLASS_STENCIL:
    case TG_OP_CLASS_REDUCTION:
      return TG_ACCESS_NEIGHBOURHOOD;
    case TG_OP_CLASS_CHANNEL_MIXING:
      return TG_ACCESS_CHANNEL_STRIDED;
    default:
      return TG_ACCESS_LINEAR;
  }
}

/* ---- the text format ---- */

/* The integer entries after the bandwidths, in file order. */
typedef struct int_entry {
  const char *name;
  size_t offset;
} int_entry;
#define LIMIT(f) {"limit " #f, offsetof(tg_device_profile, limits) + offsetof(tg_device_limits, f)}
static const int_entry k_ints[] = {
    LIMIT(max_buffer_bytes),      LIMIT(max_image_buffer_texels), LIMIT(max_texture_2d_width),
    LIMIT(max_texture_2d_height), LIMIT(max_texture_3d_width),    LIMIT(max_texture_3d_height),
    LIMIT(max_texture_3d_depth),  LIMIT(max_texture_array_layers),
    {"max_allocation", offsetof(tg_device_profile, max_allocation)},
    {"buffer_alignment", offsetof(tg_device_profile, buffer_alignment)},
    {"image_alignment", offsetof(tg_device_profile, image_alignment)},
};
#undef LIMIT
#define INT_COUNT (sizeof k_ints / sizeof k_ints[0])

tg_status tg_device_profile_write(const tg_device_profile *p, const tg_allocator *alloc, char **text, size_t *length) {
  if (p == NULL || text == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *text = NULL;
  tg__strbuf b;
  tg__strbuf_init(&b, tg__alloc_or_default(alloc));
  tg__strbuf_printf(&b, "tangram-profile %d\n# tangram probe: bandwidth in GB/s of the speed proxies' logical bytes\n",
                    TG_PROFILE_VERSION);
  char device[256];
  size_t n = 0;
  for (const char *c = p->device; *c && n + 1 < sizeof device; ++c) device[n++] = (*c == '\n' || *c == '\r') ? ' ' : *c;
  device[n] = '\0';
  tg__strbuf_printf(&b, "backend %s\ndevice %s\nprecision %s\ndispatch_us %.6g\n", p->backend[0] ? p->backend : "?",
                    device[0] ? device : "?", tg_precision_name(p->precision) ? tg_precision_name(p->precision) : "fp32",
                    p->dispatch_us);
  for (int k = 0; k < TG_PROFILE_KIND_COUNT; ++k)
    for (int a = 0; a < TG_ACCESS_COUNT; ++a) {
      if (p->gbps[k][a] > 0)
        tg__strbuf_printf(&b, "bandwidth %s %s %.6g\n", k_kind_names[k], k_pattern_names[a], p->gbps[k][a]);
      else
        tg__strbuf_printf(&b, "bandwidth %s %s none\n", k_kind_names[k], k_pattern_names[a]);
    }
  for (size_t i = 0; i < INT_COUNT; ++i) {
    uint64_t v;
    memcpy(&v, (const char *)p + k_ints[i].offset, sizeof v);
    tg__strbuf_printf(&b, "%s %llu\n", k_ints[i].name, (unsigned long long)v);
  }
  tg__strbuf_printf(&b, "images %d\narena_images %d\nend\n", p->images ? 1 : 0, p->arena_images ? 1 : 0);
  if (b.failed) {
    tg__strbuf_free(&b);
    return TG_ERROR_OUT_OF_HOST_MEMORY;
  }
  if (length) *length = b.length;
  *text = b.data;
  return TG_OK;
}

/* A number: the whole token, finite, >= 0. */
static int parse_double(const char *s, double *out) {
  if (*s == '\0' || *s == '-' || *s == '+' || *s == ' ') return 0;
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (*end != '\0' || errno != 0 || !isfinite(v) || v < 0) return 0;
  *out = v;
  return 1;
}

static int parse_u64(const char *s, uint64_t *out) {
  if (*s < '0' || *s > '9') return 0;
  uint64_t v = 0;
  for (; *s; ++s) {
    if (*s < '0' || *s > '9') return 0;
    if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10) return 0;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  *out = v;
  return 1;
}

#define FAIL(...) return tg__error(err, TG_ERROR_PARSE, __VA_ARGS__)

tg_status tg_device_profile_read(const char *text, size_t size, tg_device_profile *out, tg_error_info *err) {
  if (text == NULL && size) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "profile: no text");
  if (out == NULL) return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "profile: no output");
  tg_device_profile p;
  memset(&p, 0, sizeof p);
  enum { S_HEADER, S_BACKEND, S_DEVICE, S_PRECISION, S_DISPATCH, S_IMAGES, S_ARENA, S_FIXED };
  int seen_fixed[S_FIXED] = {0};
  int seen_bw[TG_PROFILE_KIND_COUNT][TG_ACCESS_COUNT] = {{0}};
  int seen_int[INT_COUNT] = {0};
  int ended = 0, version = 0;
  size_t line_no = 0, pos = 0;
  char line[512];
  {
    /* A cut file: its first entry is the header, its last is not `end`. Said as such, rather
     * than as whatever the cut left of its last line. */
    size_t first = 0, lines = 0, significant = 0;
    int any_end = 0;
    for (size_t q = 0; q < size;) {
      size_t a = q;
      while (q < size && text[q] != '\n') ++q;
      size_t b = q;
      if (q < size) ++q;
      ++lines;
      while (a < b && (text[a] == ' ' || text[a] == '\t')) ++a;
      while (b > a && (text[b - 1] == '\r' || text[b - 1] == ' ' || text[b - 1] == '\t')) --b;
      if (a == b || text[a] == '#') continue;
      if (significant++ == 0) first = a;
      any_end |= b - a == 3 && memcmp(text + a, "end", 3) == 0;
    }
    if (significant > 0 && size - first >= 16 && memcmp(text + first, "tangram-profile ", 16) == 0 && !any_end)
      FAIL("profile: cut short after line %zu (no 'end' line)", lines);
  }
  while (pos < size) {
    size_t start = pos;
    while (pos < size && text[pos] != '\n') ++pos;
    size_t len = pos - start;
    if (pos < size) ++pos; /* the newline */
    ++line_no;
    if (len && text[start + len - 1] == '\r') --len;
    if (len >= sizeof line) FAIL("profile line %zu: longer than %zu bytes", line_no, sizeof line - 1);
    memcpy(line, text + start, len);
    line[len] = '\0';
    if (memchr(line, '\0', len)) FAIL("profile line %zu: a NUL byte", line_no);
    /* Control characters (a CR inside the line, escapes): the writer could not give them back. */
    for (size_t i = 0; i < len; ++i)
      if (((unsigned char)line[i] < 0x20 && line[i] != '\t') || line[i] == 0x7F)
        FAIL("profile line %zu: control character 0x%02x at column %zu", line_no, (unsigned)(unsigned char)line[i],
             i + 1);
    /* Blank lines and comments anywhere. */
    const char *c = line;
    while (*c == ' ' || *c == '\t') ++c;
    if (*c == '\0' || *c == '#') continue;
    if (ended) FAIL("profile line %zu: text after 'end'", line_no);
    if (!seen_fixed[S_HEADER]) {
      char extra;
      if (sscanf(line, "tangram-profile %d%c", &version, &extra) != 1)
        FAIL("profile line %zu: not a Tangram device profile (expected 'tangram-profile %d')", line_no,
             TG_PROFILE_VERSION);
      if (version != TG_PROFILE_VERSION && version != 1)
        FAIL("profile line %zu: profile version %d; this build reads versions 1 and %d (run tangram probe again)",
             line_no, version, TG_PROFILE_VERSION);
      seen_fixed[S_HEADER] = 1;
      continue;
    }
    char *sp = strchr(line, ' ');
    const char *key = line, *value = sp ? sp + 1 : "";
    if (sp) *sp = '\0';
    int slot = -1;
    if (strcmp(key, "end") == 0) {
      if (*value) FAIL("profile line %zu: 'end' takes nothing", line_no);
      ended = 1;
      continue;
    } else if (strcmp(key, "backend") == 0) {
      slot = S_BACKEND;
      if (!*value || strlen(value) >= sizeof p.backend) FAIL("profile line %zu: bad backend", line_no);
      snprintf(p.backend, sizeof p.backend, "%s", value);
    } else if (strcmp(key, "device") == 0) {
      slot = S_DEVICE;
      if (!*value || strlen(value) >= sizeof p.device) FAIL("profile line %zu: bad device name", line_no);
      snprintf(p.device, sizeof p.device, "%s", value);
    } else if (strcmp(key, "precision") == 0) {
      slot = S_PRECISION;
      if (tg_precision_from_name(value, &p.precision) != TG_OK)
        FAIL("profile line %zu: precision must be fp32 or fp16", line_no);
    } else if (strcmp(key, "dispatch_us") == 0) {
      slot = S_DISPATCH;
      if (!parse_double(value, &p.dispatch_us)) FAIL("profile line %zu: bad dispatch_us '%s'", line_no, value);
    } else if (strcmp(key, "images") == 0 || strcmp(key, "arena_images") == 0) {
      slot = key[0] == 'i' ? S_IMAGES : S_ARENA;
      if (strcmp(value, "0") != 0 && strcmp(value, "1") != 0) FAIL("profile line %zu: %s must be 0 or 1", line_no, key);
      *(slot == S_IMAGES ? &p.images : &p.arena_images) = value[0] == '1';
    } else if (strcmp(key, "bandwidth") == 0) {
      char kind[32], pattern[32], number[64], extra;
      if (sscanf(value, "%31s %31s %63s %c", kind, pattern, number, &extra) != 3)
        FAIL("profile line %zu: expected 'bandwidth KIND PATTERN GB/s'", line_no);
      int k = -1, a = -1;
      for (int i = 0; i < TG_PROFILE_KIND_COUNT; ++i)
        if (strcmp(kind, k_kind_names[i]) == 0) k = i;
      for (int i = 0; i < TG_ACCESS_COUNT; ++i)
        if (strcmp(pattern, k_pattern_names[i]) == 0) a = i;
      if (k == TG_PROFILE_IMAGE_BUFFER && version == 1) k = -1; /* version 2's */
      if (k < 0 || a < 0) FAIL("profile line %zu: unknown kind or pattern '%s %s'", line_no, kind, pattern);
      if (seen_bw[k][a]) FAIL("profile line %zu: bandwidth %s %s given twice", line_no, kind, pattern);
      seen_bw[k][a] = 1;
      if (strcmp(number, "none") == 0) p.gbps[k][a] = 0;
      else if (!parse_double(number, &p.gbps[k][a]) || p.gbps[k][a] <= 0)
        FAIL("profile line %zu: bad bandwidth '%s' (GB/s above 0, or none)", line_no, number);
      continue;
    } else {
      /* "limit NAME N" and the other integers. */
      char name[64];
      const char *num = value;
      if (strcmp(key, "limit") == 0) {
        const char *sp2 = strchr(value, ' ');
        if (sp2 == NULL || (size_t)(sp2 - value) >= 40) FAIL("profile line %zu: expected 'limit NAME N'", line_no);
        snprintf(name, sizeof name, "limit %.*s", (int)(sp2 - value), value);
        num = sp2 + 1;
      } else {
        snprintf(name, sizeof name, "%.63s", key);
      }
      size_t i = 0;
      while (i < INT_COUNT && strcmp(name, k_ints[i].name) != 0) ++i;
      if (i == INT_COUNT) FAIL("profile line %zu: unknown entry '%s'", line_no, name);
      if (seen_int[i]) FAIL("profile line %zu: '%s' given twice", line_no, name);
      seen_int[i] = 1;
      uint64_t v;
      if (!parse_u64(num, &v)) FAIL("profile line %zu: bad number '%s'", line_no, num);
      memcpy((char *)&p + k_ints[i].offset, &v, sizeof v);
      continue;
    }
    if (seen_fixed[slot]) FAIL("profile line %zu: '%s' given twice", line_no, key);
    seen_fixed[slot] = 1;
  }
  if (!seen_fixed[S_HEADER]) FAIL("profile: empty: not a Tangram device profile");
  if (!ended) FAIL("profile: cut short after line %zu (no 'end' line)", line_no);
  static const char *const k_fixed_names[S_FIXED] = {"tangram-profile", "backend", "device", "precision",
                                                     "dispatch_us", "images", "arena_images"};
  for (int i = 0; i < S_FIXED; ++i)
    if (!seen_fixed[i]) FAIL("profile: '%s' is missing", k_fixed_names[i]);
  if (version == 1) /* image buffers were priced as buffers */
    for (int a = 0; a < TG_ACCESS_COUNT; ++a) {
      p.gbps[TG_PROFILE_IMAGE_BUFFER][a] = p.gbps[TG_PROFILE_BUFFER][a];
      seen_bw[TG_PROFILE_IMAGE_BUFFER][a] = 1;
    }
  for (int k = 0; k < TG_PROFILE_KIND_COUNT; ++k)
    for (int a = 0; a < TG_ACCESS_COUNT; ++a)
      if (!seen_bw[k][a]) FAIL("profile: 'bandwidth %s %s' is missing", k_kind_names[k], k_pattern_names[a]);
  for (size_t i = 0; i < INT_COUNT; ++i)
    if (!seen_int[i]) FAIL("profile: '%s' is missing", k_ints[i].name);
  *out = p;
  return TG_OK;
}

#undef FAIL

/* ---- estimates ---- */

uint64_t tg_proxy_bytes(tg_op_class c, uint32_t k, const uint32_t out[3], const uint32_t (*in)[3], uint32_t in_count,
                        uint32_t texel_bytes) {
  uint64_t n = (uint64_t)out[0] * out[1] * out[2], reads = 0;
  if (in_count > 0) {
    switch (c) {
      case TG_OP_CLASS_ELEMENTWISE:
        reads = n * in_count;
        break;
      case TG_OP_CLASS_STENCIL:
        reads = n * (uint64_t)(k | 1) * (k | 1);
        break;
      case TG_OP_CLASS_CHANNEL_MIXING:
        reads = n * in[0][2];
        break;
      case TG_OP_CLASS_REDUCTION: {
        uint64_t wx = out[0] ? (in[0][0] + out[0] - 1) / out[0] : 1, wy = out[1] ? (in[0][1] + out[1] - 1) / out[1] : 1;
        reads = n * (wx ? wx : 1) * (wy ? wy : 1);
        break;
      }
      default:
        reads = n;
    }
  }
  return (reads + n) * texel_bytes;
}

/* Texels (w*b, h, slices) of a tensor's shape; 0 when it has none. */
static int layout_of(const tg_graph *g, uint32_t t, uint32_t out[3]) {
  tg_bhwc b;
  const tg_tensor *x = &g->tensors[t];
  if (tg_shape_to_bhwc_ordered(x->shape, x->rank, g->dim_order, &b) != TG_OK) return 0;
  uint64_t w = b.w * b.b, s = (b.c + 3) / 4;
  if (w > UINT32_MAX || b.h > UINT32_MAX || s > UINT32_MAX) return 0;
  out[0] = (uint32_t)w;
  out[1] = (uint32_t)b.h;
  out[2] = (uint32_t)s;
  return 1;
}

tg_status tg_device_profile_estimate(const tg_device_profile *p, const tg_graph *g, const tg_model_records *mr,
                                     tg_profile_estimate *out, tg_error_info *err) {
  if (p == NULL || g == NULL || mr == NULL || out == NULL || mr->records == NULL)
    return tg__error(err, TG_ERROR_INVALID_ARGUMENT, "estimate: missing argument");
  memset(out, 0, sizeof *out);
  /* Per tensor: 0 not planned, else 1 + the storage it lives in (its own, or the one of the
   * fallback chain it fell to). */
  uint8_t *where = tg__calloc(&mr->alloc, g->tensor_count ? g->tensor_count : 1, 1);
  if (where == NULL) return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
  for (size_t r = 0; r < mr->records->count; ++r)
    if (mr->tensor_of[r] < g->tensor_count) where[mr->tensor_of[r]] = (uint8_t)(1 + mr->storage);
  for (int s = 0; s < TG_STORAGE_COUNT; ++s)
    for (size_t r = 0; mr->fallbacks[s].records && r < mr->fallbacks[s].records->count; ++r)
      if (mr->fallbacks[s].tensor_of[r] < g->tensor_count) where[mr->fallbacks[s].tensor_of[r]] = (uint8_t)(1 + s);
  uint32_t tb = tg_precision_texel_bytes(mr->precision);
  tg_status st = TG_OK;
  for (size_t o = 0; o < g->op_count && st == TG_OK; ++o) {
    const tg_op *op = &g->ops[o];
    tg_op_class c;
    uint32_t k;
    tg_op_class_of(g, o, &c, &k);
    uint32_t in[64][3], nin = 0;
    int32_t seen[64];
    for (uint32_t i = 0; i < op->input_count && nin < 64; ++i) {
      int32_t t = op->inputs[i];
      if (t < 0 || (size_t)t >= g->tensor_count || !where[t]) continue;
      int dup = 0;
      for (uint32_t j = 0; j < nin; ++j) dup |= seen[j] == t;
      if (dup || !layout_of(g, (uint32_t)t, in[nin])) continue;
      seen[nin++] = t;
    }
    if (c != TG_OP_CLASS_ELEMENTWISE && c != TG_OP_CLASS_COPY && nin > 1) nin = 1;
    for (uint32_t i = 0; i < op->output_count; ++i) {
      int32_t t = op->outputs[i];
      uint32_t shape[3];
      if (t < 0 || (size_t)t >= g->tensor_count || !where[t] || !layout_of(g, (uint32_t)t, shape)) continue;
      if ((uint64_t)shape[0] * shape[1] * shape[2] == 0) continue;
      tg_profile_kind kind = tg_profile_kind_of((tg_storage)(where[t] - 1));
      tg_access_pattern a = tg_access_pattern_of(c);
      double bw = p->gbps[kind][a];
      if (bw <= 0) {
        st = tg__error(err, TG_ERROR_UNSUPPORTED, "estimate: the profile has no %s %s bandwidth (the %s device lacks it)",
                       k_kind_names[kind], k_pattern_names[a], p->device);
        break;
      }
      uint64_t bytes = tg_proxy_bytes(c, k, shape, (const uint32_t(*)[3])in, nin, tb);
      double ms = p->dispatch_us / 1000.0 + (double)bytes / (bw * 1e9) * 1000.0;
      out->bytes += bytes;
      out->class_ms[c] += ms;
      out->total_ms += ms;
    }
  }
  tg__free(&mr->alloc, where);
  return st;
}
