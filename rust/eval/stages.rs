//! Chains of `map`/`filter`/`remove` over one vector, run as one pass.
//!
//! `(map g (filter p xs))` builds the filtered vector only to walk it once more: over records
//! that is a reference-count increment per kept record, and a decrement (a cache miss on each
//! record again, on the background freeing thread) when the vector goes. A chain of two or more
//! such calls over a vector runs element by element instead, keeping only the last one's output.
//!
//! Interleaving the stages changes the order in which their functions are called: as written,
//! `p` sees every element before `g` sees any. A program can observe that order only through
//! effects (`println`, tool calls, `def`, parallel branches), through which error comes first,
//! through where its fuel runs out, and through the return type recorded for a named function
//! (the type of its last call). So the one pass is speculative: it refuses effects, it charges
//! its fuel (steps, and the walks of builtins) to the run only once it has succeeded, and it
//! records return types per stage, to
//! apply in the order the calls as written would; on a refusal or any error its work is
//! discarded and the chain runs call by call as written, which then decides the error. A pass
//! that succeeds leaves the value, the fuel spent and the return types the calls would have.

use std::sync::atomic::Ordering::Relaxed;

use smallvec::SmallVec;

use super::keywords::keyword_field;
use super::{at, Ctx, EvalResult, Interp, ReturnType};
use crate::builtins::{call1, Builtin};
use crate::error::{Error, Pos};
use crate::guard;
use crate::ir::{Node, StagesCall};
use crate::value::{BuiltinId, Value};

/// Whether a call of `b` with these arguments is one stage of a chain: `map` of one collection,
/// `filter` or `remove`.
pub(crate) fn is_stage(b: &Builtin, args: &[Node]) -> bool {
    args.len() == 2 && matches!(b.name, "map" | "filter" | "remove")
}

/// Whether `n` is a stage call (the collection argument of an outer stage continues the chain).
pub(crate) fn is_stage_call(n: &Node) -> bool {
    match n {
        Node::CallBuiltin(b, a, _) => is_stage(b, a),
        Node::Stages(_) => true,
        _ => false,
    }
}

/// One call of the chain, as written.
struct Level<'n> {
    builtin: BuiltinId,
    args: &'n [Node],
    pos: Pos,
}

/// What the interpreter's state was before a speculative pass, to undo it.
struct Saved {
    steps: u64,
    next_check: u64,
    /// The first of the pass's return-type tables (one per stage), and where returns went.
    tables: usize,
    target: Option<usize>,
}

