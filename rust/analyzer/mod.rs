//! Forms -> IR. Every special form is checked here, before anything runs, so a malformed
//! program calls no tool. Locals become frame slots; bare names that are neither local nor
//! builtin stay `Global` and are resolved when evaluated (a later `def` takes precedence, §8.4).
//!
//! This file holds the walk over forms (`expr`, `list`, calls) and the special-form dispatch;
//! each family of forms has its own module: `scope` (locals and captures), `names` (bare and
//! namespaced names), `fns` (`fn`/`def`/`defn`), `short_fn` (`#()`), `bindings`
//! (`let`/`loop`/`if-let`/`doseq`), `patterns` (destructuring), `where_form`, `threading`
//! (`->`/`->>`) and `symbols` (`max_symbols`); forms outside the language are in `crate::meant`.

use std::borrow::Cow;
use std::sync::Arc;

use crate::builtins;
use crate::error::{Error, ErrorKind, Pos, Result};
use crate::ir::{Call, GlobalRef, Node, Pattern, Program, Slot, StagesCall};
use crate::liveness;
use crate::reader::{Form, FormKind};
use crate::value::{BuiltinId, Value, ValueSet};

mod bindings;
mod fns;
mod names;
mod patterns;
mod scope;
mod short_fn;
mod symbols;
mod threading;
mod where_form;

pub use names::split_ns;
use names::{doc_of_tool, NsRef, DROPPED_PREFIXES};
use scope::FnScope;
use short_fn::{is_placeholder, ShortFnCtx};
use symbols::count_symbols;
pub use symbols::{is_core_name, symbol_limit};
use threading::thread_step;

/// Names analyzed as special forms (§5); they cannot be rebound, defined or used as values.
pub const SPECIAL_FORMS: &[&str] = &[
    "def", "defn", "fn", "let", "loop", "recur", "if", "if-not", "when", "when-not", "if-let",
    "when-let", "cond", "do", "and", "or", "->", "->>", "doseq", "return", "fail", "where",
];

pub struct AnalyzeOptions {
    pub max_symbols: usize,
    /// Nesting depth the program may reach after `->`, `->>` and `cond` are expanded.
    pub max_nesting: usize,
    /// Bytes in a string literal (a program may not write what it could not build).
    pub max_string_size: usize,
}

impl Default for AnalyzeOptions {
    fn default() -> Self {
        AnalyzeOptions {
            max_symbols: 10_000,
            max_nesting: crate::reader::DEFAULT_MAX_NESTING,
            max_string_size: crate::limits::Limits::default().max_string_size,
        }
    }
}

pub struct Analyzer {
    scopes: Vec<FnScope>,
    /// Arity of each enclosing recur target (loop bindings or fn params), innermost last.
    /// Enclosing recur targets (loop bindings or fn params), innermost last: the arity, and
    /// the slots to assign directly when every binding is a plain name.
    recur_targets: Vec<(usize, Option<Vec<Slot>>)>,
    short_fn: Option<ShortFnCtx>,
    /// Nesting depth of the form being analyzed (expansions included), and its limit.
    depth: usize,
    max_nesting: usize,
    max_string_size: usize,
    /// Whether the program names a tool, a definition, an earlier result or a name resolved
    /// only when it runs: only such a program can call a host tool.
    reaches_host: bool,
}

pub fn analyze(forms: &[Form], opts: &AnalyzeOptions) -> Result<Program> {
    count_symbols(forms, opts.max_symbols)?;
    let mut a = Analyzer::new(opts);
    let mut body = Vec::with_capacity(forms.len());
    for f in forms {
        body.push(a.expr(f, false)?);
    }
    let frame_size = a.scopes[0].next_slot;
    liveness::optimize_top(&mut body, frame_size);
    Ok(Program {
        body,
        frame_size,
        reaches_host: a.reaches_host,
    })
}

/// Analyzes each top-level form on its own, for `check`: the program of the forms that
/// analyze, and the error of each form that does not (all of them, in source order). A limit
/// on the whole program (`max_symbols`) is the only error.
pub fn analyze_each(forms: &[Form], opts: &AnalyzeOptions) -> (Program, Vec<Error>) {
    let mut a = Analyzer::new(opts);
    let mut frame = 0;
    let mut body = Vec::with_capacity(forms.len());
    let mut errors = Vec::new();
    if let Err(e) = count_symbols(forms, opts.max_symbols) {
        errors.push(e);
    } else {
        for f in forms {
            match a.expr(f, false) {
                Ok(node) => body.push(node),
                Err(e) => {
                    errors.push(e);
                    // a form that failed part-way may have left its scopes open
                    let reaches_host = a.reaches_host;
                    frame = frame.max(a.scopes[0].next_slot);
                    a = Analyzer::new(opts);
                    a.reaches_host = reaches_host;
                }
            }
        }
    }
    let frame_size = frame.max(a.scopes[0].next_slot);
    let program = Program {
        body,
        frame_size,
        reaches_host: a.reaches_host,
    };
    (program, errors)
}

