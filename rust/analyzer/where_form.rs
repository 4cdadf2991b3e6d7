//! `(where field op value)`: predicates on fields, checked when analyzed.

use super::{err_at, Analyzer};
use crate::error::{Pos, Result};
use crate::ir::{Node, WhereNode};
use crate::reader::{Form, FormKind};
use crate::value::{Value, WhereOp};

impl Analyzer {
    pub(super) fn where_form(&mut self, args: &[Form], pos: Pos) -> Result<Node> {
        let usage =
            "(where :field) or (where :field op value) with op one of = not= > < >= <= in includes";
        let path = match args.first().map(|f| &f.kind) {
            Some(FormKind::Keyword(k)) => vec![Value::Keyword(k.clone())],
            Some(FormKind::Vector(items)) => {
                let mut p = Vec::new();
                for it in items {
                    match &it.kind {
                        FormKind::Keyword(k) => p.push(Value::Keyword(k.clone())),
                        FormKind::Str(s) => p.push(Value::Str(s.clone())),
                        _ => {
                            return Err(err_at(it.pos, "a where path holds keywords or strings")
                                .with_hint(usage))
                        }
                    }
                }
                p
            }
            _ => {
                return Err(
                    err_at(pos, "where needs a field (keyword or vector path)").with_hint(usage)
                )
            }
        };
        match args.len() {
            1 => Ok(Node::Where(Box::new(WhereNode {
                path,
                op: WhereOp::Truthy,
                value: None,
            }))),
            3 => {
                let op = match args[1].symbol_name() {
                    Some("=") => WhereOp::Eq,
                    Some("not=") => WhereOp::NotEq,
                    Some(">") => WhereOp::Gt,
                    Some("<") => WhereOp::Lt,
                    Some(">=") => WhereOp::Ge,
                    Some("<=") => WhereOp::Le,
                    Some("in") => WhereOp::In,
                    Some("includes") => WhereOp::Includes,
                    _ => return Err(err_at(args[1].pos, "invalid where operator").with_hint(usage)),
                };
                let value = self.expr(&args[2], false)?;
                Ok(Node::Where(Box::new(WhereNode {
                    path,
                    op,
                    value: Some(value),
                })))
            }
            2 => Err(err_at(pos, "where is missing its operator")
                .with_hint("write (where :field = value)")),
            n if n > 3 => Err(err_at(
                pos,
                "where takes one condition: a field, an operator and a value",
            )
            .with_hint(
                "combine conditions with all-of or any-of: (all-of (where :a > 1) (where :b < 2))",
            )),
            _ => Err(err_at(pos, "where takes a field, an operator and a value").with_hint(usage)),
        }
    }
}
