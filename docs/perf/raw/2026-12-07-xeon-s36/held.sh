#!/bin/bash
# usage: SCRATCH=DIR held.sh SNAPDIR TAG: the four held parts, one after another, through a snapshot
cd "$(git rev-parse --show-toplevel)"
for set in ext_held own_held factory_held blind_held; do
  .venv/bin/python tools/bench/bench_qa.py --linegate $1/linegate --questions $SCRATCH/q/$set.json --data ../shared/data/loghub --out $SCRATCH/$2_$set.json > $SCRATCH/$2_$set.log 2>&1
done
