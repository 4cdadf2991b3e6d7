"""Loop slices and turn-aware composition (seed 002).

Context = system prompt + the current turn's prompt source + the latest complete tool loop
(the last assistant tool-call message whose calls all have their results, and those results).
The turn-aware variant keeps the current turn whole and reduces earlier history to its latest
complete tool loop. A loop without all its results is never sent (seed 002: "Complete loops
guaranteed"). The full history stays searchable in :mod:`ptc.history.store`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from .base import HistoryInput, HistoryResult, finish, prepare
from .messages import Message, Meta, TextPart
from .repair import TOOL_CALLS_PREFIX, RepairReport, SystemPolicy, UnansweredPolicy, place_systems
from .tokens import CounterChoice, resolve_counter, usage_tokens

#: Scanning window for prompt sources and tool loops (seed 002: MaxContextMessages).
MAX_CONTEXT_MESSAGES = 20

#: Synthetic nudge wordings by attempt (seed 002: escalating prompts).
NUDGE_MESSAGES = (
    "Continue your mission. Check notifications and coordinate with the swarm.",
    "You need to respond. Check your notifications and status.",
    "URGENT: Respond immediately. Check your system status.",
)
MAX_ENCOURAGEMENTS = 3
IDLE_NUDGE_INTERVAL = 30.0  # seconds, idle agents
WAIT_STATE_NUDGE_INTERVAL = 120.0  # seconds, agents in a wait state


Selection = Literal["priority", "recency"]


def idle_reason(max_encouragements: int = MAX_ENCOURAGEMENTS) -> str:
    return f"Failed to respond after {max_encouragements} encouragements"


def nudge_text(attempt: int) -> str:
    """Wording of nudge ``attempt`` (1-based); attempts past the last stay urgent."""
    return NUDGE_MESSAGES[min(max(attempt, 1), len(NUDGE_MESSAGES)) - 1]


def synthetic_nudge(attempt: int = 1, *, created_at: Any = None) -> Message:
    """The generated user message used when no prompt source exists.

    Role user, source ``"system"``, empty sender; marked ephemeral so the store never
    keeps it (seed 002: "NOT stored in database").
    """
    return Message(
        "user",
        (TextPart(nudge_text(attempt)),),
        meta=Meta(source="system", sender_id="", created_at=created_at, ephemeral=True),
    )


# -- classification -----------------------------------------------------------------------


def is_tool_call_message(m: Message) -> bool:
    """Assistant with tool calls, or with the ``[TOOL_CALLS]`` content prefix (seed 002)."""
    if m.role != "assistant":
        return False
    return bool(m.tool_calls) or m.text.startswith(TOOL_CALLS_PREFIX)


def prompt_category(m: Message) -> int | None:
    """0 commander direct, 1 commander broadcast, 2 swarm broadcast, ``None`` otherwise.

    A user message without a source is a direct message (plain chat histories have no
    metadata). Nudges (source ``"system"``), ephemeral and empty messages are not prompt
    sources.
    """
    if m.role != "user" or m.meta.ephemeral or m.is_empty:
        return None  # an empty message drives nothing (and no provider accepts it)
    source = m.meta.source
    if source is None or source == "direct":
        return 0
    if source == "broadcast":
        return 1 if not m.meta.sender_id else 2
    return None


def select_prompt_source(
    messages: Sequence[Message], selection: Selection = "priority"
) -> int | None:
    """Index of the prompt source in ``messages``, or ``None`` (then a nudge is used).

    ``"priority"``: the best category present wins (direct > commander broadcast > swarm
    broadcast), the most recent message within it. ``"recency"``: the most recent prompt
    source of any category.
    """
    best: int | None = None
    best_cat = 99
    for i in range(len(messages) - 1, -1, -1):
        cat = prompt_category(messages[i])
        if cat is None:
            continue
        if selection == "recency":
            return i
        if cat < best_cat:
            best, best_cat = i, cat
            if cat == 0:
                break
    return best


def find_turn_start(messages: Sequence[Message]) -> int | None:
    """Index of the most recent user-initiated prompt (direct, broadcast or stored nudge)."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.role == "user" and not m.meta.ephemeral and not m.is_empty:
            return i
    return None


def _loop_end(messages: Sequence[Message], i: int) -> int:
    j = i + 1
    while j < len(messages) and messages[j].role == "tool":
        j += 1
    return j


