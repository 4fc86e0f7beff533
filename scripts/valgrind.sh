#!/usr/bin/env bash
# Run the backend tests (ctest labels backends, opencl, vulkan) under valgrind's memcheck, in a
# plain RelWithDebInfo build (no sanitizers: valgrind cannot run alongside them) in
# build-valgrind. Any memory error fails the run, and so does any definite or indirect leak
# outside tests/valgrind.supp, which covers only what the drivers allocate themselves (PoCL,
# lavapipe, LLVM, the Vulkan validation layer) and one ld.so false positive.
#   scripts/valgrind.sh              the CI set: see `subset` below (about 4 min on 2 cores)
#   scripts/valgrind.sh test_host    only the named test binaries, each complete
#   TANGRAM_VALGRIND_FULL=1 scripts/valgrind.sh   every backend test, complete (20+ min)
#   TANGRAM_VALGRIND_BUILD=build scripts/valgrind.sh   in an existing plain RelWithDebInfo build
#                                                     (scripts/test-deep.sh: scripts/test.sh's)
# The sanitizer build covers the library code in every other test. Valgrind is for the
# backends, because it also sees what the library hands to an uninstrumented driver
# (uninitialised bytes in uploads, use of freed driver objects), which ASan cannot see.
set -euo pipefail
cd "$(dirname "$0")/.."

build=${TANGRAM_VALGRIND_BUILD:-build-valgrind}
jobs=$(nproc 2>/dev/null || echo 2)
if ! command -v valgrind >/dev/null 2>&1; then
  echo "valgrind.sh: valgrind is not installed (scripts/setup.sh installs it)" >&2
  exit 2
fi

# Under valgrind the GPU tests run 30-50x slower than natively (lavapipe compiles every
# pipeline with LLVM, and the validation layer checks every call), and their model sweeps and
# allocation-failure walks would take 20 minutes or more. In CI each binary runs only the cases
# that reach distinct backend code: opening and describing the device, a missing driver,
# realising with objects and offsets and with buffers and images, the shadow run in and out
# of order (OpenCL also with a broken plan), refusals, and allocation-failure walks (host for
# both, device for OpenCL; the borrowed OpenCL context's host walk, over the same rollback
# code as test_opencl's and the longest case at over two minutes, runs in the ASan build
# only). A binary not listed here (test_host) runs complete. Each case is one process:
# test_opencl and test_opencl_borrowed take it from TG_TEST_FILTER, test_vulkan from its
# first argument.
declare -A subset=(
  [test_opencl]="device_info_is_sane missing_driver_is_reported broken_plan_is_caught_and_named
                 shared_image_regions_use_the_object_pitch odd_sizes_and_unwritten_reads
                 misaligned_offsets_are_refused oversized_allocations_fail_cleanly
                 device_alloc_failures_roll_back host_alloc_failures_roll_back"
  [test_opencl_borrowed]="wrong_objects_are_refused device_alloc_failures_roll_back_borrowed"
  [test_vulkan]="device_info_is_sane missing_driver_is_reported mixed_arena_realises_clean
                 odd_sizes_and_unordered_reads misplaced_resources_are_refused
                 host_alloc_failures_roll_back"
  [test_vulkan_borrowed]="wrapped_device_describes_and_gives_back engine_usage_is_added
                          engine_memory_errors_are_clean borrowed_host_alloc_failures_roll_back"
  [test_speed_opencl]="broken_plan_is_caught bad_requests_are_refused"
  [test_speed_vulkan]="broken_plan_is_caught"
)

