# Cross-compiling for 64-bit Arm Linux on a Debian/Ubuntu x86-64 host:
#   apt-get install gcc-aarch64-linux-gnu qemu-user-static, the arm64 -dev
#   packages (dpkg --add-architecture arm64; scripts/deps_arm64.sh does it all)
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake [-DQTTS_CROSS_CLANG=ON]
# ctest then runs the test programs under qemu-aarch64-static (QEMU_CPU
# picks the emulated core: max has dotprod/bf16/i8mm, cortex-a53 none).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
# -DQTTS_CROSS_CLANG=ON: clang for the target instead of the GNU cross gcc
# (it uses the same cross libgcc and arm64 libraries)
if(QTTS_CROSS_CLANG)
  set(CMAKE_C_COMPILER clang)
  set(CMAKE_C_COMPILER_TARGET aarch64-linux-gnu)
else()
  set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
endif()
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
# the arm64 multiarch .pc files, never the host's
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")
find_program(QTTS_QEMU_AARCH64 qemu-aarch64-static)
if(QTTS_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${QTTS_QEMU_AARCH64})
endif()
