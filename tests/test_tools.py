"""Host tools: registration, argument shapes, conversion, errors and call records
(LANGUAGE.md §8.2, §1.4)."""

from __future__ import annotations

import time
from typing import Any

import ptc
import pytest


class Recorder:
    """Collects what a tool received (positional args and keyword args)."""

    def __init__(self, result: Any = None) -> None:
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.result = result

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append((args, kwargs))
        return self.result


def list_ports() -> list[str]:
    return ["Oslo", "Bergen"]


def find_flights(origin: str, limit: int = 1) -> list[str]:
    return [f"{origin}-{i}" for i in range(limit)]


def test_tools_as_a_mapping_of_name_to_callable() -> None:
    """LANGUAGE.md §8.2: `(tool/name ...)` calls the tool registered as `name`, hyphens included."""
    r = ptc.run('(tool/find-flights "OSL")', tools={"find-flights": find_flights})
    assert r.error is None
    assert r.value == ["OSL-0"]


def test_tools_as_a_list_use_the_function_name_with_hyphens() -> None:
    """A list of callables is named after `fn.__name__` with `_` -> `-`."""
    r = ptc.run("(tool/list-ports)", tools=[list_ports, find_flights])
    assert r.error is None
    assert r.value == ["Oslo", "Bergen"]
    r = ptc.run("(tool/list_ports)", tools=[list_ports, find_flights])
    assert r.error is not None
    assert r.error.type == "unknown_tool"
    assert "list-ports" in r.error.message


def test_positional_arguments() -> None:
    """LANGUAGE.md §8.2: `(tool/f a b)` calls `f(a, b)`."""
    rec = Recorder(result="ok")
    r = ptc.run('(tool/f 1 "two" [3] nil)', tools={"f": rec})
    assert r.value == "ok"
    assert rec.calls == [((1, "two", [3], None), {})]


def test_no_arguments() -> None:
    """LANGUAGE.md §8.2: `(tool/list-ports)` passes an empty named-argument map, i.e. `f()`."""
    rec = Recorder()
    ptc.run("(tool/f)", tools={"f": rec})
    assert rec.calls == [((), {})]


def test_single_map_becomes_keyword_arguments() -> None:
    """LANGUAGE.md §8.2: `(tool/f {:k v})` calls `f(k=v)` when the function takes keyword
    parameters."""
    r = ptc.run('(tool/find-flights {:origin "OSL" :limit 2})', tools=[find_flights])
    assert r.error is None
    assert r.value == ["OSL-0", "OSL-1"]


def test_keyword_value_pairs_become_keyword_arguments() -> None:
    """LANGUAGE.md §8.2: `(tool/f :city "Oslo" :limit 2)` is named arguments."""
    rec = Recorder()
    ptc.run('(tool/geocode :city "Oslo" :limit 2)', tools={"geocode": rec})
    assert rec.calls == [((), {"city": "Oslo", "limit": 2})]


def test_named_argument_keys_are_str_with_underscores() -> None:
    """LANGUAGE.md §8.2: keyword keys of named args become `str` with `-` -> `_`, recursively."""
    rec = Recorder()
    ptc.run(
        '(tool/geocode {:zip-code "0150" :opts {:max-hits 3 "raw-key" 1} :rows [{:a-b 1}]})',
        tools={"geocode": rec},
    )
    ((args, kwargs),) = rec.calls
    assert args == ()
    assert kwargs == {
        "zip_code": "0150",
        "opts": {"max_hits": 3, "raw-key": 1},
        "rows": [{"a_b": 1}],
    }
    assert all(type(k) is str for k in kwargs)
    assert all(type(k) is str for k in kwargs["opts"])
    assert all(type(k) is str for k in kwargs["rows"][0])


def test_named_argument_values_convert_as_any_value_but_for_their_keyword_keys() -> None:
    """A named argument's value converts as a positional one does (one walker): a vector used as
    a map key is a tuple, a set's members and a keyword value keep their keyword objects; only
    the keyword keys of its maps, at every depth, become `str` with `-` -> `_`."""
    rec = Recorder()
    r = ptc.run(
        "(tool/geocode {:opts {[1 2] :x-y} :tags #{:a-b} :deep [[{:k-1 #{[1]}}]]})",
        tools={"geocode": rec},
    )
    assert r.error is None
    ((args, kwargs),) = rec.calls
    assert args == ()
    assert kwargs == {
        "opts": {(1, 2): ptc.Keyword("x-y")},
        "tags": {ptc.Keyword("a-b")},
        "deep": [[{"k_1": {(1,)}}]],
    }
    assert type(kwargs["opts"][(1, 2)]) is ptc.Keyword


