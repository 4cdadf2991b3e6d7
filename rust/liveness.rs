//! Last-use analysis: turns the final read of a local into a move.
//!
//! Collections are copy-on-write, so `(recur (inc i) (conj out i))` would copy `out` on every
//! iteration if the slot kept its reference. Moving the value out on its last use leaves the
//! builtin the only owner, and the update happens in place (O(1) instead of O(n)).
//! The pass walks each frame's IR backwards in evaluation order with the set of slots that are
//! still read later. Loops are conservative: a slot defined outside a loop and read inside it
//! stays live for the whole loop; `doseq` bodies never move.

use crate::ir::{CaptureSrc, Node, Pattern, Slot};

#[derive(Clone)]
struct Bits(Vec<u64>);

impl Bits {
    fn new(n: u32) -> Bits {
        Bits(vec![0; (n as usize).div_ceil(64).max(1)])
    }
    fn full(n: u32) -> Bits {
        Bits(vec![u64::MAX; (n as usize).div_ceil(64).max(1)])
    }
    fn has(&self, s: Slot) -> bool {
        self.0
            .get(s as usize / 64)
            .is_some_and(|w| w & (1 << (s % 64)) != 0)
    }
    fn set(&mut self, s: Slot) {
        let i = s as usize / 64;
        if i >= self.0.len() {
            self.0.resize(i + 1, 0);
        }
        self.0[i] |= 1 << (s % 64);
    }
    fn union(&mut self, o: &Bits) {
        if o.0.len() > self.0.len() {
            self.0.resize(o.0.len(), 0);
        }
        for (a, b) in self.0.iter_mut().zip(o.0.iter()) {
            *a |= *b;
        }
    }
    fn minus(&mut self, o: &Bits) {
        for (a, b) in self.0.iter_mut().zip(o.0.iter()) {
            *a &= !*b;
        }
    }
}

pub fn optimize_top(body: &mut [Node], frame_size: u32) {
    let mut live = Bits::new(frame_size);
    for n in body.iter_mut().rev() {
        visit(n, &mut live, frame_size);
    }
}

pub fn optimize_lambda(body: &mut Node, frame_size: u32) {
    let mut live = Bits::new(frame_size);
    visit(body, &mut live, frame_size);
}

fn pattern_slots(p: &Pattern, out: &mut Bits) {
    match p {
        Pattern::Bind(s) => out.set(*s),
        Pattern::Vector { items, rest, .. } => {
            for i in items {
                pattern_slots(i, out);
            }
            if let Some(r) = rest {
                pattern_slots(r, out);
            }
        }
        Pattern::Map {
            entries, as_slot, ..
        } => {
            for e in entries {
                pattern_slots(&e.pattern, out);
            }
            if let Some(s) = as_slot {
                out.set(*s);
            }
        }
    }
}

fn kill(p: &Pattern, live: &mut Bits) {
    let mut b = Bits::new(0);
    pattern_slots(p, &mut b);
    live.minus(&b);
}

/// Slots read and slots bound anywhere inside `n` (not descending into nested lambdas).
fn collect(n: &Node, reads: &mut Bits, binds: &mut Bits) {
    crate::guard::deeper(|| collect_inner(n, reads, binds))
}

fn collect_inner(n: &Node, reads: &mut Bits, binds: &mut Bits) {
    match n {
        Node::Local(s) | Node::MoveLocal(s) => reads.set(*s),
        Node::MakeFn(_, caps) => {
            for c in caps.iter() {
                if let CaptureSrc::Local(s) = c {
                    reads.set(*s);
                }
            }
        }
        Node::Let(l) | Node::Loop(l) => {
            for (p, _) in &l.bindings {
                pattern_slots(p, binds);
            }
        }
        Node::Doseq(d) => {
            for (p, _) in &d.bindings {
                pattern_slots(p, binds);
            }
        }
        _ => {}
    }
    n.for_each_child(|c| collect(c, reads, binds));
}

fn visit(node: &mut Node, live: &mut Bits, n: u32) {
    crate::guard::deeper(|| visit_inner(node, live, n))
}

fn visit_inner(node: &mut Node, live: &mut Bits, n: u32) {
    match node {
        Node::Local(s) => {
            let s = *s;
            if !live.has(s) {
                *node = Node::MoveLocal(s);
            }
            live.set(s);
        }
        Node::MoveLocal(s) => live.set(*s),
        Node::If(b) => {
            let mut then_live = live.clone();
            visit(&mut b.1, &mut then_live, n);
            visit(&mut b.2, live, n);
            live.union(&then_live);
            visit(&mut b.0, live, n);
        }
        Node::And(items) | Node::Or(items) => {
            let after = live.clone();
            let last = items.len().saturating_sub(1);
            for (i, it) in items.iter_mut().enumerate().rev() {
                if i != last {
                    live.union(&after);
                }
                visit(it, live, n);
            }
        }
        Node::Let(l) => {
            visit(&mut l.body, live, n);
            for (p, init) in l.bindings.iter_mut().rev() {
                kill(p, live);
                visit(init, live, n);
            }
        }
        Node::Loop(l) => {
            let mut reads = Bits::new(n);
            let mut binds = Bits::new(n);
            collect(&l.body, &mut reads, &mut binds);
            for (p, _) in &l.bindings {
                pattern_slots(p, &mut binds);
            }
            reads.minus(&binds);
            // Outer slots read in the body are live across iterations, and so after every recur.
            live.union(&reads);
            visit(&mut l.body, live, n);
            for (p, init) in l.bindings.iter_mut().rev() {
                kill(p, live);
                visit(init, live, n);
            }
        }
        Node::Doseq(d) => {
            let mut all = Bits::full(n);
            visit(&mut d.body, &mut all, n);
            for (i, (_, c)) in d.bindings.iter_mut().enumerate().rev() {
                if i > 0 {
                    let mut all = Bits::full(n);
                    visit(c, &mut all, n);
                }
            }
            let mut reads = Bits::new(n);
            let mut binds = Bits::new(n);
            collect(&d.body, &mut reads, &mut binds);
            for (_, c) in d.bindings.iter().skip(1) {
                collect(c, &mut reads, &mut binds);
            }
            live.union(&reads);
            if let Some((_, c)) = d.bindings.first_mut() {
                visit(c, live, n);
            }
        }
        Node::MakeFn(_, caps) => {
            for c in caps.iter() {
                if let CaptureSrc::Local(s) = c {
                    live.set(*s);
                }
            }
        }
        // the rest: each child in turn, last evaluated first
        _ => {
            for c in node.children_mut().into_iter().rev() {
                visit(c, live, n);
            }
        }
    }
}
