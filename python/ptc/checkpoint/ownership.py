"""Whether a run belongs to the agent resuming it: :func:`check_resumable` compares the stored
mission, tools and data with the resuming agent's, the data by :func:`data_fingerprint`."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from ptc.step import RunContext

from .errors import RunMismatchError

#: What a fingerprint starts with: the version of its encoding (2), then the hash. A stored
#: fingerprint of another version (version 1 was ``sha256:<hex>``, an encoding in which a map
#: could spell a set) is taken as unknown: its run is compared as one saved without one.
FINGERPRINT_PREFIX = "v2:sha256:"

_SCALARS = frozenset({str, int, float, bool, type(None)})
_TEXT = frozenset({str})
_CONTAINERS = (dict, list, tuple, set, frozenset)


def data_fingerprint(data: Mapping[str, Any]) -> str:
    """``v2:sha256:<hex>`` of a run's data in a canonical form: the same in every process for
    equal data (map keys and set members are sorted, so neither insertion order nor Python's
    hash randomization changes it), and different for data a program tells apart: every kind of
    value is tagged so that no value of another kind encodes the same (a set and a map that
    spells the set's tag, the integer key ``1`` and the string key ``"1"``, a keyword and a
    string). Plain data (text keys, strings, numbers, booleans, None, lists, maps and sets, no
    map of one ``$`` key) is encoded by the C JSON encoder, sets under a ``$set`` tag no map of
    it can have; other data (other keys, keywords, deep data) by a walk that hashes each map,
    set and list from its members' tagged encodings. Kept by runs that are checkpointed or
    resumed (it reads all the data once)."""
    try:  # first: the C encoder refuses data that contains itself, and deep data
        text = _json_text(data)
    except (TypeError, ValueError, RecursionError):
        text = None
    if text is not None and _plain(data):
        digest = hashlib.sha256(b"j" + text.encode("utf-8", "surrogatepass")).hexdigest()
        return FINGERPRINT_PREFIX + digest
    return FINGERPRINT_PREFIX + hashlib.sha256(b"w" + _walked(data)).hexdigest()


def _plain(root: Any) -> bool:
    """Whether the JSON text of ``root`` is injective: maps (``dict``) with text keys only and
    never a single key starting with ``$`` (a set's tag is one), lists, tuples (a program sees
    both as vectors), sets, and scalars of exactly ``str``, ``int``, ``float``, ``bool`` or
    None (not a subclass: a keyword is a ``str``). Iterative; ``root`` is one the JSON encoder
    took, so it does not contain itself."""
    if not isinstance(root, dict):
        return False
    todo: list[Any] = [root]
    while todo:
        v = todo.pop()
        if isinstance(v, dict):
            if not _TEXT.issuperset(map(type, v)):
                return False
            if len(v) == 1 and next(iter(v)).startswith("$"):
                return False
            members: Any = v.values()
        else:
            members = v
        if _SCALARS.issuperset(map(type, members)):
            continue
        for m in members:
            if type(m) in _SCALARS:
                continue
            if not isinstance(m, _CONTAINERS):
                return False
            todo.append(m)
    return True


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
    members by their JSON text), under a tag that says which (no map of plain data has a
    single ``$`` key, so none spells a tag)."""
    if isinstance(v, set | frozenset):
        if all(type(x) is str for x in v):
            return {"$set:str": sorted(v)}
        if all(type(x) is int for x in v):
            return {"$set:int": sorted(v)}
        return {"$set": sorted(_json_text(x) for x in v)}
    raise TypeError(f"{type(v).__name__} is not data")


def _scalar(v: Any) -> bytes | None:
    """A value that is not a collection, tagged by its kind (``n``, ``t``, ``f``, ``i``, ``d``,
    ``s``, ``k`` for a keyword, ``?`` for a type that is not data); None for a collection."""
    if v is None:
        return b"n"
    if isinstance(v, bool):
        return b"t" if v else b"f"
    if isinstance(v, int):  # an IntEnum too: a program sees the integer
        return b"i" + format(int(v), "x").encode()
    if isinstance(v, float):
        return b"d" + float(v).hex().encode()
    if isinstance(v, str):
        kind = b"k" if type(v).__name__ == "Keyword" else b"s"
        return kind + str(v).encode("utf-8", "surrogatepass")
    if isinstance(v, Mapping | list | tuple | set | frozenset):
        return None
    return f"?{type(v).__qualname__}:{v!r}".encode("utf-8", "surrogatepass")


def _walked(root: Any) -> bytes:
    """The canonical encoding of ``root``: a scalar's tagged bytes (:func:`_scalar`), or ``#``
    and the SHA-256 of a collection's kind and its members' encodings, each length-prefixed (a
    set's sorted, a map's entries sorted), so equal data encodes alike and no two kinds alike.
    Iterative: any depth, and each member is encoded once, whatever its depth. A collection
    that contains itself is a ``ValueError`` (a Session refuses such data too)."""
    done: list[bytes] = []  # encodings of finished values, in order
    todo: list[tuple[Any, int]] = [(root, -1)]  # (value, -1) to start, (value, n) to finish
    open_: set[int] = set()  # ids of the collections being encoded (a path from the root)
    while todo:
        v, n = todo.pop()
        if n < 0:
            plain = _scalar(v)
            if plain is not None:
                done.append(plain)
                continue
            if id(v) in open_:
                raise ValueError(f"the data contains itself (a {type(v).__name__} in itself)")
            open_.add(id(v))
            if isinstance(v, Mapping):
                members = [x for kv in v.items() for x in kv]
            else:
                members = list(v)
            todo.append((v, len(members)))
            todo.extend((x, -1) for x in reversed(members))
            continue
        open_.discard(id(v))
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
    before fingerprints existed, or a Step of a run that had no checkpoint), or with one of
    another version (see :data:`FINGERPRINT_PREFIX`), is compared by its data keys and their
    type labels, which is all it holds that can be compared."""
    if stored.mission != resuming.mission:
        raise RunMismatchError("mission", stored.mission, resuming.mission, run_id)
    tools_stored, tools_now = _tools(stored), _tools(resuming)
    if tools_stored != tools_now:
        raise RunMismatchError("tools", tools_stored, tools_now, run_id)
    if _known(stored.data_fingerprint) and _known(resuming.data_fingerprint):
        if stored.data_fingerprint != resuming.data_fingerprint:
            raise RunMismatchError("data", _data(stored, True), _data(resuming, True), run_id)
    elif _data(stored, False) != _data(resuming, False):
        raise RunMismatchError("data", _data(stored, False), _data(resuming, False), run_id)


def _known(fingerprint: str | None) -> bool:
    """A fingerprint of this version's encoding (another version's cannot be compared)."""
    return fingerprint is not None and fingerprint.startswith(FINGERPRINT_PREFIX)


def _tools(context: RunContext) -> list[str]:
    return sorted(f"{t.name} {t.signature}" for t in context.tools)


def _data(context: RunContext, fingerprint: bool) -> dict[str, Any]:
    if fingerprint:
        keys = sorted(e.name for e in context.data)
        return {"keys": keys, "fingerprint": context.data_fingerprint}
    return {"keys and types": sorted(f"{e.name} {e.type}" for e in context.data)}