fn err_at(pos: Pos, msg: impl Into<String>) -> Error {
    Error::analysis(msg).at(pos)
}

impl Analyzer {
    fn new(opts: &AnalyzeOptions) -> Self {
        Analyzer {
            scopes: vec![FnScope::default()],
            recur_targets: Vec::new(),
            short_fn: None,
            depth: 0,
            max_nesting: opts.max_nesting,
            max_string_size: opts.max_string_size,
            reaches_host: false,
        }
    }

    // ---- scopes ----

    // ---- expressions ----

    fn expr(&mut self, f: &Form, tail: bool) -> Result<Node> {
        // analysis is part of the run: its work counts, and expansions are depth-checked
        crate::guard::charge(1);
        let compound = matches!(
            f.kind,
            FormKind::List(_)
                | FormKind::Vector(_)
                | FormKind::Map(_)
                | FormKind::Set(_)
                | FormKind::ShortFn(_)
        );
        if !compound {
            return self.expr_inner(f, tail);
        }
        self.depth += 1;
        if self.depth > self.max_nesting {
            self.depth -= 1;
            return Err(self.too_deep(f.pos));
        }
        let r = crate::guard::deeper(|| self.expr_inner(f, tail));
        self.depth -= 1;
        r
    }

    #[cold]
    fn too_deep(&self, pos: Pos) -> Error {
        let mut e = err_at(
            pos,
            format!(
                "the program nests more than {} levels deep once ->, ->> and cond are expanded (max_nesting)",
                self.max_nesting
            ),
        )
        .with_hint("split long -> / ->> chains and cond forms with let bindings or a map lookup");
        e.kind = ErrorKind::Parse;
        e.limit = Some(crate::error::LimitName::Nesting);
        e
    }

    fn body(&mut self, forms: &[Form], tail: bool) -> Result<Node> {
        match forms.len() {
            0 => Ok(Node::Const(Value::Nil)),
            1 => self.expr(&forms[0], tail),
            n => {
                let mut out = Vec::with_capacity(n);
                for (i, f) in forms.iter().enumerate() {
                    out.push(self.expr(f, tail && i == n - 1)?);
                }
                Ok(Node::Do(out.into_boxed_slice()))
            }
        }
    }

    fn expr_inner(&mut self, f: &Form, tail: bool) -> Result<Node> {
        match &f.kind {
            FormKind::Nil => Ok(Node::Const(Value::Nil)),
            FormKind::Bool(b) => Ok(Node::Const(Value::Bool(*b))),
            FormKind::Int(i) => Ok(Node::Const(Value::Int(*i))),
            FormKind::Float(x) => Ok(Node::Const(Value::Float(*x))),
            FormKind::Str(s) if s.len() > self.max_string_size => Err(Error::limit(
                ErrorKind::MemoryExceeded,
                crate::error::LimitName::StringSize,
                format!(
                    "string literal of {} bytes exceeds the limit of {} bytes (max_string_size)",
                    s.len(),
                    self.max_string_size
                ),
            )
            .at(f.pos)),
            FormKind::Str(s) => Ok(Node::Const(Value::Str(s.clone()))),
            FormKind::Keyword(k) => Ok(Node::Const(Value::Keyword(k.clone()))),
            FormKind::VarRef(n) => Ok(Node::Const(Value::Var(n.clone()))),
            FormKind::Symbol(s) => self.symbol(s, f.pos),
            FormKind::Vector(items) => {
                if crate::meant::is_comprehension(items.iter().map(Form::symbol_name))
                    && self.resolve_local("for").is_none()
                {
                    return Err(
                        err_at(f.pos, "list comprehensions are not supported").with_hint(
                            "use (map (fn [x] ...) coll), and (filter pred coll) for an if clause",
                        ),
                    );
                }
                let nodes = self.exprs(items)?;
                Ok(match consts(&nodes) {
                    Some(vals) => Node::Const(Value::vector(vals)),
                    None => Node::VecLit(nodes.into_boxed_slice()),
                })
            }
            FormKind::Set(items) => {
                let nodes = self.exprs(items)?;
                Ok(match consts(&nodes) {
                    Some(vals) => Node::Const(Value::set(vals.into_iter().collect::<ValueSet>())),
                    None => Node::SetLit(nodes.into_boxed_slice()),
                })
            }
            FormKind::Map(items) => {
                let nodes = self.exprs(items)?;
                if let Some(vals) = consts(&nodes) {
                    let (keys, vals): (Vec<Value>, Vec<Value>) = vals
                        .chunks_exact(2)
                        .map(|kv| (kv[0].clone(), kv[1].clone()))
                        .unzip();
                    return Ok(Node::Const(crate::map::record_or_map(keys, vals)));
                }
                let mut pairs = Vec::with_capacity(nodes.len() / 2);
                let mut it = nodes.into_iter();
                while let (Some(k), Some(v)) = (it.next(), it.next()) {
                    pairs.push((k, v));
                }
                // constant, distinct keys: the literal builds a record of one shape
                let keys: Option<Vec<Value>> = pairs
                    .iter()
                    .map(|(k, _)| match k {
                        Node::Const(v) => Some(v.clone()),
                        _ => None,
                    })
                    .collect();
                let shape = keys
                    .filter(|k| (1..=crate::map::MAX_SHAPED_KEYS).contains(&k.len()))
                    .and_then(crate::map::Shape::new)
                    .map(std::sync::Arc::new);
                Ok(Node::MapLit(pairs.into_boxed_slice(), f.pos, shape))
            }
            FormKind::ShortFn(body) => self.short_fn(body, f.pos),
            FormKind::List(items) => self.list(items, f.pos, tail),
        }
    }

