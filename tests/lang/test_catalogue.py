"""The name index of LANGUAGE.md §7.18 against the core: every listed name is defined, every
name works in a tiny program, and the functions of §12 "commonly expected but absent" are
undefined.

The reference is the repository's docs/LANGUAGE.md (tests/test_reference.py checks it is the
design workspace's copy when that is beside the clone).
"""

from __future__ import annotations

import re
from pathlib import Path

import ptc
import pytest
from lang_helpers import err, ev

LANGUAGE_MD = Path(__file__).resolve().parents[2] / "docs" / "LANGUAGE.md"
INDEX_INTRO = (
    "The 28 special-form and builder names followed by the 150 function and constant names"
)
BUILDERS = {"where", "all-of", "any-of", "none-of", "juxt", "pmap", "pcalls"}

# --------------------------------------------------------------------------- helpers


def language_md() -> str:
    return LANGUAGE_MD.read_text(encoding="utf-8")


def index_names() -> list[str]:
    """The §7.18 index: the backtick-quoted line right after the introduction sentence."""
    text = language_md()
    at = text.find(INDEX_INTRO)
    assert at >= 0, "the §7.18 name index introduction was not found in LANGUAGE.md"
    lines = [ln.strip() for ln in text[at:].splitlines()[1:] if ln.strip()]
    assert lines, "no index line after the introduction"
    match = re.fullmatch(r"`([^`]+)`", lines[0])
    assert match, f"the index line is not one backtick-quoted list: {lines[0][:80]!r}"
    return match.group(1).split()


# --------------------------------------------------------------------------- index vs core


def test_index_shape() -> None:
    """§7.18: 28 special-form and builder names followed by 150 function and constant names,
    no duplicates."""
    names = index_names()
    assert len(names) == 178, len(names)
    assert len(set(names)) == len(names), sorted({n for n in names if names.count(n) > 1})
    assert names[:3] == ["def", "defn", "fn"]
    assert set(names[:28]) >= BUILDERS


def test_every_index_name_is_defined_by_the_core() -> None:
    """§7.18: every listed name is a builtin or a special form of the core. Builders may be
    in either list; special forms (the first 28 minus builders) must be special forms."""
    names = index_names()
    builtins = set(ptc._core.builtin_names())
    specials = set(ptc._core.special_forms())
    print("special forms in the core:", sorted(specials & set(names)))
    print("builders that are builtins:", sorted(builtins & BUILDERS))
    print("builders that are special forms:", sorted(specials & BUILDERS))
    missing = [n for n in names if n not in builtins and n not in specials]
    assert not missing, f"names of LANGUAGE.md §7.18 missing from the core: {missing}"
    forms = [n for n in names[:28] if n not in BUILDERS]
    not_special = [n for n in forms if n not in specials]
    assert not not_special, f"special forms the core lists as builtins: {not_special}"
    functions = names[28:]
    wrongly_special = [n for n in functions if n in specials]
    assert not wrongly_special, f"functions the core lists as special forms: {wrongly_special}"


def test_core_lists_are_unique_strings() -> None:
    """The core's name lists are well formed (no duplicates, no empty names)."""
    for names in (ptc._core.builtin_names(), ptc._core.special_forms()):
        assert all(isinstance(n, str) and n for n in names)
        assert len(set(names)) == len(names)


# --------------------------------------------------------------------------- smoke per name

