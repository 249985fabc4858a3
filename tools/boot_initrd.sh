#!/usr/bin/env bash
# A minimal initramfs for qemu-system-aarch64 -M virt: static busybox and the modules for a virtio-blk
# disk on PCI with ext4, from an arm64 tree whose packages are only extracted (no depmod, no
# update-initramfs ran yet: tools/build_image.sh stage 2). Mounts /dev/vda1, runs the cmdline's init=.
# Usage: tools/boot_initrd.sh ROOT KVER OUT
set -euo pipefail
ROOT=$1 KVER=$2 OUT=$(realpath -m "$3")
MODS="virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci virtio_blk crc16 mbcache jbd2 crc32c_generic ext4"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"/{bin,dev,proc,sys,newroot,mods}
cp "$ROOT/bin/busybox" "$tmp/bin/busybox"
for m in $MODS; do
    ko=$(find "$ROOT/lib/modules/$KVER/kernel" -name "$m.ko" | head -1)
    [ -n "$ko" ] || { echo "boot_initrd: no $m.ko for $KVER" >&2; exit 1; }
    cp "$ko" "$tmp/mods/"
done
echo "$MODS" > "$tmp/mods/order"
cat > "$tmp/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in $(cat /mods/order); do insmod /mods/$m.ko; done
i=0; while [ ! -b /dev/vda1 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
init=$(sed -n 's/.*init=\([^ ]*\).*/\1/p' /proc/cmdline)
mount -t ext4 /dev/vda1 /newroot || { echo "initrd: cannot mount /dev/vda1"; sleep 5; poweroff -f; }
umount /proc /sys; umount /dev
exec switch_root /newroot "${init:-/sbin/init}"
INIT
chmod 0755 "$tmp/init"
(cd "$tmp" && find . | cpio -o -H newc --quiet | gzip -1) > "$OUT"
