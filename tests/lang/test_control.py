"""Special forms: conditionals, let/loop/recur, fn/#(), def/defn, threading, doseq, return/fail.

Covers LANGUAGE.md §5 (and §1.3 outcomes, §4.1 truthiness, §11 iteration budget). Expected values
are written from LANGUAGE.md, not from the implementation.
"""

from __future__ import annotations

from typing import Any

import ptc
import pytest
from lang_helpers import cases, err, ev, show

# --------------------------------------------------------------------------- helpers


def run_value(src: str, **kw: Any) -> ptc.Result:
    r = ptc.run(src, **kw)
    assert r.error is None, r.error
    return r


# --------------------------------------------------------------------------- conditionals

COND_CASES = cases("control", "COND_CASES")


@pytest.mark.parametrize(("src", "expected"), COND_CASES)
def test_conditionals(src: str, expected: str) -> None:
    """LANGUAGE.md §4.1 truthiness; §5.2-§5.7 if/when families, cond, do, and, or."""
    assert show(src) == expected


@pytest.mark.parametrize(
    ("src", "prints"),
    [
        ('(if true (println "then") (println "else"))', ["then"]),
        ('(if false (println "then") (println "else"))', ["else"]),
        ('(when false (println "x"))', []),
        ('(when true (println "a") (println "b"))', ["a", "b"]),
        ('(when-not true (println "x"))', []),
        (
            '(cond false (println "r1") (do (println "t2") true) (println "r2") :else (println))',
            ["t2", "r2"],
        ),
        ('(and (println "a") (println "b"))', ["a"]),
        ('(or (do (println "a") 1) (println "b"))', ["a"]),
        ('(and 1 (do (println "b") nil) (println "c"))', ["b"]),
        ("(do (println 1) (println 2) (println 3))", ["1", "2", "3"]),
        ('(if-let [x nil] (println "then") (println "else"))', ["else"]),
    ],
)
def test_short_circuit_effects(src: str, prints: list[str]) -> None:
    """LANGUAGE.md §5.2-§5.7: only the taken branch / evaluated operands have effects."""
    assert run_value(src).prints == prints


def test_and_or_skip_tool_calls() -> None:
    """LANGUAGE.md §5.7: unevaluated operands have no effect (a skipped tool call is not made)."""
    calls: list[int] = []

    def probe() -> int:
        calls.append(1)
        return 1

    tools = {"probe": probe}
    r = run_value(
        "[(or 1 (tool/probe)) (and nil (tool/probe)) (if true 0 (tool/probe))]", tools=tools
    )
    assert r.value == [1, None, 0]
    assert calls == []
    assert r.tool_calls == []
    r = run_value("(and 1 (tool/probe))", tools=tools)
    assert r.value == 1
    assert len(calls) == 1
    assert [c.name for c in r.tool_calls] == ["probe"]


CONDITIONAL_ANALYSIS_ERRORS = [
    "(if)",
    "(if true)",
    "(if true 1 2 3)",
    "(if-not)",
    "(if-not true)",
    "(if-not true 1 2 3)",
    "(when)",
    "(when true)",
    "(when-not)",
    "(when-not true)",
    "(if-let [x 1 y 2] x)",
    "(if-let [[a] [1]] a)",
    "(if-let [{:keys [a]} {:a 1}] a)",
    "(if-let [x] x)",
    "(if-let [] 1)",
    "(if-let x 1)",
    "(if-let [x 1] 1 2 3)",
    "(when-let [x 1 y 2] x)",
    "(when-let [[a] [1]] a)",
    "(when-let [5 1] 1)",
    "(cond)",
    "(cond true)",
    "(cond true 1 false)",
    "(cond false 1 :else)",
]


@pytest.mark.parametrize("src", CONDITIONAL_ANALYSIS_ERRORS)
def test_conditional_shape_errors(src: str) -> None:
    """LANGUAGE.md §5.2-§5.5: malformed conditional forms ⇒ analysis_error."""
    assert err(src).type == "analysis_error"


