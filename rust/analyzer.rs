//! Forms -> IR. Every special form is checked here, before anything runs, so a malformed
//! program calls no tool. Locals become frame slots; bare names that are neither local nor
//! builtin stay `Global` and are resolved when evaluated (a later `def` takes precedence, §8.4).

use std::sync::Arc;

use ahash::AHashSet;

use crate::builtins::{self, Builtin};
use crate::error::{Error, ErrorKind, Pos, Result};
use crate::ir::*;
use crate::liveness;
use crate::reader::{Form, FormKind};
#[allow(unused_imports)]
use crate::value::Str;
use crate::value::{Value, ValueSet, WhereOp};

/// Names analyzed as special forms (§5); they cannot be rebound, defined or used as values.
pub const SPECIAL_FORMS: &[&str] = &[
    "def", "defn", "fn", "let", "loop", "recur", "if", "if-not", "when", "when-not", "if-let",
    "when-let", "cond", "do", "and", "or", "->", "->>", "doseq", "return", "fail", "where",
];

/// Clojure forms outside the subset, with the supported alternative.
fn unsupported_form(name: &str) -> Option<&'static str> {
    Some(match name {
        "for" => "`for` is not supported; use map/filter (or doseq for effects)",
        "case" | "condp" => "use cond: (cond (= x :a) ... (= x :b) ... :else ...)",
        "letfn" => "`letfn` is not supported; define helpers with defn, or bind fns in let",
        "quote" => "quote is not supported; use a vector [...] for literal data",
        "try" | "catch" | "finally" | "throw" => {
            "there are no exceptions; check values with if/cond and end with (fail reason)"
        }
        "defmacro" => "macros are not supported; use defn",
        "ns" | "require" | "import" | "in-ns" | "use" => {
            "namespaces are fixed: tools are tool/name, input is data/name, your definitions are bare names"
        }
        "binding" => "dynamic vars are not supported; use let",
        "call" => "tools are called by name: write (tool/name ...)",
        "as->" | "some->" | "some->>" | "cond->" | "cond->>" => {
            "only -> and ->> exist; use let to name intermediate values"
        }
        "if-some" | "when-some" | "when-first" => "use if-let / when-let",
        "lazy-seq" | "iterate" | "repeatedly" | "cycle" => {
            "there are no lazy or infinite sequences; use range with an end, or loop/recur"
        }
        "atom" | "swap!" | "reset!" | "deref" | "ref" | "dosync" | "volatile!" => {
            "there is no mutable state; thread values through loop/recur or reduce, or use def"
        }
        "eval" | "read-string" => "eval is not supported",
        "defrecord" | "deftype" | "defprotocol" | "defmulti" | "defmethod" => {
            "records, types, protocols and multimethods are not supported; use maps and defn"
        }
        _ => return None,
    })
}

/// Whether a list after a function's name is one arity (`([x] body)`) rather than a parameter
/// list written with parentheses (`(x y)`).
fn is_arity(l: &[Form]) -> bool {
    matches!(l.first().map(|f| &f.kind), Some(FormKind::Vector(_)))
}

/// The names of a parameter list written as a list, for the hint that shows it as a vector.
fn names_of(l: &[Form]) -> String {
    let names: Vec<&str> = l.iter().filter_map(Form::symbol_name).collect();
    if names.is_empty() {
        "x".to_string()
    } else {
        names.join(" ")
    }
}

/// `[x for x in xs]`: Python's list comprehension written as a vector.
fn is_comprehension(items: &[Form]) -> bool {
    let at = |name: &str| items.iter().position(|f| f.symbol_name() == Some(name));
    matches!((at("for"), at("in")), (Some(f), Some(i)) if f > 0 && f < i)
}

