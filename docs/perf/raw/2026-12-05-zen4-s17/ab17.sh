#!/bin/bash
# A/B: activation precision q8 vs q8x2 on the tune sets, both from the same snapshot (git archive dfb25d1
# with the checkout's venv and native module, as in the earlier write-ups). Run from the checkout:
#   SNAPSHOT=<snapshot dir> SCRATCH=<question files and outputs> ab17.sh q8   (and q8x2, at the same time)
P=$1
for set in own_tune_new ext17_tune fac_tune_new; do
  .venv/bin/python tools/bench/bench_qa.py --linegate "$SNAPSHOT"/linegate --act-precision $P --questions "$SCRATCH"/$set.json --data ../shared/data/loghub --out "$SCRATCH"/ab_${set}_$P > "$SCRATCH"/ab_${set}_$P.log 2>&1
done
