# Type stubs for the Rust extension module `ptc._core` (rust/python/). Keep in sync:
# tests/test_stubs.py checks that every name declared here exists and vice versa.
import contextvars
from collections.abc import Callable
from typing import Any, Literal, Self, final

from .errors import LispError
from .limits import LimitsArg

__all__ = [
    "DEFAULT_LIMITS",
    "PRINT_ENTRY_CHARS",
    "SAMPLE_LIMIT",
    "SAMPLE_PRINTABLE_LIMIT",
    "TOOL_ARGS_LIMIT",
    "TOOL_ARGS_PRINTABLE_LIMIT",
    "_LINEAGE",
    "CancelToken",
    "CoreSession",
    "Definition",
    "LazyValue",
    "Lineage",
    "PendingCall",
    "Planner",
    "Result",
    "ToolCall",
    "__version__",
    "_at_exit",
    "_boundary_panic_for_tests",
    "_check_tape",
    "_panic_for_tests",
    "_record_value",
    "_refused",
    "_split_conversions",
    "_tool_call_id",
    "_tool_lineage",
    "_tool_sites",
    "_tool_time_left",
    "_unknown_tool",
    "builtin_names",
    "builtins",
    "complete_prefix",
    "count_tokens",
    "error_kinds",
    "prompt_functions",
    "run_once",
    "special_forms",
    "to_clojure",
    "type_label",
]

__version__: str
DEFAULT_LIMITS: dict[str, int]
SAMPLE_LIMIT: int
TOOL_ARGS_LIMIT: int
TOOL_ARGS_PRINTABLE_LIMIT: int
PRINT_ENTRY_CHARS: int
SAMPLE_PRINTABLE_LIMIT: int

@final
class LazyValue:
    """A core value handed to Python unconverted."""
    def get(self) -> Any: ...
    @property
    def is_converted(self) -> bool: ...
    def preview(
        self,
        limit: int | None = ...,
        printable_limit: int | None = ...,
        hide_private: bool = ...,
        *,
        max_tokens: int | None = ...,
        encoding: str = ...,
        root: str | None = ...,
    ) -> str: ...
    @property
    def type_label(self) -> str: ...

@final
class ToolCall:
    """One tool call made by a run; arguments and result convert on first access."""
    @property
    def name(self) -> str: ...
    @property
    def args(self) -> list[Any]: ...
    @property
    def result(self) -> Any: ...
    @property
    def error(self) -> str | None: ...
    @property
    def duration_ms(self) -> float: ...
    @property
    def abandoned(self) -> bool: ...
    @property
    def id(self) -> str: ...
    @property
    def decision(self) -> Literal["approved", "answered", "rejected"] | None: ...
    @property
    def replayed(self) -> bool: ...
    @property
    def lazy_args(self) -> LazyValue: ...
    @property
    def lazy_result(self) -> LazyValue: ...
    def args_text(self, limit: int | None = ..., printable_limit: int | None = ...) -> str: ...

@final
class Definition:
    """A user definition with the metadata host summaries need."""
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> Literal["function", "value"]: ...
    @property
    def doc(self) -> str | None: ...
    @property
    def params(self) -> list[str] | None: ...
    @property
    def return_type(self) -> str | None: ...
    @property
    def type(self) -> str: ...
    @property
    def sample(self) -> str | None: ...

@final
class PendingCall:
    """A call a run stopped at, waiting for the host's decision."""
    @property
    def id(self) -> str: ...
    @property
    def tool(self) -> str: ...
    @property
    def args(self) -> list[Any]: ...
    @property
    def line(self) -> int | None: ...
    @property
    def column(self) -> int | None: ...
    @property
    def interrupted(self) -> bool: ...
    def describe(self) -> str: ...
    @staticmethod
    def _restore(
        id: str,
        tool: str,
        args: Any,
        line: int | None,
        column: int | None,
        interrupted: bool,
    ) -> PendingCall: ...

@final
class Result:
    """What one run produced."""
    @property
    def ok(self) -> bool: ...
    @property
    def is_pending(self) -> bool: ...
    @property
    def pending(self) -> list[PendingCall]: ...
    @property
    def continuation(self) -> Any: ...
    def _suspended(self) -> dict[str, Any] | None: ...
    @property
    def value(self) -> Any: ...
    @property
    def lazy_value(self) -> LazyValue: ...
    @property
    def returned(self) -> bool: ...
    @property
    def failed(self) -> bool: ...
    @property
    def error(self) -> LispError | None: ...
    @property
    def prints(self) -> list[str]: ...
    @property
    def warnings(self) -> list[str]: ...
    @property
    def tool_calls(self) -> list[ToolCall]: ...
    @property
    def defined(self) -> list[Definition]: ...
    @property
    def duration_ms(self) -> float: ...
    @property
    def steps(self) -> int: ...
    @property
    def outcome(self) -> Literal["value", "return", "fail", "error", "pending"]: ...
    def preview(
        self,
        limit: int | None = ...,
        printable_limit: int | None = ...,
        hide_private: bool = ...,
        *,
        max_tokens: int | None = ...,
        encoding: str = ...,
        root: str | None = ...,
    ) -> str: ...

