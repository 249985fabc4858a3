#!/bin/bash
S=$SCRATCH/snap
cd $REPO
for q in ext17 blind_tune own_tune; do
  .venv/bin/python tools/bench/bench_qa.py --linegate $S/linegate --questions $SCRATCH/q/$q.json --data ../shared/data/loghub --out $SCRATCH/out_T_$q > $SCRATCH/T_$q.log 2>&1
done
touch $SCRATCH/tune.done
