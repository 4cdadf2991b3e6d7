"""Destructuring patterns in let/fn/defn/loop/doseq (LANGUAGE.md §5.1).

Expected values are written from LANGUAGE.md, not from the implementation.
"""

from __future__ import annotations

import ptc
import pytest
from lang_helpers import err, ev, show

# --------------------------------------------------------------------------- helpers


# --------------------------------------------------------------------------- let patterns

LET_CASES = [
    # reference examples
    ("(let [[lat lon] [59.33 18.06]] lon)", "18.06"),
    ("(let [[h & t] [5 6 7]] t)", "[6 7]"),
    ('(let [{:keys [sku qty] :or {qty 1}} {:sku "B-7"}] qty)', "1"),
    ('(let [{hue :name} {"name" "teal"}] hue)', '"teal"'),
    # symbols
    ("(let [x 1] x)", "1"),
    ("(let [_ 4] _)", "4"),
    ("(let [a 1 b (+ a 1) c (* b 10)] [a b c])", "[1 2 20]"),
    ("(let [x 1 x (inc x)] x)", "2"),
    ("(let [x 1] (let [x 2] x))", "2"),
    ("(let [x 1] (let [y 2] x))", "1"),
    ("(let [count 5] count)", "5"),
    ("(let [map {:a 1}] (:a map))", "1"),
    ("(let [x 1] :first x)", "1"),
    # vector patterns
    ("(let [[a b c] [1 2]] [a b c])", "[1 2 nil]"),
    ("(let [[a b] [1 2 3 4]] [a b])", "[1 2]"),
    ("(let [[a b] nil] [a b])", "[nil nil]"),
    ("(let [[a] []] a)", "nil"),
    ("(let [[_ _ c] [1 2 3]] c)", "3"),
    ("(let [[a b & more] [1 2 3 4]] [a b more])", "[1 2 [3 4]]"),
    ("(let [[a & more] [1]] more)", "[]"),
    ("(let [[a b & more] [1]] [a b more])", "[1 nil []]"),
    ("(let [[a & more] nil] [a more])", "[nil []]"),
    ("(let [[& all] [1 2]] all)", "[1 2]"),
    ("(let [[a [b c]] [1 [2 3]]] [a b c])", "[1 2 3]"),
    ("(let [[a [b c]] [1 nil]] [a b c])", "[1 nil nil]"),
    ("(let [[a & [b c]] [1 2 3]] [a b c])", "[1 2 3]"),
    ("(let [[[x y] & rest] [[1 2] [3 4]]] [x y rest])", "[1 2 [[3 4]]]"),
    ("(let [[a {:keys [b]}] [1 {:b 2}]] [a b])", "[1 2]"),
    ("(let [[a b] [nil false]] [a b])", "[nil false]"),
    # map patterns: :keys
    ("(let [{:keys [a b]} {:a 1 :b 2}] [a b])", "[1 2]"),
    ('(let [{:keys [a b]} {"a" 1 "b" 2}] [a b])', "[1 2]"),
    ('(let [{:keys [a]} {:a 1 "a" 2}] a)', "1"),
    ('(let [{:keys [a]} {"a" 2 :a 1}] a)', "1"),
    ("(let [{:keys [:a :b]} {:a 1 :b 2}] [a b])", "[1 2]"),
    ("(let [{:keys [a]} {}] a)", "nil"),
    ("(let [{:keys [a]} nil] a)", "nil"),
    ("(let [{:keys [a-b]} {:a-b 1}] a-b)", "1"),
    ('(let [{:keys [a-b]} {"a_b" 1}] a-b)', "nil"),
    ("(let [{:keys [ok?]} {:ok? true}] ok?)", "true"),
    # :or
    ("(let [{:keys [a] :or {a 5}} {}] a)", "5"),
    ("(let [{:keys [a] :or {a 5}} {:a nil}] a)", "nil"),
    ("(let [{:keys [a] :or {a 5}} {:a false}] a)", "false"),
    ("(let [{:keys [a] :or {a 5}} nil] a)", "5"),
    (
        '(let [{:keys [a b c d e] :or {a "s" b :k c true d nil e 2.5}} {}] [a b c d e])',
        '["s" :k true nil 2.5]',
    ),
    ('(let [{:keys [a] :or {a 5}} {"a" 1}] a)', "1"),
    # :as
    ("(let [{:keys [a] :as m} {:a 1 :b 2}] [a m])", "[1 {:a 1, :b 2}]"),
    ("(let [{:keys [a] :as m} nil] [a m])", "[nil nil]"),
    ("(let [{:keys [a] :or {a 3} :as m} {}] [a m])", "[3 {}]"),
    # renames
    ("(let [{x :k} {:k 1}] x)", "1"),
    ('(let [{x "k"} {:k 1}] x)', "1"),
    ('(let [{x :k} {"k" 1}] x)', "1"),
    ("(let [{x k} {:k 1}] x)", "1"),
    ('(let [{x k} {"k" 2}] x)', "2"),
    ("(let [{x :k y :j} {:k 1}] [x y])", "[1 nil]"),
    ("(let [{[a b] :pt} {:pt [3 4]}] [a b])", "[3 4]"),
    ("(let [{{:keys [c]} :inner} {:inner {:c 9}}] c)", "9"),
    ("(let [{x :k :or {x 7}} {}] x)", "7"),
    ("(let [{x :k :keys [a]} {:k 1 :a 2}] [x a])", "[1 2]"),
    ('(let [{x :k} {:k 1 "k" 2}] x)', "1"),
    ('(let [{x "k"} {:k 1 "k" 2}] x)', "2"),
    # map pattern on nil binds everything to nil/defaults
    ("(let [{x :k {:keys [y]} :in} nil] [x y])", "[nil nil]"),
]


