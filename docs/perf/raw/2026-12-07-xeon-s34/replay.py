"""replay.py SYSTEM 'question' ['call json after {"op": "'] : the call's question turn and the answer's prompt."""
import sys, json, os
sys.path.insert(0, os.environ.get("SRC", "."))
from gateway.pipeline.query import QuerySurface
from gateway.serve.prompts import Prompts
from gateway.serve.answer.tool import QueryTool
system, q = sys.argv[1], sys.argv[2]
prompts = Prompts.for_model(os.path.expanduser("~/.cache/linegate/models/qwen2.5-coder-1.5b-instruct.gguf"))
tool = QueryTool(QuerySurface(f"{os.environ['SCRATCH']}/db/{system}/logs.db"), prompts.tokenizer)
plan = tool.plan([{"role": "user", "content": q}])
print("=== CALL TURN\n" + plan.turns[-1]["content"])
if len(sys.argv) > 3:
    msgs = plan.finish(sys.argv[3])
    print("=== RESULT"); print(json.dumps(plan.result, ensure_ascii=False, default=str)[:1500])
    print("=== ANSWER PROMPT (last user)\n" + msgs[-1]["content"])
    print("=== assistant call: " + msgs[-2]["content"])
    if len(sys.argv) > 4:
        print("=== CHECK:", plan.check(sys.argv[4]).text)
