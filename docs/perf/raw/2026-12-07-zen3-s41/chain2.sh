#!/bin/bash
# SCRATCH=DIR chain2.sh: chain.sh's held runs, reordered once h0's external held part had started
# (the reasoning set's final tree first)
cd "$(git rev-parse --show-toplevel)"
R=$SCRATCH/run3.sh
while pgrep -f "bench_qa.py" > /dev/null; do sleep 5; done
echo "done h0 ext_held $(date +%T)" >> $SCRATCH/chain10.log
for step in "n3 ext_held" "n3 reason_held" "h0 reason_held" "n3 lr40"; do
  set -- $step
  echo "start $1 $2 $(date +%T)" >> $SCRATCH/chain10.log
  bash $R $SCRATCH/snap_$1 $1 $2; echo "done $1 $2 $(date +%T)" >> $SCRATCH/chain10.log
done
