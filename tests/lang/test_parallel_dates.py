"""Parallel forms (LANGUAGE.md §7.13 `pmap`/`pcalls`: ordering, branch isolation, errors incl.
`pmap_error`/`pcalls_error`), date-time interop and constants (§7.16) and the accepted
namespace prefixes with the analysis errors for unknown names and namespaces (§7.17).

Expected values are written from LANGUAGE.md.
"""

from __future__ import annotations

import time

import ptc
import pytest
from lang_helpers import cases, err, ev, full_text
from lang_helpers import show_printed as show

# --------------------------------------------------------------------------- helpers


# A branch that works a little before failing, so a later branch is likely to fail first in time.
SLOW = "(loop [i 0] (if (< i 20000) (recur (inc i)) i))"

# --------------------------------------------------------------------------- §7.13 pmap

PMAP_CASES = cases("parallel_dates", "PMAP_CASES")


@pytest.mark.parametrize(("src", "expected"), PMAP_CASES)
def test_pmap(src: str, expected: str) -> None:
    """§7.13 `pmap`: like `map` over V, St or M entries, results in input order."""
    assert show(src) == expected


def test_pmap_preserves_input_order_with_uneven_work() -> None:
    """§7.13: results are in input order even when early branches take longer."""
    src = "(pmap (fn [n] (loop [i 0] (if (< i n) (recur (inc i)) n))) [40000 1 20000 0 30000 5])"
    assert ev(src) == [40000, 1, 20000, 0, 30000, 5]
    xs = list(range(200))
    assert ev("(pmap inc data/xs)", data={"xs": xs}) == [x + 1 for x in xs]


def test_pmap_branch_def_does_not_affect_the_run() -> None:
    """§7.13: each branch sees a snapshot of the user namespace; `def` inside a branch does
    not affect the run."""
    assert ev("(do (def z 0) (pmap (fn [x] (def z x)) [1 2]) z)") == 0
    e = err("(do (pmap (fn [x] (def fresh x)) [1 2]) fresh)")
    assert e.type == "undefined_variable"
    s = ptc.Session()
    r = s.run("(pmap (fn [x] (def leaked x)) [1 2])")
    assert r.error is None
    assert "leaked" not in s.memory


def test_pmap_branches_see_earlier_definitions() -> None:
    """§7.13: the snapshot includes definitions made before the form (and earlier turns)."""
    s = ptc.Session()
    s.run("(def base 100) (defn add-base [x] (+ base x))")
    r = s.run("(pmap add-base [1 2])")
    assert r.error is None and r.value == [101, 102]
    assert ev("(do (def q 7) (pcalls #(+ q 1)))") == [8]


def test_pmap_branch_println_is_discarded() -> None:
    """§7.13: println output from branches is discarded; output outside is kept."""
    r = ptc.run('(println "before") (pmap (fn [x] (println "in" x) x) [1 2]) (println "after")')
    assert r.error is None
    assert r.prints == ["before", "after"]
    r = ptc.run('(pcalls #(println "in") #(do (println "x") 2))')
    assert r.error is None and r.prints == [] and r.value == [None, 2]


def test_pmap_branch_tool_calls_are_made_and_recorded() -> None:
    """§7.13: tool calls made in branches are performed and recorded (§1.4)."""
    seen: list[int] = []

    def twice(n: int) -> int:
        seen.append(n)
        return 2 * n

    r = ptc.run("(pmap #(tool/twice %) [1 2 3])", tools={"twice": twice})
    assert r.error is None, r.error
    assert r.value == [2, 4, 6]
    assert sorted(seen) == [1, 2, 3]
    assert sorted(c.result for c in r.tool_calls) == [2, 4, 6]
    assert all(c.name == "twice" for c in r.tool_calls)


