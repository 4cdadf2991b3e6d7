//! The IR evaluator. Limits (fuel, wall clock, depth, sizes) are checked on the evaluation path;
//! user-function calls grow the native stack on demand, so depth is bounded by the limit, never
//! by the thread's stack size.

use std::sync::Arc;
use std::time::{Duration, Instant};

use indexmap::IndexMap;
use smallvec::SmallVec;

use crate::error::{Error, ErrorKind, LimitName, Pos};
use crate::guard::{self, Budget};
use crate::hints;
use crate::ir::*;
use crate::limits::Limits;
#[allow(unused_imports)]
use crate::value::Str;
use crate::value::*;

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
}

impl Flow {
    pub const RECUR: Flow = Flow(None);

    pub fn ret(v: Value) -> Flow {
        Flow(Some(Box::new(FlowKind::Return(v))))
    }
    pub fn fail(v: Value) -> Flow {
        Flow(Some(Box::new(FlowKind::Fail(v))))
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

#[cold]
fn undefined_user(name: &str, pos: Pos) -> Flow {
    Error::new(
        ErrorKind::UndefinedVariable,
        format!("user/{name} is not defined"),
    )
    .at(pos)
    .into()
}

/// `(:k m default?)`: flexible lookup in a map; nil gives the default; anything else is an error.
#[inline]
pub fn keyword_get(k: &Value, m: &Value, default: Option<Value>) -> Result<Value, Error> {
    match m {
        Value::Map(map) => match flex_get(map, k) {
            Some(v) => Ok(v.clone()),
            None => Ok(default.unwrap_or_default()),
        },
        Value::Nil => Ok(default.unwrap_or_default()),
        other => Err(keyword_type_error(k, other)),
    }
}

/// A keyword used as the function of a collection builtin: nil for non-map elements (§7.0).
#[inline]
pub fn keyword_field(k: &Value, m: &Value) -> Value {
    match m {
        Value::Map(map) => match flex_get(map, k) {
            Some(v) => v.clone(),
            None => Value::Nil,
        },
        _ => Value::Nil,
    }
}

#[cold]
fn keyword_type_error(k: &Value, other: &Value) -> Error {
    let name = match k {
        Value::Keyword(s) => s.to_string(),
        _ => String::new(),
    };
    let e = Error::type_err(format!(
        "(:{name} ...) expects a map, got {}",
        other.describe()
    ));
    if matches!(other, Value::Vector(_)) {
        e.with_hint(format!(
            "to get :{name} from every map in a list use (map :{name} coll) or (pluck :{name} coll)"
        ))
    } else {
        e
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

/// Gives an error of `kind` the hint `explain` finds, if it finds one.
fn with_hint_if(
    r: EvalResult,
    kind: ErrorKind,
    explain: impl FnOnce(&Error) -> Option<String>,
) -> EvalResult {
    r.map_err(|mut flow| {
        if let Some(e) = flow.error_mut() {
            if e.kind == kind {
                if let Some(h) = explain(e) {
                    e.hint = Some(h);
                }
            }
        }
        flow
    })
}

/// A short printed form of a key, for hints.
fn printed(v: &Value) -> String {
    crate::format::to_clojure(v, Some(3), Some(40)).0
}

/// The text of a keyword or string map key.
fn key_text(k: &Value) -> Option<&str> {
    match k {
        Value::Keyword(s) | Value::Str(s) => Some(s),
        _ => None,
    }
}

/// Why a tool call produced no value.
pub enum ToolFailure {
    /// The tool failed (the message is shown to the LLM); the run goes on.
    Failed(String),
    /// The tool was called with arguments it does not take: the message says which, the hint
    /// what it takes. The run goes on.
    Misused { message: String, hint: String },
    /// The run must end now (its deadline passed, it was cancelled, or the host was
    /// interrupted while the tool ran); the call is abandoned and its eventual result discarded.
    Stopped(Error),
}

impl ToolFailure {
    pub fn failed(message: impl Into<String>) -> Self {
        ToolFailure::Failed(message.into())
    }
}

/// What a tool call may need to know about the run it belongs to.
pub struct ToolCtx<'c> {
    pub budget: &'c Budget,
    /// When the calling thread must stop waiting (the run's deadline, or its branch's).
    pub deadline: Instant,
}

/// What the interpreter needs from its host: the tools.
pub trait Host: Sync {
    fn has_tool(&self, name: &str) -> bool;
    fn tool_names(&self) -> Vec<String>;
    fn call_tool(
        &self,
        name: &str,
        args: &[Value],
        ctx: &ToolCtx<'_>,
    ) -> std::result::Result<Value, ToolFailure>;
    /// Runs a thread's share of the run's work (a parallel branch's thread), giving the host a
    /// chance to prepare the thread once for the tool calls it will make.
    fn thread_scope(&self, work: &mut (dyn FnMut() + Send)) {
        work()
    }
}

pub struct NoTools;

impl Host for NoTools {
    fn has_tool(&self, _: &str) -> bool {
        false
    }
    fn tool_names(&self) -> Vec<String> {
        Vec::new()
    }
    fn call_tool(
        &self,
        name: &str,
        _: &[Value],
        _: &ToolCtx<'_>,
    ) -> std::result::Result<Value, ToolFailure> {
        Err(ToolFailure::failed(format!("no tool {name}")))
    }
}

#[derive(Clone)]
pub struct Definition {
    pub value: Value,
    pub doc: Option<Str>,
}

pub type UserNs = Arc<IndexMap<Str, Definition, RandomState>>;

pub struct ToolCallRecord {
    pub name: Str,
    pub args: Vec<Value>,
    pub result: Option<Value>,
    pub error: Option<String>,
    pub duration: Duration,
    /// Still running when the run ended: its result, if it ever comes, is discarded.
    pub abandoned: bool,
}

/// Per-frame evaluation context: where the frame's slots start, its captures and its loop count.
pub struct Ctx<'c> {
    pub base: usize,
    pub caps: &'c [Value],
    pub loops: u64,
}

pub struct Interp<'a> {
    pub host: &'a dyn Host,
    /// The run's budget, shared with every branch of the run.
    pub budget: &'a Budget,
    pub data: &'a Value,
    pub user: UserNs,
    pub history: &'a [Value],
    pub limits: Limits,
    pub prints: Vec<String>,
    pub tool_calls: Vec<ToolCallRecord>,
    pub defined: Vec<Str>,
    /// Type of the last value each named function returned in this run.
    pub returns: ahash::AHashMap<usize, (Arc<Closure>, TypeTag)>,
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
}

const CHECK_EVERY: u64 = 1024;

pub use crate::limits::BRANCH_TIMEOUT_MS;

/// A snapshot of the run for one parallel branch (everything is shared, nothing copied).
#[derive(Clone)]
pub struct BranchEnv<'a> {
    host: &'a dyn Host,
    pub budget: &'a Budget,
    data: &'a Value,
    user: UserNs,
    history: &'a [Value],
    deadline: Instant,
    depth: usize,
}

