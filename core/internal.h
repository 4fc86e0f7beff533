/* Helpers shared by Tangram's modules. Not installed; not part of the public API. */
#ifndef TANGRAM_CORE_INTERNAL_H
#define TANGRAM_CORE_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tangram/allocator.h"
#include "tangram/status.h"

/* The allocator to use: `a`, or the default when NULL. */
const tg_allocator *tg__alloc_or_default(const tg_allocator *a);

void *tg__malloc(const tg_allocator *a, size_t size);
/* calloc-like: NULL on overflow of n*size or allocation failure. Memory is zeroed. */
void *tg__calloc(const tg_allocator *a, size_t n, size_t size);
/* Grow or shrink; on failure returns NULL and leaves `ptr` untouched. */
void *tg__realloc(const tg_allocator *a, void *ptr, size_t old_size, size_t new_size);
void tg__free(const tg_allocator *a, void *ptr);
/* The decimal number in environment variable `name`; 0 when unset, empty, not all digits or
 * over 64 bits. */
uint64_t tg__env_u64(const char *name);
/* tg__free on each of ptrs[0 .. count) (NULL entries are skipped). */
void tg__free_each(const tg_allocator *a, void *const *ptrs, size_t count);
/* tg__free_each over the pointers listed, in order: TG__FREE_EACH(a, s->x, s->y, ...), for the
 * arrays of a struct at teardown. */
#define TG__FREE_EACH(a, ...)                                                                   \
  tg__free_each((a), (void *const[]){__VA_ARGS__},                                              \
                sizeof((void *const[]){__VA_ARGS__}) / sizeof(void *))
/* Grow `*array` (`*capacity` elements of `size` bytes) to hold at least `need`, doubling from
 * 8: 1, or 0 on overflow or allocation failure (the array and capacity unchanged). */
int tg__grow(const tg_allocator *a, void **array, size_t *capacity, size_t need, size_t size);
/* Duplicate a string (NULL -> NULL with *ok unchanged); returns NULL on allocation failure. */
char *tg__strdup(const tg_allocator *a, const char *s);
char *tg__strndup(const tg_allocator *a, const char *s, size_t n);

/* Copy `src` into `dst` of `size` bytes, truncating, always NUL-terminated (size > 0). */
static inline void tg__strlcpy(char *dst, size_t size, const char *src) {
  size_t n = strlen(src);
  if (n >= size) n = size - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

/* Checked arithmetic: return 0 on overflow, 1 on success. */
static inline int tg__add_u64(uint64_t a, uint64_t b, uint64_t *out) {
  if (a > UINT64_MAX - b) return 0;
  *out = a + b;
  return 1;
}
/* a + b, or UINT64_MAX when that overflows. */
static inline uint64_t tg__add_sat_u64(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}
static inline uint64_t tg__sub_sat_u64(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }
static inline int tg__mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
  if (a != 0 && b > UINT64_MAX / a) return 0;
  *out = a * b;
  return 1;
}
static inline int tg__mul_size(size_t a, size_t b, size_t *out) {
  if (a != 0 && b > SIZE_MAX / a) return 0;
  *out = a * b;
  return 1;
}
/* Round `v` up to a multiple of `align` (0 or 1: unchanged). 0 on overflow. */
static inline int tg__align_up(uint64_t v, uint64_t align, uint64_t *out) {
  if (align <= 1) { *out = v; return 1; }
  uint64_t r = v % align;
  if (r == 0) { *out = v; return 1; }
  return tg__add_u64(v, align - r, out);
}

/* printf into err->message when err is not NULL. Returns `status` for tail calls. */
/* The refusal of a public entry point: after a call that returned `status`, make `err`'s
 * message start with "<entry>: " (once; the status's description when the call wrote none;
 * a leading "<alias>: " of the older style, when given, is replaced). Call
 * tg__error_begin first so that an old message is not taken for the call's. Returns status. */
void tg__error_begin(tg_error_info *err);
tg_status tg__error_entry(tg_error_info *err, tg_status status, const char *entry, const char *alias);

tg_status tg__error(tg_error_info *err, tg_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* A growable byte buffer for building text (JSON, CSV, SVG). Sticky failure: after an
 * allocation failure every append is a no-op and `failed` stays set. */
typedef struct tg__strbuf {
  char *data;
  size_t length;
  size_t capacity;
  int failed;
  const tg_allocator *alloc;
} tg__strbuf;

void tg__strbuf_init(tg__strbuf *b, const tg_allocator *a);
void tg__strbuf_free(tg__strbuf *b);
void tg__strbuf_append(tg__strbuf *b, const char *s, size_t n);
void tg__strbuf_puts(tg__strbuf *b, const char *s);
void tg__strbuf_printf(tg__strbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Append `s` as a JSON string literal (quotes and escapes included). NULL -> null. */
void tg__strbuf_json_string(tg__strbuf *b, const char *s);
/* Append `s` escaped for XML text/attributes. */
void tg__strbuf_xml(tg__strbuf *b, const char *s);

/* Monotonic clock in microseconds (for reporting plan times). */
uint64_t tg__now_us(void);

/* Read a whole file into memory from `a`. On failure `err` names the path. The buffer gets one
 * extra NUL byte (not counted in *length). */
tg_status tg__read_file(const char *path, const tg_allocator *a, char **data, size_t *length,
                        tg_error_info *err);

/* The rules of an in-place pair over its records (tg_in_place_pair, records.h): both records
 * exist and differ, the input's last task and the output's first task are the pair's op, and
 * their sizes are equal. 1 when `pair` (entry `index` of its list, for the message) follows
 * them over records[0 .. count); else 0, with a sentence naming the pair, its records and the
 * rule broken in `why` (may be NULL). The one definition every user of pairs applies (the
 * candidates, the planner, the validator, the run-time pool); whether an execution lets the op
 * write over its input while other ops read it is the may-share relation's part
 * (tg_share_relation.in_place). */
struct tg_usage_record;
struct tg_in_place_pair;
int tg__in_place_pair_fits(const struct tg_usage_record *records, size_t count, const struct tg_in_place_pair *pair,
                           size_t index, char *why, size_t why_size);

/* A max-heap of op numbers in caller memory holding `*n` entries: push one, pop the largest.
 * The schedulers of out-of-order checks take the highest-numbered ready op first. */
static inline void tg__op_heap_push(uint32_t *heap, size_t *n, uint32_t v) {
  size_t i = (*n)++;
  heap[i] = v;
  while (i > 0 && heap[(i - 1) / 2] < heap[i]) {
    uint32_t t = heap[i];
    heap[i] = heap[(i - 1) / 2];
    heap[(i - 1) / 2] = t;
    i = (i - 1) / 2;
  }
}

static inline uint32_t tg__op_heap_pop(uint32_t *heap, size_t *n) {
  uint32_t top = heap[0];
  size_t hn = --*n;
  heap[0] = heap[hn];
  for (size_t i = 0;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < hn && heap[l] > heap[m]) m = l;
    if (r < hn && heap[r] > heap[m]) m = r;
    if (m == i) break;
    uint32_t t = heap[i];
    heap[i] = heap[m];
    heap[m] = t;
    i = m;
  }
  return top;
}

#endif
