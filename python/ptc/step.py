"""The outcome of an agent run: result, append-only turns, messages sent, usage (ARC-007, DBG-001).

A Step stores turns, not summaries (DBG-003): the messages of every LLM call are re-derived from the
turns by the run's compression strategy, which is a pure function, so a stored step renders exactly
what the LLM saw.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal, overload

from ptc import _core, _records
from ptc.compression import (
    ChatMessage,
    Compression,
    CompressionStats,
    DataEntry,
    FullHistory,
    RenderOptions,
    SingleUserCoalesced,
    ToolSpec,
    strategy_by_name,
)
from ptc.turn import SuspendedTurn, Turn, TurnError, decode_value, encode_value

FORMAT_VERSION = 1

#: LLM requests a stored Step may count beyond its turns. Each is a request that failed: an
#: outage ends a run with one, and each resume after an outage may add one more. Their message
#: lists are re-derived on load, so a count is checked before anything is rendered from it: a
#: step claiming 10**8 requests is refused, not rendered 10**8 times.
MAX_UNANSWERED_CALLS = 1000

#: A value shown in feedback (LANGUAGE §9.2): items per collection, characters per string.
RESULT_LIMIT, RESULT_PRINTABLE_LIMIT = 10, 512


@dataclass(frozen=True)
class StepError(TurnError):
    """Why a run did not succeed: the fields of a turn's error (a single-shot program's error
    keeps its line and column) plus ``value``.

    ``type`` is a program error type (``parse_error``, ``tool_error``, ...) for single-shot runs, or
    one of ``fail`` (the program called ``(fail reason)``; ``value`` holds the reason),
    ``max_turns_exceeded``, ``llm_error`` and ``validation_error``.
    """

    value: Any = None

    __value_fields__: ClassVar[tuple[str, ...]] = ("value",)

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class Usage(_records.Record):
    """Tokens reported by the LLM (summed over calls) and the last render's compression stats.

    ``llm_calls`` counts LLM *requests*: one per rendered message list, answered or not, so it
    always equals ``len(step.messages)`` (also across :meth:`SubAgent.resume`). ``llm_retries``
    counts the extra attempts the retry policy made within those requests, so the number of
    times the LLM callable was invoked is ``llm_calls + llm_retries`` (:attr:`llm_attempts`).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    llm_calls: int = 0
    llm_retries: int = 0
    compression: CompressionStats | None = None
    #: prompt tokens the provider read from / wrote to its cache (part of ``input_tokens``)
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def llm_attempts(self) -> int:
        """Invocations of the LLM callable: every request plus every retry within one."""
        return self.llm_calls + self.llm_retries

    def add(self, tokens: Mapping[str, int], retries: int = 0) -> Usage:
        """One LLM request (answered, or failed after ``retries`` retries: ``tokens`` empty).
        A provider's counts are clamped to 0..2**53 (a negative or absurd count is not taken
        as given) and sums stop at 2**53, so the Step always loads back."""
        got = _records.counts(tokens)

        def plus(total: int, key: str) -> int:
            return min(total + got.get(key, 0), _records.MAX_COUNT)

        return Usage(
            plus(self.input_tokens, "input_tokens"),
            plus(self.output_tokens, "output_tokens"),
            min(self.llm_calls + 1, _records.MAX_COUNT),
            min(self.llm_retries + max(retries, 0), _records.MAX_COUNT),
            self.compression,
            plus(self.cache_read_tokens, "cache_read_tokens"),
            plus(self.cache_write_tokens, "cache_write_tokens"),
        )

    def with_stats(self, stats: CompressionStats | None) -> Usage:
        return dataclasses.replace(self, compression=stats)

    def to_dict(self) -> dict[str, Any]:
        return {**_records.to_dict(self), "total_tokens": self.total_tokens}


