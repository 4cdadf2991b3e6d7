//! Error kinds and the error value every phase returns.
//!
//! Kinds are a closed enum with stable `type` strings (LANGUAGE.md §10.2) so hosts and tests can
//! match on them; messages are written for an LLM that must fix its program in the next turn.

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    Parse,
    Analysis,
    SymbolLimitExceeded,
    UndefinedVariable,
    AmbiguousReference,
    Type,
    Arity,
    Arithmetic,
    NotCallable,
    Destructure,
    CannotShadowBuiltin,
    LoopLimitExceeded,
    UnknownTool,
    Tool,
    Pmap,
    Pcalls,
    Execution,
    Timeout,
    MemoryExceeded,
    Validation,
    Cancelled,
    Rejected,
    Replay,
    Internal,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 24] = [
        ErrorKind::Parse,
        ErrorKind::Analysis,
        ErrorKind::SymbolLimitExceeded,
        ErrorKind::UndefinedVariable,
        ErrorKind::AmbiguousReference,
        ErrorKind::Type,
        ErrorKind::Arity,
        ErrorKind::Arithmetic,
        ErrorKind::NotCallable,
        ErrorKind::Destructure,
        ErrorKind::CannotShadowBuiltin,
        ErrorKind::LoopLimitExceeded,
        ErrorKind::UnknownTool,
        ErrorKind::Tool,
        ErrorKind::Pmap,
        ErrorKind::Pcalls,
        ErrorKind::Execution,
        ErrorKind::Timeout,
        ErrorKind::MemoryExceeded,
        ErrorKind::Validation,
        ErrorKind::Cancelled,
        ErrorKind::Rejected,
        ErrorKind::Replay,
        ErrorKind::Internal,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Parse => "parse_error",
            ErrorKind::Analysis => "analysis_error",
            ErrorKind::SymbolLimitExceeded => "symbol_limit_exceeded",
            ErrorKind::UndefinedVariable => "undefined_variable",
            ErrorKind::AmbiguousReference => "ambiguous_reference",
            ErrorKind::Type => "type_error",
            ErrorKind::Arity => "arity_error",
            ErrorKind::Arithmetic => "arithmetic_error",
            ErrorKind::NotCallable => "not_callable",
            ErrorKind::Destructure => "destructure_error",
            ErrorKind::CannotShadowBuiltin => "cannot_shadow_builtin",
            ErrorKind::LoopLimitExceeded => "loop_limit_exceeded",
            ErrorKind::UnknownTool => "unknown_tool",
            ErrorKind::Tool => "tool_error",
            ErrorKind::Pmap => "pmap_error",
            ErrorKind::Pcalls => "pcalls_error",
            ErrorKind::Execution => "execution_error",
            ErrorKind::Timeout => "timeout",
            ErrorKind::MemoryExceeded => "memory_exceeded",
            ErrorKind::Validation => "validation_error",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Rejected => "rejected",
            ErrorKind::Replay => "replay_diverged",
            ErrorKind::Internal => "internal_error",
        }
    }
}

impl ErrorKind {
    /// The Python exception class of this kind (`ptc.errors`, generated from this table by
    /// scripts/gen_errors.py): its name, the class it derives from and its docstring.
    pub fn python_class(self) -> (&'static str, &'static str, &'static str) {
        use ErrorKind::{
            AmbiguousReference, Analysis, Arithmetic, Arity, Cancelled, CannotShadowBuiltin,
            Destructure, Execution, Internal, LoopLimitExceeded, MemoryExceeded, NotCallable,
            Parse, Pcalls, Pmap, Rejected, Replay, SymbolLimitExceeded, Timeout, Tool, Type,
            UndefinedVariable, UnknownTool, Validation,
        };
        match self {
            Parse => ("ParseError", "LispError", ""),
            Analysis => ("AnalysisError", "LispError", ""),
            SymbolLimitExceeded => (
                "SymbolLimitExceeded",
                "LimitError",
                "The program uses more distinct symbols and keywords than `max_symbols`.",
            ),
            UndefinedVariable => (
                "UndefinedVariable",
                "NameResolutionError",
                "A name that is not defined (a typo, or a name from outside the language).",
            ),
            AmbiguousReference => (
                "AmbiguousReference",
                "NameResolutionError",
                "A bare name that could mean a tool or a data key: write `tool/name` or `data/name`.",
            ),
            Type => (
                "LispTypeError",
                "ArgumentError",
                "A value of the wrong type for a function (e.g. a number expected, nil given).",
            ),
            Arity => (
                "ArityError",
                "ArgumentError",
                "A function called with the wrong number of arguments.",
            ),
            Arithmetic => (
                "LispArithmeticError",
                "LispError",
                "Integer overflow or division by zero.",
            ),
            NotCallable => (
                "NotCallable",
                "ArgumentError",
                "A value called as a function that is not one.",
            ),
            Destructure => (
                "DestructureError",
                "ArgumentError",
                "A value that does not fit a destructuring pattern.",
            ),
            CannotShadowBuiltin => (
                "CannotShadowBuiltin",
                "AnalysisError",
                "A definition that would replace a builtin's name.",
            ),
            LoopLimitExceeded => (
                "LoopLimitExceeded",
                "LimitError",
                "A loop ran more iterations than `loop_limit`.",
            ),
            UnknownTool => (
                "UnknownTool",
                "NameResolutionError",
                "A `tool/name` call of a tool the Session does not have.",
            ),
            Tool => ("ToolError", "LispError", ""),
            Pmap => (
                "PmapError",
                "LispError",
                "A `pmap` branch failed; the message names the element.",
            ),
            Pcalls => (
                "PcallsError",
                "LispError",
                "A `pcalls` branch failed; the message names the function.",
            ),
            Execution => (
                "ExecutionError",
                "LispError",
                "A runtime failure not covered by a more specific kind.",
            ),
            Timeout => (
                "TimeoutExceeded",
                "LimitError",
                "The run (or one parallel branch) took longer than `timeout_ms`.",
            ),
            MemoryExceeded => (
                "MemoryExceeded",
                "LimitError",
                "The run needed more memory than `max_memory` (or a size limit).",
            ),
            Validation => (
                "ValidationError",
                "LispError",
                "A returned value that does not match the agent's signature.",
            ),
            Cancelled => (
                "RunCancelled",
                "LispError",
                "A run stopped by `cancel()`, as recorded inside the run.",
            ),
            Rejected => (
                "RejectedError",
                "LispError",
                "A tool call the host rejected (a person or a policy); the message says why.",
            ),
            Replay => (
                "ReplayDiverged",
                "LispError",
                "A resumed run that did not retrace its record (edited program, other data or tampering).",
            ),
            Internal => ("InternalError", "LispError", ""),
        }
    }
}

