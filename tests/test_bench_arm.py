"""tools/bench/arm_asm.py: finding a kernel's block loop in GCC aarch64 assembly (the figure bench_arm.py
reports is only as right as the loop it models) and reading llvm-mca's answer."""

from __future__ import annotations

import shutil

import pytest

from tools.bench import arm_asm as A

# A function shaped like the kernels: a row loop around a block loop around a record loop with the sdots,
# a cold path (.L9) that jumps back into the block loop, and an inline-asm loop with a numeric label.
ASM = """\
\t.text
void ns::kern<1>(int):
.LFB1:
\tmov\tx9, 0
.L2:
\tldr\tq0, [x1], 16
.L3:
\tldrh\tw0, [x2]
\tcbz\tw0, .L9
.L4:
\tand\tv1.16b, v0.16b, v7.16b
.L5:
\tsdot\tv2.4s, v1.16b, v3.16b
\tsdot\tv4.4s, v1.16b, v3.16b
\tsubs\tx5, x5, 1
\tbne\t.L5
\tsubs\tx4, x4, 1
\tbgt\t.L3
\tsubs\tx3, x3, 1
\tb.ne\t.L2
\tret
.L9:
\tfmov\ts1, w0
\tb\t.L4
\t.size\tns::kern<1>(int), .-ns::kern<1>(int)
other(int):
1:ldr q3, [x28, #0x0]
.inst 0x4f9fe18a  // sdot v10.4s, v12.16b, v31.4b[0]
subs x24, x24, #0x1
bgt 1b
\t.size\tother(int), .-other(int)
"""


def nest_sizes(lines):
    return [(lp.label, [c.label for c in lp.children]) for lp in A.walk(A.loop_forest(lines))]


def test_loops_nest_and_a_cold_jump_back_is_not_a_loop():
    funcs = A.functions(ASM)
    lines = A.find_function(funcs, "ns::kern<1>")
    assert nest_sizes(lines) == [(".L2", [".L3"]), (".L3", [".L5"]), (".L5", [])]
    inner = A.loop_forest(lines)[0].children[0]          # .L3
    assert A.own_instructions(lines, inner) == ["ldrh\tw0, [x2]", "cbz\tw0, .L9", "and\tv1.16b, v0.16b, v7.16b",
                                                "subs\tx4, x4, 1", "bgt\t.L3"]


def test_block_loop_is_chosen_by_its_sdot_work_and_nest_shape():
    lines = A.find_function(A.functions(ASM), "ns::kern<1>")
    bodies = A.block_loop(lines, [1, 3], 6)               # .L3 once, .L5 three times: 3 x 2 sdot
    assert [A.sdots(b) for b in bodies] == [0, 2]
    with pytest.raises(LookupError):
        A.block_loop(lines, [1, 3], 8)                    # no nest does that much work: refuse, not guess
    with pytest.raises(LookupError):
        A.find_function(A.functions(ASM), "ns::kern<2>")


def test_inline_asm_loops_and_encoded_instructions():
    lines = A.find_function(A.functions(ASM), "other")
    (loop,) = A.loop_forest(lines)
    body = A.own_instructions(lines, loop)
    assert body == ["ldr q3, [x28, #0x0]", "sdot v10.4s, v12.16b, v31.4b[0]", "subs x24, x24, #0x1", "bgt 1b"]
    text = A.mca_input(body).splitlines()
    assert text[0] == ".Lmca_top:" and text[-1] == "bgt .Lmca_top"   # the back-edge, to a label llvm-mca can see


@pytest.mark.skipif(not shutil.which(A.MCA), reason=f"needs {A.MCA}: tools/setup_system.sh --bench-arm")
def test_mca_reads_cycles_and_bottleneck():
    # eight independent sdots: the N1 model issues two a cycle on V0/V1, so about four cycles an iteration
    body = [f"sdot v{i}.4s, v20.16b, v21.16b" for i in range(8)]
    r = A.mca(body, "neoverse-n1", iterations=100)
    assert 3.9 <= r["cycles"] <= 4.5 and r["insns"] == 8
    assert r["bottleneck"].startswith("N1UnitV") and 3.9 <= r["bottleneck_cycles"] <= 4.5


def test_packed_types_cost_tiles_as_matmul_packed():
    """bench_arm.ours_cost routes a packed type's records as neon_packed.cpp's tile_of does: the largest tile
    first (8, 4, 2, 1), per-record figures times the tile's records."""
    from tools.bench import bench_arm as B
    for t in ("Q4_K", "Q8_0"):
        ours = {(t, f"pk{n}"): {"cycles": c, "insns": 0.0} for n, c in ((1, 1000.0), (2, 100.0), (4, 10.0), (8, 1.0))}
        assert B.ours_cost(ours, t, 1) == 1000.0
        assert B.ours_cost(ours, t, 2) == 200.0
        assert B.ours_cost(ours, t, 7) == 40.0 + 200.0 + 1000.0
    ours = {("Q8_0", f"pk{n}"): {"cycles": c, "insns": 0.0} for n, c in ((1, 1000.0), (2, 100.0), (4, 10.0), (8, 1.0))}
    assert B.ours_cost(ours, "Q8_0", 15) == 8.0 + 40.0 + 200.0 + 1000.0
    assert B.ours_cost(ours, "Q8_0", 16) == 16.0


def test_gnu_byte_immediates_reach_llvm_mca_as_bytes():
    # GCC writes a negative byte immediate sign-extended to 64 bits, which LLVM's assembler refuses
    assert A.instruction("\tmovi\tv2.16b, 0xfffffffffffffff0") == "movi\tv2.16b, 0xf0"
    assert A.instruction("\tmovi\tv2.16b, 0xf") == "movi\tv2.16b, 0xf"
    assert A.instruction("\tmovi\tv2.4s, 0xff, lsl 8") == "movi\tv2.4s, 0xff, lsl 8"


def test_smmla_counts_as_multiply_work_and_can_be_left_out():
    body = ["smmla\tv0.4s, v1.16b, v2.16b", "sdot\tv3.4s, v4.16b, v5.4b[1]", "smmla\tv6.4s, v1.16b, v7.16b", "add\tx0, x0, 1"]
    assert A.sdots(body) == 3
    assert A.sdots(body, ("sdot",)) == 1          # a vec_dot's one-record loop, not its two-row smmla loop


def test_i8mm_kernel_table_counts_smmla_per_pair():
    """8 smmla per 32 values and record pair (two row pairs x 4), one record as a pair with itself; Q4_K/Q5_K's
    mins (and Q5_K's correction) 4 (8) more a pair; the units are 4 rows x the tile's records."""
    from tools.bench import bench_arm as B
    k = B.our_i8mm_kernels()
    assert {t for t, _ in k} == set(B.PACKED)
    assert k["Q8_0", "mm1"][2:] == (8, 4) and k["Q8_0", "mm8"][2:] == (32, 32)
    assert k["Q4_K", "mm2"][1:] == ([1, 4], 68, 8) and k["Q5_K", "mm4"][2] == 144
    assert k["Q6_K", "mm8"][1:] == ([1, 16], 256, 32)


@pytest.mark.skipif(not shutil.which(A.MCA), reason=f"needs {A.MCA}: tools/setup_system.sh --bench-arm")
def test_neoverse_n2_model_schedules_smmla_on_its_vector_pipes():
    assert "N2UnitV" in A.n2_units()
    r = A.mca([f"smmla v{i}.4s, v20.16b, v21.16b" for i in range(8)], "neoverse-n2", iterations=100)
    assert 3.9 <= r["cycles"] <= 4.5 and r["bottleneck"].startswith("N2UnitV")
