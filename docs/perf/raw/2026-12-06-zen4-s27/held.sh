#!/bin/bash
S=$SCRATCH/snap
cd $REPO
for q in ext_held own_held factory_held blind_held; do
  .venv/bin/python tools/bench/bench_qa.py --linegate $S/linegate --questions $SCRATCH/q/$q.json --data ../shared/data/loghub --out $SCRATCH/out_H_$q > $SCRATCH/H_$q.log 2>&1
done
touch $SCRATCH/held.done