def latest_tool_loop(messages: Sequence[Message]) -> tuple[int, int] | None:
    """``(start, end)`` of the latest tool loop: the call message and its consecutive results."""
    for i in range(len(messages) - 1, -1, -1):
        if is_tool_call_message(messages[i]):
            return i, _loop_end(messages, i)
    return None


def is_complete_loop(messages: Sequence[Message]) -> bool:
    """A call message followed by a result for each of its calls (seed 002: "the most recent
    complete tool loop"). A ``[TOOL_CALLS]`` text call has no ids: one result completes it.

    Results are paired as :func:`~ptc.history.repair.repair` pairs them: by id, and a call
    without an id by a result without one, in order (a call with a result the repair would
    not pair is unanswered for the provider, so the loop is not complete)."""
    if not messages or not is_tool_call_message(messages[0]):
        return False
    results = messages[1:]
    if not messages[0].tool_calls:
        return bool(results)
    answered = {r.tool_call_id for r in results if r.tool_call_id}
    blank_results = sum(1 for r in results if not r.tool_call_id)
    blank_calls = sum(1 for tc in messages[0].tool_calls if not tc.id)
    named = all(tc.id in answered for tc in messages[0].tool_calls if tc.id)
    return named and blank_calls <= blank_results


def latest_complete_tool_loop(messages: Sequence[Message]) -> tuple[int, int] | None:
    """``(start, end)`` of the newest tool loop whose calls all have their results."""
    for i in range(len(messages) - 1, -1, -1):
        if is_tool_call_message(messages[i]):
            end = _loop_end(messages, i)
            if is_complete_loop(messages[i:end]):
                return i, end
    return None


def extract_latest_tool_loop(
    messages: Sequence[Message], *, complete: bool = False
) -> list[Message]:
    """The latest tool loop's messages (seed 002 ``extractLatestToolLoop``); with
    ``complete=True`` the latest one whose calls all have results (turn-aware history)."""
    span = latest_complete_tool_loop(messages) if complete else latest_tool_loop(messages)
    return list(messages[span[0] : span[1]]) if span else []


def complete_units(messages: Sequence[Message]) -> tuple[list[Message], int]:
    """``messages`` without their incomplete tool loops: a call message whose calls do not
    all have their results right after it is dropped with the results it has (seed 002's
    unit is the call and its results; providers reject a call without its result). Returns
    the kept messages and how many loops were dropped."""
    out: list[Message] = []
    dropped = 0
    i = 0
    while i < len(messages):
        if is_tool_call_message(messages[i]):
            end = _loop_end(messages, i)
            if is_complete_loop(messages[i:end]):
                out.extend(messages[i:end])
            else:
                dropped += 1
            i = end
            continue
        out.append(messages[i])
        i += 1
    return out, dropped


