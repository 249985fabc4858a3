#!/usr/bin/env bash
# `make image`: a raw arm64 disk image of Debian 12 with the linegate .deb installed and enabled
# (docs/flash-rk3588.md). Two stages, because this x86 host runs no arm64 code outside an explicit
# emulator (no binfmt_misc handler; see the doc):
#   1. on the host: mmdebstrap --variant=extract unpacks the arm64 packages (keeping the .debs), the
#      linegate .deb, models and settings go in; mkfs.ext4 -d writes the tree into partition 1 (no mounts);
#   2. in qemu-system-aarch64: the image boots once with init=linegate-stage2, which installs the .debs
#      properly (maintainer scripts run on arm64), then linegate's, writes the first API key, powers off.
# Usage: tools/build_image.sh [--out IMG] [--models "NAME ..."] [--config TOML] [--dropin CONF] [--size 6G]
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
OUT=build/image/linegate-arm64.img
MODELS="qwen2.5-coder-1.5b-instruct qwen2.5-coder-0.5b-instruct"
CONFIG=systemd/linegate.toml.example
DROPIN=""
SIZE=6G
while [ $# -gt 0 ]; do
    case "$1" in
        --out) OUT=$2; shift 2 ;;
        --models) MODELS=$2; shift 2 ;;
        --config) CONFIG=$2; shift 2 ;;
        --dropin) DROPIN=$2; shift 2 ;;   # a linegate.service.d drop-in (e.g. the emulated box's CPUAffinity)
        --size) SIZE=$2; shift 2 ;;
        *) echo "build_image: unknown argument $1" >&2; exit 2 ;;
    esac
done
MODEL_DIR=${LINEGATE_MODEL_DIR:-$HOME/.cache/linegate/models}
DEB=$(ls build/deb/linegate_*_arm64.deb 2>/dev/null | tail -1)
[ -n "$DEB" ] || { echo "build_image: no build/deb/linegate_*_arm64.deb: run make deb" >&2; exit 1; }
for m in $MODELS; do
    [ -f "$MODEL_DIR/$m.gguf" ] || { echo "build_image: $MODEL_DIR/$m.gguf missing: linegate models pull $m" >&2; exit 1; }
done
WORK=$(dirname "$OUT")/$(basename "$OUT" .img).work
ROOT=$WORK/root
PART_OFFSET=$((16 * 1024 * 1024))   # partition 1 at 16 MiB: RK3588 U-Boot lives below (sectors 64-16383+)
# The system: the essential set, systemd, Python with venv, the kernel and its initramfs tools, networking.
PKGS="base-files base-passwd bash bsdutils coreutils dash debconf debianutils diffutils dpkg findutils grep gzip
 hostname init-system-helpers libc-bin login mawk ncurses-base ncurses-bin perl-base sed sysvinit-utils tar
 util-linux mount passwd adduser apt e2fsprogs procps kmod udev systemd systemd-sysv dbus iproute2 netbase
 python3 python3-venv linux-image-arm64 initramfs-tools busybox-static ca-certificates"

# ---- stage 1: the tree, on the host ---------------------------------------------------------------
rm -rf "$WORK" && mkdir -p "$WORK"
mmdebstrap --variant=extract --architectures=arm64 --include="$(echo $PKGS | tr ' ' ',')" \
    --skip=cleanup/apt/cache --skip=cleanup/apt/lists bookworm "$ROOT" http://deb.debian.org/debian