def test_if_shape_hint() -> None:
    """LANGUAGE.md §10.3: wrong if shape ⇒ hint with the expected shape."""
    e = err("(if true 1 2 3)")
    assert e.type == "analysis_error"
    assert "(if" in f"{e.message} {e.hint or ''}"


def test_analysis_error_prevents_all_evaluation() -> None:
    """LANGUAGE.md §1.2: a malformed form anywhere fails the run before anything runs."""
    r = ptc.run('(println "early") (when true)')
    assert r.error is not None and r.error.type == "analysis_error"
    assert r.prints == []


@pytest.mark.parametrize(
    "src",
    [
        "(if-some [x 1] x)",
        "(when-some [x 1] x)",
        "(when-first [x [1]] x)",
        "(case 1 1 :a :b)",
        "(condp = 1 1 :a)",
        "(for [x [1 2]] x)",
        "(as-> 1 x (inc x))",
        "(some-> {:a 1} :a)",
        "(cond-> 1 true inc)",
        "(letfn [(f [] 1)] (f))",
    ],
)
def test_unsupported_forms_do_not_evaluate(src: str) -> None:
    """LANGUAGE.md §5.4/§5.5/§5.12/§5.14/§12: these forms do not exist; the program fails."""
    r = ptc.run(src)
    assert r.error is not None, r.value
    assert r.error.type in ("analysis_error", "undefined_variable"), r.error.type


@pytest.mark.parametrize("src", ["(map and [1])", "(let [f or] f)", "(map if [1])"])
def test_special_form_names_are_not_values(src: str) -> None:
    """LANGUAGE.md §5: special-form names are not values ⇒ undefined_variable."""
    assert err(src).type == "undefined_variable"


def test_bare_return_hint() -> None:
    """LANGUAGE.md §10.3: bare special-form name used as a value ⇒ hint to call it."""
    e = err("(map return [1])")
    assert e.type == "undefined_variable"
    assert "(return" in f"{e.message} {e.hint or ''}"


# --------------------------------------------------------------------------- let / loop / recur

LOOP_CASES = cases("control", "LOOP_CASES")


@pytest.mark.parametrize(("src", "expected"), LOOP_CASES)
def test_let_loop_recur(src: str, expected: str) -> None:
    """LANGUAGE.md §5.1/§5.11: let, loop/recur incl. every listed tail position."""
    assert show(src) == expected


RECUR_ANALYSIS_ERRORS = [
    "(recur 1)",
    "(loop [i 0] (inc (recur i)))",
    "(loop [i 0] (recur (inc i)) 1)",
    "(loop [i 0] (if (recur 1) 1 2))",
    "(loop [i 0] (let [x (recur 1)] x))",
    "(loop [i 0] (do (recur 1) 2))",
    "(loop [i 0] (and (recur 1) true))",
    "(loop [i 0] (or (recur 1) true))",
    "(loop [i 0] (cond (recur 1) 2))",
    "(loop [i 0] [(recur 1)])",
    "(loop [i 0] {:a (recur 1)})",
    "(loop [i 0] (when (recur 1) 2))",
    "(loop [i 0] (-> i recur inc))",
    "(loop [i 0] (doseq [x [1]] (recur x)))",
    "(fn [x] (doseq [y [1]] (recur y)))",
    "(fn [x] (println (recur x)))",
    "(let [x 1] (recur x))",
    "(defn f [x] (+ 1 (recur x)))",
    "(loop [i (recur 1)] i)",
    "(loop [i 0] (if-let [x (recur 1)] x))",
    "(do (recur 1))",
    "(def x (recur 1))",
]


@pytest.mark.parametrize("src", RECUR_ANALYSIS_ERRORS)
def test_recur_outside_tail_position(src: str) -> None:
    """LANGUAGE.md §5.11: recur outside tail position of innermost loop/fn ⇒ analysis_error."""
    assert err(src).type == "analysis_error"


