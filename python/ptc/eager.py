"""Eager evaluation (``SubAgent(eager=True)``): a program's top-level forms run while the LLM is
still writing the rest.

:class:`Eager` is the ``on_text`` of one LLM request. As the reply streams in it takes the
program written so far (:func:`ptc.agent.extract_program`), cuts it after its last complete
top-level form (``_core.complete_prefix``) and runs that prefix *speculatively* on a worker
thread: nothing is committed, and only the tools named in ``only`` (read tools that need no
decision) are called; any other call waits, which ends the speculation. Each speculative run
is answered from the record of the one before it, so no tool is called twice, and keeps its
own record (the calls made, the clock read).

When the whole reply has arrived and the program has passed ``check``, :meth:`Eager.finish`
hands the last record to the real run, which is answered from it: the program runs once more
from its start, as it would have without streaming, and the calls it repeats are not made
again. Evaluation is deterministic apart from tools and the clock, and the record holds both,
so the outcome is the one a run without streaming would have had with the same tool results.
A write tool, an approval or deferred tool, or a sub-agent is never called before the whole
program has arrived and passed ``check``: a reply cut off mid-stream never half-writes.

A retry (``restart``) drops the record: the new reply may be another program.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Any

from . import _core
from ._core import CancelToken
from .session import Session

#: Characters after which a top-level form may have just ended: a prefix is looked for only
#: when a piece holds one (an atom at top level ends at whitespace).
_ENDS = frozenset(")]}\n")

#: A prefix is looked for again only once the reply has grown by this fraction of its length
#: since the last look: each look reads the whole reply, so a reply of n characters costs
#: O(n log n) however finely it is cut, and a short one is looked at after every form.
_GROWTH = 32


class Eager:
    """The ``on_text`` of one LLM request that runs the program's complete forms early.

    ``session`` is the run's Session; ``only`` the tools a speculative run may call;
    ``extract`` turns the reply so far into the program so far (None: none yet)."""

    def __init__(
        self,
        session: Session,
        only: list[str],
        extract: Callable[[str], str | None],
        enter: Callable[[], Callable[[], None]] | None = None,
    ) -> None:
        self._session = session
        self._only = only
        self._extract = extract
        # around each speculative run: e.g. lends it the event loop of an `arun` (async tools)
        self._enter = enter
        self._pieces: list[str] = []
        self._length = 0  # characters received
        self._looked = 0  # the length when a prefix was last looked for
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._generation = 0  # bumped by restart(): a run of an older reply is dropped
        self._queued: str | None = None  # the newest prefix not yet run
        self._ran = ""  # the longest prefix run (or queued)
        self._record: dict[str, Any] | None = None  # {"calls", "clock"} of the last good run
        self._source = ""  # the prefix that record is of
        self._durations: dict[str, float] = {}  # call id -> how long the call took
        self._stopped = False  # a run failed or waited: later prefixes are not run
        self._worker: threading.Thread | None = None
        self._cancel = CancelToken()
        #: how many times a prefix was looked for, and speculative runs made (for tests)
        self.looks = 0
        self.runs = 0

    # --- the stream -------------------------------------------------------------------

    def __call__(self, piece: str) -> None:
        self._pieces.append(piece)
        self._length += len(piece)
        if self._stopped or not _ENDS.intersection(piece):
            return
        if (self._length - self._looked) * _GROWTH < self._looked:
            return
        self._looked = self._length
        self.looks += 1
        text = "".join(self._pieces)
        self._pieces = [text]
        program = self._extract(text)
        if program is None:
            return
        source = program[: _core.complete_prefix(program)]
        with self._lock:
            if self._stopped or len(source) <= len(self._ran):
                return
            self._ran = self._queued = source
            if self._worker is None:
                context = contextvars.copy_context()
                self._worker = threading.Thread(
                    target=context.run,
                    args=(self._work, self._generation),
                    name="ptc-eager",
                    daemon=True,
                )
                self._worker.start()

    def restart(self) -> None:
        """A retry streams the reply anew: what was run of the last one is dropped (a run in
        progress is cancelled and waited for)."""
        with self._lock:
            self._generation += 1
            self._cancel.cancel()
            while self._worker is not None:
                self._idle.wait()
            self._cancel = CancelToken()
            self._pieces.clear()
            self._length = self._looked = 0
            self._queued, self._ran, self._source = None, "", ""
            self._record, self._stopped = None, False
            self._durations = {}

    def finish(self, program: str) -> tuple[dict[str, Any] | None, dict[str, float]]:
        """Waits for the speculative run in progress; returns the record the real run of
        ``program`` is answered from (None: nothing ran, or ``program`` does not begin with
        what ran) and how long each of its calls took, by call id."""
        with self._lock:
            self._stopped = True
            self._queued = None
            while self._worker is not None:
                self._idle.wait()
            record, source = self._record, self._source
        if record is None or not _begins_with(program, source):
            return None, {}
        return record, dict(self._durations)

    def close(self) -> None:
        """Stops the speculative run in progress and waits for it (the request failed, or the
        program will not run): nothing of this reply runs any more."""
        with self._lock:
            self._stopped = True
            self._queued = None
            self._cancel.cancel()
            while self._worker is not None:
                self._idle.wait()

    # --- the worker -------------------------------------------------------------------

    def _work(self, generation: int) -> None:
        try:
            while True:
                with self._lock:
                    source, self._queued = self._queued, None
                    if source is None or generation != self._generation:
                        return
                    tape, cancel = self._record, self._cancel
                self._speculate(source, tape, cancel, generation)
        finally:
            with self._lock:
                self._worker = None
                self._idle.notify_all()

    def _speculate(
        self, source: str, tape: dict[str, Any] | None, cancel: CancelToken, generation: int
    ) -> None:
        leave = self._enter() if self._enter is not None else None
        try:
            result = self._session._speculate(source, tape, self._only, cancel)
        except Exception:  # the real run reports whatever this was
            result = None
        finally:
            if leave is not None:
                leave()
        self.runs += 1
        with self._lock:
            if generation != self._generation:
                return
            record = None
            if result is not None and getattr(result.error, "type", None) not in _UNKEPT:
                record = result._suspended()
            if record is not None:
                assert result is not None
                self._record = {"calls": record["calls"], "clock": record["clock"]}
                self._source = source
                for call in result.tool_calls:
                    if not call.replayed:
                        self._durations[call.id] = call.duration_ms
            if record is None or result is None or result.outcome != "value":
                # an error ends the program as it would without streaming, and a call that
                # waits (a write or approval tool) waits for the whole program
                self._stopped = True
                self._queued = None


#: Errors of a speculative run whose record is not kept: the run was stopped from outside,
#: and a call it abandoned may have returned after all.
_UNKEPT = frozenset({"timeout", "cancelled", "replay_diverged", "internal_error"})


def _begins_with(program: str, source: str) -> bool:
    """Whether ``program``'s first top-level forms are those of ``source`` (a prefix cut by
    ``complete_prefix``: after a closing bracket or quote, or after the whitespace that ends a
    top-level atom, which the whole program may have stripped)."""
    text = source.rstrip()
    if not program.startswith(text):
        return False
    return len(program) == len(text) or text != source or program[len(text)].isspace()


def read_tools(tools: list[tuple[str, Any]]) -> list[str]:
    """The tools a speculative run may call: declared ``effect="read"``, needing no decision
    (approval, deferred), and not sub-agents (they write through their own tools)."""
    from .tools.declare import Tool

    return [
        name
        for name, t in tools
        if isinstance(t, Tool) and t.effect == "read" and not t.approval and not t.deferred
    ]