@pytest.mark.parametrize(
    "src",
    [
        "(pmap (fn [x] (return x)) [1 2])",
        "(pmap (fn [x] (fail x)) [1 2])",
        "(pmap (fn [x] (if (= x 2) (return x) x)) [1 2 3])",
        "(pmap #(fail %) [1])",
    ],
)
def test_pmap_return_or_fail_in_branch(src: str) -> None:
    """§5.15/§7.13: `return`/`fail` inside a pmap branch ⇒ pmap_error."""
    r = ptc.run(src)
    assert r.error is not None, r
    assert r.error.type == "pmap_error", (r.error.type, r.error.message)
    assert not r.returned and not r.failed


def test_pmap_first_failing_branch_in_input_order() -> None:
    """§7.13: if any branch fails, the form fails with the error of the first failing branch
    in input order (not the first in time)."""
    src = f'(pmap (fn [x] (if (= x 0) (do {SLOW} (+ 1 "early")) (+ 1 :late))) [0 1 2 3])'
    for _ in range(3):
        e = err(src)
        assert e.type == "type_error", (e.type, e.message)
        assert '"early"' in e.message, e.message


def test_pmap_error_keeps_its_type_and_position() -> None:
    """§7.13/§10.1: a branch error keeps its own type; the run reports the failing form."""
    e = err("(pmap (fn [x] (/ 1 x) (mod x 0)) [1 2])")
    assert e.type == "arithmetic_error", (e.type, e.message)
    assert e.line == 1 and e.column is not None


def test_pmap_error_discards_definitions() -> None:
    """§1.3: a failing pmap makes the run an error; its definitions are discarded."""
    s = ptc.Session()
    r = s.run("(def before 1) (pmap (fn [x] (+ x nil)) [1])")
    assert r.error is not None
    assert "before" not in s.memory


@pytest.mark.parametrize(
    ("src", "kind", "fragment"),
    [
        ("(pmap :a {:a 1})", "type_error", "list of maps"),  # keyword f with a single map
        ("(pmap inc 5)", "type_error", "got integer 5"),
        ('(pmap identity "ab")', "type_error", 'got string "ab"'),
        ("(pmap inc :k)", "type_error", "got keyword :k"),
        ("(pmap 5 [1])", "type_error|not_callable", "5"),
        ("(pmap [:a] [{:a 1}])", "type_error", "[:a]"),
        ("(pmap inc)", "arity_error", "got 1"),
        ("(pmap inc [1] [2])", "arity_error", "got 3"),
        ("(pmap (fn [a b] a) [1])", "arity_error", "got 1"),
    ],
)
def test_pmap_errors(src: str, kind: str, fragment: str) -> None:
    """§7.13/§7.0: pmap type and arity errors name the function and the offending value."""
    e = err(src)
    assert e.type in kind.split("|"), (e.type, e.message)
    assert fragment in e.message, e.message
    if e.type == "type_error" and "[:a]" not in src:
        assert "pmap" in e.message, e.message


def test_pmap_keyword_single_map_message() -> None:
    """§7.13/§10.3: `(pmap :k one-map)` ⇒ type_error saying a list of maps is expected."""
    e = err("(pmap :name {:name 1})")
    assert e.type == "type_error"
    assert "map" in e.message


# --------------------------------------------------------------------------- §7.13 pcalls

PCALLS_CASES = cases("parallel_dates", "PCALLS_CASES")


@pytest.mark.parametrize(("src", "expected"), PCALLS_CASES)
def test_pcalls(src: str, expected: str) -> None:
    """§7.13 `pcalls`: calls zero-argument functions; vector of results in argument order."""
    assert show(src) == expected


def test_pcalls_with_tools() -> None:
    """§7.13: the documented use, `(pcalls #(tool/a) #(tool/b))`, calls both tools."""

    def a() -> str:
        time.sleep(0.05)
        return "A"

    def b() -> str:
        return "B"

    r = ptc.run("(pcalls #(tool/a) #(tool/b))", tools={"a": a, "b": b})
    assert r.error is None, r.error
    assert r.value == ["A", "B"]
    assert sorted(c.name for c in r.tool_calls) == ["a", "b"]


