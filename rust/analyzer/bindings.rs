//! `let`, `loop`, `if-let`/`when-let` and `doseq`: binding vectors.

use super::names::{check_bindable, split_ns};
use super::short_fn::is_placeholder;
use super::{err_at, Analyzer};
use crate::error::{Pos, Result};
use crate::ir::{Doseq, Let, Node, Pattern, Slot};
use crate::reader::{Form, FormKind};
use crate::value::Value;

/// The slots of patterns that are all plain names (so `recur` can assign them directly).
pub(super) fn simple_slots<'p>(patterns: impl Iterator<Item = &'p Pattern>) -> Option<Vec<Slot>> {
    patterns
        .map(|p| match p {
            Pattern::Bind(s) => Some(*s),
            _ => None,
        })
        .collect()
}

impl Analyzer {
    pub(super) fn binding_vector<'f>(
        &self,
        form: Option<&'f Form>,
        what: &str,
        pos: Pos,
    ) -> Result<&'f [Form]> {
        match form.map(|f| &f.kind) {
            Some(FormKind::Vector(v)) => {
                if v.len() % 2 != 0 {
                    let hint = if v.len() == 3 && v[..2].iter().all(|f| f.symbol_name().is_some()) {
                        // `(doseq [k v m] ...)`: one name per value; a map's entries destructure
                        format!(
                            "destructure each entry into two names: ({what} [[{} {}] coll] body)",
                            v[0].symbol_name().unwrap_or("k"),
                            v[1].symbol_name().unwrap_or("v")
                        )
                    } else {
                        format!("({what} [a 1 b 2] body)")
                    };
                    return Err(err_at(pos, format!("{what} bindings need an even number of forms (name value pairs), got {}", v.len()))
                        .with_hint(hint));
                }
                Ok(v)
            }
            _ => Err(err_at(pos, format!("{what} needs a binding vector"))
                .with_hint(format!("({what} [name value ...] body)"))),
        }
    }

    pub(super) fn let_form(
        &mut self,
        args: &[Form],
        pos: Pos,
        tail: bool,
        is_loop: bool,
    ) -> Result<Node> {
        let what = if is_loop { "loop" } else { "let" };
        let bv = self.binding_vector(args.first(), what, pos)?;
        if args.len() < 2 {
            return Err(
                err_at(pos, format!("{what} needs a body after the bindings"))
                    .with_hint(format!("({what} [x 1] (inc x))")),
            );
        }
        let mark = self.mark();
        let mut bindings = Vec::with_capacity(bv.len() / 2);
        for pair in bv.chunks(2) {
            let init = self.expr(&pair[1], false)?;
            let pat = self.pattern(&pair[0])?;
            bindings.push((pat, init));
        }
        if is_loop {
            let slots = simple_slots(bindings.iter().map(|(p, _)| p));
            self.recur_targets.push((bindings.len(), slots));
        }
        let body = self.body(&args[1..], if is_loop { true } else { tail });
        if is_loop {
            self.recur_targets.pop();
        }
        self.unbind_to(mark);
        let l = Box::new(Let {
            bindings,
            body: body?,
        });
        Ok(if is_loop { Node::Loop(l) } else { Node::Let(l) })
    }

    pub(super) fn if_let(
        &mut self,
        name: &str,
        args: &[Form],
        pos: Pos,
        tail: bool,
    ) -> Result<Node> {
        let bv = self.binding_vector(args.first(), name, pos)?;
        if bv.len() != 2 {
            return Err(err_at(
                pos,
                format!(
                    "{name} takes exactly one binding pair, got {}",
                    bv.len() / 2
                ),
            )
            .with_hint(format!(
                "({name} [x expr] ...); nest {name} or use let for more"
            )));
        }
        let sym = match &bv[0].kind {
            FormKind::Symbol(s) if split_ns(s).is_none() && is_placeholder(s).is_none() => {
                s.clone()
            }
            _ => {
                return Err(err_at(
                    bv[0].pos,
                    format!("{name} binds a plain name; destructuring is not supported here"),
                )
                .with_hint(format!("({name} [x expr] (let [{{:keys [a]}} x] ...))")))
            }
        };
        let is_if = name == "if-let";
        if (is_if && !(2..=3).contains(&args.len())) || (!is_if && args.len() < 2) {
            return Err(
                err_at(pos, format!("{name} has the wrong shape")).with_hint(if is_if {
                    "(if-let [x expr] then else?)"
                } else {
                    "(when-let [x expr] body...)"
                }),
            );
        }
        let init = self.expr(&bv[1], false)?;
        let mark = self.mark();
        check_bindable(&sym, bv[0].pos)?;
        let slot = self.bind(&sym);
        let then = if is_if {
            self.expr(&args[1], tail)?
        } else {
            self.body(&args[1..], tail)?
        };
        let els = if is_if {
            match args.get(2) {
                Some(e) => self.expr(e, tail)?,
                None => Node::Const(Value::Nil),
            }
        } else {
            Node::Const(Value::Nil)
        };
        self.unbind_to(mark);
        Ok(Node::Let(Box::new(Let {
            bindings: vec![(Pattern::Bind(slot), init)],
            body: Node::If(Box::new((Node::Local(slot), then, els))),
        })))
    }

    pub(super) fn doseq(&mut self, args: &[Form], pos: Pos) -> Result<Node> {
        let bv = self.binding_vector(args.first(), "doseq", pos)?;
        if args.len() < 2 {
            return Err(err_at(pos, "doseq needs a body").with_hint("(doseq [x coll] (println x))"));
        }
        let mark = self.mark();
        let mut bindings = Vec::new();
        for pair in bv.chunks(2) {
            if let FormKind::Keyword(k) = &pair[0].kind {
                return Err(err_at(
                    pair[0].pos,
                    format!("doseq modifiers like :{k} are not supported"),
                )
                .with_hint(
                    "filter the collection first, e.g. (doseq [x (filter pred coll)] ...)",
                ));
            }
            if matches!(
                pair[1].kind,
                FormKind::Int(_) | FormKind::Float(_) | FormKind::Keyword(_)
            ) {
                return Err(err_at(
                    pair[1].pos,
                    "doseq needs a collection to iterate over",
                ));
            }
            let coll = self.expr(&pair[1], false)?;
            let pat = self.pattern(&pair[0])?;
            bindings.push((pat, coll));
        }
        let saved = std::mem::take(&mut self.recur_targets);
        let body = self.body(&args[1..], false);
        self.recur_targets = saved;
        self.unbind_to(mark);
        Ok(Node::Doseq(Box::new(Doseq {
            bindings,
            body: body?,
            pos,
        })))
    }
}
