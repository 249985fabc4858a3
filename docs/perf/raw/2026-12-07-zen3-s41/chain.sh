#!/bin/bash
# SCRATCH=DIR chain.sh (from the checkout): the QA runs of this session, one after another;
# snap_<tag> are snap.sh snapshots (raw/2026-12-07-xeon-s36), h0 = 415b437, n3 = bcc9aef
cd "$(git rev-parse --show-toplevel)"
R=$SCRATCH/run3.sh
while pgrep -f "bench_qa.py" > /dev/null; do sleep 5; done
for step in "n3 reason_tune" "n3 cal_tune" "n3 blind3_tune" "h0 ext_held" "n3 ext_held" "h0 reason_held" "n3 reason_held" "n3 lr40"; do
  set -- $step
  echo "start $1 $2 $(date +%T)" >> $SCRATCH/chain10.log
  bash $R $SCRATCH/snap_$1 $1 $2; echo "done $1 $2 $(date +%T)" >> $SCRATCH/chain10.log
done
