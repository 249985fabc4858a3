"""Serve a snapshot, ingest one system's 2k lines, wait settled, copy the store to $SCRATCH/db/<system>/."""
import os, sys, shutil, json, time
sys.path.insert(0, "tools/bench"); sys.path.insert(0, ".")
from pathlib import Path
import httpx
from tools.bench import bench_qa as b, qa_questions as qq
from tools.bench.harness import Served
lg, system = sys.argv[1], sys.argv[2]
out = Path(os.environ["SCRATCH"]) / "db" / system.replace("/", "_")
shutil.rmtree(out, ignore_errors=True)
work = Path(os.environ["SCRATCH"]) / ("mk_" + system.replace("/", "_")); shutil.rmtree(work, ignore_errors=True)
with Served(work, b.DEMO_OFF + "[alerts]\nexplain = []\n", linegate=lg, key_name="x") as app, httpx.Client() as http:
    n = b.ingest(app, http, qq.system_lines(system, Path("../shared/data/loghub")))
    b.wait_settled(app, http, 300)
    time.sleep(2)
    shutil.copytree(app.data_dir, out)
print(system, n, sorted(p.name for p in out.rglob("*"))[:20])
