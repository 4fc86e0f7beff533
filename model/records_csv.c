/* Usage-record CSV reader. Strict: plain non-negative decimals only, every problem reported as
 * "source:line: problem", nothing returned on failure. */
#include <stdio.h>
#include <string.h>

#include "model/model_internal.h"
#include "tangram/records.h"

enum { COL_NAME, COL_SIZE, COL_WIDTH, COL_HEIGHT, COL_DEPTH, COL_FIRST, COL_LAST, COL_ID,
       COL_LOWER, COL_UPPER, COL_IGNORED, COL_KINDS };

static const char *const k_column_names[COL_KINDS] = {
    "name", "size", "width", "height", "depth", "first", "last", "id", "lower", "upper", NULL};

#define MAX_COLUMNS 64

typedef struct csv_field {
  const char *text;  /* unescaped field (points into `scratch` for quoted fields) */
  size_t length;
} csv_field;

typedef struct csv_line {
  csv_field fields[MAX_COLUMNS];
  size_t count;
  int too_many;
} csv_line;

typedef struct csv_reader {
  const char *p, *end;
  const char *source;
  size_t line_no;
  tg_error_info *err;
  char *scratch;       /* unescaped quoted fields of the current line */
  size_t scratch_cap;
  const tg_allocator *alloc;
  int out_of_memory;   /* set when a failure was an allocation, not the text */
} csv_reader;

static int is_blank_line(const char *s, const char *e) {
  for (; s < e; ++s)
    if (*s != ' ' && *s != '\t' && *s != '\r') return 0;
  return 1;
}

/* Split the next non-blank, non-comment line into fields. Returns 1 with a line, 0 at end of
 * input, -1 on error (err filled). */
static int next_line(csv_reader *r, csv_line *out) {
  for (;;) {
    if (r->p >= r->end) return 0;
    const char *s = r->p;
    const char *e = memchr(s, '\n', (size_t)(r->end - s));
    if (e == NULL) e = r->end;
    r->p = (e < r->end) ? e + 1 : e;
    r->line_no++;
    if (is_blank_line(s, e) || *s == '#') continue;
    if (memchr(s, '\0', (size_t)(e - s)) != NULL) {
      tg__error(r->err, TG_ERROR_PARSE, "%s:%zu: NUL byte in text", r->source, r->line_no);
      return -1;
    }
    if (e > s && e[-1] == '\r') --e;
    size_t need = (size_t)(e - s) + 1;
    if (need > r->scratch_cap) {
      char *ns = tg__realloc(r->alloc, r->scratch, r->scratch_cap, need);
      if (ns == NULL) {
        r->out_of_memory = 1;
        tg__error(r->err, TG_ERROR_OUT_OF_HOST_MEMORY, "%s:%zu: out of memory", r->source,
                  r->line_no);
        return -1;
      }
      r->scratch = ns;
      r->scratch_cap = need;
    }
    char *w = r->scratch;
    out->count = 0;
    out->too_many = 0;
    const char *q = s;
    for (;;) {
      csv_field f;
      while (q < e && (*q == ' ' || *q == '\t')) ++q;
      if (q < e && *q == '"') {
        f.text = w;
        ++q;
        for (;;) {
          if (q >= e) {
            tg__error(r->err, TG_ERROR_PARSE, "%s:%zu: unterminated quoted field", r->source,
                      r->line_no);
            return -1;
          }
          if (*q == '"') {
            if (q + 1 < e && q[1] == '"') { *w++ = '"'; q += 2; continue; }
            ++q;
            break;
          }
          *w++ = *q++;
        }
        f.length = (size_t)(w - f.text);
        while (q < e && (*q == ' ' || *q == '\t')) ++q;
        if (q < e && *q != ',') {
          tg__error(r->err, TG_ERROR_PARSE, "%s:%zu: text after a quoted field", r->source,
                    r->line_no);
          return -1;
        }
      } else {
        const char *fs = q;
        while (q < e && *q != ',') ++q;
        const char *fe = q;
        while (fe > fs && (fe[-1] == ' ' || fe[-1] == '\t')) --fe;
        f.text = fs;
        f.length = (size_t)(fe - fs);
      }
      if (out->count < MAX_COLUMNS) out->fields[out->count++] = f;
      else out->too_many = 1;
      if (q >= e) break;
      ++q; /* the comma */
    }
    return 1;
  }
}

