/* Small checkers shared by the report tests: XML well-formedness, JSON sanity, CSV fields,
 * PNG chunk sizes, and a headless-Chromium screenshot. Header-only (static functions): each
 * test executable includes it once. */
#ifndef TG_TESTS_REPORT_CHECKS_H
#define TG_TESTS_REPORT_CHECKS_H

/* Needs _POSIX_C_SOURCE 200809L defined before the first system header (mkdtemp). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Checks that `s` is one well-formed XML element tree: tags balanced and properly nested,
 * attributes quoted without raw '<', every '&' a known entity, one root. On failure writes why
 * into `why` and returns 0. `*elements` counts start tags (incl. self-closing). */
static inline int xml_well_formed(const char *s, char *why, size_t why_size, size_t *elements) {
  char stack[64][64];
  int depth = 0, roots = 0;
  size_t count = 0;
  const char *p = s;
#define XML_FAIL(...) do { snprintf(why, why_size, __VA_ARGS__); return 0; } while (0)
  while (*p) {
    if (*p == '&') {
      static const char *const ents[] = {"&lt;", "&gt;", "&amp;", "&quot;", "&apos;"};
      int ok = 0;
      for (size_t i = 0; i < 5; ++i) ok |= strncmp(p, ents[i], strlen(ents[i])) == 0;
      if (!ok && p[1] == '#') {
        const char *q = p + 2;
        while ((*q >= '0' && *q <= '9') || *q == 'x' || (*q >= 'a' && *q <= 'f')) ++q;
        ok = *q == ';' && q > p + 2;
      }
      if (!ok) XML_FAIL("bad entity at offset %ld", (long)(p - s));
      ++p;
      continue;
    }
    if (*p != '<') {
      if (*p == '>' && depth == 0) XML_FAIL("stray '>' at offset %ld", (long)(p - s));
      ++p;
      continue;
    }
    if (strncmp(p, "<?", 2) == 0) {
      const char *e = strstr(p, "?>");
      if (e == NULL) XML_FAIL("unterminated <?");
      p = e + 2;
      continue;
    }
    if (strncmp(p, "<!--", 4) == 0) {
      const char *e = strstr(p, "-->");
      if (e == NULL) XML_FAIL("unterminated comment");
      p = e + 3;
      continue;
    }
    int closing = p[1] == '/';
    p += closing ? 2 : 1;
    char name[64];
    size_t n = 0;
    while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
           *p == '-' || *p == '_' || *p == ':') {
      if (n + 1 < sizeof name) name[n++] = *p;
      ++p;
    }
    name[n] = '\0';
    if (n == 0) XML_FAIL("tag without a name at offset %ld", (long)(p - s));
    if (closing) {
      if (*p != '>') XML_FAIL("bad closing tag </%s", name);
      ++p;
      if (depth == 0 || strcmp(stack[depth - 1], name) != 0)
        XML_FAIL("</%s> closes <%s>", name, depth ? stack[depth - 1] : "(nothing)");
      --depth;
      continue;
    }
    if (depth == 0) ++roots;
    ++count;
    for (;;) {
      while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') ++p;
      if (strncmp(p, "/>", 2) == 0) {
        p += 2;
        break;
      }
      if (*p == '>') {
        ++p;
        if (depth == 64) XML_FAIL("too deep");
        snprintf(stack[depth++], sizeof stack[0], "%s", name);
        break;
      }
      const char *a = p;
      while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '-' || *p == ':' || *p == '_' ||
             (p > a && *p >= '0' && *p <= '9'))
        ++p;
      if (p == a || *p != '=') XML_FAIL("bad attribute in <%s> at offset %ld", name, (long)(p - s));
      ++p;
      char q = *p;
      if (q != '"' && q != '\'') XML_FAIL("unquoted attribute in <%s>", name);
      ++p;
      while (*p && *p != q) {
        if (*p == '<') XML_FAIL("'<' inside an attribute of <%s>", name);
        if (*p == '&') {
          static const char *const ents[] = {"&lt;", "&gt;", "&amp;", "&quot;", "&apos;"};
          int ok = 0;
          for (size_t i = 0; i < 5; ++i) ok |= strncmp(p, ents[i], strlen(ents[i])) == 0;
          if (!ok) XML_FAIL("bad entity in an attribute of <%s>", name);
        }
        ++p;
      }
      if (*p != q) XML_FAIL("unterminated attribute in <%s>", name);
      ++p;
    }
  }
  if (depth != 0) XML_FAIL("%d unclosed elements (innermost <%s>)", depth, stack[depth - 1]);
  if (roots != 1) XML_FAIL("%d root elements", roots);
