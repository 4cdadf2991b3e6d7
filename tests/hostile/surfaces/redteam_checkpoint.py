"""Red team, checkpoints and resume (issue 29, "a fresh batch ... finds nothing new"): new
angles on JSON-lines, SQLite and PostgreSQL checkpoints. What a run saves must read back (a
provider's odd text or usage included), a run id a host received is looked up, never handed
to the driver raw, a resume never calls a real tool for an injected turn, writers in several
processes never cut each other's lines, a file that stopped growing mid-line is mended, and a
run is resumed only with its own data."""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from . import case

#: A reply a provider may send: JSON's "\ud800" escape decodes to a lone surrogate in Python.
SURROGATE_REPLY = "```clojure\n(def a 1)\n```\nnote: \ud800 (a lone surrogate)"


class _Crash(BaseException):
    """The process dying in the middle of a run: nothing more is saved."""


def _clj(src: str) -> str:
    return f"```clojure\n{src}\n```"


def _crashing(replies: list[Any]) -> Callable[[Any], Any]:
    it = iter(replies)

    def llm(messages: Any) -> Any:
        try:
            return next(it)
        except StopIteration:
            raise _Crash from None

    return llm


def _raises(exc: type[BaseException], fn: Callable[[], Any]) -> BaseException:
    try:
        fn()
    except exc as e:
        return e
    raise AssertionError(f"{fn} did not raise {exc.__name__}")


@contextmanager
def _pg_store() -> Iterator[Any]:
    import psycopg
    from ptc.history.pgstore import PostgresStore

    url = os.environ["PTC_TEST_POSTGRES_URL"]
    schema = "rt_" + uuid.uuid4().hex[:12]
    store = PostgresStore(url, schema=schema)
    try:
        yield store
    finally:
        store.close()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@case(seconds=60, memory_mb=400, needs=("postgres",))
def case_nul_characters_round_trip_through_postgres(tmp: Path) -> None:
    """PostgreSQL text holds no NUL: a reply and a value with NUL characters are still saved
    and read back whole (the JSON text escapes them)."""
    import ptc

    with _pg_store() as store:
        cp = store.checkpoint()
        replies = [_clj('(def a (str "x" "y"))') + "\x00 nul", _clj('(return "a\u0000b")')]
        step = ptc.SubAgent("Count", llm=_crashing(replies), checkpoint=cp).run()
        assert (step.ok, step.value) == (True, "a\x00b"), step.error
        loaded, _ = cp.load()
        assert (loaded.ok, loaded.value) == (True, "a\x00b")
        assert loaded.turns[0].response.endswith("\x00 nul")


def _looked_up(cp: Any, where: str) -> None:
    """Odd run ids, as a service may receive them: each is a run that is not there."""
    for run_id in ("x\x00y", "\ud800", "r" * 100):
        err = _raises(LookupError, lambda run_id=run_id: cp.load(run_id))
        assert where in str(err) and repr(run_id) in str(err), (run_id, err)


@case(seconds=30, memory_mb=300)
def case_odd_run_ids_are_runs_that_are_not_there_jsonl(tmp: Path) -> None:
    """A run id with a NUL or a lone surrogate (from a request, a URL) is looked up like any
    other: LookupError naming the file and the id."""
    import ptc
    from ptc.checkpoint import JsonlCheckpoint

    path = tmp / "runs.jsonl"
    ptc.SubAgent("Count", llm=lambda m: _clj("(return 1)"), checkpoint=JsonlCheckpoint(path)).run()
    _looked_up(JsonlCheckpoint(path), str(path))


def _run_with_one_lookup(path: Path, calls: list[str]) -> tuple[list[dict[str, Any]], Any]:
    """A run that called ``lookup`` once in turn 1, then crashed: its lines and the tool."""
    import ptc
    from ptc.checkpoint import JsonlCheckpoint

    def lookup(sku: str) -> int:
        """Stock for a sku."""
        calls.append(sku)
        return 3

    agent = ptc.SubAgent(
        "Total stock?",
        llm=_crashing([_clj('(def a (tool/lookup "x1"))')]),
        tools=[lookup],
        checkpoint=JsonlCheckpoint(path),
    )
    _raises(_Crash, agent.run)
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    return lines, lookup


