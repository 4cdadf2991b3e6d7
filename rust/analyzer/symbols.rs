//! The `max_symbols` limit over forms already read (`check` reads without it): which names are
//! the language's own, for the reader's rule (`crate::reader::SymbolLimit`).

use ahash::AHashSet;

use super::SPECIAL_FORMS;
use crate::builtins;
use crate::error::Result;
use crate::reader::{Form, FormKind, SymbolLimit};

/// A core form or a builtin: names that never count toward `max_symbols`.
pub fn is_core_name(name: &str) -> bool {
    SPECIAL_FORMS.contains(&name) || builtins::lookup(name).is_some()
}

/// The limit with the language's names exempt.
pub fn symbol_limit(max: usize) -> SymbolLimit {
    SymbolLimit {
        max,
        is_core: is_core_name,
    }
}

pub(super) fn count_symbols(forms: &[Form], max: usize) -> Result<()> {
    let limit = symbol_limit(max);
    let mut seen: AHashSet<&str> = AHashSet::new();
    let mut stack: Vec<&Form> = forms.iter().collect();
    while let Some(f) = stack.pop() {
        if let Some(name) = limit.counted(&f.kind) {
            seen.insert(name);
        }
        if let FormKind::List(v)
        | FormKind::Vector(v)
        | FormKind::Map(v)
        | FormKind::Set(v)
        | FormKind::ShortFn(v) = &f.kind
        {
            stack.extend(v.iter());
        }
        if seen.len() > max {
            return Err(limit.exceeded(f.pos));
        }
    }
    Ok(())
}
