"""`import ptc` then `ptc.<submodule>` works in a fresh interpreter, for every public submodule
(issue 30, item 3: `ptc.llm.openai(...)` raised AttributeError unless something else had
imported `ptc.llm` first), and `import ptc` still imports none of them, nor an optional SDK."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import ptc
import pytest

PUBLIC = sorted(m.name for m in pkgutil.iter_modules(ptc.__path__) if not m.name.startswith("_"))


def fresh(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


def test_the_package_has_the_submodules_this_test_expects() -> None:
    # a new module is public by its name: it must then be reachable as ptc.<name> too
    assert PUBLIC == [
        "agent",
        "approvals",
        "checking",
        "checkpoint",
        "cli",
        "compression",
        "demo",
        "eager",
        "errors",
        "history",
        "integrations",
        "limits",
        "llm",
        "observe",
        "planning",
        "prompts",
        "reference",
        "repl",
        "session",
        "step",
        "tools",
        "trace",
        "turn",
    ]


@pytest.mark.parametrize("name", PUBLIC)
def test_each_public_submodule_is_an_attribute_of_ptc_in_a_fresh_interpreter(name: str) -> None:
    out = fresh(
        f"import sys; import ptc; was = 'ptc.{name}' in sys.modules; m = ptc.{name}; "
        f"print(was, m.__name__, m is sys.modules['ptc.{name}'], '{name}' in dir(ptc))"
    )
    assert out.returncode == 0, out.stderr
    # "errors" is the one submodule `import ptc` loads itself (the error classes)
    assert out.stdout == f"{name == 'errors'} ptc.{name} True True\n"


def test_the_guides_first_call_works_in_a_fresh_interpreter() -> None:
    out = fresh(
        "import ptc; llm = ptc.llm.openai('m', base_url='http://127.0.0.1:9/v1'); "
        "print(type(llm).__name__, llm.model)"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "OpenAIChat m\n"


def test_import_ptc_imports_no_submodule_of_the_agent_layer_nor_an_optional_sdk() -> None:
    heavy = [
        "ptc.llm",
        "ptc.checkpoint",
        "ptc.integrations",
        "ptc.trace",
        "ptc.agent",
        "openai",
        "anthropic",
        "litellm",
        "pydantic",
        "mcp",
        "httpx",
    ]
    out = fresh(
        "import sys; before = set(sys.modules); import ptc; "
        f"print(sorted(m for m in {heavy!r} if m in sys.modules and m not in before))"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "[]\n"


def test_a_name_that_is_neither_a_submodule_nor_exported_is_an_attribute_error() -> None:
    out = fresh(
        "import ptc\n"
        "for name in ('nope', 'os', '_aio', '__main__'):\n"
        "    try:\n"
        "        getattr(ptc, name)\n"
        "    except AttributeError as e:\n"
        "        print(e)\n"
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "module 'ptc' has no attribute 'nope'",
        "module 'ptc' has no attribute 'os'",
        "module 'ptc' has no attribute '_aio'",
        "module 'ptc' has no attribute '__main__'",
    ]
