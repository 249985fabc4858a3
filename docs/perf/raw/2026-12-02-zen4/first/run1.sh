#!/bin/bash
# Under the CPU lock: the variant probe, then bench_kernels static / doctor --calibrate / bench_kernels calibrated.
cd ../wt-zen4
echo "== $(date -u) uptime: $(uptime)"
.venv/bin/python /tmp/zen4/probe.py 5 > /tmp/zen4/probe1.txt 2>&1
echo "== $(date -u) probe done"
.venv/bin/python tools/bench/bench_kernels.py --reps 5 --threads 1 > /tmp/zen4/bk_static1.txt 2>&1
echo "== $(date -u) bench_kernels static done"
.venv/bin/linegate doctor --data-dir /tmp/zen4/dd --calibrate --json > /tmp/zen4/doctor1.txt 2>&1
echo "== $(date -u) calibrate done"
.venv/bin/python tools/bench/bench_kernels.py --reps 5 --threads 1 --kernel-plan /tmp/zen4/dd/cache > /tmp/zen4/bk_calib1.txt 2>&1
echo "== $(date -u) bench_kernels calibrated done; uptime: $(uptime)"
