# CMake toolchain for the arm64 package (tools/build_deb.sh): Debian's aarch64 cross compiler on the
# build host. Python's headers for the target (pyconfig.h differs by architecture) come from an arm64
# sysroot the build script extracts; the build passes Python_INCLUDE_DIR and Python_SOABI itself.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