# name → (tiny program, expected printed value)
SMOKE: dict[str, tuple[str, str]] = {
    # special forms and builders
    "def": ("(do (def x 2) (* x 3))", "6"),
    "defn": ("(do (defn sq [n] (* n n)) (sq 4))", "16"),
    "fn": ("((fn [a b] (- a b)) 5 2)", "3"),
    "let": ("(let [a 1 b (+ a 1)] [a b])", "[1 2]"),
    "loop": ("(loop [i 0 acc []] (if (< i 3) (recur (inc i) (conj acc i)) acc))", "[0 1 2]"),
    "recur": ("((fn [n acc] (if (zero? n) acc (recur (dec n) (+ acc n)))) 4 0)", "10"),
    "if": ("(if false :a :b)", ":b"),
    "if-not": ("(if-not false :a :b)", ":a"),
    "when": ("(when true 1 2)", "2"),
    "when-not": ("(when-not true 1)", "nil"),
    "if-let": ("(if-let [x (first [7])] (inc x) :none)", "8"),
    "when-let": ("(when-let [x (first [])] x)", "nil"),
    "cond": ("(cond false 1 (= 1 1) 2 :else 3)", "2"),
    "do": ("(do 1 2 3)", "3"),
    "and": ("(and 1 nil 2)", "nil"),
    "or": ("(or nil false 5)", "5"),
    "->": ("(-> {:lvl 2} (update :lvl * 3) :lvl)", "6"),
    "->>": ("(->> [4 9 16] (map sqrt) (reduce +))", "9.0"),
    "doseq": ("(doseq [x [1 2]] (println x))", "nil"),
    "return": ("(do (return 5) 6)", "5"),
    "fail": ("(fail :reason)", ":reason"),
    "where": ("(filter (where :a > 1) [{:a 1} {:a 2}])", "[{:a 2}]"),
    "all-of": ("((all-of pos? even?) 4)", "true"),
    "any-of": ("((any-of neg? zero?) 3)", "false"),
    "none-of": ("((none-of neg?) 3)", "true"),
    "juxt": ("((juxt inc dec) 5)", "[6 4]"),
    "pmap": ("(pmap inc [1 2])", "[2 3]"),
    "pcalls": ("(pcalls #(+ 1 2) #(str :a))", '[3 ":a"]'),
    # §7.1
    "first": ("(first [7 8])", "7"),
    "second": ("(second [7 8])", "8"),
    "last": ('(last "abc")', '"c"'),
    "nth": ("(nth [7 8] 1)", "8"),
    "rest": ("(rest [1 2 3])", "[2 3]"),
    "next": ("(next [1])", "nil"),
    "ffirst": ("(ffirst [[1 2] [3]])", "1"),
    "fnext": ("(fnext [1 2 3])", "2"),
    "nfirst": ("(nfirst [[1 2 3]])", "[2 3]"),
    "nnext": ("(nnext [1 2 3])", "[3]"),
    "count": ('(count "añb")', "3"),
    "empty?": ("(empty? [])", "true"),
    "not-empty": ("(not-empty [])", "nil"),
    "seq": ("(seq {:a 1})", "[[:a 1]]"),
    # §7.2
    "take": ("(take 2 [1 2 3])", "[1 2]"),
    "drop": ("(drop 2 [1 2 3])", "[3]"),
    "take-while": ("(take-while pos? [1 2 -1 3])", "[1 2]"),
    "drop-while": ("(drop-while pos? [1 2 -1 3])", "[-1 3]"),
    "distinct": ("(distinct [1 2 1])", "[1 2]"),
    "reverse": ("(reverse [1 2 3])", "[3 2 1]"),
    "sort": ("(sort [3 1 2])", "[1 2 3]"),
    "sort-by": ("(sort-by :n > [{:n 1} {:n 2}])", "[{:n 2} {:n 1}]"),
    # §7.3
    "map": ("(map + [1 2] [10 20])", "[11 22]"),
    "mapv": ("(mapv inc [1])", "[2]"),
    "map-indexed": ("(map-indexed vector [:a :b])", "[[0 :a] [1 :b]]"),
    "filter": ("(filter odd? [1 2 3])", "[1 3]"),
    "remove": ("(remove odd? [1 2 3])", "[2]"),
    "find": ("(find even? [1 2 4])", "2"),
    "pluck": ("(pluck :a [{:a 1} {:a 2}])", "[1 2]"),
    # §7.4
    "conj": ("(conj [1] 2 3)", "[1 2 3]"),
    "concat": ("(concat [1] nil [2])", "[1 2]"),
    "into": ("(into {} [[:a 1]])", "{:a 1}"),
    "flatten": ("(flatten [1 [2 [3]]])", "[1 2 3]"),
    "zip": ("(zip [1 2] [:a :b :c])", "[[1 :a] [2 :b]]"),
    "interleave": ("(interleave [1 2] [:a :b])", "[1 :a 2 :b]"),
    "interpose": ("(interpose 0 [1 2 3])", "[1 0 2 0 3]"),
    "partition": ("(partition 2 [1 2 3 4 5])", "[[1 2] [3 4]]"),
    "range": ("(range 3)", "[0 1 2]"),
    "vector": ("(vector 1 :a)", "[1 :a]"),
    "vec": ('(vec "ab")', '["a" "b"]'),
    "set": ("(set [1 1 2])", "#{1 2}"),
    # §7.5
    "reduce": ("(reduce + 10 [1 2])", "13"),
    "sum-by": ("(sum-by :n [{:n 1} {:n 2.5}])", "3.5"),
    "avg-by": ("(avg-by :n [{:n 1} {:n 2}])", "1.5"),
    "min-by": ("(min-by :n [{:n 3} {:n 1}])", "{:n 1}"),
    "max-by": ("(max-by :n [{:n 3} {:n 1}])", "{:n 3}"),
    "distinct-by": ("(distinct-by :k [{:k 1} {:k 1 :x 2}])", "[{:k 1}]"),
    "group-by": ("(group-by odd? [1 2 3])", "{true [1 3], false [2]}"),
    "frequencies": ('(frequencies "abca")', '{"a" 2, "b" 1, "c" 1}'),
    "max-key": ("(max-key count [1] [1 2])", "[1 2]"),
    "min-key": ("(min-key count [1] [1 2])", "[1]"),
    # §7.6
    "some": ("(some even? [1 4 5])", "true"),
    "every?": ("(every? pos? [1 2])", "true"),
    "not-any?": ("(not-any? neg? [1 2])", "true"),
    "contains?": ("(contains? {:a nil} :a)", "true"),
    # §7.7
    "get": ('(get {"a" 1} :a)', "1"),
    "get-in": ("(get-in {:a [5 6]} [:a 1])", "6"),
    "assoc": ("(assoc {:a 1} :b 2)", "{:a 1, :b 2}"),
    "assoc-in": ("(assoc-in {} [:a :b] 1)", "{:a {:b 1}}"),
    "update": ("(update {:n 1} :n inc)", "{:n 2}"),
    "update-in": ("(update-in {:a {:n 1}} [:a :n] + 5)", "{:a {:n 6}}"),
    "dissoc": ("(dissoc {:a 1 :b 2} :a)", "{:b 2}"),
    "merge": ("(merge {:a 1} {:a 2 :b 3})", "{:a 2, :b 3}"),
    "select-keys": ("(select-keys {:a 1 :b 2} [:b])", "{:b 2}"),
    "keys": ("(keys {:a 1 :b 2})", "[:a :b]"),
    "vals": ("(vals {:a 1 :b 2})", "[1 2]"),
    "entries": ("(entries {:a 1})", "[[:a 1]]"),
    "key": ("(key [:a 1])", ":a"),
    "val": ("(val [:a 1])", "1"),
    "update-vals": ("(update-vals {:a 1} inc)", "{:a 2}"),
    # §7.8
    "union": ("(union #{1} #{2})", "#{1 2}"),
    "intersection": ("(intersection #{1 2} #{2 3})", "#{2}"),
    "difference": ("(difference #{1 2} #{2})", "#{1}"),
    # §7.9
    "str": ('(str "n=" 1 nil :k)', '"n=1:k"'),
    "subs": ('(subs "hello" 1 3)', '"el"'),
    "join": ('(join ", " [1 2])', '"1, 2"'),
    "split": ('(split "a,b" ",")', '["a" "b"]'),
    "split-lines": ('(split-lines "a\\nb")', '["a" "b"]'),
    "trim": ('(trim "  x ")', '"x"'),
    "replace": ('(replace "a-b" "-" "+")', '"a+b"'),
    "upcase": ('(upcase "a")', '"A"'),
    "upper-case": ('(upper-case "a")', '"A"'),
    "downcase": ('(downcase "A")', '"a"'),
    "lower-case": ('(lower-case "A")', '"a"'),
    "starts-with?": ('(starts-with? "abc" "a")', "true"),
    "ends-with?": ('(ends-with? "abc" "c")', "true"),
    "includes?": ('(includes? "abc" "b")', "true"),
    # §7.10
    "parse-long": ('(parse-long "42")', "42"),
    "parse-double": ('(parse-double "4e2")', "400.0"),
    # §7.11
    "re-pattern": ('(re-pattern "a+")', '#"a+"'),
    "re-find": ('(re-find (re-pattern "\\\\d+") "ab12")', '"12"'),
    "re-matches": ('(re-matches (re-pattern "(a)(b)") "ab")', '["ab" "a" "b"]'),
    "re-seq": ('(re-seq (re-pattern "\\\\d") "1a2")', '["1" "2"]'),
    "re-split": ('(re-split (re-pattern ",") "a,b")', '["a" "b"]'),
    "regex?": ('(regex? (re-pattern "a"))', "true"),
    # §7.12
    "+": ("(+ 1 2)", "3"),
    "-": ("(- 5 2)", "3"),
    "*": ("(* 2 3)", "6"),
    "/": ("(/ 12 4)", "3.0"),
    "mod": ("(mod -7 3)", "2"),
    "rem": ("(rem -7 3)", "-1"),
    "inc": ("(inc 1)", "2"),
    "dec": ("(dec 1)", "0"),
    "abs": ("(abs -2)", "2"),
    "max": ("(max 1 3 2)", "3"),
    "min": ("(min 1 3 2)", "1"),
    "floor": ("(floor 2.7)", "2"),
    "ceil": ("(ceil 2.1)", "3"),
    "round": ("(round 6.5)", "7"),
    "trunc": ("(trunc -2.7)", "-2"),
    "double": ("(double 3)", "3.0"),
    "float": ("(float 3)", "3.0"),
    "int": ("(int 3.9)", "3"),
    "sqrt": ("(sqrt 16)", "4.0"),
    "pow": ("(pow 2 10)", "1024.0"),
    "=": ("(= 3 3.0)", "true"),
    "not=": ("(not= 1 2)", "true"),
    "<": ("(< 1 2)", "true"),
    ">": ("(> 1 2)", "false"),
    "<=": ("(<= 2 2)", "true"),
    ">=": ("(>= 1 2)", "false"),
    "compare": ('(compare "a" "b")', "-1"),
    # §7.13
    "not": ("(not nil)", "true"),
    "identity": ("(identity 4)", "4"),
    "fnil": ("((fnil inc 0) nil)", "1"),
    "apply": ("(apply + 1 [2 3])", "6"),
    "println": ('(println "hi")', "nil"),
    # §7.14
    "nil?": ("(nil? nil)", "true"),
    "some?": ("(some? false)", "true"),
    "boolean?": ("(boolean? false)", "true"),
    "number?": ("(number? 1.5)", "true"),
    "string?": ("(string? \\a)", "true"),
    "char?": ('(char? "ab")', "false"),
    "keyword?": ("(keyword? :a)", "true"),
    "vector?": ("(vector? [])", "true"),
    "map?": ("(map? #{})", "false"),
    "set?": ("(set? #{})", "true"),
    "coll?": ("(coll? {})", "false"),
    # §7.15
    "zero?": ("(zero? 0.0)", "true"),
    "pos?": ("(pos? 1)", "true"),
    "neg?": ("(neg? -1)", "true"),
    "even?": ("(even? 4)", "true"),
    "odd?": ("(odd? 4)", "false"),
    # §7.16
    "java.util.Date.": ("(str (java.util.Date. 0))", '"1970-01-01T00:00:00Z"'),
    ".getTime": ("(.getTime (java.util.Date. 1))", "1000"),
    "System/currentTimeMillis": ("(pos? (System/currentTimeMillis))", "true"),
    "java.time.LocalDate/parse": ('(java.time.LocalDate/parse "2031-05-04")', '"2031-05-04"'),
    "Double/POSITIVE_INFINITY": ("Double/POSITIVE_INFINITY", "##Inf"),
    "Double/NEGATIVE_INFINITY": ("Double/NEGATIVE_INFINITY", "##-Inf"),
    "Double/NaN": ("Double/NaN", "##NaN"),
}