def _inject(path: Path, lines: list[dict[str, Any]], program: str) -> None:
    turn = json.loads(json.dumps(next(x for x in lines if x["event"] == "turn")))
    turn["turn"].update(number=2, program=program, tool_calls=[])
    turn["calls"] = 2
    path.write_text("".join(json.dumps(x) + "\n" for x in [*lines, turn]), encoding="utf-8")


@case(seconds=30, memory_mb=300)
def case_an_injected_turn_never_calls_a_real_tool_on_resume(tmp: Path) -> None:
    """A line appended to a shared checkpoint adds a turn whose program calls a tool: the
    resume replays recorded results only, so the tool is never called for it."""
    import ptc
    from ptc.checkpoint import JsonlCheckpoint

    calls: list[str] = []
    lines, lookup = _run_with_one_lookup(tmp / "runs.jsonl", calls)
    assert calls == ["x1"]
    calls.clear()
    for program in ('(def b (tool/lookup "wipe"))', '(def b (map tool/lookup ["a" "b"]))'):
        _inject(tmp / "bad.jsonl", lines, program)
        agent = ptc.SubAgent("Total stock?", llm=lambda m: _clj("(return a)"), tools=[lookup])
        _raises(ValueError, lambda agent=agent: agent.resume(JsonlCheckpoint(tmp / "bad.jsonl")))
        assert calls == [], calls


WRITER = """
import sys, ptc
from ptc.checkpoint import JsonlCheckpoint
path, who = sys.argv[1], sys.argv[2]
for k in range(3):
    replies = iter(["```clojure\\n(def a%d %d)\\n```" % (i, i) for i in range(3)]
                   + ["```clojure\\n(return [%s %d (+ a0 a1 a2)])\\n```" % (who, k)])
    cp = JsonlCheckpoint(path, fsync=False)
    step = ptc.SubAgent("Count " + "x" * 3000, llm=lambda m: next(replies), checkpoint=cp).run()
    assert step.ok, step.error
"""


@case(seconds=90, memory_mb=300)
def case_writers_in_four_processes_keep_every_line_whole(tmp: Path) -> None:
    """Four processes each save three runs of four turns (lines of several KB) into one file
    at once: every run loads finished with its own value, and no line is unreadable."""
    from ptc.checkpoint import JsonlCheckpoint

    path = tmp / "shared.jsonl"
    script = tmp / "writer.py"
    script.write_text(WRITER)
    procs = [
        subprocess.Popen([sys.executable, str(script), str(path), str(w)], stderr=subprocess.PIPE)
        for w in range(4)
    ]
    for p in procs:
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err.decode()[-2000:]
    cp = JsonlCheckpoint(path)
    assert cp.problems() == []
    values = sorted(tuple(cp.load(r)[0].value) for r in cp.runs())
    assert values == [(w, k, 3) for w in range(4) for k in range(3)], values


@case(seconds=60, memory_mb=300)
def case_a_save_cut_short_by_a_full_disk_is_mended_on_resume(tmp: Path) -> None:
    """The file may grow by only 1,000 more bytes when turn 2's 200 KB line is written (a full
    disk, a quota: EFBIG): the run stops with the OSError, the file ends in a cut line; the
    resume cuts it off, finishes the run, and the run loads finished with all its turns."""
    import ptc
    from ptc.checkpoint import JsonlCheckpoint

    path = tmp / "runs.jsonl"
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of the signal
    calls: list[str] = []

    def lookup(sku: str) -> int:
        """Stock for a sku."""
        calls.append(sku)
        return 3

    class Quota:
        def __init__(self) -> None:
            self.inner, self.saves = JsonlCheckpoint(path), 0

        def save(self, step: Any, run_id: str) -> None:
            self.saves += 1
            if self.saves == 2:
                cap = path.stat().st_size + 1_000
                resource.setrlimit(resource.RLIMIT_FSIZE, (cap, resource.RLIM_INFINITY))
            try:
                self.inner.save(step, run_id)
            finally:
                unlimited = resource.RLIM_INFINITY
                resource.setrlimit(resource.RLIMIT_FSIZE, (unlimited, unlimited))

    replies = [
        _clj('(def a (tool/lookup "x1"))'),
        _clj('(def b (tool/lookup "x2"))\n;; ' + "z" * 200_000),
    ]
    agent = ptc.SubAgent("Total?", llm=_crashing(replies), tools=[lookup], checkpoint=Quota())
    err = _raises(OSError, agent.run)
    assert isinstance(err, OSError) and err.errno == errno.EFBIG, err
    assert not path.read_bytes().endswith(b"\n")  # the cut line is there
    assert len(JsonlCheckpoint(path).load()[0].turns) == 1
    again = [_clj('(def b (tool/lookup "x2"))'), _clj("(return (+ a b))")]
    step = ptc.SubAgent("Total?", llm=_crashing(again), tools=[lookup]).resume(
        JsonlCheckpoint(path)
    )
    assert (step.ok, step.value) == (True, 6), step.error
    final, _ = JsonlCheckpoint(path).load()
    assert (final.ok, final.value, len(final.turns)) == (True, 6, 3)
    assert JsonlCheckpoint(path).problems() == []


