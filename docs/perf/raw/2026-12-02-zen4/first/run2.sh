#!/bin/bash
cd ../wt-zen4
echo "== $(date -u) uptime: $(uptime)"
.venv/bin/python tools/bench/bench_engine.py --threads 2 --models 1.5b --stream-tokens 4096 --kernel-plan /tmp/zen4/dd/cache > /tmp/zen4/be_calib1.txt 2>&1
echo "== $(date -u) bench_engine done rc=$? uptime: $(uptime)"