impl<'a> BranchEnv<'a> {
    pub fn host(&self) -> &'a dyn Host {
        self.host
    }

    /// When the branches must end (the run's deadline, or the branch time limit if sooner).
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// A fresh interpreter for one branch: the namespace snapshot, its own stack, prints,
    /// definitions and counters; the branch's deadline.
    pub fn interp(&self) -> Interp<'a> {
        let mut it = Interp::new(
            self.host,
            self.budget,
            self.data,
            self.user.clone(),
            self.history,
        );
        it.deadline = self.deadline;
        it.depth = self.depth;
        it
    }
}

impl<'a> Interp<'a> {
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
            tool_calls: Vec::new(),
            defined: Vec::new(),
            returns: ahash::AHashMap::new(),
            stack: Vec::with_capacity(256),
            recur_args: Args::new(),
            recur_bound: false,
            steps: 0,
            charged: 0,
            next_check: CHECK_EVERY.min(budget.fuel_left()),
            deadline: budget.deadline,
            depth: 0,
            nest: 0,
            output_bytes: 0,
        }
    }

    /// Adds the steps not yet charged to the run's budget (the budget then knows all the work).
    pub fn publish_steps(&mut self) {
        self.budget.add_fuel(self.steps - self.charged);
        self.charged = self.steps;
    }

    /// What a parallel branch needs to start its own interpreter on another thread.
    pub fn branch_env(&mut self) -> BranchEnv<'a> {
        self.publish_steps();
        let branch_deadline = Instant::now() + Duration::from_millis(BRANCH_TIMEOUT_MS);
        BranchEnv {
            host: self.host,
            budget: self.budget,
            data: self.data,
            user: self.user.clone(),
            history: self.history,
            deadline: self.deadline.min(branch_deadline),
            depth: self.depth,
        }
    }

    /// Adds a finished branch's tool calls to this run (its steps are in the shared budget).
    pub fn absorb_branch(&mut self, tool_calls: Vec<ToolCallRecord>) -> EvalResult<()> {
        self.tool_calls.extend(tool_calls);
        self.next_check = self.steps; // the budget changed: check it at the next step
        Ok(())
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

    #[inline]
    fn tick(&mut self) -> EvalResult<()> {
        self.steps += 1;
        if self.steps >= self.next_check {
            self.slow_check()?;
        }
        Ok(())
    }

    /// Bytes this run has allocated so far (all its threads), against `max_memory`.
    pub fn check_memory(&self) -> EvalResult<()> {
        Ok(self.budget.check_memory(0)?)
    }

    /// Checks that `bytes` more can be allocated before a builtin allocates them at once, so a
    /// large allocation fails before it happens instead of after.
    pub fn reserve(&self, bytes: usize) -> EvalResult<()> {
        Ok(self.budget.check_memory(bytes)?)
    }

    /// Charges native work (elements a builtin walks or builds) to the same step budget, so
    /// fuel bounds `(sort (range 1000000))` as it bounds an interpreted loop.
    #[inline]
    pub fn charge(&mut self, elements: usize) -> EvalResult<()> {
        self.steps = self.steps.saturating_add(elements as u64);
        if self.steps >= self.next_check {
            self.slow_check()?;
        }
        Ok(())
    }

    #[cold]
    fn slow_check(&mut self) -> EvalResult<()> {
        let total = self.budget.add_fuel(self.steps - self.charged);
        self.charged = self.steps;
        if total >= self.limits.fuel {
            return Err(self.budget.stop(guard::fuel_error(self.limits.fuel)).into());
        }
        self.budget.check(self.deadline)?;
        self.check_memory()?;
        self.next_check = self.steps + CHECK_EVERY.min(self.limits.fuel - total);
        Ok(())
    }

    /// The run's time, cancellation and host interruption, checked now.
    pub fn check_time(&self) -> EvalResult<()> {
        Ok(self.budget.check(self.deadline)?)
    }

    pub fn check_coll_size(&self, n: usize) -> EvalResult<()> {
        self.check_memory()?;
        if n > self.limits.max_collection_size {
            return Err(guard::size_error(n, self.limits.max_collection_size).into());
        }
        Ok(())
    }

    /// Checks a new collection of `n` values against the size limit and the memory it takes,
    /// before it is allocated.
    pub fn alloc_values(&self, n: usize) -> EvalResult<()> {
        self.check_coll_size(n)?;
        self.reserve(guard::values_bytes(n))
    }

    /// Appends one element a builtin produces, for outputs whose size is not known in advance:
    /// each element is charged (so memory and time are checked as the output grows) and the
    /// size limit holds at every step.
    #[inline]
    pub fn push_value(&mut self, out: &mut Vec<Value>, v: Value) -> EvalResult<()> {
        if out.len() >= self.limits.max_collection_size {
            return self.check_coll_size(out.len() + 1);
        }
        out.push(v);
        self.charge(1)
    }

    pub fn check_str_size(&self, n: usize) -> EvalResult<()> {
        self.check_memory()?;
        if n > self.limits.max_string_size {
            return Err(Error::limit(
                ErrorKind::MemoryExceeded,
                LimitName::StringSize,
                format!(
                    "string of {n} bytes exceeds the limit of {} bytes (max_string_size)",
                    self.limits.max_string_size
                ),
            )
            .into());
        }
        Ok(())
    }

    /// Appends one println entry (already formatted), cut to the per-entry length.
    pub fn print_line(&mut self, mut line: String) -> EvalResult<()> {
        let cut = crate::format::grapheme_prefix_len(&line, crate::limits::PRINT_ENTRY_CHARS);
        if cut < line.len() {
            line.truncate(cut);
            line.push_str("...");
            line.shrink_to_fit(); // keep what is shown, not the whole argument
        }
        self.output_bytes += line.len();
        if self.output_bytes > self.limits.max_output {
            return Err(Error::limit(
                ErrorKind::Execution,
                LimitName::Output,
                format!(
                    "println output exceeded the limit of {} bytes (max_output)",
                    self.limits.max_output
                ),
            )
            .with_hint("print less: a summary, a count, or the first few items (take 5 ...)")
            .into());
        }
        self.prints.push(line);
        Ok(())
    }

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
            Node::DataRef(k) => Ok(self.data_get(k).cloned().unwrap_or(Value::Nil)),
            Node::ToolFn(t) => Ok(Value::Tool(t.clone())),
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
                    let v = self.ev(init, ctx)?;
                    self.bind(p, v, ctx.base)?;
                }
                self.ev(&l.body, ctx)
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
                    return at(self.explain_nil_call(r, &c.f, ctx), c.pos);
                }
                at(r, c.pos)
            }
            Node::CallBuiltin(b, args, pos) => {
                let r = self.with_args(args, ctx, |it, a| it.call_builtin(b, a));
                if r.is_err() {
                    return at(self.explain_nil(r, args, ctx), *pos);
                }
                r
            }
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
                let r = self.call_builtin(b, &mut [x, y]);
                let r = self.explain_nil(r, [&xy.0, &xy.1], ctx);
                at(r, *pos)
            }
            Node::CallTool(name, args, pos) => {
                let r = self.with_args(args, ctx, |it, a| it.call_tool(name, a));
                at(r, *pos)
            }
            Node::KwGet(k, args, pos) => {
                if let (Node::Local(s) | Node::MoveLocal(s), None) = (&args[0], args.get(1)) {
                    // read the field in place: no clone (and no refcount traffic) of the map
                    let m = &self.stack[ctx.base + *s as usize];
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

    fn undefined(&self, g: &GlobalRef) -> Error {
        let mut candidates: Vec<String> = Vec::new();
        candidates.extend(g.locals.iter().map(|s| s.to_string()));
        candidates.extend(self.user.keys().map(|s| s.to_string()));
        // interop names (java.util.Date., Double/NaN, ...) only add noise to suggestions
        candidates.extend(
            crate::builtins::names()
                .filter(|n| {
                    !n.contains('/')
                        && !n.contains('.')
                        && !n.chars().all(|c| c.is_ascii_uppercase() || c == '_')
                })
                .map(str::to_string),
        );
        candidates.extend(
            self.host
                .tool_names()
                .into_iter()
                .map(|t| format!("tool/{t}")),
        );
        if let Value::Map(m) = self.data {
            for k in m.keys() {
                if let Value::Keyword(s) | Value::Str(s) = k {
                    candidates.push(format!("data/{s}"));
                }
            }
        }
        let mut e = Error::new(
            ErrorKind::UndefinedVariable,
            format!("{} is not defined", g.name),
        )
        .at(g.pos);
        if let Some(h) = hints::undefined_hint(&g.name, &candidates) {
            e = e.with_hint(h);
        }
        e
    }

    // ---- calls ----

    pub fn call_builtin(
        &mut self,
        b: &'static crate::builtins::Builtin,
        args: &mut [Value],
    ) -> EvalResult {
        if args.len() < b.min || args.len() > b.max {
            let mut e = Error::arity(format!(
                "{} expects {} argument(s), got {}",
                b.name,
                b.arity_text(),
                args.len()
            ));
            if let Some(h) = crate::meant::builtin_arity_hint(b.name, args.len()) {
                e = e.with_hint(h);
            }
            return Err(e.into());
        }
        match (b.f)(self, args) {
            Err(mut flow) => {
                if let Some(e) = flow.error_mut() {
                    self.explain(b.name, args, e);
                }
                Err(flow)
            }
            ok => ok,
        }
    }

    /// Adds what the LLM probably meant to an error a builtin raised itself (no position and
    /// no hint yet: errors from deeper calls already carry theirs).
    #[cold]
    fn explain(&self, builtin: &str, args: &[Value], e: &mut Error) {
        if e.pos.is_some() || e.hint.is_some() {
            return;
        }
        e.hint = match e.kind {
            ErrorKind::Arity => crate::meant::callback_arity_hint(builtin),
            ErrorKind::Type => crate::meant::type_shape_hint(builtin, args, &e.message),
            _ => None,
        };
    }

    /// Calls any callable value with owned arguments.
    pub fn apply(&mut self, f: &Value, args: &mut [Value]) -> EvalResult {
        // counts as a step: builtins looping over collections reach fuel and time checks too
        self.tick()?;
        match f {
            Value::Builtin(b) => self.call_builtin(b, args),
            Value::Closure(c) => self.call_closure(c, args),
            Value::Tool(name) => self.call_tool(name, args),
            Value::Native(n) => {
                // juxt/fnil/all-of chains nest calls without evaluating a node: they count as
                // call depth and check the native stack like closures do
                self.enter_call()?;
                self.depth += 1;
                let r = guard::deeper(|| crate::builtins::call_native(self, n, args));
                self.depth -= 1;
                r
            }
            Value::Keyword(k) => {
                if args.is_empty() || args.len() > 2 {
                    return Err(Error::arity(format!("keyword :{k} called with {} argument(s); expected 1 or 2 (a map and an optional default)", args.len())).into());
                }
                let default = if args.len() == 2 {
                    Some(std::mem::take(&mut args[1]))
                } else {
                    None
                };
                Ok(keyword_get(f, &args[0], default)?)
            }
            Value::Map(m) => {
                if args.is_empty() || args.len() > 2 {
                    return Err(Error::arity(format!(
                        "a map called as a function takes 1 or 2 arguments (key, default), got {}",
                        args.len()
                    ))
                    .into());
                }
                let default = if args.len() == 2 {
                    std::mem::take(&mut args[1])
                } else {
                    Value::Nil
                };
                Ok(flex_get(m, &args[0]).cloned().unwrap_or(default))
            }
            Value::Set(s) => {
                if args.len() != 1 {
                    return Err(Error::arity(format!(
                        "a set called as a function takes 1 argument, got {}",
                        args.len()
                    ))
                    .into());
                }
                Ok(if s.contains(&args[0]) {
                    std::mem::take(&mut args[0])
                } else {
                    Value::Nil
                })
            }
            other => Err(Error::new(
                ErrorKind::NotCallable,
                format!(
                    "{} is not a function and cannot be called",
                    other.describe()
                ),
            )
            .with_hint(match other {
                Value::Vector(_) => "to read an element use (nth v i) or (get v i); (f x) calls f",
                Value::Str(_) => "strings are not callable; to build text use (str ...)",
                _ => "the first element of a list is called; check your parentheses",
            })
            .into()),
        }
    }

    /// A builtin that got nil where it needed a value: says where the nil came from when an
    /// argument is a lookup that can be re-read without evaluating anything (a key missing from a
    /// local map or from the input data, a `data/` name that does not exist), with the nearest
    /// existing keys. Costs nothing unless such an error happened.
    #[cold]
    fn explain_nil<'n>(
        &self,
        r: EvalResult,
        args: impl IntoIterator<Item = &'n Node>,
        ctx: &Ctx,
    ) -> EvalResult {
        with_hint_if(r, ErrorKind::Type, |e| {
            (e.hint.is_none() && e.message.ends_with("got nil"))
                .then(|| args.into_iter().find_map(|a| self.nil_source(a, ctx)))
                .flatten()
        })
    }

    /// Calling nil: a `data/` name that is a tool, or any lookup whose nil can be explained.
    #[cold]
    fn explain_nil_call(&self, r: EvalResult, callee: &Node, ctx: &Ctx) -> EvalResult {
        with_hint_if(r, ErrorKind::NotCallable, |_| {
            match callee {
            Node::DataRef(name) if self.host.has_tool(name) => Some(format!(
                "data/{name} is input data, and there is none by that name; {name} is a tool: (tool/{name} ...)"
            )),
            _ => self.nil_source(callee, ctx),
        }
        })
    }

    /// Why `node` is nil, if it is a lookup whose source can be read again.
    fn nil_source(&self, node: &Node, ctx: &Ctx) -> Option<String> {
        let (key, src, shown) = match node {
            Node::DataRef(name) => {
                if self.data_get(name).is_some() {
                    return None;
                }
                let inputs: Vec<String> = match self.data {
                    Value::Map(m) => m
                        .keys()
                        .filter_map(key_text)
                        .map(|k| format!("data/{k}"))
                        .collect(),
                    _ => Vec::new(),
                };
                let near = crate::hints::closest(
                    &format!("data/{name}"),
                    inputs.iter().map(String::as_str),
                );
                return Some(match near {
                    Some(n) => {
                        format!("data/{name} is nil: there is no such input; did you mean {n}?")
                    }
                    None if inputs.is_empty() => {
                        format!("data/{name} is nil: this run has no input data")
                    }
                    None => format!(
                        "data/{name} is nil: there is no such input; inputs: {}",
                        inputs
                            .iter()
                            .take(8)
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                });
            }
            Node::KwGet(k, a, _) if a.len() == 1 => (k, &a[0], format!("({} ...)", printed(k))),
            Node::CallBuiltin(b, a, _) if b.name == "get" && a.len() == 2 => match &a[1] {
                Node::Const(k) => (k, &a[0], format!("(get ... {})", printed(k))),
                _ => return None,
            },
            _ => return None,
        };
        // `(:k m)` reads a local in place; any other call has moved a last-use local out
        let in_place = matches!(node, Node::KwGet(..));
        let m = match src {
            Node::Local(slot) => self.stack.get(ctx.base + *slot as usize),
            Node::MoveLocal(slot) if in_place => self.stack.get(ctx.base + *slot as usize),
            Node::Capture(i) => ctx.caps.get(*i as usize),
            Node::DataRef(name) => match self.data_get(name) {
                Some(v) => Some(v),
                None => return self.nil_source(src, ctx), // the input itself is missing
            },
            Node::Const(v) => Some(v),
            _ => None,
        };
        let Some(m) = m else {
            return self.key_in_data(key, &shown);
        };
        let Value::Map(map) = m else {
            return match m {
                Value::Nil => Some(format!("{shown} is nil: the map it reads is itself nil")),
                _ => None,
            };
        };
        if let Some(v) = flex_get(map, key) {
            if !matches!(v, Value::Nil) {
                return None; // not the nil
            }
            return Some(format!(
                "{shown} is nil: the key is there and holds nil; give a default with (get m k default) or (or x default)"
            ));
        }
        let keys: Vec<String> = map
            .keys()
            .filter_map(key_text)
            .map(|k| format!(":{k}"))
            .collect();
        let wanted = printed(key);
        let near = crate::hints::closest(&wanted, keys.iter().map(String::as_str));
        let listed = keys.iter().take(8).cloned().collect::<Vec<_>>().join(", ");
        Some(match near {
            Some(n) => format!(
                "{shown} is nil: the map has no key {wanted}; did you mean {n}? Its keys: {listed}"
            ),
            None => format!("{shown} is nil: the map has no key {wanted}; its keys: {listed}"),
        })
    }

    /// For a lookup whose map cannot be read again: whether the key exists anywhere in the
    /// input data (its top-level maps and the first 100 maps of each top-level vector), and the
    /// nearest key that does.
    fn key_in_data(&self, key: &Value, shown: &str) -> Option<String> {
        let Value::Map(data) = self.data else {
            return None;
        };
        let mut keys: Vec<&str> = Vec::new();
        let mut add = |m: &'a crate::value::MapData| {
            for k in m.keys().filter_map(key_text) {
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
        };
        for v in data.values() {
            match v {
                Value::Map(m) => add(m),
                Value::Vector(items) => {
                    for item in items.iter().take(100) {
                        if let Value::Map(m) = item {
                            add(m);
                        }
                    }
                }
                _ => {}
            }
        }
        let wanted = key_text(key)?;
        if keys.contains(&wanted) {
            return None;
        }
        let near = crate::hints::closest(wanted, keys.iter().copied())?;
        Some(format!(
            "{shown} is nil: no map in the input data has the key {}; did you mean :{near}?",
            printed(key)
        ))
    }

    /// Refuses a call one level beyond `max_depth`.
    fn enter_call(&self) -> EvalResult<()> {
        if self.depth >= self.limits.max_depth {
            return Err(Error::limit(
                ErrorKind::Execution,
                LimitName::Depth,
                format!(
                    "call depth limit of {} exceeded (max_depth)",
                    self.limits.max_depth
                ),
            )
            .with_hint("the recursion does not end soon enough; use loop/recur or reduce instead")
            .into());
        }
        Ok(())
    }

    pub fn call_closure(&mut self, c: &Arc<Closure>, args: &mut [Value]) -> EvalResult {
        let lambda = &c.lambda;
        let fixed = lambda.params.len();
        let ok = if lambda.rest.is_some() {
            args.len() >= fixed
        } else {
            args.len() == fixed
        };
        if !ok {
            let name = lambda
                .name
                .as_deref()
                .map_or_else(|| "fn".to_string(), |n| n.to_string());
            return Err(Error::arity(format!(
                "{name} expects {} argument(s), got {}",
                lambda.arity_text(),
                args.len()
            ))
            .into());
        }
        self.enter_call()?;
        self.depth += 1;
        let base = self.stack.len();
        for _ in 0..lambda.frame_size {
            self.stack.push(Value::Nil);
        }
        let mut ctx = Ctx {
            base,
            caps: &c.captures,
            loops: 0,
        };
        let result = (|| {
            self.bind_params(lambda, args, base)?;
            loop {
                match self.ev(&lambda.body, &mut ctx) {
                    Err(f) if f.is_recur() && self.recur_bound => {
                        self.recur_bound = false;
                        self.count_loop(&mut ctx)?;
                    }
                    Err(f) if f.is_recur() => {
                        let mut vals = std::mem::take(&mut self.recur_args);
                        self.count_loop(&mut ctx)?;
                        if lambda.rest.is_some() {
                            // recur passes the rest parameter as one collection
                            let rest = vals.pop().unwrap_or_default();
                            let mut items: Args = vals;
                            match rest {
                                Value::Nil => {}
                                Value::Vector(v) => items.extend(v.iter().cloned()),
                                other => {
                                    return Err(Error::type_err(format!(
                                        "recur's last argument fills the rest parameter and must be a vector, got {}",
                                        other.describe()
                                    ))
                                    .into())
                                }
                            }
                            self.bind_params(lambda, &mut items, base)?;
                        } else {
                            self.bind_params(lambda, &mut vals, base)?;
                        }
                    }
                    other => return other,
                }
            }
        })();
        self.stack.truncate(base);
        self.depth -= 1;
        if let (Ok(v), Some(_)) = (&result, &lambda.name) {
            // kept per run and applied on commit, so a failed run changes nothing
            self.returns
                .insert(Arc::as_ptr(c) as usize, (c.clone(), TypeTag::of(v)));
        }
        result
    }

    fn bind_params(&mut self, lambda: &Lambda, args: &mut [Value], base: usize) -> EvalResult<()> {
        let fixed = lambda.params.len();
        for (p, a) in lambda.params.iter().zip(args.iter_mut()) {
            self.bind(p, std::mem::take(a), base)?;
        }
        if let Some(rest) = &lambda.rest {
            let from = fixed.min(args.len());
            let extra: Vec<Value> = args[from..].iter_mut().map(std::mem::take).collect();
            self.bind(rest, Value::vector(extra), base)?;
        }
        Ok(())
    }

    pub fn bind(&mut self, p: &Pattern, v: Value, base: usize) -> EvalResult<()> {
        match p {
            Pattern::Bind(s) => {
                self.stack[base + *s as usize] = v;
                Ok(())
            }
            Pattern::Vector { items, rest, pos } => {
                let elems: &[Value] = match &v {
                    Value::Nil => &[],
                    Value::Vector(xs) => xs,
                    other => {
                        return Err(Error::new(
                            ErrorKind::Destructure,
                            format!(
                            "cannot destructure {} with a vector pattern; it needs a vector or nil",
                            other.describe()
                        ),
                        )
                        .at(*pos)
                        .with_hint(match other {
                            Value::Map(_) => "a map destructures with {:keys [a b]}; a [k v] pattern takes one entry, as in (doseq [[k v] m] ...)",
                            _ => "only vectors destructure with [a b]; bind the value to a plain name",
                        })
                        .into())
                    }
                };
                let vals: Vec<Value> = (0..items.len())
                    .map(|i| elems.get(i).cloned().unwrap_or(Value::Nil))
                    .collect();
                let rest_val = rest.as_ref().map(|_| {
                    Value::vector(
                        elems
                            .get(items.len()..)
                            .map_or_else(Vec::new, |s| s.to_vec()),
                    )
                });
                for (pat, val) in items.iter().zip(vals) {
                    self.bind(pat, val, base)?;
                }
                if let (Some(r), Some(rv)) = (rest, rest_val) {
                    self.bind(r, rv, base)?;
                }
                Ok(())
            }
            Pattern::Map {
                entries,
                as_slot,
                pos,
            } => {
                let m = match &v {
                    Value::Nil => None,
                    Value::Map(m) => Some(m.clone()),
                    other => {
                        return Err(Error::new(
                            ErrorKind::Destructure,
                            format!(
                                "cannot destructure {} with a map pattern; it needs a map or nil",
                                other.describe()
                            ),
                        )
                        .at(*pos)
                        .with_hint(match other {
                            Value::Vector(_) => "a vector destructures by position with [a b]; to take each map of a vector use map or doseq",
                            _ => "only maps destructure with {:keys [...]}; bind the value to a plain name",
                        })
                        .into())
                    }
                };
                for e in entries {
                    let found = m.as_ref().and_then(|m| flex_get(m, &e.key)).cloned();
                    let val = match found {
                        Some(x) => x,
                        None => e.default.clone().unwrap_or(Value::Nil),
                    };
                    self.bind(&e.pattern, val, base)?;
                }
                if let Some(s) = as_slot {
                    self.stack[base + *s as usize] = v;
                }
                Ok(())
            }
        }
    }

    pub fn call_tool(&mut self, name: &Str, args: &mut [Value]) -> EvalResult {
        if !self.host.has_tool(name) {
            let names = self.host.tool_names();
            let list = if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            };
            let mut e = Error::new(
                ErrorKind::UnknownTool,
                format!("Unknown tool: {name}. Available tools: {list}"),
            );
            if let Some(h) = hints::closest(name, names.iter().map(String::as_str)) {
                e = e.with_hint(format!("did you mean tool/{h}?"));
            }
            return Err(e.into());
        }
        let started = Instant::now();
        let args: Vec<Value> = args.iter_mut().map(std::mem::take).collect();
        self.publish_steps();
        let ctx = ToolCtx {
            budget: self.budget,
            deadline: self.deadline,
        };
        let outcome = self.host.call_tool(name, &args, &ctx);
        let duration = started.elapsed();
        let mut record = ToolCallRecord {
            name: name.clone(),
            args,
            result: None,
            error: None,
            duration,
            abandoned: false,
        };
        let r = match outcome {
            Ok(v) => {
                record.result = Some(v.clone());
                Ok(v)
            }
            Err(ToolFailure::Failed(msg)) => {
                let e = Error::new(ErrorKind::Tool, format!("Tool '{name}' failed: {msg}"));
                record.error = Some(msg);
                Err(e.into())
            }
            Err(ToolFailure::Misused { message, hint }) => {
                let e = Error::new(ErrorKind::Tool, format!("Tool '{name}' failed: {message}"))
                    .with_hint(hint);
                record.error = Some(message);
                Err(e.into())
            }
            Err(ToolFailure::Stopped(e)) => {
                record.error = Some(format!("abandoned: {}", e.message));
                record.abandoned = true;
                Err(e.into())
            }
        };
        self.tool_calls.push(record);
        self.check_time()?;
        r
    }
}
