#!/usr/bin/env bash
# Install the build into a temporary prefix, then build a consumer against it with
# find_package(tangram) and with pkg-config, and run both.
set -euo pipefail
src=$1 build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$src/tests/packaging/consumer" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/cmake" >/dev/null
"$tmp/cmake/consumer"
libdir=$(ls -d "$tmp"/prefix/lib*/pkgconfig | head -n 1)
cc -std=c11 "$src/tests/packaging/consumer/consumer.c" -o "$tmp/pc" \
  $(PKG_CONFIG_PATH="$libdir" pkg-config --cflags --libs --static tangram)
"$tmp/pc"
echo "packaging: find_package and pkg-config consumers built and ran"