# -- strategy -------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoopSlices:
    """Seed 002 context composition.

    ``turn_aware=False`` (v0.4): system + prompt source + latest complete tool loop, all found
    in the last ``window`` non-system messages. ``turn_aware=True`` (v0.5): system + the latest
    complete tool loop among the ``window`` messages before the turn + the current turn, from
    the most recent user prompt to the end, whole but for its incomplete loops. A loop whose
    calls do not all have their results (a call in flight, a parallel call partly answered)
    is never in the output: it is dropped with the results it has. ``encouragement`` picks
    the nudge wording when no prompt source is found (see :class:`NudgeController`).
    """

    turn_aware: bool = False
    selection: Selection = "priority"
    window: int = MAX_CONTEXT_MESSAGES
    encouragement: int = 1
    counter: CounterChoice = None
    unanswered: UnansweredPolicy = "synthesize"
    misplaced_system: SystemPolicy = "hoist"
    name: str = "loop_slices"

    def __post_init__(self) -> None:
        if self.window < 1:
            raise ValueError("window must be at least 1")
        if self.selection not in ("priority", "recency"):
            raise ValueError("selection must be 'priority' or 'recency'")

    def apply(self, history: HistoryInput, *, usage: Any = None) -> HistoryResult:
        msgs, shape = prepare(history)
        counter = resolve_counter(self.counter)
        # late system messages are hoisted into the system prompt, or with
        # misplaced_system="to_user" sent as user text first; they never count as history
        system, body, moved = place_systems(msgs, "hoist")
        lead = 0
        while lead < len(msgs) and msgs[lead].role == "system":
            lead += 1
        # where each body message sits in the input (late system messages leave gaps)
        at = [i for i, m in enumerate(msgs) if m.role != "system"]
        late_users: list[Message] = []
        if self.misplaced_system == "to_user":
            late_users = [replace(m, role="user") for m in system[lead:]]
            system = system[:lead]
        info: dict[str, Any] = {"turn_aware": self.turn_aware, "nudge": False}
        # seed 002: every part is found among the `window` newest stored messages
        start = max(0, len(body) - self.window)
        window = body[start:]
        picked: list[Message]
        if self.turn_aware:
            # [system] + [historical: latest complete loop] + [current turn, whole]
            turn = find_turn_start(window)
            if turn is None:
                # no prompt in the window: the nudge is the turn boundary, after the history
                loop = extract_latest_tool_loop(window, complete=True)
                picked = [*loop, synthetic_nudge(self.encouragement)]
                from_input = len(loop)
                info["nudge"] = True
            else:
                loop = extract_latest_tool_loop(window[:turn], complete=True)
                # the current turn whole, but for a loop still without all its results (a call
                # in flight, or a parallel call partly answered): no provider takes it
                current, _ = complete_units(window[turn:])
                picked = [*loop, *current]
                from_input = len(picked)
                info["turn_start"] = at[start + turn]
        else:
            # [system] + [prompt source or nudge] + [latest complete tool loop]
            idx = select_prompt_source(window, self.selection)
            if idx is None:
                prompt = synthetic_nudge(self.encouragement)
                info["nudge"] = True
            else:
                prompt = window[idx]
            # seed 002: "Recent tool loops always complete"; a loop still waiting for a result
            # is passed over for the latest one that has them all
            loop = extract_latest_tool_loop(window, complete=True)
            picked = [prompt, *loop]
            # the nudge is not from the input, so it does not offset the dropped count
            from_input = len(loop) + (idx is not None)
        return finish(
            self.name,
            before=msgs,
            output=[*system, *late_users, *picked],
            counter=counter,
            shape=shape,
            triggered=True,
            dropped=len(msgs) - len(system) - len(late_users) - from_input,
            usage=usage_tokens(usage),
            info=info,
            unanswered=self.unanswered,
            misplaced_system=self.misplaced_system,
            pre_repairs=RepairReport(systems_moved=moved),
        )

    async def aapply(self, history: HistoryInput, *, usage: Any = None) -> HistoryResult:
        return self.apply(history, usage=usage)


# -- nudges and the circuit breaker -----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NudgeDecision:
    """``action`` is ``"nudge"`` (send ``message``) or ``"idle"`` (stop with ``reason``)."""

    action: Literal["nudge", "idle"]
    attempt: int
    message: Message | None = None
    reason: str | None = None


@dataclass
class NudgeController:
    """Escalating nudges with a circuit breaker (seed 002).

    Each due tick sends the next wording; after ``max_encouragements`` nudges without a
    successful response the next tick puts the agent idle with "Failed to respond after 3
    encouragements". :meth:`on_response` resets the count. Times are plain numbers the
    caller passes in (e.g. ``time.monotonic()``), so the controller is deterministic.

    The seed's pseudo-code checks the count right after incrementing it, which would never
    send its third wording; we send all three and go idle on the fourth due tick, so the
    error text ("after 3 encouragements") is literally true.
    """

    max_encouragements: int = MAX_ENCOURAGEMENTS
    idle_interval: float = IDLE_NUDGE_INTERVAL
    wait_interval: float = WAIT_STATE_NUDGE_INTERVAL
    encouragements: int = 0
    last_activity: float | None = None
    idle: bool = False
    idle_reason: str | None = None

    def should_nudge(self, now: float, *, waiting: bool = False) -> bool:
        if self.idle:
            return False
        if self.last_activity is None:
            return True
        interval = self.wait_interval if waiting else self.idle_interval
        return now - self.last_activity >= interval

    def tick(self, now: float | None = None) -> NudgeDecision:
        if now is not None:
            self.last_activity = now
        if self.encouragements >= self.max_encouragements:
            self.idle = True
            self.idle_reason = idle_reason(self.max_encouragements)
            return NudgeDecision("idle", self.encouragements, reason=self.idle_reason)
        self.encouragements += 1
        return NudgeDecision(
            "nudge", self.encouragements, message=synthetic_nudge(self.encouragements)
        )

    def on_response(self, now: float | None = None) -> None:
        """A successful LLM response: reset the counter and leave the idle state."""
        self.encouragements = 0
        self.idle = False
        self.idle_reason = None
        if now is not None:
            self.last_activity = now

    def strategy(self, **options: Any) -> LoopSlices:
        """A :class:`LoopSlices` whose nudge wording matches the current attempt."""
        return LoopSlices(encouragement=max(self.encouragements, 1), **options)