static int field_is(const csv_field *f, const char *word) {
  size_t n = strlen(word);
  if (f->length != n) return 0;
  for (size_t i = 0; i < n; ++i) {
    char c = f->text[i];
    if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
    if (c != word[i]) return 0;
  }
  return 1;
}

/* Parse a plain non-negative decimal. Returns 1 on success, else fills err. */
static int parse_u64(csv_reader *r, const csv_field *f, const char *what, uint64_t *out) {
  if (f->length == 0) {
    tg__error(r->err, TG_ERROR_PARSE, "%s:%zu: %s is empty", r->source, r->line_no, what);
    return 0;
  }
  if (f->text[0] == '-') {
    tg__error(r->err, TG_ERROR_PARSE, "%s:%zu: %s '%.*s' is negative", r->source, r->line_no,
              what, (int)(f->length > 40 ? 40 : f->length), f->text);
    return 0;
  }
  uint64_t v = 0;
  for (size_t i = 0; i < f->length; ++i) {
    char c = f->text[i];
    if (c < '0' || c > '9') {
      tg__error(r->err, TG_ERROR_PARSE,
                "%s:%zu: %s '%.*s' is not a plain decimal number (no sign, hex or exponent)",
                r->source, r->line_no, what, (int)(f->length > 40 ? 40 : f->length), f->text);
      return 0;
    }
    if (!tg__mul_u64(v, 10, &v) || !tg__add_u64(v, (uint64_t)(c - '0'), &v)) {
      tg__error(r->err, TG_ERROR_PARSE, "%s:%zu: %s '%.*s' is too large (more than 2^64-1)",
                r->source, r->line_no, what, (int)(f->length > 40 ? 40 : f->length), f->text);
      return 0;
    }
  }
  *out = v;
  return 1;
}

static int parse_task(csv_reader *r, const csv_field *f, const char *what, uint64_t *out) {
  if (!parse_u64(r, f, what, out)) return 0;
  if (*out > TG_MAX_TASK) {
    tg__error(r->err, TG_ERROR_PARSE, "%s:%zu: %s %llu exceeds the largest task index %u",
              r->source, r->line_no, what, (unsigned long long)*out, TG_MAX_TASK);
    return 0;
  }
  return 1;
}