def test_a_named_argument_nested_past_the_output_limit_is_a_tool_error() -> None:
    """SAFETY.md: a value nested deeper than Python can print is refused at the boundary, as a
    tool error the program sees, and the tool is not called (positional and named alike)."""
    deep = "(reduce (fn [a _] [a]) 1 (range 1000))"
    for call in (f"(tool/geocode {{:x {deep}}})", f"(tool/geocode {deep})"):
        rec = Recorder()
        r = ptc.run(call, tools={"geocode": rec})
        assert rec.calls == []
        assert isinstance(r.error, ptc.ToolError), call
        assert (
            "ValueError: the value is nested more than 900 levels deep and cannot be converted "
            "to Python" in r.error.message
        ), r.error.message


@pytest.mark.parametrize(
    ("call", "key"),
    [
        ("(tool/geocode {:a-b 1 :a_b 2})", ":a_b"),
        ("(tool/geocode :zip-code 1 :zip_code 2)", ":zip_code"),
        ("(tool/geocode {:opts {:max-hits 1 :max_hits 2}})", ":max_hits"),
        ('(tool/geocode {:rows [{:a 1 "a" 2}]})', '"a"'),
    ],
)
def test_named_argument_keys_that_become_one_python_key_are_an_error(call: str, key: str) -> None:
    """SAFETY.md: nothing is lost silently across the boundary: two different keys that become
    one Python key (`-` -> `_`, a keyword equal to a string of its text) are a tool error naming
    the key, and the tool is not called."""
    rec = Recorder()
    r = ptc.run(call, tools={"geocode": rec})
    assert rec.calls == []
    assert isinstance(r.error, ptc.ToolError)
    assert "two named arguments become the one Python key" in r.error.message
    assert f"which would keep only one: {key} and an earlier key" in r.error.message


def test_a_repeated_keyword_pair_keeps_the_last_value() -> None:
    """The same keyword twice is one key in the program too: the last value, as in a map."""
    rec = Recorder()
    ptc.run("(tool/geocode :limit 1 :limit 2)", tools={"geocode": rec})
    assert rec.calls == [((), {"limit": 2})]


def test_pairs_with_hyphenated_keys() -> None:
    """LANGUAGE.md §8.2: `:zip-code` -> `zip_code` also for keyword/value pairs."""

    def geocode(city: str, zip_code: str) -> str:
        return f"{city}/{zip_code}"

    assert ptc.eval('(tool/geocode :city "Oslo" :zip-code "0150")', tools=[geocode]) == "Oslo/0150"


def test_map_goes_whole_to_a_function_without_matching_keyword_parameters() -> None:
    """`(tool/f {...})` calls `f({...})` when the function does not take those keyword
    parameters; the keys are strings with `-` -> `_`."""
    received: list[Any] = []

    def save(record: dict[str, Any]) -> bool:
        received.append(record)
        return True

    assert ptc.eval('(tool/save {:user-id 7 :name "Ada"})', tools=[save]) is True
    assert received == [{"user_id": 7, "name": "Ada"}]


def test_other_shapes_are_positional() -> None:
    """LANGUAGE.md §8.2: `(tool/f {:depth 3} 9)` passes the values positionally."""
    rec = Recorder()
    ptc.run("(tool/f {:depth 3} 9)", tools={"f": rec})
    ((args, kwargs),) = rec.calls
    assert kwargs == {}
    assert args == ({"depth": 3}, 9)
    assert type(next(iter(args[0]))) is ptc.Keyword


def test_odd_keyword_pairs_are_positional() -> None:
    """LANGUAGE.md §8.2: pairs need an even count with a keyword in every key position."""
    rec = Recorder()
    ptc.run('(tool/f :city "Oslo" 3 4)', tools={"f": rec})
    assert rec.calls == [((ptc.Keyword("city"), "Oslo", 3, 4), {})]


def test_python_exception_becomes_tool_error() -> None:
    """LANGUAGE.md §8.2: a tool that raises gives `tool_error`
    (`Tool 'geocode' failed: ValueError: ...`), never a crash."""

    def geocode(city: str) -> None:
        raise ValueError(f"no such city: {city}")

    r = ptc.run('(def before 1) (tool/geocode "Atlantis")', tools=[geocode])
    assert r.ok is False
    assert r.error is not None
    assert r.error.type == "tool_error"
    assert isinstance(r.error, ptc.ToolError)
    assert r.error.message == "Tool 'geocode' failed: ValueError: no such city: Atlantis"
    (call,) = r.tool_calls
    assert call.name == "geocode"
    assert call.args == ["Atlantis"]
    assert call.result is None
    assert call.error is not None
    assert "ValueError" in call.error
    assert "no such city: Atlantis" in call.error


def test_tool_exception_via_eval_raises_tool_error() -> None:
    """`ptc.eval` raises `ToolError` for a failing tool."""

    def geocode() -> None:
        raise KeyError("city")

    with pytest.raises(ptc.ToolError) as info:
        ptc.eval("(tool/geocode)", tools=[geocode])
    assert info.value.message.startswith("Tool 'geocode' failed: KeyError")