@pytest.mark.parametrize(
    ("src", "index"),
    [
        ("(pcalls #(+ 1 2) 5)", "1"),
        ("(pcalls #(+ 1 2) (fn [x] x))", "1"),
        ("(pcalls inc)", "0"),
        ("(pcalls #(+ 1 2) #(+ %1 %2))", "1"),
        ('(pcalls "s")', "0"),
        ("(pcalls nil)", "0"),
        ("(pcalls :k)", "0"),
    ],
)
def test_pcalls_argument_not_a_zero_parameter_function(src: str, index: str) -> None:
    """§7.13: a pcalls argument that is not a zero-parameter function ⇒ pcalls_error; the
    message includes the 0-based index."""
    e = err(src)
    assert e.type == "pcalls_error", (e.type, e.message)
    assert index in e.message, e.message


@pytest.mark.parametrize("src", ["(pcalls #(return 1))", "(pcalls #(+ 1 1) #(fail :x))"])
def test_pcalls_return_or_fail(src: str) -> None:
    """§5.15/§7.13: `return`/`fail` inside a pcalls branch ⇒ pcalls_error."""
    e = err(src)
    assert e.type == "pcalls_error", (e.type, e.message)


def test_pcalls_branch_error_names_index() -> None:
    """§7.13: a failing branch fails the form with that branch's error; pcalls messages
    include the 0-based index."""
    e = err('(pcalls #(+ 1 2) #(+ 1 "x") #(+ 1 :y))')
    assert e.type == "type_error", (e.type, e.message)
    assert "1" in e.message and '"x"' in e.message, e.message


def test_pcalls_first_failing_branch_in_argument_order() -> None:
    """§7.13: the first failing branch in argument order wins, not the first in time."""
    src = f'(pcalls #(do {SLOW} (+ 1 "early")) #(+ 1 :late))'
    for _ in range(3):
        e = err(src)
        assert e.type == "type_error", (e.type, e.message)
        assert '"early"' in e.message, e.message
        assert "0" in e.message, e.message


def test_pcalls_branch_def_isolated() -> None:
    """§7.13: `def` inside a pcalls branch does not affect the run."""
    assert ev("(do (def w 1) (pcalls #(def w 2)) w)") == 1


# --------------------------------------------------------------------------- §7.16 dates

DATE_CASES = cases("parallel_dates", "DATE_CASES")


@pytest.mark.parametrize(("src", "expected"), DATE_CASES)
def test_dates(src: str, expected: str) -> None:
    """§7.16: java.util.Date. (seconds/milliseconds, ISO-8601, YYYY-MM-DD, RFC 2822 with the
    zone ignored), .getTime, LocalDate/parse; §9.1 printer forms; dates support only `=`."""
    assert show(src) == expected


def test_now() -> None:
    """§7.16: `(java.util.Date.)` and `System/currentTimeMillis` are the current UTC time."""
    before = int(time.time() * 1000)
    got = ev("[(.getTime (java.util.Date.)) (System/currentTimeMillis) (currentTimeMillis)]")
    after = int(time.time() * 1000)
    for ms in got:
        assert type(ms) is int
        assert before - 1000 <= ms <= after + 1000


@pytest.mark.parametrize(
    ("src", "kind"),
    [
        ('(java.util.Date. "garbage")', "execution_error"),
        ('(java.util.Date. "2031-13-40")', "execution_error"),
        ('(java.util.Date. "2031-02-30")', "execution_error"),
        ('(java.util.Date. "")', "execution_error"),
        ('(java.util.Date. "2031-05-04T06:07:08")', "execution_error"),  # no offset
        ("(java.util.Date. :k)", "type_error"),
        ("(java.util.Date. nil)", "type_error"),
        ("(java.util.Date. [2031 5 4])", "type_error"),
        ("(java.util.Date. 1 2)", "arity_error"),
        ('(LocalDate/parse "2031-5-4")', "execution_error"),
        ('(LocalDate/parse "2031-02-30")', "execution_error"),
        ('(LocalDate/parse "2031-05-04T00:00:00Z")', "execution_error"),
        ('(LocalDate/parse "")', "execution_error"),
        ("(LocalDate/parse 5)", "type_error"),
        ("(java.time.LocalDate/parse nil)", "type_error"),
        ("(LocalDate/parse)", "arity_error"),
        ('(.getTime (LocalDate/parse "2031-05-04"))', "type_error"),
        ("(.getTime nil)", "type_error"),
        ("(.getTime 5)", "type_error"),
        ('(.getTime "2031-05-04")', "type_error"),
        ("(.getTime)", "arity_error"),
        ("(System/currentTimeMillis 1)", "arity_error"),
        ("(< (java.util.Date. 0) (java.util.Date. 1))", "type_error"),
        ("(compare (java.util.Date. 0) (java.util.Date. 1))", "type_error"),
        ('(sort [(LocalDate/parse "2031-05-04") (LocalDate/parse "2030-01-01")])', "type_error"),
    ],
)
def test_date_errors(src: str, kind: str) -> None:
    """§7.16: bad string/timestamp ⇒ execution_error; other types ⇒ type_error; dates support
    only `=` (ordering them ⇒ type_error)."""
    e = err(src)
    assert e.type == kind, (e.type, e.message)