echo "=== valgrind: build $build"
if [ -z "${TANGRAM_VALGRIND_BUILD:-}" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTANGRAM_WERROR="${TANGRAM_WERROR:-OFF}" \
    -DTANGRAM_BUILD_BENCH=OFF -DTANGRAM_BUILD_DEMOS=OFF >/dev/null
elif ! grep -q '^CMAKE_BUILD_TYPE:STRING=RelWithDebInfo$' "$build/CMakeCache.txt" 2>/dev/null ||
     grep -qE '^TANGRAM_(SANITIZE|TSAN|FUZZ):BOOL=ON$' "$build/CMakeCache.txt"; then
  echo "valgrind.sh: $build is not a plain RelWithDebInfo build (no sanitizers)" >&2
  exit 2
fi
# The tests of the backend labels that this configuration defines (a backend whose SDK is
# missing has none), or the ones named on the command line.
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  # The demos' tests (demo_*, in a build with demos) run their programs from demos/: not here.
  mapfile -t targets < <(ctest --test-dir "$build" -N -L '^(host|opencl|vulkan)$' 2>/dev/null |
                         sed -n 's/^ *Test *#[0-9]*: *//p' | grep -v '^demo_')
fi
if [ ${#targets[@]} -eq 0 ]; then
  echo "valgrind.sh: no backend test in this configuration" >&2
  exit 2
fi
cmake --build "$build" -j"$jobs" --target "${targets[@]}" tangram_cli

export TANGRAM_CLI="$PWD/$build/tangram"
# PoCL compiles kernels with LLVM, which takes minutes under valgrind. Its cache turns a
# compile into a lookup, and the native run first fills it (that run must pass too). The
# single-threaded "basic" device avoids the pthread device's worker threads, which valgrind
# serialises (they spin). LP_NUM_THREADS=0 does the same for lavapipe.
export POCL_CACHE_DIR="${POCL_CACHE_DIR:-$PWD/$build/pocl-cache}"
export POCL_DEVICES="${POCL_DEVICES:-basic}"
export LP_NUM_THREADS="${LP_NUM_THREADS:-0}"
mkdir -p "$POCL_CACHE_DIR"
# Tests that honour TANGRAM_TEST_QUICK=1 trim their longest loops.
export TANGRAM_TEST_QUICK="${TANGRAM_TEST_QUICK:-1}"

vg=(valgrind --tool=memcheck --leak-check=full --error-exitcode=99
    --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect
    --keep-debuginfo=yes --suppressions="$PWD/tests/valgrind.supp" --num-callers=40)

# The (binary, case) runs: a case name, or "all" for the whole binary.
cases=()
for t in "${targets[@]}"; do
  if [ "${TANGRAM_VALGRIND_FULL:-0}" = 1 ] || [ $# -gt 0 ] || [ -z "${subset[$t]:-}" ]; then
    cases+=("$t all")
  else
    for c in ${subset[$t]}; do cases+=("$t $c"); done
  fi
done

# run_case [VALGRIND...] BINARY CASE: run one case, under the given command prefix (none =
# natively). test_opencl takes the case from TG_TEST_FILTER, test_vulkan from its first
# argument; a binary without cases ignores both. The filter goes outside valgrind, which
# would otherwise follow `env` rather than the test.
run_case() {
  local n=$# name=${*: -1} t=${*: -2:1}
  local prefix=("${@:1:n-2}")
  if [ "$name" = all ]; then
    "${prefix[@]}" "$build/tests/$t"
  else
    TG_TEST_FILTER="$name" "${prefix[@]}" "$build/tests/$t" "$name"
  fi
}

failed=()
passed=0
# Natively first: every case must pass without valgrind, and PoCL's kernel cache fills.
echo "=== valgrind: ${#cases[@]} cases, natively first"
for c in "${cases[@]}"; do
  read -r t name <<<"$c"
  if ! run_case "$t" "$name" >"$build/$t.$name.native.log" 2>&1; then
    echo "valgrind.sh: $t $name fails even without valgrind; its log:" >&2
    tail -n 40 "$build/$t.$name.native.log" >&2
    failed+=("$t $name (native)")
  fi
done
[ ${#failed[@]} -eq 0 ] || { echo "valgrind: 0 passed, ${#failed[@]} failed"; exit 1; }

# Under memcheck, as many at once as there are cores: each run is single-threaded.
echo "=== valgrind: under memcheck, $jobs at a time"
running=0
for c in "${cases[@]}"; do
  read -r t name <<<"$c"
  log="$build/$t.$name"
  (
    start=$(date +%s)
    status=0
    run_case "${vg[@]}" --log-file="$log.valgrind.log" "$t" "$name" >"$log.out.log" 2>&1 ||
      status=$?
    echo "$status $(($(date +%s) - start))" >"$log.status"
  ) &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true

for c in "${cases[@]}"; do
  read -r t name <<<"$c"
  log="$build/$t.$name"
  status=1 secs=?
  [ -f "$log.status" ] && read -r status secs <"$log.status"
  summary=$(grep -E 'ERROR SUMMARY' "$log.valgrind.log" 2>/dev/null | sed 's/^==[0-9]*== //' || true)
  # No summary means valgrind did not follow the test to its end: not a pass.
  [ -n "$summary" ] || status=98
  echo "valgrind: $t $name: ${summary:-no summary} (${secs} s)"
  grep -hE '^\[  (PASSED|FAILED|SKIPPED) ' "$log.out.log" || true
  if [ "$status" -ne 0 ]; then
    echo "valgrind.sh: $t $name failed under valgrind (exit $status); see $log.valgrind.log:" >&2
    grep -E 'definitely lost:|indirectly lost:' "$log.valgrind.log" | sed 's/^==[0-9]*== //' >&2 || true
    grep -A40 -m3 -E 'Invalid|uninitialised|are definitely lost in|are indirectly lost in|Mismatched' \
      "$log.valgrind.log" | head -n 120 >&2 || true
    tail -n 20 "$log.out.log" >&2
    failed+=("$t $name")
  else
    passed=$((passed + 1))
  fi
done

echo "valgrind: ${passed} passed, ${#failed[@]} failed"
[ ${#failed[@]} -eq 0 ]
