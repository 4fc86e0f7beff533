#!/usr/bin/env bash
# Install the build into a temporary prefix, then build the consumer (tests/packaging/consumer)
# against it as an engine would, and run each build:
#   CMake find_package: tangram::tangram (shared) and tangram::tangram_static
#   pkg-config: `--cflags --libs tangram` (shared), `--cflags --libs tangram-static`, and
#   `--static --cflags --libs tangram` with `cc -static` (a fully static program)
# Each shared build must need libtangram.so.MAJOR, each static one must not; libtangram.so must
# export tg_ names alone.
set -euo pipefail
src=$1 build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(dirname "$(ls -d "$tmp"/prefix/lib*/pkgconfig | head -n 1)")
export PKG_CONFIG_PATH="$libdir/pkgconfig"
consumer="$src/tests/packaging/consumer"

fail() { echo "packaging: $*" >&2; exit 1; }
needs_shared() { readelf -d "$1" | grep -q 'NEEDED.*libtangram\.so\.' || fail "$1 does not link libtangram.so"; }
needs_static() { if readelf -d "$1" | grep -q 'NEEDED.*libtangram'; then fail "$1 links libtangram.so"; fi; }

# The exported symbols of the installed shared library: tg_ names only.
so=$(ls "$libdir"/libtangram.so.*.*.* | head -n 1)
readelf -d "$so" | grep -q 'SONAME.*libtangram\.so\.[0-9]' || fail "$so has no versioned SONAME"
nm -D --defined-only "$so" | awk '{print $3}' > "$tmp/exported"
others=$(grep -v '^tg_[a-zA-Z0-9]' "$tmp/exported" || true)
[ -z "$others" ] || fail "libtangram.so exports names outside the tg_ API: $(echo $others | head -c 400)"
echo "packaging: $(basename "$so") exports $(wc -l < "$tmp/exported") symbols, all tg_"

for target in tangram tangram_static; do
  cmake -S "$consumer" -B "$tmp/cmake-$target" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
    -DTANGRAM_TARGET="tangram::$target" >/dev/null
  cmake --build "$tmp/cmake-$target" >/dev/null
  if [ "$target" = tangram ]; then needs_shared "$tmp/cmake-$target/consumer"; else needs_static "$tmp/cmake-$target/consumer"; fi
  echo "packaging: find_package(tangram) + tangram::$target:"
  "$tmp/cmake-$target/consumer"
done

cc -std=c11 -Wall -Wextra -Wpedantic -Werror "$consumer/consumer.c" -o "$tmp/pc-shared" \
  $(pkg-config --cflags --libs tangram)
needs_shared "$tmp/pc-shared"
echo "packaging: pkg-config --cflags --libs tangram:"
LD_LIBRARY_PATH="$libdir" "$tmp/pc-shared"

cc -std=c11 -Wall -Wextra -Wpedantic -Werror "$consumer/consumer.c" -o "$tmp/pc-static" \
  $(pkg-config --cflags --libs tangram-static)
needs_static "$tmp/pc-static"
echo "packaging: pkg-config --cflags --libs tangram-static:"
"$tmp/pc-static"

# A fully static program: glibc warns that dlopen in a static program still needs the shared
# C library at run time (the drivers are shared libraries); the host backend needs neither.
cc -std=c11 -static "$consumer/consumer.c" -o "$tmp/pc-full-static" \
  $(pkg-config --static --cflags --libs tangram) 2>"$tmp/static-link.log" || {
  cat "$tmp/static-link.log" >&2; fail "cc -static with pkg-config --static failed"; }
if readelf -d "$tmp/pc-full-static" 2>/dev/null | grep -q NEEDED; then fail "cc -static made a dynamic program"; fi
echo "packaging: cc -static, pkg-config --static --cflags --libs tangram:"
"$tmp/pc-full-static"
echo "packaging: 5 consumers (CMake shared and static, pkg-config shared, static and fully static) built and ran"
