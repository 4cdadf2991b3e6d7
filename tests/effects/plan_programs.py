"""Random PTC-Lisp programs that call tools in every way the language allows, for testing the
plan of a program (``Check.plan`` / ``Session.plan``, issue 31) against what a run really does.

The generator is type-directed, so most programs run to their end and make their calls: every
expression has one of a few shapes (an int, a vector of ints, a boolean, a function of one int,
of two ints, a predicate, a function of no arguments, a map of functions, a vector of
functions), and every tool returns a small int (``flag`` a boolean), so a tool's result can
stand wherever an int does (a collection's length, a condition, the next call's argument).
Programs may still fail at run time (a comparator's answer that is not a number, a tool given
a map it cannot take as named arguments, ...): only the calls made before the failure count.

The tools (:class:`Recorder`): ``fetch(x=None)`` -> int; ``put(a=None, b=None)`` -> int,
declared ``effect="write"``; ``note(*args)`` -> int; ``probe()`` -> int; ``flag(x=None)`` ->
bool. None of these names is a builtin, so each can also be written bare (``(fetch 1)``,
``(map note xs)``), which reaches the tool while no local or definition has that name.

Every way a tool can be reached is a *route* (:data:`ROUTES`). Each example is built around one
route drawn from the list (so every route gets its share of the examples), with random forms
before and after it that mix the routes again:

- written calls with literal arguments (ints, floats, strings, characters, keywords, nil,
  booleans, maps, vectors and sets, keyword/value pairs) and with computed ones;
- a tool, or a function that calls one, passed to every higher-order builtin: ``map``/``mapv``
  over 1-3 collections, ``map-indexed``, ``filter``, ``remove``, ``find``, ``some``,
  ``every?``, ``not-any?``, ``take-while``, ``drop-while``, ``reduce`` (2 and 3 arguments),
  ``sort`` with a comparator, ``sort-by`` (with and without a comparator, with a ``juxt`` key),
  ``group-by``, ``sum-by``, ``avg-by``, ``min-by``, ``max-by``, ``distinct-by``, ``pluck``,
  ``update``, ``update-in``, ``update-vals``, ``apply``, ``juxt``, ``fnil``, ``pmap``,
  ``pcalls``, ``all-of``/``any-of``/``none-of``, ``max-key``/``min-key``;
- ``fn`` and ``#(...)`` nested inside each other (never ``#()`` in ``#()``, which the language
  refuses), closures returned by functions, ``->`` steps;
- functions stored in maps and vectors and called later (``((:f m) 1)``, ``((nth fs 1) 2)``),
  iterated over (``(map (fn [f] (f 1)) [tool/fetch inc])``), chosen by ``if``;
- ``let``-bound functions called several times; ``defn`` called from several places, from other
  ``defn``s, recursion and mutual recursion (each limits its own depth), ``def`` inside a
  function, a ``defn`` redefined half-way through the program;
- definitions made in an earlier turn of the same Session, and ``*1``/``*2`` holding functions;
- ``doseq`` (one and two bindings, nested), ``loop``/``recur``, ``recur`` in a ``fn``;
- ``if``/``if-not``/``when``/``when-not``/``cond``/``and``/``or``/``if-let``/``when-let`` with
  conditions computed from data and from tool results;
- ``(range n)``, ``(take n ...)``, ``(drop n ...)``, ``filter`` before ``map``, ``->>``;
- bare tool names, and the same names shadowed by a local, a parameter, a ``defn`` in the
  program (after a bare call of the tool) or in an earlier turn;
- collections from ``data/...`` (and the bare data name ``xs``), whose lengths the plan may
  know; ``where`` with a value computed by a tool.

Use::

    from plan_programs import Recorder, programs

    @given(programs())
    def test_something(ex):  # an Example
        rec = Recorder()
        session = ptc.Session(tools=rec.tools(), data=ex.data)
        for turn in ex.earlier:
            session.run(turn)
        plan = session.plan(ex.source)
        ...

``programs(route=...)`` builds examples around that route only; ``programs(form=...)`` plans
one way only (``"session"``: ``Session.plan`` after the earlier turns; ``"check"``:
``ptc.check(...).plan`` of a single program).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ptc
from hypothesis import strategies as st

TOOL_NAMES = ("fetch", "put", "note", "probe", "flag")

#: The tools declared ``effect="write"``.
WRITE_TOOLS = ("put",)


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


class Recorder:
    """The five tools of the generated programs. Each call that reaches the function is kept
    in :attr:`calls` as ``(name, args, kwargs)``. Results are small ints, so they can be a
    collection's length or a recursion's depth."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self._lock = threading.Lock()

    def _record(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        with self._lock:  # pmap and pcalls branches call tools from other threads
            self.calls.append((name, args, kwargs))

    def clear(self) -> None:
        with self._lock:
            self.calls.clear()

    def tools(self) -> dict[str, Any]:
        def fetch(x: Any = None) -> int:
            self._record("fetch", (x,), {})
            return (x * 3 + 1) % 7 if _is_int(x) else 1

        def put(a: Any = None, b: Any = None) -> int:
            self._record("put", (a, b), {})
            return ((a if _is_int(a) else 0) + 2 * (b if _is_int(b) else 0)) % 5

        def note(*args: Any) -> int:
            self._record("note", args, {})
            return len(args) % 4

        def probe() -> int:
            self._record("probe", (), {})
            return 2

        def flag(x: Any = None) -> bool:
            self._record("flag", (x,), {})
            return _is_int(x) and x % 2 == 1

        return {
            "fetch": fetch,
            "put": ptc.Tool(put, name="put", effect="write"),
            "note": note,
            "probe": probe,
            "flag": flag,
        }


@dataclass(frozen=True)
class Example:
    """One generated case. ``earlier`` are programs run in the Session before ``source`` (what
    they define and return is what ``source`` may use; their calls are not compared);
    ``source`` is planned and then run. ``form``: ``"session"`` plans with ``Session.plan``
    (``data`` is the Session's); ``"check"`` plans with
    ``ptc.check(source, tools=..., data=data).plan`` and runs in a fresh Session with the same
    data. ``routes`` names the ways of reaching a tool the example was built with."""

    source: str
    earlier: tuple[str, ...] = ()
    data: dict[str, Any] | None = None
    form: str = "session"
    routes: tuple[str, ...] = field(default=())

    def __repr__(self) -> str:
        lines = [f"Example(form={self.form!r}, data={self.data!r}, routes={self.routes!r})"]
        for i, turn in enumerate(self.earlier, 1):
            lines += [f";; --- earlier turn {i} (run first; its calls are not compared)", turn]
        lines += [";; --- the program (planned, then run; its calls are compared)", self.source]
        return "\n".join(lines)


# The shapes of values the generator builds.
INT = "int"
VEC = "vec"
BOOL = "bool"
FN1 = "fn1"  # one int -> int
FN2 = "fn2"  # two ints -> int
PRED = "pred"  # one int -> truthy or not
THUNK = "thunk"  # no arguments -> int
FMAP = "fmap"  # {:f FN1 :g FN2 :p PRED}
FVEC = "fvec"  # [FN1 FN1 ...]
MARK = "#"  # an environment entry saying "inside #()": no #() may be written here

Env = tuple[tuple[str, str], ...]

#: Every route an example can be built around (see the module docstring).
ROUTES = (
    "call-literal-args",
    "call-computed-args",
    "call-keyword-pairs",
    "map",
    "mapv-2-colls",
    "map-3-colls",
    "map-indexed",
    "filter",
    "remove",
    "find",
    "some",
    "every?",
    "not-any?",
    "take-while",
    "drop-while",
    "reduce-2",
    "reduce-3",
    "sort-comparator",
    "sort-by",
    "sort-by-comparator",
    "group-by",
    "sum-by",
    "avg-by",
    "min-by",
    "max-by",
    "distinct-by",
    "pluck",
    "update",
    "update-in",
    "update-vals",
    "apply",
    "juxt",
    "fnil",
    "pmap",
    "pcalls",
    "all-of/any-of/none-of",
    "max-key/min-key",
    "nested-fn-and-short-fn",
    "fn-in-map",
    "fn-in-vector",
    "fns-iterated",
    "fn-chosen-by-if",
    "closure-factory",
    "let-fn-called-often",
    "defn-several-places",
    "defn-calls-defn",
    "recursion",
    "mutual-recursion",
    "def-tool-value",
    "def-inside-fn",
    "redefined-defn",
    "earlier-turn-defs",
    "star-history",
    "doseq",
    "doseq-nested",
    "loop-recur",
    "fn-recur",
    "conditions",
    "range-take-filter",
    "threading",
    "bare-tool-name",
    "shadowed-tool-name",
    "data-collections",
    "where-value",
)


#: The decisions of one example (a program of depth 3 takes a few hundred) come in chunks of
#: 64 bytes, each drawn as one integer and expanded into bytes by a seeded PRNG (hypothesis
#: spends far more on a draw than the generator on a decision, draws a byte string byte by
#: byte, and draws most integers small). A chunk 0 is 64 zero bytes: the shrinker zeroes
#: chunks, each a run of decisions becoming the simplest alternative.
_CHUNK_BYTES = 64
_DECISIONS = st.tuples(*[st.integers(0, 2**32 - 1)] * 12)


def _expand(chunks: tuple[int, ...]) -> bytes:
    return b"".join(
        random.Random(n).randbytes(_CHUNK_BYTES) if n else bytes(_CHUNK_BYTES) for n in chunks
    )


class _Choices:
    """The decisions of one program, read from one drawn byte string. A byte 0, and every
    decision after the string's end, takes alternative 0, the simplest."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.pos = 0

    def below(self, n: int) -> int:
        if n <= 1 or self.pos >= len(self.raw):
            return 0
        self.pos += 1
        return self.raw[self.pos - 1] % n


def _in_short(env: Env) -> bool:
    return any(name == MARK or name.startswith("%") for name, _ in env)


def _short(env: Env, *params: str) -> Env:
    """The environment of a ``#()`` body: its placeholders are ints, and it is marked."""
    return (*((p, INT) for p in params), (MARK, MARK), *env)


class _Gen:
    """Builds the text of one program from hypothesis draws. Alternative 0 of every decision is
    the simplest (a literal, a tool value), so hypothesis shrinks a failure to a small
    program."""

    def __init__(
        self,
        src: _Choices,
        globals_: dict[str, str],
        data: dict[str, Any] | None,
        counter: list[int],
    ) -> None:
        self.src = src
        self.globals = dict(globals_)  # definitions visible to later forms: name -> shape
        self.data = data
        self.counter = counter  # shared by the turns of one example: names stay distinct
        self.routes: list[str] = []

    # -- helpers ---------------------------------------------------------------------------

    def choice(self, n: int) -> int:
        return self.src.below(n)

    def pick(self, options: list[str] | tuple[str, ...]) -> str:
        return options[self.choice(len(options))]

    def alt(self, *options: Callable[[], Any]) -> Any:
        """Builds one of several alternatives (only the one chosen draws anything)."""
        return options[self.choice(len(options))]()

    def coin(self) -> bool:
        return self.choice(2) == 1

    def fresh(self, prefix: str) -> str:
        self.counter[0] += 1
        return f"{prefix}{self.counter[0]}"

    def small(self, lo: int = 0, hi: int = 4) -> str:
        return str(lo + self.choice(hi - lo + 1))

    def vars_of(self, env: Env, shape: str) -> list[str]:
        local = dict(env)
        out = [n for n, s in env if s == shape]
        return out + [n for n, s in self.globals.items() if s == shape and n not in local]

    def bare_ok(self, env: Env, name: str) -> bool:
        """A bare tool name still reaches the tool: no local or definition has the name."""
        return name not in dict(env) and name not in self.globals

    def bare(self, env: Env, name: str) -> str:
        """``name`` written bare when that reaches the tool, else ``tool/name``."""
        if self.bare_ok(env, name):
            self.routes.append("bare-tool-name")
            return name
        return f"tool/{name}"

    def data_vec(self) -> str | None:
        if self.data is None:
            return None
        self.routes.append("data-collections")
        return self.pick(["data/xs", "xs", "(:ks data/m)", "data/ys", "(get data/m :ks)"])

    # -- literals --------------------------------------------------------------------------

    def literal(self, depth: int = 2, maps: bool = True) -> str:
        """A literal argument of any type: what a written call shows exactly (or a value the
        plan may not show: a computation on literals, a function)."""
        k = self.choice(13 if depth > 0 else 9)
        if k == 0:
            return self.small()
        if k == 1:
            return self.pick(['"a"', '"hi there"', '""', '"x\\"y"'])
        if k == 2:
            return self.pick([":k", ":id", ":ok?"])
        if k == 3:
            return self.pick(["1.5", "-2.25", "0.0", "1e3"])
        if k == 4:
            return self.pick(["nil", "true", "false"])
        if k == 5:
            return self.pick(["-7", "100", "0"])
        if k == 6:
            return "\\q"
        if k == 7:
            return self.pick(["(+ 1 2)", '(str "a" 1)', "(inc 4)", "(count [1 2])", "[(* 2 3)]"])
        if k == 8:
            return self.pick(["[]", "#{}", "{}"] if maps else ["[]", "#{}"])
        if k == 9:
            return "[" + " ".join(self.literal(depth - 1) for _ in range(self.choice(4))) + "]"
        if k == 12:  # a function value: the tool receives its printed form
            return self.pick(["inc", "(fn [x] x)", "tool/fetch", "#'g0", "(juxt inc)"])
        if k == 10 and maps:
            keys = [key for key in ("a", "b", "id") if self.coin()]
            return "{" + " ".join(f":{key} {self.literal(depth - 1)}" for key in keys) + "}"
        return "#{" + " ".join(sorted({self.small() for _ in range(self.choice(3))})) + "}"

    def arg(self, env: Env, depth: int, maps: bool = True) -> str:
        """An argument of a written call: mostly an int expression; now and then a literal of
        another type, or a collection with computed parts. ``maps=False`` where one map would
        be taken as named arguments the tool does not have."""
        return self.alt(
            lambda: self.int_expr(env, depth - 1),
            lambda: self.literal(maps=maps),
            lambda: f"[{self.small()} {self.int_expr(env, depth - 1)}]",
            lambda: (
                f"{{:id {self.int_expr(env, depth - 1)} :tag {self.literal(0)}}}"
                if maps
                else f"#{{{self.int_expr(env, depth - 1)}}}"
            ),
        )

    # -- written tool calls ----------------------------------------------------------------

    def tool_call(self, env: Env, depth: int) -> str:
        """A written call of a tool giving an int."""

        def a(maps: bool = True) -> str:
            return self.arg(env, depth, maps) if depth > 0 else self.int_expr(env, 0)

        return self.alt(
            lambda: f"(tool/fetch {a(False)})",
            lambda: f"(tool/put {a()} {a()})",
            lambda: "(tool/note" + "".join(" " + a() for _ in range(2 * self.choice(3))) + ")",
            lambda: "(tool/probe)",
            lambda: f"(tool/put {{:a {a()} :b {a()}}})",
            lambda: f"(tool/put :a {a()} :b {a()})",
            lambda: self.pick(["(tool/fetch)", "(tool/put)", "(tool/note)"]),
            lambda: f"(tool/fetch :x {a()})",
            lambda: f"(tool/put {{:b {a()}}})",
            lambda: f"(tool/note {a(False)})",
            lambda: f"({self.bare(env, 'fetch')} {a(False)})",
            lambda: f"({self.bare(env, 'put')} {a()} {a()})",
        )

    # -- ints ------------------------------------------------------------------------------

    def int_expr(self, env: Env, depth: int) -> str:
        names = self.vars_of(env, INT)
        if depth <= 0:
            if names and self.coin():
                return self.pick(names)
            return self.small()
        d = depth - 1
        i = lambda: self.int_expr(env, d)  # noqa: E731
        v = lambda: self.vec_expr(env, d)  # noqa: E731
        return self.alt(
            lambda: self.small(),
            lambda: self.pick(names) if names else self.small(),
            lambda: self.tool_call(env, depth),
            lambda: self.tool_call(env, depth),
            lambda: self.tool_call(env, depth),
            lambda: f"({self.fn1(env, d)} {i()})",
            lambda: f"({self.fn1(env, d)} {i()})",
            lambda: f"({self.fn2(env, d)} {i()} {i()})",
            lambda: self.cond_int(env, depth),
            lambda: self.let_int(env, depth),
            lambda: f"({self.pick(['+', 'max', 'min'])} {i()} {i()})",
            lambda: f"(mod {i()} {self.small(2, 5)})",
            lambda: f"(count {v()})",
            lambda: f"(reduce {self.fn2(env, d)} {i()} {v()})",
            lambda: f"(or (reduce {self.fn2(env, d)} {v()}) 0)",
            lambda: f"(sum-by {self.fn1(env, d)} {v()})",
            lambda: f"(or (first {v()}) {self.small()})",
            lambda: self.hof_int(env, depth),
            lambda: self.loop_int(env, depth),
            lambda: f"(do {self.stmt(env, d)} {i()})",
            lambda: f"({self.thunk(env, d)})",
            lambda: f"(-> {i()} {self.step1(env, d)} {self.step1(env, d)})",
            lambda: f"(count (pcalls {self.thunk(env, d)} {self.thunk(env, d)}))",
            lambda: f"(apply {self.pick(['tool/note', '+', self.bare(env, 'note')])} {v()})",
        )

    def step1(self, env: Env, depth: int) -> str:
        """A step of ``->`` on an int: a function name, a call taking the value first, or a
        ``#()`` (called with the value)."""

        def as_step() -> str:
            f = self.fn1(env, depth - 1)
            return f if f.startswith("#(") else f"({f})"

        return self.alt(
            lambda: self.pick(["inc", "tool/fetch", "tool/note"]),
            lambda: f"(tool/put {self.int_expr(env, depth - 1)})",
            lambda: f"({self.fn2(env, depth - 1)} {self.int_expr(env, depth - 1)})",
            as_step,
        )

    def cond_int(self, env: Env, depth: int) -> str:
        self.routes.append("conditions")
        d = depth - 1
        b = lambda: self.bool_expr(env, d)  # noqa: E731
        i = lambda: self.int_expr(env, d)  # noqa: E731

        def if_let() -> str:
            c = self.fresh("c")
            test = self.alt(i, lambda: f"(when {b()} {i()})")
            return f"(if-let [{c} {test}] {self.int_expr(((c, INT), *env), d)} {i()})"

        def when_let() -> str:
            c = self.fresh("c")
            test = f"(some {self.pred(env, d)} {self.vec_expr(env, d)})"
            return f"(or (when-let [{c} {test}] {i()}) 0)"

        return self.alt(
            lambda: f"(if {b()} {i()} {i()})",
            lambda: f"(or (when {b()} {i()}) {i()})",
            lambda: f"(cond {b()} {i()} {b()} {i()} :else {i()})",
            if_let,
            lambda: f"(if-not {b()} {i()} {i()})",
            when_let,
            lambda: f"(or (and {b()} {i()}) (or (when-not {b()} {i()}) {i()}))",
        )

    def let_int(self, env: Env, depth: int) -> str:
        d = depth - 1
        bindings = []
        inner = env
        for _ in range(1 + self.choice(2)):
            shape = self.pick([INT, FN1, VEC, FN2, PRED, FMAP, FVEC])
            name = self.fresh({INT: "x", VEC: "v"}.get(shape, "f"))
            bindings.append(f"{name} {self.expr_of(shape, inner, d)}")
            inner = ((name, shape), *inner)
        return f"(let [{' '.join(bindings)}] {self.int_expr(inner, d)})"

    def hof_int(self, env: Env, depth: int) -> str:
        """Higher-order builtins giving an int."""
        d = depth - 1
        f1 = lambda: self.fn1(env, d)  # noqa: E731
        i = lambda: self.int_expr(env, d)  # noqa: E731
        v = lambda: self.vec_expr(env, d)  # noqa: E731
        return self.alt(
            lambda: f"(:a (update {{:a {i()}}} :a {f1()}))",
            lambda: f"(:a (update {{:a {i()} :b 1}} :a {self.fn2(env, d)} {i()}))",
            lambda: f"(get-in (update-in {{:a {{:b {i()}}}}} [:a :b] {f1()}) [:a :b])",
            lambda: f"((fnil {f1()} {i()}) {self.alt(lambda: 'nil', i)})",
            lambda: f"({self.pick(['max-key', 'min-key'])} {f1()} {i()} {i()} {i()})",
            lambda: f"(or ({self.pick(['min-by', 'max-by'])} {f1()} {v()}) 0)",
            lambda: f"(round (or (avg-by {f1()} {v()}) 0))",
            lambda: f"(count (group-by {f1()} {v()}))",
            lambda: f"(apply {self.fn2(env, d)} [{i()} {i()}])",
            lambda: f"(apply {self.fn2(env, d)} {i()} [{i()}])",
            lambda: f"(or (find {self.pred(env, d)} {v()}) 0)",
            lambda: f"(first ((juxt {f1()} {f1()}) {i()}))",
            lambda: f"(count (filter (where :a = {i()}) [{{:a 1}} {{:a {i()}}}]))",
        )

    def loop_int(self, env: Env, depth: int) -> str:
        d = depth - 1

        def count_up() -> str:
            self.routes.append("loop-recur")
            i, acc = self.fresh("i"), self.fresh("acc")
            inner = ((i, INT), (acc, INT), *env)
            n = self.alt(self.small, lambda: f"(mod {self.int_expr(env, d)} 4)")
            step = self.int_expr(inner, d)
            return (
                f"(loop [{i} 0 {acc} 0] (if (< {i} {n}) (recur (inc {i}) (+ {acc} {step})) {acc}))"
            )

        def walk() -> str:
            self.routes.append("loop-recur")
            xs, acc = self.fresh("v"), self.fresh("acc")
            inner = ((acc, INT), *env)
            return (
                f"(loop [{xs} {self.vec_expr(env, d)} {acc} 0] (if (empty? {xs}) {acc}"
                f" (recur (rest {xs}) (+ {acc} ({self.fn1(inner, d)} (first {xs}))))))"
            )

        def fn_recur() -> str:
            self.routes.append("fn-recur")
            n, acc = self.fresh("n"), self.fresh("acc")
            inner = ((n, INT), (acc, INT), *env)
            body = self.int_expr(inner, d)
            start = self.alt(self.small, lambda: f"(mod {self.int_expr(env, d)} 4)")
            return (
                f"((fn [{n} {acc}] (if (pos? {n}) (recur (dec {n}) (+ {acc} {body})) {acc}))"
                f" {start} 0)"
            )

        return self.alt(count_up, walk, fn_recur)

    # -- vectors ---------------------------------------------------------------------------

    def vec_literal(self) -> str:
        return "[" + " ".join(self.small() for _ in range(self.choice(5))) + "]"

    def vec_expr(self, env: Env, depth: int) -> str:
        names = self.vars_of(env, VEC)
        if depth <= 0:
            return self.alt(
                self.vec_literal,
                lambda: self.pick(names) if names else self.vec_literal(),
                lambda: f"(range {self.small()})",
                lambda: self.data_vec() or self.vec_literal(),
            )
        d = depth - 1
        f1 = lambda: self.fn1(env, d)  # noqa: E731
        v = lambda: self.vec_expr(env, d)  # noqa: E731
        p = lambda: self.pred(env, d)  # noqa: E731
        i = lambda: self.int_expr(env, d)  # noqa: E731
        return self.alt(
            self.vec_literal,
            lambda: self.pick(names) if names else self.vec_literal(),
            lambda: f"(range {self.alt(self.small, lambda: f'(mod {i()} 5)')})",
            lambda: self.data_vec() or f"[{i()} {i()}]",
            lambda: f"({self.pick(['take', 'drop'])} {self.alt(self.small, i)} {v()})",
            lambda: f"({self.pick(['map', 'mapv'])} {f1()} {v()})",
            lambda: f"({self.pick(['map', 'mapv'])} {f1()} {v()})",
            lambda: f"({self.pick(['map', 'mapv'])} {self.fn2(env, d)} {v()} {v()})",
            lambda: f"({self.pick(['filter', 'remove', 'take-while', 'drop-while'])} {p()} {v()})",
            lambda: f"(sort {self.comparator(env, d)} {v()})",
            lambda: f"(sort-by {f1()} {v()})",
            lambda: f"(sort-by {f1()} {self.comparator(env, d)} {v()})",
            lambda: f"(pmap {f1()} {v()})",
            lambda: (
                "(pcalls" + "".join(" " + self.thunk(env, d) for _ in range(self.choice(4))) + ")"
            ),
            lambda: f"(map-indexed {self.fn2(env, d)} {v()})",
            lambda: f"(keys (group-by {f1()} {v()}))",
            lambda: f"(vals (update-vals {{:a {i()} :b {i()}}} {f1()}))",
            lambda: f"(update [{i()} {i()}] {self.small(0, 1)} {f1()})",
            lambda: f"(distinct-by {f1()} {v()})",
            lambda: f"((juxt {f1()} {f1()}) {i()})",
            lambda: self.thread_vec(env, d),
            lambda: f"(if {self.bool_expr(env, d)} {v()} {v()})",
            lambda: f"(pluck {f1()} {v()})",
            lambda: f"(filter ({self.pick(['all-of', 'any-of', 'none-of'])} {p()} {p()}) {v()})",
            lambda: f"(map {self.fn3(env, d)} {v()} {v()} {v()})",
            lambda: f"(mapv (fn [f] (f {i()})) {self.fvec_expr(env, d)})",
        )

    def thread_vec(self, env: Env, depth: int) -> str:
        self.routes.append("threading")
        v = self.vec_expr(env, depth)
        return f"(->> {v} (filter {self.pred(env, depth)}) (map {self.fn1(env, depth)}) (take 3))"

    # -- booleans --------------------------------------------------------------------------

    def bool_expr(self, env: Env, depth: int) -> str:
        if depth <= 0:
            return self.alt(
                lambda: self.pick(["true", "false"]),
                lambda: f"(tool/flag {self.int_expr(env, 0)})",
                lambda: f"(odd? {self.int_expr(env, 0)})",
            )
        d = depth - 1
        i = lambda: self.int_expr(env, d)  # noqa: E731
        b = lambda: self.bool_expr(env, d)  # noqa: E731

        def from_data() -> str:
            src = self.data_vec()
            if src is None:
                return f"(pos? {i()})"
            return f"(> (count {src}) {self.small(0, 3)})"

        return self.alt(
            lambda: self.pick(["true", "false"]),
            lambda: f"(tool/flag {i()})",
            lambda: f"({self.bare(env, 'flag')} {i()})",
            lambda: f"({self.pred(env, d)} {i()})",
            lambda: f"({self.pick(['>', '<', '=', '>='])} {i()} {i()})",
            lambda: f"({self.pick(['even?', 'odd?', 'pos?', 'zero?'])} {i()})",
            lambda: f"(empty? {self.vec_expr(env, d)})",
            lambda: f"({self.pick(['and', 'or'])} {b()} {b()})",
            lambda: f"(not {b()})",
            lambda: (
                f"({self.pick(['some', 'every?', 'not-any?'])} {self.pred(env, d)}"
                f" {self.vec_expr(env, d)})"
            ),
            lambda: f"(contains? (set {self.vec_expr(env, d)}) {i()})",
            from_data,
        )

    # -- functions -------------------------------------------------------------------------

    def fn1(self, env: Env, depth: int) -> str:
        """A function of one int giving an int."""
        names = self.vars_of(env, FN1)
        if depth <= 0:
            return self.alt(
                lambda: self.pick(["tool/fetch", "tool/note", "tool/put"]),
                lambda: "inc",
                lambda: self.pick(names) if names else "tool/fetch",
                lambda: self.bare(env, self.pick(["fetch", "note"])),
            )
        d = depth - 1

        def lam() -> str:
            x = self.fresh("x")
            return f"(fn [{x}] {self.int_expr(((x, INT), *env), d)})"

        def in_map() -> str:
            self.routes.append("fn-in-map")
            return f"(:f {self.fmap_expr(env, d)})"

        def in_vec() -> str:
            self.routes.append("fn-in-vector")
            fv = self.fvec_expr(env, d)
            return self.alt(
                lambda: f"(nth {fv} {self.small(0, 1)})",
                lambda: f"(get {fv} (mod {self.int_expr(env, d)} 2))",
                lambda: f"(first {fv})",
            )

        def by_if() -> str:
            self.routes.append("fn-chosen-by-if")
            return f"(if {self.bool_expr(env, d)} {self.fn1(env, d)} {self.fn1(env, d)})"

        def factory() -> str:
            self.routes.append("closure-factory")
            k, x = self.fresh("k"), self.fresh("x")
            body = self.int_expr(((k, INT), (x, INT), *env), d)
            return f"((fn [{k}] (fn [{x}] {body})) {self.int_expr(env, d)})"

        def via_fn2() -> str:
            x = self.fresh("x")
            inner = ((x, INT), *env)
            return f"(fn [{x}] ({self.fn2(inner, d)} {x} {self.int_expr(inner, d)}))"

        def let_bound() -> str:
            f = self.fresh("f")
            return f"(let [{f} {self.fn1(env, d)}] {f})"

        return self.alt(
            lambda: self.pick(["tool/fetch", "tool/note", "tool/put"]),
            lambda: self.bare(env, self.pick(["fetch", "note", "put"])),
            lambda: self.pick(names) if names else "inc",
            lam,
            lam,
            lambda: self.short_fn1(env, d) if not _in_short(env) else lam(),
            lambda: self.short_fn1(env, d) if not _in_short(env) else "tool/fetch",
            in_map,
            in_vec,
            lambda: f"(fnil {self.fn1(env, d)} {self.small()})",
            by_if,
            factory,
            via_fn2,
            let_bound,
            lambda: self.pick(["tool/fetch", "tool/note", "inc", "dec"]),
        )

    def short_fn1(self, env: Env, depth: int) -> str:
        """``#(...)`` of one argument: ``%`` is always written where it makes the arity 1.
        Inside, ``fn`` may appear but no other ``#()``."""
        self.routes.append("nested-fn-and-short-fn")
        inner = _short(env, "%")
        i = lambda: self.int_expr(inner, depth)  # noqa: E731

        def let_y() -> str:
            y = self.fresh("y")
            return f"#(let [{y} %] {self.int_expr(((y, INT), *inner), depth)})"

        return self.alt(
            lambda: f"#({self.pick(['tool/fetch', 'tool/note', self.bare(env, 'fetch')])} %)",
            lambda: f"#(tool/put % {i()})",
            lambda: f"#(tool/put {{:a % :b {i()}}})",
            lambda: f"#(+ % {i()})",
            lambda: f"#({self.fn2(inner, depth)} % {i()})",
            lambda: f"#({self.fn1(inner, depth)} %)",
            lambda: f"#(if {self.bool_expr(inner, depth)} % {i()})",
            let_y,
        )

    def fn2(self, env: Env, depth: int) -> str:
        """A function of two ints giving an int."""
        names = self.vars_of(env, FN2)
        if depth <= 0:
            return self.alt(
                lambda: self.pick(["tool/put", "tool/note"]),
                lambda: "+",
                lambda: self.pick(names) if names else "tool/put",
                lambda: self.bare(env, "put"),
            )
        d = depth - 1

        def lam() -> str:
            a, b = self.fresh("a"), self.fresh("b")
            return f"(fn [{a} {b}] {self.int_expr(((a, INT), (b, INT), *env), d)})"

        def short() -> str:
            if _in_short(env):
                return lam()
            self.routes.append("nested-fn-and-short-fn")
            inner = _short(env, "%1", "%2")
            head = self.alt(
                lambda: self.pick(["tool/put", "tool/note", "+"]),
                lambda: self.fn2(inner, d),
            )
            if self.coin():
                return f"#({head} %1 %2)"
            return f"#({head} %2 {self.int_expr(inner, d)})"

        def in_map() -> str:
            self.routes.append("fn-in-map")
            return f"(:g {self.fmap_expr(env, d)})"

        return self.alt(
            lambda: self.pick(["tool/put", "tool/note"]),
            lambda: self.pick(["+", "max", "min"]),
            lambda: self.pick(names) if names else self.bare(env, "put"),
            lam,
            lam,
            short,
            in_map,
            lambda: f"(fnil {self.fn2(env, d)} {self.small()})",
        )

    def fn3(self, env: Env, depth: int) -> str:
        """A function of three ints (``map`` over three collections)."""

        def lam() -> str:
            a, b, c = self.fresh("a"), self.fresh("b"), self.fresh("c")
            inner = ((a, INT), (b, INT), (c, INT), *env)
            return f"(fn [{a} {b} {c}] {self.int_expr(inner, depth)})"

        return self.alt(lambda: self.pick(["tool/note", "+", "max", self.bare(env, "note")]), lam)

    def pred(self, env: Env, depth: int) -> str:
        """A predicate of one int. Functions giving ints are predicates too (ints are truthy)."""
        names = self.vars_of(env, PRED)
        if depth <= 0:
            return self.alt(
                lambda: "tool/flag",
                lambda: self.pick(["odd?", "even?"]),
                lambda: self.pick(names) if names else "tool/flag",
                lambda: self.bare(env, "flag"),
            )
        d = depth - 1

        def lam() -> str:
            x = self.fresh("x")
            return f"(fn [{x}] {self.bool_expr(((x, INT), *env), d)})"

        def short() -> str:
            if _in_short(env):
                return lam()
            self.routes.append("nested-fn-and-short-fn")
            inner = _short(env, "%")
            return self.alt(
                lambda: f"#(tool/flag ({self.fn1(inner, d)} %))",
                lambda: f"#(> % {self.int_expr(inner, d)})",
                lambda: f"#({self.pred(inner, d)} %)",
            )

        def in_map() -> str:
            self.routes.append("fn-in-map")
            return f"(:p {self.fmap_expr(env, d)})"

        return self.alt(
            lambda: "tool/flag",
            lambda: self.pick(names) if names else self.pick(["odd?", "pos?"]),
            lam,
            short,
            lambda: self.fn1(env, d),
            in_map,
            lambda: f"(fnil tool/flag {self.small()})",
            lambda: self.pick(["odd?", "even?", "tool/flag"]),
        )

    def comparator(self, env: Env, depth: int) -> str:
        """A comparator for ``sort``/``sort-by``: a number orders by its sign, anything else by
        truthiness (then the swapped pair is asked too)."""
        d = max(depth - 1, 0)

        def by_key() -> str:
            a, b = self.fresh("a"), self.fresh("b")
            f = self.fn1(((a, INT), (b, INT), *env), d)
            return f"(fn [{a} {b}] (< ({f} {a}) ({f} {b})))"

        def short() -> str:
            if _in_short(env):
                return "tool/put"
            self.routes.append("nested-fn-and-short-fn")
            return f"#(> ({self.fn1(_short(env, '%1', '%2'), d)} %1) %2)"

        def truthy() -> str:
            a, b = self.fresh("a"), self.fresh("b")
            return f"(fn [{a} {b}] ({self.pred(((a, INT), (b, INT), *env), d)} {a}))"

        return self.alt(
            lambda: self.fn2(env, depth),
            lambda: self.pick(["<", ">", "compare", ":desc"]),
            by_key,
            short,
            truthy,
        )

    def thunk(self, env: Env, depth: int) -> str:
        """A function of no arguments giving an int."""
        names = self.vars_of(env, THUNK)

        def short() -> str:
            if _in_short(env):
                return "tool/probe"
            self.routes.append("nested-fn-and-short-fn")
            body = self.int_expr(_short(env), depth - 1)
            if body.startswith("("):  # a call, or one form returned as the value
                return "#" + self.pick([body, f"({body})"])
            return f"#(do {body})"

        leaves = (
            lambda: "tool/probe",
            lambda: self.pick(["tool/note", "tool/fetch", "tool/put", self.bare(env, "probe")]),
            lambda: self.pick(names) if names else "tool/probe",
        )
        if depth <= 0:
            return self.alt(*leaves)
        return self.alt(
            *leaves,
            short,
            lambda: f"(fn [] {self.int_expr(env, depth - 1)})",
            lambda: (
                f"#(tool/fetch {self.int_expr(_short(env), depth - 1)})"
                if not _in_short(env)
                else "tool/probe"
            ),
            lambda: f"(fn [] ({self.fn1(env, depth - 1)} {self.int_expr(env, depth - 1)}))",
        )

    def fmap_expr(self, env: Env, depth: int) -> str:
        """A map holding functions under :f (one int), :g (two ints) and :p (a predicate)."""
        names = self.vars_of(env, FMAP)
        if names and self.coin():
            return self.pick(names)
        d = max(depth - 1, 0)
        return f"{{:f {self.fn1(env, d)} :g {self.fn2(env, d)} :p {self.pred(env, d)}}}"

    def fvec_expr(self, env: Env, depth: int) -> str:
        """A vector of two functions of one int."""
        names = self.vars_of(env, FVEC)
        if names and self.coin():
            return self.pick(names)
        d = max(depth - 1, 0)
        return f"[{self.fn1(env, d)} {self.fn1(env, d)}]"

    def expr_of(self, shape: str, env: Env, depth: int) -> str:
        build: dict[str, Callable[[Env, int], str]] = {
            INT: self.int_expr,
            VEC: self.vec_expr,
            BOOL: self.bool_expr,
            FN1: self.fn1,
            FN2: self.fn2,
            PRED: self.pred,
            THUNK: self.thunk,
            FMAP: self.fmap_expr,
            FVEC: self.fvec_expr,
        }
        return build[shape](env, depth)

    # -- statements ------------------------------------------------------------------------

    def stmt(self, env: Env, depth: int) -> str:
        """A form run for its effects (a ``doseq`` body, a top-level form)."""
        if depth <= 0:
            return self.tool_call(env, 0)
        d = depth - 1
        return self.alt(
            lambda: self.tool_call(env, depth),
            lambda: self.doseq(env, depth),
            lambda: f"(when {self.bool_expr(env, d)} {self.stmt(env, d)})",
            lambda: f"(if {self.bool_expr(env, d)} {self.stmt(env, d)} {self.stmt(env, d)})",
            lambda: self.vec_expr(env, depth),
            lambda: self.bool_expr(env, depth),
            lambda: f"(do {self.stmt(env, d)} {self.stmt(env, d)})",
            lambda: (
                f"({self.pick(['and', 'or'])} {self.bool_expr(env, d)} {self.int_expr(env, d)})"
            ),
            lambda: self.int_expr(env, depth),
        )

    def doseq(self, env: Env, depth: int) -> str:
        d = depth - 1
        a = self.fresh("e")
        if self.choice(5) < 2:
            self.routes.append("doseq-nested")
            b = self.fresh("e")
            outer = self.vec_expr(env, d)
            inner_coll = self.vec_expr(((a, INT), *env), d)
            body = self.stmt(((a, INT), (b, INT), *env), d)
            if self.coin():
                return f"(doseq [{a} {outer} {b} {inner_coll}] {body})"
            return f"(doseq [{a} {outer}] (doseq [{b} {inner_coll}] {body}))"
        self.routes.append("doseq")
        return f"(doseq [{a} {self.vec_expr(env, d)}] {self.stmt(((a, INT), *env), d)})"

    # -- definitions -----------------------------------------------------------------------

    def definition(self, depth: int) -> str:
        """A top-level ``def``/``defn``; its name is visible to the forms after it."""
        env: Env = ()

        def defn1() -> tuple[str, str, str]:
            name, x = self.fresh("g"), self.fresh("x")
            return name, FN1, f"(defn {name} [{x}] {self.int_expr(((x, INT),), depth)})"

        def defn2() -> tuple[str, str, str]:
            name, a, b = self.fresh("h"), self.fresh("a"), self.fresh("b")
            body = self.int_expr(((a, INT), (b, INT)), depth)
            return name, FN2, f"(defn {name} [{a} {b}] {body})"

        def defp() -> tuple[str, str, str]:
            name, x = self.fresh("p"), self.fresh("x")
            return name, PRED, f"(defn {name} [{x}] {self.bool_expr(((x, INT),), depth)})"

        def def_fn() -> tuple[str, str, str]:
            self.routes.append("def-tool-value")
            name = self.fresh("g")
            return name, FN1, f"(def {name} {self.fn1(env, depth)})"

        def def_map() -> tuple[str, str, str]:
            self.routes.append("fn-in-map")
            name = self.fresh("m")
            return name, FMAP, f"(def {name} {self.fmap_expr(env, depth + 1)})"

        def def_vec() -> tuple[str, str, str]:
            self.routes.append("fn-in-vector")
            name = self.fresh("fs")
            return name, FVEC, f"(def {name} {self.fvec_expr(env, depth + 1)})"

        def def_int() -> tuple[str, str, str]:
            name = self.fresh("n")
            return name, INT, f"(def {name} {self.int_expr(env, depth)})"

        def def_coll() -> tuple[str, str, str]:
            name = self.fresh("v")
            return name, VEC, f"(def {name} {self.vec_expr(env, depth)})"

        def defn0() -> tuple[str, str, str]:
            name = self.fresh("t")
            return name, THUNK, f"(defn {name} [] {self.int_expr(env, depth)})"

        name, shape, text = self.alt(
            defn1, defn2, defp, def_fn, def_map, def_vec, def_int, def_coll, defn0
        )
        self.globals[name] = shape
        return text

    # -- routes ----------------------------------------------------------------------------

    def tool_fn1(self, env: Env, depth: int) -> str:
        """A function of one int that surely reaches a tool when called."""

        def lam_call() -> str:
            x = self.fresh("x")
            return f"(fn [{x}] {self.tool_call(((x, INT), *env), depth)})"

        def lam_fetch() -> str:
            x = self.fresh("x")
            return f"(fn [{x}] (tool/fetch (+ {x} {self.int_expr(((x, INT), *env), depth)})))"

        def short() -> str:
            if _in_short(env):
                return "tool/fetch"
            return self.alt(
                lambda: "#(tool/fetch %)",
                lambda: "#(tool/put % %)",
                lambda: f"#(tool/note {self.int_expr(_short(env, '%'), depth)} %)",
            )

        return self.alt(
            lambda: self.pick(["tool/fetch", "tool/note", "tool/put"]),
            lam_call,
            lam_fetch,
            short,
            lambda: self.bare(env, "fetch"),
            lambda: self.fn1(env, depth),
        )

    def tool_pred(self, env: Env, depth: int) -> str:
        """A predicate that surely reaches a tool when called."""
        return self.alt(
            lambda: "tool/flag",
            lambda: "#(tool/flag %)",
            lambda: self.bare(env, "flag"),
            lambda: f"(fn [x] (tool/flag (+ x {self.small()})))",
            lambda: self.tool_fn1(env, depth),
            lambda: self.pred(env, depth),
        )

    def tool_fn2(self, env: Env, depth: int) -> str:
        """A function of two ints that surely reaches a tool when called."""
        return self.alt(
            lambda: "tool/put",
            lambda: "tool/note",
            lambda: "#(tool/put %1 %2)",
            lambda: "(fn [a b] (tool/put {:a a :b b}))",
            lambda: self.bare(env, "put"),
            lambda: self.fn2(env, depth),
        )

    def route_forms(self, route: str, depth: int) -> list[str]:
        """The forms an example built around ``route`` starts with."""
        self.routes.append(route)
        env: Env = ()
        d = depth
        f1 = lambda: self.tool_fn1(env, d)  # noqa: E731
        f2 = lambda: self.tool_fn2(env, d)  # noqa: E731
        p = lambda: self.tool_pred(env, d)  # noqa: E731
        v = lambda: self.vec_expr(env, d)  # noqa: E731
        i = lambda: self.int_expr(env, d)  # noqa: E731
        b = lambda: self.bool_expr(env, d)  # noqa: E731
        lit = self.literal
        r = route

        if r == "call-literal-args":
            return [
                self.alt(
                    lambda: f"(tool/fetch {lit(maps=False)})",
                    lambda: f"(tool/put {lit()} {lit()})",
                    lambda: (
                        "(tool/note" + "".join(" " + lit() for _ in range(self.choice(5))) + ")"
                    ),
                    lambda: f"(tool/put {{:a {lit()} :b {lit()}}})",
                    lambda: f"(tool/note {lit()} [{lit()} {{:id {lit()}}}])",
                )
            ]
        if r == "call-computed-args":
            x = self.fresh("x")
            inner = ((x, INT),)
            return [
                f"(let [{x} {i()}] (tool/put {x} [{x} {lit()}])"
                f" (tool/note {{:k {x} :j {lit()}}} {self.arg(inner, d)}))",
                f"(tool/put {{:a (tool/fetch {i()}) :b [1 {{:c {i()}}}]}})",
            ]
        if r == "call-keyword-pairs":
            return [
                f"(tool/put :a {self.arg(env, d)} :b {self.arg(env, d)})",
                f"(tool/fetch :x {lit()})",
                f"(tool/put :b {lit()})",
            ]
        if r == "map":
            return [f"({self.pick(['map', 'mapv'])} {f1()} {v()})"]
        if r == "mapv-2-colls":
            return [f"({self.pick(['mapv', 'map'])} {f2()} {v()} {v()})"]
        if r == "map-3-colls":
            g = self.alt(
                lambda: "tool/note",
                lambda: "(fn [a b c] (tool/put a (+ b c)))",
                lambda: self.fn3(env, d),
            )
            return [f"(map {g} {v()} {v()} {v()})"]
        if r == "map-indexed":
            return [f"(map-indexed {f2()} {v()})"]
        if r in ("filter", "remove", "find", "some", "every?", "not-any?"):
            return [f"({r} {p()} {v()})"]
        if r in ("take-while", "drop-while"):
            return [f"({r} {p()} {v()})"]
        if r == "reduce-2":
            return [f"(reduce {f2()} {v()})"]
        if r == "reduce-3":
            return [f"(reduce {f2()} {i()} {v()})"]
        if r == "sort-comparator":
            cmp = self.alt(
                lambda: "tool/put",
                lambda: "(fn [a b] (tool/flag a))",
                lambda: "#(< (tool/fetch %1) (tool/fetch %2))",
                lambda: "(fn [a b] (- (tool/fetch a) (tool/note b b)))",
                lambda: self.comparator(env, d),
            )
            return [f"(sort {cmp} {v()})"]
        if r == "sort-by":
            key = self.alt(f1, lambda: f"(juxt {f1()} {f1()})")
            return [f"(sort-by {key} {v()})"]
        if r == "sort-by-comparator":
            cmp = self.alt(lambda: "tool/put", lambda: self.comparator(env, d))
            return [f"(sort-by {f1()} {cmp} {v()})"]
        if r in ("group-by", "sum-by", "min-by", "max-by", "distinct-by", "pluck", "avg-by"):
            return [f"({r} {f1()} {v()})"]
        if r == "update":
            return [
                self.alt(
                    lambda: f"(update {{:a {i()}}} :a {f1()})",
                    lambda: f"(update [{i()} {i()}] 1 {f1()})",
                    lambda: f"(update {{:a 1}} :a {f2()} {i()})",
                    lambda: f"(update {{}} :a (fnil {f1()} 0))",
                )
            ]
        if r == "update-in":
            return [f"(update-in {{:a {{:b {i()}}}}} [:a :b] {f1()})"]
        if r == "update-vals":
            return [f"(update-vals {{:a {i()} :b {i()} :c 3}} {f1()})"]
        if r == "apply":
            return [
                self.alt(
                    lambda: f"(apply tool/note {v()})",
                    lambda: f"(apply {f2()} [{i()} {i()}])",
                    lambda: f"(apply {f2()} {i()} [{i()}])",
                    lambda: f"(apply {f1()} [{i()}])",
                    lambda: f"(apply {self.bare(env, 'note')} 1 {v()})",
                )
            ]
        if r == "juxt":
            return [f"((juxt {f1()} {f1()} {p()}) {i()})"]
        if r == "fnil":
            return [f"((fnil {f1()} {i()}) {self.alt(lambda: 'nil', i)})"]
        if r == "pmap":
            return [f"(pmap {f1()} {v()})"]
        if r == "pcalls":
            th = lambda: self.alt(  # noqa: E731
                lambda: "tool/probe",
                lambda: "#(tool/fetch 1)",
                lambda: f"(fn [] (tool/put {i()} 2))",
                lambda: self.thunk(env, d),
            )
            return ["(pcalls" + "".join(" " + th() for _ in range(1 + self.choice(3))) + ")"]
        if r == "all-of/any-of/none-of":
            return [f"(filter ({self.pick(['all-of', 'any-of', 'none-of'])} {p()} {p()}) {v()})"]
        if r == "max-key/min-key":
            which = self.pick(["max-key", "min-key"])
            return [f"({which} {f1()} {i()} {i()})", f"(apply {which} {f1()} {i()} {v()})"]
        if r == "nested-fn-and-short-fn":
            x, y = self.fresh("x"), self.fresh("y")
            si = lambda: self.int_expr(_short(env, "%"), d)  # noqa: E731
            return [
                self.alt(
                    lambda: f"(map #((fn [{y}] (tool/fetch (+ {y} %))) {si()}) {v()})",
                    lambda: f"(map (fn [{x}] (#(tool/put % {x}) {i()})) {v()})",
                    lambda: f"((fn [{x}] ((fn [{y}] (tool/note {x} {y})) {x})) {i()})",
                    lambda: f"(mapv (fn [{x}] (map #(tool/put {x} %) {v()})) {v()})",
                    lambda: f"(#(tool/fetch ((fn [{y}] (inc {y})) %)) {i()})",
                    lambda: f"(map #((fn [{y}] (tool/put {y} %)) (inc %)) {v()})",
                )
            ]
        if r == "fn-in-map":
            m = self.fresh("m")
            return [
                f"(let [{m} {{:f {f1()} :g {f2()}}}]"
                f" (+ ((:f {m}) {i()}) ((get {m} :g) {i()} 1) (({m} :f) 2)))"
            ]
        if r == "fn-in-vector":
            fs = self.fresh("fs")
            fs_text = f"(def {fs} [{f1()} {f1()} {self.fn1(env, d)}])"
            self.globals[fs] = FVEC
            return [
                fs_text,
                f"((nth {fs} {self.small(0, 2)}) {i()})",
                f"((get {fs} (mod {i()} 3)) 1)",
                f"((last {fs}) {i()})",
            ]
        if r == "fns-iterated":
            return [
                self.alt(
                    lambda: f"(map (fn [f] (f {i()})) [{f1()} {f1()}])",
                    lambda: f"(mapv #(% {self.int_expr(_short(env), d)}) [{f1()} inc {f1()}])",
                    lambda: f"(doseq [f [{f1()} {f1()}]] (f {i()}))",
                    lambda: f"(reduce (fn [acc f] (+ acc (f acc))) 0 [{f1()} {f1()}])",
                )
            ]
        if r == "fn-chosen-by-if":
            return [
                f"((if {b()} {f1()} {f1()}) {i()})",
                f"((or (when {b()} {f1()}) {f1()}) 1)",
                f"((cond {b()} {f1()} :else {f1()}) 2)",
            ]
        if r == "closure-factory":
            mk, k, x = self.fresh("mk"), self.fresh("k"), self.fresh("x")
            return [
                f"(defn {mk} [{k}] (fn [{x}] (tool/put {x} {k})))",
                f"(({mk} {i()}) {i()})",
                f"(map ({mk} {i()}) {v()})",
                f"(def c{mk} ({mk} 3))",
                f"(c{mk} {i()})",
            ]
        if r == "let-fn-called-often":
            f = self.fresh("f")
            inner = ((f, FN1),)
            return [
                f"(let [{f} {f1()}] ({f} {i()}) ({f} {self.int_expr(inner, d)})"
                f" (map {f} {v()}) ({f} ({f} 1)))"
            ]
        if r == "defn-several-places":
            g, x = self.fresh("g"), self.fresh("x")
            body = self.alt(lambda: f"(tool/fetch {x})", lambda: self.tool_call(((x, INT),), d))
            self.globals[g] = FN1
            return [
                f"(defn {g} [{x}] {body})",
                f"({g} {i()})",
                f"(when {b()} ({g} 2))",
                f"(map {g} {v()})",
                f"({g} ({g} 1))",
            ]
        if r == "defn-calls-defn":
            g, h, x, y = self.fresh("g"), self.fresh("h"), self.fresh("x"), self.fresh("y")
            self.globals[g] = FN1
            h_text = f"(defn {h} [{y}] (+ ({g} {y}) ({g} 1) (reduce + 0 (map {g} {v()}))))"
            self.globals[h] = FN1
            return [
                f"(defn {g} [{x}] (tool/fetch {x}))",
                h_text,
                f"({h} {i()})",
                f"({g} 3)",
                f"({h} 2)",
            ]
        if r == "recursion":
            rr, n = self.fresh("r"), self.fresh("n")
            call = self.tool_call(((n, INT),), d)
            self.globals[rr] = FN1
            return [
                f"(defn {rr} [{n}] (if (and (pos? {n}) (< {n} 5))"
                f" (+ {call} ({rr} (dec {n}))) {self.small()}))",
                f"({rr} {self.alt(self.small, i)})",
                f"(map {rr} {v()})",
            ]
        if r == "mutual-recursion":
            ev, od, n, m = self.fresh("ev"), self.fresh("od"), self.fresh("n"), self.fresh("n")
            self.globals[ev] = FN1
            self.globals[od] = FN1
            return [
                f"(defn {ev} [{n}] (if (and (pos? {n}) (< {n} 6))"
                f" ({od} (dec {n})) (tool/fetch {n})))",
                f"(defn {od} [{m}] (if (pos? {m})"
                f" (+ (tool/note {m}) ({ev} (dec {m}))) (tool/probe)))",
                f"({ev} {i()})",
                f"({od} {self.small()})",
            ]
        if r == "def-tool-value":
            g = self.fresh("g")
            value = self.alt(lambda: "tool/fetch", lambda: "tool/note", f1)
            self.globals[g] = FN1
            return [f"(def {g} {value})", f"({g} {i()})", f"(map {g} {v()})"]
        if r == "def-inside-fn":
            s, h = self.fresh("setup"), self.fresh("h")
            body = f"(defn {s} [] (def {h} {f1()}) 0)"
            self.globals[h] = FN1
            run = self.alt(
                lambda: f"({s})",
                lambda: f"({s})",
                lambda: f"(when {b()} ({s}))",
                lambda: f"(pmap (fn [_] ({s})) [1 2])",  # a branch's def stays in the branch
            )
            return [body, run, f"({h} {i()})"]
        if r == "redefined-defn":
            g, x, y = self.fresh("g"), self.fresh("x"), self.fresh("y")
            self.globals[g] = FN1
            return [
                f"(defn {g} [{x}] (tool/fetch {x}))",
                f"({g} {i()})",
                f"(def old{g} {g})",
                f"(defn {g} [{y}] (tool/put {y} {self.small()}))",
                f"({g} {i()})",
                f"(old{g} 1)",
            ]
        if r == "doseq":
            e = self.fresh("e")
            return [
                f"(doseq [{e} {v()}] {self.stmt(((e, INT),), d)})",
                f"(doseq [{e} {v()}] (tool/fetch {e}))",
            ]
        if r == "doseq-nested":
            a, c = self.fresh("e"), self.fresh("e")
            return [
                self.alt(
                    lambda: f"(doseq [{a} {v()} {c} {v()}] (tool/put {a} {c}))",
                    lambda: (
                        f"(doseq [{a} {v()}] (doseq [{c} {v()}] (tool/put {a} {c}))"
                        f" (tool/fetch {a}))"
                    ),
                    lambda: f"(doseq [{a} {v()} {c} (range {a})] (tool/note {a} {c}))",
                    lambda: self.doseq(env, d + 1),
                )
            ]
        if r == "loop-recur":
            j = self.fresh("i")
            n = self.alt(self.small, lambda: f"(mod {i()} 6)")
            return [
                f"(loop [{j} 0] (when (< {j} {n}) (tool/fetch {j}) (recur (inc {j}))))",
                self.loop_int(env, d),
            ]
        if r == "fn-recur":
            n = self.fresh("n")
            start = self.alt(self.small, lambda: f"(mod {i()} 5)")
            return [f"((fn [{n}] (when (pos? {n}) (tool/note {n}) (recur (dec {n})))) {start})"]
        if r == "conditions":
            first = self.alt(
                lambda: f"(if {b()} (tool/fetch 1) (tool/put 2))",
                lambda: f"(when {b()} (tool/note 1) (tool/note 2))",
                lambda: f"(cond {b()} (tool/fetch 1) {b()} (tool/put 1) :else (tool/note))",
                lambda: f"(and {b()} (tool/fetch 3) (tool/flag 1) (tool/put 1))",
                lambda: f"(or {b()} (tool/flag 2) (tool/fetch 4))",
                lambda: f"(if-let [z (when {b()} {i()})] (tool/fetch z) (tool/probe))",
                lambda: f"(when-let [z (some tool/flag {v()})] (tool/note z))",
                lambda: f"(when-not {b()} (tool/put 1 2))",
            )
            return [first, self.cond_int(env, d + 1)]
        if r == "range-take-filter":
            return [
                self.alt(
                    lambda: f"(map {f1()} (range {self.small(0, 6)}))",
                    lambda: f"(map {f1()} (take {self.small()} {v()}))",
                    lambda: f"(map {f1()} (filter {self.pick(['odd?', 'even?', p()])} {v()}))",
                    lambda: f"(doseq [e (range {self.alt(self.small, i)})] (tool/fetch e))",
                    lambda: f"(mapv {f1()} (drop {self.small()} {v()}))",
                    lambda: f"(map {f1()} (range {self.small()} {self.small(3, 7)}))",
                )
            ]
        if r == "threading":
            return [
                self.alt(
                    lambda: f"(->> {v()} (filter {p()}) (map {f1()}))",
                    lambda: f"(->> {v()} (map {f1()}) (take {self.small()}) (reduce {f2()} 0))",
                    lambda: (
                        f"(-> {i()} {self.pick(['tool/fetch', '(tool/put 1)', 'inc'])}"
                        " (tool/put 2))"
                    ),
                    lambda: f"(->> (range {self.small()}) (mapv {f1()}))",
                    lambda: f"(-> {i()} #(tool/note % 1) (tool/fetch))",
                )
            ]
        if r == "bare-tool-name":
            return [
                self.alt(
                    lambda: "(fetch 1)",
                    lambda: f"(note {i()} 2)",
                    lambda: f"(map note {v()})",
                    lambda: f"(put {{:a {i()}}})",
                    lambda: f"(filter flag {v()})",
                    lambda: "(probe)",
                    lambda: f"(pcalls probe #(fetch {self.int_expr(_short(env), d)}))",
                    lambda: f"(def {self.fresh('g')} put)",
                )
            ]
        if r == "shadowed-tool-name":
            x = self.fresh("x")

            def by_defn() -> list[str]:
                self.globals["note"] = FN1
                return [
                    "(note 1)",
                    f"(defn note [{x}] (tool/fetch {x}))",
                    f"(note {i()})",
                    f"(map note {v()})",
                ]

            def by_def() -> list[str]:
                self.globals[x] = THUNK
                self.globals["flag"] = PRED
                return [f"(defn {x} [] (flag 1))", f"({x})", "(def flag odd?)", f"({x})"]

            return self.alt(
                lambda: [f"(let [fetch {self.fn1(env, d)}] (fetch {i()}))", "(fetch 2)"],
                lambda: [f"((fn [note] (note {i()})) {f1()})", "(note 3)"],
                by_defn,
                by_def,
            )
        if r == "data-collections":
            src = self.data_vec() or "data/xs"
            return [
                self.alt(
                    lambda: f"(map {f1()} {src})",
                    lambda: f"(doseq [e {src}] (tool/fetch e))",
                    lambda: f"(filter {p()} {src})",
                    lambda: f"(mapv {f1()} (range (count {src})))",
                    lambda: f"(map {f1()} (take data/n {src}))",
                    lambda: f"(when (> (count {src}) 2) (tool/probe))",
                    lambda: "(doseq [e (range data/n)] (tool/note e))",
                )
            ]
        if r == "where-value":
            return [
                f"(filter (where :a = (tool/fetch {i()})) [{{:a 1}} {{:a 4}}])",
                "(filter (all-of (where :a) #(tool/flag (:a %))) [{:a 1} {:a 3} {}])",
            ]
        if r in ("earlier-turn-defs", "star-history"):
            return []  # built by ``programs`` from the earlier turns
        raise AssertionError(f"no forms for route {route!r}")


#: The data a Session (or a check) is given: None, or inputs with lists of known lengths.
DATA_CHOICES: tuple[dict[str, Any] | None, ...] = (
    None,
    {"xs": [1, 2, 3], "ys": [], "n": 2, "m": {"ks": [4, 5]}},
    {"xs": [], "ys": [7], "n": 0, "m": {"ks": []}},
    {"xs": [5, 0, 3, 2], "ys": [1, 1], "n": 3, "m": {"ks": [1]}},
)


@st.composite
def programs(
    draw: Any, route: str | None = None, form: str | None = None, depth: int = 3
) -> Example:
    """An :class:`Example`: a program built around one route (drawn unless given), with up to
    four random forms around it and, in the Session form, up to two earlier turns (definitions,
    then a value that ``*1``/``*2`` hold). ``depth`` bounds the nesting of each form."""
    if route is None:
        route = draw(st.sampled_from(ROUTES))
    multi_turn = route in ("earlier-turn-defs", "star-history")
    if form is None:
        form = "session" if multi_turn else draw(st.sampled_from(("session", "check")))
    data = draw(st.sampled_from(DATA_CHOICES))
    if route == "data-collections" and data is None:
        data = DATA_CHOICES[1]
    n_turns = draw(st.integers(1 if multi_turn else 0, 2)) if form == "session" else 0
    n_forms = draw(st.integers(0, 4))
    src = _Choices(_expand(draw(_DECISIONS)))
    counter = [0]
    earlier: list[str] = []
    globals_: dict[str, str] = {}
    history: list[str] = []  # shapes of the earlier turns' results, oldest first
    routes: list[str] = []
    for _ in range(n_turns):
        gen = _Gen(src, globals_, data, counter)
        forms = [gen.definition(depth - 1) for _ in range(1 + gen.choice(3))]
        if gen.choice(5) == 4:
            x = gen.fresh("x")
            forms.append(f"(defn note [{x}] (tool/fetch {x}))")
            gen.globals["note"] = FN1
            gen.routes.append("shadowed-tool-name")
        last = FN1 if route == "star-history" else (FN1, INT, FMAP)[gen.choice(3)]
        forms.append(gen.expr_of(last, (), depth - 1))
        history.append(last)
        earlier.append("\n".join(forms))
        globals_ = gen.globals
        routes += gen.routes
    if earlier:
        routes.append("earlier-turn-defs")
    gen = _Gen(src, globals_, data, counter)
    env: Env = tuple((f"*{k}", shape) for k, shape in enumerate(reversed(history), 1))
    forms = []
    if gen.choice(3) == 2:
        forms.append(gen.definition(depth))
    forms += gen.route_forms(route, depth)
    if multi_turn or (env and gen.coin()):
        forms += _use_earlier(gen, env, depth)
    for _ in range(n_forms):
        forms.append(gen.definition(depth) if gen.choice(4) == 3 else gen.stmt(env, depth))
    routes += gen.routes
    return Example(
        source="\n".join(forms),
        earlier=tuple(earlier),
        data=data,
        form=form,
        routes=tuple(dict.fromkeys(routes)),
    )


def _use_earlier(gen: _Gen, env: Env, depth: int) -> list[str]:
    """Forms using what the earlier turns left: each of their definitions, and ``*1``/``*2``
    when they hold functions."""
    out: list[str] = []
    d = depth - 1
    for name, shape in list(gen.globals.items()):
        if shape == FN1:
            out.append(f"({name} {gen.int_expr(env, d)})")
        elif shape == FN2:
            out.append(f"(map {name} {gen.vec_expr(env, d)} [1 2])")
        elif shape == PRED:
            out.append(f"(filter {name} {gen.vec_expr(env, d)})")
        elif shape == THUNK:
            out.append(f"(pcalls {name} {name})")
        elif shape == FMAP:
            out.append(f"((:f {name}) {gen.int_expr(env, d)})")
        elif shape == FVEC:
            out.append(f"(map #(% 1) {name})")
    for star, shape in env:
        if shape == FN1:
            gen.routes.append("star-history")
            out.append(
                gen.alt(
                    lambda s=star: f"({s} {gen.int_expr(env, d)})",
                    lambda s=star: f"(map {s} {gen.vec_expr(env, d)})",
                )
            )
        elif shape == FMAP:
            gen.routes.append("star-history")
            out.append(f"((:g {star}) 1 {gen.int_expr(env, d)})")
    return out
