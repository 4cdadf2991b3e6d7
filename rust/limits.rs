//! Resource limits. Each has a default that lets ordinary programs over large inputs run
//! (a filter/map/reduce over 1,000,000 records) and ends a runaway program with a typed error.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Evaluation steps (one per evaluated IR node): a deterministic bound on work.
    pub fuel: u64,
    /// Wall-clock time per run, tool time included.
    pub timeout_ms: u64,
    /// Nested function calls.
    pub max_depth: usize,
    /// Elements in any vector, map or set a program builds.
    pub max_collection_size: usize,
    /// Bytes in any string a program builds.
    pub max_string_size: usize,
    /// Total bytes of println output per run.
    pub max_output: usize,
    /// Bytes of memory the program allocates (input data and earlier definitions not counted).
    pub max_memory: usize,
    /// `recur`/`doseq` iterations per function invocation.
    pub loop_limit: u64,
    /// Reader nesting depth.
    pub max_nesting: usize,
    /// Distinct symbols and keywords in one program.
    pub max_symbols: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            fuel: 200_000_000,
            timeout_ms: 5_000,
            max_depth: 1_000,
            max_collection_size: 10_000_000,
            max_string_size: 32 * 1024 * 1024,
            max_output: 1_000_000,
            max_memory: 256 * 1024 * 1024,
            loop_limit: 1_000_000,
            max_nesting: 512,
            max_symbols: 10_000,
        }
    }
}

/// One println entry is cut to this many characters, then `...` (LANGUAGE.md §9.3).
pub const PRINT_ENTRY_CHARS: usize = 2_000;
