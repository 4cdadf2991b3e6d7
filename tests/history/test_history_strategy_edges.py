"""Edge cases every strategy meets: repeated application, an orphan at the end, small context
limits, late system messages, merged metadata; each test names the seed section it follows."""

from __future__ import annotations

from history_cases import asst, call, calls, loop, result, sys_, user
from ptc.history import (
    LoopSlices,
    SafeSplitSummarization,
    SummaryRequest,
    TokenCompaction,
    from_openai,
    repair,
    to_openai,
    validate,
)
from ptc.history.base import SNAPSHOT_OPEN, DeterministicSummarizer
from ptc.history.messages import Meta, TextPart
from ptc.history.tokens import default_counter

DET = DeterministicSummarizer()


class Recording:
    """The deterministic summarizer, recording every request."""

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []

    def __call__(self, req: SummaryRequest) -> str:
        self.requests.append(req)
        return DET(req)


def _loops(prefix: str, n: int = 10) -> list[dict]:
    out: list[dict] = []
    for i in range(n):
        out.extend(loop(f"{prefix}{i}", "search", out=f"result {prefix}{i} " + "data " * 40))
    return out


def _first_non_system(msgs):
    return next(m for m in msgs if m.role != "system")


# -- 1. seed 004 "5. Context Restoration": repeated splits keep exactly one snapshot --------


def test_repeated_safe_split_keeps_one_snapshot_and_newest_question():
    """Seed 004, "4. Chunked Summarization" (consolidation "merges them into a single coherent
    `<state_snapshot>`") and "5. Context Restoration" (the snapshot message): applying the
    strategy again must recognise the earlier snapshot, fold it into the next summarization
    (previous snapshot) and re-insert only the newest real user question, verbatim."""
    rec = Recording()
    s = SafeSplitSummarization(
        token_threshold=3000, summary_window=6, summarizer=rec, max_workers=1, environ={}
    )
    hist = [sys_(), user("Q1: find the open ports"), *_loops("a")]
    r = s.apply(hist)
    assert str(r.to_openai()).count(SNAPSHOT_OPEN) == 1
    hist = [*r.to_openai(), user("Q2: now write the report"), *_loops("b")]
    r = s.apply(hist)
    hist = [*r.to_openai(), *_loops("c")]
    rec.requests.clear()
    r = s.apply(hist)
    out = r.to_openai()
    assert str(out).count(SNAPSHOT_OPEN) == 1
    assert str(out).count("SYSTEM: Automated Context Restoration") == 1
    # the earlier snapshot is the previous summary of the consolidation, not new conversation
    assert any(q.previous_summary and SNAPSHOT_OPEN in q.previous_summary for q in rec.requests)
    assert not any(SNAPSHOT_OPEN in q.content for q in rec.requests if q.kind == "chunk")
    # the newest real user question survives verbatim as its own part
    restoration = _first_non_system(r.messages)
    texts = [p.text for p in restoration.parts if type(p) is TextPart]
    assert "Q2: now write the report" in texts
    assert "Q1: find the open ports" not in texts
    assert validate(r.messages) == []


# -- 2. seed 004 "3. History Splitting (The "Safe Split")": repair runs before the search ---


def test_orphan_result_at_the_end_splits_like_the_clean_history():
    """Seed 004, "3. History Splitting (The "Safe Split")": "Four-Phase Splitting Strategy"
    (phases 1-4) and "Orphaned Returns (Return without Call): MUST NOT be kept in `to_keep`
    segment": an orphaned tool result is dropped by the repair before the search, so it
    cannot force phase 4 to summarize everything."""
    s = SafeSplitSummarization(token_threshold=3000, summary_window=6, environ={})
    clean = [sys_(), user("Q: look things up"), *_loops("a")]
    dirty = [*clean, result("ghost", "boo")]
    rc, rd = s.apply(clean), s.apply(dirty)
    assert rd.info["split_phase"] == rc.info["split_phase"] != 4
    assert rd.messages == rc.messages
    assert rd.messages[-1].role == "tool" and rd.messages[-1].tool_call_id == "a9"
    assert rd.stats.repairs.orphan_results_dropped == 1


# -- 3. seed 003 "Token-Aware Compaction": the rebuilt history fits the model --------------


def test_compaction_output_fits_a_small_context_limit():
    """Seed 003, "Token-Aware Compaction" ("it keeps recent user messages (bounded by a token
    budget)"): with a small
    limit (gpt-4: 8192, threshold 5734) the user budget and summary are clamped so the
    rebuilt history stays under the trigger threshold."""
    s = TokenCompaction(model="gpt-4")
    hist: list[dict] = [sys_()]
    for i in range(12):
        hist += [user(f"request {i}: " + "please analyse the logs " * 300), *loop(f"x{i}")]
    hist.append(user("final question: what failed?"))
    r = s.apply(hist)
    threshold = s.threshold()
    assert threshold == 5734 and r.stats.triggered
    counter = default_counter("gpt-4")
    assert r.stats.tokens_after <= threshold
    assert sum(counter.count_message(m) for m in r.messages) <= threshold
    assert "final question: what failed?" in str(r.to_openai())
    # a newest message larger than the room is cut (with the marker), never overflowing
    huge = [sys_(), user("tell me " + "everything " * 9000), *loop("y1")]
    r2 = s.apply(huge)
    assert r2.stats.tokens_after <= threshold


# -- 4. seed 002 turn-aware slices: first non-system message is a user message --------------