    fn exprs(&mut self, forms: &[Form]) -> Result<Vec<Node>> {
        forms.iter().map(|f| self.expr(f, false)).collect()
    }

    fn list(&mut self, items: &[Form], pos: Pos, tail: bool) -> Result<Node> {
        let Some(head) = items.first() else {
            return Err(err_at(pos, "() is not a valid expression")
                .with_hint("use [] for an empty vector, nil for nothing"));
        };
        let args = &items[1..];
        if let FormKind::Symbol(s) = &head.kind {
            let name = s.as_ref();
            let is_local = is_placeholder(name).is_none() && self.resolve_local(name).is_some();
            if !is_local {
                if let Some(node) = self.special(name, args, pos, tail)? {
                    return Ok(node);
                }
                if name == "." {
                    // `(. s length)`: name the function that does what the method does
                    let hint = match args.get(1).map(|f| &f.kind) {
                        Some(FormKind::Symbol(m)) => crate::meant::method_hint(m),
                        _ => crate::meant::method_hint(""),
                    };
                    return Err(
                        err_at(pos, "method calls (. obj m) are not supported").with_hint(hint)
                    );
                }
                if let Some(hint) = crate::meant::unsupported_form(name) {
                    return Err(err_at(pos, format!("{name} is not supported")).with_hint(hint));
                }
                if let Some(b) = builtins::lookup(name) {
                    return self.call_builtin(b, name, args, pos);
                }
                if let Some(method) = name.strip_prefix('.') {
                    if !method.is_empty() && !name.ends_with('.') {
                        return Err(Error::new(
                            ErrorKind::UndefinedVariable,
                            format!("unknown method .{method}"),
                        )
                        .at(pos)
                        .with_hint(crate::meant::method_hint(method)));
                    }
                }
                if let Some((ns, nm)) = split_ns(name) {
                    if DROPPED_PREFIXES.contains(&ns) {
                        // `(clojure.core/let ...)`: the prefix is dropped for special forms too
                        if let Some(node) = self.special(nm, args, pos, tail)? {
                            return Ok(node);
                        }
                    }
                    let arg_nodes = self.exprs(args)?;
                    return Ok(match self.namespaced(ns, nm, pos)? {
                        NsRef::Tool(t) => Node::CallTool(t, arg_nodes.into_boxed_slice(), pos),
                        NsRef::Builtin(b) => {
                            return self.call_builtin(b, name, args, pos);
                        }
                        NsRef::Data(k) => call(Node::DataRef(k), arg_nodes, pos),
                        NsRef::User(u) => call(Node::UserRef(u, pos), arg_nodes, pos),
                    });
                }
                if is_placeholder(name).is_none()
                    && s.strip_prefix('*')
                        .and_then(|n| n.parse::<usize>().ok())
                        .is_none()
                {
                    let arg_nodes = self.exprs(args)?;
                    self.reaches_host = true;
                    let g = Arc::new(GlobalRef {
                        name: s.clone(),
                        pos,
                        locals: self.visible_locals(),
                    });
                    return Ok(Node::CallGlobal(g, arg_nodes.into_boxed_slice()));
                }
            }
        }
        if let FormKind::Keyword(k) = &head.kind {
            if (1..=2).contains(&args.len()) {
                let arg_nodes = self.exprs(args)?;
                return Ok(Node::KwGet(
                    Value::Keyword(k.clone()),
                    arg_nodes.into_boxed_slice(),
                    pos,
                ));
            }
        }
        let f = self.expr(head, false)?;
        let arg_nodes = self.exprs(args)?;
        Ok(call(f, arg_nodes, pos))
    }

