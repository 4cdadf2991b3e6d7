"""The system prompt must only teach what the core implements."""

from __future__ import annotations

import re

import ptc
from ptc.prompts import system_prompt


def test_every_function_named_in_the_prompt_exists() -> None:
    """The prompt's "Useful functions" list and the builtins table cannot drift apart."""
    text = system_prompt()  # the list is filled in from the core's table
    match = re.search(r"Useful functions: `([^`]+)`", text)
    assert match, "the system prompt lists its useful functions"
    names = match.group(1).split()
    known = set(ptc._core.builtin_names()) | set(ptc._core.special_forms())
    missing = [n for n in names if n not in known]
    assert not missing, f"the prompt names functions the core does not define: {missing}"
    for name in names:
        assert ptc.run(f"{name}").error is None or name in ptc._core.special_forms()
