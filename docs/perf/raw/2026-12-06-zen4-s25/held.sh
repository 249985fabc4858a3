#!/bin/bash
S=$1
cd "${CHECKOUT:?the checkout}"
for q in ext_held own_held factory_held blind_held; do
  .venv/bin/python tools/bench/bench_qa.py --linegate $S/linegate --questions $QUESTIONS/$q.json --data ../shared/data/loghub --out $RUNS/out_H_$q > $RUNS/H_$q.log 2>&1
done
touch $RUNS/held.done
