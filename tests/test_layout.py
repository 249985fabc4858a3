"""The code's shape (docs/architecture.md): file and function sizes, and imports that only run
down the data flow (ingest, pipeline | llm -> serve -> appliance -> server -> cli), without cycles."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 100
SOURCE_SUFFIXES = {".py", ".cpp", ".h", ".cu", ".cuh"}

# Layer of each part of gateway/: a module imports only from its own part or a lower layer.
# pipeline and llm share a layer and never import each other (the model knows nothing of logs).
LAYERS = {
    "gateway._native": 0, "gateway.resources": 0, "gateway.datasets": 0, "gateway.sdnotify": 0,
    "gateway.ingest": 1, "gateway.pipeline": 2, "gateway.llm": 2, "gateway.fleet": 2, "gateway.fleet.node": 3,
    "gateway.serve": 3, "gateway.settings": 3, "gateway.appliance": 4,
    "gateway.server": 5, "gateway.cli": 6, "gateway.__main__": 7,
}


def sources(*roots: str) -> list[Path]:
    return sorted(p for r in roots for p in (REPO / r).rglob("*")
                  if p.suffix in SOURCE_SUFFIXES and "__pycache__" not in p.parts)


def part_of(module: str) -> str:
    best = ""
    for part in LAYERS:
        if (module == part or module.startswith(part + ".")) and len(part) > len(best):
            best = part
    return best


def module_name(path: Path) -> str:
    rel = path.relative_to(REPO).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def gateway_imports(path: Path) -> set[str]:
    """Every gateway module `path` imports, at module level or inside functions."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    me = module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("gateway"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.startswith("gateway"):
                out.add(mod)
                out.update(f"{mod}.{a.name}" for a in node.names)   # `from pkg import module`
    return out


def known_modules() -> dict[str, Path]:
    mods = {module_name(p): p for p in sources("gateway") if p.suffix == ".py"}
    mods["gateway._native"] = REPO / "gateway" / "_native.pyi"
    return mods


def import_graph() -> dict[str, set[str]]:
    mods = known_modules()
    return {m: {i for i in gateway_imports(p) if i in mods and i != m}
            for m, p in mods.items() if p.suffix == ".py"}


# --- sizes -------------------------------------------------------------------------------------

def test_no_file_over_the_limit():
    long = [f"{p.relative_to(REPO)}: {n}" for p in sources("gateway", "native", "tools")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_FILE_LINES]
    assert not long, f"files over {MAX_FILE_LINES} lines: {long}"


def test_no_python_function_over_the_limit():
    long = []
    for p in sources("gateway", "tools"):     # tools/: the benches' main functions split by responsibility too
        if p.suffix != ".py":
            continue
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{p.relative_to(REPO)}:{node.lineno} {node.name}: {n}")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


_CPP_NOISE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
# A function body opens after ")" plus qualifiers; not after control keywords or "= {" initializers.
_CPP_HEADER = re.compile(r"\)\s*(?:const\s*)?(?:noexcept\s*)?(?:override\s*)?(?:->\s*[\w:<>,\s*&]+)?\s*$")
_CONTROL = re.compile(r"\b(?:if|for|while|switch|catch)\s*\([^()]*(?:\([^()]*\)[^()]*)*\)\s*$")


def cpp_functions(text: str) -> list[tuple[int, int, str]]:
    """(first line, line count, header tail) of each outermost function body in C++/CUDA source:
    a `{` at namespace or class level that follows a parameter list. Lambdas and blocks inside a
    function count toward that function."""
    clean = _CPP_NOISE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    clean = re.sub(r"^\s*#[^\n]*", lambda m: " " * len(m.group(0)), clean, flags=re.M)
    out, stack = [], []            # stack of (kind, start offset): "fn" or "scope"
    for i, ch in enumerate(clean):
        if ch == "{":
            in_fn = any(k == "fn" for k, _ in stack)
            before = clean[max(0, i - 300):i]
            is_fn = not in_fn and _CPP_HEADER.search(before) and not _CONTROL.search(before)
            stack.append(("fn" if is_fn else "scope", i))
        elif ch == "}" and stack:
            kind, start = stack.pop()
            if kind == "fn":
                first = clean.count("\n", 0, start) + 1
                last = clean.count("\n", 0, i) + 1
                header = clean[max(0, start - 80):start].strip().splitlines()
                out.append((first, last - first + 1, header[-1] if header else ""))
    return out


def test_cpp_function_finder_sees_functions():
    src = "namespace x {\nstatic int f(int a) {\n  if (a) {\n    return 1;\n  }\n  auto g = [&](int b) {\n return b; };\n  return g(a);\n}\nstruct S { int v() const { return 1; } };\n}\n"
    found = cpp_functions(src)
    assert [(first, n) for first, n, _ in found] == [(2, 8), (10, 1)]


def test_no_native_function_over_the_limit():
    long = []
    for p in sources("native"):
        if p.suffix == ".py":
            continue
        for first, n, header in cpp_functions(p.read_text(encoding="utf-8")):
            if n > MAX_FUNCTION_LINES:
                long.append(f"{p.relative_to(REPO)}:{first} ({header[-60:]}): {n}")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


# --- imports -----------------------------------------------------------------------------------

def test_every_gateway_module_has_a_layer():
    missing = [m for m in known_modules() if not part_of(m) and m != "gateway"]
    assert not missing, f"modules outside the layers of docs/architecture.md: {missing}"


def test_imports_run_down_the_data_flow():
    wrong = []
    for mod, deps in import_graph().items():
        me = part_of(mod)
        if not me:
            continue
        for dep in deps:
            other = part_of(dep)
            if not other or other == me:
                continue
            if LAYERS[other] >= LAYERS[me]:
                wrong.append(f"{mod} -> {dep}")
    assert not wrong, f"imports that run up or across the layers: {wrong}"


def test_no_import_cycle():
    graph = import_graph()
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                cycles.append(path[path.index(d):] + [d] if d in path else [m, d])
            elif d not in state:
                visit(d, path + [d])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    # a package's __init__ re-exporting its own submodules is not a cycle between parts
    cycles = [c for c in cycles if not all(x == c[0] or x.startswith(c[0] + ".") for x in c)]
    assert not cycles, f"import cycles: {cycles}"


@pytest.mark.parametrize("lower, upper", [("gateway.llm", "gateway.pipeline"), ("gateway.pipeline", "gateway.llm")])
def test_model_and_log_pipeline_do_not_know_each_other(lower, upper):
    bad = [f"{m} -> {d}" for m, deps in import_graph().items() if part_of(m) == lower
           for d in deps if part_of(d) == upper]
    assert not bad, bad