@final
class CancelToken:
    def __init__(self) -> None: ...
    def cancel(self) -> None: ...
    @property
    def cancelled(self) -> bool: ...

class CoreSession:
    """The Rust class `ptc.Session` subclasses: the Session's core, made by `__init__`."""

    def __new__(cls, *args: Any, **kwargs: Any) -> Self: ...
    def __init__(
        self,
        data: dict[str, Any] | None = None,
        tools: dict[str, Any] | None = None,
        limits: dict[str, int] | None = None,
        data_json: str | None = None,
        tool_caps: dict[str, int] | None = None,
        tool_gates: dict[str, str] | None = None,
        policy: Any = None,
        clock: Any = None,
        idempotent: list[str] | None = None,
        catalogue: Callable[[], list[tuple[str, list[str], str | None, str | None, str | None]]]
        | None = None,
    ) -> None: ...
    def run(
        self,
        source: str,
        *,
        limits: LimitsArg = None,
        cancel: CancelToken | None = None,
        lazy: bool = False,
        check: bool = False,
        approved: Any = None,
    ) -> Result: ...
    def _run(
        self,
        source: str,
        limits: dict[str, int] | None = None,
        cancel: CancelToken | None = None,
        lazy: bool = False,
        gate: Any = None,
        tape: dict[str, Any] | None = None,
        only: list[str] | None = None,
    ) -> Result: ...
    def _state_fingerprint(self) -> str: ...
    def cancel(self) -> bool: ...
    def _definitions(self) -> list[Definition]: ...
    def _names(self) -> list[str]: ...
    def _get(self, name: str) -> Any: ...
    def _has(self, name: str) -> bool: ...
    def _describe(
        self, name: str, limit: int | None = ..., printable_limit: int | None = ...
    ) -> tuple[str, str | None, bool]: ...
    def _describe_data(
        self, key: str, limit: int | None = ..., printable_limit: int | None = ...
    ) -> tuple[str, str | None, bool]: ...
    def _data_keys(self) -> list[str]: ...
    def _record_keys(self, sample: int = 100) -> list[tuple[str, list[str]]]: ...
    def _tool_sites(
        self,
        source: str,
        unknown: Any,
        limits: dict[str, int] | None = None,
        keys: bool = False,
    ) -> _ToolSites: ...

def to_clojure(
    value: Any,
    limit: int | None = None,
    printable_limit: int | None = None,
    hide_private: bool = False,
    max_tokens: int | None = None,
    encoding: str = "o200k_base",
    root: str | None = None,
) -> tuple[str, bool]: ...
def type_label(value: Any) -> str: ...
def run_once(
    source: str,
    data: dict[str, Any] | None = None,
    tools: dict[str, Any] | None = None,
    limits: dict[str, int] | None = None,
) -> Result: ...
def builtin_names() -> list[str]: ...
def builtins() -> list[tuple[str, int, int | None, str, bool]]: ...
def prompt_functions() -> list[str]: ...
def count_tokens(text: str, encoding: str) -> int: ...
def complete_prefix(text: str) -> int: ...
def special_forms() -> list[str]: ...
def error_kinds() -> list[tuple[str, str, str, str]]: ...
def _panic_for_tests() -> Result: ...  # test-hooks builds only
def _boundary_panic_for_tests() -> None: ...  # test-hooks builds only
def _split_conversions() -> tuple[int, int, int]: ...  # test-hooks builds only
def _at_exit() -> None: ...
def _tool_time_left() -> float | None: ...
def _tool_call_id() -> str | None: ...
def _tool_lineage() -> Lineage | None: ...
def _record_value(value: Any) -> Any: ...
def _unknown_tool(name: str, names: list[str]) -> tuple[str, str | None]: ...
def _check_tape(tape: dict[str, Any]) -> None: ...
def _refused(
    kind: str,
    message: str,
    hint: str | None = None,
    line: int | None = None,
    column: int | None = None,
) -> Result: ...

_ToolSites = tuple[
    list[tuple[str, str, str | None, int | None, int | None, str | None]],
    list[tuple[str, tuple[Any, ...], int, int, bool, bool]],
    list[str],
    list[str],
    list[tuple[str, int, int]],
    Planner | None,
]

@final
class Planner:
    """A program read by ``check``, planned when ``plan`` is first asked for."""

    def plan(
        self, unknown: Any
    ) -> tuple[
        list[tuple[str, tuple[Any, ...] | None, int, int, bool, int | None, str | None]], bool
    ]: ...

def _tool_sites(
    source: str,
    unknown: Any,
    limits: dict[str, int] | None = None,
    tools: list[str] | None = None,
    data: dict[str, int | None] | None = None,
    keys: bool = False,
) -> _ToolSites: ...

@final
class Lineage:
    """Runs a tool's runs are nested in (opaque), carried by ``_LINEAGE``."""

_LINEAGE: contextvars.ContextVar[Lineage]
