#!/bin/bash
S=$SCRATCH/snap
cd "$(git rev-parse --show-toplevel)"
for q in ext17 blind_tune own_tune; do
  .venv/bin/python tools/bench/bench_qa.py --linegate $S/linegate --questions $SCRATCH/q/$q.json --data ../shared/data/loghub --out $SCRATCH/out_T_$q > $SCRATCH/T_$q.log 2>&1
done
touch $SCRATCH/tune.done
for q in ext_held own_held factory_held blind_held; do
  .venv/bin/python tools/bench/bench_qa.py --linegate $S/linegate --questions $SCRATCH/q/$q.json --data ../shared/data/loghub --out $SCRATCH/out_H_$q > $SCRATCH/H_$q.log 2>&1
done
touch $SCRATCH/held.done
