"""Time each kernel variant of the 1.5B's Q4_K shapes at 1 and 2 tokens (q8x2: 2 and 4 records), one
thread, thread CPU time, min over reps; the matrices of every layer streamed in turn (DRAM)."""
import os, sys, time, json
import numpy as np
from gateway import _native as n
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
only = sys.argv[2].split(",") if len(sys.argv) > 2 else None
g = n.GGUFFile(os.path.expanduser("~/.cache/linegate/models/qwen2.5-coder-1.5b-instruct.gguf"))
groups = {"attn_q": [], "ffn_gate_up": [], "ffn_down_q4k": []}
for t in g.tensors:
    if t.type != "Q4_K" or not t.name.startswith("blk."): continue
    kind = t.name.split(".")[2]
    key = {"attn_q": "attn_q", "ffn_gate": "ffn_gate_up", "ffn_up": "ffn_gate_up", "ffn_down": "ffn_down_q4k"}.get(kind)
    if key: groups[key].append((g.tensor_data(t.name), t.n_rows, t.type_id, t.shape[0], t.nbytes))
res = {}
for key, mats in groups.items():
    if only and key not in only: continue
    tid, K = mats[0][2], mats[0][3]
    nbytes = sum(m[4] for m in mats)
    for T in (1, 2):
        x = np.random.default_rng(T).standard_normal((T, K)).astype(np.float32)
        acts = n.prepare_acts(tid, x, 1)
        nrec = 2 * T
        names = n.kernel_variants(tid, K, nrec)
        best = {nm: 1e9 for nm in names}
        for r in range(reps):
            for nm in names:
                n.set_kernel_variant(tid, K, nrec, nm)
                t0 = time.thread_time()
                for W, rows, *_ in mats: n.matmul(tid, W, rows, acts, x, 0, rows)
                best[nm] = min(best[nm], time.thread_time() - t0)
        n.clear_kernel_variants()
        for nm, s in best.items():
            res[f"{key} T={T} {nm}"] = round(nbytes / s / 1e9, 2)
            print(f"{key:14s} T={T} {nm:22s} {s*1e3:8.2f} ms {nbytes/s/1e9:6.2f} GB/s", flush=True)
print(json.dumps(res))
