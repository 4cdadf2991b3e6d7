"""The hostile corpus: programs that try to hang, exhaust or crash the host, as data.

Every case names the limits it runs under and the outcomes the spec (LANGUAGE.md §10.2, §11)
allows — written from the spec, not from what a build does today. Outcomes:

- ``OK(check, prints)``: the program completes; ``check`` is a bounded check of the value
  computed in the child (``V(x)`` exact value, ``DEEP``/``SHARED``/``REFS``/``LEN``/``STR``
  shape checks, ``ANYV`` anything); ``prints`` constrains the println entries.
- ``ERR(limit)``: the limit's typed error (type and ``limit`` attribute, mapping below).
- ``TYPED(type, limit=None)``: a non-limit error type (``ANY_LIMIT`` accepts any ``limit``).
- ``REJECT(*names)``: ``ptc.Session``/``run`` raises ``ValueError`` naming one of the limits.

Where more than one limit can legitimately fire first, a case lists each; the other limits are
set high (``BASE``) so that the intended one fires. Programs too big to keep as text here are
generated in the child (``gen``, see ``hostile_worker.generate``); host data and tool results
are built there too (``build`` specs, ``make_tool`` behaviours).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

MiB = 1024**2

LIMIT_TYPE = {
    "fuel": "execution_error",
    "timeout_ms": "timeout",
    "max_depth": "execution_error",
    "max_memory": "memory_exceeded",
    "max_collection_size": "memory_exceeded",
    "max_string_size": "memory_exceeded",
    "max_output": "execution_error",
    "loop_limit": "loop_limit_exceeded",
    "max_nesting": "parse_error",
    "max_symbols": "symbol_limit_exceeded",
}


class _AnyLimit:
    def __repr__(self) -> str:
        return "ANY_LIMIT"


ANY_LIMIT: Any = _AnyLimit()


@dataclass(frozen=True)
class Outcome:
    kind: str  # ok | fail | error | raise
    check: str | None = None
    prints: dict[str, int] | None = None
    type: str | None = None
    limit: Any = None
    exc: str | None = None
    names: tuple[str, ...] = ()

    def text(self) -> str:
        if self.kind in ("ok", "fail"):
            p = f" prints={self.prints}" if self.prints else ""
            return f"{self.kind} {self.check}{p}"
        if self.kind == "error":
            return f"{self.type}/{self.limit}"
        return f"raise {self.exc} naming {'|'.join(self.names) or '(anything)'}"


# value checks (evaluated in the child, bounded); kept as JSON text so they are hashable
def _spec(*parts: Any) -> str:
    return json.dumps(list(parts))


ANYV = _spec("any")


def V(x: Any) -> str:
    """Exactly x (type-aware: True is not 1, 1 is not 1.0)."""
    return _spec("eq", x)


def LEN(n: int) -> str:
    return _spec("len", n)


def STR(n: int, unit: str) -> str:
    return _spec("str", n, unit)


def DEEP(n: int, leaf: Any = 1, shape: str = "list") -> str:
    """n levels of one-element list / {"a": ...} dict / set, then leaf."""
    return _spec("deep", n, leaf, shape)


def SHARED(depth: int, leaf: Any = 1) -> str:
    """depth levels of 2-element lists (checked down the first path), then [leaf]."""
    return _spec("shared", depth, leaf)


def REFS(n: int, m: int) -> str:
    """A list of n strings of m characters."""
    return _spec("refs", n, m)


def OK(check: str = ANYV, prints: dict[str, int] | None = None) -> Outcome:
    return Outcome("ok", check=check, prints=prints)


def FAIL(check: str = ANYV) -> Outcome:
    return Outcome("fail", check=check)


def ERR(limit: str) -> Outcome:
    return Outcome("error", type=LIMIT_TYPE[limit], limit=limit)


def TYPED(type_: str, limit: Any = None) -> Outcome:
    return Outcome("error", type=type_, limit=limit)


def REJECT(*names: str, exc: str = "ValueError") -> Outcome:
    return Outcome("raise", exc=exc, names=names or ("",))


def PRINTS(count: int, each: int | None = None) -> dict[str, int]:
    d = {"count": count}
    if each is not None:
        d["each"] = each
    return d


CUT = 2003  # a println entry over 2,000 characters: cut to 2,000 + "..." (§9.3)

# Limits every case starts from: generous time, small memory, fuel and iterations out of the
# way (so that the limit a case aims at is the one that fires).
BASE: dict[str, int] = {
    "timeout_ms": 1500,
    "max_memory": 128 * MiB,
    "fuel": 10**12,
    "loop_limit": 10**9,
}


@dataclass(frozen=True)
class Case:
    id: str
    category: str
    src: str | None
    expect: tuple[Outcome, ...]
    limits: dict[str, int] = field(default_factory=dict)
    gen: list[Any] | None = None
    data: dict[str, Any] | None = None
    tools: dict[str, Any] | None = None
    solo: bool = False  # runs alone (uses threads / all cores)
    extra_ms: int = 0  # stated time allowance: a tool call in flight cannot be interrupted
    known: bool = False  # listed in the issue as failing on the build the suite was written for

    def check_specs(self) -> list[str]:
        out: list[str] = []
        for o in self.expect:
            if o.check is not None and o.check not in out:
                out.append(o.check)
        return out

    def checks(self) -> list[Any]:
        return [json.loads(c) for c in self.check_specs()]

    def check_index(self) -> dict[str, int]:
        return {c: i for i, c in enumerate(self.check_specs())}

    def expect_text(self) -> str:
        return "; ".join(o.text() for o in self.expect)

    def source_text(self, n: int = 160) -> str:
        if self.src is not None:
            s = self.src
            return s if len(s) <= n else s[:n] + f"... <{len(s)} chars>"
        return f"<generated {self.gen!r:.{n}}>"


CASES: list[Case] = []
_category = ""


def C(
    id: str,
    src: str | None,
    *expect: Outcome,
    gen: list[Any] | None = None,
    data: dict[str, Any] | None = None,
    tools: dict[str, Any] | None = None,
    solo: bool = False,
    extra_ms: int = 0,
    known: bool = False,
    **limits: int,
) -> None:
    assert expect, id
    CASES.append(
        Case(
            id=f"{_category}-{id}",
            category=_category,
            src=src,
            expect=tuple(expect),
            limits={**BASE, **limits},
            gen=gen,
            data=data,
            tools=tools,
            solo=solo,
            extra_ms=extra_ms,
            known=known,
        )
    )


def category(name: str) -> None:
    global _category
    _category = name


# --------------------------------------------------------------------------- program pieces


def S(unit: str, n: int) -> dict[str, Any]:
    """Host data / tool result: a string of n repetitions of unit."""
    return {"$": "str", "unit": unit, "n": n}


def DV(n: int, leaf: Any = 1) -> str:
    """A vector nested n deep, built with loop/recur: [[[...leaf...]]]."""
    return f"(loop [i 0 v {leaf}] (if (< i {n}) (recur (inc i) [v]) v))"


def DM(n: int, leaf: Any = 1) -> str:
    """A map nested n deep: {:a {:a ... leaf}}."""
    return f"(loop [i 0 m {leaf}] (if (< i {n}) (recur (inc i) {{:a m}}) m))"


def DS(n: int) -> str:
    """A set nested n deep: #{#{... 1}}."""
    return f"(loop [i 0 s 1] (if (< i {n}) (recur (inc i) #{{s}}) s))"


PATH50K = "(mapv (fn [_] :a) (range 50000))"

# 2^60 logical leaves in 61 small nodes: every level is [x x] over the same x
SH = "(loop [x [1] i 0] (if (< i 60) (recur [x x] (inc i)) x))"
# the same shape built separately, whose LAST leaf is 2 (no pointer in common with SH)
SH_LAST2 = "(loop [x [1] y [2] i 0] (if (< i 60) (recur [x x] [x y] (inc i)) y))"
SHM = "(loop [x {:v 1} i 0] (if (< i 60) (recur {:l x :r x} (inc i)) x))"
SHS = "(loop [x #{1} i 0] (if (< i 60) (recur #{x [x]} (inc i)) x))"


def CHAIN(n: int, init: str, step: str, result: str = "1") -> str:
    """A chain of n closures, each wrapping the previous one, built in a loop."""
    return f"(loop [f {init} i 0] (if (< i {n}) (recur {step} (inc i)) {result}))"


FN_CHAIN = CHAIN(200_000, "(fn [x] x)", "(fn [x] (f x))")
DOUBLED_16MIB = '(loop [s "x" i 0] (if (< i 24) (recur (str s s) (inc i)) s))'