def test_turn_aware_slices_start_with_a_user_message():
    """Seed 002, "Turn-Aware Context Composition (v0.5.0+)": the latest earlier tool loop is
    put before the turn; the output must still start (after system) with a user message, which the
    validator now checks (Anthropic rejects an assistant first)."""
    hist = [sys_(), user("q0"), *loop("a1"), user("q1"), *loop("a2"), asst("done")]
    r = LoopSlices(turn_aware=True).apply(hist)
    # the seed's output starts with the loop; the Anthropic rendering with a user message
    assert _first_non_system(r.messages).role == "assistant"
    assert _first_non_system(r.for_provider("anthropic")).role == "user"
    assert r.to_anthropic()["messages"][0]["role"] == "user"
    assert validate(r.for_provider("strict")) == []
    issues = validate([sys_(), asst("hello")])
    assert [i.kind for i in issues] == ["first_not_user"]
    fixed, report = repair([sys_(), asst("hello")])
    assert fixed[1].role == "user" and report.users_inserted == 1
    assert validate(fixed) == []


# -- 5. late system messages: hoisted (or turned to user) and counted ------------------------


def test_late_system_messages_are_hoisted_by_every_strategy():
    """No seed says where a late system message goes (seed 002's "Context Composition
    Algorithm" only puts the system prompt first), so every strategy does the same: a system
    message after the conversation start is hoisted by default, counted in the stats, and
    ``misplaced_system="to_user"`` keeps it as user text."""
    hist = [sys_(), user("q"), sys_("LATE RULE"), *loop("a1"), asst("ok")]
    for s in (LoopSlices(), LoopSlices(turn_aware=True), TokenCompaction(context_limit=60)):
        r = s.apply(hist)
        system = [m for m in r.messages if m.role == "system"]
        assert all(m.role == "system" for m in r.messages[: len(system)]), s  # all lead
        assert "LATE RULE" in system[-1].text, s
        (one,) = [m for m in r.for_provider("strict") if m.role == "system"]
        assert "LATE RULE" in one.text, s
        assert r.stats.repairs.systems_moved == 1, s
        r = type(s)(**{**_opts(s), "misplaced_system": "to_user"}).apply(hist)
        users = " ".join(m.text for m in r.messages if m.role == "user")
        assert "LATE RULE" in users, s
        assert "LATE RULE" not in " ".join(m.text for m in r.messages if m.role == "system")
        assert validate(r.for_provider("strict")) == []


def _opts(s):
    if isinstance(s, LoopSlices):
        return {"turn_aware": s.turn_aware}
    return {"context_limit": s.context_limit}


# -- 6. seed 004 "6. Role Alternation Enforcement": merging keeps every message's metadata --


def test_merging_consecutive_messages_keeps_their_metadata():
    """Seed 004, "6. Role Alternation Enforcement" (`ensure_alternating_roles` combines the
    parts of consecutive requests) with seed 002 metadata: the merged
    message keeps the metadata of every message merged into it (``Meta.merged``)."""
    hist = [
        sys_(),
        user("a", source="direct", sender_id="", created_at=1.0),
        user("b", source="broadcast", sender_id="m2", created_at=2.0),
        user("c"),
        user("d", source="broadcast", sender_id="", created_at=4.0),
    ]
    fixed, report = repair(hist)
    assert report.messages_merged == 3 and len(fixed) == 2
    m = fixed[1]
    assert m.meta.source == "direct" and m.meta.created_at == 1.0
    assert m.meta.merged == (
        Meta(source="broadcast", sender_id="m2", created_at=2.0),
        Meta(),
        Meta(source="broadcast", sender_id="", created_at=4.0),
    )
    d = to_openai(fixed, include_meta=True)[1]
    assert d["merged_meta"][0] == {"source": "broadcast", "sender_id": "m2", "created_at": 2.0}
    assert "merged_meta" not in to_openai(fixed)[1]
    assert from_openai(to_openai(fixed, include_meta=True)) == fixed


# -- 7. seed 003 "Codex-Style Summary Prompt and Prefix": repeated compaction converges ----


def test_repeated_deterministic_compaction_converges():
    """Seed 003, "Codex-Style Summary Prompt and Prefix" ("Future compactions can detect and
    exclude this summary") and "Compaction Input Trimming and Fallback": the fallback summary
    keeps one bounded ``Earlier summary:`` block and replaces the recent-files line."""
    s = TokenCompaction(context_limit=400)
    hist: list[dict] = [sys_(), user("start the work")]
    sizes = []
    for i in range(8):
        hist += [
            *loop(f"e{i}", "edit_file", out="edited", path=f"src/f{i}.py"),
            user(f"step {i} done?"),
        ]
        r = s.apply(hist, force=True)
        summary = r.summary or ""
        assert summary.count("Earlier summary:") <= 1
        assert summary.count("Recent files touched") == 1
        assert str(r.to_openai()).count("Recent files touched") == 1
        sizes.append(len(summary))
        hist = r.to_openai()
    assert f"src/f{7}.py" in summary
    assert max(sizes[4:]) <= 4_000
    assert sizes[-1] <= sizes[-3] + 200  # bounded: no growth by a block per round


def test_first_non_system_is_user_for_calls_only_history():
    """A history that starts with the assistant is sent to Anthropic with a user message
    first by every strategy (a provider constraint, applied when rendering: the strategies'
    own output keeps the seeds' order)."""
    hist = [sys_(), calls(call("c1", "search")), result("c1", "x"), asst("done")]
    for s in (
        LoopSlices(turn_aware=True),
        TokenCompaction(context_limit=100_000),
        SafeSplitSummarization(token_threshold=100_000, summary_window=50, environ={}),
    ):
        r = s.apply(hist)
        assert _first_non_system(r.for_provider("anthropic")).role == "user", s
        assert r.to_anthropic()["messages"][0]["role"] == "user", s
        assert validate(r.for_provider("strict")) == []
