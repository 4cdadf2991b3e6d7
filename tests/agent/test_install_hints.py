"""The hints that say how to install an optional SDK name both ways in (issue 30, item 5; issue
35): the package index first (a wheel), and a clone of the repository (the contributor's path,
and the only one until a release is tagged); each names an extra the project has."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import ptc
import pytest

ROOT = Path(__file__).parent.parent.parent
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
    "optional-dependencies"
]


def hint(package: str, extra: str) -> str:
    return (
        f"the '{package}' package is needed for this: pip install 'ptc-runtime[{extra}]' (from a"
        " clone of its repository, at its root: pip install"
        f" '.[{extra}]')"
    )


MESSAGES = [{"role": "user", "content": "x"}]


@pytest.mark.parametrize(
    ("make", "package"),
    [
        (lambda: ptc.llm.openai("m", base_url="http://127.0.0.1:9/v1"), "openai"),
        (lambda: ptc.llm.anthropic("m", base_url="http://127.0.0.1:9"), "anthropic"),
        (lambda: ptc.llm.litellm("openai/m"), "litellm"),
    ],
    ids=["openai", "anthropic", "litellm"],
)
def test_an_adapter_without_its_sdk_says_how_to_install_it_from_pypi_and_from_a_clone(
    monkeypatch: pytest.MonkeyPatch, make: object, package: str
) -> None:
    monkeypatch.setitem(sys.modules, package, None)  # as if it were not installed
    llm = make()  # type: ignore[operator]
    with pytest.raises(ImportError) as caught:
        llm(MESSAGES)
    assert str(caught.value) == hint(package, package)
    assert package in EXTRAS


def test_telemetry_without_opentelemetry_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.trace", None)
    agent = ptc.SubAgent("p", llm=ptc.llm.ScriptedLLM(["(return 1)"]), telemetry=True)
    with pytest.raises(ImportError) as caught:
        agent.run()
    assert str(caught.value) == hint("opentelemetry", "otel")
    assert "otel" in EXTRAS


def test_the_postgres_store_without_psycopg_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ptc.history import pgstore

    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(ImportError) as caught:
        pgstore._driver()
    assert str(caught.value) == (
        "the PostgreSQL store needs psycopg 3: pip install 'ptc-runtime[postgres]' (from a"
        " clone of its repository, at its root: pip install '.[postgres]')"
    )
    assert "postgres" in EXTRAS


def places() -> list[Path]:
    return [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "python" / "ptc").rglob("*.py")),
    ]


def test_every_pypi_install_hint_in_the_docs_and_the_code_also_says_how_from_a_clone() -> None:
    found = 0
    for path in places():
        if path.name == "API.md":  # generated from the docstrings checked here
            continue
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"ptc-runtime\[([\w-]+)\]", text):
            found += 1
            extra = m.group(1)
            where = f"{path.relative_to(ROOT)}:{text.count(chr(10), 0, m.start()) + 1}"
            assert extra in EXTRAS, f"{where}: no extra {extra!r} in pyproject.toml"
            near = text[max(0, m.start() - 200) : m.end() + 200]
            assert f"'.[{extra}]'" in near, f"{where}: no install from a clone next to it"
    assert found >= 10  # the scan reads the places it should