# ============================================================================ sizes
category("sizes")
MCS = "max_collection_size"
TO = ERR("timeout_ms")
MSS = "max_string_size"
C("range_float_1e12", "(count (range 1e12))", ERR(MCS))
C("range_int_max", "(count (range 0 9223372036854775807))", ERR(MCS))
C("range_negative_step", "(count (range 0 -1e15 -1))", ERR(MCS))
C("range_tiny_float_step", "(count (range 0 1 1e-12))", ERR(MCS))
C("range_just_over_limit", "(count (range 2000001))", ERR(MCS), max_collection_size=2_000_000)
C("range_at_limit", "(count (range 2000000))", OK(V(2_000_000)), max_collection_size=2_000_000)
C("repeat_is_absent", '(count (repeat 1000000000 "x"))', TYPED("undefined_variable"))
C("apply_str_range", "(count (apply str (range 1000000)))", ERR(MSS), max_string_size=MiB)
C("join_range", '(count (join "," (range 1000000)))', ERR(MSS), max_string_size=MiB)
C(
    "str_doubling",
    '(count (loop [s "x" i 0] (if (< i 200) (recur (str s s) (inc i)) s)))',
    ERR(MSS),
    max_string_size=MiB,
)
C(
    "split_empty_16mib",
    '(count (split data/s ""))',
    ERR(MCS),
    data={"s": S("a", 16 * MiB)},
    max_memory=768 * MiB,
    known=True,
)
C(
    "split_empty_2m",
    '(count (split data/s ""))',
    ERR(MCS),
    data={"s": S("a", 2_000_000)},
    max_collection_size=1_000_000,
)
C(
    "re_split_empty_pattern",
    '(count (re-split (re-pattern "") data/s))',
    ERR(MCS),
    data={"s": S("a", 2_000_000)},
    max_collection_size=1_000_000,
)
C(
    "concat_doubling",
    "(count (loop [v [1] i 0] (if (< i 40) (recur (concat v v) (inc i)) v)))",
    ERR(MCS),
    max_collection_size=1_000_000,
)
C(
    "into_doubling",
    "(count (loop [v [1] i 0] (if (< i 40) (recur (into v v) (inc i)) v)))",
    ERR(MCS),
    max_collection_size=1_000_000,
)
C(
    "conj_loop",
    "(count (loop [v [] i 0] (if (< i 5000000) (recur (conj v i) (inc i)) v)))",
    ERR(MCS),
    max_collection_size=1_000_000,
)
C("vec_over_memory", "(count (vec (range 9000000)))", ERR("max_memory"), max_memory=64 * MiB)
C(
    "mapv_strings_over_memory",
    '(count (mapv (fn [i] (str "item-" i)) (range 3000000)))',
    ERR("max_memory"),
    max_memory=64 * MiB,
)
C(
    "group_by_over_memory",
    "(count (group-by identity (range 3000000)))",
    ERR("max_memory"),
    max_memory=64 * MiB,
)
C(
    "partition_windows_over_memory",
    "(count (partition 2 1 (range 3000000)))",
    ERR("max_memory"),
    max_memory=64 * MiB,
)
C(
    "replace_empty_match",
    '(count (replace data/s "" "xx"))',
    ERR(MSS),
    data={"s": S("a", 1_000_000)},
    max_string_size=MiB,
)
C("interpose", "(count (interpose 0 (range 600000)))", ERR(MCS), max_collection_size=1_000_000)
C(
    "frequencies_small_limit",
    "(count (frequencies (map (fn [i] [i]) (range 300000))))",
    ERR(MCS),
    max_collection_size=100_000,
)

# ============================================================================ strings
category("strings")
C(
    "upcase_over_limit",
    "(count (upcase data/s))",
    ERR(MSS),
    data={"s": S("a", 2_000_000)},
    max_string_size=MiB,
)
C(
    "downcase_expands_bytes",
    "(count (downcase data/s))",
    ERR(MSS),
    data={"s": S("\u0130", 6_000_000)},
    max_string_size=16 * MiB,
)  # İ: 2 bytes -> i̇: 3 bytes
C("count_16mib", "(count data/s)", OK(V(16 * MiB)), data={"s": S("a", 16 * MiB)}, timeout_ms=5000)
C(
    "count_combining_graphemes",
    "(count data/s)",
    OK(V(4_000_000)),
    data={"s": S("e\u0301", 4_000_000)},
    timeout_ms=5000,
)
C(
    "reverse_chars",
    "(count (reverse data/s))",
    ERR(MCS),
    data={"s": S("a", 2_000_000)},
    max_collection_size=1_000_000,
)
C(
    "seq_chars",
    "(count (seq data/s))",
    ERR(MCS),
    data={"s": S("a", 2_000_000)},
    max_collection_size=1_000_000,
)
C(
    "frequencies_chars",
    "(frequencies data/s)",
    OK(V({"a": 1_000_000, "b": 1_000_000})),
    ERR(MCS),
    data={"s": S("ab", 1_000_000)},
    max_collection_size=1_000_000,
    timeout_ms=5000,
)
C(
    "join_many_small",
    "(count (join (map str (range 3000000))))",
    ERR("max_memory"),
    max_memory=64 * MiB,
)
C(
    "reduce_str_quadratic",
    '(count (reduce str "" (range 300000)))',
    ERR("timeout_ms"),
    OK(V(1_688_890)),
    timeout_ms=1000,
)
C(
    "replace_doubling",
    '(count (loop [s "ab" i 0] (if (< i 100) (recur (replace s "a" "aa") (inc i)) s)))',
    ERR(MSS),
    max_string_size=MiB,
)
C("str_of_big_vector", "(count (str (vec (range 1000000))))", ERR(MSS), max_string_size=MiB)
C(
    "split_lines_only_newlines",
    "(count (split-lines data/s))",
    OK(V(0)),
    ERR("max_memory"),
    data={"s": S("\n", 8_000_000)},
    timeout_ms=5000,
)
C(
    "split_many_pieces",
    '(count (split data/s ","))',
    ERR(MCS),
    data={"s": S(",", 3_000_000)},
    max_collection_size=1_000_000,
)
C(
    "includes_long_needle",
    "(includes? data/s data/t)",
    OK(V(False)),
    ERR("timeout_ms"),
    data={"s": S("a", 16 * MiB), "t": {"$": "str", "unit": "a", "n": 1_000_000, "suffix": "b"}},
    timeout_ms=5000,
)
C(
    "replace_shrinks",
    '(count (replace data/s "aaaa" "b"))',
    OK(V(4 * MiB)),
    data={"s": S("a", 16 * MiB)},
    timeout_ms=5000,
)
C("parse_long_million_digits", "(parse-long data/d)", OK(V(None)), data={"d": S("9", 10**6)})
C(
    "trim_all_space",
    "(count (trim data/s))",
    OK(V(0)),
    data={"s": S(" ", 16 * MiB)},
    timeout_ms=5000,
)
C(
    "subs_huge",
    "(count (subs data/s 1 16000000))",
    OK(V(15_999_999)),
    data={"s": S("a", 16 * MiB)},
    timeout_ms=5000,
)
C(
    "starts_with_itself",
    "(starts-with? data/s data/s)",
    OK(V(True)),
    data={"s": S("a", 16 * MiB)},
    timeout_ms=5000,
)

# ============================================================================ deep values
category("deep")
MD = "max_depth"
D1, D2 = DV(100_000), DV(100_000, 2)
C("vec_eq_1e5", f"(let [a {D1} b {D1}] (= a b))", OK(V(True)), ERR(MD))
C(
    "vec_eq_1e6",
    f"(let [a {DV(10**6)} b {DV(10**6)}] (= a b))",
    OK(V(True)),
    ERR(MD),
    max_memory=512 * MiB,
    timeout_ms=5000,
)
C(
    "vec_noteq_1e6",
    f"(let [a {DV(10**6)} b {DV(10**6, 2)}] (= a b))",
    OK(V(False)),
    ERR(MD),
    max_memory=512 * MiB,
    timeout_ms=5000,
)
C("compare_60000", f"(compare {DV(60_000)} {DV(60_000, 2)})", OK(V(-1)), ERR(MD), known=True)
C(
    "compare_1e6",
    f"(compare {DV(10**6)} {DV(10**6, 2)})",
    OK(V(-1)),
    ERR(MD),
    max_memory=512 * MiB,
    timeout_ms=5000,
)
C("set_hash_1e5", f"(let [a {D1} b {D1}] (count (set [a b])))", OK(V(1)), ERR(MD))
C("frequencies_1e5", f"(let [a {D1} b {D1}] (count (frequencies [a b a])))", OK(V(1)), ERR(MD))
C("distinct_1e5", f"(let [a {D1} b {D1}] (count (distinct [a b])))", OK(V(1)), ERR(MD))
C("group_by_1e5", f"(let [a {D1} b {D1}] (count (group-by identity [a b])))", OK(V(1)), ERR(MD))
C("sort_1e5", f"(let [a {D1} b {D2}] (count (sort [b a b])))", OK(V(3)), ERR(MD))
C("sort_by_1e5", f"(let [a {D1} b {D2}] (count (sort-by identity [b a])))", OK(V(2)), ERR(MD))
C("contains_1e5", f"(let [a {D1} b {D1}] (contains? [a] b))", OK(V(True)), ERR(MD))
C("map_key_1e5", f"(let [a {D1} b {D1}] (get {{a 7}} b))", OK(V(7)), ERR(MD))
C("str_1e6", f"(count (str {DV(10**6)}))", OK(V(2_000_001)), ERR(MD), timeout_ms=5000)
C(
    "map_str_1e6",
    f"(count (str {DM(10**6)}))",
    OK(V(5_000_001)),
    ERR(MD),
    max_memory=512 * MiB,
    timeout_ms=5000,
)
C("map_eq_2e5", f"(= {DM(200_000)} {DM(200_000)})", OK(V(True)), ERR(MD), timeout_ms=5000)
C(
    "println_1e6",
    f"(do (println {DV(10**6)}) 1)",
    OK(V(1), PRINTS(1, CUT)),
    ERR(MD),
    timeout_ms=5000,
)
C("flatten_1e6", f"(flatten {DV(10**6)})", OK(V([1])), ERR(MD), timeout_ms=5000)
C(
    "assoc_in_path_50000",
    f"(let [p {PATH50K}] (get-in (assoc-in {{}} p 1) p))",
    OK(V(1)),
    ERR(MD),
    known=True,
)
C(
    "update_in_path_50000",
    f"(let [p {PATH50K}] (get-in (update-in {{}} p (fnil inc 0)) p))",
    OK(V(1)),
    ERR(MD),
    known=True,
)
C("get_in_path_50000", f"(let [p {PATH50K} m {DM(50_000)}] (get-in m p))", OK(V(1)), ERR(MD))
C(
    "assoc_in_index_path_50000",
    "(let [p (mapv (fn [_] 0) (range 50000))] (get-in (assoc-in [] p 1) p))",
    OK(V(1)),
    ERR(MD),
)
C("def_then_drop_1e6", f"(def d {DV(10**6)}) 1", OK(V(1)), ERR(MD), timeout_ms=5000)
C("count_then_drop_1e6", f"(count {DV(10**6)})", OK(V(1)), ERR(MD), timeout_ms=5000)
C(
    "nested_sets_1e5",
    f"(count {DS(100_000)})",
    OK(V(1)),
    ERR(MD),
    ERR("timeout_ms"),
    timeout_ms=1000,
)

