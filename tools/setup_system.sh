#!/usr/bin/env bash
# System packages, installed only when missing (needs root or passwordless sudo then).
# Default (make test): the tests' real peers: mosquitto (MQTT broker), chromium (browser) with CJK glyphs,
# rsyslog with omrelp (a RELP sender); clickhouse-server (Debian's: the fleet's column store, tests/fleet/ run
# two as shards on free ports; its packaged service is stopped);
# the aarch64 cross compiler + qemu-user that run the NEON kernels' bit-identity tests as Armv8.0/A76/max CPUs.
# --package (make deb / image / boot-test): the cross compiler, mmdebstrap (arm64 sysroot and image),
# qemu-system-aarch64 (the emulated box), the image's partitioning and file-system tools.
# --bench-arm (tools/bench/bench_arm.py): llvm-mca-19 (LLVM 19: the Neoverse N1 scheduling model) and qemu-user.
set -euo pipefail
need=()
command -v aarch64-linux-gnu-g++ >/dev/null 2>&1 || need+=(g++-aarch64-linux-gnu)
if [ "${1:-}" = "--bench-arm" ]; then
    command -v llvm-mca-19 >/dev/null 2>&1 || need+=(llvm-19)
    command -v qemu-aarch64 >/dev/null 2>&1 || need+=(qemu-user)
elif [ "${1:-}" = "--package" ]; then
    command -v mmdebstrap >/dev/null 2>&1 || need+=(mmdebstrap)
    command -v qemu-system-aarch64 >/dev/null 2>&1 || need+=(qemu-system-arm)
    command -v mkfs.ext4 >/dev/null 2>&1 || need+=(e2fsprogs)
    command -v sfdisk >/dev/null 2>&1 || need+=(fdisk)
    command -v cpio >/dev/null 2>&1 || need+=(cpio)
    command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
else
    command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ] || need+=(mosquitto)
    command -v chromium >/dev/null 2>&1 || need+=(chromium)
    command -v rsyslogd >/dev/null 2>&1 || [ -x /usr/sbin/rsyslogd ] || need+=(rsyslog)
    ls /usr/lib/*/rsyslog/omrelp.so >/dev/null 2>&1 || need+=(rsyslog-relp)
    command -v qemu-aarch64 >/dev/null 2>&1 || need+=(qemu-user)
    [ -e /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ] || need+=(fonts-wqy-microhei)
    command -v clickhouse-server >/dev/null 2>&1 || [ -x /usr/sbin/clickhouse-server ] \
        || command -v clickhouse >/dev/null 2>&1 || need+=(clickhouse-server)
fi
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# The tests start their own ClickHouse servers on free ports; the packaged service would only hold 8123/9000.
if [[ " ${need[*]} " == *" clickhouse-server "* ]] && command -v systemctl >/dev/null 2>&1; then
    $SUDO systemctl disable --now clickhouse-server >/dev/null 2>&1 || true
fi
