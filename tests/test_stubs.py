"""The hand-written stub `python/ptc/_core.pyi` matches the Rust module `ptc._core`, and the
package is marked typed (STYLE 4; ARCHITECTURE "typed (py.typed, stubs for the Rust module)")."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import ptc
import pytest
from ptc import _core

PACKAGE = Path(__file__).parents[1] / "python" / "ptc"
STUB = PACKAGE / "_core.pyi"


def _stub() -> ast.Module:
    return ast.parse(STUB.read_text(encoding="utf-8"), filename=str(STUB))


def _is_stub_only_alias(node: ast.stmt) -> bool:
    """`_Name = tuple[...]`: a private type alias that exists only for the type checker."""
    return (
        isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id.startswith("_")
        and not node.targets[0].id.startswith("__")
    )


def _module_names(tree: ast.Module) -> dict[str, ast.stmt]:
    names: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        elif isinstance(node, ast.Assign) and not _is_stub_only_alias(node):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = node
    return names


def _classes(tree: ast.Module) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}


def _params(fn: ast.FunctionDef) -> list[str]:
    a = fn.args
    names = [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]]
    return [n for n in names if n not in ("self", "cls")]


def test_stub_and_py_typed_exist() -> None:
    """STYLE 4: `python/ptc/_core.pyi` and `python/ptc/py.typed` ship with the package."""
    assert STUB.is_file()
    assert (PACKAGE / "py.typed").is_file()
    # the installed package (editable or built wheel) ships them too
    installed = Path(ptc.__file__).parent
    assert (installed / "_core.pyi").is_file()
    assert (installed / "py.typed").is_file()


def test_every_declared_name_exists() -> None:
    """Every function, class and module variable the stub declares exists on `ptc._core`."""
    missing = [name for name in _module_names(_stub()) if not hasattr(_core, name)]
    assert missing == []


def test_every_declared_method_exists() -> None:
    """Every method the stub declares on a class exists on the runtime class."""
    missing: list[str] = []
    for cname, cls_node in _classes(_stub()).items():
        runtime = getattr(_core, cname)
        for node in cls_node.body:
            if isinstance(node, ast.FunctionDef) and not hasattr(runtime, node.name):
                missing.append(f"{cname}.{node.name}")
    assert missing == []


def test_every_public_runtime_name_is_declared() -> None:
    """Every public name of `ptc._core` (not starting with `__`) is declared in the stub."""
    declared = set(_module_names(_stub()))
    undeclared = sorted(n for n in dir(_core) if not n.startswith("__") and n not in declared)
    assert undeclared == []


def test_every_public_runtime_method_is_declared() -> None:
    """Every public method of a `ptc._core` class is declared in the stub's class."""
    undeclared: list[str] = []
    for cname, cls_node in _classes(_stub()).items():
        declared = {n.name for n in cls_node.body if isinstance(n, ast.FunctionDef)}
        runtime = getattr(_core, cname)
        undeclared += [
            f"{cname}.{n}" for n in dir(runtime) if not n.startswith("_") and n not in declared
        ]
    assert undeclared == []


def _functions() -> list[tuple[str, ast.FunctionDef]]:
    tree = _stub()
    out = [(n.name, n) for n in tree.body if isinstance(n, ast.FunctionDef)]
    for cname, cls_node in _classes(tree).items():
        out += [
            (f"{cname}.{n.name}", n)
            for n in cls_node.body
            if isinstance(n, ast.FunctionDef)
            and not n.name.startswith("__")
            # properties have no call signature to compare
            and not any(isinstance(d, ast.Name) and d.id == "property" for d in n.decorator_list)
        ]
    return out


@pytest.mark.parametrize(("qualname", "node"), _functions(), ids=[q for q, _ in _functions()])
def test_declared_parameter_names_match(qualname: str, node: ast.FunctionDef) -> None:
    """The stub's parameter names are the runtime's (PyO3 exposes `__text_signature__`)."""
    obj: object = _core
    for part in qualname.split("."):
        obj = getattr(obj, part)
    sig = inspect.signature(obj)  # type: ignore[arg-type]
    runtime = [p for p in sig.parameters if p not in ("self", "cls")]
    assert _params(node) == runtime


def test_core_session_constructor_parameters_match() -> None:
    """`CoreSession(data, tools, limits, ...)` is declared (as `__init__`, which makes the core;
    `__new__` takes a subclass's arguments, whatever they are) with the runtime's parameter
    names (the class's text signature)."""
    init = next(
        n
        for n in _classes(_stub())["CoreSession"].body
        if isinstance(n, ast.FunctionDef) and n.name == "__init__"
    )
    assert _params(init) == list(inspect.signature(_core.CoreSession).parameters)


def test_default_limits_cover_every_limit() -> None:
    """`DEFAULT_LIMITS` (declared in the stub) names exactly the fields of `ptc.Limits`."""
    assert set(_core.DEFAULT_LIMITS) == set(ptc.Limits().to_dict())
