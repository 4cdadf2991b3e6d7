"""Name resolution: `data/`, `tool/`, `user/`, bare-name fallback, ambiguity, shadowing and
"Did you mean" hints (LANGUAGE.md §8; seed 000 "Namespace Design"; seed 001 NS-001..NS-009)."""

from __future__ import annotations

import ptc
import pytest


def test_data_prefix_reads_input() -> None:
    """LANGUAGE.md §8.1: `data/name` reads the input value under `name`."""
    assert ptc.eval("data/cities", data={"cities": ["Oslo", "Bergen"]}) == ["Oslo", "Bergen"]


def test_missing_data_key_is_nil() -> None:
    """LANGUAGE.md §8.1: a missing key gives nil."""
    assert ptc.eval("data/nothing", data={"cities": []}) is None


def test_bare_name_falls_back_to_data() -> None:
    """LANGUAGE.md §8.4 step 4 / NS-005: a bare name with only a data key denotes `data/name`."""
    assert ptc.eval("(count cities)", data={"cities": ["Oslo", "Bergen"]}) == 2


def test_bare_name_falls_back_to_a_tool() -> None:
    """LANGUAGE.md §8.4 step 4 / NS-004: a bare name with only a tool denotes that tool; a call is
    a tool call (recorded like `tool/name`)."""
    r = ptc.run('(geocode "Oslo")', tools={"geocode": lambda city: city.upper()})
    assert r.error is None
    assert r.value == "OSLO"
    assert [(c.name, c.args) for c in r.tool_calls] == [("geocode", ["Oslo"])]


def test_bare_tool_name_as_a_value() -> None:
    """LANGUAGE.md §8.4: outside call position a fallback tool name is a function value."""
    r = ptc.run("(map twice [1 2])", tools={"twice": lambda x: x * 2})
    assert r.value == [2, 4]


def test_ambiguous_reference_names_both() -> None:
    """LANGUAGE.md §8.4 / NS-007: a bare name that is both a tool and a data key is
    `ambiguous_reference` naming `tool/x` and `data/x`."""
    r = ptc.run("(count geocode)", tools={"geocode": lambda: 1}, data={"geocode": [1, 2]})
    assert r.error is not None
    assert r.error.type == "ambiguous_reference"
    assert isinstance(r.error, ptc.NameResolutionError)
    text = r.error.message + " " + (r.error.hint or "")
    assert "tool/geocode" in text
    assert "data/geocode" in text


def test_ambiguous_name_in_untaken_branch_does_not_fail() -> None:
    """LANGUAGE.md §8.4: resolution happens when the symbol is evaluated."""
    r = ptc.run("(if false geocode 1)", tools={"geocode": lambda: 1}, data={"geocode": 2})
    assert r.error is None
    assert r.value == 1


def test_explicit_prefixes_resolve_an_ambiguous_name() -> None:
    """LANGUAGE.md §8.4: explicit `data/x` and `tool/x` bypass every shadowing rule."""
    r = ptc.run(
        "[data/geocode (tool/geocode)]", tools={"geocode": lambda: "tool"}, data={"geocode": "data"}
    )
    assert r.error is None
    assert r.value == ["data", "tool"]


def test_locals_shadow_fallback() -> None:
    """LANGUAGE.md §8.4 / NS-006: local bindings win over tools and data."""
    r = ptc.run("(let [geocode 1] geocode)", tools={"geocode": lambda: 9}, data={"geocode": 2})
    assert r.error is None
    assert r.value == 1
    assert r.tool_calls == []


def test_user_definition_shadows_fallback() -> None:
    """LANGUAGE.md §5.8/§8.4: a `def` of a tool or data name is allowed and shadows the fallback."""
    r = ptc.run("(def geocode 5) geocode", tools={"geocode": lambda: 9}, data={"geocode": 2})
    assert r.error is None
    assert r.value == 5
    r = ptc.run("(def cities [:x]) cities", data={"cities": ["Oslo"]})
    assert r.value == ["x"]


