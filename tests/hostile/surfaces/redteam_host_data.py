"""Red team, host data: ``Session(data=...)``, ``Session.from_json`` and ``from_file`` with
keys Python keeps apart but the program would merge (NaN), keys and text no program string can
hold (lone surrogates), objects whose methods are hostile, shared and cyclic structures,
files that are not what they claim, and Ctrl-C while a large input converts."""

from __future__ import annotations

import collections.abc
import datetime
import decimal
import os
import subprocess
import time
from pathlib import Path
from typing import Any
from unittest import mock

from . import case


def _raises(exc: type[BaseException], fn: Any) -> BaseException:
    try:
        fn()
    except exc as e:
        return e
    raise AssertionError(f"{fn} did not raise {exc.__name__}")


@case(seconds=30, memory_mb=300)
def case_objects_that_are_not_data_are_refused_by_path(tmp: Path) -> None:
    """A mock (answers every attribute), an object whose __getattr__ returns itself, a Mapping
    that is not a dict (raising in __getitem__, or iterating forever), a datetime with a tzinfo
    whose methods raise or sleep, a Decimal, a range of 10**12: each a TypeError naming the
    path, at once (nothing of theirs is called, so nothing hangs)."""
    import ptc

    class Anything:
        def __getattr__(self, name: str) -> Any:
            return lambda *a, **k: self

    class Raising(collections.abc.Mapping):  # type: ignore[type-arg]
        def __getitem__(self, k: Any) -> Any:
            raise KeyError(k)

        def __iter__(self) -> Any:
            return iter(["a"])

        def __len__(self) -> int:
            return 1

    class Forever(Raising):
        def __iter__(self) -> Any:
            i = 0
            while True:
                i += 1
                yield str(i)

    class Sleepy(datetime.tzinfo):
        def utcoffset(self, dt: Any) -> Any:
            time.sleep(30)

    values = {
        "mock": mock.MagicMock(),
        "anything": Anything(),
        "raising": Raising(),
        "forever": Forever(),
        "tz": datetime.datetime(2020, 1, 1, tzinfo=Sleepy()),
        "decimal": decimal.Decimal("NaN"),
        "range": range(10**12),
    }
    for name, value in values.items():
        started = time.monotonic()
        err = _raises(TypeError, lambda value=value: ptc.Session(data={"x": [1, {"y": value}]}))
        assert str(err).startswith("data.x[1].y: ") and "is not supported" in str(err), err
        assert time.monotonic() - started < 1, name


@case(seconds=30, memory_mb=300)
def case_subclasses_with_hostile_methods_convert_as_what_they_hold(tmp: Path) -> None:
    """A dict subclass whose items(), keys(), __iter__ and __getitem__ raise, a str subclass
    whose __str__ lies, an int whose __index__ raises, a float whose __float__ raises: each
    converts as the value it holds (the walk reads the objects, not their methods)."""
    import ptc

    class D(dict):  # type: ignore[type-arg]
        def items(self) -> Any:
            raise RuntimeError("items")

        def keys(self) -> Any:
            raise RuntimeError("keys")

        def __iter__(self) -> Any:
            raise RuntimeError("iter")

        def __getitem__(self, k: Any) -> Any:
            raise RuntimeError("getitem")

    class S(str):
        def __str__(self) -> str:
            return "a lie"

    class I(int):  # noqa: E742
        def __index__(self) -> int:
            raise RuntimeError("index")

    class F(float):
        def __float__(self) -> float:
            raise RuntimeError("float")

    s = ptc.Session(data={"d": D(a=1), "s": S("held"), "i": I(5), "f": F(1.5)})
    assert s.run("[data/d data/s data/i data/f]").value == [{"a": 1}, "held", 5, 1.5]


