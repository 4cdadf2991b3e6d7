//! `pmap`/`pcalls` branches: a child interpreter per branch and the merge of their tool calls.

use std::time::{Duration, Instant};

use super::host::{Host, ToolCallRecord, UserNs};
use super::tape::Tape;
use super::{EvalResult, Interp};
use crate::guard::Budget;
use crate::limits::BRANCH_TIMEOUT_MS;
use crate::value::{Str, Value};

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
    tape: Option<&'a Tape>,
    /// The ids of the branches' calls start with this and the branch's index.
    fork: Str,
}

impl<'a> BranchEnv<'a> {
    pub fn host(&self) -> &'a dyn Host {
        self.host
    }

    /// When the branches must end (the run's deadline, or the branch time limit if sooner).
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// A fresh interpreter for branch `i`: the namespace snapshot, its own stack, prints,
    /// definitions and counters; the branch's deadline and place in the run.
    pub fn interp(&self, i: usize) -> Interp<'a> {
        let mut it = Interp::new(
            self.host,
            self.budget,
            self.data,
            self.user.clone(),
            self.history,
        );
        it.deadline = self.deadline;
        it.depth = self.depth;
        it.tape = self.tape;
        it.prefix = Str::from(format!("{}{i}.", self.fork).as_str());
        it
    }
}

impl<'a> Interp<'a> {
    /// Adds the steps not yet charged to the run's budget (the budget then knows all the work).
    pub fn publish_steps(&mut self) {
        // a speculative pass's steps are charged only if it succeeds (`stages.rs`)
        debug_assert!(
            self.speculating == 0,
            "steps published inside a speculative pass"
        );
        self.budget.add_fuel(self.steps - self.charged);
        self.charged = self.steps;
    }

    /// What a parallel branch needs to start its own interpreter on another thread.
    pub fn branch_env(&mut self) -> BranchEnv<'a> {
        self.publish_steps();
        let branch_deadline = Instant::now() + Duration::from_millis(BRANCH_TIMEOUT_MS);
        // a fork takes a call number of its own: the calls after it keep their ids whatever
        // its branches do
        let fork = Str::from(format!("{}{}.", self.prefix, self.seq).as_str());
        self.seq += 1;
        BranchEnv {
            tape: self.tape,
            fork,
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
}
