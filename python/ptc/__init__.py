"""ptc: a runtime for PTC-Lisp, the small safe Clojure subset that LLMs write.

Evaluate programs against your data (``data/...``) and tools (``tool/...``), keep the LLM's
definitions between turns, and render values the way an LLM should see them.
"""

from __future__ import annotations

# Not `from typing import TYPE_CHECKING`: importing typing alone costs more than the rest of
# `import ptc` (type checkers treat any `TYPE_CHECKING` name as true).
TYPE_CHECKING = False

from . import _core  # noqa: E402
from ._core import CancelToken  # noqa: E402
from ._keyword import Keyword  # noqa: E402
from .errors import (  # noqa: E402
    AmbiguousReference,
    AnalysisError,
    ArgumentError,
    ArityError,
    Cancelled,
    CannotShadowBuiltin,
    DestructureError,
    ExecutionError,
    ExecutionLimitError,
    InternalError,
    LimitError,
    LispArithmeticError,
    LispError,
    LispTypeError,
    LoopLimitExceeded,
    MemoryExceeded,
    NameResolutionError,
    NestingLimitError,
    NotCallable,
    ParseError,
    PcallsError,
    PmapError,
    ProgramFailed,
    PtcError,
    RejectedError,
    ReplayDiverged,
    RunCancelled,
    SymbolLimitExceeded,
    TimeoutExceeded,
    ToolError,
    ToolLimitError,
    UndefinedVariable,
    UnknownTool,
    ValidationError,
)

if TYPE_CHECKING:
    from typing import Any

    # the submodules, imported on first use by __getattr__ (see _SUBMODULES)
    from . import agent as agent
    from . import approvals as approvals
    from . import checking as checking
    from . import checkpoint as checkpoint
    from . import cli as cli
    from . import compression as compression
    from . import demo as demo
    from . import eager as eager
    from . import history as history
    from . import integrations as integrations
    from . import limits as limits
    from . import llm as llm
    from . import observe as observe
    from . import planning as planning
    from . import prompts as prompts
    from . import reference as reference
    from . import repl as repl
    from . import session as session
    from . import step as step
    from . import tools as tools
    from . import trace as trace
    from . import turn as turn
    from .agent import AgentTool, SubAgent, SubAgentError, Tool
    from .approvals import Answer, Continuation, ContinuationError, PendingCall, Reject
    from .checking import CallSite, Check, check
    from .checkpoint import CheckpointError, RunMismatchError
    from .limits import Limits
    from .planning import UNKNOWN, Plan, PlannedCall
    from .session import Definition, Description, Memory, Result, Session, ToolCall, run
    from .session import eval as eval  # ptc.eval: kept out of __all__ (it would shadow eval)
    from .step import Step, StepError, Usage
    from .tools.declare import tool
    from .turn import Turn

__version__: str = _core.__version__

# Everything but the core, the keyword type and the errors loads on first use, so `import
# ptc` stays cheap (the Session layer pulls in dataclasses and inspect; the agent layer and
# the history strategies pull in asyncio, sqlite3 and the prompt machinery).
_LAZY = {
    "Limits": "limits",
    "Definition": "session",
    "Description": "session",
    "Memory": "session",
    "Result": "session",
    "Session": "session",
    "ToolCall": "session",
    "run": "session",
    "eval": "session",
    "Answer": "approvals",
    "Continuation": "approvals",
    "ContinuationError": "approvals",
    "PendingCall": "approvals",
    "Reject": "approvals",
    "AgentTool": "agent",
    "SubAgent": "agent",
    "SubAgentError": "agent",
    "Tool": "agent",
    "check": "checking",
    "Check": "checking",
    "CallSite": "checking",
    "UNKNOWN": "planning",
    "Plan": "planning",
    "PlannedCall": "planning",
    "tool": "tools.declare",
    "CheckpointError": "checkpoint",
    "RunMismatchError": "checkpoint",
    "Step": "step",
    "StepError": "step",
    "Usage": "step",
    "Turn": "turn",
}


#: The public submodules: ``import ptc`` then ``ptc.llm.openai(...)`` imports ``ptc.llm`` on
#: first use (an attribute the import system sets only once something imported the module).
_SUBMODULES = frozenset(
    {
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
    }
)


def __getattr__(name: str) -> Any:
    import importlib

    if name in _SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ptc' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY, *_SUBMODULES})


def to_clojure(
    value: Any,
    limit: int | None = None,
    printable_limit: int | None = None,
    hide_private: bool = False,
    *,
    max_tokens: int | None = None,
    encoding: str = "o200k_base",
    root: str | None = None,
) -> tuple[str, bool]:
    """Prints a value in Clojure syntax, truncated: ``(text, truncated)``.

    Collections longer than ``limit`` show their first ``limit`` items; strings longer than
    ``printable_limit`` characters are cut and end in ``...``. With ``hide_private`` map entries
    whose key starts with ``_`` are omitted. The cost is proportional to what is printed.

    With ``max_tokens`` the text counts at most that many tokens in ``encoding``
    (``"o200k_base"`` or ``"cl100k_base"``), exactly: the print the limits give when it fits,
    else the widest breadth-first view that does, with elision markers of one form,
    ``...N more[ keys| chars][ EXPR]``, where ``EXPR`` is a program that gets the rest from
    ``root`` (``"*1"``, ``"data/orders"``; left out without it). A value that fits is printed
    whole; removing the markers leaves text that reads back as PTC-Lisp.
    """
    return _core.to_clojure(value, limit, printable_limit, hide_private, max_tokens, encoding, root)


def language_reference() -> str:
    """The PTC-Lisp language reference (Markdown), shipped with the package."""
    from .reference import language_reference as text

    return text()


def type_label(value: Any) -> str:
    """The type label of a value: ``list[3]``, ``map[2]``, ``string``, ``integer``, ..."""
    return _core.type_label(value)


__all__ = [
    "UNKNOWN",
    "AgentTool",
    "AmbiguousReference",
    "AnalysisError",
    "Answer",
    "ArgumentError",
    "ArityError",
    "CallSite",
    "CancelToken",
    "Cancelled",
    "CannotShadowBuiltin",
    "Check",
    "CheckpointError",
    "Continuation",
    "ContinuationError",
    "Definition",
    "Description",
    "DestructureError",
    "ExecutionError",
    "ExecutionLimitError",
    "InternalError",
    "Keyword",
    "LimitError",
    "Limits",
    "LispArithmeticError",
    "LispError",
    "LispTypeError",
    "LoopLimitExceeded",
    "Memory",
    "MemoryExceeded",
    "NameResolutionError",
    "NestingLimitError",
    "NotCallable",
    "ParseError",
    "PcallsError",
    "PendingCall",
    "Plan",
    "PlannedCall",
    "PmapError",
    "ProgramFailed",
    "PtcError",
    "Reject",
    "RejectedError",
    "ReplayDiverged",
    "Result",
    "RunCancelled",
    "RunMismatchError",
    "Session",
    "Step",
    "StepError",
    "SubAgent",
    "SubAgentError",
    "SymbolLimitExceeded",
    "TimeoutExceeded",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolLimitError",
    "Turn",
    "UndefinedVariable",
    "UnknownTool",
    "Usage",
    "ValidationError",
    "__version__",
    "check",
    "history",
    "language_reference",
    "run",
    "to_clojure",
    "tool",
    "type_label",
]