def test_misplaced_recur_fails_before_evaluation() -> None:
    """LANGUAGE.md §1.2/§5.11: recur placement is checked before anything is evaluated."""
    r = ptc.run('(println "x") (loop [i 0] (inc (recur i)))')
    assert r.error is not None and r.error.type == "analysis_error"
    assert r.prints == []


@pytest.mark.parametrize(
    "src",
    [
        "(loop [a 1] (recur 1 2))",
        "(loop [a 1 b 2] (if (= a 1) (recur 2) b))",
        "((fn [a b] (if (= a 1) (recur 2) b)) 1 2)",
        "((fn [a & m] (if (= a 1) (recur 2) m)) 1)",
        "((fn [a & m] (if (= a 1) (recur 2 [3] [4]) m)) 1)",
        "(loop [] (recur 1))",
    ],
)
def test_recur_count_mismatch(src: str) -> None:
    """LANGUAGE.md §5.11: recur must supply exactly one value per binding ⇒ arity_error."""
    assert err(src).type == "arity_error"


def test_recur_uses_no_stack() -> None:
    """LANGUAGE.md §5.11: recur uses no stack (deep iteration works under the call depth)."""
    assert ev("(loop [i 0] (if (< i 200000) (recur (inc i)) i))") == 200000
    assert ev("(do (defn down [n] (if (pos? n) (recur (dec n)) :ok)) (down 200000))") == "ok"


# --------------------------------------------------------------------------- iteration budget

LOOP10 = {"loop_limit": 10}


@pytest.mark.parametrize(
    ("src", "ok"),
    [
        ("(loop [i 0] (if (< i 10) (recur (inc i)) i))", True),
        ("(loop [i 0] (if (< i 11) (recur (inc i)) i))", False),
        ("(doseq [x (range 10)] x)", True),
        ("(doseq [x (range 11)] x)", False),
        ('(doseq [x "abcdefghijk"] x)', False),
        ("((fn [n] (if (pos? n) (recur (dec n)) :done)) 10)", True),
        ("((fn [n] (if (pos? n) (recur (dec n)) :done)) 11)", False),
        # successive loops in one invocation share the count
        (
            "((fn [] (loop [i 0] (if (< i 6) (recur (inc i)))) "
            "(loop [i 0] (if (< i 6) (recur (inc i)))) :done))",
            False,
        ),
        (
            "((fn [] (loop [i 0] (if (< i 5) (recur (inc i)))) "
            "(loop [i 0] (if (< i 5) (recur (inc i)))) :done))",
            True,
        ),
        # each invocation starts its own count
        (
            "(let [f (fn [] (loop [i 0] (if (< i 6) (recur (inc i)) i)))] [(f) (f) (f)])",
            True,
        ),
        ("(do (defn g [] (doseq [x (range 8)] x)) (g) (g) (g) :ok)", True),
    ],
)
def test_iteration_budget(src: str, ok: bool) -> None:
    """LANGUAGE.md §5.11/§5.12/§11: each recur / doseq element consumes one unit."""
    r = ptc.run(src, limits=LOOP10)
    if ok:
        assert r.error is None, r.error
    else:
        assert r.error is not None, r.value
        assert r.error.type == "loop_limit_exceeded"


def test_default_iteration_budget_is_one_million() -> None:
    """LANGUAGE.md §5.11: default budget 1,000,000 recurs."""
    assert ev("(loop [i 0] (if (< i 1000000) (recur (inc i)) i))") == 1_000_000
    e = err("(loop [i 0] (if (< i 1000001) (recur (inc i)) i))")
    assert e.type == "loop_limit_exceeded"


# --------------------------------------------------------------------------- fn and #()

FN_CASES = cases("control", "FN_CASES")


@pytest.mark.parametrize(("src", "expected"), FN_CASES)
def test_fn_and_short_fn(src: str, expected: str) -> None:
    """LANGUAGE.md §5.10 fn (closures by value, call-time user names); §5.13 #()."""
    assert show(src) == expected


