"""Destructuring patterns in let/fn/defn/loop/doseq (LANGUAGE.md §5.1).

Expected values are written from LANGUAGE.md, not from the implementation.
"""

from __future__ import annotations

import ptc
import pytest
from lang_helpers import cases, err, ev, show

# --------------------------------------------------------------------------- helpers


# --------------------------------------------------------------------------- let patterns

LET_CASES = cases("destructuring", "LET_CASES")


@pytest.mark.parametrize(("src", "expected"), LET_CASES)
def test_let_destructuring(src: str, expected: str) -> None:
    """LANGUAGE.md §5.1 patterns: sym, [a b & more], {:keys …}, :or, :as, renames; nesting."""
    assert show(src) == expected


def test_rest_binding_is_a_vector() -> None:
    """LANGUAGE.md §5.1: more = vector of the remaining ones ([] if none)."""
    assert ev("(let [[a & m] [1 2 3]] (vector? m))") is True
    assert ev("(let [[a & m] [1]] (vector? m))") is True


# --------------------------------------------------------------------------- fn/defn/loop/doseq

FN_CASES = cases("destructuring", "FN_CASES")


@pytest.mark.parametrize(("src", "expected"), FN_CASES)
def test_parameter_destructuring(src: str, expected: str) -> None:
    """LANGUAGE.md §5.1/§5.9/§5.10/§5.11: patterns in fn/defn/loop parameters."""
    assert show(src) == expected


def test_doseq_destructuring() -> None:
    """LANGUAGE.md §5.1/§5.12: doseq binding patterns (map entries, :keys)."""
    r = ptc.run("(doseq [[k v] {:a 1 :b 2}] (println k v))")
    assert r.error is None and r.value is None
    assert r.prints == [":a 1", ":b 2"]
    r = ptc.run('(doseq [{:keys [n] :or {n 0}} [{:n 1} {"n" 2} {}]] (println n))')
    assert r.error is None
    assert r.prints == ["1", "2", "0"]
    r = ptc.run("(doseq [[a & r] [[1 2 3] [4]]] (println a r))")
    assert r.prints == ["1 [2 3]", "4 []"]


# --------------------------------------------------------------------------- errors

DESTRUCTURE_ERRORS = [
    '(let [[a] "ab"] a)',
    "(let [[a] {:a 1}] a)",
    "(let [[a] #{1}] a)",
    "(let [[a] 5] a)",
    "(let [[a] :k] a)",
    "(let [{:keys [a]} [1 2]] a)",
    '(let [{:keys [a]} "ab"] a)',
    "(let [{:keys [a]} 5] a)",
    "(let [{:keys [a]} #{:a}] a)",
    "(let [{x :k} [1]] x)",
    "(let [[a [b]] [1 5]] b)",
    "(let [{{:keys [c]} :in} {:in 5}] c)",
    "((fn [{:keys [a]}] a) 5)",
    "((fn [[a]] a) {:a 1})",
    "(loop [[a] 5] a)",
    "(doseq [[a] [1 2]] a)",
    "(doseq [{:keys [a]} [[1]]] a)",
    "(do (defn h [a & {:keys [z]}] z) (h 1 :z 2))",
    "(let [[a & {:keys [z]}] [1 :z 2]] z)",
]


@pytest.mark.parametrize("src", DESTRUCTURE_ERRORS)
def test_destructure_error(src: str) -> None:
    """LANGUAGE.md §5.1: vector patterns need V/nil, map patterns M/nil ⇒ destructure_error."""
    assert err(src).type == "destructure_error"


ANALYSIS_ERRORS = [
    "(let [{:as m} {:a 1}] m)",
    "(let [{} {:a 1}] 1)",
    "(let [{:keys [a] :or {a (inc 1)}} {}] a)",
    "(let [{:keys [a] :or {a [1]}} {}] a)",
    "(let [{:keys [a] :or {a {}}} {}] a)",
    "(let [{:keys [a] :or {a b}} {}] a)",
    "(let [{:keys [a] :or {:a 5}} {}] a)",
    '(let [{:keys [a] :or {"a" 5}} {}] a)',
    "(let [[a &] [1 2]] a)",
    "(let [[a & b c] [1 2 3]] a)",
    "(let [[a & b & c] [1 2 3]] a)",
    '(let [{:strs [a]} {"a" 1}] a)',
    "(let [{:syms [a]} {}] a)",
    "(let [[a :as all] [1 2]] all)",
    "(let [5 1] 5)",
    '(let ["a" 1] 1)',
    "(let [:a 1] 1)",
    "(let [nil 1] 1)",
    "(let [true 1] 1)",
    "(let [a] a)",
    "(let [a 1 b] a)",
    "(let [a 1])",
    "(let a 1)",
    "(let)",
    "(fn [[a &]] a)",
    "(fn [{:as m}] m)",
    "(fn [a & b c] a)",
    "(fn [5] 1)",
    "(defn f [{:strs [a]}] a)",
    "(loop [{:as m} {}] m)",
    "(loop [a] a)",
    "(doseq [{:as m} [{}]] m)",
    "(let [{:keys a} {:a 1}] a)",
]


@pytest.mark.parametrize("src", ANALYSIS_ERRORS)
def test_bad_patterns_are_analysis_errors(src: str) -> None:
    """LANGUAGE.md §5.1: malformed patterns / binding vectors ⇒ analysis_error."""
    assert err(src).type == "analysis_error"


def test_bad_pattern_fails_before_evaluation() -> None:
    """LANGUAGE.md §1.2: analysis errors fail the run before anything is evaluated."""
    r = ptc.run('(println "side effect") (let [{:as m} {}] m)')
    assert r.error is not None and r.error.type == "analysis_error"
    assert r.prints == []


def test_odd_let_bindings_hint() -> None:
    """LANGUAGE.md §5.1/§10.3: odd let bindings ⇒ analysis_error with the expected shape."""
    e = err("(let [a 1 b] a)")
    assert e.type == "analysis_error"
    assert "even" in f"{e.message} {e.hint or ''}"


def test_destructuring_arity_still_checked() -> None:
    """LANGUAGE.md §5.10: destructured parameters still count for arity."""
    e = err("((fn [[a b] c] a) [1 2])")
    assert e.type == "arity_error"
