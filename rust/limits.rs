//! Resource limits. Each has a default that lets ordinary programs over large inputs run
//! (a filter/map/reduce over 1,000,000 records) and ends a runaway program with a typed error.

use crate::error::LimitName;

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
    /// Tool calls per run, all tools together and parallel branches included.
    pub max_tool_calls: u64,
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
            max_tool_calls: 1_000,
        }
    }
}

impl Limits {
    /// The value of one limit (sizes widened to u64).
    pub fn get(&self, name: LimitName) -> u64 {
        let size = |n: usize| n as u64;
        match name {
            LimitName::Fuel => self.fuel,
            LimitName::Timeout => self.timeout_ms,
            LimitName::Depth => size(self.max_depth),
            LimitName::CollectionSize => size(self.max_collection_size),
            LimitName::StringSize => size(self.max_string_size),
            LimitName::Output => size(self.max_output),
            LimitName::Memory => size(self.max_memory),
            LimitName::Loop => self.loop_limit,
            LimitName::Nesting => size(self.max_nesting),
            LimitName::Symbols => size(self.max_symbols),
            LimitName::ToolCalls => self.max_tool_calls,
            // each tool's own; the run has none
            LimitName::ToolMaxCalls => u64::MAX,
        }
    }

    /// Sets one limit (a size beyond this platform's addresses saturates).
    pub fn set(&mut self, name: LimitName, n: u64) {
        let size = usize::try_from(n).unwrap_or(usize::MAX);
        match name {
            LimitName::Fuel => self.fuel = n,
            LimitName::Timeout => self.timeout_ms = n,
            LimitName::Depth => self.max_depth = size,
            LimitName::CollectionSize => self.max_collection_size = size,
            LimitName::StringSize => self.max_string_size = size,
            LimitName::Output => self.max_output = size,
            LimitName::Memory => self.max_memory = size,
            LimitName::Loop => self.loop_limit = n,
            LimitName::Nesting => self.max_nesting = size,
            LimitName::Symbols => self.max_symbols = size,
            LimitName::ToolCalls => self.max_tool_calls = n,
            LimitName::ToolMaxCalls => {}
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

pub fn cap(name: LimitName) -> Option<Cap> {
    Some(match name {
        LimitName::Depth => Cap {
            max: 100_000,
            why: "each call level takes native stack; deeper recursion should be a loop",
        },
        LimitName::Nesting => Cap {
            max: 100_000,
            why: "deeper programs take native stack to read, analyze and free",
        },
        LimitName::CollectionSize | LimitName::StringSize => Cap {
            max: 1 << 40,
            why: "larger sizes cannot be allocated on this platform",
        },
        LimitName::Memory | LimitName::Output => Cap {
            max: 1 << 46,
            why: "larger sizes cannot be allocated on this platform",
        },
        LimitName::Timeout => Cap {
            max: 365 * 24 * 3_600_000,
            why: "a run's deadline must be representable",
        },
        _ => return None,
    })
}
