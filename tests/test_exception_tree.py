"""Every exception class ptc defines derives from ``ptc.PtcError`` (one ``except`` catches
whatever ptc raises), besides the built-in class it also is (``ValueError``, ``TimeoutError``,
...). Private control-flow exceptions (a leading ``_``) never leave the package."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import ptc
from ptc.errors import PtcError


def ptc_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(ptc.__path__, "ptc."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseException)
                and obj.__module__.startswith("ptc")
                and not name.startswith("_")
            ):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


def test_every_ptc_exception_is_a_ptc_error() -> None:
    found = ptc_exceptions()
    assert len(found) > 40  # the walk saw the package
    outside = sorted(name for name, cls in found.items() if not issubclass(cls, PtcError))
    assert outside == []


def test_they_keep_the_builtin_class_callers_catch() -> None:
    from ptc.checkpoint import RunLockedError
    from ptc.llm import LLMError, LLMTimeoutError, ScriptExhausted, TransientLLMError

    assert issubclass(ptc.SubAgentError, RuntimeError)
    assert issubclass(RunLockedError, RuntimeError)
    assert issubclass(LLMTimeoutError, TransientLLMError) and issubclass(LLMError, PtcError)
    assert issubclass(ScriptExhausted, AssertionError)