# ============================================================================ shared values
category("shared")
T = ERR("timeout_ms")
SHL = {"timeout_ms": 1000}
C("eq_self", f"(let [x {SH}] (= x x))", OK(V(True)), T, **SHL)
C("eq_two", f"(let [a {SH} b {SH}] (= a b))", OK(V(True)), T, known=True, **SHL)
C(
    "eq_two_fuel",
    f"(let [a {SH} b {SH}] (= a b))",
    OK(V(True)),
    ERR("fuel"),
    T,
    fuel=1_000_000,
    timeout_ms=2000,
)
C("noteq_last_leaf", f"(let [a {SH} b {SH_LAST2}] (= a b))", OK(V(False)), T, **SHL)
C("compare_equal", f"(let [a {SH} b {SH}] (compare a b))", OK(V(0)), T, known=True, **SHL)
C("compare_last_leaf", f"(let [a {SH} b {SH_LAST2}] (compare a b))", OK(V(-1)), T, **SHL)
C("set", f"(let [a {SH} b {SH}] (count (set [a b])))", OK(V(1)), T, known=True, **SHL)
C(
    "frequencies",
    f"(let [a {SH} b {SH}] (count (frequencies [a b])))",
    OK(V(1)),
    T,
    known=True,
    **SHL,
)
C("distinct", f"(let [a {SH} b {SH}] (count (distinct [a b])))", OK(V(1)), T, **SHL)
C("group_by", f"(count (group-by identity [{SH}]))", OK(V(1)), T, **SHL)
C("map_key", f"(count (assoc {{}} {SH} 1))", OK(V(1)), T, known=True, **SHL)
C("contains_set", f"(contains? #{{1}} {SH})", OK(V(False)), T, **SHL)
C("sort", f"(let [a {SH} b {SH}] (count (sort [a b a])))", OK(V(3)), T, **SHL)
C("flatten_count", f"(count (flatten {SH}))", ERR(MCS), max_collection_size=1_000_000, **SHL)
C("str", f"(count (str {SH}))", ERR(MSS), max_string_size=MiB, known=True, **SHL)
C("join", f'(count (join "," {SH}))', ERR(MSS), max_string_size=MiB, **SHL)
C(
    "println",
    f"(do (println {SH}) 1)",
    OK(V(1), PRINTS(1, CUT)),
    ERR(MSS),
    max_string_size=MiB,
    known=True,
    **SHL,
)
C("return", SH, OK(SHARED(60)), T, ERR("max_memory"), known=True, **SHL)
C("def", f"(def big {SH}) 1", OK(V(1)), T, **SHL)
C(
    "tool_echo",
    f"(count (tool/echo {SH}))",
    OK(V(2)),
    T,
    ERR("max_memory"),
    tools={"echo": "echo"},
    **SHL,
)
C("map_variant_set", f"(let [a {SHM} b {SHM}] (count (set [a b])))", OK(V(1)), T, **SHL)
C("map_variant_str", f"(count (str {SHM}))", ERR(MSS), max_string_size=MiB, **SHL)
C("map_variant_return", SHM, OK(ANYV), T, ERR("max_memory"), **SHL)
C("set_variant_build", f"(count {SHS})", OK(V(2)), T, **SHL)

# ============================================================================ recursion
category("recursion")
C("unbounded_defn", "(defn f [n] (+ 1 (f n))) (f 1)", ERR(MD))
C("mutual", "(defn a [n] (b n)) (defn b [n] (a n)) (a 1)", ERR(MD))
C("through_map", "(defn f [x] (map f [x])) (f 1)", ERR(MD))
C("through_mapv", "(defn f [x] (mapv f [x])) (f 1)", ERR(MD))
C("through_filter", "(defn f [x] (filter f [x])) (f 1)", ERR(MD))
C("through_reduce", "(defn f [x] (reduce (fn [a b] (f b)) 0 [x])) (f 1)", ERR(MD))
C("through_pmap", "(defn f [x] (pmap f [x])) (f 1)", ERR(MD), solo=True)
C("through_pcalls", "(defn f [] (first (pcalls f))) (f)", ERR(MD), solo=True)
# found by the eval fuzzer: each level runs its branch on the calling thread in a new interpreter
C(
    "pcalls_inline_chain_20000",
    "(pmap (fn [_] (defn f [n] (if (<= n 0) [] (pcalls #(f (dec n))))) (count (f 20000))) [1 2])",
    OK(),
    ERR("max_memory"),
    max_depth=100_000,
    max_memory=256 * MiB,
    solo=True,
)
# found by the eval fuzzer: calling a chain of natives nests calls without evaluating a node
C(
    "call_juxt_chain_200000",
    "((loop [f :k i 0] (if (< i 200000) (recur (juxt f) (inc i)) f)) {:k 1})",
    ERR(MD),
)
C(
    "call_fnil_chain_200000",
    "((loop [f inc i 0] (if (< i 200000) (recur (fnil f 0) (inc i)) f)) 1)",
    ERR(MD),
)
C(
    "call_all_of_chain_200000",
    "((loop [f odd? i 0] (if (< i 200000) (recur (all-of f) (inc i)) f)) 1)",
    ERR(MD),
    max_depth=100_000,
)
C(
    "call_fnil_chain_90000",
    "((loop [f inc i 0] (if (< i 90000) (recur (fnil f 0) (inc i)) f)) 1)",
    OK(V(2)),
    max_depth=100_000,
)
C("through_sort_comparator", "(defn f [a b] (count (sort f [1 2]))) (f 1 2)", ERR(MD))
C("through_sort_by_key", "(defn f [x] (sort-by f [x x])) (f 1)", ERR(MD))
C("through_update", "(defn f [m] (update m :a f)) (f {})", ERR(MD))
C("through_juxt", "(defn f [x] ((juxt f) x)) (f 1)", ERR(MD))
C("through_fnil", "(defn f [x] ((fnil f 0) x)) (f 1)", ERR(MD))
C("through_apply", "(defn f [& xs] (apply f xs)) (f 1)", ERR(MD))
C("self_application", "(let [g (fn [h x] (h h x))] (g g 1))", ERR(MD))
C("non_tail_countdown", "(defn f [n] (if (= n 0) 0 (+ 1 (f (dec n))))) (f 100000)", ERR(MD))
C(
    "small_max_depth_exceeded",
    "(defn f [n] (if (= n 0) 0 (+ 1 (f (dec n))))) (f 100)",
    ERR(MD),
    max_depth=50,
)
C(
    "small_max_depth_ok",
    "(defn f [n] (if (= n 0) 0 (+ 1 (f (dec n))))) (f 40)",
    OK(V(40)),
    max_depth=50,
)
C("default_depth_ok", "(defn f [n] (if (= n 0) 0 (+ 1 (f (dec n))))) (f 900)", OK(V(900)))

# ============================================================================ closures
category("closures")
C("fn_chain_200k", FN_CHAIN, OK(V(1)), known=True)
C(
    "fn_chain_1m",
    CHAIN(10**6, "(fn [x] x)", "(fn [x] (f x))"),
    OK(V(1)),
    ERR("max_memory"),
    max_memory=512 * MiB,
    timeout_ms=5000,
)
C("fn_chain_called", "(" + CHAIN(200_000, "(fn [x] x)", "(fn [x] (f x))", "f") + " 5)", ERR(MD))
C("fn_chain_def", "(def g " + CHAIN(200_000, "(fn [x] x)", "(fn [x] (f x))", "f") + ") 1", OK(V(1)))
C("fn_chain_returned", CHAIN(200_000, "(fn [x] x)", "(fn [x] (f x))", "f"), OK(ANYV))
C(
    "fn_chain_printed",
    "(do (println " + CHAIN(200_000, "(fn [x] x)", "(fn [x] (f x))", "f") + ") 1)",
    OK(V(1), PRINTS(1)),
)
C("short_fn_chain", CHAIN(200_000, "#(identity %)", "#(f %)"), OK(V(1)))
C("juxt_chain", CHAIN(200_000, "identity", "(juxt f)"), OK(V(1)))
C("fnil_chain", CHAIN(200_000, "identity", "(fnil f 0)"), OK(V(1)))
C("all_of_chain", CHAIN(200_000, "(where :a)", "(all-of f)"), OK(V(1)))
C("any_of_chain", CHAIN(200_000, "(where :a)", "(any-of f f)"), OK(V(1)))
C("comp_is_absent", CHAIN(200_000, "identity", "(comp f inc)"), TYPED("undefined_variable"))
C("partial_is_absent", CHAIN(200_000, "identity", "(partial f)"), TYPED("undefined_variable"))
C(
    "chain_in_map",
    "(loop [m {:f identity} i 0] (if (< i 200000) (recur {:f (fn [x] ((:f m) x))} (inc i)) 1))",
    OK(V(1)),
)
C(
    "chain_in_vector",
    "(loop [v [identity] i 0] (if (< i 200000) (recur [(fn [x] ((first v) x))] (inc i)) 1))",
    OK(V(1)),
)
C("chain_in_pmap_branches", f"(count (pmap (fn [_] {FN_CHAIN}) [1 2]))", OK(V(2)), solo=True)
C("many_closures", "(count (mapv (fn [i] (fn [x] (+ x i))) (range 200000)))", OK(V(200_000)))
C(
    "wide_juxt",
    "(count ((apply juxt (mapv (fn [i] (fn [x] (+ x i))) (range 200000))) 1))",
    OK(V(200_000)),
)

