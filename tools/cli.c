#define _POSIX_C_SOURCE 200809L
#include "tools/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

void tg_cli_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("tangram: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

int tg_cli_exit_code(tg_status st) {
  switch (st) {
    case TG_OK: return TG_EXIT_OK;
    case TG_ERROR_INVALID_ARGUMENT:
    case TG_ERROR_PARSE:
    case TG_ERROR_IO:
    case TG_ERROR_GRAPH:
    case TG_ERROR_OVERFLOW:
    case TG_ERROR_UNSUPPORTED:
      return TG_EXIT_USAGE;
    default:
      return TG_EXIT_FAILURE;
  }
}

int tg_cli_parse_u64(const char *s, int allow_suffix, uint64_t *out) {
  if (s == NULL || *s < '0' || *s > '9') return 0;
  uint64_t v = 0;
  const char *p = s;
  for (; *p >= '0' && *p <= '9'; ++p)
    if (!tg__mul_u64(v, 10, &v) || !tg__add_u64(v, (uint64_t)(*p - '0'), &v)) return 0;
  if (*p != '\0') {
    if (!allow_suffix) return 0;
    static const struct { const char *suffix; uint64_t mul; } k_suffixes[] = {
        {"K", 1024ull}, {"KiB", 1024ull}, {"M", 1024ull * 1024}, {"MiB", 1024ull * 1024},
        {"G", 1024ull * 1024 * 1024}, {"GiB", 1024ull * 1024 * 1024}};
    int found = 0;
    for (size_t i = 0; i < sizeof k_suffixes / sizeof k_suffixes[0]; ++i)
      if (strcmp(p, k_suffixes[i].suffix) == 0) {
        if (!tg__mul_u64(v, k_suffixes[i].mul, &v)) return 0;
        found = 1;
      }
    if (!found) return 0;
  }
  *out = v;
  return 1;
}

int tg_cli_parse_max_allocation(const char *cmd, const char *s, uint64_t *out) {
  uint64_t v = 0;
  if (!tg_cli_parse_u64(s, 1, &v) || v == 0 || v > (1ull << 60)) {
    tg_cli_error("%s: --max-allocation must be a positive number of bytes up to 1073741824G "
                 "(K, M, G suffixes), not '%s'%s",
                 cmd, s ? s : "", v == 0 && tg_cli_parse_u64(s, 1, &v) ? " (0 allocates nothing)" : "");
    return 0;
  }
  *out = v;
  return 1;
}

int tg_cli_check_max_allocation(const char *cmd, const tg_record_set *set, uint32_t texel_bytes,
                                uint64_t cap) {
  for (size_t r = 0; r < set->count; ++r) {
    uint64_t v = 0, bytes = 0;
    if (tg_extent_volume(set->records[r].size, &v) != TG_OK ||
        !tg__mul_u64(v, set->dims == 1 ? 1 : texel_bytes, &bytes))
      bytes = UINT64_MAX;
    if (bytes > cap) {
      if (set->names && set->names[r])
        tg_cli_error("%s: tensor %s (%llu bytes) is larger than the allocation cap %llu bytes", cmd,
                     set->names[r], (unsigned long long)bytes, (unsigned long long)cap);
      else
        tg_cli_error("%s: record %zu (%llu bytes) is larger than the allocation cap %llu bytes", cmd, r,
                     (unsigned long long)bytes, (unsigned long long)cap);
      return 0;
    }
  }
  return 1;
}

int tg_cli_check_objects_cap(const char *cmd, const tg_record_set *set, const tg_plan *plan,
                             uint32_t texel_bytes, uint64_t cap) {
  if (cap == 0 || plan->mode != TG_MODE_OBJECTS) return 1;
  for (size_t k = 0; k < plan->object_count; ++k) {
    uint64_t v = 0, bytes = 0;
    if (tg_extent_volume(plan->object_sizes[k], &v) != TG_OK ||
        !tg__mul_u64(v, set->dims == 1 ? 1 : texel_bytes, &bytes))
      bytes = UINT64_MAX;
    if (bytes <= cap) continue;
    size_t largest = SIZE_MAX;
    uint64_t largest_v = 0;
    for (size_t r = 0; r < set->count; ++r) {
      uint64_t rv = 0;
      if (plan->object_of[r] != k || tg_extent_volume(set->records[r].size, &rv) != TG_OK) continue;
      if (largest == SIZE_MAX || rv > largest_v) largest = r, largest_v = rv;
    }
    const char *name = largest != SIZE_MAX && set->names && set->names[largest] ? set->names[largest] : "?";
    tg_cli_error("%s: object %zu (%llu bytes) is larger than the allocation cap %llu bytes; its largest "
                 "tensor is %s (use --mode offsets, or another storage)",
                 cmd, k, (unsigned long long)bytes, (unsigned long long)cap, name);
    return 0;
  }
  return 1;
}

int tg_cli_parse_texture_size(const char *cmd, const char *s, uint64_t *w, uint64_t *h, uint64_t *d) {
  uint64_t v[3] = {0, 0, 0};
  int n = 0, ok = s != NULL && *s != '\0';
  for (const char *p = s; ok && n < 3;) {
    const char *x = strchr(p, 'x');
    size_t len = x ? (size_t)(x - p) : strlen(p);
    char buf[32];
    ok = len > 0 && len < sizeof buf;
    if (!ok) break;
    memcpy(buf, p, len);
    buf[len] = '\0';
    ok = tg_cli_parse_u64(buf, 0, &v[n]) && v[n] > 0 && v[n] <= (1ull << 31);
    ++n;
    if (x == NULL) break;
    p = x + 1;
    if (n == 3) ok = 0; /* a fourth field */
  }
  if (!ok || n < 2) {
    tg_cli_error("%s: --max-texture-size must be WIDTHxHEIGHT or WIDTHxHEIGHTxLAYERS in texels (each 1 to "
                 "2147483648), not '%s'", cmd, s ? s : "");
    return 0;
  }
  *w = v[0];
  *h = v[1];
  *d = v[2];
  return 1;
}

static void limit_to(uint64_t *field, uint64_t v) {
  if (*field == 0 || *field > v) *field = v;
}

void tg_cli_limit_texture_size(tg_device_limits *limits, uint64_t w, uint64_t h, uint64_t d) {
  limit_to(&limits->max_texture_2d_width, w);
  limit_to(&limits->max_texture_2d_height, h);
  limit_to(&limits->max_texture_3d_width, w);
  limit_to(&limits->max_texture_3d_height, h);
  if (d) {
    limit_to(&limits->max_texture_3d_depth, d);
    limit_to(&limits->max_texture_array_layers, d);
  }
}

int tg_cli_option(int argc, char **argv, int *i, const char *name, const char **value) {
  const char *arg = argv[*i];
  size_t n = strlen(name);
  if (strncmp(arg, name, n) != 0) return 0;
  if (arg[n] == '=') {
    *value = arg + n + 1;
    *i += 1;
    return 1;
  }
  if (arg[n] != '\0') return 0;
  if (*i + 1 >= argc) {
    tg_cli_error("option %s needs a value", name);
    return -1;
  }
  *value = argv[*i + 1];
  *i += 2;
  return 1;
}

int tg_cli_option_table(int argc, char **argv, int *i, const char *const *names, const char **const *targets,
                        size_t count, size_t *which) {
  for (size_t k = 0; k < count; ++k) {
    const char *v;
    int m = tg_cli_option(argc, argv, i, names[k], &v);
    if (m < 0) return -1;
    if (m > 0) {
      *targets[k] = v;
      *which = k;
      return 1;
    }
  }
  return 0;
}

const tg_allocator *tg_cli_allocator(tg_failing_allocator *fa) {
  uint64_t n = tg_fail_host_alloc_at_from_env();
  if (n == 0) return tg_allocator_default();
  tg_failing_allocator_init(fa, NULL, n);
  return &fa->base;
}

int tg_cli_write_file(const char *path, const char *text, size_t length) {
  if (strcmp(path, "-") == 0) return fwrite(text, 1, length, stdout) == length;
  FILE *f = fopen(path, "wb");
  if (f == NULL) {
    tg_cli_error("%s: cannot write: %s", path, strerror(errno));
    return 0;
  }
  int ok = fwrite(text, 1, length, f) == length;
  ok = (fclose(f) == 0) && ok;
  if (!ok) tg_cli_error("%s: write failed", path);
  return ok;
}

void tg_cli_json_in_place(tg__strbuf *b, const tg_in_place_pair *pairs, size_t count) {
  tg__strbuf_puts(b, ",\"in_place\":[");
  for (size_t i = 0; i < count; ++i)
    tg__strbuf_printf(b, "%s{\"op\":%u,\"input\":%zu,\"output\":%zu%s}", i ? "," : "", pairs[i].op,
                      pairs[i].input, pairs[i].output, pairs[i].view ? ",\"view\":true" : "");
  tg__strbuf_puts(b, "]");
}

int tg_cli_no_device(tg_status st, const tg_error_info *err, const tg_backend_skip *skipped, size_t nskipped) {
  tg_cli_error("run: no device: %s", err->message);
  for (size_t i = 0; i < nskipped; ++i)
    tg_cli_error("  %s skipped: %s", tg_backend_name(skipped[i].backend), skipped[i].reason);
  return tg_cli_exit_code(st) == TG_EXIT_USAGE ? TG_EXIT_USAGE : TG_EXIT_FAILURE;
}

int tg_cli_open_device(const tg_device_options *opt, const tg_allocator *alloc, tg_device **dev,
                       tg_backend_skip *skipped, size_t *nskipped, tg_error_info *err) {
  *nskipped = 0;
  tg_status st = tg_device_open(opt, alloc, dev, skipped, nskipped, err);
  return st == TG_OK ? 0 : tg_cli_no_device(st, err, skipped, *nskipped);
}

void tg_cli_text_skipped(tg__strbuf *b, const tg_backend_skip *skipped, size_t nskipped) {
  for (size_t i = 0; i < nskipped; ++i)
    tg__strbuf_printf(b, "  skipped %s: %s\n", tg_backend_name(skipped[i].backend), skipped[i].reason);
}

void tg_cli_json_arenas(tg__strbuf *b, const tg_plan *p, int with_arena_of) {
  tg__strbuf_puts(b, ",\"arenas\":[");
  for (size_t k = 0; k < p->arena_count; ++k)
    tg__strbuf_printf(b, "%s%llu", k ? "," : "", (unsigned long long)tg_plan_arena_size(p, k));
  tg__strbuf_puts(b, "]");
  if (!with_arena_of) return;
  tg__strbuf_puts(b, ",\"arena_of\":[");
  for (size_t r = 0; r < p->record_count; ++r) tg__strbuf_printf(b, "%s%u", r ? "," : "", tg_plan_arena_of(p, r));
  tg__strbuf_puts(b, "]");
}

void tg_cli_json_dynamic(tg__strbuf *b, uint32_t dynamic, uint32_t rank) {
  tg__strbuf_puts(b, ",\"dynamic\":[");
  int first = 1;
  for (uint32_t d = 0; d < rank; ++d)
    if ((dynamic >> d) & 1u) {
      tg__strbuf_printf(b, "%s%u", first ? "" : ",", d);
      first = 0;
    }
  tg__strbuf_puts(b, "]");
}

void tg_cli_json_skipped(tg__strbuf *b, const tg_backend_skip *skipped, size_t nskipped) {
  for (size_t i = 0; i < nskipped; ++i) {
    tg__strbuf_printf(b, "%s{\"backend\":\"%s\",\"reason\":", i ? "," : "", tg_backend_name(skipped[i].backend));
    tg__strbuf_json_string(b, skipped[i].reason);
    tg__strbuf_puts(b, "}");
  }
}

int tg_cli_print_report(tg__strbuf *b, int code) {
  if (b->failed) {
    tg_cli_error("out of memory");
    code = TG_EXIT_FAILURE;
  } else {
    fwrite(b->data, 1, b->length, stdout);
    fflush(stdout);
  }
  tg__strbuf_free(b);
  return code;
}