@dataclass(frozen=True)
class RunContext(_records.Record):
    """What stays fixed during a run and is needed to re-render its messages."""

    mission: str
    system_prompt: str
    max_turns: int
    tools: tuple[ToolSpec, ...] = ()
    data: tuple[DataEntry, ...] = ()
    compression: str | None = None  # strategy name; None = disabled (full history)
    compression_opts: Mapping[str, int] = field(default_factory=dict)
    signature: str | None = None
    #: ``sha256:...`` of the run's data (``ptc.checkpoint.data_fingerprint``), kept by runs that
    #: are checkpointed or resumed so a resume can tell the run's data from other data
    data_fingerprint: str | None = None
    #: printed output shown after a turn, in exact o200k tokens (None: the entry limits only)
    output_tokens: int | None = None
    #: a turn's error message shown after it, in exact o200k tokens (its result is rendered
    #: within the same budget when the turn ran, into ``Turn.result_text``)
    result_tokens: int | None = None
    #: the tool/ section's budget in exact o200k tokens, past which tools are listed by name
    #: (None: every tool's line; runs saved before it existed render as they did)
    tool_listing_tokens: int | None = None

    def render_options(self) -> RenderOptions:
        opts: dict[str, Any] = dict(self.compression_opts)
        opts.update(
            mission=self.mission,
            system_prompt=self.system_prompt,
            max_turns=self.max_turns,
            tools=self.tools,
            data=self.data,
        )
        if self.output_tokens is not None:
            opts["output_tokens"] = self.output_tokens
        if self.result_tokens is not None:
            opts["result_tokens"] = self.result_tokens
        if self.tool_listing_tokens is not None:
            opts["tool_listing_tokens"] = self.tool_listing_tokens
        return opts  # type: ignore[return-value]

    def strategy_for_call(self, strategy: Compression | None = None) -> Compression:
        """The strategy a call uses: none for single-shot (SS-001) or when disabled (API-003)."""
        if self.max_turns == 1 or self.compression is None:
            return FullHistory()
        if strategy is not None:
            return strategy
        return strategy_by_name(self.compression)

    def messages_for(
        self, turns: Sequence[Turn], strategy: Compression | None = None
    ) -> tuple[list[ChatMessage], CompressionStats]:
        """Messages for the LLM call that follows ``turns`` (CMP-004: rendered at turn start)."""
        memory = turns[-1].memory if turns else ()
        return self.strategy_for_call(strategy).to_messages(
            tuple(turns), memory, self.render_options()
        )


