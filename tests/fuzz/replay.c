/* Regression driver: runs a fuzz target's LLVMFuzzerTestOneInput on every file of the given
 * directories (or on the given files), so corpora and past crashes replay as plain tests in
 * every build, with or without libFuzzer. Hidden files (.gitkeep) are skipped. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "replay: cannot open %s\n", path);
    return 1;
  }
  size_t cap = 1 << 16, len = 0;
  uint8_t *buf = malloc(cap);
  for (;;) {
    if (buf == NULL) {
      fclose(f);
      fprintf(stderr, "replay: out of memory reading %s\n", path);
      return 1;
    }
    len += fread(buf + len, 1, cap - len, f);
    if (len < cap) break;
    uint8_t *nb = realloc(buf, cap * 2);
    if (nb == NULL) free(buf);
    buf = nb;
    cap *= 2;
  }
  fclose(f);
  /* An exact-size copy, so ASan catches reads one past the end. */
  uint8_t *exact = malloc(len ? len : 1);
  if (exact == NULL) {
    free(buf);
    return 1;
  }
  memcpy(exact, buf, len);
  free(buf);
  LLVMFuzzerTestOneInput(exact, len);
  free(exact);
  return 0;
}

int main(int argc, char **argv) {
  int failures = 0;
  size_t files = 0;
  for (int i = 1; i < argc; ++i) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "replay: %s does not exist\n", argv[i]);
      ++failures;
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      failures += run_file(argv[i]);
      ++files;
      continue;
    }
    DIR *d = opendir(argv[i]);
    if (d == NULL) {
      fprintf(stderr, "replay: cannot open directory %s\n", argv[i]);
      ++failures;
      continue;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
      if (e->d_name[0] == '.') continue;
      char path[4096];
      snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
      if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
      failures += run_file(path);
      ++files;
    }
    closedir(d);
  }
  printf("replay: %zu inputs, %d failures\n", files, failures);
  return failures ? 1 : 0;
}
