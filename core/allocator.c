#define _POSIX_C_SOURCE 200809L
#include "tangram/allocator.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/internal.h"

static void *default_alloc(void *user, size_t size) {
  (void)user;
  return malloc(size ? size : 1);
}
static void *default_realloc(void *user, void *ptr, size_t old_size, size_t new_size) {
  (void)user;
  (void)old_size;
  return realloc(ptr, new_size ? new_size : 1);
}
static void default_free(void *user, void *ptr) {
  (void)user;
  free(ptr);
}

static const tg_allocator k_default_allocator = {default_alloc, default_realloc, default_free,
                                                 NULL};

const tg_allocator *tg_allocator_default(void) { return &k_default_allocator; }

const tg_allocator *tg__alloc_or_default(const tg_allocator *a) { return a ? a : &k_default_allocator; }

static int failing_should_fail(tg_failing_allocator *fa) {
  fa->allocations++;
  if (fa->fail_at != 0 && fa->allocations == fa->fail_at) {
    fa->failures++;
    return 1;
  }
  return 0;
}

static void *failing_alloc(void *user, size_t size) {
  tg_failing_allocator *fa = user;
  if (failing_should_fail(fa)) return NULL;
  void *p = tg__malloc(fa->inner, size);
  if (p) fa->live_blocks++;
  return p;
}

static void *failing_realloc(void *user, void *ptr, size_t old_size, size_t new_size) {
  tg_failing_allocator *fa = user;
  if (ptr == NULL) return failing_alloc(user, new_size);
  if (new_size > old_size && failing_should_fail(fa)) return NULL;
  return tg__realloc(fa->inner, ptr, old_size, new_size);
}

static void failing_free(void *user, void *ptr) {
  tg_failing_allocator *fa = user;
  if (ptr == NULL) return;
  fa->live_blocks--;
  tg__free(fa->inner, ptr);
}

void tg_failing_allocator_init(tg_failing_allocator *fa, const tg_allocator *inner,
                               uint64_t fail_at) {
  memset(fa, 0, sizeof *fa);
  fa->inner = tg__alloc_or_default(inner);
  fa->fail_at = fail_at;
  fa->base.alloc = failing_alloc;
  fa->base.realloc = failing_realloc;
  fa->base.free = failing_free;
  fa->base.user = fa;
}

uint64_t tg__env_u64(const char *name) {
  const char *v = getenv(name);
  if (v == NULL || *v == '\0') return 0;
  uint64_t n = 0;
  for (const char *p = v; *p; ++p) {
    if (*p < '0' || *p > '9') return 0;
    if (!tg__mul_u64(n, 10, &n) || !tg__add_u64(n, (uint64_t)(*p - '0'), &n)) return 0;
  }
  return n;
}

uint64_t tg_fail_host_alloc_at_from_env(void) { return tg__env_u64("TANGRAM_FAIL_HOST_ALLOC_AT"); }

void *tg__malloc(const tg_allocator *a, size_t size) {
  a = tg__alloc_or_default(a);
  return a->alloc(a->user, size);
}

void *tg__calloc(const tg_allocator *a, size_t n, size_t size) {
  size_t bytes;
  if (!tg__mul_size(n, size, &bytes)) return NULL;
  void *p = tg__malloc(a, bytes);
  if (p) memset(p, 0, bytes);
  return p;
}

void *tg__realloc(const tg_allocator *a, void *ptr, size_t old_size, size_t new_size) {
  a = tg__alloc_or_default(a);
  if (ptr == NULL) return a->alloc(a->user, new_size);
  if (a->realloc) return a->realloc(a->user, ptr, old_size, new_size);
  void *p = a->alloc(a->user, new_size);
  if (p == NULL) return NULL;
  memcpy(p, ptr, old_size < new_size ? old_size : new_size);
  a->free(a->user, ptr);
  return p;
}

int tg__grow(const tg_allocator *a, void **array, size_t *capacity, size_t need, size_t size) {
  if (need <= *capacity) return 1;
  size_t cap = *capacity ? *capacity : 8;
  while (cap < need) {
    if (cap > SIZE_MAX / 2) return 0;
    cap *= 2;
  }
  size_t old_bytes, new_bytes;
  if (!tg__mul_size(*capacity, size, &old_bytes) || !tg__mul_size(cap, size, &new_bytes)) return 0;
  void *p = tg__realloc(a, *array, old_bytes, new_bytes);
  if (p == NULL) return 0;
  *array = p;
  *capacity = cap;
  return 1;
}

