"""The project's tools: bench/ (benchmarks, each ending with one JSON line), convert/ (model
exporters and the random-GGUF writer shared with the tests), probes/ (references and one-off
measurements). Scripts run as files (`python tools/bench/bench_engine.py`) or as modules."""

# File name -> module, for tests that load tools by name.
TOOL_MODULES = {
    "bench_cuda": "tools.bench.bench_cuda", "bench_engine": "tools.bench.bench_engine",
    "bench_ingest": "tools.bench.bench_ingest", "bench_kernels": "tools.bench.bench_kernels",
    "bench_spec": "tools.bench.bench_spec", "bench_tokenizer": "tools.bench.bench_tokenizer",
    "spec_bound": "tools.bench.spec_bound", "box_model": "tools.bench.box_model", "bench_ab": "tools.bench.bench_ab", "harness": "tools.bench.harness",
    "convert_draft_rknn": "tools.convert.convert_draft_rknn", "export_draft_onnx": "tools.convert.export_draft_onnx",
    "random_gguf": "tools.convert.random_gguf",
    "act_precision": "tools.probes.act_precision", "logits_digest": "tools.probes.logits_digest",
    "ngram_ban_rate": "tools.probes.ngram_ban_rate", "reference": "tools.probes.reference",
}