def test_unknown_tool_lists_available_tools() -> None:
    """LANGUAGE.md §8.2: `Unknown tool: geocod. Available tools: geocode, list-ports`."""

    def geocode(city: str) -> str:
        return city

    r = ptc.run('(tool/geocod "Oslo")', tools=[geocode, list_ports])
    assert r.error is not None
    assert r.error.type == "unknown_tool"
    assert isinstance(r.error, ptc.NameResolutionError)
    assert r.error.message == "Unknown tool: geocod. Available tools: geocode, list-ports"


def test_unknown_tool_is_raised_at_the_call_not_during_analysis() -> None:
    """LANGUAGE.md §8.2: unknown tools fail when called, so an untaken branch is fine."""
    r = ptc.run('(println "ran") (if false (tool/nope) 1)')
    assert r.error is None
    assert r.value == 1
    assert r.prints == ["ran"]


def test_tool_results_are_converted_like_input_data() -> None:
    """LANGUAGE.md §8.2/§3: a tool's result is an ordinary value (keyword keys, tuples, sets)."""

    def lookup() -> dict[Any, Any]:
        return {"name": "Ada", "first name": "A", "tags": ("x", "y"), "ids": {1}, 3: None}

    r = ptc.run(
        '(def p (tool/lookup)) [(:name p) (get p "first name") (count (:tags p)) p]', tools=[lookup]
    )
    assert r.error is None
    name, first, ntags, p = r.value
    assert (name, first, ntags) == ("Ada", "A", 2)
    assert p == {"name": "Ada", "first name": "A", "tags": ["x", "y"], "ids": {1}, 3: None}
    key_types = {k: type(k) for k in p}
    assert key_types == {
        "name": ptc.Keyword,
        "first name": str,
        "tags": ptc.Keyword,
        "ids": ptc.Keyword,
        3: int,
    }


def test_unconvertible_tool_result_is_tool_error() -> None:
    """LANGUAGE.md §8.2: a tool that returns something unusable is a `tool_error`, not a crash."""

    def when() -> object:
        return object()

    r = ptc.run("(tool/when)", tools=[when])
    assert r.error is not None
    assert r.error.type == "tool_error"
    assert r.error.message.startswith("Tool 'when' failed: ")


def test_every_call_is_recorded_with_args_as_written() -> None:
    """LANGUAGE.md §1.4/§8.2: each call records name, arguments as written, result or error and
    duration, in program order."""

    def geocode(city: str, zip_code: str = "") -> dict[str, float]:
        return {"lat": 59.9}

    def pause() -> str:
        time.sleep(0.03)
        return "done"

    r = ptc.run(
        '(tool/geocode {:city "Oslo" :zip-code "0150"}) (tool/geocode :city "Bergen") (tool/pause)',
        tools=[geocode, pause],
    )
    assert r.error is None
    assert [c.name for c in r.tool_calls] == ["geocode", "geocode", "pause"]
    first, second, third = r.tool_calls
    assert first.args == [{"city": "Oslo", "zip-code": "0150"}]
    assert all(type(k) is ptc.Keyword for k in first.args[0])
    assert second.args == [ptc.Keyword("city"), "Bergen"]
    assert first.result == {"lat": 59.9}
    assert (first.error, second.error, third.error) == (None, None, None)
    assert third.result == "done"
    assert third.duration_ms >= 25.0
    assert all(isinstance(c.duration_ms, float) for c in r.tool_calls)


def test_calls_are_recorded_even_when_the_run_fails_later() -> None:
    """LANGUAGE.md §1.4: tool records are kept for error outcomes as far as evaluation got."""
    rec = Recorder(result=1)
    r = ptc.run("(tool/f 1) (tool/f 2) (no-such-fn)", tools={"f": rec})
    assert r.error is not None
    assert r.error.type == "undefined_variable"
    assert [(c.name, c.args, c.result) for c in r.tool_calls] == [("f", [1], 1), ("f", [2], 1)]


def test_arguments_are_evaluated_before_the_call_and_calls_happen_in_order() -> None:
    """LANGUAGE.md §1.2/§8.2: arguments left to right, then the call; calls in program order."""
    order: list[str] = []

    def log(tag: str) -> str:
        order.append(tag)
        return tag

    r = ptc.run('(tool/log (str (tool/log "a") (tool/log "b")))', tools=[log])
    assert r.value == "ab"
    assert order == ["a", "b", "ab"]


def test_skipped_tool_call_is_not_made() -> None:
    """LANGUAGE.md §5.7: unevaluated operands of `and`/`or` have no effect."""
    rec = Recorder(result=True)
    r = ptc.run("(or true (tool/f 1))", tools={"f": rec})
    assert r.value is True
    assert rec.calls == []
    assert r.tool_calls == []


def test_tool_value_outside_call_position() -> None:
    """LANGUAGE.md §5.16: `tool/name` outside call position is a function value."""
    r = ptc.run("(map tool/double [1 2 3])", tools={"double": lambda x: x * 2})
    assert r.value == [2, 4, 6]
    assert [c.args for c in r.tool_calls] == [[1], [2], [3]]
