#include <stdio.h>

#include "core/internal.h"

void tg__strbuf_init(tg__strbuf *b, const tg_allocator *a) {
  memset(b, 0, sizeof *b);
  b->alloc = tg__alloc_or_default(a);
}

void tg__strbuf_free(tg__strbuf *b) {
  tg__free(b->alloc, b->data);
  b->data = NULL;
  b->length = b->capacity = 0;
}

static int strbuf_reserve(tg__strbuf *b, size_t extra) {
  if (b->failed) return 0;
  size_t need = b->length + extra + 1;
  if (need < b->length) { b->failed = 1; return 0; }
  if (need <= b->capacity) return 1;
  size_t cap = b->capacity ? b->capacity : 256;
  while (cap < need) {
    if (cap > SIZE_MAX / 2) { b->failed = 1; return 0; }
    cap *= 2;
  }
  char *p = tg__realloc(b->alloc, b->data, b->capacity, cap);
  if (p == NULL) { b->failed = 1; return 0; }
  b->data = p;
  b->capacity = cap;
  return 1;
}

void tg__strbuf_append(tg__strbuf *b, const char *s, size_t n) {
  if (!strbuf_reserve(b, n)) return;
  memcpy(b->data + b->length, s, n);
  b->length += n;
  b->data[b->length] = '\0';
}

void tg__strbuf_puts(tg__strbuf *b, const char *s) { tg__strbuf_append(b, s, strlen(s)); }

void tg__strbuf_printf(tg__strbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char small[256];
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) { b->failed = 1; return; }
  if ((size_t)n < sizeof small) { tg__strbuf_append(b, small, (size_t)n); return; }
  if (!strbuf_reserve(b, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(b->data + b->length, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->length += (size_t)n;
}

void tg__strbuf_json_string(tg__strbuf *b, const char *s) {
  if (s == NULL) { tg__strbuf_puts(b, "null"); return; }
  tg__strbuf_append(b, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p; ++p) {
    switch (*p) {
      case '"': tg__strbuf_append(b, "\\\"", 2); break;
      case '\\': tg__strbuf_append(b, "\\\\", 2); break;
      case '\n': tg__strbuf_append(b, "\\n", 2); break;
      case '\r': tg__strbuf_append(b, "\\r", 2); break;
      case '\t': tg__strbuf_append(b, "\\t", 2); break;
      default:
        if (*p < 0x20) tg__strbuf_printf(b, "\\u%04x", *p);
        else tg__strbuf_append(b, (const char *)p, 1);
    }
  }
  tg__strbuf_append(b, "\"", 1);
}

void tg__strbuf_xml(tg__strbuf *b, const char *s) {
  if (s == NULL) return;
  for (const unsigned char *p = (const unsigned char *)s; *p; ++p) {
    switch (*p) {
      case '<': tg__strbuf_puts(b, "&lt;"); break;
      case '>': tg__strbuf_puts(b, "&gt;"); break;
      case '&': tg__strbuf_puts(b, "&amp;"); break;
      case '"': tg__strbuf_puts(b, "&quot;"); break;
      case '\'': tg__strbuf_puts(b, "&apos;"); break;
      default:
        if (*p < 0x20 && *p != '\t' && *p != '\n') tg__strbuf_puts(b, "?");
        else tg__strbuf_append(b, (const char *)p, 1);
    }
  }
}
