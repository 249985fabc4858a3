#!/usr/bin/env bash
# `make boot-test`: the arm64 image booted in qemu-system-aarch64 (-M virt -cpu cortex-a76), checked from the
# host (tools/boot_test.py): /health, a syslog line, a chat answer, and a power cut mid-stream. Builds its own
# image (SmolLM2-135M, the emulated box's settings: packaging/boot-test/) from build/deb. Slow: TCG emulation.
# Ends with one JSON line; the log goes to docs/perf/raw/<date>-boot-test/.
set -euo pipefail
cd "$(dirname "$0")/.."
IMG=build/image/boot-test.img
WORK=build/image/boot-test.work
LOG=docs/perf/raw/$(date -u +%Y-%m-%d)-boot-test/boot_test.log
if [ ! -f "$WORK/first-key" ] || [ "$IMG" -ot "$(ls build/deb/linegate_*_arm64.deb | tail -1)" ]; then
    tools/build_image.sh --out "$IMG" --models smollm2-135m-instruct --size 4G \
        --config packaging/boot-test/linegate.toml --dropin packaging/boot-test/emulated.conf
fi
mkdir -p "$(dirname "$LOG")"
cp "$WORK/stage2.log" "$(dirname "$LOG")/stage2.log"
python3 tools/boot_test.py --image "$IMG" --work "$WORK" --log "$LOG"
