"""CUDA backend benchmark on the Qwen2.5-Coder-1.5B shapes at Q4_K_M (random weights written by
tools/convert/random_gguf.py, so the real model need not travel): decode tok/s against the measured
bandwidth roofline, prefill 512, verify K=8 vs 8 single decodes, the deadline workload, and HF
transformers bf16 eager decode on the same shapes in the same run. Last line: one JSON object.
Needs a CUDA device; knows nothing about the kernels.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from gateway import _native  # noqa: E402

from tools.bench.harness import print_result  # noqa: E402
from tools.convert import random_gguf  # noqa: E402

DECODE_STEPS = 256
DEADLINE_REPS = 200
DEADLINE_PREFILL, DEADLINE_DECODE = 32, 8
VERIFY_K = 8
HF_STEPS = 64


def pct(xs, q):
    return float(np.percentile(np.asarray(xs), q))


def timed(fn, reps=1):
    t0 = time.perf_counter()
    for _ in range(reps):
        out = fn()
    return (time.perf_counter() - t0) / reps, out


def hf_decode_tok_s(spec) -> float:
    """Random-init Qwen2 of the same shapes, bf16, eager attention, greedy decode with KV cache."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = Qwen2Config(hidden_size=spec.n_embd, intermediate_size=spec.n_ff, num_hidden_layers=spec.n_layer,
                      num_attention_heads=spec.n_head, num_key_value_heads=spec.n_head_kv,
                      vocab_size=spec.n_vocab, max_position_embeddings=spec.n_ctx_train,
                      rope_theta=spec.rope_theta, rms_norm_eps=spec.rms_eps, tie_word_embeddings=False)
    cfg._attn_implementation = "eager"
    with torch.device("cuda"):
        model = Qwen2ForCausalLM(cfg).to(torch.bfloat16).eval()
    ids = torch.randint(0, spec.n_vocab, (1, 32), device="cuda")
    with torch.no_grad():
        out = model(ids, use_cache=True)
        past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
        for _ in range(8):  # warm-up
            out = model(nxt, past_key_values=past, use_cache=True)
            past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(HF_STEPS):
            out = model(nxt, past_key_values=past, use_cache=True)
            past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t0
    del model, past, out
    torch.cuda.empty_cache()
    return HF_STEPS / dt


def parity(path, spec) -> tuple[bool, float]:
    """Quick CPU-vs-CUDA check inside the bench: logits cosine of a 32-token job, 16 greedy tokens."""
    kv = dict(n_sink=4, n_ring=256, n_scratch=64, kv_policy="sink_ring", act_precision="q8x2")
    cpu = _native.Engine(str(path), n_threads=os.cpu_count() or 1, **kv)
    gpu = _native.CudaEngine(str(path), **kv)
    rng = np.random.default_rng(11)
    prompt = rng.integers(0, spec.n_vocab, 32).astype(np.int32)
    lc, lg = np.empty(spec.n_vocab, np.float32), np.empty(spec.n_vocab, np.float32)
    cpu.forward_scratch(prompt, lc)
    gpu.forward_scratch(prompt, lg)
    cos = float(lc @ lg / (np.linalg.norm(lc) * np.linalg.norm(lg)))
    want = [int(lc.argmax())]
    for _ in range(15):
        cpu.forward_scratch(np.asarray([want[-1]], np.int32), lc)
        want.append(int(lc.argmax()))
    got = [int(lg.argmax())] + [int(t) for t in gpu.decode(int(lg.argmax()), 15)]
    return cos >= 0.999 and got == want, cos


def decode_tok_s(eng, prompt, graph: bool = True) -> float:
    """Device-loop decode speed: DECODE_STEPS steps after `prompt`, following a warm-up (and the
    graph's capture); the scratch is rolled back before and after."""
    eng.use_graph = graph
    eng.rollback(0)
    first = eng.forward_scratch_next(prompt)
    eng.decode(first, 16)
    eng.rollback(0)
    first = eng.forward_scratch_next(prompt)
    dt, _ = timed(lambda: eng.decode(first, DECODE_STEPS))
    eng.rollback(0)
    return DECODE_STEPS / dt


