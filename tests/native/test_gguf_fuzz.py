"""Fuzz the GGUF reader in-process: truncations and byte corruptions of real headers.

Runs in the pytest process on purpose: a crash, hang or runaway allocation in the reader
kills or stalls the run. Every outcome must be a clean load or a GGUFError.
"""

from __future__ import annotations

import random
import resource
import struct
from pathlib import Path

import numpy as np
import pytest
from gguf import GGMLQuantizationType, GGUFValueType, GGUFWriter

from gateway._native import GGUFError, GGUFFile

SMOLLM_PREFIX_BYTES = 32 * 1024   # header + metadata + the start of the vocab
MAX_RSS_GROWTH_KB = 256 * 1024    # nothing the reader does on these inputs may need more
# Values that break naive length/count/offset arithmetic, written over 8- and 4-byte fields.
NASTY_U64 = (0, 1, 2**31, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1)


def seed_file(path: Path) -> bytes:
    """A small GGUF with every value type, string arrays and tensors of several types."""
    w = GGUFWriter(path, arch="fuzz")
    w.add_key_value("f.u8", 7, GGUFValueType.UINT8)
    w.add_key_value("f.i16", -3, GGUFValueType.INT16)
    w.add_key_value("f.u64", 2**40, GGUFValueType.UINT64)
    w.add_key_value("f.f64", 2.5, GGUFValueType.FLOAT64)
    w.add_key_value("f.bool", False, GGUFValueType.BOOL)
    w.add_key_value("f.str", "line 42: ERROR", GGUFValueType.STRING)
    w.add_key_value("f.tokens", ["<s>", "a", "bc", "日"], GGUFValueType.ARRAY, GGUFValueType.STRING)
    w.add_key_value("f.scores", [0.0, -1.0, -2.5], GGUFValueType.ARRAY, GGUFValueType.FLOAT32)
    w.add_key_value("f.types", [1, 2, 3, 4], GGUFValueType.ARRAY, GGUFValueType.INT32)
    rng = np.random.default_rng(1)
    w.add_tensor("x.f32", rng.standard_normal((2, 8)).astype(np.float32))
    w.add_tensor("x.f16", rng.standard_normal((3, 16)).astype(np.float16))
    w.add_tensor("x.q4k", rng.integers(0, 256, (2, 144), dtype=np.uint8), raw_dtype=GGMLQuantizationType.Q4_K)
    w.add_tensor("x.q80", rng.integers(0, 256, (1, 34), dtype=np.uint8), raw_dtype=GGMLQuantizationType.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path.read_bytes()


def exercise(path: Path, data: bytes) -> str:
    """Load `data` from `path`; on success touch everything; return 'ok' or 'error'."""
    path.write_bytes(data)
    try:
        f = GGUFFile(str(path))
    except GGUFError as exc:
        assert str(exc).startswith(str(path)), exc
        return "error"
    # Loaded: every view must lie inside the file, and every value must convert.
    assert f.file_size == len(data)
    f.metadata  # noqa: B018 -- conversion of every value is the check
    for t in f.tensors:
        assert f.data_offset + t.offset + t.nbytes <= len(data), t
        view = f.tensor_data(t.name)
        assert view.nbytes == t.nbytes
        if t.nbytes:
            # Touch both ends: a view past the mapping would fault here.
            assert int(view[0]) == data[f.data_offset + t.offset]
            assert int(view[-1]) == data[f.data_offset + t.offset + t.nbytes - 1]
    return "ok"


def mutations(seed: bytes, rng: random.Random, n_flips: int, n_nasty: int, hot: int):
    """Byte flips anywhere, extra flips in the first `hot` bytes, and nasty 4/8-byte values."""
    for _ in range(n_flips):
        pos = rng.randrange(len(seed)) if rng.random() < 0.5 else rng.randrange(min(hot, len(seed)))
        b = bytearray(seed)
        b[pos] ^= 1 << rng.randrange(8) if rng.random() < 0.7 else rng.randrange(1, 256)
        yield bytes(b)
    for _ in range(n_nasty):
        pos = rng.randrange(min(hot, len(seed)) - 8)
        b = bytearray(seed)
        value = rng.choice(NASTY_U64)
        if rng.random() < 0.5:
            b[pos : pos + 8] = struct.pack("<Q", value)
        else:
            b[pos : pos + 4] = struct.pack("<I", value & 0xFFFFFFFF)
        yield bytes(b)


def rss_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def test_fuzz_small_seed(tmp_path):
    seed = seed_file(tmp_path / "seed.gguf")
    target = tmp_path / "case.gguf"
    assert exercise(target, seed) == "ok"
    rss0 = rss_kb()
    outcomes = {"ok": 0, "error": 0}
    f = GGUFFile(str(target))
    # GGUFWriter pads the last tensor to the alignment; only a cut into real bytes is an error.
    data_end = max(f.data_offset + t.offset + t.nbytes for t in f.tensors)
    del f
    for cut in range(len(seed)):
        assert exercise(target, seed[:cut]) == ("error" if cut < data_end else "ok"), cut
    rng = random.Random(20240601)
    header_len = seed.index(b"x.q80") + 64  # flips concentrated on the header
    for data in mutations(seed, rng, n_flips=2000, n_nasty=1000, hot=header_len):
        outcomes[exercise(target, data)] += 1
    assert outcomes["ok"] > 100 and outcomes["error"] > 1000, outcomes  # both paths exercised
    assert rss_kb() - rss0 < MAX_RSS_GROWTH_KB


@pytest.mark.models
def test_fuzz_smollm_header(smollm_path, tmp_path):
    with open(smollm_path, "rb") as fh:
        seed = fh.read(SMOLLM_PREFIX_BYTES)
    target = tmp_path / "case.gguf"
    rss0 = rss_kb()
    rng = random.Random(7)
    # The prefix stops inside the vocab: every truncation and corruption must be an error or,
    # for a corrupted count that happens to end parsing early, a file that still checks out.
    cuts = sorted(set(range(0, 1200)) | {rng.randrange(len(seed)) for _ in range(200)})
    for cut in cuts:
        assert exercise(target, seed[:cut]) == "error", cut
    outcomes = {"ok": 0, "error": 0}
    for data in mutations(seed, rng, n_flips=700, n_nasty=700, hot=1200):
        outcomes[exercise(target, data)] += 1
    assert outcomes["error"] > 700, outcomes
    assert rss_kb() - rss0 < MAX_RSS_GROWTH_KB
