#!/usr/bin/env bash
# Build Tangram for arm64 with Debian's cross compiler and run the library's tests under
# qemu-user (cmake/toolchains/aarch64-linux-gnu.cmake), then check that the arm64 CLI prints
# the same plans as the x86-64 one on the public models' records.
#   scripts/test-arm64.sh [X86_CLI]    X86_CLI defaults to build/tangram (built if missing)
# Needs scripts/setup.sh (gcc-aarch64-linux-gnu, qemu-user, libcmocka-dev:arm64).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
x86_cli=${1:-build/tangram}
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
werror=${TANGRAM_WERROR:-ON}

if [ ! -x "$x86_cli" ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build build -j"$jobs" --target tangram_cli
fi

echo "=== build build-arm64 (aarch64-linux-gnu, RelWithDebInfo)"
cmake -S . -B build-arm64 "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake -DTANGRAM_WERROR="$werror" \
  -DTANGRAM_OPENCL=OFF -DTANGRAM_VULKAN=OFF -DTANGRAM_BUILD_BENCH=OFF -DTANGRAM_BUILD_DEMOS=OFF \
  >/dev/null
cmake --build build-arm64 -j"$jobs"
file build-arm64/tangram | grep -q 'ARM aarch64' || { echo "build-arm64/tangram is not arm64" >&2; exit 1; }

echo "=== test build-arm64 under qemu-aarch64 (core, model, schedule, planner, host backend)"
# test_lp_dive measures how often a clock-bounded search reaches its bound, which emulation
# (5-10x slower) only makes slower; the LP code itself runs here in test_bounds.
# TANGRAM_TEST_QUICK: the longest property loops (10000 random sets) run 2000 here, as under
# the sanitizers; the normal build runs them all.
TANGRAM_TEST_QUICK=1 ctest --test-dir build-arm64 -V -j"$jobs" --timeout 900 \
  -L '^(core|model|schedule|planner|strategies|bounds|search|host|layout)$' -E '^test_lp_dive$'

echo "=== arm64 CLI vs x86-64 CLI: the same plans on the public models' records"
qemu=$(command -v qemu-aarch64 || command -v qemu-aarch64-static)
wrapper=build-arm64/tangram-qemu
printf '#!/bin/sh\nexec %s -L /usr/aarch64-linux-gnu %s "$@"\n' "$qemu" "$PWD/build-arm64/tangram" \
  >"$wrapper"
chmod +x "$wrapper"
TANGRAM_MODEL_CACHE=/nonexistent bash scripts/plan-snapshot.sh "$x86_cli" >build-arm64/plans-x86_64.txt
TANGRAM_MODEL_CACHE=/nonexistent bash scripts/plan-snapshot.sh "$wrapper" >build-arm64/plans-arm64.txt
sets=$(grep -c '^==' build-arm64/plans-x86_64.txt)
if cmp -s build-arm64/plans-x86_64.txt build-arm64/plans-arm64.txt; then
  echo "arm64: $sets plan sets identical to x86-64's"
  echo "1 passed, 0 failed"
else
  diff build-arm64/plans-x86_64.txt build-arm64/plans-arm64.txt | head -20
  echo "arm64: plans differ from x86-64's"
  echo "0 passed, 1 failed"
  exit 1
fi
