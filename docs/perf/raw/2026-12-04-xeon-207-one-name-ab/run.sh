#!/bin/bash
# A/B of bench_engine: the checkout (new) and a worktree of 327c45a (old, ../wt-ab44 with its own venv
# $SCRATCH/ab44venv), alternating new, old, ROUNDS times; each run's output into $OUT/<side>-<i>.log
ARGS="--models 0.5b --no-llama --quick --threads 2 --stream-tokens 4096"
HERE=$(pwd)
for i in $(seq 1 ${ROUNDS:-2}); do
  for side in new old; do
    if [ $side = new ]; then cd "$HERE" && PY=.venv/bin/python; else cd "$HERE/../wt-ab44" && PY=$SCRATCH/ab44venv/bin/python; fi
    s=$(date +%s)
    nice -n 10 $PY tools/bench/bench_engine.py $ARGS > "$OUT/$side-$i.log" 2>&1
    echo "$side $i rc=$? $(( $(date +%s) - s ))s" >> "$OUT/progress"
  done
done