@pytest.mark.parametrize(
    ("src", "fragments"),
    [
        ("((fn [a b] a) 1 2 3)", ["2", "got 3"]),
        ("((fn [a b] a) 1)", ["2", "got 1"]),
        ("((fn [] 1) 1)", ["0", "got 1"]),
        ("((fn [a b & m] a) 1)", ["2+", "got 1"]),
        ("(#(str %3) 1 2)", ["3", "got 2"]),
        ("(#(str %3) 1 2 3 4)", ["3", "got 4"]),
        ("(#(str %) 1 2)", ["1", "got 2"]),
        ("(#(42) 1)", ["0", "got 1"]),
        ("(do (defn f [x] x) (f))", ["1", "got 0"]),
    ],
)
def test_fn_arity_errors(src: str, fragments: list[str]) -> None:
    """LANGUAGE.md §5.10/§5.13: wrong argument count ⇒ arity_error (expected 2, got 3; 2+)."""
    e = err(src)
    assert e.type == "arity_error"
    for f in fragments:
        assert f in e.message, e.message


@pytest.mark.parametrize(
    "src",
    [
        "(fn self [x] x)",
        "(fn)",
        "(fn x)",
        "(fn ([x] x) ([x y] y))",
        "#(#(inc %) %)",
        "(inc %)",
        "(fn [x] %1)",
        "(#(str %0) 1)",
    ],
)
def test_fn_analysis_errors(src: str) -> None:
    """LANGUAGE.md §5.10/§5.13: named fn, nested #(), placeholders outside #(), %0."""
    assert err(src).type == "analysis_error"


def test_percent_ampersand_is_an_ordinary_symbol() -> None:
    """LANGUAGE.md §5.13: %& is not supported; it is an ordinary, undefined symbol."""
    assert err("(#(vector %&))").type == "undefined_variable"


def test_short_fn_zero_arg_tool_call() -> None:
    """LANGUAGE.md §5.13: #(tool/load-config) is a zero-argument function calling the tool."""
    r = run_value(
        "(let [f #(tool/load-config)] [(f) (f)])", tools={"load-config": lambda: {"v": 1}}
    )
    assert r.value == [{"v": 1}, {"v": 1}]
    assert [c.name for c in r.tool_calls] == ["load-config", "load-config"]


# --------------------------------------------------------------------------- def / defn

DEF_CASES = cases("control", "DEF_CASES")


@pytest.mark.parametrize(("src", "expected"), DEF_CASES)
def test_def_and_defn(src: str, expected: str) -> None:
    """LANGUAGE.md §5.8/§5.9: def/defn return the var #'name; docstrings; recursion by name."""
    assert show(src) == expected


@pytest.mark.parametrize(
    ("src", "etype"),
    [
        ("(def x)", "analysis_error"),
        ("(def)", "analysis_error"),
        ("(def x 1 2)", "analysis_error"),
        ('(def x "doc" 1 2)', "analysis_error"),
        ("(def [a] [1])", "analysis_error"),
        ('(def "x" 1)', "analysis_error"),
        ("(def :x 1)", "analysis_error"),
        ("(defn f ([a] a) ([a b] b))", "analysis_error"),
        ("(defn f)", "analysis_error"),
        ("(defn [a] a)", "analysis_error"),
        ("(defn f a a)", "analysis_error"),
        ("(def count 1)", "cannot_shadow_builtin"),
        ("(def map 1)", "cannot_shadow_builtin"),
        ("(defn filter [x] x)", "cannot_shadow_builtin"),
        ("(def if 1)", "cannot_shadow_builtin"),
        ("(defn when [x] x)", "cannot_shadow_builtin"),
    ],
)
def test_def_errors(src: str, etype: str) -> None:
    """LANGUAGE.md §5.8/§5.9: malformed def/defn ⇒ analysis_error; builtin names ⇒ refused."""
    assert err(src).type == etype


