#!/bin/bash
# calibration, bench_kernels (static, calibrated), bench_engine (llama.cpp, ours calibrated and static) -> $1
F=$1; cd "$(git rev-parse --show-toplevel)"; mkdir -p $F
echo "== $(date -u) start $(git rev-parse --short HEAD); uptime: $(uptime)" | tee $F/log.txt
rm -rf $F/dd; .venv/bin/linegate doctor --data-dir $F/dd --calibrate --json > $F/doctor.txt 2>&1
cp $F/dd/cache/kernel_plan.json $F/kernel_plan.json
if [ -z "$NO_KERNELS" ]; then
.venv/bin/python tools/bench/bench_kernels.py --reps 5 --threads 1 > $F/bench_kernels_static.txt 2>&1
.venv/bin/python tools/bench/bench_kernels.py --reps 5 --threads 1 --kernel-plan $F/dd/cache > $F/bench_kernels_calibrated.txt 2>&1
fi
echo "== $(date -u) kernels done; uptime: $(uptime)" | tee -a $F/log.txt
.venv/bin/python tools/bench/bench_engine.py --threads 2 --models 1.5b --stream-tokens 4096 --kernel-plan $F/dd/cache > $F/bench_engine.txt 2>&1
echo "== $(date -u) bench_engine done rc=$?; uptime: $(uptime)" | tee -a $F/log.txt
