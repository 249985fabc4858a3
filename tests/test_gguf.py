"""`linegate gguf inspect`: JSON and text output on the real SmolLM file, and a bad file.

Parsing itself is checked against gguf.GGUFReader in tests/native/test_gguf.py; here the
reference is the native reader, and the subject is the summary.
"""

from __future__ import annotations

import json

import pytest
from gateway._native import GGUFFile
from gateway.cli import main
from gateway.llm.gguf import ARRAY_HEAD, ARRAY_INLINE_MAX


@pytest.mark.models
def test_inspect_json(smollm_path, capsys):
    assert main(["gguf", "inspect", str(smollm_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    ref = GGUFFile(str(smollm_path))
    assert set(out) >= {"metadata", "tensors"}
    md = out["metadata"]
    assert list(md) == ref.keys()
    assert md["general.architecture"] == "llama"
    assert md["llama.block_count"] == 30
    assert md["general.languages"] == ["en"]  # short arrays are shown whole
    tokens = ref.get("tokenizer.ggml.tokens")
    assert md["tokenizer.ggml.tokens"] == {"type": "array", "elem_type": "string", "len": len(tokens),
                                          "head": tokens[:ARRAY_HEAD]}
    assert len(tokens) > ARRAY_INLINE_MAX
    assert md["tokenizer.ggml.token_type"]["elem_type"] == "int32"
    assert len(out["tensors"]) == len(ref.tensors)
    for t, r in zip(out["tensors"], ref.tensors):
        assert t == {"name": r.name, "shape": r.shape, "type": r.type, "offset": r.offset, "nbytes": r.nbytes}
    assert out["data_offset"] == ref.data_offset


@pytest.mark.models
def test_inspect_text(smollm_path, capsys):
    assert main(["gguf", "inspect", str(smollm_path)]) == 0
    text = capsys.readouterr().out
    assert "tokenizer.ggml.tokens = [string x 49152]" in text
    assert "token_embd.weight" in text and "Q8_0" in text


def test_inspect_bad_file(tmp_path, capsys):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\xff" * 16)
    assert main(["gguf", "inspect", str(bad), "--json"]) == 1
    err = capsys.readouterr().err
    assert f"{bad}: metadata count 18446744073709551615" in err and "cannot fit" in err