#undef XML_FAIL
  if (elements) *elements = count;
  return 1;
}

/* Non-overlapping occurrences of `needle` in `hay`. */
static inline size_t count_substr(const char *hay, const char *needle) {
  size_t n = 0, len = strlen(needle);
  for (const char *p = strstr(hay, needle); p; p = strstr(p + len, needle)) ++n;
  return n;
}

/* JSON sanity: one top-level object or array; braces and brackets balanced and matched;
 * strings closed, with valid escapes and no raw control characters; nothing after the end but
 * whitespace. Not a full parser, but catches every way hand-built JSON usually breaks. */
static inline int json_sane(const char *s, char *why, size_t why_size) {
  char stack[256];
  int depth = 0, done = 0;
  for (const char *p = s; *p; ++p) {
    unsigned char c = (unsigned char)*p;
    if (done) {
      if (c != ' ' && c != '\n' && c != '\t' && c != '\r') {
        snprintf(why, why_size, "text after the end at offset %ld", (long)(p - s));
        return 0;
      }
      continue;
    }
    if (c == '"') {
      for (++p; *p != '"'; ++p) {
        if (*p == '\0') { snprintf(why, why_size, "unterminated string"); return 0; }
        if ((unsigned char)*p < 0x20) { snprintf(why, why_size, "control character in a string"); return 0; }
        if (*p == '\\') {
          ++p;
          if (*p == 'u') {
            for (int i = 1; i <= 4; ++i)
              if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f') || (p[i] >= 'A' && p[i] <= 'F'))) {
                snprintf(why, why_size, "bad \\u escape");
                return 0;
              }
            p += 4;
          } else if (strchr("\"\\/bfnrt", *p) == NULL || *p == '\0') {
            snprintf(why, why_size, "bad escape at offset %ld", (long)(p - s));
            return 0;
          }
        }
      }
      continue;
    }
    if (c == '{' || c == '[') {
      if (depth == 256) { snprintf(why, why_size, "too deep"); return 0; }
      stack[depth++] = (char)c;
    } else if (c == '}' || c == ']') {
      if (depth == 0 || stack[depth - 1] != (c == '}' ? '{' : '[')) {
        snprintf(why, why_size, "unmatched '%c' at offset %ld", c, (long)(p - s));
        return 0;
      }
      if (--depth == 0) done = 1;
    } else if (depth == 0 && c != ' ' && c != '\n' && c != '\t' && c != '\r') {
      snprintf(why, why_size, "text outside the top-level value at offset %ld", (long)(p - s));
      return 0;
    }
  }
  if (!done) {
    snprintf(why, why_size, "%s", depth ? "unclosed braces or brackets" : "empty document");
    return 0;
  }
  return 1;
}

/* Read a whole file (NUL-terminated); NULL when unreadable. Free with free(). */
static inline char *read_text_file(const char *path, size_t *length) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (buf == NULL) break;
    if (n + 4096 + 1 > cap) {
      char *nb = realloc(buf, cap * 2);
      if (nb == NULL) { free(buf); buf = NULL; break; }
      buf = nb;
      cap *= 2;
    }
    size_t got = fread(buf + n, 1, 4096, f);
    n += got;
    if (got == 0) break;
  }
  fclose(f);
  if (buf == NULL) return NULL;
  buf[n] = '\0';
  if (length) *length = n;
  return buf;
}

static inline int write_text_file(const char *path, const char *text, size_t length) {
  FILE *f = fopen(path, "wb");
  if (f == NULL) return 0;
  int ok = fwrite(text, 1, length, f) == length;
  return (fclose(f) == 0) && ok;
}

/* Split one CSV line of the report's export (first field quoted) into its 7 fields. `line` is
 * modified. Returns the number of fields. */
