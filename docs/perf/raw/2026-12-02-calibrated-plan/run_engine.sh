#!/bin/bash
cd ../wt-calib
echo "== $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
nice -n 10 timeout 1500 .venv/bin/python tools/bench/bench_engine.py --threads 2 --models 1.5b --no-llama --stream-tokens 4096 --kernel-plan /tmp/calib/dd/cache 2>&1 | tail -3
echo END $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)
