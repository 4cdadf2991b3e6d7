//! The analyzed program: special forms checked, symbols resolved to slots, captures,
//! builtins or namespaces once, before evaluation.

use std::sync::Arc;

use crate::error::Pos;
use crate::value::BuiltinId;
#[allow(unused_imports)]
use crate::value::Str;
use crate::value::{Value, WhereOp};

pub type Slot = u32;

pub enum Node {
    Const(Value),
    /// Read a local slot (the value is cloned).
    Local(Slot),
    /// Read a local slot on its last use: the value is moved out, so a uniquely held collection
    /// can be updated in place by the builtin that receives it.
    MoveLocal(Slot),
    /// Read a value captured by the enclosing closure.
    Capture(u32),
    /// A bare name that is not local or builtin: user definition, then tool, then data (§8.4).
    Global(Arc<GlobalRef>),
    /// `user/x`: the definition only.
    UserRef(Str, Pos),
    /// `data/x`
    DataRef(Str),
    /// `tool/x` used as a value.
    ToolFn(Str, Pos),
    /// `*1`, `*2`, `*3`
    History(usize),
    If(Box<(Node, Node, Node)>),
    Do(Box<[Node]>),
    Let(Box<Let>),
    Loop(Box<Let>),
    Recur(Box<[Node]>),
    /// `recur` whose target binds plain names: the new values go straight into these slots.
    RecurTo(Box<[Node]>, Box<[Slot]>),
    MakeFn(Arc<Lambda>, Box<[CaptureSrc]>),
    Def(Box<Def>),
    And(Box<[Node]>),
    Or(Box<[Node]>),
    Call(Box<Call>),
    CallBuiltin(BuiltinId, Box<[Node]>, Pos),
    /// `(map g (filter p xs))` and longer chains of `map`/`filter`/`remove` over one collection
    /// (the outermost call; its collection argument is another such call): run as one pass
    /// when it can be, see `eval/stages.rs`.
    Stages(Box<StagesCall>),
    /// `(< a b)` and the other numeric comparisons: compared inline when both are numbers,
    /// else handed to the builtin (which reports the type error).
    Compare(BuiltinId, Box<(Node, Node)>, Pos),
    CallTool(Str, Box<[Node]>, Pos),
    CallGlobal(Arc<GlobalRef>, Box<[Node]>),
    /// `(:k m)` / `(:k m default)`: keyword lookup without a generic call.
    KwGet(Value, Box<[Node]>, Pos),
    Return(Box<Node>),
    Fail(Box<Node>),
    Doseq(Box<Doseq>),
    VecLit(Box<[Node]>),
    /// A map literal; the shape when every key is a distinct constant (a record is built).
    MapLit(
        Box<[(Node, Node)]>,
        Pos,
        Option<std::sync::Arc<crate::map::Shape>>,
    ),
    SetLit(Box<[Node]>),
    Where(Box<WhereNode>),
}

/// One exhaustive list of a node's children, in evaluation order (the bodies of nested
/// lambdas are not children: they run later, in their own frame). Written once as a macro so
/// the shared and the mutable walk cannot drift apart.
macro_rules! children {
    ($node:expr, $f:expr, $iter:ident, $($m:ident)*) => {
        match $node {
            Node::If(b) => {
                $f(&$($m)* b.0);
                $f(&$($m)* b.1);
                $f(&$($m)* b.2);
            }
            Node::Do(items)
            | Node::And(items)
            | Node::Or(items)
            | Node::Recur(items)
            | Node::RecurTo(items, _)
            | Node::VecLit(items)
            | Node::SetLit(items)
            | Node::CallBuiltin(_, items, _)
            | Node::CallTool(_, items, _)
            | Node::CallGlobal(_, items)
            | Node::KwGet(_, items, _) => {
                for i in items.$iter() {
                    $f(i);
                }
            }
            Node::Let(l) | Node::Loop(l) => {
                for (_, init) in l.bindings.$iter() {
                    $f(init);
                }
                $f(&$($m)* l.body);
            }
            Node::Doseq(d) => {
                for (_, c) in d.bindings.$iter() {
                    $f(c);
                }
                $f(&$($m)* d.body);
            }
            Node::Stages(s) => {
                for i in s.args.$iter() {
                    $f(i);
                }
            }
            Node::Def(d) => $f(&$($m)* d.value),
            Node::Compare(_, xy, _) => {
                $f(&$($m)* xy.0);
                $f(&$($m)* xy.1);
            }
            Node::Call(c) => {
                $f(&$($m)* c.f);
                for a in c.args.$iter() {
                    $f(a);
                }
            }
            Node::Return(v) | Node::Fail(v) => $f(&$($m)* **v),
            Node::MapLit(pairs, ..) => {
                for (k, v) in pairs.$iter() {
                    $f(k);
                    $f(v);
                }
            }
            Node::Where(w) => {
                if let Some(v) = &$($m)* w.value {
                    $f(v);
                }
            }
            Node::MakeFn(..)
            | Node::Const(_)
            | Node::Local(_)
            | Node::MoveLocal(_)
            | Node::Capture(_)
            | Node::Global(_)
            | Node::UserRef(..)
            | Node::DataRef(_)
            | Node::ToolFn(..)
            | Node::History(_) => {}
        }
    };
}

