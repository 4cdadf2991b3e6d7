//! Lexical scopes: locals become frame slots; captures are found through enclosing functions.

use super::Analyzer;
use crate::ir::{CaptureSrc, Node, Slot};
use crate::value::Str;

#[derive(Default)]
pub(super) struct FnScope {
    pub(super) names: Vec<(Str, Slot)>,
    pub(super) next_slot: Slot,
    pub(super) captures: Vec<(Str, CaptureSrc)>,
}

pub(super) enum LocalRef {
    Slot(Slot),
    Capture(u32),
}

impl Analyzer {
    pub(super) fn scope(&mut self) -> &mut FnScope {
        let n = self.scopes.len() - 1;
        &mut self.scopes[n]
    }

    pub(super) fn bind(&mut self, name: &Str) -> Slot {
        let s = self.scope();
        let slot = s.next_slot;
        s.next_slot += 1;
        s.names.push((name.clone(), slot));
        slot
    }

    pub(super) fn mark(&mut self) -> usize {
        self.scope().names.len()
    }

    pub(super) fn unbind_to(&mut self, mark: usize) {
        self.scope().names.truncate(mark);
    }

    pub(super) fn resolve_in(&mut self, depth: usize, name: &str) -> Option<LocalRef> {
        // the nearest function that knows the name, looked for outwards in a loop: functions
        // nest as deep as `max_nesting` allows, too deep for a recursion on the native stack
        let mut d = depth;
        let mut found = loop {
            let scope = &self.scopes[d];
            if let Some((_, slot)) = scope.names.iter().rev().find(|(n, _)| n.as_str() == name) {
                break LocalRef::Slot(*slot);
            }
            if let Some(i) = scope.captures.iter().position(|(n, _)| n.as_str() == name) {
                break LocalRef::Capture(i as u32);
            }
            if d == 0 {
                charge_walk(depth);
                return None;
            }
            d -= 1;
        };
        charge_walk(depth - d);
        // each function inside that one captures it from the function around it
        for inner in d + 1..=depth {
            let src = match found {
                LocalRef::Slot(s) => CaptureSrc::Local(s),
                LocalRef::Capture(i) => CaptureSrc::Capture(i),
            };
            let scope = &mut self.scopes[inner];
            scope.captures.push((Str::from(name), src));
            found = LocalRef::Capture(scope.captures.len() as u32 - 1);
        }
        Some(found)
    }

    pub(super) fn resolve_local(&mut self, name: &str) -> Option<Node> {
        let depth = self.scopes.len() - 1;
        self.resolve_in(depth, name).map(|r| match r {
            LocalRef::Slot(s) => Node::Local(s),
            LocalRef::Capture(i) => Node::Capture(i),
        })
    }

    pub(super) fn visible_locals(&self) -> Vec<Str> {
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
}

/// A long walk outwards is charged to the run (each name inside functions nested thousands deep
/// walks them all); the few functions ordinary programs nest cost nothing, as before.
fn charge_walk(scopes: usize) {
    if scopes > 16 {
        crate::guard::charge(scopes);
    }
}
