"""Value mapping between Python and PTC-Lisp, both ways (LANGUAGE.md §3 "Python mapping")."""

from __future__ import annotations

import datetime
import decimal
import math
from typing import Any

import ptc
import pytest

I64_MAX = 2**63 - 1
I64_MIN = -(2**63)


@pytest.mark.parametrize(
    "value",
    [None, True, False, 0, -5, I64_MAX, I64_MIN, 1.5, -0.25, "", "héllo ☃", "a\nb"],
)
def test_scalars_round_trip_with_their_type(value: Any) -> None:
    """LANGUAGE.md §3: None<->nil, bool<->boolean, int<->integer, float<->float, str<->string."""
    out = ptc.eval("data/x", data={"x": value})
    assert out == value
    assert type(out) is type(value)


def test_booleans_are_not_integers() -> None:
    """LANGUAGE.md §3: `True` maps to the boolean `true`, not to the integer 1."""
    assert ptc.eval("(= data/t true)", data={"t": True}) is True
    assert ptc.eval("(= data/t 1)", data={"t": True}) is False
    assert ptc.eval("(= data/one true)", data={"one": 1}) is False


def test_special_floats_round_trip() -> None:
    """LANGUAGE.md §3: floats are IEEE-754 doubles, including +inf, -inf and NaN."""
    inf, ninf, nan = ptc.eval(
        "[data/a data/b data/c]", data={"a": math.inf, "b": -math.inf, "c": math.nan}
    )
    assert inf == math.inf
    assert ninf == -math.inf
    assert math.isnan(nan)


def test_program_results_map_back_to_python() -> None:
    """LANGUAGE.md §3: nil, booleans, numbers, strings, keywords, vectors, maps, sets come back."""
    out = ptc.eval('[nil true false 42 2.5 "s" :kw [1 [2]] {:a 1} #{3}]')
    assert out == [None, True, False, 42, 2.5, "s", "kw", [1, [2]], {"a": 1}, {3}]
    assert type(out[6]) is ptc.Keyword
    assert type(out[7]) is list and type(out[7][1]) is list
    assert type(out[8]) is dict
    assert type(out[9]) is set


@pytest.mark.parametrize("big", [I64_MAX + 1, I64_MIN - 1, 2**100, -(2**200)])
def test_integers_beyond_64_bits_are_refused_on_input(big: int) -> None:
    """LANGUAGE.md §3: an integer beyond 64 bits is a clear TypeError on input, never wrapped."""
    with pytest.raises(TypeError) as info:
        ptc.run("data/x", data={"x": big})
    assert str(info.value).startswith("data.x")
    assert str(big) in str(info.value)


def test_big_integer_path_is_named() -> None:
    """LANGUAGE.md §3: the TypeError names the path of the offending value."""
    with pytest.raises(TypeError) as info:
        ptc.run("1", data={"o": {"n": [1, 2**64]}})
    assert str(info.value).startswith("data.o.n[1]")


@pytest.mark.parametrize(
    "source",
    [
        "(* 9223372036854775807 2)",
        "(+ 9223372036854775807 1)",
        "(- -9223372036854775808 1)",
        "(inc data/x)",
    ],
)
def test_integer_overflow_in_a_program_is_arithmetic_error(source: str) -> None:
    """LANGUAGE.md §3/§10.2: an exact result that does not fit is `arithmetic_error`."""
    r = ptc.run(source, data={"x": I64_MAX})
    assert r.error is not None
    assert r.error.type == "arithmetic_error"
    assert r.value is None


def test_tuples_are_accepted_as_vectors() -> None:
    """LANGUAGE.md §3: `list`/`tuple` -> vector -> `list`."""
    out = ptc.eval("data/t", data={"t": (1, (2, 3), [4])})
    assert out == [1, [2, 3], [4]]
    assert type(out) is list and type(out[1]) is list
    assert ptc.eval("(count data/t)", data={"t": (7, 8, 9)}) == 3


def test_sets_map_to_sets() -> None:
    """LANGUAGE.md §3: `set`/`frozenset` <-> set."""
    out = ptc.eval("data/s", data={"s": frozenset({1, 2})})
    assert out == {1, 2}
    assert type(out) is set
    assert ptc.eval("(count data/s)", data={"s": {"a", "b", "c"}}) == 3
    r = ptc.run("(println data/s)", data={"s": {7}})
    assert r.prints == ["#{7}"]


def test_str_keys_that_are_keyword_text_become_keywords() -> None:
    """LANGUAGE.md §3: a str dict key that is valid keyword text becomes a keyword, so `(:name p)`
    works and the data prints as `{:name "Alice"}`."""
    data = {"p": {"name": "Alice", "tier": "gold"}}
    assert ptc.eval("(:name data/p)", data=data) == "Alice"
    assert ptc.eval("(get data/p :tier)", data=data) == "gold"
    r = ptc.run("(println data/p)", data=data)
    assert r.prints == ['{:name "Alice", :tier "gold"}']
    out = ptc.eval("data/p", data=data)
    assert out == {"name": "Alice", "tier": "gold"}
    assert all(type(k) is ptc.Keyword for k in out)
    assert out["name"] == "Alice"


