#!/bin/bash
# ab.sh SNAP SETS...: each set run without the ring (default, tag N) then with it (env, tag R)
S=$1; shift
cd "${CHECKOUT:?the checkout}"
for q in "$@"; do
  .venv/bin/python tools/bench/bench_qa.py --linegate $S/linegate --questions $QUESTIONS/$q.json --data ../shared/data/loghub --out $RUNS/out_N_$q > $RUNS/N_$q.log 2>&1
  LINEGATE_ENGINE__QUESTIONS_SEE_STREAM=true .venv/bin/python tools/bench/bench_qa.py --linegate $S/linegate --questions $QUESTIONS/$q.json --data ../shared/data/loghub --out $RUNS/out_R_$q > $RUNS/R_$q.log 2>&1
done
touch $RUNS/ab.done
