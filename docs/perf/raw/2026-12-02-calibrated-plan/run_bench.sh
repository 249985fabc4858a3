#!/bin/bash
# Alternating static / calibrated bench_kernels runs (loaded host: compare within a pair).
cd ../wt-calib
nice -n 10 .venv/bin/linegate doctor --data-dir /tmp/calib/dd --calibrate --json > /tmp/calib/doctor.txt 2>&1
cp /tmp/calib/dd/cache/kernel_plan.json /tmp/calib/plan_final.json
for round in 1 2; do
  for th in 1 2; do
    for plan in static calibrated; do
      arg=""; [ $plan = calibrated ] && arg="--kernel-plan /tmp/calib/dd/cache"
      echo "== round $round threads $th plan $plan $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
      nice -n 10 .venv/bin/python tools/bench/bench_kernels.py --reps 5 --threads $th $arg 2>&1 | tail -7
    done
  done
done
echo END
