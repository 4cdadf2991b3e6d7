"""Red-team cases that FAIL on the current code (issue 29's "a fresh batch ... finds nothing
new"): each reproduces a defect found by the second hostile batch and asserts what SAFETY.md
and the issue promise. This module starts with ``_``, so ``collect()`` skips it and CI stays
green; a case moves back to its ``redteam_<surface>.py`` module with the fix of its defect.

Run one as the suite would: ``python tests/hostile/surface_child.py _pending_redteam
case_name_without_prefix /tmp/somewhere 3072`` (PASS as the last line, else the failure);
PostgreSQL cases need ``PTC_TEST_POSTGRES_URL``.
"""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import case
from .redteam_checkpoint import (
    SURROGATE_REPLY,
    _clj,
    _Crash,
    _crashing,
    _inject,
    _looked_up,
    _pg_store,
    _raises,
    _run_with_one_lookup,
)
from .redteam_llm import (
    PROGRAM,
    Behave,
    RawServer,
    _agent,
    _endless_server,
    _rss_mb,
    completion,
    response,
)


def _peak_mb() -> int:
    """This process's peak RSS so far, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


# -- checkpoints and resume (redteam_checkpoint.py) -----------------------------------------------


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


# -- tools and their worker threads (redteam_tools.py) --------------------------------------------


@case(seconds=30, memory_mb=300)
def case_an_async_tool_may_run_its_own_session_again(tmp: Path) -> None:
    """SAFETY.md: a tool may run its own Session again, and that nested run does not wait for
    the runs it is nested in. A sync tool's nested run() does so at once; an ``async def``
    tool awaiting ``arun()`` of its own Session waited at the Session's gate until the outer
    run's deadline (5 s), under arun() and under run() alike, and the outer run failed."""
    import ptc

    box: dict[str, ptc.Session] = {}

    async def again() -> Any:
        r = await box["s"].arun("(+ 1 1)")
        return r.value if r.ok else r.error.message

    box["s"] = ptc.Session(tools={"again": again})

    async def under_arun() -> Any:
        return await box["s"].arun("(tool/again)")

    for how, call in (
        ("arun", lambda: asyncio.run(under_arun())),
        ("run", lambda: box["s"].run("(tool/again)")),
    ):
        started = time.monotonic()
        r = call()
        took = time.monotonic() - started
        assert (r.error, r.value) == (None, 2), (how, r)
        assert took < 1.0, (how, took)


@case(seconds=60, memory_mb=300)
def case_an_async_tool_recursing_through_arun_is_bounded(tmp: Path) -> None:
    """The recursion of the issue's item 9, with an ``async def`` tool and arun(): the 17th
    nested run ends with the typed nesting error, promptly; it hung at the gate until the
    deadline at every level instead (10 s for two levels)."""
    import ptc

    box: dict[str, ptc.Session] = {}

    async def deeper() -> Any:
        r = await box["s"].arun("(tool/deeper)")
        return r.value if r.ok else r.error.message

    box["s"] = ptc.Session(tools={"deeper": deeper})

    async def main() -> Any:
        return await box["s"].arun("(tool/deeper)")

    started = time.monotonic()
    r = asyncio.run(main())
    took = time.monotonic() - started
    v = r.value
    assert isinstance(v, str) and v.startswith("runs nested too deeply"), (r, v)
    assert took < 5.0, took


@case(seconds=30, memory_mb=300)
def case_nan_keys_in_a_tool_result_are_not_merged(tmp: Path) -> None:
    """Python keeps two NaN keys (two float objects, never equal) and a set of two NaNs; the
    program's map kept one entry (``{##NaN 2}``) and the set one member: a silent loss the
    other way round from the issue's item 6. Either both are kept or the result is refused
    with an error naming the collision."""
    import ptc

    nan1, nan2 = float("nan"), float("nan")
    for value, size in (({nan1: 1, nan2: 2}, 2), ({nan1, nan2}, 2)):
        assert len(value) == size
        r = ptc.Session(tools={"t": lambda value=value: value}).run("(count (tool/t))")
        if r.error is None:
            assert r.value == size, (value, r.value)
        else:
            assert r.error.type == "tool_error" and "NaN" in r.error.message, r.error


# -- LLM providers (redteam_llm.py) ---------------------------------------------------------------


