"""Runs that stop at a tool call and go on later: decisions, continuations, gates.

A tool declared ``approval=True`` is not called when a program reaches it: the run stops there
(``Result.outcome == "pending"``, ``Result.pending``), nothing after it is evaluated and nothing
is committed. A ``deferred=True`` tool is never called by ptc: the host answers it. The host
decides each :class:`PendingCall` — ``True`` (call it now), :class:`Reject` or :class:`Answer`
— and continues with ``Session.resume``, which runs the program again answering every call
that already happened from the record: no tool is called twice, and printed output,
definitions and the value are those of a run that never stopped.

A :class:`Continuation` holds what a resume needs — the program, its limits, the fingerprint of
the state it started from, the record of its calls and clock readings, and the pending calls —
as JSON (no pickle, no code, no heap), sealed by a SHA-256 checksum or, with a key, an
HMAC-SHA256: a checksum catches damage, only a key catches tampering.
"""

from __future__ import annotations

import hashlib
import hmac
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from . import _core
from .errors import PtcError

PendingCall = _core.PendingCall

FORMAT = "ptc-continuation"
#: The continuation format written by this version; others are refused on load.
VERSION = 1


class ContinuationError(PtcError, ValueError):
    """A continuation that cannot be resumed: damaged, truncated, tampered with, of another
    format version, or made in another state (other data or definitions) than this Session's.
    ``reason`` says which."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Reject:
    """A decision: do not call the tool; the program gets a ``rejected`` error with ``reason``
    at that call (the LLM sees the reason)."""

    reason: str = "rejected by the host"

    def __post_init__(self) -> None:
        if not isinstance(self.reason, str) or not self.reason.strip():
            raise ValueError(f"Reject(reason) takes a non-empty str, got {self.reason!r}")


@dataclass(frozen=True)
class Answer:
    """A decision: do not call the tool; ``value`` is what the call returns (a deferred tool's
    answer from the host)."""

    value: Any


Decision = bool | Reject | Answer
#: A policy: decides a pending call (True: call it, False or Reject: reject it, Answer: its
#: value) or returns None to ask (the run stops there). May be ``async``.
Policy = Callable[[PendingCall], Any]


def gate_of(
    policy: Policy | None,
    deferred: frozenset[str],
    resolve: Callable[[Any], Any],
    plan: _Plan | None = None,
) -> Callable[[PendingCall], Any] | None:
    """The gate the core calls for each call of an approval or deferred tool that its record
    does not settle: the approved ``plan`` first (a call it covers runs), then ``policy``.
    Returns None (wait), True (call), ``("reject", reason)`` or ``("answer", value)``."""
    if policy is None and plan is None:
        return None
    covers = _PlanCover(plan) if plan is not None else None

    def gate(call: PendingCall) -> Any:
        if covers is not None and call.tool not in deferred and covers(call):
            return True
        if policy is None:
            return None
        out = policy(call)
        if inspect.isawaitable(out):
            out = resolve(out)
        return _normalized(out, call, deferred)

    return gate


def _normalized(out: Any, call: PendingCall, deferred: frozenset[str]) -> Any:
    if out is None:
        return None
    if out is True:
        if call.tool in deferred:
            return None  # a deferred tool is answered, never called: ask
        return True
    if out is False:
        return ("reject", "rejected by the approval policy")
    if isinstance(out, Reject):
        return ("reject", out.reason)
    if isinstance(out, Answer):
        return ("answer", out.value)
    raise TypeError(
        f"an approval policy returns True, False, None, ptc.Reject or ptc.Answer; it returned "
        f"{out!r} for {call.describe()}"
    )


class _Planned(Protocol):
    """A place of an approved plan (a :class:`ptc.PlannedCall`)."""

    @property
    def bound(self) -> int | None: ...
    def covers(self, call: PendingCall) -> bool: ...


class _Plan(Protocol):
    """An approved plan (a :class:`ptc.Plan`, which planning.py makes)."""

    @property
    def calls(self) -> Sequence[_Planned]: ...


class _PlanCover:
    """Whether an approved plan covers a call: a planned place that makes it
    (:meth:`ptc.PlannedCall.covers`) and has not yet made as many calls as its bound."""

    def __init__(self, plan: _Plan) -> None:
        self.calls = list(plan.calls)
        self.used = [0] * len(self.calls)

    def __call__(self, call: PendingCall) -> bool:
        for i, planned in enumerate(self.calls):
            if not planned.covers(call):
                continue
            if planned.bound is not None and self.used[i] >= planned.bound:
                continue
            self.used[i] += 1
            return True
        return False


@dataclass(frozen=True)
class Continuation:
    """Everything needed to continue a pending run, in this process or another with the same
    tools and data: ``Session.resume(continuation, decisions)``. ``to_json()`` /
    ``Continuation.from_json(text)`` carry it as JSON; give both the same ``key`` to seal it
    against tampering (without one, a checksum catches damage only)."""

    program: str
    limits: Mapping[str, int]
    state: str
    calls: tuple[Mapping[str, Any], ...]
    clock: tuple[tuple[str, int], ...]
    pending_records: tuple[Mapping[str, Any], ...]

    @classmethod
    def _of(cls, result: Any) -> Continuation:
        raw = result._suspended()
        return cls(
            raw["program"],
            dict(raw["limits"]),
            raw["state"],
            tuple(raw["calls"]),
            tuple((i, ms) for i, ms in raw["clock"]),
            tuple(raw["pending"]),
        )

    @property
    def pending(self) -> list[PendingCall]:
        """The calls the run stopped at, waiting for decisions."""
        return [
            PendingCall._restore(
                p["id"],
                p["tool"],
                p.get("args"),
                p.get("line"),
                p.get("column"),
                p.get("interrupted", False),
            )
            for p in self.pending_records
        ]

    def _body(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "program": self.program,
            "limits": dict(self.limits),
            "state": self.state,
            "calls": list(self.calls),
            "clock": [list(c) for c in self.clock],
            "pending": list(self.pending_records),
        }

    def to_json(self, key: bytes | str | None = None) -> str:
        """The continuation as JSON text, sealed with an HMAC-SHA256 of ``key`` when given
        (else a SHA-256 checksum)."""
        body = self._body()
        body["seal"] = _seal(_canonical(body), key)
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)

    @classmethod
    def from_json(cls, text: str | bytes, key: bytes | str | None = None) -> Continuation:
        """A continuation read back from :meth:`to_json`'s text; :class:`ContinuationError`
        when it is not one, is damaged or truncated, was sealed with another key (or none
        when ``key`` is given), or is of another format version."""
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ContinuationError(f"not UTF-8 text ({e})") from None
        if not isinstance(text, str):
            raise TypeError(f"from_json takes JSON text, got {type(text).__name__}")
        try:
            body = json.loads(text)
        except RecursionError:
            raise ContinuationError("the JSON is nested too deeply to load") from None
        except ValueError as e:
            raise ContinuationError(f"not valid JSON, or cut short ({e})") from None
        if not isinstance(body, dict) or body.get("format") != FORMAT:
            raise ContinuationError("not a ptc continuation (no 'format': 'ptc-continuation')")
        if body.get("version") != VERSION:
            raise ContinuationError(
                f"continuation format version {body.get('version')!r}; this ptc reads version "
                f"{VERSION} (resume it with the ptc version that wrote it, or start the run again)"
            )
        seal = body.pop("seal", None)
        try:
            expected = _seal(_canonical(body), key if key is not None else None)
        except ValueError as e:  # NaN or Infinity, which JSON (and a continuation) has not
            raise ContinuationError(f"the continuation holds a value JSON has not ({e})") from None
        if not isinstance(seal, dict):
            raise ContinuationError("the continuation has no seal: it was cut or edited")
        if key is None and "hmac-sha256" in seal:
            raise ContinuationError("the continuation is sealed with a key: pass key=")
        if key is not None and "hmac-sha256" not in seal:
            raise ContinuationError(
                "the continuation is not sealed with a key, and a key was given: it may have "
                "been replaced"
            )
        ((alg, want),) = expected.items()
        got = seal.get(alg)
        if not isinstance(got, str) or not hmac.compare_digest(got, want):
            what = "the key does not match, or it was changed" if key else "it was changed"
            raise ContinuationError(f"the continuation's seal does not match: {what}")
        try:
            cont = cls(
                _field(body, "program", str),
                _limits(body.get("limits")),
                _field(body, "state", str),
                tuple(_records(body.get("calls"), "calls")),
                tuple(_clock(body.get("clock"))),
                tuple(_records(body.get("pending"), "pending")),
            )
            # every recorded value must read back, as a resume will read it
            _core._check_tape({"calls": list(cont.calls), "clock": [list(c) for c in cont.clock]})
            for i, p in enumerate(cont.pending_records):
                if not isinstance(p.get("args"), list):
                    raise ValueError(f"pending[{i}].args: expected a list")
            cont.pending  # noqa: B018  (reads each pending call's arguments back)
        except RecursionError:
            raise ContinuationError("the continuation is nested too deeply to read") from None
        except (TypeError, ValueError, OverflowError) as e:
            raise ContinuationError(f"the continuation cannot be read: {e}") from None
        return cont

    def tape(self, decisions: Mapping[str, Decision], deferred: frozenset[str]) -> dict[str, Any]:
        """The record a resume is answered from: the calls, plus an entry for each decision.
        A decision for an id that is not pending, or a ``True`` for a deferred tool, raises
        ``ValueError``."""
        pending = {p["id"]: p for p in self.pending_records}
        # a decision replaces what the record says of its call (a call interrupted by a crash)
        entries = [dict(c) for c in self.calls if c["id"] not in decisions]
        for id_, decision in decisions.items():
            p = pending.get(id_)
            if p is None:
                known = ", ".join(sorted(pending)) or "none"
                raise ValueError(f"no pending call has id {id_!r} (pending: {known})")
            entry: dict[str, Any] = {"id": id_, "tool": p["tool"], "args": p["args"]}
            entry["decision"] = True
            if decision is True:
                if p["tool"] in deferred:
                    raise ValueError(
                        f"tool/{p['tool']} is deferred: ptc never calls it; decide call "
                        f"{id_!r} with ptc.Answer(value) or ptc.Reject(reason)"
                    )
                entry.update(how="approved", approved=True)
            elif decision is False:
                entry.update(how="rejected", rejected="rejected by the host")
            elif isinstance(decision, Reject):
                entry.update(how="rejected", rejected=decision.reason)
            elif isinstance(decision, Answer):
                entry.update(how="answered", result=_core._record_value(decision.value))
            else:
                raise TypeError(
                    f"the decision for {id_!r} is True, False, ptc.Reject(reason) or "
                    f"ptc.Answer(value), got {decision!r}"
                )
            entries.append(entry)
        return {"calls": entries, "clock": [list(c) for c in self.clock]}


def _canonical(body: Mapping[str, Any]) -> bytes:
    return json.dumps(
        body, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    ).encode("ascii")


def _seal(canon: bytes, key: bytes | str | None) -> dict[str, str]:
    if key is None:
        return {"sha256": hashlib.sha256(canon).hexdigest()}
    k = key.encode("utf-8") if isinstance(key, str) else key
    if not isinstance(k, bytes) or not k:
        raise TypeError("key is a non-empty str or bytes")
    return {"hmac-sha256": hmac.new(k, canon, hashlib.sha256).hexdigest()}


def _field(body: Mapping[str, Any], name: str, kind: type) -> Any:
    v = body.get(name)
    if not isinstance(v, kind):
        raise ValueError(f"the continuation's {name!r} is missing or not a {kind.__name__}")
    return v


def _limits(v: Any) -> dict[str, int]:
    if not isinstance(v, dict) or not all(
        isinstance(k, str) and type(n) is int for k, n in v.items()
    ):
        raise ValueError("the continuation's 'limits' is not a mapping of names to integers")
    for name, n in v.items():
        if name not in _core.DEFAULT_LIMITS or n < 0:
            raise ValueError(f"the continuation's limit {name!r} = {n} is not a limit of ptc")
    return v


def _records(v: Any, name: str) -> list[dict[str, Any]]:
    if not isinstance(v, list) or not all(
        isinstance(r, dict) and isinstance(r.get("id"), str) and isinstance(r.get("tool"), str)
        for r in v
    ):
        raise ValueError(f"the continuation's {name!r} is not a list of call records")
    return v


def _clock(v: Any) -> list[tuple[str, int]]:
    if not isinstance(v, list) or not all(
        isinstance(c, list) and len(c) == 2 and isinstance(c[0], str) and type(c[1]) is int
        for c in v
    ):
        raise ValueError("the continuation's 'clock' is not a list of [id, milliseconds]")
    return [(c[0], c[1]) for c in v]
