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

/// Each `pmap`/`pcalls` branch ends after this long (LANGUAGE.md §11), or at the run's end.
pub const BRANCH_TIMEOUT_MS: u64 = 5_000;

/// One println entry is cut to this many characters, then `...` (LANGUAGE.md §9.3).
pub const PRINT_ENTRY_CHARS: usize = 2_000;

/// The most a host may set a limit to, where a higher setting would let a program take the
/// process down instead of ending in a limit error, and why.
pub struct Cap {
    pub max: u64,
    pub why: &'static str,
}

pub fn cap(name: &str) -> Option<Cap> {
    Some(match name {
        "max_depth" => Cap {
            max: 100_000,
            why: "each call level takes native stack; deeper recursion should be a loop",
        },
        "max_nesting" => Cap {
            max: 100_000,
            why: "deeper programs take native stack to read, analyze and free",
        },
        "max_collection_size" | "max_string_size" => Cap {
            max: 1 << 40,
            why: "larger sizes cannot be allocated on this platform",
        },
        "max_memory" | "max_output" => Cap {
            max: 1 << 46,
            why: "larger sizes cannot be allocated on this platform",
        },
        "timeout_ms" => Cap {
            max: 365 * 24 * 3_600_000,
            why: "a run's deadline must be representable",
        },
        _ => return None,
    })
}