def kernel_profile(label: str, fn, per: int, top: int = 12) -> None:
    """Device time per kernel while fn() runs (torch's profiler reads CUPTI, which sees every
    kernel of the process), divided by `per` (steps), printed as a table; nothing enters the JSON."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.init()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
    rows = [(e.key, e.count, e.device_time_total) for e in prof.key_averages() if e.device_time_total > 0]
    total = sum(r[2] for r in rows)
    print(f"kernel profile, {label}: {total / per:.1f} us of kernel time per step")
    for name, count, us in sorted(rows, key=lambda r: -r[2])[:top]:
        print(f"  {us / per:8.1f} us/step {count / per:6.1f} launches/step  {name[:110]}")


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model-dir", default="/tmp/linegate_bench")
    ap.add_argument("--skip-hf", action="store_true")
    ap.add_argument("--profile", action="store_true", help="print device time per kernel of a decode step")
    return ap.parse_args()


def model_file(model_dir: str, spec) -> Path:
    """The random-weight GGUF of `spec`, written once into model_dir."""
    path = Path(model_dir) / "qwen15_q4km_random.gguf"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        t, _ = timed(lambda: random_gguf.write_model(spec, path, seed=3))
        print(f"wrote {path} ({path.stat().st_size / 1e9:.2f} GB) in {t:.1f} s", flush=True)
    return path


def measure_decode(eng, prompt, profile: bool) -> dict:
    """Decode tok/s with the graph, fusion and PDL, and with each of them off; the kernel profile."""
    f = {"decode_nograph": decode_tok_s(eng, prompt, graph=False)}
    eng.fuse = False
    f["decode_unfused"] = decode_tok_s(eng, prompt)
    eng.fuse = True
    eng.pdl = False
    f["decode_nopdl"] = decode_tok_s(eng, prompt)
    eng.pdl = True
    f["decode"] = decode_tok_s(eng, prompt)
    print(f"decode {f['decode']:.0f} tok/s (graph, fused, pdl) vs {f['decode_nopdl']:.0f} (graph, fused, no pdl) vs "
          f"{f['decode_unfused']:.0f} (graph, unfused, pdl) vs {f['decode_nograph']:.0f} (no graph, fused, pdl); "
          f"activations {eng.act_precision}", flush=True)
    if profile:  # without pdl: each kernel's time is its own, not overlapped with its neighbours
        eng.pdl = False
        eng.use_graph = False
        eng.rollback(0)
        first = eng.forward_scratch_next(prompt)
        kernel_profile("8 decode steps without graph", lambda: eng.decode(first, 8), 8)
        eng.rollback(0)
        kernel_profile("a 32-token prefill (forward_scratch_next)", lambda: eng.forward_scratch_next(prompt), 1)
        eng.rollback(0)
        eng.use_graph = True
        eng.pdl = True
    return f


def measure_prefill(eng, p512) -> dict:
    """Prefill of 512 tokens in scratch, on tensor cores (mma) and with dp4a."""
    def prefill_tok_s(mma: bool) -> float:
        eng.mma = mma
        eng.forward_scratch(p512[:64])
        eng.rollback(0)
        dt, _ = timed(lambda: eng.forward_scratch(p512))
        eng.rollback(0)
        eng.mma = True
        return 512 / dt

    f = {"prefill_dp4a": prefill_tok_s(False)}
    f["prefill"] = prefill_tok_s(True)
    print(f"prefill 512: {f['prefill']:.0f} tok/s on tensor cores, {f['prefill_dp4a']:.0f} with dp4a", flush=True)
    return f


def measure_verify(eng, prompt, drafts, n_vocab: int) -> dict:
    """One forward of VERIFY_K drafts after the prompt (mma, dp4a) against VERIFY_K single decodes."""
    out_k = np.empty((VERIFY_K, n_vocab), np.float32)
    out_1 = np.empty(n_vocab, np.float32)
    eng.forward_scratch(prompt)

    def verify():
        eng.forward_scratch(drafts, out_k, True)
        eng.rollback(len(prompt))

    def singles():
        for t in drafts:
            eng.forward_scratch(np.asarray([t], np.int32), out_1)
        eng.rollback(len(prompt))

    verify()
    singles()
    t_verify, _ = timed(verify, 20)
    t_single, _ = timed(singles, 20)
    eng.mma = False
    verify()
    t_verify_dp4a, _ = timed(verify, 20)
    eng.mma = True
    eng.rollback(0)
    print(f"verify K={VERIFY_K}: {t_verify * 1e3:.2f} ms ({t_verify_dp4a * 1e3:.2f} with dp4a) vs {VERIFY_K} single "
          f"decodes {t_single * 1e3:.2f} ms ({t_single / t_verify:.1f}x)", flush=True)
    return {"t_verify": t_verify, "t_single": t_single, "t_verify_dp4a": t_verify_dp4a}


def measure_deadline(eng, chunk) -> dict:
    """The deadline workload: a DEADLINE_PREFILL-token chunk and DEADLINE_DECODE decodes, ms each (and the
    chunk's prefill alone, also with dp4a)."""
    lat, lat_prefill = [], []
    for i in range(DEADLINE_REPS + 5):
        t0 = time.perf_counter()
        first = eng.forward_scratch_next(chunk)
        t1 = time.perf_counter()
        eng.decode(first, DEADLINE_DECODE)
        dt = time.perf_counter() - t0
        eng.rollback(0)
        if i >= 5:
            lat.append(dt * 1e3)
            lat_prefill.append((t1 - t0) * 1e3)
    eng.mma = False
    lat_dp4a = []
    for i in range(25):
        t0 = time.perf_counter()
        eng.forward_scratch_next(chunk)
        lat_dp4a.append((time.perf_counter() - t0) * 1e3)
        eng.rollback(0)
    eng.mma = True
    print(f"deadline workload ({DEADLINE_PREFILL} prefill + {DEADLINE_DECODE} decodes) x{DEADLINE_REPS}: "
          f"p50 {pct(lat, 50):.2f} ms, p99 {pct(lat, 99):.2f} ms (the prefill alone: p50 {pct(lat_prefill, 50):.2f} ms; "
          f"{pct(lat_dp4a[5:], 50):.2f} ms with dp4a)",
          flush=True)
    return {"lat": lat, "lat_prefill": lat_prefill, "lat_dp4a": lat_dp4a}


def measure_q8(path: Path, stream, prompt) -> float:
    """Decode tok/s of a second engine with one-term (q8) activations."""
    q8 = _native.CudaEngine(str(path), n_sink=4, n_ring=2048, n_scratch=512, kv_policy="sink_ring", act_precision="q8")
    q8.pdl = q8.mma = True
    q8.prefill_stream(stream)
    decode_q8 = decode_tok_s(q8, prompt)
    del q8
    print(f"decode with q8 activations (one int8 term): {decode_q8:.0f} tok/s", flush=True)
    return decode_q8


def report(f: dict) -> dict:
    """The closing JSON object from the figures measured."""
    decode, hf, bpt = f["decode"], f["hf"], f["bpt"]
    t_verify, t_single, lat = f["t_verify"], f["t_single"], f["lat"]
    return {
        "decode_tok_s": round(decode, 1), "decode_nograph_tok_s": round(f["decode_nograph"], 1),
        "decode_unfused_tok_s": round(f["decode_unfused"], 1), "decode_q8_tok_s": round(f["decode_q8"], 1),
        "decode_nopdl_tok_s": round(f["decode_nopdl"], 1), "prefill512_dp4a_tok_s": round(f["prefill_dp4a"], 1),
        "verify8_dp4a_ms": round(f["t_verify_dp4a"] * 1e3, 3),
        "chunk_prefill_dp4a_p50_ms": round(pct(f["lat_dp4a"][5:], 50), 3),
        "act_precision": f["prec"],
        "bandwidth_gbps": round(f["bw"], 1), "bytes_per_token": int(bpt), "roofline_fraction": round(f["roof"], 3),
        "prefill512_tok_s": round(f["prefill"], 1), "verify8_ms": round(t_verify * 1e3, 3),
        "single8_ms": round(t_single * 1e3, 3), "verify_speedup": round(t_single / t_verify, 2),
        "hf_decode_tok_s": round(hf, 1), "speedup_vs_hf": round(decode / hf, 1) if hf == hf else None,
        "parity_ok": bool(f["parity_ok"]), "parity_logits_cos": round(f["cos"], 6),
        "chunk_p50_ms": round(pct(lat, 50), 3), "chunk_p99_ms": round(pct(lat, 99), 3),
        "chunk_prefill_p50_ms": round(pct(f["lat_prefill"], 50), 3),
    }


def main() -> None:
    args = parse_args()
    if not (getattr(_native, "cuda_built", False) and _native.cuda_available()):
        sys.exit("bench_cuda: no CUDA device (or the backend was not built)")
    spec = random_gguf.QWEN15
    path = model_file(args.model_dir, spec)
    bw = _native.cuda_d2d_bandwidth_gbps(1 << 30, 20)
    print(f"device {_native.cuda_device_name(0)}: cudaMemcpy D2D {bw:.0f} GB/s (read + write)", flush=True)

    eng = _native.CudaEngine(str(path), n_sink=4, n_ring=2048, n_scratch=512, kv_policy="sink_ring", act_precision="q8x2")
    eng.pdl = eng.mma = True  # off by default until measured: measured here, with and without
    f = {"bw": bw, "prec": eng.act_precision}
    rng = np.random.default_rng(0)        # draws in this order: the stream, the prompt, 512, drafts, a chunk, a stream
    eng.prefill_stream(rng.integers(0, spec.n_vocab, 256).astype(np.int32))
    prompt = rng.integers(0, spec.n_vocab, 32).astype(np.int32)
    f |= measure_decode(eng, prompt, args.profile)
    f["bpt"] = eng.bytes_per_token
    f["roof"] = f["decode"] * f["bpt"] / (bw * 1e9)
    print(f"{f['bpt'] / 1e6:.0f} MB/token -> roofline {bw * 1e9 / f['bpt']:.0f} tok/s, fraction {f['roof']:.2f}",
          flush=True)
    f |= measure_prefill(eng, rng.integers(0, spec.n_vocab, 512).astype(np.int32))
    f |= measure_verify(eng, prompt, rng.integers(0, spec.n_vocab, VERIFY_K).astype(np.int32), spec.n_vocab)
    f |= measure_deadline(eng, rng.integers(0, spec.n_vocab, DEADLINE_PREFILL).astype(np.int32))
    del eng
    f["decode_q8"] = measure_q8(path, rng.integers(0, spec.n_vocab, 256).astype(np.int32), prompt)
    f["parity_ok"], f["cos"] = parity(path, spec)
    print(f"parity vs CPU engine: logits cosine {f['cos']:.6f}, greedy 16 identical: {f['parity_ok']}", flush=True)
    f["hf"] = float("nan") if args.skip_hf else hf_decode_tok_s(spec)
    print(f"HF transformers bf16 eager decode: {f['hf']:.1f} tok/s", flush=True)
    print_result(report(f))


if __name__ == "__main__":
    main()