@case(seconds=30, memory_mb=300)
def case_another_tenants_run_with_the_same_mission_is_refused(tmp: Path) -> None:
    """Two tenants run the same mission with the same tools over their own data, saving to
    one SQLite store: tenant A cannot resume tenant B's run (same keys and types, other
    values): RunMismatchError on the data, and no program of A's runs over B's definitions."""
    import ptc
    from ptc.history.store import HistoryStore

    store = HistoryStore(tmp / "shared.db")
    b = ptc.SubAgent(
        "Sum the orders",
        llm=_crashing([_clj("(def total (reduce + data/orders))")]),
        data={"orders": [100, 200, 300]},
        checkpoint=store.checkpoint(),
    )
    _raises(_Crash, b.run)
    (run,) = store.checkpoint().runs()
    asked: list[Any] = []
    a = ptc.SubAgent(
        "Sum the orders",
        llm=lambda m: asked.append(m) or _clj("(return total)"),
        data={"orders": [1, 2, 3]},
    )
    err = _raises(ptc.RunMismatchError, lambda: a.resume(run, store=store))
    assert isinstance(err, ptc.RunMismatchError) and err.what == "data", err
    assert err.run_id == run and asked == [], err
    store.close()


@case(seconds=30, memory_mb=300)
def case_bytes_in_a_text_column_name_their_row(tmp: Path) -> None:
    """A ptc_turns row whose turn is a BLOB, or a ptc_runs context that is a number (a foreign
    writer): CheckpointError naming the database, the row and the run; the other run loads."""
    import ptc
    from ptc.checkpoint import CheckpointError, SqliteCheckpoint

    cases = [
        (
            "UPDATE ptc_turns SET turn = ? WHERE run_id = ? AND number = 2",
            b"\x00{}",
            "ptc_turns row of turn 2",
            "expected JSON text, got a value of type bytes",
        ),
        (  # a column of TEXT affinity keeps the number as the text "7": JSON, not an object
            "UPDATE ptc_runs SET context = ? WHERE run_id = ?",
            7,
            "ptc_runs.context",
            "context: expected an object, got the integer 7",
        ),
    ]
    for i, (sql, value, row, reason) in enumerate(cases):
        path = tmp / f"runs{i}.db"
        replies = [_clj("(def a 1)"), _clj("(def b 2)")]
        agent = ptc.SubAgent("Count", llm=_crashing(replies), checkpoint=SqliteCheckpoint(path))
        _raises(_Crash, agent.run)
        done = ptc.SubAgent(
            "Other", llm=lambda m: _clj("(return 5)"), checkpoint=SqliteCheckpoint(path)
        )
        done.run()
        a, b = SqliteCheckpoint(path).runs()
        with sqlite3.connect(path) as db:
            db.execute(sql, (value, a))
        err = _raises(CheckpointError, lambda path=path, a=a: SqliteCheckpoint(path).load(a))
        assert str(err) == f"{path}, {row} (run {a!r}): {reason}", err
        assert SqliteCheckpoint(path).load(b)[0].value == 5


def _surrogate_reply_reads_back(cp: Any, reopen: Callable[[], Any]) -> None:
    import ptc

    replies = [SURROGATE_REPLY, _clj("(return (inc a))")]
    step = ptc.SubAgent("Count", llm=_crashing(replies), checkpoint=cp).run()
    assert (step.ok, step.value) == (True, 2), step.error
    loaded, _ = reopen().load()
    assert (loaded.ok, loaded.value, len(loaded.turns)) == (True, 2, 2), loaded


