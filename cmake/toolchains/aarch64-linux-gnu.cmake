# Cross-compile for 64-bit Arm Linux with Debian's cross compiler (gcc-aarch64-linux-gnu),
# and run the tests under qemu-user (qemu-aarch64) with Debian's arm64 libraries:
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
#         -DTANGRAM_OPENCL=OFF -DTANGRAM_VULKAN=OFF
#   cmake --build build-arm64 && ctest --test-dir build-arm64
# Libraries of the target (cmocka for the tests) come from multiarch packages
# (libcmocka-dev:arm64); scripts/setup.sh --arm64 installs all of it.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(TANGRAM_TARGET_TRIPLE aarch64-linux-gnu)

set(CMAKE_C_COMPILER ${TANGRAM_TARGET_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${TANGRAM_TARGET_TRIPLE}-g++)

# Target libraries and headers: the cross toolchain's sysroot, then Debian's multiarch paths.
set(CMAKE_FIND_ROOT_PATH /usr/${TANGRAM_TARGET_TRIPLE})
set(CMAKE_LIBRARY_ARCHITECTURE ${TANGRAM_TARGET_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# pkg-config must see the target's .pc files, not the build machine's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${TANGRAM_TARGET_TRIPLE}/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

# ctest (and add_test) run target programs through the emulator.
find_program(TANGRAM_QEMU qemu-aarch64 qemu-aarch64-static)
if(TANGRAM_QEMU)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${TANGRAM_QEMU} -L /usr/${TANGRAM_TARGET_TRIPLE})
endif()
