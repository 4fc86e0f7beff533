#!/usr/bin/env bash
# The deeper stages of CI, after scripts/test.sh (whose normal build, build/, they reuse):
#   1. long property runs and sweeps at full size: the tests labelled `deep` again, with
#      TANGRAM_TEST_DEEP=1, in build/
#   2. the build matrix: library and CLI in every build type with gcc and in Debug with clang
#      (gcc RelWithDebInfo is build/ itself)
#   3. arm64: cross build, tests under qemu-user, plans equal to x86-64's
#   4. ThreadSanitizer: planning from 4 threads, one run-time pool shared by 4 threads
#   5. libFuzzer smoke: every fuzz target, 6 s each
#   6. valgrind memcheck of the backend tests, in build/
# .ci/run runs scripts/test.sh and then this. TANGRAM_WERROR=ON (CI sets it) makes every
# warning an error.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/test-env.sh

if [ ! -f build/CMakeCache.txt ]; then
  echo "test-deep.sh: run scripts/test.sh first (its normal build, build/, is reused here)" >&2
  exit 2
fi
# Up to date with the sources (a no-op right after scripts/test.sh).
cmake --build build -j"$jobs" >/dev/null

stage "deep: the tests labelled deep at full size (TANGRAM_TEST_DEEP=1)"
TANGRAM_TEST_DEEP=1 ctest --test-dir build -V -j"$jobs" --timeout 900 -L '^deep$'

stage "build matrix: library and CLI, gcc in every build type, clang in Debug"
matrix=(--skip gcc:RelWithDebInfo)
[ "$TANGRAM_WERROR" = ON ] || matrix+=(--no-werror)
bash scripts/build-matrix.sh "${matrix[@]}"

stage "arm64: cross build, tests under qemu-user, plans equal to x86-64's"
bash scripts/test-arm64.sh build/tangram

stage "ThreadSanitizer: planning from 4 threads, one run-time pool shared by 4 threads"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANGRAM_TSAN=ON -DTANGRAM_WERROR="$TANGRAM_WERROR" -DTANGRAM_OPENCL=OFF \
  -DTANGRAM_VULKAN=OFF -DTANGRAM_BUILD_BENCH=OFF -DTANGRAM_BUILD_DEMOS=OFF >/dev/null
cmake --build build-tsan -j"$jobs" --target test_threads test_pool_threads
TSAN_OPTIONS=halt_on_error=1 ctest --test-dir build-tsan -V -L threads

stage "libFuzzer smoke: every fuzz target, 6 s each (scripts/fuzz.sh SECONDS for long runs)"
# A fixed seed: the smoke run tries the same mutations every time, so CI does not turn red on
# the luck of a draw; long runs (scripts/fuzz.sh alone) draw a new seed each time.
TANGRAM_FUZZ_ARGS="${TANGRAM_FUZZ_ARGS:--seed=1}" bash scripts/fuzz.sh 6

stage "valgrind memcheck of the backend tests (in build/)"
TANGRAM_VALGRIND_BUILD=build bash scripts/valgrind.sh

stage "all deep stages passed"
