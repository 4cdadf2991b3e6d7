//! Running a program: read, analyze, evaluate, and decide what the user namespace becomes.
//! A run that ends in an error leaves the namespace exactly as it was (all-or-nothing).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::analyzer::{analyze, AnalyzeOptions};
use crate::error::{Error, ErrorKind};
use crate::eval::{FlowKind, Host, Interp, ToolCallRecord, UserNs};
use crate::limits::Limits;
use crate::reader::read_with_limit;
#[allow(unused_imports)]
use crate::value::Str;
use crate::value::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Value,
    Return,
    Fail,
    Error,
}

pub struct RunResult {
    pub outcome: Outcome,
    /// The last value, the `return` value or the `fail` reason (nil for errors).
    pub value: Value,
    pub error: Option<Error>,
    pub prints: Vec<String>,
    pub tool_calls: Vec<ToolCallRecord>,
    /// Names defined or redefined by this run, in order of first definition in the run.
    pub defined: Vec<Str>,
    /// Return types of named functions called by this run, applied to them on commit.
    pub returns: Vec<(Arc<crate::value::Closure>, crate::value::TypeTag)>,
    pub steps: u64,
    pub duration: Duration,
}

/// The state a Session keeps between runs.
#[derive(Clone)]
pub struct SessionState {
    pub data: Value,
    pub user: UserNs,
    /// Results of the last three runs, newest first (`*1`, `*2`, `*3`).
    pub history: Vec<Value>,
}

impl SessionState {
    pub fn new(data: Value) -> Self {
        SessionState {
            data,
            user: UserNs::default(),
            history: Vec::new(),
        }
    }
}

/// Runs `src` against a snapshot of the state; returns the result and, unless the run failed
/// with an error, the namespace to commit. Panics are caught and become `internal_error`.
pub fn run_source(
    src: &str,
    state: &SessionState,
    host: &dyn Host,
    limits: &Limits,
) -> (RunResult, Option<UserNs>) {
    let started = Instant::now();
    let caught = catch_unwind(AssertUnwindSafe(|| run_inner(src, state, host, limits)));
    match caught {
        Ok((mut r, ns)) => {
            r.duration = started.elapsed();
            (r, ns)
        }
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            (
                error_result(
                    Error::new(ErrorKind::Internal, format!("internal error: {msg}")),
                    started.elapsed(),
                ),
                None,
            )
        }
    }
}

fn error_result(e: Error, duration: Duration) -> RunResult {
    RunResult {
        outcome: Outcome::Error,
        value: Value::Nil,
        error: Some(e),
        prints: Vec::new(),
        tool_calls: Vec::new(),
        defined: Vec::new(),
        returns: Vec::new(),
        steps: 0,
        duration,
    }
}

fn run_inner(
    src: &str,
    state: &SessionState,
    host: &dyn Host,
    limits: &Limits,
) -> (RunResult, Option<UserNs>) {
    let forms = match read_with_limit(src, limits.max_nesting) {
        Ok(f) => f,
        Err(e) => return (error_result(e, Duration::ZERO), None),
    };
    let program = match analyze(
        &forms,
        &AnalyzeOptions {
            max_symbols: limits.max_symbols,
        },
    ) {
        Ok(p) => p,
        Err(e) => return (error_result(e, Duration::ZERO), None),
    };
    drop(forms);
    let mut interp = Interp::new(
        host,
        &state.data,
        state.user.clone(),
        &state.history,
        *limits,
    );
    let result = interp.run_program(&program);
    let (outcome, value, error) = match result {
        Ok(v) => (Outcome::Value, v, None),
        Err(f) => match f.into_kind() {
            Some(FlowKind::Return(v)) => (Outcome::Return, v, None),
            Some(FlowKind::Fail(v)) => (Outcome::Fail, v, None),
            Some(FlowKind::Error(e)) => (Outcome::Error, Value::Nil, Some(e)),
            None => (
                Outcome::Error,
                Value::Nil,
                Some(Error::new(
                    ErrorKind::Internal,
                    "internal error: recur escaped its loop",
                )),
            ),
        },
    };
    let mut defined: Vec<Str> = Vec::new();
    for d in interp.defined.drain(..) {
        if !defined.contains(&d) {
            defined.push(d);
        }
    }
    let steps = interp.steps();
    let ns = if outcome == Outcome::Error {
        None
    } else {
        Some(interp.user.clone())
    };
    let returns: Vec<_> = interp.returns.drain().map(|(_, v)| v).collect();
    let r = RunResult {
        outcome,
        value,
        error,
        prints: std::mem::take(&mut interp.prints),
        tool_calls: std::mem::take(&mut interp.tool_calls),
        defined,
        returns,
        steps,
        duration: Duration::ZERO,
    };
    (r, ns)
}

/// Commits a finished run into the state: the namespace (unless it errored) and `*1..*3`.
pub fn commit(state: &mut SessionState, result: &RunResult, ns: Option<UserNs>) {
    if let Some(ns) = ns {
        for (c, tag) in &result.returns {
            c.record_return(*tag);
        }
        state.user = ns;
        state.history.insert(0, history_value(&result.value));
        state.history.truncate(3);
    }
}

/// Turn history keeps about 1 KB of each result: a larger value is kept as its truncated text.
fn history_value(v: &Value) -> Value {
    let (text, truncated) = crate::format::to_clojure(v, Some(10), Some(1024));
    if truncated || text.len() > 1024 {
        let cut = crate::format::grapheme_prefix_len(&text, 1024);
        Value::string(text[..cut].to_string())
    } else {
        v.clone()
    }
}
