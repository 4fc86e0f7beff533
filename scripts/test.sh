#!/usr/bin/env bash
# Build Tangram and run every test: a normal build, then the build matrix and the arm64 build
# under qemu, then the whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer,
# then the trust checks. Installs what is missing first.
#   scripts/test.sh            normal build, build matrix (gcc x 4 build types, clang Debug),
#                              arm64 tests under qemu-user, ASan+UBSan build, TSan thread test,
#                              fuzz smoke, valgrind of the backend tests
#   scripts/test.sh --quick    normal build only
# TANGRAM_WERROR=ON (CI sets it) makes every warning an error.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[ "${1:-}" = "--quick" ] && quick=1

bash scripts/setup.sh
export TANGRAM_MODEL_CACHE="${TANGRAM_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tangram/models}"
export POCL_CACHE_DIR="${POCL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tangram/pocl}"
mkdir -p "$POCL_CACHE_DIR"
jobs=$(nproc 2>/dev/null || echo 2)
export TANGRAM_WERROR="${TANGRAM_WERROR:-OFF}"

run_suite() {
  local dir=$1; shift
  echo "=== build $dir ($*)"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANGRAM_WERROR="$TANGRAM_WERROR" "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
  echo "=== test $dir"
  # -V keeps cmocka's per-test lines and its [ PASSED ]/[ FAILED ] summaries (on stderr) in the log.
  ctest --test-dir "$dir" -V -j"$jobs" --timeout 900
}

run_suite build
if [ "$quick" -eq 0 ]; then
  echo "=== build matrix: library and CLI, gcc in every build type, clang in Debug"
  if [ "$TANGRAM_WERROR" = ON ]; then bash scripts/build-matrix.sh; else bash scripts/build-matrix.sh --no-werror; fi

  echo "=== arm64: cross build, tests under qemu-user, plans equal to x86-64's"
  bash scripts/test-arm64.sh build/tangram

  # The sanitizers' settings (ASAN_OPTIONS, LSAN_OPTIONS with tests/lsan.supp, the
  # driver-keeping preload) are each test's own, set by CMake: a plain `ctest` in a
  # TANGRAM_SANITIZE build needs nothing from here.
  # TANGRAM_TEST_QUICK: the slowest walks (device faults through `tangram run`) take one case per
  # backend instead of two under the sanitizers; the normal build ran them all.
  TANGRAM_TEST_QUICK=1 run_suite build-asan -DTANGRAM_SANITIZE=ON -DTANGRAM_BUILD_BENCH=OFF

  echo "=== ThreadSanitizer: planning from 4 threads, one run-time pool shared by 4 threads"
  cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANGRAM_TSAN=ON -DTANGRAM_WERROR="$TANGRAM_WERROR" -DTANGRAM_OPENCL=OFF \
    -DTANGRAM_VULKAN=OFF -DTANGRAM_BUILD_BENCH=OFF -DTANGRAM_BUILD_DEMOS=OFF >/dev/null
  cmake --build build-tsan -j"$jobs" --target test_threads test_pool_threads
  TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-tsan -V -L threads

  echo "=== libFuzzer smoke: every fuzz target, 6 s each (scripts/fuzz.sh SECONDS for long runs)"
  # A fixed seed: the smoke run tries the same mutations every time, so CI does not turn red on
  # the luck of a draw; long runs (scripts/fuzz.sh alone) draw a new seed each time.
  TANGRAM_FUZZ_ARGS="${TANGRAM_FUZZ_ARGS:--seed=1}" bash scripts/fuzz.sh 6

  echo "=== valgrind memcheck of the backend tests"
  bash scripts/valgrind.sh
fi
echo "=== all test suites passed"
