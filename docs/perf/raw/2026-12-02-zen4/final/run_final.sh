#!/bin/bash
# Under flock $SCRATCH/cpu.lock: calibration, bench_kernels static and calibrated, bench_engine (llama.cpp,
# calibrated and static engines in the same rounds). Worktree ../wt-zen4 at the commit named in the doc.
cd ../wt-zen4
F=/tmp/zen4/final
echo "== $(date -u) start; uptime: $(uptime)"
.venv/bin/linegate doctor --data-dir $F/dd --calibrate --json > $F/doctor.txt 2>&1
cp $F/dd/cache/kernel_plan.json $F/kernel_plan.json
echo "== $(date -u) calibrated"
.venv/bin/python tools/bench/bench_kernels.py --reps 5 --threads 1 > $F/bench_kernels_static.txt 2>&1
.venv/bin/python tools/bench/bench_kernels.py --reps 5 --threads 1 --kernel-plan $F/dd/cache > $F/bench_kernels_calibrated.txt 2>&1
echo "== $(date -u) bench_kernels done; uptime: $(uptime)"
.venv/bin/python tools/bench/bench_engine.py --threads 2 --models 1.5b --stream-tokens 4096 --kernel-plan $F/dd/cache > $F/bench_engine.txt 2>&1
echo "== $(date -u) bench_engine done rc=$?; uptime: $(uptime)"
