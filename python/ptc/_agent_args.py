"""The checks of :class:`ptc.SubAgent`'s arguments, made where they are given (the constructor,
``run(data)``): a wrong value is one ``TypeError``/``ValueError`` that names the argument and
says what to pass, instead of an error in the middle of a run (``'str' object is not
callable`` from an LLM given as a string)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ptc.checkpoint import CheckpointSink
from ptc.limits import LimitsArg
from ptc.llm import LLM, RetryPolicy, from_string


def shown(value: Any) -> str:
    """A wrong value in a message: its type and a short repr."""
    if value is None:
        return "None"
    text = repr(value)
    if len(text) > 80:
        text = f"{text[:60]}... ({len(text)} characters)"
    return f"{type(value).__name__} {text}"


def llm_arg(llm: Any) -> LLM | None:
    """``llm=``: a callable, a ``"provider:model"`` string (made into its adapter), or None."""
    if llm is None or (callable(llm) and not isinstance(llm, type)):
        return llm
    if isinstance(llm, str):
        try:
            return from_string(llm)
        except ValueError as exc:
            raise ValueError(f"SubAgent(llm=...): {exc}") from None
    given = (
        f"the class {llm.__name__}; pass an instance of it" if isinstance(llm, type) else shown(llm)
    )
    raise TypeError(
        "SubAgent(llm=...) takes a callable that answers the chat messages (an adapter such as"
        " ptc.llm.openai('gpt-4.1-mini'), or your own function) or a 'provider:model' string"
        f" such as 'openai:gpt-4.1-mini', got {given}"
    )


def data_arg(data: Any, where: str) -> Mapping[str, Any] | None:
    """The data of a run (``where`` names the call): a mapping of names to values, read by the
    program as ``data/<name>``, or None."""
    if data is None:
        return None
    if not isinstance(data, Mapping):
        hint = ""
        if isinstance(data, str):
            hint = (
                "; a question belongs in the prompt: SubAgent(prompt=...), or write"
                " {{question}} in the prompt and pass {'question': ...}"
            )
        raise TypeError(
            f"{where} takes the run's data as a mapping of names to values (the program reads"
            f" data/<name>), got {shown(data)}{hint}"
        )
    for key in data:
        if not isinstance(key, str):
            raise TypeError(
                f"{where}: data names must be strings (the program reads data/<name>), got the"
                f" key {shown(key)}"
            )
    return data


def tools_arg(tools: Any) -> Any:
    """``tools=``: a list (or other iterable) of tools, a mapping of names to tools, or None;
    a string or a single callable is not a list of tools (a string's characters were taken
    for tools: "tool 'a' is not callable")."""
    if tools is None or isinstance(tools, Mapping):
        return tools
    if isinstance(tools, str | bytes) or not isinstance(tools, Iterable):
        one = " (one tool is a list of one: tools=[fn])" if callable(tools) else ""
        raise TypeError(
            "SubAgent(tools=...) takes a list of tools (callables, Tool(...), (fn, signature)"
            f" tuples, agent.as_tool(...)) or a dict of names to tools, got {shown(tools)}{one}"
        )
    return tools


def max_turns_arg(max_turns: Any) -> int:
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 1:
        raise ValueError(f"max_turns must be a positive int, got {max_turns!r}")
    return max_turns


def limits_arg(limits: LimitsArg) -> LimitsArg:
    """``limits=``: checked by the core now (names, types and ranges), not at the first run."""
    if limits is None:
        return None
    import ptc

    try:
        ptc.Session(limits=limits)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"SubAgent(limits=...): {exc}") from None
    return limits


def retry_arg(retry: Any) -> RetryPolicy | None:
    if retry is not None and not isinstance(retry, RetryPolicy):
        raise TypeError(
            "SubAgent(retry=...) takes a ptc.llm.RetryPolicy (e.g. RetryPolicy(attempts=5)),"
            f" got {shown(retry)}"
        )
    return retry


def text_arg(value: Any, name: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"SubAgent({name}=...) takes a string, got {shown(value)}")
    return value


def callback_arg(fn: Any, name: str, receives: str) -> Callable[..., Any] | None:
    if fn is not None and not callable(fn):
        raise TypeError(
            f"SubAgent({name}=...) takes a function called with each {receives}, got {shown(fn)}"
        )
    return fn  # type: ignore[no-any-return]


def checkpoint_arg(checkpoint: Any) -> Any:
    """``checkpoint=``: an object with ``save(step, run_id)``, a callable taking the Step so
    far, or None."""
    if checkpoint is None or isinstance(checkpoint, CheckpointSink) or callable(checkpoint):
        return checkpoint
    hint = ""
    if isinstance(checkpoint, str) or hasattr(checkpoint, "__fspath__"):
        hint = f"; for a file: JsonlCheckpoint({str(checkpoint)!r}) from ptc.checkpoint"
    raise TypeError(
        "SubAgent(checkpoint=...) takes a checkpoint (ptc.checkpoint.JsonlCheckpoint,"
        " SqliteCheckpoint, PostgresCheckpoint, anything with save(step, run_id)) or a"
        f" function taking the Step so far, got {shown(checkpoint)}{hint}"
    )


def bool_arg(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"SubAgent({name}=...) takes True or False, got {shown(value)}")
    return value


def name_arg(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        error = ValueError if isinstance(name, str) else TypeError
        raise error(
            "SubAgent(name=...) takes a non-empty string (the agent's name in logs and"
            f" telemetry), got {shown(name)}"
        )
    return name
