#!/bin/bash
# A/B of bench_engine: the checkout (new: .venv) and a worktree of 327c45a (old: $WT with its own venv
# $OLDPY, the worktree's gateway first), interleaved new, old, new, old; then bench_ab.py over the two
# builds (rounds alternating inside one run). Each run's output into $OUT/<side>-<i>.log.
ARGS="--models 0.5b --no-llama --quick --threads 2 --stream-tokens 4096"
HERE=$(pwd)
for i in 1 2; do
  for side in new old; do
    if [ $side = new ]; then cd "$HERE" && PY=.venv/bin/python; else cd "$WT" && PY=$OLDPY; fi
    s=$(date +%s)
    nice -n 10 $PY tools/bench/bench_engine.py $ARGS > "$OUT/$side-$i.log" 2>&1
    echo "$side $i rc=$? $(( $(date +%s) - s ))s load $(cut -d' ' -f1 /proc/loadavg)" >> "$OUT/progress"
  done
done
cd "$HERE"
s=$(date +%s)
nice -n 10 .venv/bin/python tools/bench/bench_ab.py --a $OLDPY --b .venv/bin/python \
  --model qwen2.5-coder-0.5b-instruct --rounds 6 --threads 2 > "$OUT/bench_ab.log" 2>&1
echo "bench_ab rc=$? $(( $(date +%s) - s ))s" >> "$OUT/progress"