def test_multi_arity_defn_hint() -> None:
    """LANGUAGE.md §5.9/§10.3: multi-arity defn ⇒ analysis_error ("use separate defn forms")."""
    e = err("(defn f ([a] a) ([a b] b))")
    assert e.type == "analysis_error"
    assert "defn" in f"{e.message} {e.hint or ''}"


def test_definitions_persist_and_failed_runs_are_discarded() -> None:
    """LANGUAGE.md §1.3/§1.5/§5.8: defs persist across turns; an error discards the run's defs."""
    s = ptc.Session()
    assert s.run("(def a 1) (defn twice [x] (* 2 x))").error is None
    r = s.run("(twice a)")
    assert r.error is None and r.value == 2
    r = s.run('(def a 100) (def b 2) (+ 1 "x")')
    assert r.error is not None and r.error.type == "type_error"
    assert s.run("a").value == 1
    assert s.run("b").error.type == "undefined_variable"  # type: ignore[union-attr]
    # return and fail keep definitions made before them
    r = s.run("(def c 3) (return :done) (def d 4)")
    assert r.returned and r.value == "done"
    r = s.run("(def e 5) (fail :nope)")
    assert r.failed and r.value == "nope"
    assert s.run("[c e]").value == [3, 5]
    assert s.run("d").error.type == "undefined_variable"  # type: ignore[union-attr]


# --------------------------------------------------------------------------- threading

THREAD_CASES = cases("control", "THREAD_CASES")


@pytest.mark.parametrize(("src", "expected"), THREAD_CASES)
def test_threading(src: str, expected: str) -> None:
    """LANGUAGE.md §5.14 ->/->>: syntactic rewrite; #() steps; symbol/keyword/map steps."""
    assert show(src) == expected


def test_thread_into_return() -> None:
    """LANGUAGE.md §5.14: (->> v (return)) returns v."""
    r = run_value("(->> [1 2] (map inc) (return)) :unreached")
    assert r.returned is True
    assert r.value == [2, 3]


@pytest.mark.parametrize("src", ["(->)", "(->>)"])
def test_empty_threading_is_analysis_error(src: str) -> None:
    """LANGUAGE.md §5.14: (->) ⇒ analysis_error."""
    assert err(src).type == "analysis_error"


# --------------------------------------------------------------------------- doseq


@pytest.mark.parametrize(
    ("src", "prints"),
    [
        ("(doseq [x [1 2 3]] (println x))", ["1", "2", "3"]),
        ("(doseq [a [1 2] b [:x :y]] (println a b))", ["1 :x", "1 :y", "2 :x", "2 :y"]),
        ('(doseq [c "a👍🏽"] (println c))', ["a", "👍🏽"]),
        ("(doseq [x #{3 1 2}] (println x))", ["3", "1", "2"]),
        ("(doseq [e {:a 1 :b 2}] (println e))", ["[:a 1]", "[:b 2]"]),
        ("(doseq [x nil] (println x))", []),
        ("(doseq [x []] (println x))", []),
        ("(doseq [x [1 2]] (println :a x) (println :b x))", [":a 1", ":b 1", ":a 2", ":b 2"]),
        ("(doseq [a [1 2] b (range a)] (println a b))", ["1 0", "2 0", "2 1"]),
        ("(doseq [x (map inc [1 2])] (println x))", ["2", "3"]),
    ],
)
def test_doseq_effects(src: str, prints: list[str]) -> None:
    """LANGUAGE.md §5.12: doseq iterates V, S (chars), St, M entries, nil; nested; returns nil."""
    r = run_value(src)
    assert r.value is None
    assert r.prints == prints


