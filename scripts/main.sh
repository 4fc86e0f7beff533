#!/usr/bin/env bash
# Build Tangram and run its main job on a real MediaPipe model.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc 2>/dev/null || echo 2)" --target tangram_cli
./build/tangram plan tests/data/records/pose_landmark_lite.buffer.csv "$@"
