#!/bin/bash
# The session's last QA runs, after the fresh-clone CI run ended: the own tune set's first 22 questions
# (own22.json: those the base run had reached before it was stopped) at the new tree, then the calendar
# set's held half at both trees. SCRATCH: the scratch folder (snapshots, question files, results).
while ! grep -q "^rc=" "$SCRATCH/ci_clone.log"; do sleep 5; done
cd "$(git rev-parse --show-toplevel)"
bash docs/perf/raw/2026-12-07-xeon-s36/run3.sh "$SCRATCH/snap_new" new own22
for tag in new base; do bash docs/perf/raw/2026-12-07-xeon-s36/run3.sh "$SCRATCH/snap_$tag" $tag cal_held; done
