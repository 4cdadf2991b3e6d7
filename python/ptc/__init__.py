"""ptc: a runtime for PTC-Lisp, the small safe Clojure subset that LLMs write.

Evaluate programs against your data (``data/...``) and tools (``tool/...``), keep the LLM's
definitions between turns, and render values the way an LLM should see them.
"""

from __future__ import annotations

from typing import Any

from . import (
    _core,
    history,
)
from ._keyword import Keyword
from .agent import AgentTool, SubAgent, SubAgentError, Tool
from .errors import (
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
    RunCancelled,
    SymbolLimitExceeded,
    TimeoutExceeded,
    ToolError,
    UndefinedVariable,
    UnknownTool,
    ValidationError,
)
from .limits import Limits
from .session import (
    CancelToken,
    Definition,
    Description,
    Memory,
    Result,
    Session,
    ToolCall,
    eval,
    run,
)
from .step import Step, StepError, Usage
from .turn import Turn

__version__: str = _core.__version__


def to_clojure(
    value: Any,
    limit: int | None = None,
    printable_limit: int | None = None,
    hide_private: bool = False,
) -> tuple[str, bool]:
    """Prints a value in Clojure syntax, truncated: ``(text, truncated)``.

    Collections longer than ``limit`` show their first ``limit`` items; strings longer than
    ``printable_limit`` characters are cut and end in ``...``. With ``hide_private`` map entries
    whose key starts with ``_`` are omitted. The cost is proportional to what is printed.
    """
    return _core.to_clojure(value, limit, printable_limit, hide_private)


def type_label(value: Any) -> str:
    """The type label of a value: ``list[3]``, ``map[2]``, ``string``, ``integer``, ..."""
    return _core.type_label(value)


__all__ = [
    "AgentTool",
    "AmbiguousReference",
    "AnalysisError",
    "ArgumentError",
    "ArityError",
    "CancelToken",
    "Cancelled",
    "CannotShadowBuiltin",
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
    "PmapError",
    "ProgramFailed",
    "PtcError",
    "Result",
    "RunCancelled",
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
    "Turn",
    "UndefinedVariable",
    "UnknownTool",
    "Usage",
    "ValidationError",
    "__version__",
    "eval",
    "history",
    "run",
    "to_clojure",
    "type_label",
]
