"""A run as one self-contained HTML page (``step.to_html()``, ``ptc trace step.json --html``).

Per turn: the program, what it printed, its tool calls, its result or error, and the messages
the LLM was sent for it — as the run's compression strategy rendered them next to the full
history — plus a chart of input tokens per LLM call with and without compression. No network
fetches: styles, data and the small chart script are inline.

A step file is untrusted input (a shared bug report, a checkpoint row), so the page holds:

- Every field as text: escaped wherever it lands (element text, attribute, title), whatever
  its type. A Content-Security-Policy allows only the page's own style and chart script (by
  their hashes): no other script, inline handler, style, image, frame, form or fetch.
- A bounded size, whatever the step holds: one field shows at most :data:`FIELD_CHARS`
  characters, then a note of how many were left out; a message already shown for an earlier
  call is named, not rendered again (the full history of call *n* repeats calls 1..n-1); the
  page shows at most :data:`MAX_TURNS` turns and :data:`PAGE_CHARS` characters of text, and
  names the turns it leaves out (``ptc trace FILE`` prints them all).
- A bounded time: deriving each call's compressed messages reads every earlier turn, so a page
  stops at :data:`DERIVE_WORK` items of history read (turns, tool calls, prints, definitions,
  100 characters of a failed turn); the full history is derived once for all calls. Token
  counts are exact (``o200k_base``) except for a message longer than
  :data:`TOKEN_CHARS` characters or past :data:`TOKEN_BUDGET` characters counted on one page,
  which is estimated from its first characters and shown with ``≈`` (the tokenizer is
  superlinear on long runs without spaces: 17 s for a 20 MB reply).

Why one module over 600 lines: the page's bounds (characters, turns, derivation work, exact
token counts) are one budget charged along one walk of the turns, and ``ptc trace``'s text
(:func:`to_text`) is drawn from the same line helpers as the page.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ptc.compression import ChatMessage, FullHistory, SingleUserCoalesced

if TYPE_CHECKING:
    from ptc.compression import Compression, CompressionStats, ToolSpec
    from ptc.turn import SuspendedTurn, Turn, TurnError

#: Token counts in the chart use this encoding (exact, offline).
ENCODING = "o200k_base"
#: Characters of one field (a program, a reply, a message, ...) the page shows.
FIELD_CHARS = 20_000
#: Characters of text one page shows (escaped, all fields and the turns' frames together).
PAGE_CHARS = 4_000_000
#: Turns one page shows.
MAX_TURNS = 1_000
#: Items of history (turns, tool calls, prints, definitions; 100 characters of a failed turn)
#: read to derive the compressed messages of the calls one page shows: each call's derivation
#: reads every earlier turn, so this bounds the page's time where a step has many large turns.
DERIVE_WORK = 20_000_000
#: A message longer than this is token-counted on its first this many characters, scaled up.
TOKEN_CHARS = 65_536
#: Characters counted exactly per page; past them counts are estimated from what was counted.
TOKEN_BUDGET = 4_000_000
#: Characters of a failed run's error message the page's header shows (the Error block below
#: the chart shows up to FIELD_CHARS of it).
HEADER_CHARS = 300

#: What a turn's frame (headings, labels, the details element) is charged against PAGE_CHARS.
_FRAME_CHARS = 600

Pair = tuple[list[ChatMessage], list[ChatMessage]]


class _Context(Protocol):
    @property
    def mission(self) -> str: ...
    @property
    def tools(self) -> Sequence[ToolSpec]: ...
    def strategy_for_call(self, strategy: Compression | None = None) -> Compression: ...
    def messages_for(
        self, turns: Sequence[Turn], strategy: Compression | None = None
    ) -> tuple[list[ChatMessage], CompressionStats]: ...


class _Usage(Protocol):
    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...


class StepLike(Protocol):
    """What the page and the text read of a run: a :class:`ptc.step.Step`, whose
    ``to_html`` and ``to_text`` call this module (so this module names none of step.py)."""

    @property
    def ok(self) -> bool: ...
    @property
    def value(self) -> Any: ...
    @property
    def error(self) -> TurnError | None: ...
    @property
    def turns(self) -> Sequence[Turn]: ...
    @property
    def messages(self) -> Sequence[list[ChatMessage]]: ...
    @property
    def usage(self) -> _Usage: ...
    @property
    def context(self) -> _Context: ...
    @property
    def suspended(self) -> SuspendedTurn | None: ...
    @property
    def pending(self) -> list[Any]: ...


class _Tokens:
    """Input-token counts of message texts, each distinct text counted once, the exact work
    bounded by TOKEN_CHARS per text and TOKEN_BUDGET in all."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[int, bool]] = {}
        self._exact_left = TOKEN_BUDGET
        self._tokens = 0  # counted exactly so far, for the ratio of estimates
        self._chars = 0

    def count(self, text: str) -> tuple[int, bool]:
        """``(tokens, estimated)``."""
        known = self._known.get(text)
        if known is not None:
            return known
        from ptc import _core

        size = len(text)
        take = min(size, TOKEN_CHARS, self._exact_left)
        self._exact_left -= take
        if size == 0:
            result = (0, False)
        elif take:
            sample = text[:take]
            try:
                n = _core.count_tokens(sample, ENCODING)
            except UnicodeEncodeError:  # a lone surrogate (JSON may spell one) counts as one "?"
                n = _core.count_tokens(sample.encode("utf-8", "replace").decode(), ENCODING)
            self._tokens, self._chars = self._tokens + n, self._chars + take
            result = (n, False) if take == size else (round(n * size / take), True)
        else:  # the page's exact budget is spent: the ratio seen so far (4 characters a token)
            ratio = self._tokens / self._chars if self._chars else 0.25
            result = (round(size * ratio), True)
        self._known[text] = result
        return result

    def total(self, messages: Sequence[ChatMessage]) -> tuple[int, bool]:
        tokens, estimated = 0, False
        for m in messages:
            n, est = self.count(_text(m.get("content", "")))
            tokens, estimated = tokens + n, estimated or est
        return tokens, estimated


