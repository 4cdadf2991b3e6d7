"""A run as one self-contained HTML page (``step.to_html()``, ``ptc trace step.json --html``).

Per turn: the program, what it printed, its tool calls, its result or error, and the messages
the LLM was sent for it — as the run's compression strategy rendered them next to the full
history — plus a chart of input tokens per LLM call with and without compression. No network
fetches: styles, data and the small chart script are inline.
"""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ptc.step import Step

#: Token counts in the chart use this encoding (exact, offline).
ENCODING = "o200k_base"


def _tokens(messages: list[dict[str, Any]]) -> int:
    from ptc import _core

    return sum(_core.count_tokens(str(m.get("content", "")), ENCODING) for m in messages)


def views(step: Step) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """For each LLM call: the messages rendered with single-user coalescing (what a compressed
    run sends) and with the full history (what an uncompressed run sends)."""
    from ptc.compression.full import FullHistory
    from ptc.compression.single_user import SingleUserCoalesced

    out = []
    for i in range(len(step.messages)):
        turns = step.turns[:i]
        compressed, _ = step.context.messages_for(turns, SingleUserCoalesced())
        full, _ = step.context.messages_for(turns, FullHistory())
        out.append((list(compressed), list(full)))
    return out


def token_series(
    step: Step, pairs: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] | None = None
) -> list[dict[str, int]]:
    """Input tokens per LLM call, compressed and full (message text, ``o200k_base``);
    ``pairs`` are the step's :func:`views` when already rendered."""
    return [
        {"call": i + 1, "compressed": _tokens(c), "full": _tokens(f)}
        for i, (c, f) in enumerate(pairs if pairs is not None else views(step))
    ]


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:0;background:#f6f7f9;
color:#1d2330}
header{background:#1d2330;color:#fff;padding:18px 28px}
header h1{margin:0 0 4px;font-size:20px} header p{margin:0;color:#c9d1e0}
main{padding:20px 28px;max-width:1400px}
.card{background:#fff;border:1px solid #dde2ea;border-radius:8px;margin:0 0 18px;padding:14px 18px}
.turn h2{font-size:16px;margin:0 0 8px} .ok{color:#18794e} .bad{color:#c4320a}
pre{background:#f1f3f7;border-radius:6px;padding:8px 10px;overflow-x:auto;white-space:pre-wrap;
word-break:break-word;margin:4px 0 10px;font:12.5px/1.4 ui-monospace,Menlo,Consolas,monospace}
.label{font-weight:600;font-size:12px;text-transform:uppercase;color:#5b6577;letter-spacing:.04em}
.cols{display:grid;grid-template-columns:1fr 1fr;gap:14px}
.msg{border-left:3px solid #c3cad6;padding-left:8px;margin:6px 0}
.role{font-size:11px;font-weight:700;color:#5b6577}
details summary{cursor:pointer;font-weight:600;margin:6px 0}
#chart svg{width:100%;height:auto} .legend span{display:inline-block;margin-right:16px}
.sw{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-1px;margin-right:5px}
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
  var full = 0, comp = 0; data.forEach(function(d){ full += d.full; comp += d.compressed; });
  // a short run can cost more compressed (samples replace short programs): say so plainly
  var pct = full ? Math.round(100 * Math.abs(1 - comp / full)) : 0;
  document.getElementById('saving').textContent = full ?
    (comp + ' tokens sent with compression, ' + full + ' with the full history: ' +
     (comp <= full ? pct + '% fewer' : pct + '% more')) : '';
})();
"""


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _messages(messages: list[dict[str, Any]]) -> str:
    return "".join(
        f'<div class="msg"><div class="role">{_e(m.get("role", ""))}</div>'
        f"<pre>{_e(m.get('content', ''))}</pre></div>"
        for m in messages
    )


def to_html(step: Step, title: str | None = None) -> str:
    """The page for ``step`` (see the module docstring)."""
    pairs = views(step)
    series = token_series(step, pairs)
    status = "ok" if step.ok else f"error: {step.error.type if step.error else ''}"
    head = title or step.context.mission.splitlines()[0][:120]
    turns_html = []
    for i, turn in enumerate(step.turns):
        ok = turn.success and turn.error is None
        parts = [
            f'<section class="card turn" id="turn-{turn.number}">'
            f'<h2>Turn {turn.number} <span class="{"ok" if ok else "bad"}">'
            f"{'returned' if turn.returned else 'ok' if ok else 'error'}</span></h2>"
        ]
        if turn.program is not None:
            parts.append(f'<div class="label">Program</div><pre>{_e(turn.program)}</pre>')
        else:
            parts.append(
                f'<div class="label">Reply (no program)</div><pre>{_e(turn.response)}</pre>'
            )
        if turn.prints:
            parts.append(
                f'<div class="label">Printed</div><pre>{_e(chr(10).join(turn.prints))}</pre>'
            )
        if turn.tool_calls:
            calls = "\n".join(
                f"{c.name}({c.args_text})" + (f"  !! {c.error}" if c.error else "")
                for c in turn.tool_calls
            )
            parts.append(f'<div class="label">Tool calls</div><pre>{_e(calls)}</pre>')
        if turn.error is not None:
            err = f"{turn.error.type}: {turn.error.message}"
            parts.append(f'<div class="label">Error</div><pre class="bad">{_e(err)}</pre>')
        else:
            parts.append(f'<div class="label">Result</div><pre>{_e(turn.result_text)}</pre>')
        if i < len(pairs):
            compressed, full = pairs[i]
            c_tok, f_tok = series[i]["compressed"], series[i]["full"]
            parts.append(
                f"<details><summary>Messages sent for this turn ({c_tok} tokens compressed, "
                f'{f_tok} full)</summary><div class="cols">'
                f'<div><div class="label">Compressed (single user coalesced)</div>'
                f"{_messages(compressed)}</div>"
                f'<div><div class="label">Full history</div>{_messages(full)}</div>'
                "</div></details>"
            )
        parts.append("</section>")
        turns_html.append("".join(parts))
    data = json.dumps(series).replace("</", "<\\/")
    value = ""
    if step.ok:
        from ptc import to_clojure

        shown = to_clojure(step.value, 20, 200)[0]
        value = f"<p>Value: <code>{_e(shown)}</code></p>"
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>ptc trace: {_e(head)}</title><style>{_CSS}</style></head><body>"
        f"<header><h1>{_e(head)}</h1><p>{len(step.turns)} turns · {status} · "
        + (
            f"{step.usage.input_tokens} input / {step.usage.output_tokens} output tokens reported"
            if step.usage.input_tokens or step.usage.output_tokens
            else "no token usage reported by the LLM"
        )
        + "</p></header><main>"
        f'<section class="card"><h2>Input tokens per LLM call</h2>'
        '<div class="legend"><span><i class="sw" style="background:#9aa6b8"></i>full history'
        '</span><span><i class="sw" style="background:#2f6fed"></i>compressed</span></div>'
        f'<div id="chart"></div><p id="saving"></p>{value}</section>'
        + "".join(turns_html)
        + f'</main><script type="application/json" id="ptc-tokens">{data}</script>'
        f"<script>{_SCRIPT}</script></body></html>"
    )