impl Interp<'_> {
    /// Evaluates a `Node::Stages`: the arguments in the order the nested calls would, then the
    /// chain in one pass if it can be, else call by call. Never inlined: its locals would
    /// otherwise enlarge `eval_node`'s frame, which every nested evaluation pays in stack.
    #[inline(never)]
    pub(super) fn eval_stages(&mut self, chain: &StagesCall, ctx: &mut Ctx) -> EvalResult {
        // outermost first
        let mut levels: SmallVec<[Level; 4]> = SmallVec::new();
        levels.push(Level {
            builtin: chain.builtin,
            args: &chain.args,
            pos: chain.pos,
        });
        loop {
            let next = match &levels[levels.len() - 1].args[1] {
                Node::CallBuiltin(b, a, p) if is_stage(b, a) => Level {
                    builtin: *b,
                    args: a,
                    pos: *p,
                },
                Node::Stages(s) => Level {
                    builtin: s.builtin,
                    args: &s.args,
                    pos: s.pos,
                },
                _ => break,
            };
            levels.push(next);
        }
        // each call evaluates its function, then its collection (the next call in, which
        // counts as one evaluation step as `eval` would count it)
        let mut fns: SmallVec<[Value; 4]> = SmallVec::new();
        for i in 0..levels.len() {
            if i > 0 {
                if let Err(e) = self.tick() {
                    return self.decorate(Err(e), &levels[..i], ctx);
                }
            }
            match self.ev(&levels[i].args[0], ctx) {
                Ok(f) => fns.push(f),
                Err(e) => return self.decorate(Err(e), &levels[..=i], ctx),
            }
        }
        let source = match self.ev(&levels[levels.len() - 1].args[1], ctx) {
            Ok(v) => v,
            Err(e) => return self.decorate(Err(e), &levels, ctx),
        };
        if !chain.effects.load(Relaxed) {
            if let Some(v) = self.speculate(&levels, &fns, &source) {
                return Ok(v);
            }
            if self.refused.take() {
                chain.effects.store(true, Relaxed);
            }
        }
        // as written: innermost call first
        let mut v = source;
        for i in (0..levels.len()).rev() {
            let f = std::mem::take(&mut fns[i]);
            match self.call_builtin(levels[i].builtin, &mut [f, v]) {
                Ok(out) => v = out,
                Err(e) => return self.decorate(Err(e), &levels[..=i], ctx),
            }
        }
        Ok(v)
    }

    /// What each nested call adds to an error passing through it, innermost first.
    fn decorate(&mut self, mut r: EvalResult, levels: &[Level], ctx: &Ctx) -> EvalResult {
        for l in levels.iter().rev() {
            r = at(self.explain_nil(r, &l.builtin, l.args.iter(), ctx), l.pos);
        }
        r
    }

    /// The chain in one pass, if the source is a vector and every function one the calls would
    /// accept; `None` when it must run call by call (not applicable, or the pass failed).
    fn speculate(&mut self, levels: &[Level], fns: &[Value], source: &Value) -> Option<Value> {
        let Value::Vector(xs) = source else {
            return None;
        };
        if !fns.iter().all(|f| {
            matches!(
                f,
                Value::Keyword(_) | Value::Builtin(_) | Value::Closure(_) | Value::Native(_)
            )
        }) {
            return None;
        }
        // in the order applied: innermost first
        let stages: SmallVec<[(Stage, &Value); 4]> = levels
            .iter()
            .zip(fns)
            .rev()
            .map(|(l, f)| {
                let s = match l.builtin.name {
                    "map" => Stage::Map,
                    "filter" => Stage::Keep(true),
                    _ => Stage::Keep(false),
                };
                (s, f)
            })
            .collect();
        let saved = Saved {
            steps: self.steps,
            next_check: self.next_check,
            tables: self.pass_tables.len(),
            target: self.pass_target,
        };
        self.pass_tables
            .resize_with(saved.tables + stages.len(), Default::default);
        // walks inside the pass (`guard::charge`) are held back from the budget like its steps
        let walks = guard::hold_walks();
        self.speculating += 1;
        let r = self.one_pass(&stages, xs, saved.tables);
        self.speculating -= 1;
        self.pass_target = saved.target;
        let tables = self.pass_tables.split_off(saved.tables);
        walks.release(r.is_ok());
        match r {
            Ok(v) => {
                // as written, every call of a stage comes after every call of the stage
                // before it: the innermost stage's types first, each overwritten by the next
                for (k, t) in tables.into_iter().flatten() {
                    self.record_return((k, t));
                }
                Some(v)
            }
            Err(_) => {
                // the steps and walks were never charged to the budget (see `slow_check`)
                self.steps = saved.steps;
                self.next_check = saved.next_check;
                // nor does a note about the discarded error's nil
                self.nil_locals = None;
                None
            }
        }
    }

    /// Records the type a named function returned: in the current stage's table inside a
    /// speculative pass, else for the run.
    pub(super) fn record_return(&mut self, (key, t): (usize, ReturnType)) {
        match self.pass_target {
            Some(i) => self.pass_tables[i].insert(key, t),
            None => self.returns.insert(key, t),
        };
    }

    /// The pass; stage `i` records return types into `pass_tables[tables + i]`.
    fn one_pass(&mut self, stages: &[(Stage, &Value)], xs: &[Value], tables: usize) -> EvalResult {
        let mut out = Vec::new();
        'elements: for x in crate::value::prefetching(xs) {
            // the element as the current stage sees it: `x` itself until a map makes another
            let mut made: Option<Value> = None;
            for (i, &(stage, f)) in stages.iter().enumerate() {
                let v = made.as_ref().unwrap_or(x);
                let y = if let Value::Keyword(_) = f {
                    // a keyword stage charges each element it reads, as the call does
                    self.charge(1)?;
                    keyword_field(f, v)
                } else {
                    self.pass_target = Some(tables + i);
                    call1(self, f, v.clone())?
                };
                match stage {
                    Stage::Map => made = Some(y),
                    Stage::Keep(keep) => {
                        if y.truthy() != keep {
                            continue 'elements;
                        }
                    }
                }
            }
            out.push(made.unwrap_or_else(|| x.clone()));
        }
        Ok(Value::vector(out))
    }

    /// Refuses an effect while a pass is speculative (the chain then runs call by call, where
    /// the effect happens in its place).
    #[inline]
    pub(crate) fn refuse_effect(&self) -> EvalResult<()> {
        if self.speculating > 0 {
            self.refused.set(true);
            return Err(Error::exec("an effect inside a speculative pass").into());
        }
        Ok(())
    }
}

#[derive(Clone, Copy)]
enum Stage {
    Map,
    /// `filter` (true) or `remove` (false): keeps the elements whose test is this.
    Keep(bool),
}
