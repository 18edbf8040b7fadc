"""The layers of `evaluators` (README, "Code layout"), checked on the source: every import, at the top of a module or
inside a function, goes down or sideways, never up; no import cycle between modules; the engine never imports
Streamlit; calibration never imports bench; few modules directly in evaluators/."""
from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from tests.helpers import ROOT

PACKAGE = ROOT / "evaluators"
# Bottom to top; a module may import its own layer and those below. `threads` sets up the process for all.
LAYERS = (
    ("threads", "maths"),
    ("records",),
    ("loaders",),
    ("judges",),
    ("metrics",),
    ("store",),
    ("runs",),
    ("queries",),
    ("presentation",),
    ("api", "demo", "cli", "__main__"),
)
LEVEL = {part: level for level, parts in enumerate(LAYERS) for part in parts}


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> Iterator[tuple[str, int]]:
    """(module imported, line) of every import in the file, wherever it stands; `from x import y` yields x.y when y is a
    module of the project, else x."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                path = ROOT / Path(*sub.split("."))
                yield (sub if path.with_suffix(".py").exists() or path.is_dir() else node.module), node.lineno


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def layer(module: str) -> int | None:
    """The layer of an `evaluators` module (None for the package itself, which only re-exports)."""
    parts = module.split(".")
    return LEVEL[parts[1]] if len(parts) > 1 else None


def test_every_module_has_a_layer():
    unplaced = sorted({m.split(".")[1] for m in MODULES if "." in m} - set(LEVEL))
    assert not unplaced, f"add these to LAYERS (and to the README's layout): {unplaced}"


def test_no_module_imports_a_layer_above_its_own():
    upward = []
    for module, path in MODULES.items():
        mine = layer(module)
        for target, line in imports(path):
            if target.startswith("evaluators.") and mine is not None and layer(target) > mine:
                upward.append(f"{path.relative_to(ROOT)}:{line} ({LAYERS[mine][0]}) imports {target}")
    assert not upward, "\n".join(upward)


def graph() -> dict[str, set[str]]:
    edges = {m: set() for m in MODULES}
    for module, path in MODULES.items():
        for target, _ in imports(path):
            while target and target not in MODULES:  # `from evaluators.x import name` -> evaluators.x
                target = target.rpartition(".")[0]
            if target and target != module:
                edges[module].add(target)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), i.e. the modules on an import cycle."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle():
    assert cycles(graph()) == []


def test_the_cycle_check_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_engine_never_imports_streamlit_and_calibration_never_imports_bench():
    offenders = [f"{p.relative_to(ROOT)}:{line} {t}" for p in PACKAGE.rglob("*.py") for t, line in imports(p)
                 if t.split(".")[0] == "streamlit"]
    offenders += [f"{p.relative_to(ROOT)}:{line} {t}" for p in (ROOT / "calibration").rglob("*.py")
                  for t, line in imports(p) if t.split(".")[0] == "bench"]
    assert not offenders, "\n".join(offenders)


def test_few_modules_directly_in_evaluators():
    flat = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(flat) <= 10, flat


def test_no_test_module_imports_another_and_tests_mirror_the_packages():
    """What tests share lives in tests/helpers or a conftest (fixtures); tests of a package sit in the folder of its
    name (tests/queries for evaluators/queries ...), the whole-project ones (cli, api, layers, the package) directly in
    tests/."""
    tests = ROOT / "tests"
    offenders = [f"{p.relative_to(ROOT)}:{line} {t}" for p in tests.rglob("*.py") for t, line in imports(p)
                 if t.startswith("tests.") and (t.rsplit(".", 1)[-1].startswith("test_") or t.endswith("conftest"))]
    assert not offenders, "\n".join(offenders)
    folders = {p.parent.relative_to(tests).parts[0] for p in tests.rglob("test_*.py") if p.parent != tests}
    layers = {part for parts in LAYERS for part in parts}
    assert folders <= layers | {"pages", "e2e", "bench", "calibration", "judge_behaviour"}, folders
