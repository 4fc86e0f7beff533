#!/usr/bin/env bash
# Build the libFuzzer targets (tests/fuzz/fuzz_*.c) with clang and run each in turn.
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
# SECONDS_PER_TARGET defaults to 10 (a CI smoke run); TARGETs default to every fuzz_*.c.
#
# Each target runs on a work copy of its seed corpus, tests/fuzz/corpus-work/<target>/
# (git-ignored, kept between runs so long runs build on each other), reading the seeds in
# tests/fuzz/corpus/<target>/ and its dictionary tests/fuzz/<target>.dict when present.
# A crash, a leak, a timeout or running out of memory fails the run; the input that caused it
# is copied to tests/fuzz/crashes/<target>/, where ctest replays it (label "fuzz") in every
# build until the bug is fixed.
#
# Long runs: the smoke run finds shallow bugs only. Before a release, or after changing a
# reader or the planner, run for hours, one target at a time on a shared machine:
#   scripts/fuzz.sh 14400 fuzz_planner           # four hours on the planner
#   scripts/fuzz.sh 3600                          # one hour per target
# Extra libFuzzer flags go in TANGRAM_FUZZ_ARGS (e.g. "-max_len=65536" or "-jobs=4 -workers=4"
# on a machine with cores to spare). To keep what a long run found as seeds, merge the work
# corpus into the committed one (it keeps only inputs that add coverage), see docs/trust.md.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-10}
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [ "$seconds" -lt 1 ]; then
  echo "fuzz.sh: SECONDS_PER_TARGET must be a positive integer, not '$seconds'" >&2
  exit 2
fi
[ $# -gt 0 ] && shift

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for src in tests/fuzz/fuzz_*.c; do
    targets+=("$(basename "$src" .c)")
  done
fi

build=build-fuzz
jobs=$(nproc 2>/dev/null || echo 2)
echo "=== fuzz: build $build (clang, libFuzzer, ASan, UBSan)"
# The fuzz targets compile the library sources themselves with coverage and sanitizers; the
# GPU backends, benchmarks and demos are not needed for them.
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTANGRAM_FUZZ=ON -DTANGRAM_WERROR="${TANGRAM_WERROR:-OFF}" -DTANGRAM_OPENCL=OFF -DTANGRAM_VULKAN=OFF \
  -DTANGRAM_BUILD_BENCH=OFF -DTANGRAM_BUILD_DEMOS=OFF >/dev/null
cmake --build "$build" -j"$jobs" --target "${targets[@]}"

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
read -r -a extra <<<"${TANGRAM_FUZZ_ARGS:-}"

failed=()
passed=0
for t in "${targets[@]}"; do
  seeds=tests/fuzz/corpus/$t
  work=tests/fuzz/corpus-work/$t
  crashes=tests/fuzz/crashes/$t
  mkdir -p "$work" "$crashes"
  artifacts=$(mktemp -d)
  args=(-max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$artifacts/")
  [ -f "tests/fuzz/$t.dict" ] && args+=(-dict="tests/fuzz/$t.dict")
  echo "=== fuzz: $t for ${seconds}s"
  status=0
  # New inputs go to the first directory (the work copy); the seeds are only read.
  "$build/tests/fuzz/$t" "${args[@]}" "${extra[@]}" "$work" "$seeds" >"$artifacts/log" 2>&1 || status=$?
  grep -E '^(#[0-9]+ +DONE|Done [0-9]+ runs|stat::number_of_executed_units|stat::peak_rss_mb)' \
    "$artifacts/log" || true
  found=0
  for f in "$artifacts"/crash-* "$artifacts"/leak-* "$artifacts"/timeout-* "$artifacts"/oom-*; do
    [ -e "$f" ] || continue
    cp "$f" "$crashes/"
    echo "fuzz: $t: saved $(basename "$f") in $crashes/"
    found=1
  done
  if [ "$status" -ne 0 ] || [ "$found" -ne 0 ]; then
    echo "fuzz: $t FAILED (exit $status); its log:"
    tail -n 60 "$artifacts/log"
    failed+=("$t")
  else
    passed=$((passed + 1))
  fi
  rm -rf "$artifacts"
done

echo "fuzz: ${passed} passed, ${#failed[@]} failed"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: failing targets: ${failed[*]} (inputs saved under tests/fuzz/crashes/)" >&2
  exit 1
fi
