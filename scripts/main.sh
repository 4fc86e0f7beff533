#!/usr/bin/env bash
# Build Tangram and run its main job: plan a real MediaPipe model's GPU memory, create it on the
# best device available (Vulkan, OpenCL, else host memory), check nothing is corrupted, report.
# Extra arguments go to `tangram run` (e.g. --json, --storage texture_2d, --backend opencl).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --no-models
cache=$(bash scripts/fetch-models.sh | tail -n 1)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" --target tangram_cli
export POCL_CACHE_DIR="${POCL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tangram/pocl}"
./build/tangram run "$cache/pose_landmark_lite.tflite" --backend auto "$@"