def test_date_type_error_names_value() -> None:
    """§7.16/§10.1: `.getTime` of a date names the function and the value."""
    e = err('(.getTime (LocalDate/parse "2031-05-04"))')
    assert ".getTime" in e.message and "2031-05-04" in e.message, e.message
    e = err("(java.util.Date. :k)")
    assert "java.util.Date." in e.message and ":k" in e.message, e.message


def test_date_parse_error_names_the_string() -> None:
    """§7.16/§10.1: an unparseable date names the offending string."""
    e = err('(java.util.Date. "next tuesday")')
    assert "next tuesday" in e.message, e.message


@pytest.mark.parametrize("method", [".toString", ".getYear", ".format", ".before"])
def test_unknown_method_lists_supported(method: str) -> None:
    """§7.16/§10.3: any other method ⇒ undefined_variable listing the supported ones."""
    e = err(f"({method} (java.util.Date. 0))")
    assert e.type == "undefined_variable", (e.type, e.message)
    assert method in e.message
    assert ".getTime" in full_text(e)


CONSTANT_CASES = cases("parallel_dates", "CONSTANT_CASES")


@pytest.mark.parametrize(("src", "expected"), CONSTANT_CASES)
def test_constants(src: str, expected: str) -> None:
    """§7.16: Double/POSITIVE_INFINITY, NEGATIVE_INFINITY, NaN and their unqualified names."""
    assert show(src) == expected


@pytest.mark.parametrize("src", ["(Double/NaN)", "(Double/POSITIVE_INFINITY)", "(NaN 1)"])
def test_constants_are_not_callable(src: str) -> None:
    """§4.5/§7.16: the constants are floats; calling a number ⇒ not_callable."""
    e = err(src)
    assert e.type == "not_callable", (e.type, e.message)


def test_constants_cannot_be_redefined() -> None:
    """§5.8: constants are builtins ⇒ cannot_shadow_builtin."""
    for name in ["NaN", "POSITIVE_INFINITY", "parse", "currentTimeMillis"]:
        e = err(f"(def {name} 1)")
        assert e.type == "cannot_shadow_builtin", (name, e.type)


# --------------------------------------------------------------------------- §7.17 prefixes

PREFIXES = [
    "clojure.core/",
    "core/",
    "clojure.string/",
    "str/",
    "string/",
    "clojure.set/",
    "set/",
    "regex/",
    "Math/",
    "Interop/",
    "System/",
    "Double/",
    "java.time.LocalDate/",
    "LocalDate/",
]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_every_prefix_is_dropped(prefix: str) -> None:
    """§7.17: any builtin may be written with any of these prefixes, which is simply dropped."""
    src = (
        f'[({prefix}inc 1) ({prefix}upper-case "a") ({prefix}union #{{1}} #{{2}})'
        f" ({prefix}sqrt 16) ({prefix}count [1 2])]"
    )
    assert show(src) == '[2 "A" #{1 2} 4.0 2]'


PREFIX_CASES = cases("parallel_dates", "PREFIX_CASES")


