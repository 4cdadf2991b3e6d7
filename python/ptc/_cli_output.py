"""How the ``ptc`` command line shows a run: its value as the core prints it, its error
with type, position and hint, its warnings; or, with ``--json``, one JSON document.

With ``--json`` stdout is one JSON document, whatever the program printed and however it
ended: ``{"ok", "value", "printed", "error"}`` (docs/CLI.md). The value is in this encoding:
maps with string or keyword keys are objects (a keyword key loses its colon); a map with
other keys is an object whose keys are those keys printed as PTC-Lisp (``{"1": ...,
"[1 2]": ...}``); sets and vectors are arrays; ``NaN`` and the infinities are the strings
``"##NaN"``, ``"##Inf"`` and ``"##-Inf"`` (their PTC-Lisp spelling); dates and datetimes are
ISO strings. A map whose keys would not all be distinct JSON keys (``{1 :a "1" :b}``: both
are ``"1"``) is never printed with one entry lost: the document's error is a ``json_error``
naming the two keys and where the map is, and ``ptc`` exits 1.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from .errors import LispError, PtcError

EX_OK, EX_ERROR, EX_FAIL = 0, 1, 2


class JsonKeysCollide(PtcError, ValueError):
    """A map whose keys are not all distinct once written as JSON object keys (text): ``--json``
    refuses it rather than keep one entry of each colliding pair."""


#: Characters of a key (in PTC-Lisp syntax) that the refusal shows.
_KEY_SHOWN = 60


def _key_text(key: Any) -> str:
    """A map key as a JSON object key: a str as it is, anything else in PTC-Lisp syntax."""
    from . import to_clojure

    return key if isinstance(key, str) else to_clojure(key)[0]


def cut_text(text: str) -> str:
    return text if len(text) <= _KEY_SHOWN else text[: _KEY_SHOWN - 3] + "..."


def _shown(key: Any) -> str:
    from . import to_clojure

    return cut_text(to_clojure(key)[0])


def _scalar(value: Any) -> tuple[bool, Any]:
    """``(True, value as JSON)`` for a value that holds no other, else ``(False, None)``."""
    if isinstance(value, float):
        if math.isnan(value):
            return True, "##NaN"
        if math.isinf(value):
            return True, "##Inf" if value > 0 else "##-Inf"
        return True, value
    if value is None or isinstance(value, str | int | bool):
        return True, value
    if isinstance(value, Mapping | list | tuple | set | frozenset):
        return False, None
    if isinstance(value, dt.date):
        return True, value.isoformat()
    return True, str(value)


class _Open:
    """A map or a collection being written: its items left, what they go into, the JSON keys
    written so far (a map's, with the key each came from), and where it is (for an error)."""

    __slots__ = ("at", "items", "keys", "out", "parent")

    def __init__(self, value: Any, parent: _Open | None, at: Any) -> None:
        self.parent, self.at = parent, at
        self.items: Iterator[Any]
        self.out: Any  # a dict for a map, else a list
        self.keys: dict[str, Any] | None
        if isinstance(value, Mapping):
            self.items, self.out, self.keys = iter(value.items()), {}, {}
        else:
            self.items, self.out, self.keys = iter(value), [], None

    def path(self) -> list[Any]:
        """The JSON keys and indexes from the value's top to here."""
        steps: list[Any] = []
        frame: _Open | None = self
        while frame is not None and frame.parent is not None:
            steps.append(frame.at)
            frame = frame.parent
        return steps[::-1]


def _collision(frame: _Open, first: Any, second: Any, text: str) -> JsonKeysCollide:
    steps = frame.path()
    where = f" at {json.dumps(steps, ensure_ascii=False)}" if steps else ""
    key = cut_text(json.dumps(text, ensure_ascii=False))
    return JsonKeysCollide(
        f"--json cannot print the value: the map{where} has the keys {_shown(first)} and "
        f"{_shown(second)}, which are both the JSON key {key} (one entry would be lost)"
    )


def json_safe(value: Any) -> Any:
    """``value`` in the encoding ``--json`` documents (see the module docstring). A map whose
    keys do not all become distinct JSON keys raises ``JsonKeysCollide`` naming two of them
    and where the map is. Walked with a stack of its own, so any depth a run returns is fine."""
    done, out = _scalar(value)
    if done:
        return out
    top = _Open(value, None, None)
    stack = [top]
    while stack:
        frame = stack[-1]
        item: Any = next(frame.items, _END)
        if item is _END:
            stack.pop()
            continue
        if frame.keys is not None:
            key, child = item
            text = _key_text(key)
            if text in frame.keys:
                raise _collision(frame, frame.keys[text], key, text)
            frame.keys[text] = key
            at: Any = text
        else:
            child, at = item, len(frame.out)
        done, converted = _scalar(child)
        if not done:
            opened = _Open(child, frame, at)
            converted = opened.out
            stack.append(opened)
        if frame.keys is not None:
            frame.out[at] = converted
        else:
            frame.out.append(converted)
    return top.out


_END = object()


#: What a ``json_error`` suggests instead.
_JSON_HINT = (
    "print it without --json, or give the map's keys one type (all strings, or all keywords)"
)


def one_line(e: BaseException) -> str:
    return " ".join(str(e).split())


def error_text(error: Mapping[str, Any]) -> str:
    """An error (``LispError.to_dict()``, or ``--json``'s error) for a person:
    ``Error [type]: message (line L, column C)``, and its hint on the next line."""
    line, column = error.get("line"), error.get("column")
    where = f" (line {line}, column {column})" if line is not None else ""
    text = f"Error [{error['type']}]: {error['message']}{where}"
    if error.get("hint"):
        text += f"\nHint: {error['hint']}"
    return text


def core_text(result: Any, limit: int | None = None, printable_limit: int | None = None) -> str:
    """A run's value as the core prints it (``Result.preview``; no limit by default): what
    the program returned, not its Python conversion (which shows ``{"a" 1}`` as ``{:a 1}``)."""
    # map entries whose key starts with "_" are shown: they are hidden only from the LLM
    return str(result.preview(limit, printable_limit, hide_private=False))


def _error_json(
    type_: str, message: str, hint: str | None = None, *, value: Any = None, **where: Any
) -> dict[str, Any]:
    return {
        "type": type_,
        "message": message,
        "hint": hint,
        "line": where.get("line"),
        "column": where.get("column"),
        "limit": where.get("limit"),
        "value": value,
    }


def _as_json(result: Any) -> tuple[Any, Any, dict[str, Any] | None]:
    """``(python, encoded, None)``: the run's value converted, and encoded for ``--json``; or
    ``(None, None, error)``, the ``json_error`` saying why it cannot be (a map whose keys would
    merge, or a value Python cannot hold)."""
    try:
        python = result.value
        return python, json_safe(python), None
    except JsonKeysCollide as e:
        return None, None, _error_json("json_error", str(e), _JSON_HINT)
    except LispError as e:  # converting it: keys equal in Python ("a" and :a), a limit, ...
        message = f"--json cannot print the value: {e.message}"
        return None, None, _error_json("json_error", message, _JSON_HINT, limit=e.limit)


def show(result: Any, as_json: bool) -> int:
    """What a run printed and how it ended, on stdout (errors and warnings on stderr); the
    exit code."""
    for warning in result.warnings:  # a data/ name not in the input: nil, but likely a typo
        print(f"warning: {warning}", file=sys.stderr)
    if as_json:
        return _show_json(result)
    for line in result.prints:
        print(line)
    if result.error is not None:
        print(error_text(result.error.to_dict()), file=sys.stderr)
        return EX_ERROR
    try:
        text = core_text(result)
    except LispError as e:  # printing it exceeded a limit of the run
        print(error_text(e.to_dict()), file=sys.stderr)
        return EX_ERROR
    print(("failed: " if result.failed else "") + text)
    return EX_FAIL if result.failed else EX_OK


def _show_json(result: Any) -> int:
    """``--json``: stdout is exactly one JSON document, ``{"ok", "value", "printed",
    "error"}``, however the run ended (docs/CLI.md); the error also goes to stderr."""
    error: dict[str, Any] | None = None
    value: Any = None
    if result.error is not None:
        e = result.error
        error = _error_json(e.type, e.message, e.hint, line=e.line, column=e.column, limit=e.limit)
        code = EX_ERROR
    elif result.failed:  # the reason: as text in the message, as JSON in the error's value
        raw, reason, _ = _as_json(result)
        message = raw if type(raw) is str else core_text(result)
        error = _error_json("fail", message, value=reason)
        code = EX_FAIL
    else:
        _, value, error = _as_json(result)
        code = EX_OK if error is None else EX_ERROR
    doc = {"ok": error is None, "value": value, "printed": list(result.prints), "error": error}
    print(json.dumps(doc, ensure_ascii=False, allow_nan=False))
    if code == EX_ERROR and error is not None:
        print(error_text(error), file=sys.stderr)
    return code
