"""Issue 33 §1: printing a large value within an exact token budget.

Run: python -m pytest benches/test_bench_budget.py --benchmark-enable --benchmark-only
(As plain tests, with benchmarks disabled, each body runs once and its result is checked.)

ptc's row previews a run's result (a core value of 1,000,000 records) at 500 o200k tokens. The
plain-CPython row does what a careful host without ptc would: JSON-encode a prefix of the records
and keep the widest one whose exact count is within the budget, found by doubling then bisection
(counted with the same tokenizer, so the rows differ only in how the text is made).
"""

from __future__ import annotations

import json
from typing import Any

import ptc
import pytest
from ptc import _core

N, BUDGET = 1_000_000, 500


@pytest.fixture(scope="module")
def million() -> ptc.Result:
    session = ptc.Session(limits=ptc.Limits(max_memory=2 << 30, timeout_ms=60_000))
    result = session.run(
        f'(mapv (fn [i] {{:id i :name (str "user " i) :tags [:a :b]}}) (range {N}))'
    )
    assert result.error is None
    return result


@pytest.mark.benchmark(group="1M records at 500 tokens")
def test_preview_1m_records_at_500_tokens_ptc(benchmark: Any, million: ptc.Result) -> None:
    text = benchmark(lambda: million.preview(None, None, max_tokens=BUDGET, root="*1"))
    assert _core.count_tokens(text, "o200k_base") <= BUDGET
    assert text.startswith('[{:id 0, :name "user 0", :tags [:a :b]} ')


@pytest.mark.benchmark(group="1M records at 500 tokens")
def test_preview_1m_records_at_500_tokens_cpython(benchmark: Any) -> None:
    records = [{"id": i, "name": f"user {i}", "tags": ["a", "b"]} for i in range(N)]

    def text_of(k: int) -> str:
        return "[" + ", ".join(json.dumps(r) for r in records[:k]) + "]"

    def fits(k: int) -> bool:
        return _core.count_tokens(text_of(k), "o200k_base") <= BUDGET

    def fit() -> str:
        # the widest prefix of whole records within the budget: doubling, then bisection
        lo, hi = 0, 1
        while hi <= N and fits(hi):
            lo, hi = hi, hi * 2
        hi = min(hi, N + 1)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        return text_of(lo)

    text = benchmark(fit)
    assert _core.count_tokens(text, "o200k_base") <= BUDGET
