"""mkdb.py SYSTEM: ingest the Loghub 2k file through a served appliance (LINEGATE: a snapshot's linegate);
copy its store to $STORES/SYSTEM/ (the stores evsnap.py and psize.py read)."""
import sys, shutil, time, os, tempfile
# TREE: the tree whose gateway/ is measured (a `git archive` of a commit with the venv's native module
# copied in); the venv's editable-install finder, which maps `gateway` to the checkout before sys.path is
# read, is dropped so that TREE's code is what runs
sys.meta_path[:] = [f for f in sys.meta_path if not type(f).__name__.startswith("ScikitBuild")]
sys.path.insert(0, os.path.abspath(os.environ.get("TREE", ".")))
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
