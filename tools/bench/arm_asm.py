"""Static analysis of aarch64 kernels for tools/bench/bench_arm.py: cross-compile to assembly, find a kernel's
block loop (the loop that runs once per weight block, or per few blocks) and its nested loops, and run llvm-mca
over each loop body for a modelled core. No aarch64 hardware involved: every cycle figure here is a model.

A loop is a backward branch to a label of the same function (GCC's .L labels); a loop's own instructions are
those between its label and its branch that no nested loop holds. The cycles of one block-loop iteration are
sum(trips_i * cycles_i) over the loop and its nested loops, trips_i being how often loop i's body runs per
block-loop iteration (from the kernel's source; bench_arm.py's tables), and each loop is checked by its sdot
count: sum(trips_i * sdots_i) must equal the integer multiply work of the iteration, so a wrong loop (or a
compiler that reshaped the loops) fails loudly instead of giving a number for something else.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

CROSS_CXX, CROSS_CC = "aarch64-linux-gnu-g++", "aarch64-linux-gnu-gcc"
MCA = "llvm-mca-19"   # LLVM 19: has the Neoverse N1 model (LLVM 14's llvm-mca has none)
# a conditional branch to a GCC label (.L12) or, inside inline asm, back to a numeric local label (3b). Loop
# back-edges are conditional in GCC's and hand-written loops; an unconditional backward `b` is a cold path
# (a subnormal fp16 scale, say) jumping back into the middle of its loop, not a loop.
BRANCH = re.compile(r"^\s*(?:\d+:)?\s*(b\.?(?:eq|ne|lt|le|gt|ge|hi|hs|lo|ls|cc|cs|mi|pl|vs|vc)|cbn?z|tbn?z)\s+"
                    r".*?(\.L\w+|\d+b)\s*$")
LABEL = re.compile(r"^\s*(\.L\w+|\d+):")
FUNC = re.compile(r"^([^\s.#\d].*):$")   # a (demangled) function label at column 0


@dataclass
class Loop:
    label: str
    start: int          # line of the label
    end: int            # line of the backward branch
    children: list["Loop"] = field(default_factory=list)


def compile_asm(compiler: str, flags: list[str], source: Path, out: Path, cwd: Path) -> str:
    """Assembly of `source` (GCC -S), function names demangled."""
    subprocess.run([compiler, *flags, "-S", str(source), "-o", str(out)], cwd=cwd, check=True, capture_output=True,
                   text=True)
    filt = shutil.which("aarch64-linux-gnu-c++filt") or "c++filt"
    return subprocess.run([filt], input=out.read_text(), capture_output=True, text=True, check=True).stdout


def functions(asm: str) -> dict[str, list[str]]:
    """Function name (demangled, with its parameter list) -> its lines, label to .size."""
    out, name, body = {}, None, []
    for line in asm.split("\n"):
        m = FUNC.match(line)
        if m and not line.startswith(".L"):
            name, body = m.group(1), []
            out[name] = body
        if name is not None:
            body.append(line)
            if line.strip().startswith(".size"):
                name = None
    return out


def find_function(funcs: dict[str, list[str]], prefix: str) -> list[str]:
    """The lines of the one function named `prefix` (demangled, without its return type and parameters)."""
    hits = [n for n in funcs if n.startswith(prefix + "(") or f" {prefix}(" in n or n == prefix]
    if len(hits) != 1:
        raise LookupError(f"{prefix!r}: {len(hits)} functions match ({hits[:4]})")
    return funcs[hits[0]]


def instruction(line: str) -> str | None:
    """The instruction on an assembly line, or None (labels, directives, comments). Inline asm's `.inst 0x..
    // sdot ...` (an instruction the assembler may not know, emitted as a word) gives its commented text."""
    s = re.sub(r"^\s*(?:\.L\w+|\d+):", "", line).strip()
    if s.startswith(".inst") and "//" in s:
        s = s.split("//", 1)[1].strip()
    s = s.split("//")[0].strip()
    # GNU as takes a byte immediate sign-extended to 64 bits (GCC writes `movi v0.16b, 0xfffffffffffffff0` for a
    # negative int8); LLVM's assembler wants the byte
    s = re.sub(r"^(movi\s+v\d+\.(?:8|16)b,\s*)0xf{14}([0-9a-f]{2})$", r"\g<1>0x\2", s)
    return None if not s or s.startswith((".", "#")) else s


def loop_forest(lines: list[str]) -> list[Loop]:
    labels: dict[str, int] = {}
    loops = []
    for i, line in enumerate(lines):
        m = BRANCH.match(line)
        target = m and (m.group(2)[:-1] if m.group(2).endswith("b") and m.group(2)[0].isdigit() else m.group(2))
        if m and target in labels and labels[target] < i:
            loops.append(Loop(target, labels[target], i))
        if (lm := LABEL.match(line)):
            labels[lm.group(1)] = i   # a numeric label may come again: a backward branch means the latest
    loops.sort(key=lambda lp: (lp.start, -lp.end))
    roots: list[Loop] = []
    stack: list[Loop] = []
    for lp in loops:
        while stack and not (stack[-1].start <= lp.start and lp.end <= stack[-1].end):
            stack.pop()
        (stack[-1].children if stack else roots).append(lp)
        stack.append(lp)
    return roots


def walk(loops: list[Loop]):
    for lp in loops:
        yield lp
        yield from walk(lp.children)