static inline int csv_fields(char *line, char **fields, int max) {
  int n = 0;
  char *p = line;
  while (n < max) {
    if (*p == '"') {
      char *w = ++p;
      fields[n++] = w;
      for (;;) {
        if (*p == '\0') return n;
        if (*p == '"' && p[1] == '"') { *w++ = '"'; p += 2; continue; }
        if (*p == '"') { ++p; break; }
        *w++ = *p++;
      }
      *w = '\0';
      if (*p == ',') { *p++ = '\0'; continue; }
      return n;
    }
    fields[n++] = p;
    char *c = strchr(p, ',');
    if (c == NULL) return n;
    *c = '\0';
    p = c + 1;
  }
  return n;
}

/* The directory for files a person may want to look at after the run (charts, screenshots). */
static inline const char *artifact_dir(void) {
  static const char dir[] = TG_BINARY_DIR "/report-artifacts";
  mkdir(dir, 0777);
  return dir;
}

/* PNG facts without decoding: dimensions and the total size of the compressed image data. */
typedef struct png_facts {
  uint32_t width, height;
  uint64_t idat_bytes;
} png_facts;

static inline int png_read_facts(const char *path, png_facts *out) {
  size_t n = 0;
  char *d = read_text_file(path, &n);
  if (d == NULL) return 0;
  const unsigned char *u = (const unsigned char *)d;
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
  int ok = n >= 8 && memcmp(u, sig, 8) == 0;
  memset(out, 0, sizeof *out);
  size_t at = 8;
  int seen_end = 0;
  while (ok && at + 12 <= n) {
    uint32_t len = ((uint32_t)u[at] << 24) | ((uint32_t)u[at + 1] << 16) | ((uint32_t)u[at + 2] << 8) | u[at + 3];
    const unsigned char *type = u + at + 4;
    if (at + 12 + (size_t)len > n) { ok = 0; break; }
    if (memcmp(type, "IHDR", 4) == 0 && len >= 8) {
      const unsigned char *q = u + at + 8;
      out->width = ((uint32_t)q[0] << 24) | ((uint32_t)q[1] << 16) | ((uint32_t)q[2] << 8) | q[3];
      out->height = ((uint32_t)q[4] << 24) | ((uint32_t)q[5] << 16) | ((uint32_t)q[6] << 8) | q[7];
    } else if (memcmp(type, "IDAT", 4) == 0) {
      out->idat_bytes += len;
    } else if (memcmp(type, "IEND", 4) == 0) {
      seen_end = 1;
      break;
    }
    at += 12 + (size_t)len;
  }
  free(d);
  return ok && seen_end && out->width > 0;
}

/* Chromium's path, or NULL. TANGRAM_CHROMIUM overrides. */
static inline const char *find_chromium(void) {
  const char *env = getenv("TANGRAM_CHROMIUM");
  if (env && *env) return access(env, X_OK) == 0 ? env : NULL;
  static const char *const paths[] = {"/usr/bin/chromium", "/usr/bin/chromium-browser",
                                      "/usr/bin/google-chrome"};
  for (size_t i = 0; i < sizeof paths / sizeof paths[0]; ++i)
    if (access(paths[i], X_OK) == 0) return paths[i];
  return NULL;
}

/* Screenshot `svg_path` at 1700x1000 into `png_path` with headless Chromium. Chromium's own
 * chatter goes to `png_path`.log. Returns 1 when the PNG was written. */
static inline int chromium_screenshot(const char *chromium, const char *svg_path, const char *png_path) {
  char profile[] = "/tmp/tangram-chromium-XXXXXX";
  if (mkdtemp(profile) == NULL) return 0;
  unlink(png_path);
  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "timeout 120 '%s' --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
           "--disable-background-networking --disable-component-update --disable-sync "
           "--user-data-dir='%s' --screenshot='%s' --window-size=1700,1000 'file://%s' "
           "> '%s.log' 2>&1",
           chromium, profile, png_path, svg_path, png_path);
  int rc = system(cmd);
  char rm[512];
  snprintf(rm, sizeof rm, "rm -rf '%s'", profile);
  if (system(rm) != 0) fprintf(stderr, "could not remove %s\n", profile);
  return rc == 0 && access(png_path, R_OK) == 0;
}

#endif
