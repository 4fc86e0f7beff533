#!/usr/bin/env bash
# Build the library and the CLI in every build type with gcc, and in Debug with clang, with
# -Werror (TANGRAM_WERROR=ON): a warning in any of them fails. Prints one line per build.
#   scripts/build-matrix.sh                 the CI matrix
#   scripts/build-matrix.sh --all           every build type with clang too
#   scripts/build-matrix.sh --no-werror     report warnings instead of failing on them
#   scripts/build-matrix.sh --full          tests, demos and benchmarks too
#   scripts/build-matrix.sh --skip CC:TYPE  leave out a build made elsewhere (scripts/test-deep.sh:
#                                           gcc:RelWithDebInfo, which is scripts/test.sh's build/)
set -euo pipefail
cd "$(dirname "$0")/.."
all=0 werror=ON parts=OFF
skip=()
while [ $# -gt 0 ]; do
  case "$1" in
    --all) all=1 ;;
    --no-werror) werror=OFF ;;
    --full) parts=ON ;;
    --skip) [ $# -ge 2 ] || { echo "build-matrix.sh: --skip needs CC:TYPE" >&2; exit 2; }
            skip+=("$2"); shift ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "build-matrix.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done
jobs=$(nproc 2>/dev/null || echo 2)
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
types=(Debug Release RelWithDebInfo MinSizeRel)
builds=()
for t in "${types[@]}"; do builds+=("gcc:$t"); done
if [ "$all" -eq 1 ]; then
  for t in "${types[@]}"; do builds+=("clang:$t"); done
else
  builds+=("clang:Debug")
fi
failed=0
for b in "${builds[@]}"; do
  cc=${b%%:*} type=${b#*:}
  if [ ${#skip[@]} -gt 0 ] && printf '%s\n' "${skip[@]}" | grep -qxF "$b"; then
    printf '%-6s %-15s %s\n' "$cc" "$type" "skipped (built elsewhere)"
    continue
  fi
  dir="build-matrix/$cc-$type-$parts"
  log="$dir.log"
  mkdir -p build-matrix
  start=$(date +%s)
  if CC=$cc cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE="$type" \
       -DTANGRAM_WERROR="$werror" -DTANGRAM_BUILD_TESTS=$parts -DTANGRAM_BUILD_DEMOS=$parts \
       -DTANGRAM_BUILD_BENCH=$parts >"$log" 2>&1 &&
     cmake --build "$dir" -j"$jobs" >>"$log" 2>&1; then
    warnings=$(grep -c 'warning:' "$log" || true)
    status=ok
    [ "$warnings" -gt 0 ] && status="$warnings warnings"
  else
    status="FAILED (see $log)"
    failed=1
  fi
  printf '%-6s %-15s %-30s %ss\n' "$cc" "$type" "$status" "$(( $(date +%s) - start ))"
  [ "$status" = ok ] || grep -m5 -E 'warning:|error:' "$log" || true
done
exit "$failed"
