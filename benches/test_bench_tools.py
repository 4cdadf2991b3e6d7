"""Issue 33 §2: tools found on demand, with the 500 tools of ``benches/tool_catalogue.py``.

Run: python -m pytest benches/test_bench_tools.py --benchmark-enable --benchmark-only -s
(As plain tests, with benchmarks disabled, each body runs once and its result is checked.)

- The first request of an agent with the 500 tools, all message contents counted in exact o200k
  tokens, must be at most 2,500 (every tool's line would take about 18,000).
- For each tool, the rarest word of its description across the catalogue (in the fewest tools'
  names and descriptions, a word and its plural counted as one; not a stopword; the first
  such word on a tie), searched with ``(tools "word")``, must bring that tool back among
  the first 5: recall 500/500.
- One query's cost: ``Session.run('(tools "word")')`` next to the same ranking written as a
  plain-Python loop over an index made beforehand, as the core's is (the Python scorer is also
  checked to rank exactly as the core does, which pins the ranking's definition).
"""

from __future__ import annotations

import bisect
import math
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import ptc
import pytest

sys.path.insert(0, str(Path(__file__).parent))
import tool_catalogue

FIRST_REQUEST_BUDGET = 2_500
TOP = 5
STOPWORDS = frozenset(
    "a an and any are as at be by every for from has have in into is it its of on one or that"
    " the their them this to was with words given".split()
)


@pytest.fixture(scope="module")
def catalogue() -> list[tool_catalogue.CatalogueTool]:
    return tool_catalogue.catalogue()


@pytest.fixture(scope="module")
def session() -> ptc.Session:
    return ptc.Session(tools=tool_catalogue.tools())


def tokens(text: str) -> int:
    return ptc._core.count_tokens(text, "o200k_base")


def first_request(tool_listing_tokens: int | None) -> list[dict[str, str]]:
    llm = ptc.llm.ScriptedLLM(["```clojure\n(return 1)\n```"])
    agent = ptc.SubAgent(
        "Refund the last invoice of customer C-12 and tell them by email.",
        llm=llm,
        tools=tool_catalogue.tools(),
        tool_listing_tokens=tool_listing_tokens,
    )
    agent.run()
    return llm.calls[0]


def test_first_request_with_500_tools() -> None:
    deferred = sum(tokens(m["content"]) for m in first_request(1_500))
    listed = sum(tokens(m["content"]) for m in first_request(None))
    print(f"\nfirst request, 500 tools: {deferred:,} tokens deferred, {listed:,} listed in full")
    assert deferred <= FIRST_REQUEST_BUDGET
    assert listed > 10 * FIRST_REQUEST_BUDGET // 2


# --------------------------------------------------------------------------- recall


def doc_words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def query_words(catalogue: list[tool_catalogue.CatalogueTool]) -> list[str]:
    """Each tool's query: the word of its description that the fewest tools have, in their
    names or descriptions (a word and its plural counted as one, as the search reads them)."""
    df = Counter(
        w for t in catalogue for w in {stem(w) for w in doc_words(f"{t.name} {t.description}")}
    )
    out = []
    for t in catalogue:
        words = [w for w in doc_words(t.description) if w not in STOPWORDS]
        out.append(min(words, key=lambda w: df[stem(w)]))  # min keeps the first on a tie
    return out


def test_recall_of_one_word_queries(
    session: ptc.Session, catalogue: list[tool_catalogue.CatalogueTool]
) -> None:
    queries = query_words(catalogue)
    found = 0
    missed = []
    for t, q in zip(catalogue, queries, strict=True):
        r = session.run(f'(mapv :name (tools "{q}" {TOP}))')
        assert r.error is None, r.error
        if f"tool/{t.name}" in r.value:
            found += 1
        else:
            missed.append((t.name, q, list(r.value)))
    print(f"\nrecall@{TOP} of one-word queries: {found}/{len(catalogue)}")
    assert missed == []


# --------------------------------------------------------------------------- the same in Python


def stem(w: str) -> str:
    n = len(w)
    if n > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    for end in ("sses", "xes", "ches", "shes", "uses"):
        if n > len(end) and w.endswith(end):
            return w[:-2]
    if n > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def words(text: str) -> list[str]:
    # the catalogue's names and descriptions are ASCII without camelCase
    return re.findall(r"[a-z0-9]+", text.lower())


class PyIndex:
    """The core's ranking (rust/catalogue.rs) as plain Python, the index made beforehand."""

    def __init__(self, catalogue: list[tool_catalogue.CatalogueTool]) -> None:
        self.names = [t.name for t in catalogue]
        self.words = [
            (
                sorted({stem(w) for w in words(t.name)}),
                sorted({stem(w) for w in words(t.description)}),
            )
            for t in catalogue
        ]

    @staticmethod
    def kind(ws: list[str], q: str) -> int:
        at = bisect.bisect_left(ws, q)
        if at < len(ws) and ws[at] == q:
            return 2
        if at < len(ws) and ws[at].startswith(q) and len(q) >= 3:
            return 1
        return 0

    def search(self, query: str, limit: int = 10) -> list[str]:
        qs = list(dict.fromkeys(stem(w) for w in words(query.replace("tool/", " "))))[:32]
        if not qs or limit == 0:
            return []
        n = len(self.names)
        best = []
        for name_words, doc in self.words:
            row = []
            for q in qs:
                name_kind, doc_kind = self.kind(name_words, q), self.kind(doc, q)
                row.append(
                    8.0
                    if name_kind == 2
                    else 4.0
                    if doc_kind == 2
                    else 2.0
                    if name_kind == 1
                    else 1.0
                    if doc_kind == 1
                    else 0.0
                )
            best.append(row)
        df = [sum(1 for row in best if row[j] > 0) for j in range(len(qs))]
        idf = [math.sqrt((n + 1.0) / (d + 1.0)) for d in df]
        whole = query.strip().removeprefix("tool/").lower()
        scored = []
        for i, row in enumerate(best):
            s = 0.0
            for j, f in enumerate(idf):
                s += row[j] * f
            if whole and self.names[i].lower() == whole:
                s += 1.0e9
            if s > 0:
                scored.append((-s, self.names[i]))
        scored.sort()
        return [f"tool/{name}" for _, name in scored[:limit]]


def test_the_python_scorer_ranks_as_the_core_does(
    session: ptc.Session, catalogue: list[tool_catalogue.CatalogueTool]
) -> None:
    index = PyIndex(catalogue)
    queries = [*query_words(catalogue)[::10], "cancel invoice", "export csv status", "ship"]
    for q in queries:
        assert session.run(f'(mapv :name (tools "{q}"))').value == index.search(q), q


BENCH_QUERY = "renewal"


@pytest.mark.benchmark(group="one query over 500 tools")
def test_one_query_ptc(benchmark: Any, session: ptc.Session) -> None:
    source = f'(tools "{BENCH_QUERY}")'
    session.run(source)  # the catalogue is made by the first run that reads it
    r = benchmark(session.run, source)
    assert r.value[0]["name"] == "tool/crm-cancel-lead"


@pytest.mark.benchmark(group="one query over 500 tools")
def test_one_query_cpython(benchmark: Any, catalogue: list[tool_catalogue.CatalogueTool]) -> None:
    index = PyIndex(catalogue)
    found = benchmark(index.search, BENCH_QUERY)
    assert found[0] == "tool/crm-cancel-lead"
