//! The IR evaluator. Limits (fuel, wall clock, depth, sizes) are checked on the evaluation path;
//! user-function calls grow the native stack on demand, so depth is bounded by the limit, never
//! by the thread's stack size.
//!
//! This file holds the interpreter's state and the walk over IR nodes; the rest is in modules
//! named for what they hold: `calls` (builtins, closures, `apply`), `binding` (destructuring),
//! `host` (tools and their records), `metering` (the budget's checks), `branches`
//! (`pmap`/`pcalls` threads), `keywords` (keywords as functions), `nil_hints` (errors that
//! say where a nil came from) and `nil_sources` (why a nil is nil, read again).
//!
//! Why one file over 600 lines: `eval_node` is one match over the IR, kept whole so the hot
//! path reads (and inlines) as one function.

use std::hash::BuildHasherDefault;
use std::sync::Arc;
use std::time::Instant;

use smallvec::SmallVec;

use crate::error::{Error, ErrorKind, LimitName, Pos};
use crate::guard::{self, Budget};
use crate::ir::{CaptureSrc, Def, Doseq, GlobalRef, Lambda, Node, Program, WhereNode};
use crate::limits::Limits;
use crate::value::{flex_get, num_cmp, Closure, Native, Str, TypeTag, Value, ValueMap, ValueSet};

mod binding;
mod branches;
mod calls;
mod host;
mod keywords;
mod metering;
mod nil_hints;
mod nil_sources;
mod stages;
mod tape;

pub use host::{
    system_now_ms, Definition, Host, NoTools, ToolCallRecord, ToolCtx, ToolFailure, UserNs,
};
pub use keywords::keyword_field;
use keywords::{keyword_get, keyword_ref};
use metering::CHECK_EVERY;
use nil_hints::{undefined_user, NilLocals};
pub(crate) use stages::{is_stage, is_stage_call};
pub use tape::{recordable, Entry, Gate, How, PendingCall, Recorded, Tape};

pub type Args = SmallVec<[Value; 4]>;

/// Non-local control flow: an error, or `return`/`fail`/`recur` unwinding to their target.
///
/// One pointer wide (`None` is `recur`, whose new values wait in `Interp::recur_args`), so an
/// `EvalResult` is 16 bytes and comes back in two registers instead of through memory.
pub struct Flow(Option<Box<FlowKind>>);

pub enum FlowKind {
    Error(Error),
    Return(Value),
    Fail(Value),
    /// The run stopped at a call that waits for the host (the calls are in the run's tape).
    Pending,
}

impl Flow {
    pub const RECUR: Flow = Flow(None);

    pub fn ret(v: Value) -> Flow {
        Flow(Some(Box::new(FlowKind::Return(v))))
    }
    pub fn fail(v: Value) -> Flow {
        Flow(Some(Box::new(FlowKind::Fail(v))))
    }
    pub fn pending() -> Flow {
        Flow(Some(Box::new(FlowKind::Pending)))
    }
    pub fn is_pending(&self) -> bool {
        matches!(self.0.as_deref(), Some(FlowKind::Pending))
    }
    pub fn is_recur(&self) -> bool {
        self.0.is_none()
    }
    pub fn is_return_or_fail(&self) -> bool {
        matches!(
            self.0.as_deref(),
            Some(FlowKind::Return(_) | FlowKind::Fail(_))
        )
    }
    pub fn error_mut(&mut self) -> Option<&mut Error> {
        match self.0.as_deref_mut() {
            Some(FlowKind::Error(e)) => Some(e),
            _ => None,
        }
    }
    /// `None` for `recur`.
    pub fn into_kind(self) -> Option<FlowKind> {
        self.0.map(|b| *b)
    }
}

impl From<Error> for Flow {
    fn from(e: Error) -> Flow {
        Flow(Some(Box::new(FlowKind::Error(e))))
    }
}

pub type EvalResult<T = Value> = std::result::Result<T, Flow>;

