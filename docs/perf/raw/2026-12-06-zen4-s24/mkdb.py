"""mkdb.py SYSTEM: ingest the Loghub 2k file through a served appliance (LINEGATE: a snapshot's linegate);
copy its store to $STORES/SYSTEM/ (the stores evsnap.py and psize.py read)."""
import sys, shutil, time, os, tempfile
import tree  # noqa: F401,E402  (TREE's gateway/ first: tree.py)
from pathlib import Path
import httpx
from tools.bench import bench_qa as b, qa_questions as qq
from tools.bench.harness import Served
sysname = sys.argv[1]
with tempfile.TemporaryDirectory() as tmp, Served(Path(tmp), b.DEMO_OFF, linegate=os.environ["LINEGATE"], key_name="x") as app, httpx.Client() as http:
    n = b.ingest(app, http, qq.system_lines(sysname, Path(os.environ.get("LOGHUB", "../shared/data/loghub"))))
    time.sleep(3)
    dst = Path(os.environ["STORES"]) / sysname
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(app.data_dir, dst)
    print(sysname, n, sorted(os.listdir(dst)))
