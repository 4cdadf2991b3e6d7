"""Signatures: the small type language shown to the LLM and used to check returned values.

Grammar (commas are optional whitespace)::

    signature := params "->" type | type
    params    := "(" [name type {"," name type}] ")"
    type      := base ["?"]
    base      := ":string" | ":int" | ":float" | ":number" | ":bool" | ":keyword" | ":map"
               | ":list" | ":set" | ":any" | ":nil" | "[" type "]" | "{" {name type} "}"

Examples: ``(category :string) -> :string``, ``[{name :string, price :float}]``, ``:int?``.
A trailing ``?`` makes a type (or a map field) optional: nil or a missing key is accepted.
Tool entries in the ``tool/`` section are rendered from these.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ptc.errors import PtcError

_ALIASES = {
    "string": "string",
    "str": "string",
    "int": "int",
    "integer": "int",
    "float": "float",
    "double": "float",
    "number": "number",
    "bool": "bool",
    "boolean": "bool",
    "keyword": "keyword",
    "map": "map",
    "list": "list",
    "vector": "list",
    "set": "set",
    "any": "any",
    "nil": "nil",
}


class SignatureError(PtcError, ValueError):
    """A signature string could not be parsed."""


@dataclass(frozen=True)
class SigType:
    """One type of the signature language."""

    kind: str  # a primitive name, "list_of" or "fields"
    item: SigType | None = None
    fields: tuple[tuple[str, SigType], ...] = ()
    optional: bool = False

    def __str__(self) -> str:
        if self.kind == "list_of":
            text = f"[{self.item}]"
        elif self.kind == "fields":
            text = "{" + ", ".join(f"{k} {t}" for k, t in self.fields) + "}"
        else:
            text = ":" + self.kind
        return text + ("?" if self.optional else "")


ANY = SigType("any")


@dataclass(frozen=True)
class Param:
    name: str
    type: SigType

    def __str__(self) -> str:
        return f"{self.name} {self.type}"


@dataclass(frozen=True)
class Signature:
    """A parsed signature: optional parameters and a return type."""

    params: tuple[Param, ...] | None
    returns: SigType

    def __str__(self) -> str:
        if self.params is None:
            return str(self.returns)
        return "(" + ", ".join(str(p) for p in self.params) + f") -> {self.returns}"


_TOKEN = re.compile(r"\s*(->|[()\[\]{}?]|:?[A-Za-z_][\w\-.!*+<>=/]*)")


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    cleaned = text.replace(",", " ")
    while pos < len(cleaned):
        if cleaned[pos:].strip() == "":
            break
        m = _TOKEN.match(cleaned, pos)
        if not m:
            raise SignatureError(f"unexpected text in signature {text!r} at {pos}")
        tokens.append(m.group(1))
        pos = m.end()
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            want = expected or "more input"
            raise SignatureError(f"expected {want} in signature {self.text!r}, got {tok!r}")
        self.pos += 1
        return tok

    def signature(self) -> Signature:
        params: tuple[Param, ...] | None = None
        if self.peek() == "(":
            self.take("(")
            collected = []
            while self.peek() != ")":
                name = self.take().lstrip(":")
                collected.append(Param(name, self.type()))
            self.take(")")
            self.take("->")
            params = tuple(collected)
        returns = self.type()
        if self.peek() is not None:
            raise SignatureError(f"unexpected {self.peek()!r} in signature {self.text!r}")
        return Signature(params, returns)

    def type(self) -> SigType:
        tok = self.take()
        if tok == "[":
            base = SigType("list_of", item=self.type())
            self.take("]")
        elif tok == "{":
            fields = []
            while self.peek() != "}":
                name = self.take().lstrip(":")
                fields.append((name, self.type()))
            self.take("}")
            base = SigType("fields", fields=tuple(fields))
        elif tok.startswith(":"):
            name = tok[1:]
            optional = name.endswith("?")
            name = name.rstrip("?")
            if name not in _ALIASES:
                raise SignatureError(f"unknown type :{name} in signature {self.text!r}")
            base = SigType(_ALIASES[name], optional=optional)
        else:
            raise SignatureError(f"expected a type in signature {self.text!r}, got {tok!r}")
        if self.peek() == "?":
            self.take("?")
            base = SigType(base.kind, base.item, base.fields, optional=True)
        return base


def parse_signature(text: str) -> Signature:
    """Parse ``(a :int, b :string) -> [:int]`` or a bare type such as ``{total :float}``."""
    return _Parser(text).signature()


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"


def is_record_class(obj: Any) -> bool:
    """A Pydantic model class, a dataclass (the class) or a ``TypedDict``: the classes a
    ``signature=`` may be, whose fields make a map type."""
    if not isinstance(obj, type):
        return False
    is_model = hasattr(obj, "model_validate") and hasattr(obj, "model_fields")
    return is_model or dataclasses.is_dataclass(obj) or typing.is_typeddict(obj)


def signature_of(spec: Any) -> tuple[Signature, type | None]:
    """What ``SubAgent(signature=spec)`` means: a signature string parsed, or a Pydantic model,
    dataclass or ``TypedDict`` class, whose fields are the return type (a map) and which is
    returned too, to validate the returned value with (:func:`check_against`). Raises
    ``TypeError`` for anything else, ``ValueError`` (:class:`SignatureError`) for a string
    that is not a signature."""
    if isinstance(spec, str):
        if not spec.strip():
            raise SignatureError(
                "signature is empty: pass a type such as '{name :string}' or"
                " '(topic :string) -> :string', or leave it out"
            )
        return parse_signature(spec), None
    if is_record_class(spec):
        return Signature(None, type_from_hint(spec)), spec
    forms = (
        "a signature string such as '{name :string, total :float}' or '(topic :string) ->"
        " :string', a Pydantic model class, a dataclass or a TypedDict"
    )
    if is_record_class(type(spec)):
        raise TypeError(
            f"signature takes the class, not an instance of it: pass {type(spec).__name__},"
            f" got {_shown(spec)}; signature is {forms}"
        )
    raise TypeError(f"signature must be {forms}, got {type(spec).__name__} {_shown(spec)}")


def check_against(value: Any, cls: type) -> str | None:
    """None when ``value`` (a program's data: a map whose keys may be keywords, written
    ``zip-code`` or ``zip_code``) makes an instance of ``cls`` (a Pydantic model, a dataclass or
    a ``TypedDict``: its own validation runs), else what is wrong, naming where."""
    from ptc.tools.rich_types import ToolValueError, convert_in

    try:
        convert_in(value, cls, "value")
    except ToolValueError as exc:
        return str(exc)
    except Exception as exc:  # the class's own check (a dataclass's __post_init__) refused it
        return f"value: {cls.__name__} refused it: {type(exc).__name__}: {exc}"
    return None


# --- deriving a signature from Python type hints -------------------------------------------

_PY_PRIMS: dict[Any, str] = {
    str: "string",
    int: "int",
    float: "float",
    bool: "bool",
    dict: "map",
    list: "list",
    tuple: "list",
    set: "set",
    frozenset: "set",
    type(None): "nil",
}


def type_from_hint(hint: Any) -> SigType:
    """Map a Python annotation to a signature type (unknown shapes become ``:any``)."""
    if hint is inspect.Parameter.empty or hint is Any:
        return ANY
    if hint is None:
        return SigType("nil")
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        inner = type_from_hint(rest[0]) if len(rest) == 1 else ANY
        if len(rest) < len(args):
            return SigType(inner.kind, inner.item, inner.fields, optional=True)
        return inner
    if origin is typing.Literal and args:
        return type_from_hint(type(args[0]))
    if origin in (list, tuple, Sequence):
        if args and origin is not tuple:
            return SigType("list_of", item=type_from_hint(args[0]))
        return SigType("list")
    if origin in (dict, Mapping):
        return SigType("map")
    if origin in (set, frozenset):
        return SigType("set")
    if isinstance(hint, type) and typing.is_typeddict(hint):
        hints = typing.get_type_hints(hint)
        optional: frozenset[str] = getattr(hint, "__optional_keys__", frozenset())
        return SigType(
            "fields",
            fields=tuple(
                (k, _optional(type_from_hint(v), k in optional)) for k, v in hints.items()
            ),
        )
    if isinstance(hint, type) and _record_fields(hint) is not None:
        return SigType("fields", fields=_record_fields(hint))  # type: ignore[arg-type]
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        values = [m.value for m in hint]
        if values and all(isinstance(v, str) for v in values):
            return SigType("string")
        if values and all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            return SigType("int")
        return ANY
    if isinstance(hint, type) and issubclass(hint, datetime.date):
        return SigType("string")  # ISO text in, ISO text out
    if hint in _PY_PRIMS:
        return SigType(_PY_PRIMS[hint])
    if isinstance(hint, type) and issubclass(hint, Mapping):
        return SigType("map")
    return ANY


def _optional(t: SigType, optional: bool = True) -> SigType:
    if not optional or t.optional:
        return t
    return SigType(t.kind, t.item, t.fields, optional=True)


def _record_fields(cls: type) -> tuple[tuple[str, SigType], ...] | None:
    """The fields of a Pydantic model or a dataclass (with a default: optional), named as
    the data the tool returns names them (a program may write `:zip-code` or `:zip_code` in
    arguments; results keep the Python names)."""
    model_fields = getattr(cls, "model_fields", None)
    if isinstance(model_fields, dict) and hasattr(cls, "model_validate"):
        return tuple(
            (name, _optional(type_from_hint(f.annotation), not f.is_required()))
            for name, f in model_fields.items()
        )
    if dataclasses.is_dataclass(cls):
        hints = typing.get_type_hints(cls)
        return tuple(
            (
                f.name,
                _optional(
                    type_from_hint(hints.get(f.name, Any)),
                    f.default is not dataclasses.MISSING
                    or f.default_factory is not dataclasses.MISSING,
                ),
            )
            for f in dataclasses.fields(cls)
            if f.init
        )
    return None


def lisp_name(name: str) -> str:
    """Python identifiers are shown the way the LLM writes them: ``zip_code`` -> ``zip-code``."""
    return name.replace("_", "-")


def signature_from_callable(fn: Callable[..., Any]) -> Signature:
    """Build a signature from a callable's parameters and type hints."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return Signature((), ANY)
    from ptc.tools.rich_types import type_hints

    hints = type_hints(fn)
    params = []
    for p in sig.parameters.values():
        hint = hints.get(p.name, p.annotation)
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            # `(tool/f a & more)`: the rest of the arguments, each of the annotated type
            item = type_from_hint(hint)
            params.append(Param("& " + lisp_name(p.name), SigType("list_of", item=item)))
            continue
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            params.append(Param(lisp_name(p.name), SigType("map", optional=True)))
            continue
        t = type_from_hint(hint)
        if p.default is not inspect.Parameter.empty and not t.optional:
            t = SigType(t.kind, t.item, t.fields, optional=True)
        params.append(Param(lisp_name(p.name), t))
    returns = type_from_hint(hints.get("return", sig.return_annotation))
    return Signature(tuple(params), returns)