/// `Some(ordering)` when both are numbers (`None` inside for a NaN); `None` otherwise.
#[inline]
fn compare_numbers(x: &Value, y: &Value) -> Option<Option<std::cmp::Ordering>> {
    match (x, y) {
        (Value::Int(a), Value::Int(b)) => Some(Some(a.cmp(b))),
        (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => Some(num_cmp(x, y)),
        _ => None,
    }
}

fn at(r: EvalResult, pos: Pos) -> EvalResult {
    r.map_err(|mut f| {
        if let Some(e) = f.error_mut() {
            if e.pos.is_none() {
                e.pos = Some(pos);
            }
        }
        f
    })
}

/// Per-frame evaluation context: where the frame's slots start, its captures and its loop count.
pub struct Ctx<'c> {
    pub base: usize,
    pub caps: &'c [Value],
    pub loops: u64,
}

/// A named function and the type of the last value it returned in a run.
type ReturnType = (Arc<Closure>, TypeTag);

pub struct Interp<'a> {
    host: &'a dyn Host,
    /// The run's budget, shared with every branch of the run.
    budget: &'a Budget,
    data: &'a Value,
    user: UserNs,
    history: &'a [Value],
    limits: Limits,
    prints: Vec<String>,
    /// Notes for the host (not the program): `data/` names read that are not in the input.
    warnings: Vec<String>,
    tool_calls: Vec<ToolCallRecord>,
    defined: Vec<Str>,
    /// Type of the last value each named function returned in this run.
    returns: ReturnTable,
    stack: Vec<Value>,
    recur_args: Args,
    /// Set by `RecurTo`, which assigned the loop's slots itself.
    recur_bound: bool,
    /// Steps this interpreter evaluated, and how many of them it already charged to the budget.
    steps: u64,
    charged: u64,
    next_check: u64,
    /// The run's deadline, or a parallel branch's own (earlier) one.
    deadline: Instant,
    depth: usize,
    /// Nesting of `eval` calls, for the periodic native-stack check.
    nest: usize,
    output_bytes: usize,
    /// Nesting of speculative passes (`stages.rs`): while above zero, effects are refused.
    speculating: u32,
    /// Set when an effect was refused (the pass that failed then remembers its chain has them).
    refused: std::cell::Cell<bool>,
    /// Return types recorded inside speculative passes, one table per stage of each pass;
    /// `pass_target` is the table the current call records into (`None`: `returns`).
    pass_tables: Vec<ReturnTable>,
    pass_target: Option<usize>,
    /// The record this run is answered from and adds to (`tape.rs`); none for runs that
    /// cannot stop (checks, throwaway runs).
    tape: Option<&'a Tape>,
    /// This interpreter's place among the run's parallel branches (`""` for the run itself,
    /// `"2.0."` for branch 0 of its call number 2), and its count of tool calls and forks,
    /// and of clock readings: together they make the ids of its calls.
    prefix: Str,
    seq: u32,
    clock_seq: u32,
    /// Where the tool call being made is written (a call through a tool value: unknown).
    site: Option<Pos>,
    /// Locals the nil of the error unwinding may have come from (`nil_hints.rs`).
    nil_locals: Option<Box<NilLocals>>,
}

pub use crate::limits::BRANCH_TIMEOUT_MS;

thread_local! {
    /// Tool calls of interpreters unwound by a panic or an abort (a limit met inside an
    /// allocation): `session::execute` gives them to the failed run's Result, so a call that
    /// was made is never left out of the record.
    static SALVAGED: std::cell::RefCell<Vec<ToolCallRecord>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// The tool calls of interpreters unwound on this thread since the last take.
pub fn take_salvaged() -> Vec<ToolCallRecord> {
    SALVAGED
        .try_with(|s| std::mem::take(&mut *s.borrow_mut()))
        .unwrap_or_default()
}

impl Drop for Interp<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() && !self.tool_calls.is_empty() {
            let calls = std::mem::take(&mut self.tool_calls);
            let _ = SALVAGED.try_with(|s| {
                if let Ok(mut kept) = s.try_borrow_mut() {
                    kept.extend(calls);
                }
            });
        }
    }
}