def _smoke_names() -> list[str]:
    # Parametrize from the smoke table (collection must not depend on LANGUAGE.md being present);
    # test_smoke_table_covers_the_index checks that the table and the index agree.
    return list(SMOKE)


def test_smoke_table_covers_the_index() -> None:
    """§7.18: the smoke table below has exactly the names of the index."""
    names = index_names()
    assert sorted(set(names) - set(SMOKE)) == []
    assert sorted(set(SMOKE) - set(names)) == []


@pytest.mark.parametrize("name", _smoke_names())
def test_name_works(name: str) -> None:
    """§7.18: each listed name works in a tiny program (value written from the reference)."""
    src, expected = SMOKE[name]
    r = ptc.run(f"(str (vector {src}))")
    assert r.error is None, f"{name}: {r.error!r}"
    if name in {"return", "fail"}:
        assert r.returned if name == "return" else r.failed
        assert ptc.to_clojure(r.value)[0] == expected
        return
    assert r.value == f"[{expected}]", f"{name}: {r.value}"


# --------------------------------------------------------------------------- §12 absent

ABSENT = [
    "comp",
    "partial",
    "complement",
    "constantly",
    "every-pred",
    "some-fn",
    "keep",
    "mapcat",
    "quot",
    "rand",
    "name",
    "keyword",
    "symbol",
    "list?",
    "seq?",
    "fn?",
    "integer?",
    "butlast",
    "peek",
    "pop",
    "subvec",
    "zipmap",
    "merge-with",
    "reduce-kv",
    "partition-by",
    "partition-all",
    "split-at",
    "split-with",
    "dedupe",
    "update-keys",
    "capitalize",
    "blank?",
    "triml",
    "trimr",
    "index-of",
]