@case(seconds=30, memory_mb=300)
def case_a_lone_surrogate_in_a_reply_reads_back_jsonl(tmp: Path) -> None:
    """The reply is kept in its turn; the writer wrote it as surrogate bytes (not UTF-8), so
    the line could not be read back and the finished run was lost to load() and resume()."""
    from ptc.checkpoint import JsonlCheckpoint

    path = tmp / "runs.jsonl"
    _surrogate_reply_reads_back(JsonlCheckpoint(path), lambda: JsonlCheckpoint(path))
    assert JsonlCheckpoint(path).problems() == []


@case(seconds=30, memory_mb=300)
def case_a_lone_surrogate_in_a_reply_reads_back_sqlite(tmp: Path) -> None:
    """SQLite's driver refuses the surrogate: the save raised UnicodeEncodeError out of
    SubAgent.run() and nothing of the run was kept."""
    from ptc.checkpoint import SqliteCheckpoint

    path = tmp / "runs.db"
    _surrogate_reply_reads_back(SqliteCheckpoint(path), lambda: SqliteCheckpoint(path))


@case(seconds=60, memory_mb=400, needs=("postgres",))
def case_a_lone_surrogate_in_a_reply_reads_back_postgres(tmp: Path) -> None:
    """The same on PostgreSQL (psycopg refuses to encode the surrogate)."""
    with _pg_store() as store:
        cp = store.checkpoint()
        _surrogate_reply_reads_back(cp, lambda: cp)


@case(seconds=30, memory_mb=300)
def case_provider_usage_no_count_holds_still_reads_back(tmp: Path) -> None:
    """A provider reports usage the loader refuses (a negative count, 10**30 tokens): the run
    succeeds and saves, then its checkpoint and its own to_json() cannot be read back
    (CheckpointError: expected a count): a finished run lost to resume and `ptc trace`."""
    import ptc
    from ptc.checkpoint import JsonlCheckpoint

    path = tmp / "runs.jsonl"
    usage = {"input_tokens": -5, "output_tokens": 10**30}
    replies = [
        {"content": _clj("(def a 1)"), "usage": usage},
        {"content": _clj("(return (inc a))"), "usage": usage},
    ]
    step = ptc.SubAgent("Count", llm=_crashing(replies), checkpoint=JsonlCheckpoint(path)).run()
    assert (step.ok, step.value) == (True, 2), step.error
    again = ptc.Step.from_json(step.to_json())
    assert (again.ok, again.value) == (True, 2)
    loaded, _ = JsonlCheckpoint(path).load()
    assert (loaded.ok, loaded.value, len(loaded.turns)) == (True, 2, 2)


@case(seconds=30, memory_mb=300)
def case_a_malformed_lease_row_is_named_not_a_type_error(tmp: Path) -> None:
    """A ptc_leases row whose expiry is text (a hand-edited or foreign database): resume()
    raised a bare ``TypeError: '>' not supported between 'str' and 'float'``. A bad lease
    either counts as lapsed (the run resumes) or is a CheckpointError naming the database,
    the table and the run."""
    import ptc
    from ptc.checkpoint import CheckpointError, SqliteCheckpoint

    path = tmp / "runs.db"
    agent = ptc.SubAgent(
        "Count", llm=_crashing([_clj("(def a 1)")]), checkpoint=SqliteCheckpoint(path)
    )
    _raises(_Crash, agent.run)
    (run,) = SqliteCheckpoint(path).runs()
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO ptc_leases VALUES (?, ?, ?)", (run, "elsewhere:1:x", "soon"))
    resuming = ptc.SubAgent("Count", llm=lambda m: _clj("(return (inc a))"))
    try:
        step = resuming.resume(SqliteCheckpoint(path), run)
    except CheckpointError as e:
        assert str(path) in str(e) and "ptc_leases" in str(e) and run in str(e), e
    else:
        assert (step.ok, step.value) == (True, 2), step.error


