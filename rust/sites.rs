//! What a program names before it runs (issue 31, `check`): every written tool call with the
//! arguments that are literals, every tool used as a value, every `data/` name and every
//! literal key read. Nothing is evaluated.
//!
//! The walk keeps its own stack: a program may nest as deep as its host allows.

use crate::error::Pos;
use crate::ir::{Node, Program};
use crate::value::Value;

/// An argument as far as the source shows it.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// A literal, or a collection of literals.
    Known(Value),
    /// Computed when the program runs.
    Unknown,
    /// A map literal whose keys are constants and some values are not.
    Map(Vec<(Value, Arg)>),
    /// A vector literal with some elements not known.
    Vector(Vec<Arg>),
}

/// One written call `(tool/name args...)`.
#[derive(Debug, Clone)]
pub struct Site {
    pub tool: String,
    pub args: Vec<Arg>,
    pub pos: Pos,
    /// Under `if`/`when`/`cond`/`and`/`or`, or inside a function: it may not run.
    pub conditional: bool,
    /// Inside a function, a `loop` or a `doseq`: it may run more than once.
    pub repeats: bool,
}

/// Everything the walk found, in source order within each list.
#[derive(Debug, Default)]
pub struct Sites {
    pub calls: Vec<Site>,
    /// `tool/name` used as a value (`(map tool/f xs)`), where it was written when known.
    pub tool_values: Vec<String>,
    /// `data/` names read.
    pub data: Vec<String>,
    /// Literal keywords read from a value, `(:k x)` or `(get x :k)`, where they are written.
    pub keys: Vec<(String, Pos)>,
}

/// An argument as far as its written form shows it.
pub fn arg(node: &Node) -> Arg {
    arg_with(node, &mut |_| None)
}

/// An argument as far as its written form shows it, asking `leaf` about the parts that are
/// not literals (a name whose value is known).
pub fn arg_with(node: &Node, leaf: &mut dyn FnMut(&Node) -> Option<Arg>) -> Arg {
    match node {
        Node::Const(v) => Arg::Known(v.clone()),
        Node::VecLit(items) => {
            let items: Vec<Arg> = items.iter().map(|i| arg_with(i, leaf)).collect();
            if items.iter().all(|a| matches!(a, Arg::Known(_))) {
                let values = items
                    .into_iter()
                    .map(|a| match a {
                        Arg::Known(v) => v,
                        _ => Value::Nil,
                    })
                    .collect();
                Arg::Known(Value::vector(values))
            } else {
                Arg::Vector(items)
            }
        }
        Node::MapLit(pairs, ..) => {
            let mut out = Vec::with_capacity(pairs.len());
            for (k, v) in pairs.iter() {
                let Node::Const(key) = k else {
                    return Arg::Unknown;
                };
                out.push((key.clone(), arg_with(v, leaf)));
            }
            Arg::Map(out)
        }
        other => leaf(other).unwrap_or(Arg::Unknown),
    }
}

/// Builtins whose keyword arguments are keys being written or plain values, not reads.
const WRITES_KEYS: &[&str] = &[
    "assoc", "assoc-in", "dissoc", "conj", "vector", "hash-map", "str", "println", "=", "not=",
    "keyword", "name", "set", "list",
];

fn keyword_args(args: &[Node], pos: Pos, keys: &mut Vec<(String, Pos)>) {
    for a in args {
        if let Node::Const(Value::Keyword(k)) = a {
            keys.push((k.to_string(), pos));
        }
    }
}

/// Walks the program (function bodies included) without evaluating it.
pub fn sites(program: &Program) -> Sites {
    let mut out = Sites::default();
    // (node, conditional, repeats); children pushed in reverse so they pop in source order
    let mut stack: Vec<(&Node, bool, bool)> = program
        .body
        .iter()
        .rev()
        .map(|n| (n, false, false))
        .collect();
    while let Some((node, cond, rep)) = stack.pop() {
        // children go on the stack, then are turned around to pop in source order
        let start = stack.len();
        let children = &mut stack;
        match node {
            Node::CallTool(name, args, pos) => {
                out.calls.push(Site {
                    tool: name.to_string(),
                    args: args.iter().map(arg).collect(),
                    pos: *pos,
                    conditional: cond,
                    repeats: rep,
                });
            }
            Node::ToolFn(name, _) => out.tool_values.push(name.to_string()),
            Node::KwGet(Value::Keyword(k), _, pos) => out.keys.push((k.to_string(), *pos)),
            // a keyword given to a builtin is read as a key or used as a function, `(map :k
            // xs)`, except where a builtin writes the key or uses it as a plain value
            Node::CallBuiltin(b, args, pos) if !WRITES_KEYS.contains(&b.name) => {
                keyword_args(args, *pos, &mut out.keys)
            }
            Node::Stages(st) => keyword_args(&st.args, st.pos, &mut out.keys),
            Node::DataRef(name) if !out.data.iter().any(|d| d.as_str() == &**name) => {
                out.data.push(name.to_string());
            }
            _ => {}
        }
        match node {
            Node::If(b) => {
                children.push((&b.0, cond, rep));
                children.push((&b.1, true, rep));
                children.push((&b.2, true, rep));
            }
            Node::And(items) | Node::Or(items) => {
                for (i, item) in items.iter().enumerate() {
                    children.push((item, cond || i > 0, rep));
                }
            }
            Node::Loop(l) => {
                for (_, init) in l.bindings.iter() {
                    children.push((init, cond, rep));
                }
                children.push((&l.body, cond, true));
            }
            Node::Doseq(d) => {
                for (_, c) in d.bindings.iter() {
                    children.push((c, cond, rep));
                }
                children.push((&d.body, true, true));
            }
            // a function body runs when, and as often as, the function is called
            Node::MakeFn(lambda, _) => children.push((&lambda.body, true, true)),
            _ => node.for_each_child(|c| children.push((c, cond, rep))),
        }
        stack[start..].reverse();
    }
    out
}
