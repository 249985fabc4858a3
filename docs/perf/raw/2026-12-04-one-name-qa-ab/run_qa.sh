#!/bin/bash
# QA A/B of issue 44 in one run: per system, the two trees back to back, each side's own bench_qa.py (cwd =
# its worktree) serving its own tree through its launcher (launch.sh). The order alternates between systems;
# pass 2 ran the mirror order (ORDER below).
#   AB:   a folder holding old/ and new/ (worktrees), venv-old/ venv-new/, launch-old launch-new, q/<System>.json
#         (the question file split by its "system" field)
#   DATA: the Loghub folder (<System>/<System>_2k.log)
# pass 1: OUT=$AB/out  (default ORDER);  pass 2: OUT=$AB/out2 ORDER="Apache:new,old Hadoop:old,new Linux:new,old OpenSSH:old,new Spark:new,old"
set -u
: "${AB:?}" "${DATA:?}"
OUT=${OUT:-$AB/out}; mkdir -p "$OUT"
touch "$AB/QA_RUNNING"; trap 'rm -f "$AB/QA_RUNNING"' EXIT     # other sessions keep off the cores meanwhile
order=${ORDER:-"Apache:old,new Hadoop:new,old Linux:old,new OpenSSH:new,old Spark:old,new"}
for item in $order; do
  sys=${item%%:*}
  for side in $(echo ${item#*:} | tr , ' '); do
    cd "$AB/$side"
    s=$(date +%s)
    echo "start $sys $side $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/progress.txt"
    "$AB/venv-$side/bin/python" tools/bench/bench_qa.py --linegate "$AB/launch-$side" \
        --questions "$AB/q/$sys.json" --data "$DATA" --out "$OUT/$side-$sys.json" > "$OUT/$side-$sys.log" 2>&1
    echo "end   $sys $side rc=$? $(( $(date +%s) - s ))s load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/progress.txt"
  done
done
