# timing probe for the appliance: logs each query_answer's parts to $PROBE_LOG (default probe_times.log)
import time, json, os
def _install():
    try:
        import gateway.serve.query_job as qj
        import gateway.llm.speculative as sp
    except Exception:
        return
    orig_sg = qj.speculative_generate
    orig_qa = qj.query_answer
    def sg(engine, drafter, prompt, *a, **k):
        t = time.perf_counter(); r = orig_sg(engine, drafter, prompt, *a, **k)
        with open(os.environ.get('PROBE_LOG', 'probe_times.log'), 'a') as f:
            f.write(json.dumps({"gen": True, "prompt": len(prompt), "cached": k.get("n_prompt_cached"), "toks": len(r.tokens),
                                "prefill_ms": round(r.prefill_ms), "decode_ms": round(r.decode_ms),
                                "wall_ms": round((time.perf_counter() - t) * 1000), "drafter": type(drafter).__name__}) + "\n")
        return r
    def qa(et, job, turns, *a, **k):
        t = time.perf_counter(); r = orig_qa(et, job, turns, *a, **k)
        with open(os.environ.get('PROBE_LOG', 'probe_times.log'), 'a') as f:
            f.write(json.dumps({"qa_ms": round((time.perf_counter() - t) * 1000), "q": turns[-1]["content"][:50]}, ensure_ascii=False) + "\n")
        return r
    qj.speculative_generate = sg
    qj.query_answer = qa
import sys, importlib.abc
class _Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "gateway.serve.query_job":
            sys.meta_path.remove(self)
            import importlib
            spec = importlib.util.find_spec(name)
            orig = spec.loader.exec_module
            def exec_module(m):
                orig(m); _install()
            spec.loader.exec_module = exec_module
            return spec
        return None
sys.meta_path.insert(0, _Hook())