@dataclass(frozen=True)
class Step:
    """Result of :meth:`SubAgent.run`.

    ``turns`` is the full, append-only record of the run; the number of turns is
    ``len(step.turns)``. ``messages[i]`` is the exact message list of LLM call ``i``.
    """

    ok: bool
    value: Any
    error: StepError | None
    turns: tuple[Turn, ...]
    messages: Sequence[list[ChatMessage]]
    usage: Usage
    context: RunContext
    duration_ms: float = 0.0
    #: the turn that stopped at calls waiting for the host, when the run is pending
    suspended: SuspendedTurn | None = None

    @property
    def outcome(self) -> Literal["value", "fail", "error", "pending", "running"]:
        """``"pending"`` when the run stopped at tool calls waiting for a decision (see
        :attr:`pending`); ``"value"`` (ok), ``"fail"`` (the program's ``(fail ...)``) or
        ``"error"`` when it ended; ``"running"`` for a run saved while it went on (a
        checkpoint's run that has not ended: ``resume`` continues it)."""
        if self.suspended is not None and not self.suspended.in_flight:
            return "pending"
        if self.ok:
            return "value"
        if self.error is not None:
            return "fail" if self.error.type == "fail" else "error"
        return "running"

    @property
    def pending(self) -> list[Any]:
        """The tool calls the run waits on (``ptc.PendingCall``): decide them and continue
        with ``SubAgent.resume(checkpoint, decisions={id: True | ptc.Reject | ptc.Answer})``."""
        return self.suspended.pending if self.suspended is not None else []

    @property
    def prints(self) -> list[str]:
        """All println output of the run, in order."""
        return [p for t in self.turns for p in t.prints]

    # --- debugging views (DBG-004/005) ---------------------------------------------------

    def render(
        self,
        view: Literal["compressed", "full"] = "compressed",
        *,
        include_system: bool = False,
        strategy: Compression | None = None,
    ) -> str:
        """Text for humans. ``compressed``: the history as the compression strategy shows it to
        the LLM (``SingleUserCoalesced`` when the run had compression off). ``full``: every turn
        with its program, output, tool calls, result or error."""
        if view == "full":
            return self._render_full()
        if view != "compressed":
            raise ValueError(f"view must be 'compressed' or 'full', got {view!r}")
        if strategy is None and self.context.compression is None:
            strategy = SingleUserCoalesced()
        if strategy is None:
            strategy = strategy_by_name(self.context.compression)  # type: ignore[arg-type]
        memory = self.turns[-1].memory if self.turns else ()
        messages, _ = strategy.to_messages(self.turns, memory, self.context.render_options())
        return render_messages(messages, include_system=include_system)

    def _render_full(self) -> str:
        # one text of a run, the one `ptc trace` prints: values as the core printed them
        from ptc.trace import to_text

        return to_text(self)

    def to_html(
        self, path: str | os.PathLike[str] | None = None, *, title: str | None = None
    ) -> str:
        """The run as one self-contained HTML page (turns, messages compressed and full side by
        side, a chart of input tokens per call); written to ``path`` when given."""
        from ptc.trace import to_html

        page = to_html(self, title)
        if path is not None:
            Path(path).write_text(page, encoding="utf-8")
        return page

    # --- serialization (DBG-003) ---------------------------------------------------------

    def to_dict(self, *, include_messages: bool = False, timings: bool = True) -> dict[str, Any]:
        """The step as JSON-ready data. ``timings=False`` leaves out the measured durations
        (the run's, each turn's LLM and program time, each tool call's), so two runs of the
        same script compare equal."""
        d: dict[str, Any] = {
            "version": FORMAT_VERSION,
            "ok": self.ok,
            "value": encode_value(self.value),
            "error": self.error.to_dict() if self.error else None,
            "turns": [t.to_dict() for t in self.turns],
            "calls": len(self.messages),
            "usage": self.usage.to_dict(),
            "context": self.context.to_dict(),
            "duration_ms": self.duration_ms,
        }
        if self.suspended is not None:
            d["suspended"] = self.suspended.to_dict()
        if include_messages:
            d["messages"] = [list(m) for m in self.messages]
        if not timings:
            del d["duration_ms"]
            for t in d["turns"]:
                del t["llm_ms"], t["run_ms"]
                for c in t["tool_calls"]:
                    del c["duration_ms"]
        return d

    def to_json(self, *, include_messages: bool = False, indent: int | None = None) -> str:
        """JSON with the turns and run context; messages are re-derived on load unless included
        (needed only for a custom strategy that is not registered). Non-ASCII text is written
        as it is, unless the step holds a lone surrogate (a provider's ``"\\ud800"``), which
        UTF-8 cannot hold: then the text is all ASCII, with ``\\u`` escapes, so it can be
        written to a file and read back the same."""
        return _records.json_text(self.to_dict(include_messages=include_messages), indent=indent)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, strategy: Compression | None = None) -> Step:
        """The Step :meth:`to_dict` wrote. Every field is checked against its type, and counts
        against what the record holds (``calls`` against the turns): ``ValueError`` naming the
        field's path (``step.turns[1].error.type: expected a string, ...``) when one does not."""
        if not isinstance(d, Mapping):
            raise ValueError(f"step: expected an object, got {_records.describe(d)}")
        if d.get("version") != FORMAT_VERSION:
            shown = _records.describe(d.get("version"))
            raise ValueError(f"step.version: expected {FORMAT_VERSION}, got {shown}")
        for key in ("ok", "turns", "context"):
            if key not in d:
                raise ValueError(f"step: missing field {key!r}")
        context = _records.typed(RunContext, d["context"], "step.context")
        turns = _records.typed(tuple[Turn, ...], d["turns"], "step.turns")
        messages = None
        if "messages" in d:
            messages = _messages(d["messages"])
        return cls._assemble(
            context,
            turns,
            _records.typed(int, d.get("calls", len(turns)), "step.calls"),
            _records.typed(Usage, d.get("usage", {}), "step.usage"),
            ok=_records.typed(bool, d["ok"], "step.ok"),
            value=decode_value(d.get("value"), "step.value"),
            error=_records.typed(StepError | None, d.get("error"), "step.error"),
            duration_ms=_records.typed(float, d.get("duration_ms", 0.0), "step.duration_ms"),
            messages=messages,
            strategy=strategy,
            suspended=_records.typed(SuspendedTurn | None, d.get("suspended"), "step.suspended"),
        )

    @classmethod
    def from_json(cls, text: str, *, strategy: Compression | None = None) -> Step:
        """:meth:`from_dict` of JSON text; ``ValueError`` for text that is not JSON (or is
        nested too deeply to parse)."""
        try:
            data = json.loads(text)
        except RecursionError:
            raise ValueError("step: the JSON is nested too deeply to load") from None
        return cls.from_dict(data, strategy=strategy)

    @classmethod
    def _assemble(
        cls,
        context: RunContext,
        turns: tuple[Turn, ...],
        calls: int,
        usage: Usage,
        *,
        ok: bool = False,
        value: Any = None,
        error: StepError | None = None,
        duration_ms: float = 0.0,
        messages: Sequence[list[ChatMessage]] | None = None,
        strategy: Compression | None = None,
        suspended: SuspendedTurn | None = None,
    ) -> Step:
        """A Step from checked parts (a stored step's, or a checkpoint's run so far): turns
        numbered 1, 2, ... in order, ``calls`` within what the turns account for, and the
        message lists re-derived when not given. ``ValueError`` naming the field otherwise."""
        for i, t in enumerate(turns):
            if t.number != i + 1:
                raise ValueError(
                    f"step.turns[{i}].number: expected {i + 1} (turns are numbered from 1 in "
                    f"order), got {t.number}"
                )
        if ok and error is not None:
            raise ValueError("step.error: a step that is ok has no error")
        if suspended is not None:
            if ok or error is not None:
                raise ValueError("step.suspended: a pending step is neither ok nor failed")
            if suspended.number != len(turns) + 1:
                raise ValueError(
                    f"step.suspended.number: expected {len(turns) + 1} (the turn after the "
                    f"last), got {suspended.number}"
                )
        if messages is None:
            # Call i was rendered from the first i turns (CMP-004); rendering is pure (ARC-004).
            # Calls past the last turn failed unanswered; each saw every turn.
            if not len(turns) <= calls <= len(turns) + MAX_UNANSWERED_CALLS:
                raise ValueError(
                    f"step.calls: {_many(calls, 'LLM request')} for {_many(len(turns), 'turn')}; "
                    f"a step makes one request per turn and at most {MAX_UNANSWERED_CALLS} that "
                    "went unanswered"
                )
            try:
                chosen = context.strategy_for_call(strategy)
            except ValueError as e:
                raise ValueError(f"step.context.compression: {e}") from None
            messages = RenderedCalls(context, turns, calls, chosen)
        elif len(messages) < len(turns):
            raise ValueError(
                f"step.messages: {_many(len(messages), 'message list')} for "
                f"{_many(len(turns), 'turn')}; every turn follows an LLM request"
            )
        return cls(
            ok=ok,
            value=value,
            error=error,
            turns=turns,
            messages=messages,
            usage=usage,
            context=context,
            duration_ms=duration_ms,
            suspended=suspended,
        )