install -D -m 0644 "$DEB" "$ROOT/var/cache/linegate/$(basename "$DEB")"
install -d "$ROOT/var/lib/linegate/models"
for m in $MODELS; do cp "$MODEL_DIR/$m.gguf" "$MODEL_DIR/$m.gguf.verified" "$ROOT/var/lib/linegate/models/"; done
install -D -m 0644 "$CONFIG" "$ROOT/var/cache/linegate/linegate.toml"
if [ -n "$DROPIN" ]; then install -D -m 0644 "$DROPIN" "$ROOT/etc/systemd/system/linegate.service.d/10-image.conf"; fi
# Stage 2 makes the initramfs once (the kernel's postinst), not again from the initramfs-tools trigger:
# under TCG each generation takes ~15 min. linegate-stage2 turns updates back on.
sed -i 's/^update_initramfs=.*/update_initramfs=no/' "$ROOT/etc/initramfs-tools/update-initramfs.conf"
echo linegate > "$ROOT/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\tlinegate\n' > "$ROOT/etc/hosts"
echo 'LABEL=linegate-root / ext4 defaults,errors=remount-ro 0 1' > "$ROOT/etc/fstab"
install -D -m 0644 /dev/stdin "$ROOT/etc/systemd/network/80-dhcp.network" <<'EOF'
[Match]
Name=en* eth*
[Network]
DHCP=yes
EOF
install -D -m 0755 /dev/stdin "$ROOT/usr/local/sbin/linegate-stage2" <<'EOF'
#!/bin/bash
# Stage 2 of tools/build_image.sh, run once as PID 1 in the emulated arm64 machine: install the extracted
# packages for real (maintainer scripts), then linegate's .deb; power off. Progress on the console.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C DEBIAN_FRONTEND=noninteractive DEBCONF_NONINTERACTIVE_SEEN=true
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev; mount -o remount,rw /
debs=/var/cache/apt/archives
echo "stage2: $(ls $debs/*.deb | wc -l) packages"
for p in base-passwd base-files; do dpkg --force-depends --install $debs/${p}_*.deb >/dev/null; done
dpkg --force-depends --force-confold --install $debs/*.deb >/var/log/stage2-dpkg.log 2>&1
dpkg --configure -a >>/var/log/stage2-dpkg.log 2>&1; dpkg --configure -a >>/var/log/stage2-dpkg.log 2>&1
bad=$(dpkg -l | awk 'NR > 5 && $1 != "ii"' | wc -l)
echo "stage2: system packages installed ($bad not fully installed)"
sed -i 's/^update_initramfs=.*/update_initramfs=yes/' /etc/initramfs-tools/update-initramfs.conf
rm -f $debs/*.deb
dpkg --install /var/cache/linegate/linegate_*_arm64.deb && echo "stage2: linegate installed"
install -m 0644 /var/cache/linegate/linegate.toml /etc/linegate/linegate.toml
chown -R linegate:linegate /var/lib/linegate
systemctl enable systemd-networkd.service linegate.service
passwd -l root >/dev/null
# The first API key, made now so an installer (or the boot test) can read it off the console once.
key=$(runuser -u linegate -- /usr/bin/linegate keys create --data-dir /var/lib/linegate 2>&1 | grep -o 'lg_[A-Za-z0-9_-]*' | head -1)
echo "stage2: first key ${key:-MISSING}"
echo "stage2: done"
sync; mount -o remount,ro /; echo o > /proc/sysrq-trigger
EOF

# ---- the disk: one ext4 partition holding the tree ------------------------------------------------
rm -f "$OUT"
truncate -s "$SIZE" "$OUT"
echo "start=$((PART_OFFSET / 512)), type=L, name=linegate-root" | sfdisk -q --label gpt "$OUT"
PART_BYTES=$(( $(sfdisk -l -o Sectors "$OUT" | tail -1) * 512 ))
mkfs.ext4 -q -F -L linegate-root -d "$ROOT" -E offset=$PART_OFFSET "$OUT" "$((PART_BYTES / 1024))k"

# ---- stage 2: the packages installed on arm64 (emulated) --------------------------------------------
KVER=$(ls "$ROOT"/lib/modules | head -1)
"$REPO/tools/boot_initrd.sh" "$ROOT" "$KVER" "$WORK/initrd.stage2"
timeout 7200 qemu-system-aarch64 -M virt -cpu cortex-a76 -smp 2 -m 2048 -nographic -no-reboot -nic none \
    -kernel "$ROOT/boot/vmlinuz-$KVER" -initrd "$WORK/initrd.stage2" \
    -append "console=ttyAMA0 root=/dev/vda1 rw init=/usr/local/sbin/linegate-stage2 panic=-1" \
    -drive file="$OUT",format=raw,if=virtio,cache=unsafe | tee "$WORK/stage2.log"
grep -q "stage2: done" "$WORK/stage2.log" || { echo "build_image: stage 2 did not finish (see $WORK/stage2.log)" >&2; exit 1; }
grep -q "stage2: linegate installed" "$WORK/stage2.log" || { echo "build_image: linegate did not install" >&2; exit 1; }
grep -o 'stage2: first key lg_[A-Za-z0-9_-]*' "$WORK/stage2.log" | cut -d' ' -f4 > "$WORK/first-key"
# the kernel and the initramfs stage 2 made, for booting the image in qemu (tools/boot_test.sh)
for f in "vmlinuz-$KVER" "initrd.img-$KVER"; do
    debugfs -R "dump /boot/$f $WORK/$f" "$OUT?offset=$PART_OFFSET" 2>/dev/null
done
echo "build_image: $OUT ($SIZE, kernel $KVER)"
