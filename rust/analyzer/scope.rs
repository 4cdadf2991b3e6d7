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
