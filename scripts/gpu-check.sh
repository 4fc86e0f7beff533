#!/usr/bin/env bash
# One command for a machine with a real GPU (CI never runs it): build, then run on whatever
# OpenCL and Vulkan devices the machine has
#   1. the backend tests (ctest labels host, opencl, vulkan, backends),
#   2. the engine demos (ctest demo_*),
#   3. `tangram probe` for OpenCL and for Vulkan,
#   4. `tangram evaluate MODEL --speed` on the public models for OpenCL and for Vulkan,
#   5. scripts/speed-stability.sh (5 runs: medians within 20%?) on one model per API,
# and print one summary: each step PASS / FAIL / SKIP with its time, the device each API
# opened, and per model and API the fastest and the smallest storage. Logs go to BUILD/gpu-check/.
#   scripts/gpu-check.sh                 build in build-gpu (Release), default models
#   scripts/gpu-check.sh BUILD_DIR       another build directory
#   TANGRAM_GPU_CHECK_MODELS="a b" ...   other models (names in the model cache, without .tflite)
#   TANGRAM_GPU_CHECK_REPEAT=N ...       timed runs per plan for evaluate --speed (default 5)
#   TANGRAM_GPU_CHECK_STABILITY_MODEL=m  the stability step's model (default pose_landmark_lite)
#   TANGRAM_GPU_CHECK_TESTS=REGEX ...    only the backend tests matching REGEX (a smoke run)
#   TANGRAM_GPU_CHECK_NO_BUILD=1 ...     use BUILD_DIR as it is (already built)
# Exit status: 0 when nothing failed (skips allowed: an API without a device), 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."

build=${1:-build-gpu}
jobs=$(nproc 2>/dev/null || echo 2)
repeat=${TANGRAM_GPU_CHECK_REPEAT:-5}
models=${TANGRAM_GPU_CHECK_MODELS:-"selfie_segmentation face_detection_short_range hand_landmark_lite pose_landmark_lite"}
cache="${TANGRAM_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tangram/models}"
logs="$build/gpu-check"
summary=()
failed=0

# step NAME COMMAND...: run a step, log its output, record PASS/FAIL and its time.
step() {
  local name=$1; shift
  local log="$logs/$(echo "$name" | tr ' /:' '___').log" start end rc
  start=$(date +%s)
  "$@" >"$log" 2>&1
  rc=$?
  end=$(date +%s)
  if [ $rc -eq 0 ]; then
    summary+=("$(printf '%-44s PASS  %4ss' "$name" $((end - start)))")
  else
    summary+=("$(printf '%-44s FAIL  %4ss  (exit %d, log %s)' "$name" $((end - start)) $rc "$log")")
    failed=1
  fi
  return $rc
}

skip() { summary+=("$(printf '%-44s SKIP         %s' "$1" "$2")"); }

mkdir -p "$logs"
echo "=== gpu-check: build in $build"
if [ "${TANGRAM_GPU_CHECK_NO_BUILD:-0}" = 1 ]; then
  [ -x "$build/tangram" ] || { echo "gpu-check: no $build/tangram to use" >&2; exit 1; }
elif ! cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTANGRAM_BUILD_BENCH=OFF >"$logs/configure.log" 2>&1 ||
   ! cmake --build "$build" -j"$jobs" >"$logs/build.log" 2>&1; then
  echo "gpu-check: the build failed; see $logs/build.log" >&2
  tail -n 30 "$logs/build.log" >&2
  exit 1
fi
cli="$PWD/$build/tangram"
export TANGRAM_CLI="$cli"

echo "=== gpu-check: backend tests"
step "backend tests (ctest host/opencl/vulkan)" \
  ctest --test-dir "$build" -L '^(host|opencl|vulkan|backends)$' -R "${TANGRAM_GPU_CHECK_TESTS:-.}" -j"$jobs" \
  --output-on-failure --timeout 1800
echo "=== gpu-check: engine demos"
step "engine demos (ctest demo_*)" ctest --test-dir "$build" -R '^demo_' --output-on-failure --timeout 900

if [ ! -s "$cache/pose_landmark_lite.tflite" ]; then
  bash scripts/fetch-models.sh >"$logs/fetch-models.log" 2>&1 || echo "gpu-check: fetching the models failed (offline?)" >&2
fi

devices=()
for api in opencl vulkan; do
  echo "=== gpu-check: $api probe"
  if step "$api probe" "$cli" probe --backend "$api" --save "$logs/$api.profile"; then
    devices+=("$(head -n 1 "$logs/$(echo "$api probe" | tr ' /:' '___').log")")
  else
    continue
  fi
  for m in $models; do
    model="$cache/$m.tflite"
    if [ ! -s "$model" ]; then
      skip "$api evaluate --speed $m" "not in $cache"
      continue
    fi
    echo "=== gpu-check: $api evaluate --speed $m"
    out="$logs/$api.$m.json"
    if step "$api evaluate --speed $m" "$cli" evaluate "$model" --speed --backend "$api" --repeat "$repeat" \
         --json --svg-dir "$logs"; then
      cp "$logs/$(echo "$api evaluate --speed $m" | tr ' /:' '___').log" "$out"
      # The recommendation, from the JSON (no jq needed).
      rec=$(grep -o '"speed_recommendation":{[^}]*}[^}]*}' "$out" | head -n 1 |
            sed -E 's/.*"fastest":\{"storage":"([^"]*)","mode":"([^"]*)","bytes":([0-9]*),"median_ms":([0-9.]*).*"smallest":\{"storage":"([^"]*)","mode":"([^"]*)","bytes":([0-9]*),"median_ms":([0-9.]*).*/fastest \1 \2 (\4 ms, \3 B); smallest \5 \6 (\8 ms, \7 B)/')
      summary[${#summary[@]}-1]+="  $rec"
    fi
  done
  sm=${TANGRAM_GPU_CHECK_STABILITY_MODEL:-pose_landmark_lite}
  if [ -s "$cache/$sm.tflite" ]; then
    echo "=== gpu-check: $api stability $sm"
    step "$api stability $sm" scripts/speed-stability.sh "$build" "$sm" "$api" 5
    summary[${#summary[@]}-1]+="  $(tail -n 1 "$logs/$(echo "$api stability $sm" | tr ' /:' '___').log" | cut -d';' -f1)"
  else
    skip "$api stability $sm" "not in $cache"
  fi
done

echo
echo "=== gpu-check summary ($(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n))"
for d in "${devices[@]}"; do echo "device  $d"; done
for line in "${summary[@]}"; do echo "$line"; done
echo "logs, profiles, JSON and charts: $logs"
exit $failed