@pytest.mark.parametrize("key", ["name", "ok?", "a-b_c!", "x2", "_private", "A", "9"])
def test_valid_keyword_text_keys(key: str) -> None:
    """LANGUAGE.md §2.6/§3: keys made of `[A-Za-z0-9_?!-]+` become keywords (and come back as
    `ptc.Keyword`)."""
    out = ptc.eval("data/m", data={"m": {key: 1}})
    (k,) = out
    assert type(k) is ptc.Keyword
    assert k == key


@pytest.mark.parametrize("key", ["first name", "a.b", "a/b", ":x", "ü", "", "tab\tkey"])
def test_other_str_keys_stay_strings(key: str) -> None:
    """LANGUAGE.md §3: other str keys keep their type (a string key)."""
    out = ptc.eval("data/m", data={"m": {key: 1}})
    (k,) = out
    assert type(k) is str
    assert k == key


def test_non_keyword_string_keys_are_read_and_printed_as_strings() -> None:
    """LANGUAGE.md §3/§9.1: `{"first name" "Ada"}` keeps a string key, printed quoted."""
    data = {"p": {"first name": "Ada", "tier": "gold"}}
    assert ptc.eval('(get data/p "first name")', data=data) == "Ada"
    r = ptc.run("(println data/p)", data=data)
    assert r.prints == ['{"first name" "Ada", :tier "gold"}']


def test_non_string_keys_keep_their_type() -> None:
    """LANGUAGE.md §3: non-str keys keep their type (`{0 "zero"}` is a lookup table)."""
    data = {"m": {1: "one", 2.5: "x", None: "nil"}}
    assert ptc.eval("(get data/m 1)", data=data) == "one"
    out = ptc.eval("data/m", data=data)
    assert out == {1: "one", 2.5: "x", None: "nil"}
    assert type(next(iter(out))) is int


def test_output_map_keys() -> None:
    """LANGUAGE.md §3: keyword keys come back as `ptc.Keyword`, string keys as plain `str`."""
    out = ptc.eval('{:a 1 "b c" 2 "d" 3 7 4}')
    assert out == {"a": 1, "b c": 2, "d": 3, 7: 4}
    types = {k: type(k) for k in out}
    assert types == {"a": ptc.Keyword, "b c": str, "d": str, 7: int}


def test_map_order_is_kept_both_ways() -> None:
    """LANGUAGE.md §3: maps remember insertion order; printing follows it."""
    data = {"m": {"z": 1, "a": 2, "m": 3}}
    assert list(ptc.eval("data/m", data=data)) == ["z", "a", "m"]
    assert ptc.run("(println data/m)", data=data).prints == ["{:z 1, :a 2, :m 3}"]


def test_unsupported_value_names_its_path() -> None:
    """LANGUAGE.md §3: values with no PTC-Lisp counterpart are refused with a TypeError naming
    their path, e.g. `data.orders[3].created: datetime is not supported`."""
    orders = [{"id": i} for i in range(3)]
    orders.append({"id": 3, "created": datetime.datetime(2031, 5, 4, 6, 7, 8)})
    with pytest.raises(TypeError) as info:
        ptc.run("(count data/orders)", data={"orders": orders})
    assert str(info.value).startswith("data.orders[3].created: datetime is not supported")


@pytest.mark.parametrize(
    ("data", "prefix"),
    [
        ({"x": object()}, "data.x: object"),
        ({"x": [1, {"y": b"raw"}]}, "data.x[1].y: bytes"),
        ({"x": {"when": datetime.date(2031, 5, 4)}}, "data.x.when: date"),
        ({"x": (1, 2, decimal.Decimal("1.5"))}, "data.x[2]: Decimal"),
        ({"x": 1j}, "data.x: complex"),
    ],
)
def test_unsupported_values_are_type_errors_with_paths(data: dict[str, Any], prefix: str) -> None:
    """LANGUAGE.md §3: refusal is a TypeError whose message starts with the value's path."""
    with pytest.raises(TypeError) as info:
        ptc.run("1", data=data)
    assert str(info.value).startswith(prefix)
    assert "not supported" in str(info.value)


def test_data_must_be_a_mapping() -> None:
    """`data` is a mapping of name -> value; anything else is a TypeError."""
    with pytest.raises(TypeError):
        ptc.run("1", data=[1, 2])  # type: ignore[arg-type]


def test_output_values_are_fresh_python_objects() -> None:
    """LANGUAGE.md §8.1: data is read-only; mutating a returned value does not affect the input."""
    data = {"xs": [1, 2, 3]}
    s = ptc.Session(data=data)
    out = s.run("data/xs").value
    out.append(99)
    data["xs"].append(100)
    assert s.run("(count data/xs)").value == 3


def test_session_converts_data_once_at_construction() -> None:
    """ARCHITECTURE "Convert once": a Session converts its data when built, so bad data fails
    there with the path-naming TypeError, before any run."""
    with pytest.raises(TypeError) as info:
        ptc.Session(data={"rows": [{"at": datetime.time(6, 7)}]})
    assert str(info.value).startswith("data.rows[0].at: time is not supported")


def test_keyword_and_string_key_with_the_same_text_is_an_error_not_a_silent_loss() -> None:
    """`ptc.Keyword("a") == "a"`, so a map holding both `:a` and `"a"` cannot become a dict
    without losing an entry: the run reports it instead."""
    r = ptc.run('{"a" 1 :a 2}')
    assert r.error is not None
    assert r.error.type == "execution_error"
    assert "equal in Python" in r.error.message
    assert ptc.run('{"a b" 1 :a 2}').value == {"a b": 1, "a": 2}
