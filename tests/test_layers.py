"""The stages' imports point one way and never in a circle, lazy (function-level) imports included.

`ie` is the core; `teacher`, `distill` and `student` build on it only; `serve` serves the student from `ie`
alone; only `serve/bench*.py` (which compares every stage) and `crossagentie` (the Python API, which labels with
any of them) may import them all, and nothing imports `crossagentie`. Parsed with `ast`, so a
module's imports count wherever in it they sit (in a function, under `TYPE_CHECKING`).
"""
from __future__ import annotations

import ast
from pathlib import Path

from ie.config import REPO_ROOT

PACKAGES = ("ie", "teacher", "distill", "student", "serve", "crossagentie")
SCRIPTS = ("train_student",)
ALLOWED = {"ie": {"ie"}, "teacher": {"ie", "teacher"}, "distill": {"ie", "distill"},
           "student": {"ie", "student"}, "serve": {"ie", "serve"}, "train_student": {"ie", "student"},
           "crossagentie": set(PACKAGES)}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    files = [p for pkg in PACKAGES for p in sorted((REPO_ROOT / pkg).rglob("*.py"))]
    files += [REPO_ROOT / f"{name}.py" for name in SCRIPTS]
    return {module_name(p): p for p in files}


def imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules `name` imports: `import a.b`, `from a import b` (b a module or a name in a) and
    relative imports, at any depth of the file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            found.update(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                         for alias in node.names)
    return {m for m in found if m in modules and m != name}


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {name: imported(name, path, modules) for name, path in modules.items()}


def layer(module: str) -> str:
    return module.split(".")[0]


def may_import(importer: str, target: str) -> bool:
    if importer.startswith("serve.bench"):
        return True
    if target.startswith("serve.bench"):
        return False
    return layer(target) in ALLOWED[layer(importer)]


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (its modules, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


def test_the_graph_sees_every_kind_of_import(tmp_path):
    graph = import_graph()
    assert "ie.config" in graph["serve.bench"]  # top-level `from ie.config import ...`
    assert "serve.bench_run" in graph["serve.bench"]  # inside a function
    assert "teacher.runner" in graph["teacher"]  # `from teacher import runner`, inside a function
    pkg = tmp_path / "teacher" / "sub"
    pkg.mkdir(parents=True)
    (pkg / "mod.py").write_text("import ie.config\nfrom . import other\nfrom .. import config as c\n"
                                "from ..runner import x\ndef f():\n    from ie import schema\n")
    modules = dict.fromkeys(["ie.config", "ie.schema", "teacher.config", "teacher.runner", "teacher.sub.other",
                             "teacher.sub.mod"], Path())
    assert imported("teacher.sub.mod", pkg / "mod.py", modules) == {
        "ie.config", "ie.schema", "teacher.config", "teacher.runner", "teacher.sub.other"}


def test_layers_point_one_way():
    graph = import_graph()
    wrong = sorted(f"{a} imports {b}" for a, targets in graph.items() for b in targets if not may_import(a, b))
    assert not wrong, "imports against the layers (ie <- teacher|distill|student <- serve; only serve/bench* " \
                      "and crossagentie import every stage):\n" + "\n".join(wrong)


def test_no_import_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_find_cycle_reports_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
