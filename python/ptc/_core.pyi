# Type stubs for the Rust extension module `ptc._core` (rust/python/). Keep in sync:
# tests/test_stubs.py checks that every name declared here exists and vice versa.
from typing import Any

__version__: str
DEFAULT_LIMITS: dict[str, int]

_ErrorTuple = tuple[str, str, str | None, int | None, int | None, str | None]
_DefinitionTuple = tuple[str, str, str | None, list[str] | None, str | None, str, str | None]
_ToolCallTuple = tuple[str, list[Any], Any, str | None, float]
_RunTuple = tuple[
    str,
    Any,
    _ErrorTuple | None,
    list[str],
    list[_ToolCallTuple],
    list[_DefinitionTuple],
    float,
    int,
]

class CoreSession:
    def __init__(
        self,
        data: dict[str, Any] | None = None,
        tools: dict[str, Any] | None = None,
        limits: dict[str, int] | None = None,
        data_json: str | None = None,
    ) -> None: ...
    def run(self, source: str, limits: dict[str, int] | None = None) -> _RunTuple: ...
    def definitions(self) -> list[_DefinitionTuple]: ...
    def names(self) -> list[str]: ...
    def get(self, name: str) -> Any: ...
    def has(self, name: str) -> bool: ...
    def describe(
        self, name: str, limit: int | None = 3, printable_limit: int | None = 80
    ) -> tuple[str, str | None, bool]: ...
    def describe_data(
        self, key: str, limit: int | None = 3, printable_limit: int | None = 80
    ) -> tuple[str, str | None, bool]: ...
    def data_keys(self) -> list[str]: ...
    def tool_names(self) -> list[str]: ...

def to_clojure(
    value: Any,
    limit: int | None = None,
    printable_limit: int | None = None,
    hide_private: bool = False,
) -> tuple[str, bool]: ...
def type_label(value: Any) -> str: ...
def run_once(
    source: str,
    data: dict[str, Any] | None = None,
    tools: dict[str, Any] | None = None,
    limits: dict[str, int] | None = None,
) -> _RunTuple: ...
def builtin_names() -> list[str]: ...
def count_tokens(text: str, encoding: str) -> int: ...
def special_forms() -> list[str]: ...
def _panic_for_tests() -> _RunTuple: ...
