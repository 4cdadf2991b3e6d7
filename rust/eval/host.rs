//! The host seen from the interpreter: tools, their failures and records, and the user namespace.

use std::sync::Arc;
use std::time::{Duration, Instant};

use indexmap::IndexMap;

use super::tape::{self, Gate, How};
use super::{EvalResult, Interp};
use crate::error::{Error, ErrorKind, Pos};
use crate::guard::Budget;
use crate::hints;
use crate::value::{RandomState, Str, Value};

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
    /// The call's id in the run (`tape.rs`): a host that records calls as they start keys
    /// its records by it.
    pub id: &'c Str,
}

/// What the interpreter needs from its host: the tools.
pub trait Host: Sync {
    fn has_tool(&self, name: &str) -> bool;
    fn tool_names(&self) -> Vec<String>;
    /// The most calls of `name` one run may make, when the tool caps its own.
    fn max_calls(&self, _name: &str) -> Option<u64> {
        None
    }
    fn call_tool(
        &self,
        name: &str,
        args: &[Value],
        ctx: &ToolCtx<'_>,
    ) -> std::result::Result<Value, ToolFailure>;
    /// Whether calls of `name` need the host's decision first (`gate`): approval and deferred
    /// tools.
    fn gated(&self, _name: &str) -> bool {
        false
    }
    /// The host's decision for the call `id` of a gated tool (`pos`: where it is written, when
    /// known).
    fn gate(&self, _id: &str, _name: &str, _args: &[Value], _pos: Option<Pos>) -> Gate {
        Gate::Call
    }
    /// Whether calling `name` twice with the same arguments does no more than calling it once
    /// (`idempotent=True`): a call that was under way when an earlier process died is then
    /// made again instead of waiting for the host's decision.
    fn idempotent(&self, _name: &str) -> bool {
        false
    }
    /// The tools' descriptions, for `(tools "query")` and `(doc tool/name)`
    /// (`crate::catalogue`): `None` when the host describes none, and then the tools' names
    /// are all those builtins know.
    fn catalogue(&self) -> Option<&crate::catalogue::Catalogue> {
        None
    }
    /// The clock the program reads, in milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64 {
        system_now_ms()
    }
    /// Runs a thread's share of the run's work (a parallel branch's thread), giving the host a
    /// chance to prepare the thread once for the tool calls it will make.
    fn thread_scope(&self, work: &mut (dyn FnMut() + Send)) {
        work()
    }
}

/// The system clock in milliseconds since the Unix epoch.
pub fn system_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
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
    /// Where in the run the call happened (`tape.rs`): the same in every replay of the run.
    pub id: Str,
    pub name: Str,
    pub args: Vec<Value>,
    pub result: Option<Value>,
    pub error: Option<String>,
    pub duration: Duration,
    /// Still running when the run ended: its result, if it ever comes, is discarded.
    pub abandoned: bool,
    /// How it came to its outcome (called, approved, answered, rejected).
    pub how: How,
    /// Answered from the record of an earlier run (the tool was not called again).
    pub replayed: bool,
}

impl<'a> Interp<'a> {
    pub fn call_tool(&mut self, name: &Str, args: &mut [Value]) -> EvalResult {
        self.refuse_effect()?;
        if !self.host.has_tool(name) {
            let (message, hint) = hints::unknown_tool(name, &self.host.tool_names());
            let mut e = Error::new(ErrorKind::UnknownTool, message);
            if let Some(h) = hint {
                e = e.with_hint(h);
            }
            return Err(e.into());
        }
        self.budget
            .admit_tool_call(name, self.host.max_calls(name))?;
        let seq = self.seq;
        self.seq += 1;
        let id = self.call_id(seq);
        let site = self.site.take();
        let args: Vec<Value> = args.iter_mut().map(std::mem::take).collect();
        let how = match self.settle(&id, name, &args, site) {
            tape::Settle::Call(how) => how,
            tape::Settle::Done { r, record } => {
                if let Some((how, error, replayed)) = record {
                    self.tool_calls.push(ToolCallRecord {
                        id,
                        name: name.clone(),
                        args,
                        result: r.as_ref().ok().cloned(),
                        error,
                        duration: Duration::ZERO,
                        abandoned: false,
                        how,
                        replayed,
                    });
                }
                return r;
            }
        };
        let started = Instant::now();
        self.publish_steps();
        let ctx = ToolCtx {
            budget: self.budget,
            deadline: self.deadline,
            id: &id,
        };
        let outcome = self.host.call_tool(name, &args, &ctx);
        let duration = started.elapsed();
        let mut record = ToolCallRecord {
            id,
            name: name.clone(),
            args,
            result: None,
            error: None,
            duration,
            abandoned: false,
            how,
            replayed: false,
        };
        let r = match outcome {
            Ok(v) => {
                record.result = Some(v.clone());
                Ok(v)
            }
            Err(ToolFailure::Failed(msg)) => {
                let e = tape::tool_failed(name, &msg);
                record.error = Some(msg);
                Err(e.into())
            }
            Err(ToolFailure::Misused { message, hint }) => {
                let e = tape::tool_failed(name, &message).with_hint(hint);
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