/// A source position (1-based line and column, counted in characters).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pos {
    pub line: u32,
    pub col: u32,
}

impl fmt::Display for Pos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.col)
    }
}

/// Names of the resource limits; a limit error carries the one it hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitName {
    Fuel,
    Timeout,
    Depth,
    CollectionSize,
    StringSize,
    Output,
    Loop,
    Symbols,
    Nesting,
    Memory,
    ToolCalls,
    /// A tool's own cap on its calls in one run (`Tool(max_calls=...)`): reported by limit
    /// errors, not a run limit a host sets (so not in `ALL`).
    ToolMaxCalls,
}

impl LimitName {
    /// Every limit, in the order hosts see them (`ptc._core.DEFAULT_LIMITS`).
    pub const ALL: [LimitName; 11] = [
        LimitName::Fuel,
        LimitName::Timeout,
        LimitName::Depth,
        LimitName::CollectionSize,
        LimitName::StringSize,
        LimitName::Output,
        LimitName::Memory,
        LimitName::Loop,
        LimitName::Nesting,
        LimitName::Symbols,
        LimitName::ToolCalls,
    ];

    /// The limit a host names (`"timeout_ms"`, ...).
    pub fn named(name: &str) -> Option<LimitName> {
        LimitName::ALL.into_iter().find(|l| l.as_str() == name)
    }

    /// The name hosts set it by, and limit errors report.
    pub fn as_str(self) -> &'static str {
        match self {
            LimitName::Fuel => "fuel",
            LimitName::Timeout => "timeout_ms",
            LimitName::Depth => "max_depth",
            LimitName::CollectionSize => "max_collection_size",
            LimitName::StringSize => "max_string_size",
            LimitName::Output => "max_output",
            LimitName::Loop => "loop_limit",
            LimitName::Symbols => "max_symbols",
            LimitName::Nesting => "max_nesting",
            LimitName::Memory => "max_memory",
            LimitName::ToolCalls => "max_tool_calls",
            LimitName::ToolMaxCalls => "max_calls",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ErrorData {
    pub kind: ErrorKind,
    pub message: String,
    pub hint: Option<String>,
    pub pos: Option<Pos>,
    pub limit: Option<LimitName>,
}

/// An error, one pointer wide: `Result<Value, Error>` and the like then fit in two registers
/// on the hot path, and the cost of the error's text is paid only when one happens.
#[derive(Debug, Clone, PartialEq)]
pub struct Error(Box<ErrorData>);

impl std::ops::Deref for Error {
    type Target = ErrorData;
    fn deref(&self) -> &ErrorData {
        &self.0
    }
}

impl std::ops::DerefMut for Error {
    fn deref_mut(&mut self) -> &mut ErrorData {
        &mut self.0
    }
}

impl Error {
    #[cold]
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error(Box::new(ErrorData {
            kind,
            message: message.into(),
            hint: None,
            pos: None,
            limit: None,
        }))
    }
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
    pub fn at(mut self, pos: Pos) -> Self {
        if self.pos.is_none() {
            self.pos = Some(pos);
        }
        self
    }
    #[cold]
    pub fn limit(kind: ErrorKind, limit: LimitName, message: impl Into<String>) -> Self {
        let mut e = Error::new(kind, message);
        e.limit = Some(limit);
        e
    }
    pub fn type_err(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Type, message)
    }
    pub fn arity(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Arity, message)
    }
    pub fn exec(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Execution, message)
    }
    pub fn arith(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Arithmetic, message)
    }
    pub fn analysis(message: impl Into<String>) -> Self {
        Error::new(ErrorKind::Analysis, message)
    }
    pub fn parse(message: impl Into<String>, pos: Pos) -> Self {
        Error::new(ErrorKind::Parse, message).at(pos)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;
