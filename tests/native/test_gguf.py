"""gateway._native.GGUFFile against the `gguf` package's reader and writer, and on hostile files.

Files are written by gguf.GGUFWriter (independent of our reader) or byte by byte below.
"""

from __future__ import annotations

import gc
import struct
from pathlib import Path

import numpy as np
import pytest
from gguf import GGML_QUANT_SIZES, GGMLQuantizationType, GGUFReader, GGUFValueType, GGUFWriter

from gateway._native import GGUFError, GGUFFile, ggml_type_name, ggml_type_traits

# ---- agreement with gguf.GGUFReader on the real models -----------------------------------


def reader_value(field):
    """A GGUFReader field as a plain Python value (lists for arrays)."""
    value = field.contents()
    if isinstance(value, np.generic):
        return value.item()
    return value


# GGUFReader needs ~12 s to open a Qwen file (it builds a numpy view per vocab string), so the
# two Qwen comparisons run in the slow suite; SmolLM (same reader paths, 49k vocab) runs in CI.
@pytest.mark.models
@pytest.mark.parametrize(
    "fixture",
    ["smollm_path", pytest.param("qwen05_path", marks=pytest.mark.slow), pytest.param("qwen15_path", marks=pytest.mark.slow)],
)
def test_agrees_with_gguf_reader(fixture, request):
    path = request.getfixturevalue(fixture)
    ours = GGUFFile(str(path))
    ref = GGUFReader(path)

    ref_fields = {k: f for k, f in ref.fields.items() if not k.startswith("GGUF.")}
    assert ours.version == ref.fields["GGUF.version"].contents()
    assert ours.keys() == list(ref_fields)
    assert ours.data_offset == ref.data_offset
    assert ours.alignment == ref.alignment
    md = ours.metadata
    for key, field in ref_fields.items():
        want = reader_value(field)
        assert md[key] == want, key
        vtype = field.types[0].name
        if vtype == "ARRAY":
            assert ours.value_type(key) == ("ARRAY", field.types[1].name, len(want)), key
        else:
            assert ours.value_type(key) == (vtype, None, None), key

    assert len(ours.tensors) == len(ref.tensors)
    for t, r in zip(ours.tensors, ref.tensors):
        assert t.name == r.name
        assert t.shape == [int(x) for x in r.shape]
        assert t.type == r.tensor_type.name
        assert t.type_id == int(r.tensor_type)
        assert ours.data_offset + t.offset == r.data_offset
        assert t.nbytes == r.n_bytes
        assert t.n_elements == r.n_elements
    # Bytes: spot-check the first, a middle and the last tensor against the reader's view.
    for r in (ref.tensors[0], ref.tensors[len(ref.tensors) // 2], ref.tensors[-1]):
        view = ours.tensor_data(r.name)
        assert np.array_equal(view, np.asarray(r.data).view(np.uint8).reshape(-1)), r.name


@pytest.mark.models
def test_engine_getters_on_real_model(qwen15_path):
    f = GGUFFile(str(qwen15_path))
    assert f.get_string("general.architecture") == "qwen2"
    assert f.get_int("qwen2.block_count") == 28
    assert f.get_int("qwen2.embedding_length") == 1536
    assert f.get_float("qwen2.rope.freq_base") == 1000000.0
    t = f.tensor("blk.0.attn_q.weight")
    assert t.shape == [1536, 1536] and t.n_rows == 1536
    assert t.row_bytes == 1536 // 256 * 144  # Q4_K


# ---- block sizes ---------------------------------------------------------------------------


def test_type_traits_match_ggml():
    for qtype, (block_elems, block_bytes) in GGML_QUANT_SIZES.items():
        if qtype == GGMLQuantizationType.Q8_1:
            # gguf-py still lists the old f32 d,s layout (40); ggml's block_q8_1 is 2 x f16 + 32.
            assert ggml_type_traits(int(qtype)) == (32, 36)
            continue
        if ggml_type_name(int(qtype)) == "UNKNOWN":  # newer types this reader does not load
            assert ggml_type_traits(int(qtype)) == (0, 0)
            continue
        assert ggml_type_name(int(qtype)) == qtype.name
        assert ggml_type_traits(int(qtype)) == (block_elems, block_bytes), qtype.name
    assert ggml_type_traits(12) == (256, 144)  # Q4_K, spelled out once
    assert ggml_type_traits(999) == (0, 0)


# ---- files written by GGUFWriter ----------------------------------------------------------


def write_gguf(path: Path, kvs=(), tensors=(), alignment: int | None = None) -> Path:
    w = GGUFWriter(path, arch="testarch")
    if alignment is not None:
        w.add_custom_alignment(alignment)
    for key, value, vtype, sub in kvs:
        w.add_key_value(key, value, vtype, sub)
    for name, array, raw_dtype in tensors:
        if raw_dtype is None:
            w.add_tensor(name, array)
        else:
            w.add_tensor(name, array, raw_dtype=raw_dtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


ALL_TYPES = [
    ("t.u8", 200, GGUFValueType.UINT8, None),
    ("t.i8", -100, GGUFValueType.INT8, None),
    ("t.u16", 60000, GGUFValueType.UINT16, None),
    ("t.i16", -30000, GGUFValueType.INT16, None),
    ("t.u32", 4_000_000_000, GGUFValueType.UINT32, None),
    ("t.i32", -2_000_000_000, GGUFValueType.INT32, None),
    ("t.u64", 2**64 - 1, GGUFValueType.UINT64, None),
    ("t.i64", -(2**63), GGUFValueType.INT64, None),
    ("t.f32", 0.1, GGUFValueType.FLOAT32, None),
    ("t.f64", 0.1, GGUFValueType.FLOAT64, None),
    ("t.bool", True, GGUFValueType.BOOL, None),
    ("t.str", "héllo 日志", GGUFValueType.STRING, None),
    ("t.empty", "", GGUFValueType.STRING, None),
    ("t.arr_i32", [1, -2, 3], GGUFValueType.ARRAY, GGUFValueType.INT32),
    ("t.arr_f32", [0.5, 1.5], GGUFValueType.ARRAY, GGUFValueType.FLOAT32),
    ("t.arr_str", ["a", "", "ç"], GGUFValueType.ARRAY, GGUFValueType.STRING),
]


def test_every_value_type_round_trips(tmp_path):
    path = write_gguf(tmp_path / "kv.gguf", ALL_TYPES)
    f = GGUFFile(str(path))
    ref = GGUFReader(path)
    md = f.metadata
    assert md["general.architecture"] == "testarch"
    for key, value, vtype, _ in ALL_TYPES:
        assert md[key] == reader_value(ref.fields[key]), key
        assert f.get(key) == md[key]
    assert md["t.f32"] == float(np.float32(0.1)) and md["t.f64"] == 0.1
    assert md["t.u64"] == 2**64 - 1 and md["t.i64"] == -(2**63)
    assert f.value_type("t.arr_str") == ("ARRAY", "STRING", 3)
    assert f.array_head("t.arr_i32", 2) == [1, -2]
    assert f.get("absent") is None and f.get("absent", 7) == 7
    assert "t.u8" in f and "absent" not in f


def test_typed_getters_name_the_key(tmp_path):
    f = GGUFFile(str(write_gguf(tmp_path / "kv.gguf", ALL_TYPES)))
    assert f.get_int("t.u32") == 4_000_000_000
    assert f.get_int("t.i8") == -100
    assert f.get_float("t.u16") == 60000.0
    assert f.get_string("t.str") == "héllo 日志"
    with pytest.raises(GGUFError, match=r"missing metadata key 'nope'"):
        f.get_int("nope")
    with pytest.raises(GGUFError, match=r"'t.str' is STRING, expected an integer"):
        f.get_int("t.str")
    with pytest.raises(GGUFError, match=r"'t.u64' = 18446744073709551615 exceeds int64"):
        f.get_int("t.u64")
    with pytest.raises(GGUFError, match=r"'t.u8' is UINT8, expected STRING"):
        f.get_string("t.u8")
    with pytest.raises(GGUFError, match=r"expected a number"):
        f.get_float("t.arr_i32")
    with pytest.raises(KeyError):
        f.value_type("nope")


def test_tensors_and_zero_copy_views(tmp_path):
    rng = np.random.default_rng(0)
    f32 = rng.standard_normal((3, 64)).astype(np.float32)
    f16 = rng.standard_normal((2, 32)).astype(np.float16)
    q8 = rng.integers(0, 256, size=(4, 2 * 34), dtype=np.uint8)  # 4 rows of 64 Q8_0 elements
    path = write_gguf(
        tmp_path / "t.gguf",
        tensors=[("a", f32, None), ("b", f16, None), ("c", q8, GGMLQuantizationType.Q8_0)],
        alignment=64,
    )
    f = GGUFFile(str(path))
    ref = GGUFReader(path)
    assert f.alignment == 64 and f.data_offset % 64 == 0
    assert [t.name for t in f.tensors] == ["a", "b", "c"]
    a, b, c = f.tensors
    assert (a.shape, a.type, a.nbytes, a.row_bytes, a.n_rows) == ([64, 3], "F32", 768, 256, 3)
    assert (b.shape, b.type, b.nbytes) == ([32, 2], "F16", 128)
    assert (c.shape, c.type, c.nbytes, c.row_bytes) == ([64, 4], "Q8_0", 272, 68)
    for t, r in zip(f.tensors, ref.tensors):
        assert f.data_offset + t.offset == r.data_offset
        assert t.offset % 64 == 0
    assert np.array_equal(f.tensor_data("a").view(np.float32).reshape(3, 64), f32)
    assert np.array_equal(f.tensor_data("b").view(np.float16).reshape(2, 32), f16)
    assert np.array_equal(f.tensor_data("c").reshape(4, 68), q8)

    view = f.tensor_data("a")
    assert not view.flags.writeable and not view.flags.owndata
    assert np.shares_memory(view, f.tensor_data("a"))  # both views are the same mapped bytes
    with pytest.raises(ValueError):
        view[0] = 1
    tensors = f.tensors
    del f
    gc.collect()
    # The views keep the mapping alive after the file object is gone.
    assert np.array_equal(view.view(np.float32).reshape(3, 64), f32)
    assert tensors[2].name == "c"
    with pytest.raises(GGUFError, match="no tensor named 'zz'"):
        GGUFFile(str(path)).tensor_data("zz")


# ---- hostile files, byte by byte -----------------------------------------------------------


def gstr(s: bytes | str) -> bytes:
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def header(n_tensors: int, n_kv: int, version: int = 3, magic: bytes = b"GGUF") -> bytes:
    return magic + struct.pack("<IQQ", version, n_tensors, n_kv)


def kv_u32(key: str, value: int) -> bytes:
    return gstr(key) + struct.pack("<II", 4, value)


def tinfo(name: str, ne: list[int], ggml_type: int, offset: int) -> bytes:
    return gstr(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne) + struct.pack("<IQ", ggml_type, offset)


def with_data(head: bytes, data_bytes: int, alignment: int = 32) -> bytes:
    pad = (-len(head)) % alignment
    return head + b"\0" * (pad + data_bytes)


F32 = 0
GOOD_TWO_TENSORS = with_data(header(2, 0) + tinfo("a", [8], F32, 0) + tinfo("b", [8], F32, 32), 64)

HOSTILE = [
    ("bad_magic", b"GGML" + GOOD_TWO_TENSORS[4:], r"bad magic 'GGML'"),
    ("version1", header(0, 0, version=1), r"unsupported GGUF version 1"),
    ("version4", header(0, 0, version=4), r"unsupported GGUF version 4"),
    ("big_endian", b"GGUF" + struct.pack(">IQQ", 3, 0, 0), r"version 50331648 \(big-endian file\?\)"),
    ("short", b"GGUF\x03\x00", r"shorter than the 24-byte GGUF header"),
    ("empty", b"", r"shorter than the 24-byte GGUF header"),
    ("huge_kv_count", header(0, 2**62) + b"\0" * 64, r"metadata count 4611686018427387904 cannot fit"),
    ("huge_tensor_count", header(2**40, 0) + b"\0" * 64, r"tensor count 1099511627776 exceeds the limit 262144"),
    ("tensor_count_past_end", header(1000, 0) + b"\0" * 64, r"tensor count 1000 cannot fit in the 64 bytes left"),
    ("huge_key_len", header(0, 1) + struct.pack("<Q", 2**63) + b"\0" * 16, r"metadata key .* has length 9223372036854775808"),
    ("string_past_end", header(0, 1) + gstr("k") + struct.pack("<IQ", 8, 1000) + b"abc",
     r"truncated file: need 1000 bytes for string value"),
    ("huge_array", header(0, 1) + gstr("k") + struct.pack("<IIQ", 9, 4, 2**61) + b"\0" * 32,
     r"key 'k': array of 2305843009213693952 UINT32 elements does not fit"),
    ("huge_string_array", header(0, 1) + gstr("k") + struct.pack("<IIQ", 9, 8, 10**6) + gstr("x") * 10,
     r"key 'k': array of 1000000 STRING elements does not fit"),
    ("bad_value_type", header(0, 1) + gstr("k") + struct.pack("<I", 13) + b"\0" * 16, r"key 'k': unknown value type 13"),
    ("bad_elem_type", header(0, 1) + gstr("k") + struct.pack("<IIQ", 9, 77, 1) + b"\0" * 16,
     r"key 'k': unknown array element type 77"),
    ("deep_arrays", header(0, 1) + gstr("k") + struct.pack("<I", 9) + struct.pack("<IQ", 9, 1) * 200 + b"\0" * 8,
     r"key 'k': arrays nested deeper than 8"),
    ("duplicate_key", header(0, 2) + kv_u32("k", 1) + kv_u32("k", 2), r"duplicate metadata key 'k'"),
    ("alignment_not_pow2", header(0, 1) + kv_u32("general.alignment", 48), r"'general.alignment' = 48 is not a power of two"),
    ("alignment_zero", header(0, 1) + kv_u32("general.alignment", 0), r"'general.alignment' = 0 is not a power of two"),
    ("alignment_type", header(0, 1) + gstr("general.alignment") + struct.pack("<IQ", 10, 32),
     r"'general.alignment' must be UINT32, not UINT64"),
    ("five_dims", with_data(header(1, 0) + tinfo("w", [1, 1, 1, 1, 1], F32, 0), 32), r"tensor 'w': 5 dimensions \(limit 4\)"),
    ("ne_overflow", with_data(header(1, 0) + tinfo("w", [2**62, 8], F32, 0), 32), r"tensor 'w': dimension 1 = 8 overflows"),
    ("ne_negative", with_data(header(1, 0) + tinfo("w", [2**64 - 1], F32, 0), 32), r"tensor 'w': dimension 0 = 18446744073709551615"),
    ("bytes_overflow", with_data(header(1, 0) + tinfo("w", [2**62], F32, 0), 32), r"tensor 'w': byte size overflows"),
    ("unknown_ggml_type", with_data(header(1, 0) + tinfo("w", [8], 31, 0), 32), r"tensor 'w': unknown ggml type 31"),
    ("partial_block", with_data(header(1, 0) + tinfo("w", [100], 12, 0), 4096), r"row length 100 is not a multiple of the Q4_K block size 256"),
    ("misaligned_offset", with_data(header(1, 0) + tinfo("w", [8], F32, 4), 64), r"data offset 4 is not a multiple of the alignment 32"),
    ("offset_past_end", with_data(header(1, 0) + tinfo("w", [8], F32, 2**40), 64), r"tensor 'w': data \[1099511627776, \+32\) runs past the end"),
    ("data_past_end", with_data(header(1, 0) + tinfo("w", [64], F32, 0), 100), r"tensor 'w': data \[0, \+256\) runs past the end of the data section \(100 bytes"),
    ("overlap", with_data(header(2, 0) + tinfo("a", [16], F32, 0) + tinfo("b", [8], F32, 32), 96), r"tensors 'a' and 'b' overlap"),
    ("duplicate_tensor", with_data(header(2, 0) + tinfo("a", [8], F32, 0) + tinfo("a", [8], F32, 32), 64), r"duplicate tensor 'a'"),
    ("data_start_past_end", header(1, 0) + tinfo("w", [0], F32, 0), r"tensor data would start at offset 64, past the end"),
]


def test_good_hand_built_file_loads(tmp_path):
    path = tmp_path / "good.gguf"
    path.write_bytes(GOOD_TWO_TENSORS)
    f = GGUFFile(str(path))
    assert [(t.name, t.offset, t.nbytes) for t in f.tensors] == [("a", 0, 32), ("b", 32, 32)]
    ref = GGUFReader(path)
    assert [int(t.data_offset) for t in ref.tensors] == [f.data_offset, f.data_offset + 32]


@pytest.mark.parametrize("name,data,message", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_file_gets_a_clear_error(tmp_path, name, data, message):
    path = tmp_path / f"{name}.gguf"
    path.write_bytes(data)
    with pytest.raises(GGUFError, match=message) as info:
        GGUFFile(str(path))
    assert str(info.value).startswith(f"{path}: ")


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(GGUFError, match=r"nope.gguf: cannot open: No such file"):
        GGUFFile(str(tmp_path / "nope.gguf"))
    with pytest.raises(GGUFError, match=r"not a regular file"):
        GGUFFile(str(tmp_path))
    assert issubclass(GGUFError, ValueError)


def test_empty_array(tmp_path):
    path = tmp_path / "e.gguf"
    path.write_bytes(header(0, 1) + gstr("k") + struct.pack("<IIQ", 9, 0, 0))  # GGUFWriter refuses []
    f = GGUFFile(str(path))
    assert f.metadata == {"k": []}
    assert f.value_type("k") == ("ARRAY", "UINT8", 0)


def test_invalid_utf8_survives_conversion(tmp_path):
    path = tmp_path / "u.gguf"
    path.write_bytes(header(0, 1) + gstr("k") + struct.pack("<I", 8) + gstr(b"\xff\xfeok"))
    f = GGUFFile(str(path))
    assert f.metadata["k"] == "\udcff\udcfeok"
    assert f.metadata["k"].encode("utf-8", "surrogateescape") == b"\xff\xfeok"


@pytest.mark.parametrize(
    "name,message",
    [
        ("kv", r"metadata count 65537 exceeds the limit 65536"),
        ("tensors", r"tensor count 262145 exceeds the limit 262144"),
        ("items", r"key 'k2': array of 2097153 elements exceeds the 4194304 array items a file may hold in total"),
    ],
)
def test_count_limits_bound_memory(tmp_path, name, message):
    """Counts that fit in the file but would cost ~50x its size in parsed values."""
    if name == "kv":
        data = header(0, 2**16 + 1) + kv_u32("k", 1) * (2**16 + 1)
    elif name == "tensors":
        data = header(2**18 + 1, 0) + tinfo("", [], F32, 0) * (2**18 + 1)
    else:
        n = 2**21 + 1
        array = struct.pack("<IIQ", 9, 0, n) + b"\0" * n  # ARRAY of n UINT8
        data = header(0, 2) + gstr("k1") + array + gstr("k2") + array
    path = tmp_path / f"{name}.gguf"
    path.write_bytes(data)
    with pytest.raises(GGUFError, match=message):
        GGUFFile(str(path))