/// Return types by function (its closure's address). Addresses are not the program's to
/// choose, so fixed hash keys do: a table costs nothing to make, once per run and per stage.
type ReturnTable = std::collections::HashMap<usize, ReturnType, BuildHasherDefault<ahash::AHasher>>;

/// What a finished run leaves behind, taken from its interpreter.
pub struct RunRecords {
    pub prints: Vec<String>,
    pub warnings: Vec<String>,
    pub tool_calls: Vec<ToolCallRecord>,
    /// Names defined, each once, in the order first defined.
    pub defined: Vec<Str>,
    /// The user namespace as the run left it.
    pub user: UserNs,
    /// The last return type of each function the run called.
    pub returns: Vec<(Arc<Closure>, TypeTag)>,
}

impl<'a> Interp<'a> {
    /// The run's host (its tools and their catalogue).
    pub fn host(&self) -> &'a dyn Host {
        self.host
    }

    /// The run's limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The tool calls recorded so far, taken (a branch hands them to its parent).
    pub fn take_tool_calls(&mut self) -> Vec<ToolCallRecord> {
        std::mem::take(&mut self.tool_calls)
    }

    /// What the run leaves behind: its output, tool calls, definitions and return types.
    pub fn take_records(&mut self) -> RunRecords {
        let mut defined: Vec<Str> = Vec::new();
        for d in self.defined.drain(..) {
            if !defined.contains(&d) {
                defined.push(d);
            }
        }
        RunRecords {
            prints: std::mem::take(&mut self.prints),
            warnings: std::mem::take(&mut self.warnings),
            tool_calls: self.take_tool_calls(),
            defined,
            user: self.user.clone(),
            returns: self.returns.drain().map(|(_, v)| v).collect(),
        }
    }

    pub fn new(
        host: &'a dyn Host,
        budget: &'a Budget,
        data: &'a Value,
        user: UserNs,
        history: &'a [Value],
    ) -> Self {
        let limits = budget.limits;
        Interp {
            host,
            budget,
            data,
            user,
            history,
            limits,
            prints: Vec::new(),
            warnings: Vec::new(),
            tool_calls: Vec::new(),
            defined: Vec::new(),
            returns: ReturnTable::default(),
            // grown by the first frame: a tiny program should not pay for a deep one's stack
            stack: Vec::new(),
            recur_args: Args::new(),
            recur_bound: false,
            steps: 0,
            charged: 0,
            next_check: CHECK_EVERY.min(budget.fuel_left()),
            deadline: budget.deadline,
            depth: 0,
            nest: 0,
            output_bytes: 0,
            speculating: 0,
            refused: Default::default(),
            pass_tables: Vec::new(),
            pass_target: None,
            tape: None,
            prefix: Str::from(""),
            seq: 0,
            clock_seq: 0,
            site: None,
            nil_locals: None,
        }
    }

    /// Answers from and adds to `tape` (set in place: the interpreter is a large value, and
    /// moving it through a builder cost a copy of it per run).
    pub fn set_tape(&mut self, tape: Option<&'a Tape>) {
        self.tape = tape;
    }

    pub fn run_program(&mut self, prog: &Program) -> EvalResult {
        let base = self.stack.len();
        self.stack
            .resize(base + prog.frame_size as usize, Value::Nil);
        let mut ctx = Ctx {
            base,
            caps: &[],
            loops: 0,
        };
        let mut last = Value::Nil;
        let mut result = Ok(Value::Nil);
        for node in &prog.body {
            match self.ev(node, &mut ctx) {
                Ok(v) => last = v,
                Err(f) => {
                    result = Err(f);
                    break;
                }
            }
        }
        self.stack.truncate(base);
        result.map(|_| last)
    }

    // ---- limits ----

    // ---- evaluation ----

    /// Leaves (constants and locals) are evaluated inline, without a call: they are most of
    /// the nodes, and a call returns its result through memory.
    #[inline(always)]
    pub fn ev(&mut self, node: &Node, ctx: &mut Ctx) -> EvalResult {
        match node {
            Node::Const(v) => Ok(v.clone()),
            Node::Local(s) => Ok(self.stack[ctx.base + *s as usize].clone()),
            Node::MoveLocal(s) => Ok(std::mem::take(&mut self.stack[ctx.base + *s as usize])),
            _ => self.eval(node, ctx),
        }
    }

    pub fn eval(&mut self, node: &Node, ctx: &mut Ctx) -> EvalResult {
        self.tick()?;
        // Every 32 nested evaluations, make sure enough native stack is left (growing it on the
        // heap if not): deep programs and deep recursion never overflow the host's stack. The
        // first evaluation of every interpreter checks too: a parallel branch run on the calling
        // thread starts a new interpreter, and recursion through such branches never reached 32.
        self.nest += 1;
        let r = if self.nest % 32 == 1 {
            guard::deeper(|| self.eval_node(node, ctx))
        } else {
            self.eval_node(node, ctx)
        };
        self.nest -= 1;
        r
    }

    fn eval_node(&mut self, node: &Node, ctx: &mut Ctx) -> EvalResult {
        match node {
            Node::Const(v) => Ok(v.clone()),
            Node::Local(s) => Ok(self.stack[ctx.base + *s as usize].clone()),
            Node::MoveLocal(s) => Ok(std::mem::take(&mut self.stack[ctx.base + *s as usize])),
            Node::Capture(i) => Ok(ctx.caps[*i as usize].clone()),
            Node::Global(g) => self.resolve_global(g),
            Node::UserRef(name, pos) => match self.user.get(name) {
                Some(d) => Ok(d.value.clone()),
                None => Err(undefined_user(name, *pos)),
            },
            Node::DataRef(k) => Ok(match self.data_get(k) {
                Some(v) => v.clone(),
                None => {
                    self.missing_data(k);
                    Value::Nil
                }
            }),
            Node::ToolFn(t, _) => Ok(Value::Tool(t.clone())),
            Node::History(i) => Ok(self.history.get(i - 1).cloned().unwrap_or(Value::Nil)),
            Node::If(b) => {
                if self.ev(&b.0, ctx)?.truthy() {
                    self.ev(&b.1, ctx)
                } else {
                    self.ev(&b.2, ctx)
                }
            }
            Node::Do(items) => {
                let mut last = Value::Nil;
                for it in items.iter() {
                    last = self.ev(it, ctx)?;
                }
                Ok(last)
            }
            Node::And(items) => {
                let mut last = Value::Bool(true);
                for it in items.iter() {
                    last = self.ev(it, ctx)?;
                    if !last.truthy() {
                        return Ok(last);
                    }
                }
                Ok(last)
            }
            Node::Or(items) => {
                let mut last = Value::Nil;
                for it in items.iter() {
                    last = self.ev(it, ctx)?;
                    if last.truthy() {
                        return Ok(last);
                    }
                }
                Ok(last)
            }
            Node::Let(l) => {
                for (p, init) in &l.bindings {
                    let v = match self.ev(init, ctx) {
                        Ok(v) => v,
                        Err(f) => return self.explain_nil_local(f, l, init, ctx),
                    };
                    self.bind(p, v, ctx.base)?;
                }
                match self.ev(&l.body, ctx) {
                    Err(f) if self.nil_locals.is_some() => {
                        self.explain_nil_local(f, l, &l.body, ctx)
                    }
                    r => r,
                }
            }
            Node::Loop(l) => {
                for (p, init) in &l.bindings {
                    let v = self.ev(init, ctx)?;
                    self.bind(p, v, ctx.base)?;
                }
                loop {
                    match self.ev(&l.body, ctx) {
                        Err(f) if f.is_recur() && self.recur_bound => {
                            self.recur_bound = false;
                            self.count_loop(ctx)?;
                        }
                        Err(f) if f.is_recur() => {
                            let vals = std::mem::take(&mut self.recur_args);
                            self.count_loop(ctx)?;
                            for ((p, _), v) in l.bindings.iter().zip(vals) {
                                self.bind(p, v, ctx.base)?;
                            }
                        }
                        other => return other,
                    }
                }
            }
            Node::RecurTo(args, slots) => {
                // evaluate every argument before assigning any: they may read the old values
                match &**args {
                    [a] => {
                        let v = self.ev(a, ctx)?;
                        self.stack[ctx.base + slots[0] as usize] = v;
                    }
                    _ => {
                        let vals = self.eval_args(args, ctx)?;
                        for (s, v) in slots.iter().zip(vals) {
                            self.stack[ctx.base + *s as usize] = v;
                        }
                    }
                }
                self.recur_bound = true;
                Err(Flow::RECUR)
            }
            Node::Recur(args) => {
                self.recur_args = self.eval_args(args, ctx)?;
                Err(Flow::RECUR)
            }
            Node::MakeFn(lambda, caps) => Ok(self.make_fn(lambda, caps, ctx)),
            Node::Def(d) => self.def(d, ctx),
            Node::VecLit(_) | Node::SetLit(_) | Node::MapLit(..) => self.literal(node, ctx),
            Node::Where(w) => self.make_where(w, ctx),
            Node::Call(c) => {
                let f = self.ev(&c.f, ctx)?;
                let r = self.with_args(&c.args, ctx, |it, a| it.apply(&f, a));
                if matches!(f, Value::Nil) && r.is_err() {
                    return at(self.explain_nil_call(r, &c.f, &c.args, ctx), c.pos);
                }
                at(r, c.pos)
            }
            Node::CallBuiltin(b, args, pos) => {
                let r = self.with_args(args, ctx, |it, a| it.call_builtin(*b, a));
                if r.is_err() {
                    return at(self.explain_nil(r, b, args, ctx), *pos);
                }
                r
            }
            Node::Stages(s) => self.eval_stages(s, ctx),
            Node::Compare(b, xy, pos) => {
                let x = self.ev(&xy.0, ctx)?;
                let y = self.ev(&xy.1, ctx)?;
                if let Some(o) = compare_numbers(&x, &y) {
                    return Ok(Value::Bool(match b.name {
                        "<" => o == Some(std::cmp::Ordering::Less),
                        ">" => o == Some(std::cmp::Ordering::Greater),
                        "<=" => matches!(
                            o,
                            Some(std::cmp::Ordering::Less | std::cmp::Ordering::Equal)
                        ),
                        _ => matches!(
                            o,
                            Some(std::cmp::Ordering::Greater | std::cmp::Ordering::Equal)
                        ),
                    }));
                }
                let r = self.call_builtin(*b, &mut [x, y]);
                let r = match r {
                    Ok(v) => Ok(v),
                    Err(f) => self.explain_nil(Err(f), b, [&xy.0, &xy.1], ctx),
                };
                at(r, *pos)
            }
            Node::CallTool(name, args, pos) => {
                let r = self.with_args(args, ctx, |it, a| {
                    it.site = Some(*pos);
                    it.call_tool(name, a)
                });
                at(r, *pos)
            }
            Node::KwGet(k, args, pos) => {
                if let Some((reads, slot)) = field_chain(args) {
                    // read the field in place: no clone (and no refcount traffic) of the map,
                    // nor of the maps between in a chain like (:tier (:customer o)); each
                    // inner read still counts as the step its evaluation would have been
                    for _ in 0..reads.len() {
                        self.tick()?;
                    }
                    let mut m = &self.stack[ctx.base + slot as usize];
                    for (k, pos) in reads.iter().rev() {
                        m = keyword_ref(k, m).map_err(|e| Flow::from(e.at(*pos)))?;
                    }
                    return keyword_get(k, m, None).map_err(|e| Flow::from(e.at(*pos)));
                }
                let m = self.ev(&args[0], ctx)?;
                let default = match args.get(1) {
                    Some(d) => Some(self.ev(d, ctx)?),
                    None => None,
                };
                keyword_get(k, &m, default).map_err(|e| Flow::from(e.at(*pos)))
            }
            Node::CallGlobal(g, args) => {
                let f = self.resolve_global(g)?;
                let r = self.with_args(args, ctx, |it, a| it.apply(&f, a));
                at(r, g.pos)
            }
            Node::Return(v) => {
                let v = self.ev(v, ctx)?;
                Err(Flow::ret(v))
            }
            Node::Fail(v) => {
                let v = self.ev(v, ctx)?;
                Err(Flow::fail(v))
            }
            Node::Doseq(d) => {
                self.doseq(d, 0, ctx)?;
                Ok(Value::Nil)
            }
        }
    }

    #[inline(never)]
    fn make_fn(&mut self, lambda: &Arc<Lambda>, caps: &[CaptureSrc], ctx: &mut Ctx) -> Value {
        let captured: Box<[Value]> = caps
            .iter()
            .map(|c| match c {
                CaptureSrc::Local(s) => self.stack[ctx.base + *s as usize].clone(),
                CaptureSrc::Capture(i) => ctx.caps[*i as usize].clone(),
            })
            .collect();
        Value::Closure(Arc::new(Closure::new(lambda.clone(), captured)))
    }

    #[inline(never)]
    fn def(&mut self, d: &Def, ctx: &mut Ctx) -> EvalResult {
        self.refuse_effect()?;
        let value = self.ev(&d.value, ctx)?;
        let ns = Arc::make_mut(&mut self.user);
        ns.insert(
            d.name.clone(),
            Definition {
                value,
                doc: d.doc.clone(),
            },
        );
        self.defined.push(d.name.clone());
        Ok(Value::Var(d.name.clone()))
    }

    #[inline(never)]
    fn literal(&mut self, node: &Node, ctx: &mut Ctx) -> EvalResult {
        match node {
            Node::VecLit(items) => {
                let mut out = Vec::with_capacity(items.len());
                for it in items.iter() {
                    out.push(self.ev(it, ctx)?);
                }
                Ok(Value::vector(out))
            }
            Node::SetLit(items) => {
                let mut out = ValueSet::default();
                for it in items.iter() {
                    out.insert(self.ev(it, ctx)?);
                }
                Ok(Value::set(out))
            }
            Node::MapLit(pairs, _, Some(shape)) => {
                let mut vals = Vec::with_capacity(pairs.len());
                for (_, v) in pairs.iter() {
                    vals.push(self.ev(v, ctx)?);
                }
                Ok(Value::Map(crate::map::MapData::record(
                    shape.clone(),
                    vals.into_iter(),
                )))
            }
            Node::MapLit(pairs, _, None) => {
                let mut out = ValueMap::default();
                for (k, v) in pairs.iter() {
                    let k = self.ev(k, ctx)?;
                    let v = self.ev(v, ctx)?;
                    out.insert(k, v);
                }
                Ok(Value::map(out))
            }
            _ => Ok(Value::Nil),
        }
    }

    #[inline(never)]
    fn make_where(&mut self, w: &WhereNode, ctx: &mut Ctx) -> EvalResult {
        let value = match &w.value {
            Some(n) => self.ev(n, ctx)?,
            None => Value::Nil,
        };
        Ok(Value::Native(Arc::new(Native::Where {
            path: w.path.clone(),
            op: w.op,
            value,
        })))
    }

    /// Evaluates call arguments into a small array on the stack (no heap, few moves) and passes
    /// them to `f` as a mutable slice, so the callee can take ownership of each value.
    #[inline(always)]
    fn with_args(
        &mut self,
        nodes: &[Node],
        ctx: &mut Ctx,
        f: impl FnOnce(&mut Self, &mut [Value]) -> EvalResult,
    ) -> EvalResult {
        match nodes {
            [] => f(self, &mut []),
            [a] => {
                let a = self.ev(a, ctx)?;
                f(self, &mut [a])
            }
            [a, b] => {
                let a = self.ev(a, ctx)?;
                let b = self.ev(b, ctx)?;
                f(self, &mut [a, b])
            }
            [a, b, c] => {
                let a = self.ev(a, ctx)?;
                let b = self.ev(b, ctx)?;
                let c = self.ev(c, ctx)?;
                f(self, &mut [a, b, c])
            }
            _ => {
                let mut v = self.eval_args(nodes, ctx)?;
                f(self, &mut v)
            }
        }
    }

    fn eval_args(&mut self, args: &[Node], ctx: &mut Ctx) -> EvalResult<Args> {
        let mut out = Args::with_capacity(args.len());
        for a in args {
            out.push(self.ev(a, ctx)?);
        }
        Ok(out)
    }

    fn count_loop(&mut self, ctx: &mut Ctx) -> EvalResult<()> {
        ctx.loops += 1;
        if ctx.loops > self.limits.loop_limit {
            return Err(Error::limit(
                ErrorKind::LoopLimitExceeded,
                LimitName::Loop,
                format!(
                    "loop iteration limit of {} exceeded",
                    self.limits.loop_limit
                ),
            )
            .with_hint("check the loop's exit condition; recur must move toward it")
            .into());
        }
        Ok(())
    }

    fn doseq(&mut self, d: &Doseq, i: usize, ctx: &mut Ctx) -> EvalResult<()> {
        let Some((pat, coll)) = d.bindings.get(i) else {
            self.ev(&d.body, ctx)?;
            return Ok(());
        };
        let coll = self.ev(coll, ctx)?;
        let items = crate::builtins::seq_items(&coll).map_err(|e| Flow::from(e.at(d.pos)))?;
        for item in items {
            self.count_loop(ctx)?;
            self.bind(pat, item, ctx.base)?;
            self.doseq(d, i + 1, ctx)?;
        }
        Ok(())
    }

    // ---- names ----

    pub fn data_get(&self, key: &str) -> Option<&'a Value> {
        let data: &'a Value = self.data;
        match data {
            Value::Map(m) => flex_get(m, &Value::Keyword(Str::from(key))),
            _ => None,
        }
    }

    fn resolve_global(&self, g: &GlobalRef) -> EvalResult {
        if let Some(d) = self.user.get(&g.name) {
            return Ok(d.value.clone());
        }
        let is_tool = self.host.has_tool(&g.name);
        let data = self.data_get(&g.name);
        match (is_tool, data) {
            (true, Some(_)) => Err(Error::new(
                ErrorKind::AmbiguousReference,
                format!("{0} is ambiguous: both tool/{0} and data/{0} exist", g.name),
            )
            .at(g.pos)
            .with_hint(format!(
                "write tool/{0} to call the tool or data/{0} to read the input",
                g.name
            ))
            .into()),
            (true, None) => Ok(Value::Tool(g.name.clone())),
            (false, Some(v)) => Ok(v.clone()),
            (false, None) => Err(self.undefined(g).into()),
        }
    }

    // ---- calls ----
}

/// Reads in one chain that are done in place; a longer chain is evaluated the usual way down
/// to its last reads, so finding chains stays linear in the program's nesting.
const CHAIN: usize = 8;

/// The inner reads of a chain (keyword and position), outermost first.
type Reads<'n> = SmallVec<[(&'n Value, Pos); CHAIN]>;

/// The inner reads and the local slot of `(:k (:j ... local))`, given the outer read's
/// arguments: `None` when there is a default or the chain does not end in a local.
fn field_chain(args: &[Node]) -> Option<(Reads<'_>, u32)> {
    let [first] = args else { return None };
    let mut at = first;
    let mut reads = SmallVec::new();
    loop {
        match at {
            Node::Local(s) | Node::MoveLocal(s) => return Some((reads, *s)),
            Node::KwGet(k, inner, pos) if reads.len() < CHAIN => {
                let [next] = &inner[..] else { return None };
                reads.push((k, *pos));
                at = next;
            }
            _ => return None,
        }
    }
}