# ============================================================================ threading
category("threading")
DEEP_FORM = (ERR(MD), ERR("max_nesting"))
C(
    "thread_first_50k",
    None,
    OK(V(50_001)),
    *DEEP_FORM,
    gen=["repeat", "(-> 1 ", "inc ", 50_000, ")"],
    known=True,
)
C(
    "thread_last_100k",
    None,
    OK(V(100_000)),
    *DEEP_FORM,
    gen=["repeat", "(->> 0 ", "(+ 1) ", 100_000, ")"],
    known=True,
)
C(
    "thread_first_calls_50k",
    None,
    OK(V(50_000)),
    *DEEP_FORM,
    gen=["repeat", "(-> 0 ", "(+ 1) ", 50_000, ")"],
)
C(
    "thread_first_short_fns_50k",
    None,
    OK(V(50_000)),
    *DEEP_FORM,
    gen=["repeat", "(-> 0 ", "#(+ % 1) ", 50_000, ")"],
)
C(
    "thread_in_defn_50k",
    None,
    OK(V(50_001)),
    *DEEP_FORM,
    gen=["repeat", "(defn g [x] (-> x ", "inc ", 50_000, ")) (g 1)"],
)
C(
    "cond_50k_pairs",
    None,
    OK(V(49_999)),
    *DEEP_FORM,
    gen=["cond", 50_000, 49_999, False],
    known=True,
)
C("cond_50k_pairs_else", None, OK(V(-1)), *DEEP_FORM, gen=["cond", 50_000, -5, True])
C("and_100k", None, OK(V(1)), *DEEP_FORM, gen=["repeat", "(and ", "true ", 100_000, "1)"])
C("or_100k", None, OK(V(2)), *DEEP_FORM, gen=["repeat", "(or ", "false ", 100_000, "2)"])
C("do_100k", None, OK(V(2)), gen=["repeat", "(do ", "1 ", 100_000, "2)"])
C(
    "plus_1m_args",
    None,
    OK(V(1_000_000)),
    gen=["repeat", "(+ ", "1 ", 1_000_000, ")"],
    timeout_ms=5000,
)
C("let_100k_bindings", None, OK(V(1)), gen=["repeat", "(let [", "a 1 ", 100_000, "] a)"])
C("let_5000_names", None, OK(V(4999)), gen=["let_bindings", 5000])
C("nested_let_10k_text", None, ERR("max_nesting"), gen=["nest", "(let [a 1] ", 10_000, "a", ")"])
C("nested_fn_10k_text", None, ERR("max_nesting"), gen=["nested_fn", 10_000])
C("nested_let_400_ok", None, OK(V(1)), gen=["nest", "(let [a 1] ", 400, "a", ")"])
C("nested_when_400_ok", None, OK(V(3)), gen=["nest", "(when true ", 400, "3", ")"])
C("nested_fn_200_ok", None, OK(V(1)), gen=["nested_fn", 200])
# threading macros clone the forms they thread: with max_nesting raised, a nest deep enough to
# overflow a native stack (found by the eval fuzzer: copying the form recursed) must end in its
# value or a limit, the copies charged to the run (nested steps copy a quadratic number)
C(
    "nested_threading_6250",
    None,
    OK(V(1)),
    gen=["nest", "(-> ", 6250, "1", ")"],
    max_nesting=20_000,
)
# a name inside functions nested that deep was looked up by a recursion through every
# enclosing function (a native stack overflow, also found with max_nesting raised)
C(
    "nested_fn_20k_raised_nesting",
    None,
    OK(ANYV),
    ERR("timeout_ms"),
    ERR("fuel"),
    gen=["nest", "(fn [] ", 20_000, "1", ")"],
    max_nesting=30_000,
)
C(
    "nested_pcalls_fn_20k_raised_nesting",
    None,
    OK(ANYV),
    ERR("timeout_ms"),
    ERR("fuel"),
    ERR("max_depth"),
    ERR("max_memory"),
    gen=["nest", "(pcalls (fn [] ", 20_000, "1", "))"],
    max_nesting=50_000,
)
C(
    "nested_threading_steps_6000",
    None,
    OK(V(6001)),
    ERR("timeout_ms"),
    ERR("max_memory"),
    gen=["nest", "(-> ", 6000, "1", " inc)"],
    max_nesting=20_000,
)

# ============================================================================ parallel
category("parallel")
# the leaves work ~20 ms each so that the branch threads live long enough to be counted
P3 = (
    "(pmap (fn [a] (pmap (fn [b] (pmap (fn [c] (loop [i 0] (if (< i 20000) (recur (inc i))"
    " (* a b c)))) (range 4))) (range 4))) (range 4))"
)
P3_VALUE = [[[a * b * c for c in range(4)] for b in range(4)] for a in range(4)]
P4 = (
    "(pmap (fn [a] (pmap (fn [b] (pmap (fn [c] (pmap (fn [d] 1) (range 4))) (range 4)))"
    " (range 4))) (range 4))"
)
PAR = {"solo": True}
C("nested_pmap_4x4x4", P3, OK(V(P3_VALUE)), known=True, **PAR)
C("nested_pmap_4_levels", P4, OK(V([[[[1] * 4] * 4] * 4] * 4)), **PAR)
# Branches each building a large string or argument list at once: the limit fires before the
# branches together pass it (their growth is charged before it is allocated).
PSTR = "(count (pmap (fn [_] {body}) (range {n})))"
MEMO = ERR("max_memory")
C(
    "strings_in_4_branches",
    PSTR.format(body="(apply str (range 4000000))", n=4),
    MEMO,
    max_memory=64 * MiB,
    **PAR,
)
C(
    "strings_in_8_branches",
    PSTR.format(body="(apply str (range 2000000))", n=8),
    MEMO,
    max_memory=64 * MiB,
    **PAR,
)
C(
    "joins_in_4_branches",
    PSTR.format(body='(join "," (range 4000000))', n=4),
    MEMO,
    max_memory=64 * MiB,
    **PAR,
)
C(
    "apply_in_4_branches",
    PSTR.format(body="(apply + (range 4000000))", n=4),
    MEMO,
    max_memory=64 * MiB,
    **PAR,
)
C(
    "growing_strings_in_4_branches",
    PSTR.format(
        body='(loop [s "" i 0] (if (< i 200) (recur (str s (apply str (range 20000))) (inc i)) s))',
        n=4,
    ),
    MEMO,
    max_memory=64 * MiB,
    **PAR,
)
C(
    "strings_in_pcalls",
    "(count (pcalls " + " ".join(["(fn [] (apply str (range 4000000)))"] * 4) + "))",
    MEMO,
    TYPED("memory_exceeded", "max_memory"),
    max_memory=64 * MiB,
    **PAR,
)
C("self_pmap_fork", "(defn f [x] (pmap f [x x])) (f 1)", ERR(MD), T, known=True, **PAR)
C("self_pcalls_fork", "(defn f [] (pcalls f f)) (f)", ERR(MD), T, **PAR)
C("self_pmap_fork_depth_30", "(defn f [x] (pmap f [x x])) (f 1)", ERR(MD), T, max_depth=30, **PAR)
C(
    "pmap_chain_over_depth",
    "(defn f [n] (if (= n 0) 0 (first (pmap f [(dec n)])))) (f 2000)",
    ERR(MD),
    **PAR,
)
C(
    "pmap_chain_200_ok",
    "(defn f [n] (if (= n 0) 0 (first (pmap f [(dec n)])))) (f 200)",
    OK(V(0)),
    timeout_ms=5000,
    **PAR,
)
C(
    "pmap_12_vectors_kept",
    "(count (pmap (fn [_] (vec (range 5000000))) (range 12)))",
    ERR("max_memory"),
    timeout_ms=3000,
    known=True,
    **PAR,
)
C(
    "pcalls_12_vectors_kept",
    "(count (pcalls " + "#(vec (range 5000000)) " * 12 + "))",
    ERR("max_memory"),
    timeout_ms=3000,
    **PAR,
)
C(
    "pmap_12_vectors_counted",
    "(count (pmap (fn [_] (count (vec (range 5000000)))) (range 12)))",
    OK(V(12)),
    ERR("max_memory"),
    timeout_ms=3000,
    **PAR,
)
C(
    "pmap_sleeping_tool",
    "(count (pmap (fn [_] (tool/nap)) (range 40)))",
    ERR("timeout_ms"),
    tools={"nap": ["sleep", 300]},
    timeout_ms=1000,
    extra_ms=300,
    **PAR,
)
C(
    "pcalls_sleeping_tool",
    "(count (pcalls " + "#(tool/nap) " * 40 + "))",
    ERR("timeout_ms"),
    tools={"nap": ["sleep", 300]},
    timeout_ms=1000,
    extra_ms=300,
    **PAR,
)
C(
    "pmap_sleeping_tool_ok",
    "(pmap (fn [_] (tool/nap)) (range 4))",
    OK(V([100] * 4)),
    tools={"nap": ["sleep", 100]},
    timeout_ms=2000,
    extra_ms=100,
    **PAR,
)
C(
    "pmap_endless_branches",
    "(pmap (fn [_] (loop [i 0] (recur (inc i)))) (range 8))",
    ERR("timeout_ms"),
    timeout_ms=1000,
    **PAR,
)
C(
    "pmap_endless_branches_fuel",
    "(pmap (fn [_] (loop [i 0] (recur (inc i)))) (range 8))",
    ERR("fuel"),
    fuel=1_000_000,
    timeout_ms=3000,
    **PAR,
)
C(
    "pmap_fuel_is_per_run",  # 8 branches of ~400,000 steps each against 2,000,000 for the run
    "(count (pmap (fn [_] (loop [i 0] (if (< i 100000) (recur (inc i)) i))) (range 8)))",
    ERR("fuel"),
    fuel=2_000_000,
    timeout_ms=3000,
    **PAR,
)
C(
    "pmap_shared_eq",
    f"(let [a {SH} b {SH}] (pmap (fn [_] (= a b)) (range 4)))",
    OK(V([True] * 4)),
    T,
    timeout_ms=1000,
    **PAR,
)
C("pmap_100k_elements", "(count (pmap inc (range 100000)))", OK(V(100_000)), timeout_ms=3000, **PAR)
C("pmap_return_in_branch", "(pmap (fn [x] (return x)) [1])", TYPED("pmap_error"), **PAR)
C("pcalls_nested_6", "(pcalls (fn [] " * 6 + "1" + "))" * 6, OK(DEEP(6)), **PAR)
C("pmap_branch_unbounded_recursion", "(defn f [n] (+ 1 (f n))) (pmap f [1 2 3 4])", ERR(MD), **PAR)
C(
    "pmap_branch_deep_value",
    f"(count (pmap (fn [_] (count (str {DV(100_000)}))) (range 4)))",
    OK(V(4)),
    ERR(MD),
    timeout_ms=5000,
    **PAR,
)