def _pairs(step: StepLike, calls: int) -> Iterator[Pair]:
    """For each of the first ``calls`` LLM calls: its messages with single-user coalescing
    (what a compressed run sends) and with the full history (what an uncompressed run sends)."""
    turns = step.turns
    context = step.context
    # The full history only appends (two messages per turn after the system and first user
    # messages, which do not depend on the turns): rendered once for the last call and sliced
    # for the others, instead of once per call (quadratic in turns).
    last = min(max(calls - 1, 0), len(turns))
    full_all = context.messages_for(turns[:last], FullHistory())[0]
    # a run without compression (or single-shot) sent the full history
    coalesced = not isinstance(context.strategy_for_call(SingleUserCoalesced()), FullHistory)
    for i in range(calls):
        full = full_all[: 2 + 2 * min(i, len(turns))]
        compressed = (
            context.messages_for(turns[:i], SingleUserCoalesced())[0] if coalesced else full
        )
        yield compressed, full


def views(step: StepLike) -> list[Pair]:
    """For each LLM call: the messages rendered with single-user coalescing (what a compressed
    run sends) and with the full history (what an uncompressed run sends)."""
    return list(_pairs(step, len(step.messages)))


def token_series(step: StepLike, pairs: Sequence[Pair] | None = None) -> list[dict[str, int]]:
    """Input tokens per LLM call, compressed and full (message text, ``o200k_base``), and
    ``estimated`` (1 when a count is estimated, see the module docstring); ``pairs`` are the
    step's :func:`views` when already rendered."""
    tokens = _Tokens()
    compressed, full = _Column(tokens), _Column(tokens)
    out = []
    for i, (c, f) in enumerate(pairs if pairs is not None else _pairs(step, len(step.messages))):
        (ct, ce, _), (ft, fe, _) = compressed.add(c), full.add(f)
        out.append({"call": i + 1, "compressed": ct, "full": ft, "estimated": int(ce or fe)})
    return out


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:0;background:#f6f7f9;
color:#1d2330}
header{background:#1d2330;color:#fff;padding:18px 28px}
header h1{margin:0 0 4px;font-size:20px;overflow-wrap:anywhere} header p{margin:0;color:#c9d1e0}
main{padding:20px 28px;max-width:1400px}
.card{background:#fff;border:1px solid #dde2ea;border-radius:8px;margin:0 0 18px;padding:14px 18px}
.turn h2{font-size:16px;margin:0 0 8px} .ok{color:#18794e} .bad{color:#c4320a}
pre{background:#f1f3f7;border-radius:6px;padding:8px 10px;overflow-x:auto;white-space:pre-wrap;
word-break:break-word;margin:4px 0 10px;font:12.5px/1.4 ui-monospace,Menlo,Consolas,monospace}
.label{font-weight:600;font-size:12px;text-transform:uppercase;color:#5b6577;letter-spacing:.04em}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:14px}
.msg{border-left:3px solid #c3cad6;padding-left:8px;margin:6px 0}
.role{font-size:11px;font-weight:700;color:#5b6577}
.cut,.same{color:#7a5b00;font-size:12px;margin:-6px 0 10px}
.same{color:#5b6577;margin:6px 0} .tok{font-weight:400;text-transform:none;letter-spacing:0}
details summary{cursor:pointer;font-weight:600;margin:6px 0}
#chart svg{width:100%;height:auto} .legend span{display:inline-block;margin-right:16px}
.sw{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-1px;margin-right:5px}
.sw.full{background:#9aa6b8} .sw.compressed{background:#2f6fed}
"""

_SCRIPT = """
(function(){
  var data = JSON.parse(document.getElementById('ptc-tokens').textContent);
  var box = document.getElementById('chart');
  if (!data.length) { box.textContent = 'No LLM calls.'; return; }
  var W = 900, H = 260, L = 60, B = 40, T = 16;
  var max = 1; data.forEach(function(d){ max = Math.max(max, d.full, d.compressed); });
  var ns = 'http://www.w3.org/2000/svg';
  var svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', 'input tokens per LLM call');
  function el(name, attrs, text){ var e = document.createElementNS(ns, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]); if (text) e.textContent = text;
    svg.appendChild(e); return e; }
  var slot = (W - L - 10) / data.length, bw = Math.min(28, slot / 3);
  for (var g = 0; g <= 4; g++) { var y = T + (H - T - B) * (1 - g / 4);
    el('line', {x1: L, x2: W - 10, y1: y, y2: y, stroke: '#e3e7ee'});
    el('text', {x: L - 6, y: y + 4, 'text-anchor': 'end', 'font-size': 11, fill: '#5b6577'},
       String(Math.round(max * g / 4))); }
  data.forEach(function(d, i){
    var x = L + slot * i + slot / 2;
    [['full', '#9aa6b8', -bw], ['compressed', '#2f6fed', 0]].forEach(function(s){
      var h = (H - T - B) * d[s[0]] / max;
      el('rect', {x: x + s[2], y: H - B - h, width: bw, height: h, fill: s[1],
                  'class': 'bar ' + s[0], 'data-call': d.call, 'data-tokens': d[s[0]]});
    });
    el('text', {x: x, y: H - B + 16, 'text-anchor': 'middle', 'font-size': 11,
                fill: '#5b6577'}, 'call ' + d.call);
  });
  box.appendChild(svg);
  var full = 0, comp = 0, est = false;
  data.forEach(function(d){ full += d.full; comp += d.compressed; est = est || d.estimated; });
  // a short run can cost more compressed (samples replace short programs): say so plainly
  var pct = full ? Math.round(100 * Math.abs(1 - comp / full)) : 0;
  document.getElementById('saving').textContent = full ? (est ? '\\u2248 ' : '') +
    (comp + ' tokens sent with compression, ' + full + ' with the full history: ' +
     (comp <= full ? pct + '% fewer' : pct + '% more')) : '';
})();
"""


def _hash(source: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode()


# Only the page's own style and script run; everything else a step could smuggle in is refused.
_CSP = (
    f"default-src 'none'; script-src '{_hash(_SCRIPT)}'; style-src '{_hash(_CSS)}'; "
    "base-uri 'none'; form-action 'none'"
)


def _text(value: Any) -> str:
    """Any field as text (a loaded step is validated; one built in Python may hold anything)."""
    if isinstance(value, str):
        return value
    try:
        return str(value)
    except Exception as e:  # e.g. an int too long for str(): say what it is instead
        return f"<{type(value).__name__} that cannot be shown: {e}>"


def _e(value: Any) -> str:
    return html.escape(_text(value), quote=True)


class _Page:
    """The page's text budget: every field goes through :meth:`block`."""

    def __init__(self) -> None:
        self.left = PAGE_CHARS

    def charge(self, chars: int) -> None:
        self.left -= chars

    def block(self, value: Any, cls: str = "") -> str:
        """``<pre>`` with at most FIELD_CHARS characters of ``value`` (fewer when the page's
        budget is nearly spent), then a note of what was left out."""
        text = _text(value)
        keep = min(len(text), FIELD_CHARS, max(self.left, 0))
        shown = html.escape(text[:keep], quote=True)
        self.left -= len(shown) + 40
        attr = f' class="{cls}"' if cls else ""
        out = f"<pre{attr}>{shown}</pre>"
        if keep < len(text):
            out += (
                f'<p class="cut">… {len(text) - keep:,} more characters not shown '
                f"({len(text):,} in all)</p>"
            )
        return out


class _Column:
    """One column of messages across the calls: token totals, and each distinct message
    rendered once. A call's list that starts with the previous call's (the full history) is
    counted and compared for its new messages only, so a column is linear in the turns."""

    def __init__(self, tokens: _Tokens) -> None:
        self._tokens = tokens
        self._prev: list[ChatMessage] = []
        self._prev_total = (0, False)
        self._first: dict[tuple[str, str], int] = {}  # (role, content) -> call it was shown for

    def add(self, messages: list[ChatMessage]) -> tuple[int, bool, int]:
        """``(tokens, estimated, prefix)``: this call's input tokens, and how many of its
        messages are the previous call's list."""
        n = len(self._prev)
        prefix = n if n and n <= len(messages) and messages[:n] == self._prev else 0
        base, base_estimated = self._prev_total if prefix else (0, False)
        new, new_estimated = self._tokens.total(messages[prefix:])
        self._prev, self._prev_total = messages, (base + new, base_estimated or new_estimated)
        return base + new, base_estimated or new_estimated, prefix

    def render(self, call: int, messages: list[ChatMessage], prefix: int, page: _Page) -> str:
        """The messages of ``call`` (after :meth:`add`) not shown before; runs of the others
        named in one line each."""
        out: list[str] = []
        start = 0  # messages[start:j] were all shown before: named in one line

        def close_run(end: int) -> None:
            if end <= start:
                return
            m = messages[start]
            first = self._first.get((_text(m.get("role", "")), _text(m.get("content", ""))), 0)
            which = f"Message {start + 1}" if end == start + 1 else f"Messages {start + 1}–{end}"
            where = f' (from <a href="#call-{first}">call {first}</a>)' if first else ""
            out.append(f'<p class="same">{which}: as shown above{where}</p>')
            page.charge(120)

        for j in range(prefix, len(messages)):
            role = _text(messages[j].get("role", ""))
            content = _text(messages[j].get("content", ""))
            if (role, content) in self._first:
                continue
            close_run(j)
            start = j + 1
            self._first[(role, content)] = call
            out.append(f'<div class="msg"><div class="role">{_e(role)}</div>{page.block(content)}')
            out.append("</div>")
        close_run(len(messages))
        return "".join(out)


def _label(name: str, text: Any, tokens: _Tokens) -> str:
    """A part's label, with what its text costs in tokens (``≈`` when estimated)."""
    n, estimated = tokens.count(_text(text))
    cost = f"{'≈' if estimated else ''}{n:,} token{'' if n == 1 else 's'}"
    return f'<div class="label">{name} <span class="tok">· {cost}</span></div>'


def _turn_html(turn: Any, page: _Page, tools: Sequence[str], tokens: _Tokens) -> list[str]:
    """A turn's parts, each labelled with what its text costs in tokens."""
    ok = turn.success and turn.error is None
    state = "returned" if turn.returned else "ok" if ok else "error"
    parts = [
        f'<section class="card turn" id="turn-{_e(turn.number)}">'
        f'<h2>Turn {_e(turn.number)} <span class="{"ok" if ok else "bad"}">{state}</span></h2>'
    ]
    if turn.program is not None:
        parts.append(_label("Program", turn.program, tokens) + page.block(turn.program))
    else:
        label = _label("Reply (no program)", turn.response, tokens)
        parts.append(label + page.block(turn.response))
    if turn.prints:
        prints = "\n".join(_text(p) for p in turn.prints)
        parts.append(_label("Printed", prints, tokens) + page.block(prints))
    plan = plan_text(turn.program, tools)
    if plan:
        parts.append(f'<div class="label">Plan (before it ran)</div>{page.block(plan)}')
    if turn.tool_calls:
        calls = "\n".join(call_line(c) for c in turn.tool_calls)
        parts.append(_label("Tool calls", calls, tokens) + page.block(calls))
    if turn.error is not None:
        err = f"{_text(turn.error.type)}: {_text(turn.error.message)}"
        if turn.error.hint:
            err += f"\nHint: {_text(turn.error.hint)}"
        parts.append(_label("Error", err, tokens) + page.block(err, "bad"))
    else:
        parts.append(_label("Result", turn.result_text, tokens) + page.block(turn.result_text))
    return parts


def _cut_note(first: int, last: int, why: str) -> str:
    which = f"Turn {first:,} is" if first == last else f"Turns {first:,}–{last:,} are"
    return (
        f'<p class="cut">{which} not shown: {why}. '
        "<code>ptc trace FILE</code> prints every turn.</p>"
    )


def _history_work(turn: Any) -> int:
    """What one turn costs every later call's compressed messages to derive (each derivation
    reads all earlier turns): its items, and for a failed turn, replayed in full, its text
    (a unit per 100 characters)."""
    work = 1 + len(turn.tool_calls) + len(turn.prints) + len(turn.defined)
    if not turn.success:
        err = turn.error
        chars = len(_text(turn.program if turn.program is not None else turn.response))
        if err is not None:
            chars += len(_text(err.message)) + len(_text(err.hint or ""))
        work += chars // 100
    return work


def error_line(error: Any) -> str:
    """A run's or a turn's error in one line: ``error [type]: message`` (the hint apart)."""
    return f"error [{_text(error.type)}]: {_text(error.message)}"


def value_text(step: StepLike) -> str:
    """The value of a run that succeeded, as the core printed it when the run ended (the last
    turn's result: string keys quoted, ``#'x`` for a var), not re-printed from its Python
    form, which has lost those; a step with no such turn (built in Python) falls back to
    :func:`ptc.to_clojure`."""
    last = step.turns[-1] if step.turns else None
    if last is not None and last.success and last.error is None and last.result_text:
        return _text(last.result_text)
    from ptc import to_clojure

    return to_clojure(step.value, 20, 200)[0]


# Control characters other than newline and tab, shown as escapes: text from a step or a
# model must not drive the terminal it is printed to (clear it, retitle it, set the clipboard).
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0)) if chr(c) not in "\n\t"}


def terminal_safe(text: str) -> str:
    """``text`` to print on a terminal: control characters other than newline and tab as
    ``\\xNN`` escapes, a lone surrogate (JSON may spell one) as its ``\\udNNN`` escape."""
    return text.translate(_CONTROLS).encode("utf-8", "backslashreplace").decode("utf-8")


def plan_text(program: str | None, tools: Sequence[str]) -> str:
    """The plan of a turn's program (``ptc.Plan.render``: which tools it can call, from
    where, how often), worked out from its text against the run's tool names; empty when it
    calls none or cannot be read."""
    if not program or not tools:
        return ""
    from ptc.checking import check_with

    try:
        plan = check_with(program, dict.fromkeys(tools), None).plan
    except Exception:  # a page is drawn whatever a stored program holds
        return ""
    if plan is None or not plan.calls:
        return ""
    return plan.render()


def call_line(c: Any) -> str:
    """A tool call of a turn: ``name(args)``, its error, and how a decision settled it."""
    line = f"{_text(c.name)}({_text(c.args_text)})"
    if c.error:
        line += f"  !! {_text(c.error)}"
    decision = getattr(c, "decision", None)
    if decision:
        line += f"  [{_text(decision)}]"
    return line


def pending_lines(step: StepLike) -> list[str]:
    """The calls a pending run waits on: ``id  (tool/name args)`` each."""
    if step.suspended is None:
        return []
    try:
        waiting = step.pending
    except Exception as e:  # a damaged continuation: shown, not raised by the page
        return [f"(the continuation cannot be read: {_text(e)})"]
    return [f"{_text(p.id)}  {_text(p.describe())}" for p in waiting]


def to_text(step: StepLike) -> str:
    """Every turn of ``step`` as text (``ptc trace FILE``): the mission, then per turn its
    program, tool calls, printed lines and result or error, then how the run ended, the
    value as the core printed it or the error's type, message and hint."""
    out = [f"mission: {_text(step.context.mission)}"]
    for t in step.turns:
        out.append(f"\n--- turn {t.number} ({'ok' if t.success else 'FAILED'}) ---")
        out.append(_text(t.program) if t.program is not None else f"(no program) {t.response}")
        for c in t.tool_calls:
            out.append(f";; tool {call_line(c)}")
        for p in t.prints:
            out.append(f";; println: {_text(p)}")
        if t.error is not None:
            out.append(f";; {error_line(t.error)}")
        else:
            out.append(f";; => {_text(t.result_text)}")
        if t.defined:
            out.append(";; defined: " + ", ".join(_text(d) for d in t.defined))
    if step.ok:
        out.append(f"\n=> ok: {value_text(step)}")
    elif step.error is not None:
        out.append(f"\n=> {error_line(step.error)}")
        if step.error.hint:
            out.append(f"   hint: {_text(step.error.hint)}")
    elif step.suspended is not None:
        st = step.suspended
        out.append(f"\n--- turn {st.number} (PENDING: waiting for the host) ---")
        out.append(_text(st.program))
        out.extend(f";; waits on {line}" for line in pending_lines(step))
        out.append("\n=> pending: decide the calls and resume the run")
    else:
        out.append("\n=> not finished (no error yet: the run was saved while it went on)")
    return "\n".join(out)


def to_html(step: StepLike, title: str | None = None) -> str:
    """The page for ``step`` (see the module docstring)."""
    tool_names = [t.name for t in step.context.tools]
    page = _Page()
    tokens = _Tokens()
    compressed_col, full_col = _Column(tokens), _Column(tokens)
    coalesced = not isinstance(step.context.strategy_for_call(SingleUserCoalesced()), FullHistory)
    n_calls = len(step.messages)
    pairs = _pairs(step, n_calls)
    series: list[dict[str, int]] = []
    turns_html: list[str] = []
    cut = ""
    history = 0  # the work of reading turns[:i]
    derive = 0  # the work of deriving the compressed messages of calls 1..i+1
    for i, turn in enumerate(step.turns):
        if coalesced:
            derive += history + (len(step.turns[i - 1].memory) if i else 0)
        why = ""
        if i == MAX_TURNS:
            why = f"a page shows at most {MAX_TURNS:,} turns"
        elif page.left <= 0:
            why = f"a page shows at most {PAGE_CHARS:,} characters of text"
        elif derive > DERIVE_WORK:
            why = (
                "deriving their compressed messages would read more than "
                f"{DERIVE_WORK:,} items of history"
            )
        if why:
            cut = _cut_note(i + 1, len(step.turns), why)
            break
        history += _history_work(turn)
        page.charge(_FRAME_CHARS)
        parts = _turn_html(turn, page, tool_names, tokens)
        if i < n_calls:
            compressed, full = next(pairs)
            c_tok, c_est, c_prefix = compressed_col.add(compressed)
            f_tok, f_est, f_prefix = full_col.add(full)
            series.append(
                {
                    "call": i + 1,
                    "compressed": c_tok,
                    "full": f_tok,
                    "estimated": int(c_est or f_est),
                }
            )
            full_html = full_col.render(i + 1, full, f_prefix, page)
            if coalesced:
                summary = (
                    f"({'≈' if c_est else ''}{c_tok} tokens compressed, "
                    f"{'≈' if f_est else ''}{f_tok} full)"
                )
                compressed_html = compressed_col.render(i + 1, compressed, c_prefix, page)
                body = (
                    '<div class="cols"><div><div class="label">Compressed (single user '
                    f"coalesced)</div>{compressed_html}</div>"
                    f'<div><div class="label">Full history</div>{full_html}</div></div>'
                )
            else:  # what was sent is the full history: one column
                summary = f"({'≈' if f_est else ''}{f_tok} tokens, the full history)"
                body = f'<div class="label">Full history (compression was off)</div>{full_html}'
            parts.append(
                f'<details id="call-{i + 1}"><summary>Messages sent for this turn {summary}'
                f"</summary>{body}</details>"
            )
        parts.append("</section>")
        turns_html.append("".join(parts))
    if not cut:  # the calls after the last turn (a failed LLM request): in the chart only
        for i in range(len(series), n_calls):
            compressed, full = next(pairs)
            (c_tok, c_est, _), (f_tok, f_est, _) = (
                compressed_col.add(compressed),
                full_col.add(full),
            )
            series.append(
                {
                    "call": i + 1,
                    "compressed": c_tok,
                    "full": f_tok,
                    "estimated": int(c_est or f_est),
                }
            )
            if i >= len(step.turns):  # later calls saw the same turns: one is enough
                break
    # JSON inside <script>: no character of it can end the element or open a comment
    data = (
        json.dumps(series).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    )
    status = "ok" if step.ok else "not finished"  # a checkpoint saved while the run went on
    if step.suspended is not None:
        status = "pending: waiting for the host to decide tool calls"
    if step.error is not None:
        status = error_line(step.error)
        if len(status) > HEADER_CHARS:
            status = status[: HEADER_CHARS - 1] + "…"
    mission_lines = _text(step.context.mission).splitlines()
    head = _text(title) if title is not None else mission_lines[0] if mission_lines else ""
    head = head[:120] or "(no mission)"
    usage = step.usage
    if usage.input_tokens or usage.output_tokens:
        reported = (
            f"{_e(usage.input_tokens)} input / {_e(usage.output_tokens)} output tokens reported"
        )
    else:
        reported = "no token usage reported by the LLM"
    summary = ""
    if step.ok:
        summary = f'<div class="label">Value</div>{page.block(value_text(step))}'
    if step.error is not None:
        err = step.error
        text = f"{_text(err.type)}: {_text(err.message)}"
        if err.hint:
            text += f"\nHint: {_text(err.hint)}"
        summary += f'<div class="label">Error</div>{page.block(text, "bad")}'
    if step.suspended is not None:
        st = step.suspended
        summary += (
            f'<div class="label">Pending turn {_e(st.number)}: program</div>'
            f"{page.block(st.program)}"
            '<div class="label">Waiting for the host (approve, reject or answer, then resume)'
            f"</div>{page.block(chr(10).join(pending_lines(step)))}"
        )
    page_html = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        f"<title>ptc trace: {_e(head)}</title><style>{_CSS}</style></head><body>"
        f"<header><h1>{_e(head)}</h1><p>{len(step.turns)} turns · {_e(status)} · {reported}"
        "</p></header><main>"
        '<section class="card"><h2>Input tokens per LLM call</h2>'
        '<div class="legend"><span><i class="sw full"></i>full history</span>'
        '<span><i class="sw compressed"></i>compressed</span></div>'
        f'<div id="chart"></div><p id="saving"></p>{summary}</section>'
        + "".join(turns_html)
        + cut
        + f'</main><script type="application/json" id="ptc-tokens">{data}</script>'
        f"<script>{_SCRIPT}</script></body></html>"
    )
    # a lone surrogate (JSON may spell one) cannot be written as UTF-8: shown as its escape
    return page_html.encode("utf-8", "backslashreplace").decode("utf-8")