@case(seconds=30, memory_mb=400)
def case_a_list_shared_ten_thousand_times_converts_once(tmp: Path) -> None:
    """One 100,000-item list referenced 10,000 times (a billion items when walked expanded):
    the Session is made in well under a second with little memory; returning it whole, or
    flattening it, is a memory limit, not a hang."""
    import ptc

    shared = list(range(100_000))
    started = time.monotonic()
    s = ptc.Session(data={"a": [shared] * 10_000})
    assert time.monotonic() - started < 1.0
    assert s.run("[(count data/a) (count (first data/a))]").value == [10_000, 100_000]
    for program in ("data/a", "(count (flatten data/a))"):
        started = time.monotonic()
        r = s.run(program, limits={"timeout_ms": 2000})
        assert r.error is not None and r.error.type in ("memory_exceeded", "timeout"), r
        assert time.monotonic() - started < 2 * 1.2 + 0.15


@case(seconds=30, memory_mb=300)
def case_a_cycle_through_three_containers_is_named(tmp: Path) -> None:
    """A list holding a dict holding a list holding the first list: TypeError naming where the
    cycle closes; a tuple inside the cycle too."""
    import ptc

    outer: list[Any] = [1]
    middle = {"inner": [outer]}
    outer.append(middle)
    err = _raises(TypeError, lambda: ptc.Session(data={"c": outer}))
    assert str(err).startswith("data.c[1].inner[0]: ") and "itself" in str(err), err
    looped: list[Any] = []
    looped.append(({"k": looped},))
    err = _raises(TypeError, lambda: ptc.Session(data={"t": looped}))
    assert str(err).startswith("data.t[0][0].k: "), err


@case(seconds=30, memory_mb=300)
def case_duplicate_keys_in_json_keep_the_last_as_python_does(tmp: Path) -> None:
    """``{"a": 1, "a": 2}`` at the top and nested: the last value wins, as with Python's json
    (the same text read either way gives the same data)."""
    import json

    import ptc

    text = '{"a": 1, "a": 2, "m": {"x": 1, "y": 0, "x": 3}}'
    s = ptc.Session.from_json(text)
    assert s.run("[data/a data/m]").value == [2, {"x": 3, "y": 0}]
    assert json.loads(text) == {"a": 2, "m": {"x": 3, "y": 0}}


@case(seconds=30, memory_mb=300)
def case_files_that_are_not_json_objects(tmp: Path) -> None:
    """from_file of a directory, a missing file, bytes that are not UTF-8; from_json of such
    bytes: the OS or decoding error naming the file or the byte, never a crash."""
    import ptc

    (tmp / "latin1.json").write_bytes(b'{"a": "caf\xe9"}')
    err = _raises(IsADirectoryError, lambda: ptc.Session.from_file(tmp))
    assert str(tmp) in str(err), err
    err = _raises(FileNotFoundError, lambda: ptc.Session.from_file(tmp / "none.json"))
    assert str(tmp / "none.json") in str(err), err
    err = _raises(UnicodeDecodeError, lambda: ptc.Session.from_file(tmp / "latin1.json"))
    assert "position 10" in str(err), err
    err = _raises(UnicodeDecodeError, lambda: ptc.Session.from_json(b'{"a": "caf\xe9"}'))
    assert "position 10" in str(err), err


@case(seconds=60, memory_mb=700)
def case_json_large_in_one_string_or_in_keys(tmp: Path) -> None:
    """A 40 MB string and an object of 1,000,000 keys load in seconds."""
    import ptc

    started = time.monotonic()
    s = ptc.Session.from_json('{"a": "' + "x" * 40_000_000 + '"}')
    assert s.run("(count data/a)").value == 40_000_000
    keys = "{" + ",".join(f'"k{i}": {i}' for i in range(1_000_000)) + "}"
    s = ptc.Session.from_json(keys)
    assert s.run("data/k999999").value == 999_999
    assert time.monotonic() - started < 10


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
    # the signal comes from outside, as Ctrl-C does: a Python thread sending it would need the
    # GIL, which the conversion holds
    started = time.monotonic()
    killer = subprocess.Popen(["sh", "-c", f"sleep 0.05; kill -INT {os.getpid()}"])
    try:
        make(arg)
    except KeyboardInterrupt:
        took = time.monotonic() - started
        assert took < 0.05 + bound, f"Ctrl-C took {took:.2f} s (the whole conversion {whole:.2f} s)"
    else:
        raise AssertionError(f"the conversion ended without KeyboardInterrupt ({whole:.2f} s)")
    finally:
        killer.wait()


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