def first_doc_line(fn: Any) -> str | None:
    doc = inspect.getdoc(fn)
    if not doc:
        return None
    line = doc.strip().splitlines()[0].strip()
    return line or None


# --- validating values ------------------------------------------------------------------


def _describe(value: Any) -> str:
    if value is None:
        return "nil"
    return type(value).__name__


def check_value(value: Any, expected: SigType, path: str = "") -> str | None:
    """Return None when ``value`` conforms to ``expected``, else a message naming the path."""
    where = path or "value"
    if value is None:
        if expected.optional or expected.kind in ("any", "nil"):
            return None
        return f"{where}: expected {expected}, got nil"
    kind = expected.kind
    ok = True
    if kind == "any":
        return None
    if kind == "nil":
        ok = False
    elif kind == "string":
        ok = isinstance(value, str) and type(value).__name__ != "Keyword"
    elif kind == "keyword":
        ok = isinstance(value, str)
    elif kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind in ("float", "number"):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif kind == "bool":
        ok = isinstance(value, bool)
    elif kind == "map":
        ok = isinstance(value, Mapping)
    elif kind == "list":
        ok = isinstance(value, list | tuple)
    elif kind == "set":
        ok = isinstance(value, set | frozenset)
    elif kind == "list_of":
        if not isinstance(value, list | tuple):
            ok = False
        else:
            assert expected.item is not None
            for i, item in enumerate(value):
                problem = check_value(item, expected.item, f"{path}[{i}]")
                if problem:
                    return problem
            return None
    elif kind == "fields":
        if not isinstance(value, Mapping):
            ok = False
        else:
            for name, ftype in expected.fields:
                sub = f"{path}.{name}" if path else name
                if name in value:
                    problem = check_value(value[name], ftype, sub)
                    if problem:
                        return problem
                elif not ftype.optional:
                    return f"{sub}: missing key :{name}"
            return None
    if ok:
        return None
    return f"{where}: expected {expected}, got {_describe(value)}"