    fn call_builtin(
        &mut self,
        b: BuiltinId,
        written: &str,
        args: &[Form],
        pos: Pos,
    ) -> Result<Node> {
        if let Some(node) = doc_of_tool(b, args, pos) {
            return Ok(node);
        }
        if let Some(c) = b.constant {
            // a constant in head position is a call of a non-function: not_callable at run time
            let arg_nodes = self.exprs(args)?;
            return Ok(call(Node::Const(c()), arg_nodes, pos));
        }
        if matches!(b.name, "=" | "not=" | "<" | ">" | "<=" | ">=") && args.len() != 2 {
            let hint = if args.len() > 2 {
                let a: Vec<String> = (0..args.len()).map(|i| format!("x{}", i + 1)).collect();
                format!(
                    "combine two-argument comparisons with and, e.g. (and ({0} {1} {2}) ({0} {2} {3}))",
                    b.name, a[0], a[1], a[2]
                )
            } else {
                format!("write ({} a b)", b.name)
            };
            return Err(err_at(
                pos,
                format!(
                    "({written} ...) takes exactly 2 arguments, got {}",
                    args.len()
                ),
            )
            .with_hint(hint));
        }
        if b.name == "apply" && args.len() < 2 {
            return Err(err_at(
                pos,
                format!(
                    "(apply ...) needs a function and a collection, got {} argument(s)",
                    args.len()
                ),
            )
            .with_hint("write (apply f coll), e.g. (apply max [3 1 2])"));
        }
        let mut arg_nodes = self.exprs(args)?;
        if matches!(b.name, "<" | ">" | "<=" | ">=") && arg_nodes.len() == 2 {
            let y = arg_nodes.pop().unwrap_or(Node::Const(Value::Nil));
            let x = arg_nodes.pop().unwrap_or(Node::Const(Value::Nil));
            return Ok(Node::Compare(b, Box::new((x, y)), pos));
        }
        if crate::eval::is_stage(&b, &arg_nodes)
            && arg_nodes.get(1).is_some_and(crate::eval::is_stage_call)
        {
            return Ok(Node::Stages(Box::new(StagesCall {
                builtin: b,
                args: arg_nodes.into_boxed_slice(),
                pos,
                effects: Default::default(),
            })));
        }
        Ok(Node::CallBuiltin(b, arg_nodes.into_boxed_slice(), pos))
    }

    // ---- special forms ----