def test_later_def_takes_precedence_from_then_on() -> None:
    """LANGUAGE.md §8.4: a later `def` of the same name takes precedence from then on."""
    r = ptc.run("(def before limit) (def limit 5) [before limit]", data={"limit": 1})
    assert r.error is None
    assert r.value == [1, 5]


def test_data_prefix_reaches_input_when_a_def_shadows_it() -> None:
    """LANGUAGE.md §8.1 / NS-009: `data/x` still reaches the input when a user `def` shadows `x`,
    also in a later turn."""
    s = ptc.Session(data={"x": 1})
    r = s.run("(def x 5) [x data/x]")
    assert r.value == [5, 1]
    assert s.run("[x data/x]").value == [5, 1]


def test_user_prefix_ignores_locals() -> None:
    """LANGUAGE.md §8.3: `user/name` reads the definition and ignores local bindings."""
    assert ptc.eval("(def x 1) (let [x 2] [x user/x])") == [2, 1]
    r = ptc.run("user/nothing")
    assert r.error is not None
    assert r.error.type == "undefined_variable"


def test_builtins_win_over_tools_and_data() -> None:
    """LANGUAGE.md §8.4: builtins can never be shadowed by tools or data."""
    r = ptc.run(
        "[(count [1 2]) data/count (tool/count)]", tools={"count": lambda: 9}, data={"count": 7}
    )
    assert r.error is None
    assert r.value == [2, 7, 9]


@pytest.mark.parametrize(
    "source",
    ["(def map 1)", "(defn filter [x] x)", '(def count "doc" 3)', "(def if 1)", "(defn let [] 1)"],
)
def test_builtins_cannot_be_redefined(source: str) -> None:
    """LANGUAGE.md §5.8: `def`/`defn` of a builtin or special-form name is
    `cannot_shadow_builtin`."""
    r = ptc.run(source)
    assert r.error is not None
    assert r.error.type == "cannot_shadow_builtin"


def test_builtin_still_works_after_refused_redefinition() -> None:
    """A refused redefinition leaves the builtin and the session untouched."""
    s = ptc.Session()
    assert s.run("(def map 1)").error is not None
    assert s.run("(map inc [1 2])").value == [2, 3]
    assert s.definitions == []


def test_undefined_variable() -> None:
    """LANGUAGE.md §8.4 step 5: otherwise `undefined_variable`."""
    r = ptc.run("(+ 1 zebra)")
    assert r.error is not None
    assert r.error.type == "undefined_variable"
    assert "zebra" in r.error.message


@pytest.mark.parametrize(
    ("source", "tools", "data", "suggested"),
    [
        ("(let [counter 1] countr)", {}, {}, "counter"),
        ("(defn total-price [x] x) (total-prise 1)", {}, {}, "total-price"),
        ("(def my-items [1]) my-itms", {}, {}, "my-items"),
        ("(fitler nil? [1])", {}, {}, "filter"),
        ("(shiping-cost 1)", {"shipping-cost": lambda x: x}, {}, "shipping-cost"),
        ("(count customr-list)", {}, {"customer-list": [1]}, "customer-list"),
    ],
)
def test_did_you_mean_hint_names_close_names(
    source: str, tools: dict[str, object], data: dict[str, object], suggested: str
) -> None:
    """LANGUAGE.md §10.3 / STYLE 9: "Did you mean" over locals, definitions, builtins, tools and
    data keys."""
    r = ptc.run(source, tools=tools, data=data)  # type: ignore[arg-type]
    assert r.error is not None
    assert r.error.type == "undefined_variable"
    assert r.error.hint is not None
    assert "Did you mean" in r.error.hint
    assert suggested in r.error.hint


def test_underscore_name_suggests_hyphens() -> None:
    """LANGUAGE.md §10.3: an undefined name containing `_` suggests the hyphenated name."""
    r = ptc.run("(let [total-count 1] total_count)")
    assert r.error is not None
    assert r.error.type == "undefined_variable"
    assert r.error.hint is not None
    assert "total-count" in r.error.hint
