/* What the .onnx reader knows of a model's values, one JSON object per line, for
 * tests/model/onnx_oracle.py to compare with ONNX's own shape inference.
 *
 * usage: onnx_values MODEL [NAME:DxDx...]...
 *
 * Each line: {"name": ..., "scope": ..., "type": ONNX data type, "live": 0|1,
 * "shape": [dims] or null, "values": [numbers] or null}; floats that are not finite are
 * written as the strings "nan", "inf" and "-inf". Exit status 0, or 2 with the reader's
 * error on stderr. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/onnx_values.h"
#include "tangram/model.h"

static void json_string(const char *s) {
  putchar('"');
  for (; *s; ++s) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') printf("\\%c", ch);
    else if (ch < 0x20) printf("\\u%04x", ch);
    else putchar(ch);
  }
  putchar('"');
}

static void print_value(void *user, const onnx_value_report *v) {
  (void)user;
  fputs("{\"name\": ", stdout);
  json_string(v->name);
  fputs(", \"scope\": ", stdout);
  json_string(v->scope);
  printf(", \"type\": %d, \"live\": %d, \"shape\": ", (int)v->type, v->live);
  if (v->has_shape) {
    putchar('[');
    for (uint32_t d = 0; d < v->rank; ++d) printf("%s%lld", d ? ", " : "", (long long)v->dims[d]);
    putchar(']');
  } else {
    fputs("null", stdout);
  }
  fputs(", \"values\": ", stdout);
  if (v->ints || v->floats) {
    putchar('[');
    for (size_t e = 0; e < v->count; ++e) {
      if (e) fputs(", ", stdout);
      if (v->ints) {
        printf("%lld", (long long)v->ints[e]);
      } else if (isnan(v->floats[e])) {
        fputs("\"nan\"", stdout);
      } else if (isinf(v->floats[e])) {
        fputs(v->floats[e] > 0 ? "\"inf\"" : "\"-inf\"", stdout);
      } else {
        printf("%.17g", v->floats[e]);
      }
    }
    putchar(']');
  } else {
    fputs("null", stdout);
  }
  fputs("}\n", stdout);
}

/* "name:2x3x4" -> s (name borrowed from the argument, which is cut at the colon). */
static int parse_shape(char *arg, tg_input_shape *s) {
  char *colon = strrchr(arg, ':');
  if (colon == NULL || colon == arg) return 0;
  *colon = '\0';
  memset(s, 0, sizeof *s);
  s->name = arg;
  char *p = colon + 1;
  while (*p) {
    if (s->rank == TG_MAX_RANK) return 0;
    char *end;
    long long d = strtoll(p, &end, 10);
    if (end == p || d < 0) return 0;
    s->dims[s->rank++] = d;
    p = end;
    if (*p == 'x') ++p;
    else if (*p) return 0;
  }
  return 1;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: onnx_values MODEL [NAME:DxDx...]...\n");
    return 2;
  }
  tg_input_shape shapes[16];
  size_t count = 0;
  for (int a = 2; a < argc; ++a) {
    if (count == sizeof shapes / sizeof shapes[0] || !parse_shape(argv[a], &shapes[count])) {
      fprintf(stderr, "onnx_values: bad input shape '%s' (NAME:DxDx...)\n", argv[a]);
      return 2;
    }
    ++count;
  }
  FILE *f = fopen(argv[1], "rb");
  if (f == NULL) {
    fprintf(stderr, "onnx_values: cannot open %s\n", argv[1]);
    return 2;
  }
  size_t cap = 1 << 20, length = 0;
  unsigned char *data = malloc(cap);
  for (size_t got; data && (got = fread(data + length, 1, cap - length, f)) > 0;) {
    length += got;
    if (length == cap) {
      unsigned char *more = realloc(data, cap *= 2);
      if (more == NULL) free(data);
      data = more;
    }
  }
  fclose(f);
  if (data == NULL) {
    fprintf(stderr, "onnx_values: out of memory\n");
    return 2;
  }
  tg_model_options options = {shapes, count};
  tg_error_info err;
  memset(&err, 0, sizeof err);
  tg_status st = onnx_read_values(data, length, argv[1], &options, NULL, print_value, NULL, &err);
  free(data);
  if (st != TG_OK) {
    fprintf(stderr, "%s\n", err.message);
    return 2;
  }
  return 0;
}