@pytest.mark.parametrize(("src", "expected"), LET_CASES)
def test_let_destructuring(src: str, expected: str) -> None:
    """LANGUAGE.md §5.1 patterns: sym, [a b & more], {:keys …}, :or, :as, renames; nesting."""
    assert show(src) == expected


def test_rest_binding_is_a_vector() -> None:
    """LANGUAGE.md §5.1: more = vector of the remaining ones ([] if none)."""
    assert ev("(let [[a & m] [1 2 3]] (vector? m))") is True
    assert ev("(let [[a & m] [1]] (vector? m))") is True


# --------------------------------------------------------------------------- fn/defn/loop/doseq

FN_CASES = [
    ("((fn [[a b] {:keys [c]}] [a b c]) [1 2] {:c 3})", "[1 2 3]"),
    ("((fn [a & [b c]] [a b c]) 1 2 3)", "[1 2 3]"),
    ("((fn [a & more] more) 1)", "[]"),
    ("((fn [a & more] (count more)) 10 20 30)", "2"),
    ("((fn [{x :k :or {x 0}}] x) {})", "0"),
    ("((fn [_ _ c] c) 1 2 3)", "3"),
    ('(map (fn [{:keys [n]}] n) [{:n 1} {"n" 2}])', "[1 2]"),
    ("(map (fn [[k v]] (str k v)) {:a 1 :b 2})", '[":a1" ":b2"]'),
    ("(reduce (fn [acc [k v]] (+ acc v)) 0 {:a 1 :b 2})", "3"),
    ("(do (defn f [{:keys [x] :or {x 1}}] x) [(f {}) (f {:x 5}) (f nil)])", "[1 5 1]"),
    ("(do (defn g [[a & r]] [a r]) (g [1 2 3]))", "[1 [2 3]]"),
    (
        "(loop [[h & t] [1 2 3] acc 0] (if h (recur t (+ acc h)) acc))",
        "6",
    ),
    (
        "(loop [{:keys [n]} {:n 3} out []] (if (zero? n) out (recur {:n (dec n)} (conj out n))))",
        "[3 2 1]",
    ),
]


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
