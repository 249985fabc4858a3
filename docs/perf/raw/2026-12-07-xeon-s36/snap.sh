#!/bin/bash
# usage: SCRATCH=DIR snap.sh COMMIT DIR: the commit's tree with the checkout's native module and a
# `linegate` wrapper that drops the editable finder (the snapshot's code runs, not the checkout's)
set -e
C=$1; D=$2; R=$(git rev-parse --show-toplevel)
rm -rf "$D"; mkdir -p "$D"
cd "$R" && git archive "$C" | tar -x -C "$D"
cp "$R"/.venv/lib/python3.11/site-packages/gateway/_native*.so "$D/gateway/" 2>/dev/null || cp "$R"/gateway/_native*.so "$D/gateway/"
cat > "$D/linegate" <<PY
#!$R/.venv/bin/python
import sys
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f) and "skbc" not in repr(f)]
sys.path.insert(0, "$D")
from gateway.cli import main
sys.exit(main())
PY
chmod +x "$D/linegate"
