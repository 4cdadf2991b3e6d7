//! The `max_symbols` limit: which names count, and the error when there are too many.

use ahash::AHashSet;

use super::SPECIAL_FORMS;
use crate::builtins;
use crate::error::{Error, ErrorKind, Pos, Result};
use crate::reader::{Form, FormKind};
use crate::value::Str;

/// The name a form contributes to `max_symbols`: symbols and keywords, except core forms,
/// builtins and `:else` (LANGUAGE.md §11).
pub(crate) fn counted_name(kind: &FormKind) -> Option<&Str> {
    match kind {
        FormKind::Symbol(s)
            if !SPECIAL_FORMS.contains(&s.as_ref()) && builtins::lookup(s).is_none() =>
        {
            Some(s)
        }
        FormKind::Keyword(k) if k.as_str() != "else" => Some(k),
        _ => None,
    }
}

pub(crate) fn too_many_symbols(max: usize, pos: Pos) -> Error {
    Error::limit(
        ErrorKind::SymbolLimitExceeded,
        crate::error::LimitName::Symbols,
        format!("the program uses more than {max} distinct symbols and keywords"),
    )
    .at(pos)
}

pub(super) fn count_symbols(forms: &[Form], max: usize) -> Result<()> {
    let mut seen: AHashSet<&str> = AHashSet::new();
    let mut stack: Vec<&Form> = forms.iter().collect();
    while let Some(f) = stack.pop() {
        if let Some(name) = counted_name(&f.kind) {
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
            return Err(too_many_symbols(max, f.pos));
        }
    }
    Ok(())
}