void tg__free(const tg_allocator *a, void *ptr) {
  if (ptr == NULL) return;
  a = tg__alloc_or_default(a);
  a->free(a->user, ptr);
}

void tg__free_each(const tg_allocator *a, void *const *ptrs, size_t count) {
  for (size_t i = 0; i < count; ++i) tg__free(a, ptrs[i]);
}

char *tg__strndup(const tg_allocator *a, const char *s, size_t n) {
  if (s == NULL) return NULL;
  char *p = tg__malloc(a, n + 1);
  if (p == NULL) return NULL;
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

char *tg__strdup(const tg_allocator *a, const char *s) {
  return s ? tg__strndup(a, s, strlen(s)) : NULL;
}

tg_status tg__error(tg_error_info *err, tg_status status, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
  }
  return status;
}

void tg__error_begin(tg_error_info *err) {
  if (err) err->message[0] = '\0';
}

tg_status tg__error_entry(tg_error_info *err, tg_status status, const char *entry, const char *alias) {
  if (err == NULL || status == TG_OK) return status;
  size_t n = strlen(entry);
  const char *m = err->message;
  if (strncmp(m, entry, n) == 0 && m[n] == ':') return status;
  if (alias != NULL) {
    size_t k = strlen(alias);
    if (strncmp(m, alias, k) == 0 && m[k] == ':' && m[k + 1] == ' ') m += k + 2;
  }
  /* "<entry>: " then the message (or the status's description), cut to fit. */
  char out[TG_ERROR_MESSAGE_MAX];
  const char *parts[3] = {entry, ": ", m[0] ? m : tg_status_string(status)};
  size_t at = 0;
  for (int k = 0; k < 3; ++k)
    for (const char *c = parts[k]; *c != '\0' && at + 1 < sizeof out; ++c) out[at++] = *c;
  out[at] = '\0';
  memcpy(err->message, out, at + 1);
  return status;
}

uint64_t tg__now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

tg_status tg__read_file(const char *path, const tg_allocator *a, char **data, size_t *length,
                        tg_error_info *err) {
  *data = NULL;
  *length = 0;
  FILE *f = fopen(path, "rb");
  if (f == NULL) return tg__error(err, TG_ERROR_IO, "%s: cannot open: %s", path, strerror(errno));
  /* Size the buffer from the file's length when it can be known (regular files), so a large
   * model is read in one go; keep growing for pipes and files that change while read. */
  size_t cap = 1 << 16, len = 0;
  if (fseek(f, 0, SEEK_END) == 0) {
    long end = ftell(f);
    if (end > 0 && (unsigned long)end < SIZE_MAX - 1) cap = (size_t)end + 1;
    if (fseek(f, 0, SEEK_SET) != 0) {
      fclose(f);
      return tg__error(err, TG_ERROR_IO, "%s: cannot seek", path);
    }
  }
  char *buf = tg__malloc(a, cap + 1);
  if (buf == NULL) {
    fclose(f);
    return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", path);
  }
  for (;;) {
    if (len == cap) {
      size_t ncap;
      if (!tg__mul_size(cap, 2, &ncap) || ncap + 1 < ncap) {
        tg__free(a, buf);
        fclose(f);
        return tg__error(err, TG_ERROR_OVERFLOW, "%s: file too large", path);
      }
      char *nb = tg__realloc(a, buf, cap + 1, ncap + 1);
      if (nb == NULL) {
        tg__free(a, buf);
        fclose(f);
        return tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "%s: out of memory", path);
      }
      buf = nb;
      cap = ncap;
    }
    size_t n = fread(buf + len, 1, cap - len, f);
    len += n;
    if (n == 0) break;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    tg__free(a, buf);
    return tg__error(err, TG_ERROR_IO, "%s: read error", path);
  }
  buf[len] = '\0';
  *data = buf;
  *length = len;
  return TG_OK;
}
