# Cross build for 64-bit ARM Linux with Debian's cross compiler
# (g++-aarch64-linux-gnu): scripts/release.sh uses it for the aarch64 pmon.
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
# The target's libraries come from Debian's cross root (/usr/aarch64-linux-gnu).
# GoogleTest is built from Debian's sources (/usr/src/googletest). Programs
# built here run under qemu-aarch64-static.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static -L /usr/aarch64-linux-gnu)
# Debian's cross compiler searches /usr/include after its own headers: the
# header-only libraries and the systemd headers come from there. The host's
# pkg-config answers for libsystemd: only its headers are used (pmon dlopens
# the library), and they are the same on every architecture. RE2's arm64
# archive is Debian's multiarch package (libre2-dev:arm64, in
# /usr/lib/aarch64-linux-gnu): its headers are the same too.
set(PMON_RE2_ARCHIVE /usr/lib/aarch64-linux-gnu/libre2.a CACHE FILEPATH "RE2's archive for the target")
# pmon-sandboxd's libraries (gRPC, protobuf, cpp-httplib) are Debian's
# multiarch development packages too (libgrpc++-dev:arm64 ...): the target's
# pkg-config files are here; without them pmon-sandboxd is not built.
set(PMON_TARGET_PKG_CONFIG_DIR /usr/lib/aarch64-linux-gnu/pkgconfig CACHE PATH
    "The target's pkg-config files, for pmon-sandboxd's libraries")
