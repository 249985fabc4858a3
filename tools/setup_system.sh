#!/usr/bin/env bash
# System packages the tests use for real peers: mosquitto (MQTT broker), chromium (browser); and the
# aarch64 cross compiler + qemu-user that run the NEON kernels' bit-identity tests as Armv8.0/A76/max CPUs.
# Installs only what is missing; needs root (or passwordless sudo) when something is missing.
set -euo pipefail
need=()
command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ] || need+=(mosquitto)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v aarch64-linux-gnu-g++ >/dev/null 2>&1 || need+=(g++-aarch64-linux-gnu)
command -v qemu-aarch64 >/dev/null 2>&1 || need+=(qemu-user)
# CJK glyphs for the zh-CN UI in the browser tests and screenshots.
[ -e /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ] || need+=(fonts-wqy-microhei)
if [ ${#need[@]} -eq 0 ]; then exit 0; fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