tg_status tg_records_parse_csv(const char *text, size_t length, const char *source,
                               const tg_allocator *alloc, tg_record_set **out,
                               tg_error_info *err) {
  if (out == NULL || (text == NULL && length > 0)) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  alloc = tg__alloc_or_default(alloc);
  if (source == NULL) source = "<records>";
  csv_reader r = {text, text + length, source, 0, err, NULL, 0, alloc, 0};
  csv_line line;
  tg_status st = TG_ERROR_PARSE;
  tg_record_set *set = NULL;

  int got = next_line(&r, &line);
  if (got < 0) goto fail;
  if (got == 0) {
    tg__error(err, TG_ERROR_PARSE, "%s: empty file: expected a header such as 'name,size,first,last'",
              source);
    goto fail;
  }
  /* Header: map each column to a kind. */
  int col_of[COL_KINDS];
  for (int k = 0; k < COL_KINDS; ++k) col_of[k] = -1;
  int kind_of[MAX_COLUMNS];
  int minimalloc = 0;
  for (size_t c = 0; c < line.count; ++c)
    if (field_is(&line.fields[c], "lower") || field_is(&line.fields[c], "upper")) minimalloc = 1;
  if (line.too_many && !minimalloc) {
    tg__error(err, TG_ERROR_PARSE, "%s:%zu: too many columns in the header", source, r.line_no);
    goto fail;
  }
  for (size_t c = 0; c < line.count; ++c) {
    int kind = -1;
    for (int k = 0; k < COL_IGNORED; ++k)
      if (field_is(&line.fields[c], k_column_names[k])) kind = k;
    if (kind >= 0 && col_of[kind] >= 0) {
      tg__error(err, TG_ERROR_PARSE, "%s:%zu: column '%s' appears twice", source, r.line_no,
                k_column_names[kind]);
      goto fail;
    }
    if (kind < 0 || (minimalloc && kind != COL_ID && kind != COL_LOWER && kind != COL_UPPER &&
                     kind != COL_SIZE)) {
      if (!minimalloc) {
        tg__error(err, TG_ERROR_PARSE,
                  "%s:%zu: unknown column '%.*s' (expected [name,]size,first,last, "
                  "[name,]width,height[,depth],first,last or id,lower,upper,size)",
                  source, r.line_no, (int)(line.fields[c].length > 40 ? 40 : line.fields[c].length),
                  line.fields[c].text);
        goto fail;
      }
      kind = COL_IGNORED;
    }
    kind_of[c] = kind;
    if (kind != COL_IGNORED) col_of[kind] = (int)c;
  }
  uint32_t dims;
  const char *missing = NULL;
  if (minimalloc) {
    dims = 1;
    if (col_of[COL_LOWER] < 0) missing = "lower";
    else if (col_of[COL_UPPER] < 0) missing = "upper";
    else if (col_of[COL_SIZE] < 0) missing = "size";
  } else {
    if (col_of[COL_SIZE] >= 0) {
      dims = 1;
      if (col_of[COL_WIDTH] >= 0 || col_of[COL_HEIGHT] >= 0 || col_of[COL_DEPTH] >= 0) {
        tg__error(err, TG_ERROR_PARSE, "%s:%zu: a header has either 'size' or 'width,height'",
                  source, r.line_no);
        goto fail;
      }
    } else {
      dims = col_of[COL_DEPTH] >= 0 ? 3 : 2;
      if (col_of[COL_WIDTH] < 0) missing = "width (or size)";
      else if (col_of[COL_HEIGHT] < 0) missing = "height";
    }
    if (!missing && col_of[COL_FIRST] < 0) missing = "first";
    if (!missing && col_of[COL_LAST] < 0) missing = "last";
  }
  if (missing) {
    tg__error(err, TG_ERROR_PARSE, "%s:%zu: header lacks the '%s' column", source, r.line_no,
              missing);
    goto fail;
  }
  size_t columns = line.count;
  size_t header_line = r.line_no;

  /* Count data lines (an upper bound on records) so the set is allocated once. */
  size_t lines = 0;
  for (const char *q = r.p; q < r.end; ++q)
    if (*q == '\n') ++lines;
  if (r.p < r.end) ++lines;
  if (lines > TG_MAX_RECORDS) {
    tg__error(err, TG_ERROR_PARSE, "%s: too many records (more than %zu lines; the limit is %zu)",
              source, lines, TG_MAX_RECORDS);
    goto fail;
  }
  st = tg_record_set_create(dims, lines, alloc, &set);
  if (st != TG_OK) {
    tg__error(err, st, "%s: out of memory for %zu records", source, lines);
    goto fail;
  }
  st = TG_ERROR_PARSE;
  size_t n = 0;
  while ((got = next_line(&r, &line)) > 0) {
    if (line.count != columns && !(minimalloc && line.count >= columns)) {
      tg__error(err, TG_ERROR_PARSE, "%s:%zu: expected %zu fields (as in the header on line %zu), found %zu",
                source, r.line_no, columns, header_line, line.count + (line.too_many ? 1 : 0));
      goto fail;
    }
    tg_usage_record *rec = &set->records[n];
    uint64_t v[COL_KINDS] = {0};
    for (size_t c = 0; c < columns; ++c) {
      int kind = kind_of[c];
      if (kind == COL_IGNORED || kind == COL_NAME || kind == COL_ID) continue;
      int ok = (kind == COL_FIRST || kind == COL_LAST || kind == COL_LOWER || kind == COL_UPPER)
                   ? parse_task(&r, &line.fields[c], k_column_names[kind], &v[kind])
                   : parse_u64(&r, &line.fields[c], k_column_names[kind], &v[kind]);
      if (!ok) goto fail;
    }
    if (minimalloc) {
      if (v[COL_LOWER] >= v[COL_UPPER]) {
        tg__error(err, TG_ERROR_PARSE,
                  "%s:%zu: lower %llu must be less than upper %llu (the interval [lower, upper) "
                  "is half-open)",
                  source, r.line_no, (unsigned long long)v[COL_LOWER],
                  (unsigned long long)v[COL_UPPER]);
        goto fail;
      }
      v[COL_FIRST] = v[COL_LOWER];
      v[COL_LAST] = v[COL_UPPER] - 1;
    }
    if (v[COL_FIRST] > v[COL_LAST]) {
      tg__error(err, TG_ERROR_PARSE, "%s:%zu: first %llu is after last %llu", source, r.line_no,
                (unsigned long long)v[COL_FIRST], (unsigned long long)v[COL_LAST]);
      goto fail;
    }
    if (dims == 1) {
      rec->size = (tg_extent){v[COL_SIZE], 1, 1};
    } else {
      rec->size = (tg_extent){v[COL_WIDTH], v[COL_HEIGHT], dims == 3 ? v[COL_DEPTH] : 1};
      if (rec->size.w == 0 || rec->size.h == 0 || rec->size.d == 0) {
        tg__error(err, TG_ERROR_PARSE, "%s:%zu: a texture extent must be at least 1 in every dimension",
                  source, r.line_no);
        goto fail;
      }
      uint64_t vol;
      if (tg_extent_volume(rec->size, &vol) != TG_OK) {
        tg__error(err, TG_ERROR_PARSE, "%s:%zu: extent %llux%llux%llu overflows 64 bits",
                  source, r.line_no, (unsigned long long)rec->size.w,
                  (unsigned long long)rec->size.h, (unsigned long long)rec->size.d);
        goto fail;
      }
    }
    rec->first_task = (uint32_t)v[COL_FIRST];
    rec->last_task = (uint32_t)v[COL_LAST];
    int name_col = minimalloc ? col_of[COL_ID] : col_of[COL_NAME];
    if (name_col >= 0 && line.fields[name_col].length > 0) {
      char *name = tg__strndup(alloc, line.fields[name_col].text, line.fields[name_col].length);
      if (name == NULL) {
        st = tg__error(err, TG_ERROR_OUT_OF_HOST_MEMORY, "%s:%zu: out of memory", source, r.line_no);
        goto fail;
      }
      set->names[n] = name;
    }
    ++n;
  }
  if (got < 0) goto fail;
  set->count = n; /* arrays stay at their allocated size; only `count` entries are used */
  tg__free(alloc, r.scratch);
  *out = set;
  return TG_OK;

fail:
  if (r.out_of_memory) st = TG_ERROR_OUT_OF_HOST_MEMORY;
  tg__free(alloc, r.scratch);
  tg_record_set_destroy(set);
  return st == TG_OK ? TG_ERROR_PARSE : st;
}

tg_status tg_records_read_csv(const char *path, const tg_allocator *alloc, tg_record_set **out,
                              tg_error_info *err) {
  if (out == NULL || path == NULL) return TG_ERROR_INVALID_ARGUMENT;
  *out = NULL;
  char *data;
  size_t len;
  tg_status st = tg__read_file(path, alloc, &data, &len, err);
  if (st != TG_OK) return st;
  st = tg_records_parse_csv(data, len, path, alloc, out, err);
  tg__free(alloc, data);
  return st;
}
