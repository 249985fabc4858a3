"""The model side: the native engine and its never-growing KV cache, tokenizer, sampling, the one
decode loop (speculative.py; no drafter = plain decoding), drafters, model files and GGUF tools.
Knows nothing about logs, jobs or HTTP: nothing here imports pipeline, ingest, serve or server."""