impl Node {
    /// Calls `f` on each child, in evaluation order.
    pub fn for_each_child<'n>(&'n self, mut f: impl FnMut(&'n Node)) {
        children!(self, f, iter,)
    }

    /// The children to change, in evaluation order (walk them backwards for liveness).
    pub fn children_mut(&mut self) -> Vec<&mut Node> {
        let mut out = Vec::new();
        children!(self, (|n| out.push(n)), iter_mut, mut);
        out
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // a program may nest as deep as its host allows (max_nesting)
        if !matches!(self, Node::Const(_)) {
            crate::guard::drop_on_fresh_stack(self, Node::Const(Value::Nil));
        }
    }
}

pub struct GlobalRef {
    pub name: Str,
    pub pos: Pos,
    /// Locals visible where the name was written, for "did you mean" hints.
    pub locals: Vec<Str>,
}

pub struct Let {
    pub bindings: Vec<(Pattern, Node)>,
    pub body: Node,
}

pub struct Def {
    pub name: Str,
    pub doc: Option<Str>,
    pub value: Node,
}

/// The outermost call of a chain of `map`/`filter`/`remove` (see `Node::Stages`).
pub struct StagesCall {
    pub builtin: BuiltinId,
    pub args: Box<[Node]>,
    pub pos: Pos,
    /// Set once a pass over this chain was refused an effect (a stage prints, calls a tool):
    /// from then on it runs call by call at once, with no pass to discard each time.
    pub effects: std::sync::atomic::AtomicBool,
}

pub struct Call {
    pub f: Node,
    pub args: Box<[Node]>,
    pub pos: Pos,
}

pub struct Doseq {
    pub bindings: Vec<(Pattern, Node)>,
    pub body: Node,
    pub pos: Pos,
}

pub struct WhereNode {
    pub path: Vec<Value>,
    pub op: WhereOp,
    pub value: Option<Node>,
}

#[derive(Clone, Copy, Debug)]
pub enum CaptureSrc {
    Local(Slot),
    Capture(u32),
}

#[derive(Debug)]
pub enum Pattern {
    Bind(Slot),
    Vector {
        items: Vec<Pattern>,
        rest: Option<Box<Pattern>>,
        pos: Pos,
    },
    Map {
        entries: Vec<MapPatEntry>,
        as_slot: Option<Slot>,
        pos: Pos,
    },
}

#[derive(Debug)]
pub struct MapPatEntry {
    pub key: Value,
    pub pattern: Pattern,
    pub default: Option<Value>,
}

pub struct Lambda {
    pub name: Option<Str>,
    pub params: Vec<Pattern>,
    pub rest: Option<Pattern>,
    /// Parameter names as written (`_` for destructured ones), for `#fn[a b]` and host summaries.
    pub param_names: Vec<String>,
    pub frame_size: u32,
    /// Every parameter is a plain name in the slot of its position and there is no rest
    /// parameter: a call moves its arguments straight into the new frame.
    pub plain_params: bool,
    pub body: Node,
    pub pos: Pos,
}

impl Lambda {
    pub fn arity(&self) -> usize {
        self.params.len()
    }
    pub fn param_display(&self) -> String {
        self.param_names.join(" ")
    }
    pub fn arity_text(&self) -> String {
        if self.rest.is_some() {
            format!("{}+", self.params.len())
        } else {
            self.params.len().to_string()
        }
    }
}

/// The analyzed program: top-level forms evaluated in one frame.
pub struct Program {
    pub body: Vec<Node>,
    pub frame_size: u32,
    /// Whether running it can call a host tool (it names a tool, a definition, an earlier
    /// result or a bare name resolved at run time); programs that cannot need no protection
    /// from a blocking tool.
    pub reaches_host: bool,
}

impl crate::value::Code for Lambda {
    fn params_text(&self) -> String {
        self.param_display()
    }
}

impl crate::value::Closure {
    /// The compiled function this closure runs. Every closure is made by the evaluator from a
    /// `Lambda`, so this is `None` only for a code no evaluator made.
    #[inline]
    pub fn lambda(&self) -> Option<&Lambda> {
        self.code_as()
    }
}
