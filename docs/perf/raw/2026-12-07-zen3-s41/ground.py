"""ground.py SYSTEM 'question' ...: ingest the system's 2k raw lines into a no-engine appliance (cached per
system under $SCRATCH/dbg), then print the call prompt's grounding for each question (no model). Run from the
checkout's root with its venv; the 1.5B's GGUF (its tokenizer) from ~/.cache/linegate/models."""
import sys, json, time, pathlib, os
sys.path.insert(0, ".")
SCRATCH = os.environ.get("SCRATCH", "/tmp")
from gateway.appliance import Appliance
from gateway.settings import load
from gateway.ingest.ndjson import parse_ndjson
system = sys.argv[1]
d = pathlib.Path(f"{SCRATCH}/dbg/{system}")
fresh = not d.exists()
s = load(None, data_dir=d, engine={"enabled": False}, ingest={"demo": {"enabled": False}})
app = Appliance(s).start()
if fresh:
    raw = open(f"../shared/data/loghub/{system}/{system}_2k.log", "rb").read()
    recs, *_ = parse_ndjson(raw, source=system)
    app.ingest(recs)
    time.sleep(3)
from gateway.pipeline.query import QuerySurface
from gateway.serve.answer.tool import QueryTool
from gateway.llm.tokenizer import Tokenizer
from gateway.llm.tokenizer.bpe import Tokenizer
import glob
tok = Tokenizer.from_gguf(glob.glob(os.path.expanduser("~/.cache/linegate/models/*1.5b*.gguf"))[0])
tool = QueryTool(QuerySurface(app.store.path), tok)
for q in sys.argv[2:]:
    p = tool.plan([{"role": "user", "content": q}])
    print("=" * 100); print(p.turns[-1]["content"] if hasattr(p, "turns") else p)
    print("-- evidence tokens/ids:", p.evidence.tokens, p.evidence.ids)
app.stop()
