/* Preloaded into the tests of sanitizer builds (tests/CMakeLists.txt, sanitizer builds): dlclose() keeps every
 * library mapped until the process exits. Driver libraries (the Vulkan ICD, the OpenCL
 * platform) keep allocations in their globals; once unloaded, LeakSanitizer sees those as
 * leaks of "<unknown module>", which no suppression can name (lavapipe in Mesa
 * 22.3.6-1+deb12u2 keeps 128 bytes this way). Mapped, they stay reachable and attributable.
 * Tangram's own memory is unaffected: it never lives in a driver's globals. */
int dlclose(void *handle);

int dlclose(void *handle) {
  (void)handle;
  return 0;
}
