"""flood_store.py: Loghub's 2k files and 40,000 made-up lines through a Triage and a Store in batches of 500;
prints the append time and the lines of a <*> template stored without parameters. Run from the checkout's root."""
import sys, time, random, tempfile, pathlib
sys.path.insert(0, '.')
from gateway.ingest.record import LogRecord
from gateway.pipeline.triage import Triage
from gateway.pipeline.store import Store
from tools.bench import bench_formats
import inspect
rng = random.Random(1)
words = ["pump","valve","zone","motor","axis","servo","belt","gate","arm","feed","heater","sensor","press","drum"]
lines = []
for i in range(20000):
    w = rng.sample(words, 3) + [f"w{rng.randrange(100000)}" for _ in range(rng.randrange(1, 4))]
    lines.append(f"2026-12-04 10:{i//1000%60:02d}:{i%60:02d} INFO ctl{rng.randrange(5)}: {' '.join(w)} value {rng.randrange(1000)} state {rng.choice(['on','off','fault'])}")
import glob
for f in sorted(glob.glob("../shared/data/loghub/*/*_2k.log")):
    lines += open(f, errors="replace").read().splitlines()
lines += [f"2026-12-04 11:00:{i%60:02d} INFO ctl1: conveyor {i%7} speed {rng.randrange(900)} rpm load {rng.randrange(100)}" for i in range(20000)]
tri = Triage(None)
if tri is None:
    raise SystemExit(str(inspect.signature(Triage)))
recs = [LogRecord(ts=1.7e9 + i, source="flood", host="h", severity=6, text=t) for i, t in enumerate(lines)]
cls = []
for i in range(0, len(recs), 500):
    cls += tri.classify(recs[i:i+500])
d = tempfile.mkdtemp()
t0 = time.perf_counter()
with Store(pathlib.Path(d) / "s.db") as s:
    for i in range(0, len(recs), 500):
        c = cls[i:i+500]
        s.append(recs[i:i+500], [x.template_id for x in c], [x.fields for x in c])
    s.flush()
    el = time.perf_counter() - t0
    with s.reader.connection() as db:
        miss = db.execute("select count(*) from logs l join templates t on t.id=l.template_id where t.template like '%<%' and not exists (select 1 from params p where p.line_id=l.id)").fetchone()[0]
        nt = db.execute("select count(*) from templates").fetchone()[0]
print(f"store append {len(recs)} lines: {el:.2f} s; templates {nt}; lines lacking params {miss}")