/// Namespace prefixes that are simply dropped before a builtin lookup (§7.17).
const DROPPED_PREFIXES: &[&str] = &[
    "clojure.core",
    "core",
    "clojure.string",
    "str",
    "string",
    "clojure.set",
    "set",
    "regex",
    "Math",
    "Interop",
    "System",
    "Double",
    "java.time.LocalDate",
    "LocalDate",
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

#[derive(Default)]
struct FnScope {
    names: Vec<(Str, Slot)>,
    next_slot: Slot,
    captures: Vec<(Str, CaptureSrc)>,
}

enum LocalRef {
    Slot(Slot),
    Capture(u32),
}

struct ShortFnCtx {
    max_index: usize,
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
    let mut a = Analyzer {
        scopes: vec![FnScope::default()],
        recur_targets: Vec::new(),
        short_fn: None,
        depth: 0,
        max_nesting: opts.max_nesting,
        max_string_size: opts.max_string_size,
        reaches_host: false,
    };
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

fn count_symbols(forms: &[Form], max: usize) -> Result<()> {
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

fn err_at(pos: Pos, msg: impl Into<String>) -> Error {
    Error::analysis(msg).at(pos)
}

fn is_placeholder(s: &str) -> Option<usize> {
    if s == "%" {
        return Some(1);
    }
    let rest = s.strip_prefix('%')?;
    if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rest.parse::<usize>().ok()
}

impl Analyzer {
    // ---- scopes ----

    fn scope(&mut self) -> &mut FnScope {
        let n = self.scopes.len() - 1;
        &mut self.scopes[n]
    }

    fn bind(&mut self, name: &Str) -> Slot {
        let s = self.scope();
        let slot = s.next_slot;
        s.next_slot += 1;
        s.names.push((name.clone(), slot));
        slot
    }

    fn mark(&mut self) -> usize {
        self.scope().names.len()
    }

    fn unbind_to(&mut self, mark: usize) {
        self.scope().names.truncate(mark);
    }

    fn resolve_in(&mut self, depth: usize, name: &str) -> Option<LocalRef> {
        let scope = &self.scopes[depth];
        if let Some((_, slot)) = scope.names.iter().rev().find(|(n, _)| n.as_str() == name) {
            return Some(LocalRef::Slot(*slot));
        }
        if let Some(i) = scope.captures.iter().position(|(n, _)| n.as_str() == name) {
            return Some(LocalRef::Capture(i as u32));
        }
        if depth == 0 {
            return None;
        }
        let outer = self.resolve_in(depth - 1, name)?;
        let src = match outer {
            LocalRef::Slot(s) => CaptureSrc::Local(s),
            LocalRef::Capture(i) => CaptureSrc::Capture(i),
        };
        let scope = &mut self.scopes[depth];
        scope.captures.push((Str::from(name), src));
        Some(LocalRef::Capture(scope.captures.len() as u32 - 1))
    }

    fn resolve_local(&mut self, name: &str) -> Option<Node> {
        let depth = self.scopes.len() - 1;
        self.resolve_in(depth, name).map(|r| match r {
            LocalRef::Slot(s) => Node::Local(s),
            LocalRef::Capture(i) => Node::Capture(i),
        })
    }

    fn visible_locals(&self) -> Vec<Str> {
        let mut out: Vec<Str> = Vec::new();
        for s in &self.scopes {
            let names = s
                .names
                .iter()
                .map(|(n, _)| n)
                .chain(s.captures.iter().map(|(n, _)| n));
            for n in names {
                if !n.starts_with('%') && !out.contains(n) {
                    out.push(n.clone());
                }
            }
        }
        out
    }

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
                if is_comprehension(items) && self.resolve_local("for").is_none() {
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

    fn symbol(&mut self, s: &Str, pos: Pos) -> Result<Node> {
        if let Some(idx) = is_placeholder(s) {
            return self.placeholder(s, idx, pos);
        }
        if let Some(n) = self.resolve_local(s) {
            return Ok(n);
        }
        if SPECIAL_FORMS.contains(&s.as_ref()) {
            return Err(Error::new(
                ErrorKind::UndefinedVariable,
                format!("{s} is a special form, not a value"),
            )
            .at(pos)
            .with_hint(format!("it is a special form; write ({s} ...)")));
        }
        if let Some(b) = builtins::lookup(s) {
            return Ok(builtin_value(b));
        }
        if let Some(n) = s.strip_prefix('*') {
            if let Ok(i @ 1..=3) = n.parse::<usize>() {
                self.reaches_host = true; // an earlier result may hold a tool
                return Ok(Node::History(i));
            }
        }
        if let Some((ns, name)) = split_ns(s) {
            return self.namespaced(ns, name, pos).map(|r| match r {
                NsRef::Data(k) => Node::DataRef(k),
                NsRef::Tool(t) => Node::ToolFn(t),
                NsRef::User(u) => Node::UserRef(u, pos),
                NsRef::Builtin(b) => builtin_value(b),
            });
        }
        self.reaches_host = true; // a definition, a tool or data: known only when it runs
        Ok(Node::Global(Arc::new(GlobalRef {
            name: s.clone(),
            pos,
            locals: self.visible_locals(),
        })))
    }

    fn namespaced(&mut self, ns: &str, name: &str, pos: Pos) -> Result<NsRef> {
        if name.is_empty() {
            return Err(err_at(pos, format!("{ns}/ needs a name after the slash")));
        }
        match ns {
            "data" => Ok(NsRef::Data(Str::from(name))),
            "tool" | "user" => {
                // a tool, or a definition that may call one
                self.reaches_host = true;
                Ok(if ns == "tool" {
                    NsRef::Tool(Str::from(name))
                } else {
                    NsRef::User(Str::from(name))
                })
            }
            _ if DROPPED_PREFIXES.contains(&ns) => match builtins::lookup(name) {
                Some(b) => Ok(NsRef::Builtin(b)),
                None => Err(err_at(
                    pos,
                    format!("{name} is not available. {}", builtins::family_hint(ns)),
                )
                .with_hint(crate::hints::absent_hint(name).unwrap_or_else(|| {
                    format!("{ns}/ prefixes only reach builtins; {ns}/{name} is not one")
                }))),
            },
            _ => {
                Err(err_at(pos, format!("unknown namespace {ns}/"))
                    .with_hint(crate::hints::absent_hint(name).unwrap_or_else(|| {
                    "use tool/ for tools, data/ for input data; your own definitions need no prefix"
                        .to_string()
                })))
            }
        }
    }

    fn placeholder(&mut self, s: &str, idx: usize, pos: Pos) -> Result<Node> {
        let Some(ctx) = self.short_fn.as_mut() else {
            return Err(
                err_at(pos, format!("{s} is only meaningful inside #( ... )")).with_hint(
                    if s == "%" {
                        "for a remainder use (mod a b); to name parameters use (fn [x] ...)"
                    } else {
                        "use (fn [x] ...) to name parameters"
                    },
                ),
            );
        };
        if idx == 0 {
            return Err(err_at(
                pos,
                "%0 is not a valid placeholder; the first argument is % or %1",
            ));
        }
        if idx > 20 {
            return Err(err_at(
                pos,
                format!("{s}: at most 20 placeholders are supported"),
            ));
        }
        ctx.max_index = ctx.max_index.max(idx);
        // Resolved by name so that a `fn` nested in `#()` captures the placeholder.
        let name = format!("%{idx}");
        self.resolve_local(&name)
            .ok_or_else(|| err_at(pos, format!("{s} is only meaningful inside #( ... )")))
    }

    fn short_fn(&mut self, body: &[Form], pos: Pos) -> Result<Node> {
        if self.short_fn.is_some() {
            return Err(err_at(pos, "nested #( ) forms are not supported")
                .with_hint("use (fn [x] ...) for the inner function"));
        }
        self.scopes.push(FnScope::default());
        // Parameters %1..%k, k the highest placeholder written (an unused lower one still counts).
        let arity = max_placeholder(body).min(20);
        for i in 0..arity {
            self.bind(&Str::from(format!("%{}", i + 1)));
        }
        self.short_fn = Some(ShortFnCtx { max_index: 0 });
        // `#()` is a `fn`, so `recur` re-enters it with one value per placeholder
        self.recur_targets
            .push((arity, Some((0..arity as Slot).collect())));
        let result = self.short_fn_body(body, pos);
        self.recur_targets.pop();
        let ctx = self.short_fn.take();
        let scope = self.scopes.pop().unwrap_or_default();
        let body_node = result?;
        let arity = ctx.map_or(0, |c| c.max_index);
        let params: Vec<Pattern> = (0..arity as u32).map(Pattern::Bind).collect();
        let param_names = (1..=arity).map(|i| format!("%{i}")).collect();
        self.finish_lambda(None, params, None, param_names, scope, body_node, pos)
    }

    fn short_fn_body(&mut self, body: &[Form], pos: Pos) -> Result<Node> {
        match body.len() {
            0 => Ok(Node::Const(Value::Nil)),
            1 => match &body[0].kind {
                FormKind::Symbol(s) if is_placeholder(s).is_none() => {
                    self.list(&body[..1], body[0].pos, true)
                }
                _ => self.expr(&body[0], true),
            },
            _ => self.list(body, pos, true),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn finish_lambda(
        &mut self,
        name: Option<Str>,
        params: Vec<Pattern>,
        rest: Option<Pattern>,
        param_names: Vec<String>,
        scope: FnScope,
        mut body: Node,
        pos: Pos,
    ) -> Result<Node> {
        liveness::optimize_lambda(&mut body, scope.next_slot);
        let lambda = Lambda {
            name,
            params,
            rest,
            param_names,
            frame_size: scope.next_slot,
            body,
            pos,
        };
        let caps: Vec<CaptureSrc> = scope.captures.iter().map(|(_, c)| *c).collect();
        Ok(Node::MakeFn(Arc::new(lambda), caps.into_boxed_slice()))
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
                if let Some(hint) = unsupported_form(name) {
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
        b: &'static Builtin,
        written: &str,
        args: &[Form],
        pos: Pos,
    ) -> Result<Node> {
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
                let mut acc = first.clone();
                for step in &args[1..] {
                    acc = thread_step(acc, step, name == "->")?;
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

    fn binding_vector<'f>(
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

    fn let_form(&mut self, args: &[Form], pos: Pos, tail: bool, is_loop: bool) -> Result<Node> {
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

    fn if_let(&mut self, name: &str, args: &[Form], pos: Pos, tail: bool) -> Result<Node> {
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

    fn params(&mut self, pv: &[Form]) -> Result<(Vec<Pattern>, Option<Pattern>, Vec<String>)> {
        let mut params = Vec::new();
        let mut rest = None;
        let mut names = Vec::new();
        let mut i = 0;
        while i < pv.len() {
            let p = &pv[i];
            if p.symbol_name() == Some("&") {
                if i + 2 != pv.len() {
                    return Err(err_at(p.pos, "& must be followed by exactly one parameter")
                        .with_hint("[a b & more]"));
                }
                names.push("&".to_string());
                names.push(param_name(&pv[i + 1]));
                rest = Some(self.pattern(&pv[i + 1])?);
                break;
            }
            names.push(param_name(p));
            params.push(self.pattern(p)?);
            i += 1;
        }
        Ok((params, rest, names))
    }

    fn fn_form(&mut self, name: Option<Str>, args: &[Form], pos: Pos) -> Result<Node> {
        let pv = match args.first().map(|f| &f.kind) {
            Some(FormKind::Vector(v)) => v,
            Some(FormKind::Symbol(_)) => {
                return Err(
                    err_at(pos, "named fn forms (fn name [x] ...) are not supported")
                        .with_hint("write (fn [x] ...), or use defn to define a named function"),
                )
            }
            Some(FormKind::List(l)) if !is_arity(l) => {
                return Err(err_at(pos, "fn parameters go in a vector, not a list")
                    .with_hint(format!("(fn [{}] body)", names_of(l))))
            }
            Some(FormKind::List(_)) => {
                return Err(
                    err_at(pos, "multi-arity functions are not supported").with_hint(
                        "use separate defn forms, or one variadic [a & more] parameter list",
                    ),
                )
            }
            _ => {
                return Err(err_at(pos, "fn needs a parameter vector").with_hint("(fn [x y] body)"))
            }
        };
        if args.len() < 2 {
            let what = name
                .as_ref()
                .map_or_else(|| "fn".to_string(), |n| format!("defn {n}"));
            return Err(err_at(
                pos,
                format!("{what} needs a body after the parameter vector"),
            )
            .with_hint("(fn [x] (* x 2)); return nil explicitly if that is what you mean"));
        }
        self.scopes.push(FnScope::default());
        let result = (|| -> Result<ParsedFn> {
            let (params, rest, names) = self.params(pv)?;
            let slots = if rest.is_some() {
                None
            } else {
                simple_slots(params.iter())
            };
            self.recur_targets
                .push((params.len() + usize::from(rest.is_some()), slots));
            let body = self.body(&args[1..], true);
            self.recur_targets.pop();
            Ok((params, rest, names, body?))
        })();
        let scope = self.scopes.pop().unwrap_or_default();
        let (params, rest, names, body) = result?;
        self.finish_lambda(name, params, rest, names, scope, body, pos)
    }

    fn def_name(&self, f: Option<&Form>, what: &str, pos: Pos) -> Result<Str> {
        match f.map(|f| &f.kind) {
            Some(FormKind::Symbol(s)) => {
                if split_ns(s).is_some() {
                    return Err(err_at(pos, format!("{what} needs a plain name, got {s}"))
                        .with_hint("definitions live in the user namespace: (def total 3)"));
                }
                if SPECIAL_FORMS.contains(&s.as_ref())
                    || builtins::lookup(s).is_some()
                    || matches!(s.as_ref(), "nil" | "true" | "false")
                {
                    return Err(Error::new(
                        ErrorKind::CannotShadowBuiltin,
                        format!("cannot define {s}: it is a builtin"),
                    )
                    .at(pos)
                    .with_hint(format!("choose another name, e.g. my-{s}")));
                }
                Ok(s.clone())
            }
            Some(FormKind::Vector(_) | FormKind::Map(_)) => Err(err_at(
                pos,
                format!("{what} names one value; it cannot destructure"),
            )
            .with_hint("def the whole value, or destructure with let: (let [[a b] v] body)")),
            _ => Err(err_at(pos, format!("{what} needs a name first"))
                .with_hint(format!("({what} name ...)"))),
        }
    }

    fn def_form(&mut self, args: &[Form], pos: Pos) -> Result<Node> {
        let name = self.def_name(args.first(), "def", pos)?;
        let (doc, value) = match args.len() {
            2 => (None, &args[1]),
            3 => match &args[1].kind {
                FormKind::Str(d) => (Some(d.clone()), &args[2]),
                _ => {
                    return Err(err_at(
                        pos,
                        "def takes a name, an optional docstring and one value",
                    )
                    .with_hint("(def name \"doc\" value)"))
                }
            },
            1 => {
                return Err(err_at(pos, format!("def of {name} is missing its value"))
                    .with_hint(format!("(def {name} value)")))
            }
            _ => {
                return Err(err_at(
                    pos,
                    format!(
                        "def takes a name, an optional docstring and one value; got {} forms",
                        args.len()
                    ),
                )
                .with_hint("(def name \"doc\" value)"))
            }
        };
        let value = self.expr(value, false)?;
        Ok(Node::Def(Box::new(Def { name, doc, value })))
    }

    fn defn_form(&mut self, args: &[Form], pos: Pos) -> Result<Node> {
        let name = self.def_name(args.first(), "defn", pos)?;
        let mut rest = &args[1..];
        let mut doc = None;
        if let Some(Form {
            kind: FormKind::Str(d),
            ..
        }) = rest.first()
        {
            if rest.len() > 1 {
                doc = Some(d.clone());
                rest = &rest[1..];
            }
        }
        match rest.first().map(|f| &f.kind) {
            Some(FormKind::Vector(_)) => {}
            Some(FormKind::List(l)) if !is_arity(l) => {
                return Err(err_at(pos, format!("defn {name}: parameters go in a vector, not a list"))
                    .with_hint(format!("(defn {name} [{}] body)", names_of(l))))
            }
            Some(FormKind::List(_)) => {
                return Err(err_at(pos, format!("multi-arity defn of {name} is not supported"))
                    .with_hint("use separate defn forms with different names, or one variadic [a & more] parameter list"))
            }
            Some(FormKind::Map(_)) => {
                return Err(err_at(pos, "attribute maps and pre/post conditions in defn are not supported"))
            }
            _ => {
                return Err(err_at(pos, format!("defn {name} needs a parameter vector"))
                    .with_hint(format!("(defn {name} \"doc\" [x] body)")))
            }
        }
        let f = self.fn_form(Some(name.clone()), rest, pos)?;
        Ok(Node::Def(Box::new(Def {
            name,
            doc,
            value: f,
        })))
    }

    fn doseq(&mut self, args: &[Form], pos: Pos) -> Result<Node> {
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

    fn where_form(&mut self, args: &[Form], pos: Pos) -> Result<Node> {
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

    // ---- destructuring patterns ----

    fn pattern(&mut self, f: &Form) -> Result<Pattern> {
        match &f.kind {
            FormKind::Symbol(s) => {
                check_bindable(s, f.pos)?;
                Ok(Pattern::Bind(self.bind(s)))
            }
            FormKind::Vector(items) => {
                let mut pats = Vec::new();
                let mut rest = None;
                let mut i = 0;
                while i < items.len() {
                    let it = &items[i];
                    if it.symbol_name() == Some("&") {
                        if i + 2 != items.len() {
                            return Err(err_at(
                                it.pos,
                                "& must be followed by exactly one pattern",
                            ));
                        }
                        rest = Some(Box::new(self.pattern(&items[i + 1])?));
                        break;
                    }
                    if matches!(&it.kind, FormKind::Keyword(k) if k.as_str() == "as") {
                        return Err(
                            err_at(it.pos, ":as inside a vector pattern is not supported")
                                .with_hint(
                                    "bind the whole value with let first, then destructure it",
                                ),
                        );
                    }
                    pats.push(self.pattern(it)?);
                    i += 1;
                }
                Ok(Pattern::Vector {
                    items: pats,
                    rest,
                    pos: f.pos,
                })
            }
            FormKind::Map(items) => self.map_pattern(items, f.pos),
            _ => Err(err_at(f.pos, "invalid binding pattern").with_hint(
                "bind a name, a vector pattern [a b & more] or a map pattern {:keys [a b]}",
            )),
        }
    }

    fn map_pattern(&mut self, items: &[Form], pos: Pos) -> Result<Pattern> {
        let mut entries: Vec<MapPatEntry> = Vec::new();
        let mut defaults: Vec<(Str, Value, Pos)> = Vec::new();
        let mut as_name: Option<(Str, Pos)> = None;
        let mut has_content = false;
        let mut pending: Vec<(Str, Value, Option<&Form>)> = Vec::new(); // (local, key, nested pattern)
        for pair in items.chunks(2) {
            let (k, v) = (&pair[0], &pair[1]);
            match &k.kind {
                FormKind::Keyword(kw) if kw.as_str() == "keys" => {
                    has_content = true;
                    let FormKind::Vector(names) = &v.kind else {
                        return Err(err_at(v.pos, ":keys takes a vector of names")
                            .with_hint("{:keys [a b]}"));
                    };
                    for n in names {
                        let name: Str = match &n.kind {
                            FormKind::Symbol(s) => s.clone(),
                            FormKind::Keyword(s) => s.clone(),
                            _ => {
                                return Err(err_at(
                                    n.pos,
                                    ":keys names must be symbols or keywords",
                                ))
                            }
                        };
                        pending.push((name.clone(), Value::Keyword(name), None));
                    }
                }
                FormKind::Keyword(kw) if kw.as_str() == "or" => {
                    has_content = true;
                    let FormKind::Map(ds) = &v.kind else {
                        return Err(err_at(v.pos, ":or takes a map of defaults")
                            .with_hint("{:keys [a] :or {a 5}}"));
                    };
                    for d in ds.chunks(2) {
                        let name = match &d[0].kind {
                            FormKind::Symbol(s) => s.clone(),
                            _ => {
                                return Err(err_at(
                                    d[0].pos,
                                    ":or defaults are keyed by the bound symbol",
                                )
                                .with_hint("{:keys [a] :or {a 5}}"))
                            }
                        };
                        let val = match &d[1].kind {
                            FormKind::Nil => Value::Nil,
                            FormKind::Bool(b) => Value::Bool(*b),
                            FormKind::Int(i) => Value::Int(*i),
                            FormKind::Float(x) => Value::Float(*x),
                            FormKind::Str(s) => Value::Str(s.clone()),
                            FormKind::Keyword(s) => Value::Keyword(s.clone()),
                            _ => return Err(err_at(d[1].pos, ":or defaults must be literals (number, string, keyword, boolean or nil)")),
                        };
                        defaults.push((name, val, d[0].pos));
                    }
                }
                FormKind::Keyword(kw) if kw.as_str() == "as" => match &v.kind {
                    FormKind::Symbol(s) => as_name = Some((s.clone(), v.pos)),
                    _ => return Err(err_at(v.pos, ":as takes a name")),
                },
                FormKind::Keyword(kw) if kw.as_str() == "strs" || kw.as_str() == "syms" => {
                    return Err(
                        err_at(k.pos, format!(":{kw} destructuring is not supported"))
                            .with_hint("use :keys, which also matches string keys"),
                    );
                }
                FormKind::Symbol(_) | FormKind::Vector(_) | FormKind::Map(_) => {
                    has_content = true;
                    let key = match &v.kind {
                        FormKind::Keyword(s) => Value::Keyword(s.clone()),
                        FormKind::Str(s) => Value::Str(s.clone()),
                        FormKind::Symbol(s) => Value::Keyword(s.clone()),
                        FormKind::Int(i) => Value::Int(*i),
                        _ => {
                            return Err(err_at(
                                v.pos,
                                "a rename pattern maps a name to a key: {local :key}",
                            ))
                        }
                    };
                    let local = k
                        .symbol_name()
                        .map(Str::from)
                        .unwrap_or_else(|| Str::from(""));
                    pending.push((local, key, Some(k)));
                }
                _ => {
                    return Err(err_at(k.pos, "invalid map pattern entry")
                        .with_hint("map patterns use :keys, :or, :as and {local :key} renames"))
                }
            }
        }
        if !has_content {
            return Err(err_at(pos, "a map pattern needs :keys, a rename or :or")
                .with_hint("{:keys [a b] :as whole}"));
        }
        for (local, key, nested) in pending {
            let pattern = match nested {
                Some(f) => self.pattern(f)?,
                None => {
                    check_bindable(&local, pos)?;
                    Pattern::Bind(self.bind(&local))
                }
            };
            let default = defaults
                .iter()
                .find(|(n, _, _)| *n == local)
                .map(|(_, v, _)| v.clone());
            entries.push(MapPatEntry {
                key,
                pattern,
                default,
            });
        }
        let as_slot = match as_name {
            Some((n, p)) => {
                check_bindable(&n, p)?;
                Some(self.bind(&n))
            }
            None => None,
        };
        Ok(Pattern::Map {
            entries,
            as_slot,
            pos,
        })
    }
}

type ParsedFn = (Vec<Pattern>, Option<Pattern>, Vec<String>, Node);

enum NsRef {
    Data(Str),
    Tool(Str),
    User(Str),
    Builtin(&'static Builtin),
}

/// The highest placeholder index used in a `#()` body (nested `fn` bodies included).
fn max_placeholder(forms: &[Form]) -> usize {
    let mut max = 0;
    let mut stack: Vec<&Form> = forms.iter().collect();
    while let Some(f) = stack.pop() {
        match &f.kind {
            FormKind::Symbol(s) => {
                if let Some(i) = is_placeholder(s) {
                    max = max.max(i);
                }
            }
            FormKind::List(v) | FormKind::Vector(v) | FormKind::Map(v) | FormKind::Set(v) => {
                stack.extend(v.iter())
            }
            _ => {}
        }
    }
    max
}

/// The slots of patterns that are all plain names (so `recur` can assign them directly).
fn simple_slots<'p>(patterns: impl Iterator<Item = &'p Pattern>) -> Option<Vec<Slot>> {
    patterns
        .map(|p| match p {
            Pattern::Bind(s) => Some(*s),
            _ => None,
        })
        .collect()
}

fn builtin_value(b: &'static Builtin) -> Node {
    match b.constant {
        Some(c) => Node::Const(c()),
        None => Node::Const(Value::Builtin(b)),
    }
}

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

fn param_name(f: &Form) -> String {
    match &f.kind {
        FormKind::Symbol(s) => s.to_string(),
        _ => "_".to_string(),
    }
}

fn check_bindable(s: &str, pos: Pos) -> Result<()> {
    if split_ns(s).is_some() {
        return Err(err_at(pos, format!("cannot bind the namespaced name {s}"))
            .with_hint("local names have no namespace"));
    }
    if SPECIAL_FORMS.contains(&s) {
        return Err(
            err_at(pos, format!("cannot bind {s}: it is a special form"))
                .with_hint("choose another name"),
        );
    }
    if is_placeholder(s).is_some() {
        return Err(err_at(
            pos,
            format!("cannot bind {s}: % names are placeholders of #( )"),
        ));
    }
    Ok(())
}

/// `ns/name` -> `(ns, name)`. `/` alone and names like `java.util.Date.` are not namespaced.
pub fn split_ns(s: &str) -> Option<(&str, &str)> {
    if s == "/" {
        return None;
    }
    let i = s.find('/')?;
    if i == 0 {
        return None;
    }
    Some((&s[..i], &s[i + 1..]))
}

fn thread_step(acc: Form, step: &Form, first: bool) -> Result<Form> {
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
