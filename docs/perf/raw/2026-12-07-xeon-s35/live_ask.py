"""live_ask.py LINEGATE DBDIR 'question': serve a copy of a stored data dir, ask, print the sources."""
import sys, shutil, json, tempfile, time
sys.path.insert(0, "."); sys.path.insert(0, "tools/bench")
from pathlib import Path
import httpx, openai
from tools.bench import bench_qa as b
from tools.bench.harness import Served
lg, db, qs = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
work = Path(tempfile.mkdtemp())
shutil.copytree(db, work / "data")
with Served(work, b.DEMO_OFF + "[alerts]\nexplain = []\n", linegate=lg, key_name="x", data_dir=work / "data") as app, httpx.Client() as http:
    b.wait_settled(app, http, 300)
    client = openai.OpenAI(base_url=app.url + "/v1", api_key=app.key, timeout=120, max_retries=0)
    for q in qs:
        r = b.ask(client, {"question": q}, 256)
        print(json.dumps(r, ensure_ascii=False)[:1500])