class RenderedCalls(Sequence[list[ChatMessage]]):
    """The message lists of a stored run's LLM calls, rendered from its turns when read: call
    ``i`` from the first ``i`` turns (CMP-004; rendering is pure, ARC-004), a call past the last
    turn (one that went unanswered) from all of them, then the lists of ``after`` (calls made
    since, by a resumed run). A loaded Step holds this instead of every list, so loading costs
    what its file holds, not the square of its turns; each read renders anew (a fresh list)."""

    def __init__(
        self,
        context: RunContext,
        turns: tuple[Turn, ...],
        calls: int,
        strategy: Compression,
        after: tuple[list[ChatMessage], ...] = (),
    ) -> None:
        self._context, self._turns, self._calls = context, turns, calls
        self._strategy, self._after = strategy, after

    def extended(self, more: Sequence[list[ChatMessage]]) -> RenderedCalls:
        """These calls followed by ``more``."""
        return RenderedCalls(
            self._context, self._turns, self._calls, self._strategy, self._after + tuple(more)
        )

    def __len__(self) -> int:
        return self._calls + len(self._after)

    @overload
    def __getitem__(self, i: int) -> list[ChatMessage]: ...
    @overload
    def __getitem__(self, i: slice) -> tuple[list[ChatMessage], ...]: ...
    def __getitem__(self, i: int | slice) -> list[ChatMessage] | tuple[list[ChatMessage], ...]:
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"call {i} of {n}")
        i %= n
        if i >= self._calls:
            return list(self._after[i - self._calls])
        return self._context.messages_for(self._turns[:i], self._strategy)[0]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # equal to the tuple of its lists

    def __repr__(self) -> str:
        return f"<{len(self)} LLM calls, rendered from {len(self._turns)} turns when read>"


