"""Whether a run belongs to the agent resuming it: :func:`check_resumable` compares the stored
mission, tools and data with the resuming agent's, the data by :func:`data_fingerprint`."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from ptc.step import RunContext

from .errors import RunMismatchError


def data_fingerprint(data: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of a run's data in a canonical form, the same in every process for equal
    data: map keys and set members are sorted, so neither insertion order nor Python's hash
    randomization changes it. JSON-shaped data (sets too) is encoded by the C JSON encoder
    (map keys compared as text); other data (keys that are not text, numbers or booleans, or
    of mixed types, data nested past what that encoder recurses into) by a walk that hashes
    each map, set and list from its members' encodings. Kept by runs that are checkpointed or
    resumed (it reads all the data once)."""
    try:
        text = _json_text(data)
    except (TypeError, ValueError, RecursionError):
        return "sha256:" + hashlib.sha256(b"w" + _walked(data)).hexdigest()
    return "sha256:" + hashlib.sha256(b"j" + text.encode("utf-8", "surrogatepass")).hexdigest()


def _json_text(v: Any) -> str:
    return json.dumps(
        v,
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        allow_nan=True,
        default=_sorted_set,
    )


def _sorted_set(v: Any) -> Any:
    """A set for the JSON encoder: its members sorted (strings or integers as they are, other
    members by their JSON text), under a tag that says which."""
    if isinstance(v, set | frozenset):
        if all(type(x) is str for x in v):
            return {"$set:str": sorted(v)}
        if all(type(x) is int for x in v):
            return {"$set:int": sorted(v)}
        return {"$set": sorted(_json_text(x) for x in v)}
    raise TypeError(f"{type(v).__name__} is not data")


def _walked(root: Any) -> bytes:
    """The canonical encoding of ``root``: a plain value's JSON text, or ``#`` and the SHA-256
    of a collection's kind and its members' encodings, each length-prefixed (a set's sorted, a
    map's entries sorted), so equal data encodes alike. Iterative: any depth, and each member
    is encoded once, whatever its depth."""
    done: list[bytes] = []  # encodings of finished values, in order
    todo: list[tuple[Any, int]] = [(root, -1)]  # (value, -1) to start, (value, n) to finish
    while todo:
        v, n = todo.pop()
        if n < 0:
            if v is None or isinstance(v, bool | int | float | str):
                done.append(json.dumps(v, ensure_ascii=False).encode("utf-8", "surrogatepass"))
                continue
            if isinstance(v, Mapping):
                members = [x for kv in v.items() for x in kv]
            elif isinstance(v, list | tuple | set | frozenset):
                members = list(v)
            else:  # not data a Session accepts; kept distinct by its type
                done.append(f"?{type(v).__qualname__}:{v!r}".encode("utf-8", "surrogatepass"))
                continue
            todo.append((v, len(members)))
            todo.extend((x, -1) for x in reversed(members))
            continue
        parts = done[len(done) - n :]
        del done[len(done) - n :]
        framed = [len(p).to_bytes(8, "big") + p for p in parts]
        if isinstance(v, Mapping):
            entries = zip(framed[::2], framed[1::2], strict=True)
            kind, framed = b"M", sorted(k + x for k, x in entries)
        elif isinstance(v, set | frozenset):
            kind, framed = b"S", sorted(framed)
        else:
            kind = b"L"
        done.append(b"#" + hashlib.sha256(kind + b"".join(framed)).digest())
    return done[0]


def check_resumable(stored: RunContext, resuming: RunContext, run_id: str | None) -> None:
    """:class:`RunMismatchError` unless the run belongs to the resuming agent: the same mission
    (the prompt with its placeholders filled), the same tools (names and signatures) and the
    same data. Data is compared by :func:`data_fingerprint`; a run stored without one (saved
    before fingerprints existed, or a Step of a run that had no checkpoint) is compared by its
    data keys and their type labels, which is all it holds."""
    if stored.mission != resuming.mission:
        raise RunMismatchError("mission", stored.mission, resuming.mission, run_id)
    tools_stored, tools_now = _tools(stored), _tools(resuming)
    if tools_stored != tools_now:
        raise RunMismatchError("tools", tools_stored, tools_now, run_id)
    if stored.data_fingerprint is not None and resuming.data_fingerprint is not None:
        if stored.data_fingerprint != resuming.data_fingerprint:
            raise RunMismatchError("data", _data(stored, True), _data(resuming, True), run_id)
    elif _data(stored, False) != _data(resuming, False):
        raise RunMismatchError("data", _data(stored, False), _data(resuming, False), run_id)


def _tools(context: RunContext) -> list[str]:
    return sorted(f"{t.name} {t.signature}" for t in context.tools)


def _data(context: RunContext, fingerprint: bool) -> dict[str, Any]:
    if fingerprint:
        keys = sorted(e.name for e in context.data)
        return {"keys": keys, "fingerprint": context.data_fingerprint}
    return {"keys and types": sorted(f"{e.name} {e.type}" for e in context.data)}
