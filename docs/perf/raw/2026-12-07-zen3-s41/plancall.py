"""plancall.py SYSTEM 'question' 'call-after-prefix': run a call through the plan's grounding (no model) on the
store ground.py made ($SCRATCH/dbg/SYSTEM); print the call as run, its figures and the answer prompt's end."""
import sys, json, os
sys.path.insert(0, ".")
from types import SimpleNamespace
from gateway.pipeline.query import QuerySurface
from gateway.serve.answer import evidence, grounding
from gateway.serve.answer.plan import QueryPlan
system, q, call = sys.argv[1:4]
s = QuerySurface(f"{os.environ.get('SCRATCH', '/tmp')}/dbg/{system}/logs.db")
tool = SimpleNamespace(surface=s, kinds=grounding.Kinds(s))
ev = evidence.find(s, q)
kinds = tool.kinds.kinds([], list(dict.fromkeys([*ev.tokens, *ev.ids])))
plan = QueryPlan(tool, [{"role": "user", "content": q}], q, None, [], evidence=ev, kinds=kinds)
msgs = plan.finish(call)
print(json.dumps(plan.call), "\n", {k: v for k, v in plan.result.items() if k in ("count", "n", "max", "min", "sum", "text_relaxed_to", "error", "note")})
print(msgs[-1]["content"][-1500:])
