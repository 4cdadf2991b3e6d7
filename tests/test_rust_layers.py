"""The Rust core's modules form layers (issue 34, §3): read from the source, every `crate::x`
path a module writes outside its unit tests is an edge to the top-level module `x` (a folder,
`eval/` or `value/`, is one unit). The only circle allowed is the interpreter's own, `eval` and
`builtins` (a builtin calls back into the evaluator); the value model is a ground floor under
the language, and the reader stands below the analyzer.

The bindings (`rust/python/`) sit on top of everything and are not part of this graph."""

from __future__ import annotations

import re
from pathlib import Path

RUST = Path(__file__).resolve().parent.parent / "rust"
GROUPS = {"lang", "data", "print", "run", "memory"}
SKIPPED = {"python", "tests", "benches"}


def without_unit_tests(src: str) -> str:
    """`src` without `#[cfg(test)] mod name { ... }` blocks and `//` comments."""
    src = re.sub(r"//[^\n]*", "", src)
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", src):
        if m.start() < i:
            continue
        out.append(src[i : m.start()])
        depth, j = 1, m.end()
        while depth and j < len(src):
            c = src[j]
            if c == '"':  # skip a string literal (with its escapes)
                j += 1
                while j < len(src) and src[j] != '"':
                    j += 2 if src[j] == "\\" else 1
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            j += 1
        i = j
    out.append(src[i:])
    return "".join(out)


def units() -> dict[str, list[Path]]:
    """Each top-level module -> its files."""
    found: dict[str, list[Path]] = {}
    for f in sorted(RUST.rglob("*.rs")):
        parts = f.relative_to(RUST).parts
        if parts[0] in SKIPPED or parts == ("lib.rs",):
            continue
        found.setdefault(parts[0].removesuffix(".rs"), []).append(f)
    return found


def graph() -> dict[str, set[str]]:
    """unit -> the units it names."""
    known = units()
    edges: dict[str, set[str]] = {u: set() for u in known}
    for unit, files in known.items():
        for f in files:
            src = without_unit_tests(f.read_text())
            for m in re.finditer(r"crate::(\w+)(?:::(\w+))?", src):
                target = m.group(2) if m.group(1) in GROUPS else m.group(1)
                if target in known and target != unit:
                    edges[unit].add(target)
    return edges


def circles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected parts of more than one unit (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[set[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                part = set()
                while True:
                    w = stack.pop()
                    on.discard(w)
                    part.add(w)
                    if w == v:
                        break
                if len(part) > 1:
                    found.append(part)
    return found


def test_the_graph_sees_the_crate() -> None:
    edges = graph()
    assert {"value", "reader", "analyzer", "eval", "builtins", "format", "ir"} <= edges.keys()
    assert "value" in edges["eval"] and "reader" in edges["analyzer"]


def test_the_only_circle_is_the_interpreter() -> None:
    assert circles(graph()) == [{"eval", "builtins"}]


def test_the_value_model_is_a_ground_floor() -> None:
    edges = graph()
    assert not edges["value"] & {"builtins", "eval", "ir", "format", "analyzer", "reader"}


def test_the_reader_stands_below_the_analyzer_and_the_hints_read_plain_data() -> None:
    edges = graph()
    assert "analyzer" not in edges["reader"]
    assert "reader" not in edges["meant"] and "reader" not in edges["hints"]


def test_a_circle_is_found() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(edges) == [{"a", "b", "c"}]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_unit_tests_and_comments_are_not_edges() -> None:
    src = (
        "use crate::x;\n// crate::y\n#[cfg(test)]\nmod tests {\n"
        '    fn f() { let s = "}"; crate::z(); }\n}\nuse crate::w;\n'
    )
    kept = without_unit_tests(src)
    assert "crate::x" in kept and "crate::w" in kept
    assert "crate::y" not in kept and "crate::z" not in kept