@case(seconds=30, memory_mb=300)
def case_odd_run_ids_are_runs_that_are_not_there_sqlite(tmp: Path) -> None:
    """The same on SQLite: a surrogate reached the driver (UnicodeEncodeError), and so did a
    run id that is not a str (sqlite3.ProgrammingError)."""
    import ptc
    from ptc.checkpoint import SqliteCheckpoint

    path = tmp / "runs.db"
    ptc.SubAgent("Count", llm=lambda m: _clj("(return 1)"), checkpoint=SqliteCheckpoint(path)).run()
    _looked_up(SqliteCheckpoint(path), str(path))
    err = _raises(Exception, lambda: SqliteCheckpoint(path).load(object()))  # type: ignore[arg-type]
    assert isinstance(err, LookupError | TypeError), repr(err)


@case(seconds=60, memory_mb=400, needs=("postgres",))
def case_odd_run_ids_are_runs_that_are_not_there_postgres(tmp: Path) -> None:
    """The same on PostgreSQL: a NUL reached the server (psycopg DataError), a surrogate the
    driver (UnicodeEncodeError), an int the SQL (UndefinedFunction: text = smallint)."""
    import ptc

    with _pg_store() as store:
        cp = store.checkpoint()
        ptc.SubAgent("Count", llm=lambda m: _clj("(return 1)"), checkpoint=cp).run()
        _looked_up(cp, repr(store))
        err = _raises(Exception, lambda: cp.load(5))  # type: ignore[arg-type]
        assert isinstance(err, LookupError | TypeError), repr(err)


@case(seconds=30, memory_mb=400)
def case_a_10_mb_run_id_gives_a_short_error(tmp: Path) -> None:
    """A 10 MB run id that names no run: the LookupError quoted it whole (10 MB messages in a
    service's logs and responses); errors shorten what they quote, as the checkpoint errors
    do."""
    import ptc
    from ptc.checkpoint import JsonlCheckpoint, SqliteCheckpoint

    for cp in (JsonlCheckpoint(tmp / "runs.jsonl"), SqliteCheckpoint(tmp / "runs.db")):
        ptc.SubAgent("Count", llm=lambda m: _clj("(return 1)"), checkpoint=cp).run()
        err = _raises(LookupError, lambda cp=cp: cp.load("r" * 10_000_000))
        assert len(str(err)) < 2_000, (type(cp).__name__, len(str(err)))


@case(seconds=30, memory_mb=300)
def case_a_replay_that_diverges_names_the_run_and_the_file(tmp: Path) -> None:
    """The resume refused the injected turn with ``ValueError: cannot resume: replaying turn
    2 diverged``: no file, no run, no reason. Item 18's standard: name the file, the run and
    what went wrong."""
    import ptc
    from ptc.checkpoint import JsonlCheckpoint

    calls: list[str] = []
    lines, lookup = _run_with_one_lookup(tmp / "runs.jsonl", calls)
    run_id = lines[0]["run_id"]
    bad = tmp / "bad.jsonl"
    _inject(bad, lines, '(def b (tool/lookup "wipe"))')
    agent = ptc.SubAgent("Total stock?", llm=lambda m: _clj("(return a)"), tools=[lookup])
    err = _raises(ValueError, lambda: agent.resume(JsonlCheckpoint(bad)))
    assert str(bad) in str(err) and run_id in str(err), err
    assert "lookup" in str(err), err  # what diverged: a call of lookup that was not recorded


@case(seconds=30, memory_mb=300)
def case_a_set_and_a_map_that_spells_its_tag_are_different_data(tmp: Path) -> None:
    """The data fingerprint encodes a set of strings as ``{"$set:str": [...]}``, which is also
    what a map with that one key encodes as: a run over ``{"tags": {"a", "b"}}`` was resumed
    by an agent whose data is ``{"tags": {"$set:str": ["a", "b"]}}`` (its program sees a map,
    not the set the run's definitions were built from)."""
    import ptc
    from ptc.checkpoint import JsonlCheckpoint

    path = tmp / "runs.jsonl"
    started = ptc.SubAgent(
        "Count",
        llm=_crashing([_clj("(def n (count data/tags))")]),
        data={"tags": {"a", "b"}},
        checkpoint=JsonlCheckpoint(path),
    )
    _raises(_Crash, started.run)
    other = ptc.SubAgent(
        "Count", llm=lambda m: _clj("(return n)"), data={"tags": {"$set:str": ["a", "b"]}}
    )
    err = _raises(ptc.RunMismatchError, lambda: other.resume(JsonlCheckpoint(path)))
    assert isinstance(err, ptc.RunMismatchError) and err.what == "data", err