# ============================================================================ printing
category("printing")
S16 = {"s": S("x", 16 * MiB)}
C(
    "println_16mib_x100_data",
    "(doseq [i (range 100)] (println data/s)) 1",
    OK(V(1), PRINTS(100, CUT)),
    data=S16,
    timeout_ms=5000,
    known=True,
)
C(
    "println_16mib_x100_built",
    f"(let [s {DOUBLED_16MIB}] (doseq [i (range 100)] (println s)) (count s))",
    OK(V(16 * MiB), PRINTS(100, CUT)),
    timeout_ms=5000,
    known=True,
)
C(
    "println_16mib_four_args",
    "(println data/s data/s data/s data/s) 1",
    OK(V(1), PRINTS(1, CUT)),
    data=S16,
)
C(
    "println_deep_x100",
    f"(let [v {DV(100_000)}] (doseq [i (range 100)] (println v)) 1)",
    OK(V(1), PRINTS(100, CUT)),
    timeout_ms=5000,
)
C("println_deep_map", f"(do (println {DM(100_000)}) 1)", OK(V(1), PRINTS(1, CUT)))
C(
    "println_shared_map",
    f"(do (println {SHM}) 1)",
    OK(V(1), PRINTS(1, CUT)),
    ERR(MSS),
    max_string_size=MiB,
    timeout_ms=1000,
)
C(
    "println_forever",
    '(loop [i 0] (println "xxxxxxxxxxxxxxxxxxxx") (recur (inc i)))',
    ERR("max_output"),
)
C(
    "small_max_output",
    '(doseq [i (range 100)] (println "0123456789"))',
    ERR("max_output"),
    max_output=200,
)
C(
    "apply_println_1m_args",
    "(do (apply println (range 1000000)) 1)",
    OK(V(1), PRINTS(1, CUT)),
    timeout_ms=5000,
)
C(
    "println_big_map",
    "(do (println (frequencies (range 300000))) 1)",
    OK(V(1), PRINTS(1, CUT)),
    timeout_ms=5000,
)
C(
    "println_100k_entries",
    "(doseq [i (range 100000)] (println i))",
    OK(V(None), PRINTS(100_000)),
    timeout_ms=5000,
)
C(
    "println_in_pmap_branches",
    "(count (pmap (fn [_] (println data/s)) (range 8)))",
    OK(V(8)),
    data=S16,
    solo=True,
)
C(
    "println_24mib_str",
    "(do (println (str data/s data/s)) 1)",
    OK(V(1), PRINTS(1, CUT)),
    data={"s": S("x", 12 * MiB)},
)
C(
    "println_unicode_16mib",
    "(do (println data/s) 1)",
    OK(V(1), PRINTS(1, CUT)),
    data={"s": S("\u00e9", 8 * MiB)},
)
C(
    "println_growing_string",
    '(loop [s "x" i 0] (println s) (if (< i 24) (recur (str s s) (inc i)) 1))',
    OK(V(1), PRINTS(25)),
)
C(
    "println_16mib_x1000_big_output",
    "(doseq [i (range 1000)] (println data/s)) 1",
    OK(V(1), PRINTS(1000, CUT)),
    ERR("max_output"),
    data=S16,
    max_output=10**8,
    timeout_ms=3000,
)

# ============================================================================ sorting
category("sorting")
XS10M = {"xs": {"$": "perm", "n": 10_000_000}}
XS2M = {"xs": {"$": "perm", "n": 2_000_000}}
XS100K = {"xs": {"$": "perm", "n": 100_000}}
XS1K = {"xs": {"$": "perm", "n": 1000}}
C("sort_10m_data", "(count (sort data/xs))", ERR("max_memory"), data=XS10M, known=True)
C(
    "sort_10m_built",
    "(count (sort (range 10000000)))",
    ERR("max_memory"),
    max_memory=256 * MiB,
    timeout_ms=3000,
    known=True,
)
C("sort_by_10m_data", "(count (sort-by - data/xs))", ERR("max_memory"), data=XS10M)
C("sort_desc_10m_data", "(count (sort :desc data/xs))", ERR("max_memory"), data=XS10M)
C("distinct_10m_data", "(count (distinct data/xs))", ERR("max_memory"), data=XS10M)
C("reverse_10m_data", "(count (reverse data/xs))", ERR("max_memory"), data=XS10M)
C(
    "comparator_fn_2m_timeout",
    "(count (sort (fn [a b] (< a b)) data/xs))",
    ERR("timeout_ms"),
    data=XS2M,
    max_memory=512 * MiB,
    timeout_ms=1000,
)
C(
    "comparator_fn_2m_fuel",
    "(count (sort (fn [a b] (< a b)) data/xs))",
    ERR("fuel"),
    data=XS2M,
    max_memory=512 * MiB,
    fuel=1_000_000,
    timeout_ms=3000,
)
# texts longer than seven bytes: shorter ones are held in the value itself and take no memory of
# their own (`(map str (range 3000000))` now fits in 128 MB; see strings_3m_in_place)
C(
    "strings_3m",
    '(count (sort (map #(str "item-" %) (range 3000000))))',
    ERR("max_memory"),
    timeout_ms=3000,
)
C(
    "strings_3m_in_place",
    "(count (sort (map str (range 3000000))))",
    OK(V(3_000_000)),
    timeout_ms=3000,
)
C(
    "deep_vectors_1000x1000",
    "(count (sort (mapv (fn [i] (loop [j 0 v (mod (* i 7919) 1000)]"
    " (if (< j 1000) (recur (inc j) [v]) v))) (range 1000))))",
    OK(V(1000)),
    timeout_ms=5000,
)
C(
    "inconsistent_boolean_comparator",
    "(count (sort (fn [a b] (= 0 (mod (+ a b) 3))) data/xs))",
    OK(V(100_000)),
    data=XS100K,
    timeout_ms=5000,
)
C(
    "inconsistent_numeric_comparator",
    "(count (sort (fn [a b] (- (mod (* a 31) 7) 3)) data/xs))",
    OK(V(100_000)),
    data=XS100K,
    timeout_ms=5000,
)
C(
    "comparator_fails_midway",
    "(sort (fn [a b] (if (= a 500) (+ nil 1) (< a b))) data/xs)",
    TYPED("type_error"),
    data=XS1K,
)
C(
    "slow_key_fn",
    "(count (sort-by (fn [x] (loop [i 0] (if (< i 1000000) (recur (inc i)) x))) data/xs))",
    ERR("timeout_ms"),
    data=XS1K,
    timeout_ms=1000,
)
C("nan_is_incomparable", "(sort [1 Double/NaN 2])", TYPED("type_error"))