@pytest.mark.parametrize(("src", "expected"), PREFIX_CASES)
def test_prefixed_builtins(src: str, expected: str) -> None:
    """§7.17: `str/upper-case`, `clojure.set/union`, `Math/sqrt` … all work, also as values."""
    assert show(src) == expected


# (program, the unknown name, a builtin the hint/list must mention)
UNKNOWN_PREFIXED_NAMES: list[tuple[str, str, str]] = [
    ('(str/escape "a" {})', "escape", "subs"),
    ('(clojure.string/capitalize "a")', "capitalize", "upper-case"),
    ('(clojure.string/blank? "")', "blank?", "trim"),
    ("(Math/sin 0)", "sin", "sqrt"),
    ("(Math/floorDiv 1 2)", "floorDiv", "floor"),
    ("(set/foo #{1})", "foo", "union"),
    ("(clojure.set/rename-keys {} {})", "rename-keys", "union"),
    ("(clojure.core/mapcat identity [])", "mapcat", ""),
    ("(System/exit 0)", "exit", ""),
    ('(Double/parseDouble "1")', "parseDouble", ""),
    ("(LocalDate/now)", "now", ""),
    ("(map str/capitalize [])", "capitalize", "upper-case"),
    ("(if false (str/escape 1) 2)", "escape", "subs"),
]


@pytest.mark.parametrize(("src", "name", "mentioned"), UNKNOWN_PREFIXED_NAMES)
def test_known_prefix_unknown_name(src: str, name: str, mentioned: str) -> None:
    """§7.17: a known prefix with a name that is not a builtin ⇒ analysis_error
    (`escape is not available. String functions: str, subs, join, …`), before anything runs."""
    r = ptc.run(f"(println :ran) {src}")
    assert r.error is not None, r.value
    assert r.error.type == "analysis_error", (r.error.type, r.error.message)
    assert r.prints == []
    assert f"{name} is not available" in r.error.message, r.error.message
    assert mentioned in full_text(r.error)


def test_known_prefix_unknown_name_message_shape() -> None:
    """§7.17: the message itself lists the functions of that family (reference wording:
    `escape is not available. String functions: str, subs, join, …`)."""
    e = err('(str/escape "a" {})')
    assert e.message.startswith("escape is not available"), e.message
    assert "str, subs, join" in e.message, e.message


UNKNOWN_NAMESPACES: list[tuple[str, str]] = [
    ('(http/get "x")', "http/"),
    ('(json/parse "x")', "json/"),
    ("(foo/bar 1)", "foo/"),
    ("foo/bar", "foo/"),
    ("(memory/x)", "memory/"),
    ("memory/notes", "memory/"),
    ("(clojure.walk/postwalk identity [])", "clojure.walk/"),
    ("(java.lang.Math/abs 1)", "java.lang.Math/"),
    ("(map os/getenv [1])", "os/"),
    ("(if false (http/get 1) 2)", "http/"),
]


@pytest.mark.parametrize(("src", "ns"), UNKNOWN_NAMESPACES)
def test_unknown_namespace(src: str, ns: str) -> None:
    """§7.17: any other prefix except data/, tool/, user/ ⇒ analysis_error
    (`unknown namespace http/. Use tool/ for tools, data/ for input data`)."""
    r = ptc.run(f"(println :ran) {src}")
    assert r.error is not None, r.value
    assert r.error.type == "analysis_error", (r.error.type, r.error.message)
    assert r.prints == []
    assert f"unknown namespace {ns}" in r.error.message, r.error.message
    text = full_text(r.error)
    assert "tool/" in text and "data/" in text, text
    assert r.error.line == 1 and r.error.column is not None


def test_data_tool_user_prefixes_are_not_unknown() -> None:
    """§7.17/§8: data/, tool/ and user/ are the language's own namespaces."""
    assert ev("data/missing") is None
    assert ev("data/xs", data={"xs": [1]}) == [1]
    assert ev("(do (def u 3) user/u)") == 3
    e = err("user/nothing")
    assert e.type == "undefined_variable"
    e = err("(tool/nothing)")
    assert e.type == "unknown_tool"
