#!/usr/bin/env bash
# Run the backend tests (ctest labels backends, opencl, vulkan) under valgrind's memcheck: a
# plain RelWithDebInfo build (no sanitizers, which valgrind cannot run alongside) in
# build-valgrind. Fails on any memory error and on any definite or indirect leak outside
# tests/valgrind.supp (which only names leaks inside the drivers: PoCL, Mesa, the loaders).
#   scripts/valgrind.sh            every test labelled backends, opencl or vulkan
#   scripts/valgrind.sh test_host  only the named test binaries
# Sanitizers cover the library code itself in every other test; valgrind is here for the
# backends because it also sees what the library hands to the drivers (uninitialised bytes in
# uploads, reads of freed driver objects), which ASan cannot see inside uninstrumented drivers.
set -euo pipefail
cd "$(dirname "$0")/.."

build=build-valgrind
jobs=$(nproc 2>/dev/null || echo 2)
if ! command -v valgrind >/dev/null 2>&1; then
  echo "valgrind.sh: valgrind is not installed (scripts/setup.sh installs it)" >&2
  exit 2
fi

echo "=== valgrind: build $build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTANGRAM_BUILD_BENCH=OFF -DTANGRAM_BUILD_DEMOS=OFF >/dev/null
# The tests of the backend labels that this configuration defines (a backend whose SDK is
# missing has none), or the ones named on the command line.
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(ctest --test-dir "$build" -N -L '^(backends|opencl|vulkan)$' 2>/dev/null |
                         sed -n 's/^ *Test *#[0-9]*: *//p')
fi
if [ ${#targets[@]} -eq 0 ]; then
  echo "valgrind.sh: no backend test in this configuration" >&2
  exit 2
fi
cmake --build "$build" -j"$jobs" --target "${targets[@]}" tangram_cli

export TANGRAM_CLI="$PWD/$build/tangram"
# PoCL compiles kernels with LLVM, which takes minutes under valgrind. The cache makes a
# second compile a lookup: a native run first fills it (and must pass too).
export POCL_CACHE_DIR="${POCL_CACHE_DIR:-$PWD/$build/pocl-cache}"
mkdir -p "$POCL_CACHE_DIR"
# Backend tests honour TANGRAM_TEST_QUICK=1 by trimming their longest loops (model sweeps,
# allocation-failure walks) to a representative part: valgrind runs 20-50x slower.
export TANGRAM_TEST_QUICK="${TANGRAM_TEST_QUICK:-1}"

vg=(valgrind --tool=memcheck --leak-check=full --error-exitcode=99
    --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect
    --suppressions="$PWD/tests/valgrind.supp" --num-callers=40 --track-origins=no)

failed=()
for t in "${targets[@]}"; do
  bin="$build/tests/$t"
  echo "=== valgrind: $t (native run first)"
  if ! "$bin" >"$build/$t.native.log" 2>&1; then
    echo "valgrind.sh: $t fails even without valgrind; its log:" >&2
    tail -n 40 "$build/$t.native.log" >&2
    failed+=("$t")
    continue
  fi
  echo "=== valgrind: $t under memcheck"
  start=$(date +%s)
  status=0
  "${vg[@]}" --log-file="$build/$t.valgrind.log" "$bin" >"$build/$t.out.log" 2>&1 || status=$?
  # cmocka's summary and valgrind's verdict, for the CI log.
  grep -hE '^\[  (PASSED|FAILED|SKIPPED) ' "$build/$t.out.log" || true
  grep -E 'ERROR SUMMARY|definitely lost|indirectly lost|possibly lost' "$build/$t.valgrind.log" | sed 's/^==[0-9]*== //'
  echo "valgrind: $t took $(($(date +%s) - start)) s, exit $status"
  if [ "$status" -ne 0 ]; then
    echo "valgrind.sh: $t failed under valgrind (exit $status); see $build/$t.valgrind.log:" >&2
    grep -A40 -m3 -E 'Invalid|uninitialised|definitely lost in|indirectly lost in|Mismatched' \
      "$build/$t.valgrind.log" | head -n 120 >&2 || true
    tail -n 20 "$build/$t.out.log" >&2
    failed+=("$t")
  fi
done

echo "valgrind: $((${#targets[@]} - ${#failed[@]})) passed, ${#failed[@]} failed"
[ ${#failed[@]} -eq 0 ]