@case(seconds=60, memory_mb=3100)
def case_a_request_abandoned_at_its_deadline_stops_reading(tmp: Path) -> None:
    """A provider streams an endless body as fast as loopback goes. The sync request ends at
    its 1 s deadline with LLMTimeoutError, but its thread went on reading after the run had
    returned: RSS grew by about 350 MB a second until the process died (an abort under a
    3 GiB address space). An abandoned request must stop (close its connection), as the
    async path does."""
    server, url = _endless_server(tmp)
    try:
        started = time.monotonic()
        step = _agent(url, deadline=1).run()
        assert step.error is not None and "LLMTimeoutError" in step.error.message, step.error
        assert time.monotonic() - started < 2.5
        base = _rss_mb()
        for _ in range(15):
            time.sleep(0.2)
            grown = _rss_mb() - base
            assert grown < 300, f"RSS grew by {grown} MB after the run had ended"
    finally:
        server.kill()
        server.wait()


@case(seconds=60, memory_mb=1000)
def case_a_compressed_reply_that_expands_a_thousandfold(tmp: Path) -> None:
    """A 6 MB gzip body that decompresses to 6 GB of one string (a 'zip bomb'): the SDK
    decompressed it all (2.8 GB of RSS under a 3 GiB address space, then MemoryError after
    10 s; without the cap the process is killed). SAFETY.md does not promise a bound on a
    reply's size in memory; a service calling a provider through a proxy it does not control
    needs one: a typed LLM error, memory bounded."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    body = packer.compress(
        b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "'
    )
    block = b"x" * (1 << 20)
    for _ in range(6000):
        body += packer.compress(block)
    body += packer.compress(b'"}}]}') + packer.flush()
    assert len(body) < 8 << 20
    server = RawServer(
        lambda c, h, b, n: c.sendall(response("200 OK", body, extra=b"content-encoding: gzip\r\n"))
    )
    try:
        started, before = time.monotonic(), _peak_mb()
        step = _agent(server.url, deadline=30).run()
        assert step.error is not None and step.error.type == "llm_error", step.error
        assert time.monotonic() - started < 10
        grown = _peak_mb() - before
        assert grown < 500, f"peak RSS grew by {grown} MB for a {len(body):,}-byte reply"
    finally:
        server.close()


@case(seconds=30, memory_mb=300)
def case_usage_no_count_holds_is_not_taken_as_given(tmp: Path) -> None:
    """A provider reports ``prompt_tokens: -7`` and ``completion_tokens: 10**30``: the Step's
    usage held them as given, so the step the run returned cannot be loaded back
    (Step.from_json: expected a count) nor resumed from its checkpoint."""
    import ptc

    usage = {"prompt_tokens": -7, "completion_tokens": 10**30, "total_tokens": "x"}
    server = RawServer(lambda c, h, b, n: c.sendall(response("200 OK", completion(PROGRAM, usage))))
    try:
        step = _agent(server.url).run()
        assert (step.ok, step.value) == (True, 7), step.error
        for n in (step.usage.input_tokens, step.usage.output_tokens):
            assert 0 <= n <= 2**53, step.usage
        again = ptc.Step.from_json(step.to_json())
        assert (again.ok, again.value) == (True, 7)
    finally:
        server.close()


@case(seconds=60, memory_mb=400)
def case_errors_say_what_the_provider_did(tmp: Path) -> None:
    """A 200 with an HTML page (a proxy's login page), a redirect loop and a body cut short:
    the run's error said "the chat completion has no choices" for the first (it was not JSON
    at all) and "APIConnectionError: Connection error." for the others. An error says what
    went wrong: the content type, the redirects, the cut body."""
    cases: list[tuple[Behave, tuple[str, ...]]] = [
        (
            lambda c, h, b, n: c.sendall(response("200 OK", "<html>login</html>", "text/html")),
            ("text/html", "not JSON"),
        ),
        (
            lambda c, h, b, n: (
                bool(
                    c.sendall(
                        b"HTTP/1.1 307 Temporary Redirect\r\nlocation: /v1/chat/completions\r\n"
                        b"content-length: 0\r\n\r\n"
                    )
                )
                or True
            ),
            ("redirect",),
        ),
        (
            lambda c, h, b, n: c.sendall(b'HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n{"ch'),
            ("incomplete", "closed", "cut", "peer"),
        ),
    ]
    for behave, words in cases:
        server = RawServer(behave)
        try:
            step = _agent(server.url).run()
            assert step.error is not None and step.error.type == "llm_error", step.error
            message = step.error.message
            assert any(w.lower() in message.lower() for w in words), (words, message)
        finally:
            server.close()


@case(seconds=30, memory_mb=300)
def case_a_completion_of_the_wrong_shape_is_named(tmp: Path) -> None:
    """``{"choices": "abc"}``, a message that is null, content that is a number: each was read
    as an empty reply (the agent then spent its turns on "no program found"). A completion
    that is not one is an LLMError naming the field."""
    bodies = [
        '{"choices": "abc"}',
        '{"choices": [{"message": null}]}',
        '{"choices": [{"message": {"content": 5}}]}',
    ]
    for body in bodies:
        server = RawServer(lambda c, h, b, n, body=body: c.sendall(response("200 OK", body)))
        try:
            step = _agent(server.url).run()
            assert step.error is not None and step.error.type == "llm_error", (body, step.error)
            assert len(server.requests) == 1, (body, len(server.requests))
        finally:
            server.close()


# -- host data (redteam_host_data.py) -------------------------------------------------------------


@case(seconds=30, memory_mb=300)
def case_nan_keys_in_data_are_not_merged(tmp: Path) -> None:
    """Python keeps two NaN keys (two float objects, never equal), and a set of two NaNs; the
    program saw one entry (``(count data/m)`` was 1): input data silently lost an entry.
    SAFETY.md: nothing is lost silently. Either both are kept or the data is refused with a
    TypeError naming the path."""
    import ptc

    nan1, nan2 = float("nan"), float("nan")
    for value in ({nan1: 1, nan2: 2}, {nan1, nan2}, [{nan1: "a", nan2: "b"}]):
        try:
            s = ptc.Session(data={"m": value})
        except (TypeError, ValueError) as e:
            assert str(e).startswith("data.m") and "NaN" in str(e), e
            continue
        inner = "(first data/m)" if isinstance(value, list) else "data/m"
        assert s.run(f"(count {inner})").value == 2, value


@case(seconds=30, memory_mb=300)
def case_a_key_with_a_lone_surrogate_is_named_as_such(tmp: Path) -> None:
    """``Session(data={"\\ud800": 1})`` said "data keys must be strings": the key is a str;
    what is wrong is the lone surrogate in it (as a value's error says: UnicodeEncodeError at
    data.a). The error says what is wrong with which key."""
    import ptc

    err = _raises(TypeError, lambda: ptc.Session(data={"ok": 1, "bad\ud800key": 2}))
    assert "surrogate" in str(err), err
    err = _raises(TypeError, lambda: ptc.Session(data={"a": "x\udcffy"}))
    assert str(err).startswith("data.a: "), err


@case(seconds=30, memory_mb=300)
def case_a_lone_surrogate_escape_in_json_is_named_as_such(tmp: Path) -> None:
    """``from_json('{"a": "\\ud800"}')`` (what Python's json.dumps writes for such a str) was
    refused as "unexpected end of hex escape": the escape is whole; it is a lone surrogate,
    which the error should say (the key's case already does)."""
    import ptc

    err = _raises(ValueError, lambda: ptc.Session.from_json('{"a": "x\\ud800y"}'))
    assert str(err).startswith("invalid JSON data at data.a: "), err
    assert "surrogate" in str(err), err


def _interrupt_within(make: Any, prepare: Any, bound: float) -> None:
    """SIGINT 50 ms into ``make()``: KeyboardInterrupt within ``bound`` seconds of it."""
    arg = prepare()
    started = time.monotonic()
    make(arg)
    whole = time.monotonic() - started
    assert whole > 0.5, f"the conversion takes only {whole:.2f} s: the case needs more input"
    timer = threading.Timer(0.05, lambda: os.kill(os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        make(arg)
    except KeyboardInterrupt:
        took = time.monotonic() - started
        assert took < 0.05 + bound, f"Ctrl-C took {took:.2f} s (the whole conversion {whole:.2f} s)"
    else:
        raise AssertionError(f"the conversion ended without KeyboardInterrupt ({whole:.2f} s)")
    finally:
        timer.cancel()


@case(seconds=60, memory_mb=1200)
def case_ctrl_c_while_a_large_dict_converts(tmp: Path) -> None:
    """SAFETY.md: converting input data checks Ctrl-C every 65,536 objects. A dict of 3,000,000
    keys (about 3 s to convert): KeyboardInterrupt came only when the conversion had finished
    (3 s after the signal); lists of 20,000,000 ints or of records, about 1 s late."""
    import ptc

    _interrupt_within(
        lambda data: ptc.Session(data=data),
        lambda: {"m": {f"k{i}": i for i in range(3_000_000)}},
        0.3,
    )


@case(seconds=60, memory_mb=1200)
def case_ctrl_c_while_a_large_json_text_parses(tmp: Path) -> None:
    """``Session.from_json`` of a 100 MB text (3,000,000 records, about 1.3 s): Ctrl-C 50 ms
    in was answered only after the whole parse."""
    import ptc

    _interrupt_within(
        ptc.Session.from_json,
        lambda: (
            '{"rows": ['
            + ",".join(f'{{"id": {i}, "name": "n{i}"}}' for i in range(3_000_000))
            + "]}"
        ),
        0.3,
    )


# -- regex builtins (redteam_regex.py) ------------------------------------------------------------