# ============================================================================ regex
category("regex")
S5M_A = {"s": S("a", 5_000_000)}
S16_A = {"s": S("a", 16 * MiB)}
S2M_A = {"s": S("a", 2_000_000)}
C(
    "alternation_star_5m",
    '(some? (re-find (re-pattern "(a|a)*b") data/s))',
    OK(V(False)),
    data=S5M_A,
    timeout_ms=5000,
)
C(
    "nested_plus_5m",
    '(some? (re-find (re-pattern "(x+x+)+y") data/s))',
    OK(V(False)),
    data={"s": S("x", 5_000_000)},
    timeout_ms=5000,
)
C(
    "anchored_nested_5m",
    '(some? (re-matches (re-pattern "^(a+)+$") (str data/s "b")))',
    OK(V(False)),
    data=S5M_A,
    timeout_ms=5000,
)
C(
    "lazy_chain_5m",
    '(re-find (re-pattern "a.*?b.*?c.*?d") data/s)',
    OK(V(None)),
    data=S5M_A,
    timeout_ms=5000,
)
C(
    "re_seq_many_matches",
    '(count (re-seq (re-pattern "a") data/s))',
    ERR(MCS),
    data=S2M_A,
    max_collection_size=1_000_000,
)
C(
    "re_seq_empty_matches",
    '(count (re-seq (re-pattern "") data/s))',
    ERR(MCS),
    data=S2M_A,
    max_collection_size=1_000_000,
)
C(
    "re_seq_groups",
    '(count (re-seq (re-pattern "(a)(a)") data/s))',
    # Which limit is reached first depends on the machine's speed; either is a typed stop.
    ERR(MCS),
    TO,
    data={"s": S("a", 2_200_000)},
    max_collection_size=1_000_000,
    max_memory=512 * MiB,
)
C(
    "re_seq_16mib_default_limit",
    '(count (re-seq (re-pattern "a") data/s))',
    ERR(MCS),
    data=S16_A,
    max_memory=768 * MiB,
    timeout_ms=3000,
)
C(
    "re_split_star",
    '(count (re-split (re-pattern "x*") data/s))',
    ERR(MCS),
    data=S2M_A,
    max_collection_size=1_000_000,
)
C(
    "pattern_over_256_bytes",
    '(re-pattern (apply str (map (fn [_] "a") (range 300))))',
    TYPED("execution_error", ANY_LIMIT),
)
C(
    "compiled_too_big",
    '(regex? (re-pattern "(?:\\\\w{255}){255}"))',
    TYPED("execution_error", ANY_LIMIT),
    OK(V(True)),
)
C(
    "nested_repetition",
    '(regex? (re-pattern ".{1000}{1000}{1000}"))',
    TYPED("execution_error", ANY_LIMIT),
    OK(V(True)),
)
C("backreference", '(re-pattern "(a)\\\\1")', TYPED("execution_error", ANY_LIMIT))
C(
    "matches_all_16mib",
    '(count (re-matches (re-pattern "(?s).*") data/s))',
    OK(V(16 * MiB)),
    data=S16_A,
    timeout_ms=5000,
)
C(
    "re_seq_blocks_16mib",
    '(count (re-seq (re-pattern ".{1000}") data/s))',
    OK(V(16 * MiB // 1000)),
    data=S16_A,
    timeout_ms=5000,
)
C(
    "case_insensitive_blocks_16mib",
    '(count (re-seq (re-pattern "(?i)A{1000}") data/s))',
    OK(V(16 * MiB // 1000)),
    data=S16_A,
    timeout_ms=5000,
)
C(
    "deeply_grouped_pattern",
    "(regex? (re-pattern data/p))",
    OK(V(True)),
    TYPED("execution_error", ANY_LIMIT),
    data={"p": "(" * 120 + "a" + ")" * 120},
)
C(
    "unicode_class_16mib",
    '(re-find (re-pattern "\\\\p{Greek}") data/s)',
    OK(V(None)),
    data=S16_A,
    timeout_ms=5000,
)

# The regex crate cannot be interrupted: these must still end within the run's limits
# (a lazy DFA that keeps running out of room, capture groups over a 16 MiB match).
LETTERS16 = {"s": {"$": "letters", "n": 16 * MiB}}
GROUPS = '(re-pattern (str "(?s)" (apply str (map (fn [_] "(.*)") (range {n})))))'
THRASH = '(re-pattern "(?:[a-m].{40}){3}[a-c]{9}")'
C(
    "groups_40_over_16mib_built",
    "(let [s (apply str (map (fn [_] data/k) (range 16384)))] (count (re-find "
    + GROUPS.format(n=40)
    + " s)))",
    TYPED("execution_error"),
    TO,
    data={"k": "a" * 1024},
    timeout_ms=1000,
    max_memory=512 * MiB,
)
C(
    "groups_6_over_16mib_200ms",
    "(count (re-find " + GROUPS.format(n=6) + " data/s))",
    TYPED("execution_error"),
    TO,
    data=S16_A,
    timeout_ms=200,
)
C(
    "re_seq_groups_over_16mib_200ms",
    "(count (re-seq " + GROUPS.format(n=6) + " data/s))",
    TYPED("execution_error"),
    TO,
    data=S16_A,
    timeout_ms=200,
)
C("dfa_thrash_find_16mib_200ms", f"(re-find {THRASH} data/s)", TO, data=LETTERS16, timeout_ms=200)
C(
    "dfa_thrash_matches_16mib_200ms",
    f"(re-matches {THRASH} data/s)",
    TO,
    OK(V(None)),
    data=LETTERS16,
    timeout_ms=200,
)
C("dfa_thrash_seq_16mib_1s", f"(count (re-seq {THRASH} data/s))", TO, data=LETTERS16)
C("dfa_thrash_split_16mib_1s", f"(count (re-split {THRASH} data/s))", TO, data=LETTERS16)
C(
    "dfa_thrash_in_branches",
    f"(count (pmap (fn [_] (re-find {THRASH} data/s)) (range 4)))",
    TO,
    data=LETTERS16,
    timeout_ms=500,
    solo=True,
)


# ============================================================================ deadlines
# Long builtins must notice the deadline: with timeout_ms 200 and inputs that take longer than
# that to process, the run ends with its value (a fast build) or a timeout — within the bound.
category("deadlines")


def digits_total(n: int) -> int:
    """Total decimal digits of 0..n-1."""
    total, width, start = 0, 1, 0
    while start < n:
        end = min(n, 10**width)
        total += (end - start) * width
        start, width = end, width + 1
    return total


DL = {"timeout_ms": 200}
XS3M = {"xs": {"$": "range", "n": 3_000_000}}
XS5M = {"xs": {"$": "perm", "n": 5_000_000}}
XS1M = {"xs": {"$": "perm", "n": 1_000_000}}
C(
    "count_graphemes_16m",
    "(count data/s)",
    OK(V(8 * MiB)),
    TO,
    data={"s": S("e\u0301", 8 * MiB)},
    **DL,
)
C("subs_16mib", "(count (subs data/s 1 16000000))", OK(V(15_999_999)), TO, data=S16_A, **DL)
C("upcase_16mib", "(count (upcase data/s))", OK(V(16 * MiB)), TO, data=S16_A, **DL)
C("replace_16mib", '(count (replace data/s "a" "b"))', OK(V(16 * MiB)), TO, data=S16_A, **DL)
C(
    "frequencies_chars_8m",
    "(count (frequencies data/s))",
    OK(V(2)),
    TO,
    data={"s": S("ab", 4_000_000)},
    max_memory=512 * MiB,
    **DL,
)
C(
    "includes_long_needle",
    "(includes? data/s data/t)",
    OK(V(False)),
    TO,
    data={"s": S("a", 16 * MiB), "t": {"$": "str", "unit": "a", "n": 1_000_000, "suffix": "b"}},
    **DL,
)
C(
    "re_seq_16mib",
    '(count (re-seq (re-pattern "a{10}") data/s))',
    OK(V(16 * MiB // 10)),
    TO,
    data=S16_A,
    **DL,
)
C(
    "re_matches_16mib",
    '(count (re-matches (re-pattern "(?s).*") data/s))',
    OK(V(16 * MiB)),
    TO,
    data=S16_A,
    **DL,
)
C("sort_5m", "(count (sort data/xs))", OK(V(5_000_000)), TO, data=XS5M, max_memory=512 * MiB, **DL)
C("sort_by_fn_1m", "(count (sort-by - data/xs))", OK(V(1_000_000)), TO, data=XS1M, **DL)
C(
    "flatten_5m",
    "(count (flatten data/xs))",
    OK(V(5_000_000)),
    TO,
    data=XS5M,
    max_memory=512 * MiB,
    **DL,
)
C(
    "str_3m",
    "(count (str data/xs))",
    OK(V(digits_total(3_000_000) + 3_000_001)),
    TO,
    data=XS3M,
    **DL,
)
C(
    "join_3m",
    '(count (join "," data/xs))',
    OK(V(digits_total(3_000_000) + 2_999_999)),
    TO,
    data=XS3M,
    **DL,
)
C("println_3m", "(do (println data/xs) 1)", OK(V(1), PRINTS(1, CUT)), TO, data=XS3M, **DL)
C(
    "result_conversion_3m",
    "(vec data/xs)",
    OK(LEN(3_000_000)),
    TO,
    data=XS3M,
    max_memory=512 * MiB,
    **DL,
)

# ============================================================================ reader
category("reader")
PE = TYPED("parse_error", ANY_LIMIT)
BIGPROG = (ERR("max_memory"), PE)
C("100mb_comment", None, OK(V(42)), *BIGPROG, gen=["big", ";", "x", 100, "\n42"], timeout_ms=5000)
C(
    "100mb_of_forms",
    None,
    OK(V(1)),
    *BIGPROG,
    gen=["big", "", "1 ", 100, ""],
    timeout_ms=2000,
    known=True,
)
C(
    "100mb_vector_literal",
    None,
    ERR(MCS),
    *BIGPROG,
    gen=["big", "(count [", "1 ", 100, "])"],
    timeout_ms=2000,
)
C(
    "100mb_string_literal",
    None,
    ERR(MSS),
    *BIGPROG,
    gen=["big", '(count "', "x", 100, '")'],
    timeout_ms=2000,
)
C("100mb_whitespace", None, OK(V(7)), *BIGPROG, gen=["big", "", " ", 100, "7"], timeout_ms=5000)
C("open_parens_1e5", None, PE, gen=["repeat", "", "(", 100_000, ""])
C("nested_calls_1e5", None, ERR("max_nesting"), gen=["nest", "(inc ", 100_000, "1", ")"])
C("nested_vectors_1e5", None, ERR("max_nesting"), gen=["nest", "[", 100_000, "", "]"])
C("nested_maps_1e5", None, ERR("max_nesting"), gen=["nest", "{:a ", 100_000, "1", "}"])
C("nested_sets_1e5", None, ERR("max_nesting"), gen=["nest", "#{", 100_000, "", "}"])
C("nested_short_fns_1e5", None, ERR("max_nesting"), gen=["nest", "#(", 100_000, "", ")"])
C("mixed_open_1e6", None, PE, gen=["repeat", "", "([{", 333_334, ""])
C("stray_closers_1e6", None, OK(V(1)), gen=["repeat", "", ")", 1_000_000, " 1"])
C("symbols_1e6", None, ERR("max_symbols"), gen=["symbols", "[", "s{}", 10**6, "]"])
C("keywords_1e6", None, ERR("max_symbols"), gen=["symbols", "[", ":k{}", 10**6, "]"])
C("let_10001_names", None, ERR("max_symbols"), gen=["let_bindings", 10_001])
C("let_9000_names", None, OK(V(8999)), gen=["let_bindings", 9000])
C("100k_defs", None, ERR("max_symbols"), gen=["symbols", "(do ", "(def d{0} {0})", 100_000, " 1)"])
NUM = (PE, TYPED("arithmetic_error"))
C("int_million_digits", None, *NUM, gen=["repeat", "", "1", 10**6, ""])
C("negative_int_million_digits", None, *NUM, gen=["repeat", "-", "9", 10**6, ""])
C("float_million_digits", None, *NUM, gen=["repeat", "", "1", 10**6, ".5"])
C("huge_exponent", "1e99999999999999999999", *NUM)
C("tiny_float_million_digits", None, OK(V(0.0)), PE, gen=["repeat", "0.", "0", 10**6, "1"])
C("escape_u", '"\\u00e9"', PE)
C("escape_x", '"\\xff\\xfe"', PE)
C("escape_nul", '"\\0"', PE)
C("lone_surrogate", '(count "\ud800")', PE, REJECT())
C("nul_bytes", "(+ 1 2)\x00\x00", PE)
C(
    "escaped_newlines_10m",
    None,
    OK(V(10**7)),
    gen=["repeat", '(count "', "\\n", 10**7, '")'],
    timeout_ms=5000,
)
C("unterminated_string_10m", None, PE, gen=["repeat", '"', "x", 10**7, ""])
C("backslash_at_end", "(str \\", PE)
C(
    "char_literals_1e6",
    None,
    OK(V(10**6)),
    gen=["repeat", "(count [", "\\a ", 10**6, "])"],
    timeout_ms=5000,
)

# ============================================================================ tools
category("tools")
TE = TYPED("tool_error")
C(
    "huge_string_16mib",
    "(count (tool/big))",
    OK(V(16 * MiB)),
    tools={"big": ["value", S("x", 16 * MiB)]},
    timeout_ms=5000,
)
C(
    "huge_string_200mb",
    "(count (tool/big))",
    ERR("max_memory"),
    ERR(MSS),
    tools={"big": ["value", S("x", 200_000_000)]},
)
C(
    "deep_list_1e5",
    "(count (tool/deep))",
    OK(V(1)),
    ERR(MD),
    TE,
    tools={"deep": ["value", {"$": "deep_list", "n": 100_000}]},
)
C(
    "deep_list_1e6",
    "(count (tool/deep))",
    OK(V(1)),
    ERR(MD),
    TE,
    tools={"deep": ["value", {"$": "deep_list", "n": 10**6}]},
    timeout_ms=2000,
)
C(
    "deep_dict_1e5",
    "(count (tool/deep))",
    OK(V(1)),
    ERR(MD),
    TE,
    tools={"deep": ["value", {"$": "deep_dict", "n": 100_000}]},
)
C(
    "shared_list_60",
    "(count (tool/shared))",
    OK(V(2)),
    ERR("max_memory"),
    T,
    tools={"shared": ["value", {"$": "shared_list", "depth": 60}]},
    timeout_ms=1000,
)
C(
    "refs_200x16mib",
    "(count (tool/refs))",
    OK(V(200)),
    ERR("max_memory"),
    tools={"refs": ["value", {"$": "refs", "n": 200, "m": 16 * MiB}]},
)
C(
    "echo_refs_200x16mib",
    "(let [v (mapv (fn [_] data/s) (range 200))] (count (tool/echo v)))",
    OK(V(200)),
    ERR("max_memory"),
    data=S16,
    tools={"echo": "echo"},
    known=True,
)
C("echo_deep_1e5", f"(count (tool/echo {D1}))", OK(V(1)), ERR(MD), TE, tools={"echo": "echo"})
C(
    "echo_named_deep_1e5",
    f"(count (tool/echo {{:x {D1}}}))",
    OK(V(1)),
    ERR(MD),
    TE,
    tools={"echo": "echo"},
)
C(
    "echo_big_vector",
    "(count (tool/echo (vec (range 5000000))))",
    OK(V(5_000_000)),
    ERR("max_memory"),
    tools={"echo": "echo"},
    timeout_ms=5000,
)
C("raises_runtime_error", "(tool/boom)", TE, tools={"boom": ["raise", "RuntimeError"]})
C("raises_memory_error", "(tool/boom)", TE, tools={"boom": ["raise", "MemoryError"]})
C("raises_recursion_error", "(tool/rec)", TE, tools={"rec": ["recurse"]})
C("returns_object", "(tool/odd)", TE, tools={"odd": ["unsupported", "object"]})
C("returns_generator", "(tool/odd)", TE, tools={"odd": ["unsupported", "generator"]})
C("returns_bytes", "(tool/odd)", TE, tools={"odd": ["unsupported", "bytes"]})
C("returns_complex", "(tool/odd)", TE, tools={"odd": ["unsupported", "complex"]})
C(
    "returns_cycle",
    "(count (tool/cyc))",
    TE,
    ERR(MD),
    ERR("max_memory"),
    tools={"cyc": ["value", {"$": "cyclic"}]},
)
C(
    "returns_big_int",
    "(tool/big)",
    TE,
    TYPED("arithmetic_error"),
    tools={"big": ["value", {"$": "big_int", "digits": 100}]},
)
C(
    "returns_12m_list",
    "(count (tool/xs))",
    ERR(MCS),
    ERR("max_memory"),
    TE,
    tools={"xs": ["value", {"$": "range", "n": 12_000_000}]},
    timeout_ms=3000,
)
C(
    "sleeping_in_a_loop",
    "(doseq [i (range 100)] (tool/nap))",
    ERR("timeout_ms"),
    tools={"nap": ["sleep", 200]},
    timeout_ms=1000,
    extra_ms=200,
)
C(
    "sleeping_past_the_deadline",
    "(tool/nap)",
    ERR("timeout_ms"),
    tools={"nap": ["sleep", 3000]},
    timeout_ms=1000,
    extra_ms=3000,
)
C("reentrant_run", "(tool/re)", OK(V(3)), tools={"re": ["reenter", "(+ 1 2)"]})

# ============================================================================ result conversion
category("conversion")
# A result nested deeper than 900 levels cannot become Python objects: an execution_error
# (no limit name: it is a property of the Python side, not a limit the host set).
TOO_DEEP_FOR_PYTHON = TYPED("execution_error")
C("deep_vector_1e5", D1, OK(DEEP(100_000)), ERR(MD), TOO_DEEP_FOR_PYTHON)
C(
    "deep_vector_1e6",
    DV(10**6),
    OK(DEEP(10**6)),
    ERR(MD),
    TOO_DEEP_FOR_PYTHON,
    max_memory=256 * MiB,
    timeout_ms=2000,
)
C("deep_map_1e5", DM(100_000), OK(DEEP(100_000, 1, "dict")), ERR(MD), TOO_DEEP_FOR_PYTHON)
C("deep_set_1e3", DS(1000), OK(DEEP(1000, 1, "set")), ERR(MD), TOO_DEEP_FOR_PYTHON)
C("fail_deep_1e5", f"(fail {D1})", FAIL(DEEP(100_000)), ERR(MD), TOO_DEEP_FOR_PYTHON)
C("return_deep_1e5", f"(return {D1})", OK(DEEP(100_000)), ERR(MD), TOO_DEEP_FOR_PYTHON)
C("def_deep_1e5_returned", f"(def d {D1}) d", OK(DEEP(100_000)), ERR(MD), TOO_DEEP_FOR_PYTHON)
C(
    "refs_200x16mib_data",
    "(mapv (fn [_] data/s) (range 200))",
    OK(REFS(200, 16 * MiB)),
    ERR("max_memory"),
    data=S16,
    known=True,
)
C(
    "refs_200x16mib_built",
    f"(let [s {DOUBLED_16MIB}] (mapv (fn [_] s) (range 200)))",
    OK(REFS(200, 16 * MiB)),
    ERR("max_memory"),
    known=True,
)
C(
    "map_200_refs",
    "(into {} (map (fn [i] [i data/s]) (range 200)))",
    OK(LEN(200)),
    ERR("max_memory"),
    data=S16,
)
C(
    "nested_256_refs",
    "(let [s data/s v [s s s s] w [v v v v] x [w w w w]] [x x x x])",
    OK(LEN(4)),
    ERR("max_memory"),
    data=S16,
)
C("shared_60", SH, OK(SHARED(60)), T, ERR("max_memory"), timeout_ms=1000, known=True)
C("shared_map_60", SHM, OK(ANYV), T, ERR("max_memory"), timeout_ms=1000)
C(
    "floats_2_5m",
    "(mapv double (range 2500000))",
    OK(LEN(2_500_000)),
    ERR("max_memory"),
    max_memory=96 * MiB,
    timeout_ms=5000,
)
C(
    "strings_1m",
    "(mapv str (range 1000000))",
    OK(LEN(1_000_000)),
    ERR("max_memory"),
    timeout_ms=5000,
)
C("map_1m", "(frequencies (range 1000000))", OK(LEN(1_000_000)), ERR("max_memory"), timeout_ms=5000)
C(
    "string_32mib",
    '(loop [s "x" i 0] (if (< i 25) (recur (str s s) (inc i)) s))',
    OK(STR(32 * MiB, "x")),
)

# ============================================================================ host-raised limits
category("host_limits")
ANY_LIMIT_ERR = (ERR(MD), ERR("max_memory"), ERR("timeout_ms"), ERR("fuel"))
HUGE = 10**9
C(
    "max_depth_1e9_recursion",
    "(defn f [n] (+ 1 (f n))) (f 1)",
    REJECT(MD),
    *ANY_LIMIT_ERR,
    max_depth=HUGE,
    timeout_ms=2000,
)
C(
    "max_depth_1e9_through_map",
    "(defn f [x] (map f [x])) (f 1)",
    REJECT(MD),
    *ANY_LIMIT_ERR,
    max_depth=HUGE,
    timeout_ms=2000,
)
C(
    "max_depth_1e9_through_pmap",
    "(defn f [x] (pmap f [x])) (f 1)",
    REJECT(MD),
    *ANY_LIMIT_ERR,
    max_depth=HUGE,
    timeout_ms=2000,
    solo=True,
)
C(
    "max_depth_1e9_closure_chain",
    "(" + CHAIN(10**6, "(fn [x] x)", "(fn [x] (f x))", "f") + " 1)",
    REJECT(MD),
    OK(V(1)),
    *ANY_LIMIT_ERR,
    max_depth=HUGE,
    max_memory=512 * MiB,
    timeout_ms=3000,
)
C(
    "max_nesting_1e9_calls",
    None,
    REJECT("max_nesting"),
    OK(V(100_001)),
    ERR("max_nesting"),
    *ANY_LIMIT_ERR,
    gen=["nest", "(inc ", 100_000, "1", ")"],
    max_nesting=HUGE,
)
C(
    "max_nesting_1e9_vectors",
    None,
    REJECT("max_nesting"),
    OK(V(1)),
    ERR("max_nesting"),
    *ANY_LIMIT_ERR,
    gen=["nest", "[", 10**6, "", "]", "(count ", ")"],
    max_nesting=HUGE,
    timeout_ms=2000,
)
C(
    "max_nesting_1e9_lets",
    None,
    REJECT("max_nesting"),
    OK(V(1)),
    ERR("max_nesting"),
    *ANY_LIMIT_ERR,
    gen=["nest", "(let [a 1] ", 100_000, "a", ")"],
    max_nesting=HUGE,
)
C(
    "max_memory_1e15_conj",
    "(loop [v [] i 0] (recur (conj v (vec (range 1000))) (inc i)))",
    REJECT("max_memory"),
    ERR("max_memory"),
    ERR("timeout_ms"),
    ERR(MCS),
    max_memory=10**15,
    timeout_ms=3000,
)
C(
    "max_memory_1e15_string",
    '(loop [s "x" i 0] (recur (str s s) (inc i)))',
    REJECT("max_memory", MSS),
    ERR("max_memory"),
    ERR(MSS),
    ERR("timeout_ms"),
    max_memory=10**15,
    max_string_size=10**15,
    timeout_ms=3000,
)
C(
    "max_collection_1e12_range",
    "(count (range 100000000000))",
    REJECT(MCS),
    ERR("max_memory"),
    ERR(MCS),
    max_collection_size=10**12,
)
C(
    "max_collection_and_memory_1e15",
    "(count (range 100000000000))",
    REJECT(MCS, "max_memory"),
    ERR("max_memory"),
    ERR(MCS),
    ERR("timeout_ms"),
    max_collection_size=10**15,
    max_memory=10**15,
    timeout_ms=3000,
)
C(
    "max_string_1e12_doubling",
    "(count (loop [t data/s i 0] (if (< i 40) (recur (str t t) (inc i)) t)))",
    REJECT(MSS),
    ERR("max_memory"),
    ERR(MSS),
    data=S16,
    max_string_size=10**12,
)
C(
    "max_output_1e12",
    "(loop [i 0] (println data/s) (recur (inc i)))",
    REJECT("max_output"),
    ERR("timeout_ms"),
    ERR("max_memory"),
    ERR("max_output"),
    data=S16,
    max_output=10**12,
    timeout_ms=1000,
)
C(
    "max_symbols_1e9",
    None,
    REJECT("max_symbols"),
    OK(V(10**6)),
    ERR("max_symbols"),
    ERR("max_memory"),
    ERR("timeout_ms"),
    gen=["symbols", "(count [", ":k{}", 10**6, "])"],
    max_symbols=HUGE,
    timeout_ms=3000,
)
C(
    "fuel_and_loops_2e63",
    "(loop [i 0] (recur (inc i)))",
    REJECT("fuel", "loop_limit"),
    ERR("timeout_ms"),
    fuel=2**63 - 1,
    loop_limit=2**63 - 1,
    timeout_ms=1000,
)
C("fuel_2e80", "(+ 1 2)", REJECT("fuel"), OK(V(3)), fuel=2**80)
C("timeout_negative", "(+ 1 2)", REJECT("timeout_ms"), ERR("timeout_ms"), timeout_ms=-1)
C(
    "timeout_1e15_fuel_fires",
    "(loop [i 0] (recur (inc i)))",
    REJECT("timeout_ms"),
    ERR("fuel"),
    timeout_ms=10**15,
    fuel=10**7,
)
C("loop_limit_zero", "(loop [i 0] (if (< i 1) (recur (inc i)) i))", ERR("loop_limit"), loop_limit=0)
C(
    "all_limits_2e62",
    "(defn f [n] (+ 1 (f n))) (f 1)",
    REJECT(
        "fuel",
        "max_depth",
        "max_memory",
        "max_collection_size",
        "max_string_size",
        "max_output",
        "loop_limit",
        "max_nesting",
        "max_symbols",
        "timeout_ms",
    ),
    *ANY_LIMIT_ERR,
    **{k: 2**62 for k in LIMIT_TYPE if k != "timeout_ms"},
    timeout_ms=2000,
)
# host input nested deeper than 1,000 levels is refused with a TypeError naming the path
# (convertible-data problems are TypeErrors, like the other input checks)
DEEP_IN = (REJECT("depth", "nesting"), REJECT("levels deep", exc="TypeError"), ERR(MD))
C(
    "deep_input_flatten_1e6",
    "(count (flatten data/d))",
    OK(V(1)),
    *DEEP_IN,
    data={"d": {"$": "deep_list", "n": 10**6}},
    timeout_ms=2000,
)
C(
    "deep_input_eq_1e6",
    "(= data/a data/b)",
    OK(V(True)),
    *DEEP_IN,
    data={"a": {"$": "deep_list", "n": 10**6}, "b": {"$": "deep_list", "n": 10**6}},
    timeout_ms=2000,
)
C(
    "deep_input_map_str_1e5",
    "(count (str data/d))",
    OK(V(500_001)),
    *DEEP_IN,
    data={"d": {"$": "deep_dict", "n": 100_000}},
)
C(
    "deep_input_high_max_depth",
    "(count (str data/d))",
    OK(V(2_000_001)),
    *DEEP_IN,
    REJECT(MD),
    data={"d": {"$": "deep_list", "n": 10**6}},
    max_depth=HUGE,
    timeout_ms=2000,
)
C(
    "shared_input_60",
    "(count data/x)",
    OK(V(2)),
    REJECT(),
    ERR("max_memory"),
    T,
    data={"x": {"$": "shared_list", "depth": 60}},
    timeout_ms=1000,
)
C(
    "cyclic_input",
    "(count data/x)",
    REJECT(),
    REJECT(exc="TypeError"),
    ERR(MD),
    data={"x": {"$": "cyclic"}},
)

CATEGORIES = sorted({c.category for c in CASES})
_ids = [c.id for c in CASES]
assert len(_ids) == len(set(_ids)), "duplicate case ids"