    fn special(&mut self, name: &str, args: &[Form], pos: Pos, tail: bool) -> Result<Option<Node>> {
        let node = match name {
            "do" => self.body(args, tail)?,
            "if" | "if-not" => {
                if args.len() != 2 && args.len() != 3 {
                    return Err(err_at(pos, format!("{name} takes a test, a then branch and an optional else branch; got {} form(s)", args.len()))
                        .with_hint(format!("({name} cond then else?); use cond for several branches, do for several expressions")));
                }
                let test = self.expr(&args[0], false)?;
                let a = self.expr(&args[1], tail)?;
                let b = match args.get(2) {
                    Some(e) => self.expr(e, tail)?,
                    None => Node::Const(Value::Nil),
                };
                if name == "if" {
                    Node::If(Box::new((test, a, b)))
                } else {
                    Node::If(Box::new((test, b, a)))
                }
            }
            "when" | "when-not" => {
                if args.len() < 2 {
                    return Err(err_at(
                        pos,
                        format!("{name} needs a test and at least one body expression"),
                    )
                    .with_hint(format!("({name} test body...)")));
                }
                let test = self.expr(&args[0], false)?;
                let body = self.body(&args[1..], tail)?;
                if name == "when" {
                    Node::If(Box::new((test, body, Node::Const(Value::Nil))))
                } else {
                    Node::If(Box::new((test, Node::Const(Value::Nil), body)))
                }
            }
            "cond" => self.cond(args, pos, tail)?,
            "and" | "or" => {
                let n = args.len();
                let mut nodes = Vec::with_capacity(n);
                for (i, a) in args.iter().enumerate() {
                    nodes.push(self.expr(a, tail && i + 1 == n)?);
                }
                match (name, n) {
                    ("and", 0) => Node::Const(Value::Bool(true)),
                    ("or", 0) => Node::Const(Value::Nil),
                    (_, 1) => nodes.pop().unwrap_or(Node::Const(Value::Nil)),
                    ("and", _) => Node::And(nodes.into_boxed_slice()),
                    _ => Node::Or(nodes.into_boxed_slice()),
                }
            }
            "let" => self.let_form(args, pos, tail, false)?,
            "loop" => self.let_form(args, pos, tail, true)?,
            "recur" => {
                if !tail {
                    return Err(err_at(pos, "recur is only allowed in tail position (the last expression of a loop or fn body)")
                        .with_hint("make recur the last thing evaluated in its branch, e.g. (if done acc (recur ...))"));
                }
                let Some((arity, slots)) = self.recur_targets.last().cloned() else {
                    return Err(err_at(pos, "recur outside of loop or fn")
                        .with_hint("wrap it in (loop [bindings] ...)"));
                };
                if args.len() != arity {
                    return Err(Error::arity(format!(
                        "recur expects {arity} argument(s) (one per binding), got {}",
                        args.len()
                    ))
                    .at(pos));
                }
                let arg_nodes = self.exprs(args)?.into_boxed_slice();
                match slots {
                    Some(slots) => Node::RecurTo(arg_nodes, slots.into_boxed_slice()),
                    None => Node::Recur(arg_nodes),
                }
            }
            "fn" => self.fn_form(None, args, pos)?,
            "def" => self.def_form(args, pos)?,
            "defn" => self.defn_form(args, pos)?,
            "if-let" | "when-let" => self.if_let(name, args, pos, tail)?,
            "->" | "->>" => {
                let Some(first) = args.first() else {
                    return Err(err_at(pos, format!("({name}) needs an initial value"))
                        .with_hint(format!("({name} x step1 step2 ...)")));
                };
                // each step nests the previous ones one level deeper
                if self.depth + args.len() > self.max_nesting {
                    return Err(self.too_deep(pos));
                }
                let mut acc = Cow::Borrowed(first); // copied at the first step, if any
                for step in &args[1..] {
                    acc = Cow::Owned(thread_step(acc.into_owned(), step, name == "->")?);
                }
                self.expr(&acc, tail)?
            }
            "return" | "fail" => {
                if args.len() != 1 {
                    return Err(err_at(
                        pos,
                        format!("{name} takes exactly one argument, got {}", args.len()),
                    )
                    .with_hint(format!(
                        "({name} value); wrap several values in a map or vector"
                    )));
                }
                let v = self.expr(&args[0], false)?;
                if name == "return" {
                    Node::Return(Box::new(v))
                } else {
                    Node::Fail(Box::new(v))
                }
            }
            "doseq" => self.doseq(args, pos)?,
            "where" => self.where_form(args, pos)?,
            _ => return Ok(None),
        };
        Ok(Some(node))
    }

    fn cond(&mut self, args: &[Form], pos: Pos, tail: bool) -> Result<Node> {
        if args.is_empty() || args.len() % 2 != 0 {
            return Err(err_at(
                pos,
                format!("cond needs test/result pairs, got {} form(s)", args.len()),
            )
            .with_hint("(cond test1 result1 test2 result2 :else default)"));
        }
        // each clause nests the following ones one level deeper
        if self.depth + args.len() / 2 > self.max_nesting {
            return Err(self.too_deep(pos));
        }
        let mut out = Node::Const(Value::Nil);
        for pair in args.chunks(2).rev() {
            let is_else = matches!(&pair[0].kind, FormKind::Keyword(k) if k.as_str() == "else");
            let result = self.expr(&pair[1], tail)?;
            out = if is_else {
                result
            } else {
                let test = self.expr(&pair[0], false)?;
                Node::If(Box::new((test, result, out)))
            };
        }
        Ok(out)
    }

    // ---- destructuring patterns ----
}

type ParsedFn = (Vec<Pattern>, Option<Pattern>, Vec<String>, Node);

fn call(f: Node, args: Vec<Node>, pos: Pos) -> Node {
    Node::Call(Box::new(Call {
        f,
        args: args.into_boxed_slice(),
        pos,
    }))
}

fn consts(nodes: &[Node]) -> Option<Vec<Value>> {
    nodes
        .iter()
        .map(|n| match n {
            Node::Const(v) => Some(v.clone()),
            _ => None,
        })
        .collect()
}
