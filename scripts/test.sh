#!/usr/bin/env bash
# The README's test command: build Tangram and run its tests twice, in a normal build and under
# AddressSanitizer + UndefinedBehaviorSanitizer. Installs what is missing first.
#   scripts/test.sh            normal build (build/) and its tests, then the ASan+UBSan build
#                              (build-asan/) and its tests
#   scripts/test.sh --quick    normal build only
# CI (.ci/run) runs this, then the deeper stages of scripts/test-deep.sh: long property runs at
# full size, the build matrix, arm64 under qemu, ThreadSanitizer, the fuzz smoke run and
# valgrind. TANGRAM_WERROR=ON (CI sets it) makes every warning an error.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[ "${1:-}" = "--quick" ] && quick=1

bash scripts/setup.sh
source scripts/test-env.sh

run_suite() {
  local dir=$1; shift
  stage "build $dir ($*)"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANGRAM_WERROR="$TANGRAM_WERROR" "$@" >/dev/null
  cmake --build "$dir" -j"$jobs"
  stage "test $dir"
  # -V keeps cmocka's per-test lines and its [ PASSED ]/[ FAILED ] summaries (on stderr) in the log.
  ctest --test-dir "$dir" -V -j"$jobs" --timeout 900
}

run_suite build
if [ "$quick" -eq 0 ]; then
  # The sanitizers' settings (ASAN_OPTIONS, LSAN_OPTIONS with tests/lsan.supp, the
  # driver-keeping preload) are each test's own, set by CMake: a plain `ctest` in a
  # TANGRAM_SANITIZE build needs nothing from here.
  # TANGRAM_TEST_QUICK: the longest loops and walks (device faults through `tangram run`, the
  # model sweeps on the GPU backends) take a subset under the sanitizers, where every run
  # costs three times as much; the normal build ran more of them, scripts/test-deep.sh all.
  TANGRAM_TEST_QUICK=1 run_suite build-asan -DTANGRAM_SANITIZE=ON -DTANGRAM_BUILD_BENCH=OFF
fi
stage "all test suites passed"