def test_absent_list_matches_the_reference() -> None:
    """§12: the list above is the reference's "Functions commonly expected but absent"."""
    text = language_md()
    at = text.find("Functions commonly expected but absent")
    assert at >= 0
    paragraph = text[at:].split("\n- ", 1)[0]
    listed = [n for n in re.findall(r"`([^`]+)`", paragraph) if n != "undefined_variable"]
    assert listed == ABSENT


@pytest.mark.parametrize("name", ABSENT)
def test_absent_function_is_undefined(name: str) -> None:
    """§12: functions commonly expected but absent ⇒ undefined_variable, in call position and
    as a value; none of them is a builtin or special form of the core."""
    e = err(f"({name} 1 2)")
    assert e.type == "undefined_variable", (e.type, e.message)
    assert name in e.message
    e = err(f"(map {name} [1])")
    assert e.type == "undefined_variable", (e.type, e.message)
    assert name not in ptc._core.builtin_names()
    assert name not in ptc._core.special_forms()


@pytest.mark.parametrize("name", ["comp", "partial", "keep", "mapcat", "name"])
def test_absent_function_can_be_defined(name: str) -> None:
    """§12/§5.8: an absent function is not a builtin, so a user may define it."""
    assert ev(f"(do (defn {name} [x] [x]) ({name} 1))") == [1]