def own_instructions(lines: list[str], lp: Loop) -> list[str]:
    """The loop's instructions (label to backward branch) outside its nested loops."""
    inner = [(c.start, c.end) for c in lp.children]
    out = [instruction(lines[i]) for i in range(lp.start, lp.end + 1) if not any(a <= i <= b for a, b in inner)]
    return [s for s in out if s]


def sdots(insns: list[str], ops: tuple[str, ...] = ("sdot", "smmla")) -> int:
    """Integer multiply-accumulate vector instructions: sdot (16 MACs), or smmla (32) in an i8mm kernel's loops;
    a kernel's work per iteration is given in the instructions it uses (ops: which to count)."""
    return sum(1 for s in insns if s.startswith(ops))


def block_loop(lines: list[str], trips: list[int], sdots_per_iter: int,
               ops: tuple[str, ...] = ("sdot", "smmla")) -> list[list[str]]:
    """The instruction lists (pre-order: the block loop, then its nested loops) of the one loop whose nest has
    len(trips) loops and sum(trips_i * sdots_i) == sdots_per_iter."""
    found = []
    for lp in walk(loop_forest(lines)):
        nest = list(walk([lp]))
        if len(nest) != len(trips):
            continue
        bodies = [own_instructions(lines, x) for x in nest]
        if sum(t * sdots(b, ops) for t, b in zip(trips, bodies)) == sdots_per_iter:
            found.append(bodies)
    if len(found) != 1:
        raise LookupError(f"{len(found)} loop nests of {len(trips)} loops with {sdots_per_iter} sdot per iteration")
    return found[0]


def mca_input(insns: list[str]) -> str:
    """The loop body as llvm-mca input: the labels it names (branches, constant pools) defined at its end."""
    names = sorted(set(re.findall(r"\.L\w+", "\n".join(insns))))
    body = [re.sub(r"\b\d+[bf]\s*$", ".Lmca_top", s) if BRANCH.match("\t" + s) else s for s in insns]
    return ".Lmca_top:\n" + "\n".join(body + [f"{n}:" for n in names]) + "\n"


def mca(insns: list[str], cpu: str, iterations: int = 200) -> dict:
    """llvm-mca over the body run `iterations` times: cycles per iteration, the busiest resource (name and its
    cycles per iteration), instructions per iteration."""
    run = subprocess.run([MCA, "-mtriple=aarch64", f"-mcpu={cpu}", "-mattr=+dotprod,+fullfp16,+i8mm",
                          f"-iterations={iterations}", "-"], input=mca_input(insns), capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"llvm-mca failed: {run.stderr[-2000:]}")
    out = run.stdout
    cycles = int(re.search(r"Total Cycles:\s+(\d+)", out).group(1))
    res_names = dict(re.findall(r"^\[(\d+(?:\.\d+)?)\]\s+-\s+(\S+)", out, re.M))
    m = re.search(r"Resource pressure per iteration:\n(.*)\n(.*)\n", out)
    cols = re.findall(r"\[(\d+(?:\.\d+)?)\]", m.group(1))
    vals = [float(v) if v != "-" else 0.0 for v in m.group(2).split()]
    per_unit: dict[str, float] = {}
    for c, v in zip(cols, vals):
        base = res_names.get(c, res_names.get(c.split(".")[0], c))
        per_unit[f"{base}.{c.split('.')[1]}" if "." in c else base] = v
    top = max(per_unit, key=per_unit.get)
    return {"cycles": cycles / iterations, "bottleneck": top, "bottleneck_cycles": per_unit[top],
            "insns": len(insns)}


def n2_units() -> str:
    """The resource names llvm-mca -mcpu=neoverse-n2 schedules smmla on (N2Unit...: LLVM's own Neoverse N2
    model; another model's names, or none, would mean the figures are not the N2's)."""
    out = subprocess.run([MCA, "-mtriple=aarch64", "-mcpu=neoverse-n2", "-mattr=+i8mm", "-iterations=10", "-"],
                         input="smmla v0.4s, v1.16b, v2.16b\n", capture_output=True, text=True, check=True).stdout
    names = re.findall(r"^\[\d+(?:\.\d+)?\]\s+-\s+(\S+)", out, re.M)
    return ",".join(sorted({re.sub(r"\d+$", "", n) for n in names}))


def scheduling_model_check() -> dict:
    """Which scheduling model -mcpu=cortex-a76 really gets: its instruction table for a probe is compared with
    those of neoverse-n1 (the A76's server sibling, its own model since LLVM 17) and cortex-a57."""
    probe = ["sdot v0.4s, v1.16b, v2.16b", "mul v4.4s, v5.4s, v6.4s", "addp v7.4s, v8.4s, v9.4s",
             "ldr q10, [x0]", "addv s14, v15.4s", "fmla v16.4s, v17.4s, v18.4s"]

    def table(cpu: str) -> str:
        out = subprocess.run([MCA, "-mtriple=aarch64", f"-mcpu={cpu}", "-mattr=+dotprod", "-iterations=10", "-"],
                             input="\n".join(probe) + "\n", capture_output=True, text=True, check=True).stdout
        return out.split("Instruction Info:")[1].split("Resources:")[0]

    a76, n1, a57 = table("cortex-a76"), table("neoverse-n1"), table("cortex-a57")
    return {"cortex_a76_is_a57_model": a76 == a57, "cortex_a76_is_n1_model": a76 == n1,
            "neoverse_n2_units": n2_units(),
            "llvm_mca": re.search(r"LLVM version (\S+)", subprocess.run([MCA, "--version"], capture_output=True,
                                                                         text=True).stdout).group(1)}
