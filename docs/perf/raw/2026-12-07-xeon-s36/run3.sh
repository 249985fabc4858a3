#!/bin/bash
# usage: SCRATCH=DIR run3.sh SNAPDIR TAG SET...: each question set $SCRATCH/q/SET.json through a snapshot
cd "$(git rev-parse --show-toplevel)"
S=$1; T=$2; shift 2
for set in "$@"; do
  .venv/bin/python tools/bench/bench_qa.py --linegate "$S/linegate" --questions "$SCRATCH/q/$set.json" \
    --data ../shared/data/loghub --out "$SCRATCH/${T}_$set.json" > "$SCRATCH/${T}_$set.log" 2>&1
done
