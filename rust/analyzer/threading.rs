//! `->` and `->>`: each step rewritten into the next form before analysis.

use super::err_at;
use crate::error::Result;
use crate::reader::{Form, FormKind};

pub(super) fn thread_step(acc: Form, step: &Form, first: bool) -> Result<Form> {
    let pos = step.pos;
    let kind = match &step.kind {
        FormKind::List(items) if !items.is_empty() => {
            let mut v = items.clone();
            if first {
                v.insert(1, acc);
            } else {
                v.push(acc);
            }
            FormKind::List(v)
        }
        FormKind::List(_) => return Err(err_at(pos, "() is not a valid threading step")),
        _ => FormKind::List(vec![step.clone(), acc]),
    };
    Ok(Form { kind, pos })
}
