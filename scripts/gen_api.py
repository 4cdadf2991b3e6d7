"""Writes docs/API.md, the API reference, from the package itself: every public name of the
public modules with its signature and docstring.

Run after changing a public signature or docstring: `python scripts/gen_api.py`.
tests/test_reference.py fails while the file is out of date (on the Python version CI uses:
signatures render slightly differently across versions).
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
from pathlib import Path
from types import ModuleType
from typing import Any

API_MD = Path(__file__).resolve().parent.parent / "docs" / "API.md"

#: The modules users import, in the order the reference shows them.
MODULES = (
    "ptc",
    "ptc.llm",
    "ptc.checkpoint",
    "ptc.observe",
    "ptc.integrations",
    "ptc.tools",
    "ptc.tools.declare",
    "ptc.tools.rich_types",
    "ptc.tools.signature",
    "ptc.history",
)

_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def public_names(module: ModuleType) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    # a module without __all__: what it defines itself, not what it imports
    return sorted(
        n
        for n, v in vars(module).items()
        if not n.startswith("_")
        and getattr(v, "__module__", module.__name__) == module.__name__
        and (inspect.isclass(v) or inspect.isfunction(v))
    )


def signature(obj: Any) -> str:
    typed = stub_signature(obj)
    if typed is not None:
        return typed
    try:
        text = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"
    return _ADDRESS.sub("", text)


STUB = Path(__file__).resolve().parent.parent / "python" / "ptc" / "_core.pyi"


def stub_signature(obj: Any) -> str | None:
    """A method of a Rust class (`Session.run` is `SessionBase.run`) with the types its stub
    declares: the runtime's own signature has the parameters but no annotations."""
    owner = getattr(obj, "__objclass__", None)
    if owner is None or getattr(owner, "__module__", None) != "ptc._core":
        return None
    for node in _stub().body:
        if isinstance(node, ast.ClassDef) and node.name == owner.__name__:
            for fn in node.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == obj.__name__:
                    return _render(fn)
    return None


@functools.cache
def _stub() -> ast.Module:
    return ast.parse(STUB.read_text(encoding="utf-8"))


def _render(fn: ast.FunctionDef) -> str:
    """A stub function's signature in the form `inspect.signature` gives the package's own
    functions (annotations shown as strings, as under `from __future__ import annotations`)."""

    def param(a: ast.arg, default: ast.expr | None) -> str:
        text = a.arg
        if a.annotation is not None:
            text += f": {ast.unparse(a.annotation)!r}"
        if default is not None:
            text += f" = {ast.unparse(default)}"
        return text

    args = fn.args
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    parts = [param(a, d) for a, d in zip(positional, defaults, strict=True)]
    if args.posonlyargs:
        parts.insert(len(args.posonlyargs), "/")
    if args.vararg is not None:
        parts.append("*" + param(args.vararg, None))
    elif args.kwonlyargs:
        parts.append("*")
    parts += [param(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    if args.kwarg is not None:
        parts.append("**" + param(args.kwarg, None))
    text = f"({', '.join(parts)})"
    if fn.returns is not None:
        text += f" -> {ast.unparse(fn.returns)!r}"
    return text


def doc(obj: Any) -> str:
    text = inspect.getdoc(obj) or ""
    return _ADDRESS.sub("", text).strip()


def quote(text: str) -> str:
    """A docstring as a Markdown block quote (kept verbatim, never read as Markdown headings)."""
    return "\n".join("> " + line if line else ">" for line in text.splitlines())


def members(cls: type, documented: set[str]) -> dict[str, Any]:
    """A class's own members and those of its helper bases (mixins the reference does not
    show on their own); a documented base's members are read under that base."""
    found: dict[str, Any] = {}
    for base in reversed(cls.__mro__):
        helper = base.__module__.startswith("ptc") and base.__name__ not in documented
        if base is cls or helper:
            found.update(vars(base))
    return found


def render_member(owner: str, name: str, obj: Any, documented: set[str]) -> list[str]:
    out: list[str] = []
    if inspect.isclass(obj):
        out.append(f"### class `{owner}.{name}{signature(obj)}`\n")
        if doc(obj):
            out.append(quote(doc(obj)) + "\n")
        for attr, member in sorted(members(obj, documented).items()):
            if attr.startswith("_"):
                continue
            fn = member.__func__ if isinstance(member, (classmethod, staticmethod)) else member
            if isinstance(member, property):
                first = (doc(member).splitlines() or [""])[0]
                out.append(f"- `.{attr}` (property){': ' + first if first else ''}")
            elif inspect.isfunction(fn) or inspect.ismethoddescriptor(fn) or callable(fn):
                if inspect.isclass(fn):
                    continue
                first = (doc(fn).splitlines() or [""])[0]
                out.append(f"- `.{attr}{signature(fn)}`{': ' + first if first else ''}")
        out.append("")
    elif callable(obj):
        out.append(f"### `{owner}.{name}{signature(obj)}`\n")
        if doc(obj):
            out.append(quote(doc(obj)) + "\n")
    else:
        text = _ADDRESS.sub("", repr(obj))
        if len(text) > 120:
            text = text[:117] + "..."
        out.append(f"### `{owner}.{name}` = `{text}`\n")
    return out


def render() -> str:
    out = [
        "# API reference\n",
        "Generated by `scripts/gen_api.py` from the package's own signatures and docstrings: do "
        "not edit. The guides explain how the pieces fit: [README](../README.md), "
        "[GETTING_STARTED](GETTING_STARTED.md), [AGENT](AGENT.md), [HISTORY](HISTORY.md), "
        "[CLI](CLI.md), [ERRORS](ERRORS.md).\n",
    ]
    for name in MODULES:
        module = importlib.import_module(name)
        out.append(f"## `{name}`\n")
        if doc(module):
            out.append(quote(doc(module)) + "\n")
        names = public_names(module)
        for member in names:
            obj = getattr(module, member)
            if inspect.ismodule(obj):
                continue
            out.extend(render_member(name, member, obj, set(names)))
    return "\n".join(out).rstrip() + "\n"


def main() -> None:
    API_MD.write_text(render(), encoding="utf-8")
    print(f"wrote {API_MD}")


if __name__ == "__main__":
    main()
