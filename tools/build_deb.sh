#!/usr/bin/env bash
# `make deb`: build/deb/linegate_<version>_arm64.deb for Debian 12 (bookworm) arm64, e.g. an RK3588 board.
# Built on this x86 host with Debian's aarch64 cross compiler (why not an emulated arm64 root: see
# docs/flash-rk3588.md). Offline install: the wheel plus a wheelhouse of every dependency for cp311 aarch64.
# Needs g++-aarch64-linux-gnu, mmdebstrap (tools/setup_system.sh --package) and the dev venv (make venv).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PY=$REPO/.venv/bin/python
OUT=${OUT:-$REPO/build/deb}
SYSROOT=$REPO/build/sysroot-arm64
SOABI=cpython-311-aarch64-linux-gnu
PLATFORMS=(linux_aarch64 manylinux2014_aarch64 manylinux_2_17_aarch64 manylinux_2_28_aarch64 manylinux_2_34_aarch64 manylinux_2_36_aarch64)
VERSION=$($PY -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')

for tool in aarch64-linux-gnu-g++ mmdebstrap dpkg-deb systemd-analyze; do
    command -v "$tool" >/dev/null || { echo "build_deb: $tool missing: run tools/setup_system.sh --package" >&2; exit 1; }
done

# 1. Python's aarch64 headers (pyconfig.h differs by architecture), extracted from Debian's arm64 package once.
if [ ! -f "$SYSROOT/usr/include/aarch64-linux-gnu/python3.11/pyconfig.h" ]; then
    rm -rf "$SYSROOT"
    mmdebstrap --variant=extract --architectures=arm64 --include=libpython3.11-dev bookworm "$SYSROOT" \
        http://deb.debian.org/debian
fi
mkdir -p "$SYSROOT/pyconfig/aarch64-linux-gnu"
ln -sfn "$SYSROOT/usr/include/aarch64-linux-gnu/python3.11" "$SYSROOT/pyconfig/aarch64-linux-gnu/python3.11"

# 2. The linegate wheel, cross-compiled: baseline Armv8-A, NEON variants chosen from HWCAP at run time.
rm -rf "$OUT" && mkdir -p "$OUT/wheels"
CMAKE_TOOLCHAIN_FILE=$REPO/packaging/aarch64-linux-gnu.cmake _PYTHON_HOST_PLATFORM=linux-aarch64 \
SETUPTOOLS_EXT_SUFFIX=.$SOABI.so SKBUILD_BUILD_DIR=build/cross-aarch64 \
SKBUILD_CMAKE_DEFINE="Python_INCLUDE_DIR=$SYSROOT/usr/include/python3.11;LINEGATE_CUDA=OFF;LINEGATE_NATIVE_ARCH=OFF;CMAKE_CXX_FLAGS=-isystem $SYSROOT/pyconfig" \
    "$PY" -m pip wheel -q --no-deps --no-build-isolation -w "$OUT/wheels" .
WHEEL=$(ls "$OUT"/wheels/linegate-"$VERSION"-cp311-cp311-linux_aarch64.whl)

# 3. The wheelhouse: every dependency at the versions the dev venv tests, as cp311 aarch64 wheels; drain3
#    publishes only an sdist (pure Python), so its wheel is built here.
"$PY" -m pip freeze --exclude-editable | grep -v " @ " > "$OUT/constraints.txt"
"$PY" -m pip wheel -q --no-deps -c "$OUT/constraints.txt" -w "$OUT/wheels" drain3
"$PY" -m pip download -q --only-binary=:all: --find-links "$OUT/wheels" -c "$OUT/constraints.txt" \
    "${PLATFORMS[@]/#/--platform=}" --python-version 3.11 --implementation cp --abi cp311 --abi abi3 --abi none \
    -d "$OUT/wheels" "$WHEEL"

# 4. The package tree.
ROOT=$OUT/root
install -D -m 0644 -t "$ROOT/opt/linegate/wheels" "$OUT"/wheels/*.whl
install -D -m 0755 packaging/deb/linegate.sh "$ROOT/usr/bin/linegate"
install -D -m 0644 systemd/linegate.service "$ROOT/lib/systemd/system/linegate.service"
install -D -m 0644 systemd/linegate.toml.example "$ROOT/etc/linegate/linegate.toml"
install -D -m 0644 -t "$ROOT/usr/share/doc/linegate" README.md docs/flash-rk3588.md
install -d "$ROOT/DEBIAN"
for f in postinst prerm postrm; do sed "s/@VERSION@/$VERSION/g" "packaging/deb/$f" > "$ROOT/DEBIAN/$f"; chmod 0755 "$ROOT/DEBIAN/$f"; done
echo /etc/linegate/linegate.toml > "$ROOT/DEBIAN/conffiles"
SIZE_KB=$(du -sk --exclude=DEBIAN "$ROOT" | cut -f1)
sed -e "s/@VERSION@/$VERSION/" -e "s/@SIZE_KB@/$SIZE_KB/" packaging/deb/control.in > "$ROOT/DEBIAN/control"
DEB=$OUT/linegate_${VERSION}_arm64.deb
dpkg-deb --root-owner-group -Zxz --build "$ROOT" "$DEB" >/dev/null

# 5. Checks: the module inside is aarch64 ELF; the unit verifies against the package's own files.
unzip -p "$WHEEL" "gateway/_native.$SOABI.so" > "$OUT/_native.so"
file -b "$OUT/_native.so" | grep -q "ARM aarch64" || { echo "build_deb: _native is not aarch64" >&2; exit 1; }
# systemd-analyze verify in a root of the package's files over this host's units (the targets it names):
# it checks the directives and that ExecStart's /usr/bin/linegate is in the package.
VERIFY=$OUT/verify-root
mkdir -p "$VERIFY/lib/systemd" && cp -a /lib/systemd/system "$VERIFY/lib/systemd/" && cp -a "$ROOT/." "$VERIFY/"
SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --root="$VERIFY" /lib/systemd/system/linegate.service
rm -rf "$VERIFY"
echo "build_deb: $DEB ($(du -h "$DEB" | cut -f1), $(ls "$OUT"/wheels | wc -l) wheels)"