def joined(
    past: Sequence[list[ChatMessage]], more: Sequence[list[ChatMessage]]
) -> Sequence[list[ChatMessage]]:
    """``past`` calls followed by ``more``, without rendering a stored run's calls."""
    if isinstance(past, RenderedCalls):
        return past.extended(more)
    return tuple(past) + tuple(more)


def run_ending(
    context: RunContext, turns: Sequence[Turn]
) -> tuple[bool, Any, StepError | None] | None:
    """How a run with these turns ended, ``(ok, value, error)``, or None while it goes on:
    the last turn failed (``(fail reason)``), returned a valid value (or was the only turn of
    a single-shot run: SS-001, the last value is the answer), or used the last turn. The loop
    decides by it after every turn, and a checkpoint whose end was never saved (a crash after
    the last turn) is loaded as finished by it."""
    last = turns[-1] if turns else None
    if last is not None and last.failed:
        reason = last.result
        # a reason that is not text reads as the core printed it when the turn ended
        # ({"a" 1} keeps its string key), falling back to a conversion for an older record
        shown = reason if isinstance(reason, str) else last.result_text or _text(reason)
        return False, None, StepError("fail", shown, value=reason)
    if last is not None and last.success and (last.returned or context.max_turns == 1):
        return True, last.result, None
    if len(turns) >= context.max_turns:
        return False, None, out_of_turns(context, turns)
    return None


def out_of_turns(context: RunContext, turns: Sequence[Turn]) -> StepError:
    """The error of a run that used its last turn without an end (a single-shot run's: its
    program's error)."""
    n = context.max_turns
    last = turns[-1] if turns else None
    if n == 1 and last is not None and last.error is not None:
        e = last.error
        return StepError(e.type, e.message, e.hint, e.line, e.column)
    message = f"max_turns ({n}) reached without (return value) or (fail reason)"
    if last is not None and last.error is not None:
        message += f"; last turn failed: {last.error.message}"
    return StepError("max_turns_exceeded", message)


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return _core.to_clojure(value, RESULT_LIMIT, RESULT_PRINTABLE_LIMIT, True)[0]


def _many(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _messages(raw: Any) -> tuple[list[ChatMessage], ...]:
    """A stored step's ``messages``: a list per LLM call of ``{"role": ..., "content": ...}``."""
    if not isinstance(raw, list):
        raise ValueError(f"step.messages: expected a list, got {_records.describe(raw)}")
    out = []
    for i, call in enumerate(raw):
        if not isinstance(call, list):
            raise ValueError(f"step.messages[{i}]: expected a list, got {_records.describe(call)}")
        out.append(
            [
                dict(_records.typed(dict[str, str], m, f"step.messages[{i}][{j}]"))
                for j, m in enumerate(call)
            ]
        )
    return tuple(out)


def render_messages(messages: Sequence[ChatMessage], *, include_system: bool = False) -> str:
    """Messages as readable text, one ``[ROLE]`` block each."""
    blocks = []
    for m in messages:
        role = m["role"].upper()
        if role == "SYSTEM" and not include_system:
            blocks.append(f"[SYSTEM] ({len(m['content'])} characters, same every turn)")
        else:
            blocks.append(f"[{role}]\n{m['content']}")
    return "\n\n".join(blocks)
