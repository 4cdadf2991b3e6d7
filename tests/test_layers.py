"""The modules of python/ptc import each other without a circle (issue 34, §3): read from the
source with `ast`, every import counts, wherever it is written (at the top, inside a function,
under `TYPE_CHECKING`): a late import hides a circle from the interpreter, not from a reader.

The graph: a node per module (a package is its `__init__.py`; `ptc._core`, the Rust module, is
a node too); an edge per module an import names: `from a.b import c` names `a.b.c` when that is
a module, else `a.b`. The root package `ptc` is the public face: the names it lists under
`TYPE_CHECKING` and loads in `__getattr__` are every module's, on first use, so only what it
imports when it is imported counts for it (the core, keywords, errors)."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent / "python"


def modules() -> dict[str, tuple[Path | None, bool]]:
    """Every module's name -> (its file, whether it is a package)."""
    found: dict[str, tuple[Path | None, bool]] = {"ptc._core": (None, False)}
    for f in sorted((SOURCE / "ptc").rglob("*.py")):
        parts = list(f.relative_to(SOURCE).with_suffix("").parts)
        package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if package else parts)] = (f, package)
    return found


def imports(tree: ast.Module, everywhere: bool) -> list[ast.Import | ast.ImportFrom]:
    nodes = ast.walk(tree) if everywhere else iter(tree.body)
    return [n for n in nodes if isinstance(n, (ast.Import, ast.ImportFrom))]


def graph() -> dict[str, dict[str, int]]:
    """importer -> {imported: the line of its first import}."""
    known = modules()
    edges: dict[str, dict[str, int]] = {name: {} for name in known}
    for name, (path, package) in known.items():
        if path is None:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in imports(tree, everywhere=name != "ptc"):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    here = name.split(".") if package else name.split(".")[:-1]
                    here = here[: len(here) - node.level + 1]
                    base = ".".join([*here, *([base] if base else [])])
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
                ]
            for target in targets:
                while target not in known and "." in target:
                    target = target.rpartition(".")[0]
                if target in known and target != name:
                    edges[name].setdefault(target, node.lineno)
    return edges


def a_circle(edges: dict[str, dict[str, int]]) -> list[str]:
    """One circle as its modules in order (the first again at the end), or [] when none."""
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return []

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return []


def shown(circle: list[str], edges: dict[str, dict[str, int]]) -> str:
    """``a (line 3) -> b (line 9) -> a``: each importer with the line of its import."""
    steps = [f"{a} (line {edges[a][b]})" for a, b in itertools.pairwise(circle)]
    return " -> ".join([*steps, circle[-1]])


def test_the_graph_sees_the_package() -> None:
    edges = graph()
    assert len(edges) > 70
    assert "ptc.history.store" in edges["ptc.agent"]  # an import inside a function
    assert "ptc.approvals" in edges["ptc.agent"]  # one under TYPE_CHECKING
    assert "ptc.compression.base" in edges["ptc.compression.full"]  # a relative one
    assert set(edges["ptc"]) == {"ptc._core", "ptc._keyword", "ptc.errors"}


def test_no_import_circle() -> None:
    edges = graph()
    circle = a_circle(edges)
    assert not circle, "an import circle: " + shown(circle, edges)


def test_a_circle_is_found_and_shown() -> None:
    edges = {"a": {"b": 3}, "b": {"c": 9}, "c": {"a": 1}, "d": {"a": 2}}
    circle = a_circle(edges)
    assert circle == ["a", "b", "c", "a"]
    assert shown(circle, edges) == "a (line 3) -> b (line 9) -> c (line 1) -> a"
    assert a_circle({"a": {"b": 1}, "b": {}}) == []
