"""Variants of the 1.5B's one-token Q4_K shapes: DRAM-streamed (every layer's matrices in turn) with 1 and
2 threads (rows split as the engine splits them; wall time), and hot (attn_k, 221 KB, repeated: the
kernel's compute rate with the weights in L2). Min over reps, variants interleaved."""
import os, sys, time, json
from concurrent.futures import ThreadPoolExecutor
import numpy as np
from gateway import _native as n
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
T = int(sys.argv[2]) if len(sys.argv) > 2 else 1
g = n.GGUFFile(os.path.expanduser("~/.cache/linegate/models/qwen2.5-coder-1.5b-instruct.gguf"))
groups = {"attn_q": [], "ffn_gate_up": [], "ffn_down_q4k": [], "attn_k": [], "ffn_down_q6k": [], "attn_v_q6k": [], "output_q6k": []}
for t in g.tensors:
    if t.type not in ("Q4_K", "Q6_K"): continue
    if t.name.startswith("token_embd") or t.name.startswith("output"):
        if t.type == "Q6_K": groups["output_q6k"].append((g.tensor_data(t.name), t.n_rows, t.type_id, t.shape[0], t.nbytes))
        continue
    kind = t.name.split(".")[2]
    if t.type == "Q6_K": key = {"ffn_down": "ffn_down_q6k", "attn_v": "attn_v_q6k"}.get(kind)
    else: key = {"attn_q": "attn_q", "ffn_gate": "ffn_gate_up", "ffn_up": "ffn_gate_up", "ffn_down": "ffn_down_q4k", "attn_k": "attn_k"}.get(kind)
    if key: groups[key].append((g.tensor_data(t.name), t.n_rows, t.type_id, t.shape[0], t.nbytes))
only = os.environ.get("ONLY")
if only: groups = {k: v for k, v in groups.items() if k in only.split(",") or k == "attn_k"}
groups = {k: v for k, v in groups.items() if v}
groups["hot_attn_k"] = groups.pop("attn_k")[:1] * 100
pool = ThreadPoolExecutor(2)
def split(rows, nt, i):
    cuts = [min(rows, (rows * j // nt) // 16 * 16) for j in range(nt)] + [rows]
    return cuts[i], cuts[i + 1]
res = {}
for nt in (1, 2):
    for key, mats in groups.items():
        if key == "hot_attn_k" and nt == 2: continue
        tid, K = mats[0][2], mats[0][3]
        nbytes = sum(m[4] for m in mats)
        x = np.random.default_rng(T).standard_normal((T, K)).astype(np.float32)
        acts = n.prepare_acts(tid, x, 1)
        nrec = 2 * T
        names = n.kernel_variants(tid, K, nrec)
        best = {nm: 1e9 for nm in names}
        def run(i):
            for W, rows, *_ in mats:
                r0, r1 = split(rows, nt, i)
                n.matmul(tid, W, rows, acts, x, r0, r1)
        for r in range(reps):
            for nm in names:
                n.set_kernel_variant(tid, K, nrec, nm)
                if nt == 1:
                    t0 = time.thread_time(); run(0); s = time.thread_time() - t0
                else:
                    t0 = time.perf_counter(); list(pool.map(run, range(nt))); s = time.perf_counter() - t0
                best[nm] = min(best[nm], s)
        n.clear_kernel_variants()
        for nm, s in best.items():
            res[f"{key} th={nt} {nm}"] = round(nbytes / s / 1e9, 2)
            print(f"threads={nt} {key:14s} T={T} {nm:22s} {s*1e3:8.2f} ms {nbytes/s/1e9:6.2f} GB/s", flush=True)
print(json.dumps(res))