def test_doseq_with_def_and_tool_calls() -> None:
    """LANGUAGE.md §5.12: doseq body effects (def, tool calls) happen in order."""
    seen: list[Any] = []

    def log(x: Any) -> Any:
        seen.append(x)
        return x

    r = run_value("(doseq [x [1 2 3]] (def last-x x) (tool/log x)) last-x", tools={"log": log})
    assert r.value == 3
    assert seen == [1, 2, 3]


@pytest.mark.parametrize(
    "src",
    [
        "(doseq [x 5] x)",
        "(doseq [x :k] x)",
        "(doseq [x 2.5] x)",
        "(doseq [x [1]])",
        "(doseq [x] x)",
        "(doseq [x [1] y] x)",
        "(doseq [x [1] :when true] x)",
        "(doseq [x [1] :let [y 1]] y)",
        "(doseq [x [1] :while true] x)",
        "(doseq x [1])",
        "(doseq)",
    ],
)
def test_doseq_analysis_errors(src: str) -> None:
    """LANGUAGE.md §5.12: literal number/keyword coll, no body, odd bindings, modifiers."""
    assert err(src).type == "analysis_error"


def test_doseq_runtime_non_collection() -> None:
    """LANGUAGE.md §5.12/§7.0: a computed non-collection ⇒ type_error."""
    assert err("(let [n 5] (doseq [x n] x))").type == "type_error"


# --------------------------------------------------------------------------- return / fail


def test_return_stops_evaluation() -> None:
    """LANGUAGE.md §1.3/§5.15: (return v) ends the run with outcome return."""
    r = run_value('(println "a") (return 5) (println "b") 6')
    assert r.returned is True and r.failed is False and r.ok is True
    assert r.value == 5
    assert r.prints == ["a"]
    assert r.outcome == "return"


@pytest.mark.parametrize(
    ("src", "value"),
    [
        ("(let [x 1] (return (+ x 1)) 99)", 2),
        ("(do (defn f [] (return 3) 4) (+ 100 (f)))", 3),
        ("(loop [i 0] (if (= i 3) (return [:at i]) (recur (inc i))))", ["at", 3]),
        ("(doseq [x [1 2 3]] (when (= x 2) (return x)))", 2),
        ("(map (fn [x] (if (= x 2) (return :early) x)) [1 2 3])", "early"),
        ("(reduce (fn [a x] (if (> a 2) (return a) (+ a x))) 0 [1 2 3 4])", 3),
        ("(return nil)", None),
    ],
)
def test_return_at_any_depth(src: str, value: Any) -> None:
    """LANGUAGE.md §5.15: return is usable at any depth."""
    r = run_value(src)
    assert r.returned is True
    assert r.value == value


def test_fail_stops_evaluation() -> None:
    """LANGUAGE.md §1.3/§5.15: (fail v) ends the run with outcome fail carrying v."""
    r = ptc.run('(println "a") (fail {:reason "no flights"}) (println "b")')
    assert r.error is None
    assert r.failed is True and r.ok is False and r.returned is False
    assert r.value == {"reason": "no flights"}
    assert r.prints == ["a"]
    assert r.outcome == "fail"
    r = ptc.run("(do (defn f [x] (when (neg? x) (fail :negative)) x) (map f [1 -1 2]))")
    assert r.failed is True and r.value == "negative"


def test_eval_raises_program_failed_on_fail() -> None:
    """LANGUAGE.md §1.3 fail outcome through the Python API."""
    with pytest.raises(ptc.ProgramFailed):
        ev('(fail "cannot be done")')


@pytest.mark.parametrize("src", ["(return)", "(return 1 2)", "(fail)", "(fail 1 2)"])
def test_return_fail_arity(src: str) -> None:
    """LANGUAGE.md §5.15: exactly one argument."""
    r = ptc.run(src)
    assert r.error is not None, r.value
    assert r.error.type in ("analysis_error", "arity_error"), r.error.type


def test_return_argument_evaluated_first() -> None:
    """LANGUAGE.md §5.15: return evaluates its argument (errors in it are errors)."""
    assert err('(return (+ 1 "x"))').type == "type_error"
