//! Running a program: read, analyze, evaluate, and decide what the user namespace becomes.
//! A run that ends in an error leaves the namespace exactly as it was (all-or-nothing).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::analyzer::symbol_limit;
use crate::analyzer::{analyze, AnalyzeOptions};
use crate::error::{Error, ErrorKind};
use crate::eval::{FlowKind, Host, Interp, PendingCall, Tape, ToolCallRecord, UserNs};
use crate::guard::{self, Budget, NeverInterrupted};
use crate::ir::Program;
use crate::limits::Limits;
use crate::reader::read_with_limits;
#[allow(unused_imports)]
use crate::value::Str;
use crate::value::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Value,
    Return,
    Fail,
    Error,
    /// Stopped at calls that wait for the host (`RunResult::pending`); nothing is committed.
    Pending,
}

pub struct RunResult {
    pub outcome: Outcome,
    /// The last value, the `return` value or the `fail` reason (nil for errors).
    pub value: Value,
    pub error: Option<Error>,
    pub prints: Vec<String>,
    /// Notes for the host: `data/` names the run read that are not in the input.
    pub warnings: Vec<String>,
    pub tool_calls: Vec<ToolCallRecord>,
    /// The calls the run stopped at (outcome `Pending`), in id order.
    pub pending: Vec<PendingCall>,
    /// Clock readings of the run by id (when it ran with a tape), for its replays.
    pub clock: Vec<(Str, i64)>,
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
    /// Results of the last three runs, newest first (`*1`, `*2`, `*3`; nil before there
    /// were as many). An array, so that a run's snapshot of the state allocates nothing.
    pub history: [Value; 3],
}

impl SessionState {
    pub fn new(data: Value) -> Self {
        SessionState {
            data,
            user: UserNs::default(),
            history: Default::default(),
        }
    }
}

/// Runs `src` against a snapshot of the state with a budget of its own; returns the result and,
/// unless the run failed with an error, the namespace to commit. Panics become `internal_error`.
pub fn run_source(
    src: &str,
    state: &SessionState,
    host: &dyn Host,
    limits: &Limits,
) -> (RunResult, Option<UserNs>) {
    let budget = Budget::new(*limits, Arc::new(NeverInterrupted), None);
    run_in(src, state, host, &budget)
}

/// Runs `src` within `budget`, which the caller may keep using afterwards (to convert the
/// result within the same limits). Reading and analysis are part of the run: their memory and
/// time count.
pub fn run_in(
    src: &str,
    state: &SessionState,
    host: &dyn Host,
    budget: &Budget,
) -> (RunResult, Option<UserNs>) {
    match prepare(src, budget) {
        Ok(program) => execute(&program, state, host, budget),
        Err(r) => (*r, None),
    }
}

/// Reads and analyzes `src` within `budget`; an error is returned as the run's result.
pub fn prepare(src: &str, budget: &Budget) -> Result<Program, Box<RunResult>> {
    let prepared = guard::with_budget(budget, || {
        guard::catch(budget, || {
            let limits = &budget.limits;
            let forms =
                read_with_limits(src, limits.max_nesting, symbol_limit(limits.max_symbols))?;
            analyze(
                &forms,
                &AnalyzeOptions {
                    max_symbols: limits.max_symbols,
                    max_nesting: limits.max_nesting,
                    max_string_size: limits.max_string_size,
                },
            )
        })
    });
    match prepared {
        Ok(Ok(program)) => Ok(program),
        Ok(Err(e)) | Err(e) => {
            let mut r = error_result(e);
            r.steps = budget.fuel_used();
            r.duration = budget.started.elapsed();
            Err(Box::new(r))
        }
    }
}

/// Reads `src` and analyzes each top-level form on its own (for `check`): the program of the
/// forms that analyze and the errors of those that do not; a parse error (or a limit) alone
/// when the text cannot be read.
pub fn prepare_each(src: &str, budget: &Budget) -> Result<(Program, Vec<Error>), Error> {
    let read = guard::with_budget(budget, || {
        guard::catch(budget, || {
            let limits = &budget.limits;
            let forms =
                read_with_limits(src, limits.max_nesting, symbol_limit(limits.max_symbols))?;
            Ok(crate::analyzer::analyze_each(
                &forms,
                &AnalyzeOptions {
                    max_symbols: limits.max_symbols,
                    max_nesting: limits.max_nesting,
                    max_string_size: limits.max_string_size,
                },
            ))
        })
    });
    match read {
        Ok(r) => r,
        Err(e) => Err(e),
    }
}

/// Evaluates a prepared program within `budget`; returns the result and, unless the run failed
/// with an error, the namespace to commit.
pub fn execute(
    program: &Program,
    state: &SessionState,
    host: &dyn Host,
    budget: &Budget,
) -> (RunResult, Option<UserNs>) {
    execute_taped(program, state, host, budget, None)
}

/// [`execute`], answering from and adding to `tape` (a run that can stop at calls waiting for
/// the host, and be resumed: `eval/tape.rs`).
pub fn execute_taped(
    program: &Program,
    state: &SessionState,
    host: &dyn Host,
    budget: &Budget,
    tape: Option<&Tape>,
) -> (RunResult, Option<UserNs>) {
    guard::with_budget(budget, || {
        let _ = crate::eval::take_salvaged(); // left by an earlier run on this thread
        let caught = guard::catch(budget, || evaluate(program, state, host, budget, tape));
        let (mut r, ns) = match caught {
            Ok(done) => done,
            Err(e) => {
                let mut r = error_result(e);
                r.tool_calls = crate::eval::take_salvaged();
                (r, None)
            }
        };
        r.steps = budget.fuel_used();
        if r.duration.is_zero() {
            // not measured by the final check (a run that ended in an error)
            r.duration = budget.started.elapsed();
        }
        (r, ns)
    })
}

/// The result of a run that ended with `e` before it evaluated anything.
pub fn error_result(e: Error) -> RunResult {
    RunResult {
        outcome: Outcome::Error,
        value: Value::Nil,
        error: Some(e),
        prints: Vec::new(),
        warnings: Vec::new(),
        tool_calls: Vec::new(),
        pending: Vec::new(),
        clock: Vec::new(),
        defined: Vec::new(),
        returns: Vec::new(),
        steps: 0,
        duration: Duration::ZERO,
    }
}

fn evaluate(
    program: &Program,
    state: &SessionState,
    host: &dyn Host,
    budget: &Budget,
    tape: Option<&Tape>,
) -> (RunResult, Option<UserNs>) {
    let mut interp = Interp::new(
        host,
        budget,
        &state.data,
        state.user.clone(),
        &state.history,
    );
    interp.set_tape(tape);
    let mut result = interp.run_program(program);
    interp.publish_steps();
    let finished = match &result {
        Ok(_) => true,
        Err(f) => f.is_return_or_fail(),
    };
    let mut duration = Duration::ZERO;
    if finished {
        // what the last steps allocated or took is checked too, not only what came before
        let now = Instant::now();
        duration = now.saturating_duration_since(budget.started);
        if let Err(e) = budget
            .check_at(budget.deadline, now)
            .and_then(|()| budget.check_memory(0))
        {
            result = Err(e.into());
        }
    }
    // a replay that left its record ends with that, whatever the program did after
    if let Some(e) = tape.and_then(Tape::take_divergence) {
        result = Err(e.into());
    }
    let (outcome, value, error) = match result {
        Ok(v) => (Outcome::Value, v, None),
        Err(f) => match f.into_kind() {
            Some(FlowKind::Return(v)) => (Outcome::Return, v, None),
            Some(FlowKind::Fail(v)) => (Outcome::Fail, v, None),
            Some(FlowKind::Error(e)) => (Outcome::Error, Value::Nil, Some(e)),
            Some(FlowKind::Pending) => (Outcome::Pending, Value::Nil, None),
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
    let records = interp.take_records();
    let finished = !matches!(outcome, Outcome::Error | Outcome::Pending);
    let ns = finished.then_some(records.user);
    let (pending, clock) = match tape {
        Some(t) => {
            let pending = t.take_pending();
            let clock = t.take_readings();
            (
                if outcome == Outcome::Pending {
                    pending
                } else {
                    Vec::new()
                },
                clock,
            )
        }
        None => (Vec::new(), Vec::new()),
    };
    let r = RunResult {
        outcome,
        value,
        error,
        prints: records.prints,
        warnings: records.warnings,
        tool_calls: records.tool_calls,
        pending,
        clock,
        defined: records.defined,
        returns: records.returns,
        steps: 0,
        duration,
    };
    (r, ns)
}

/// Commits a finished run into the state (unless it errored): the names it defined and
/// `*1..*3`. Only the names the run defined change, so a run nested inside one of its Session's
/// tools (which commits first) keeps its definitions too.
pub fn commit(state: &mut SessionState, result: &RunResult, ns: Option<UserNs>) {
    if let Some(ns) = ns {
        for (c, tag) in &result.returns {
            c.record_return(*tag);
        }
        if !result.defined.is_empty() {
            let user = Arc::make_mut(&mut state.user);
            for name in &result.defined {
                if let Some(d) = ns.get(name) {
                    user.insert(name.clone(), d.clone());
                }
            }
        }
        state.history.rotate_right(1);
        state.history[0] = history_value(&result.value);
    }
}

/// Turn history keeps about 1 KB of each result: a larger value is kept as its truncated text.
fn history_value(v: &Value) -> Value {
    match v {
        // printed in far less than 1 KB (a 128-byte text escaped as `\uXXXX` throughout takes
        // 770 characters): kept as they are, without printing them
        Value::Nil | Value::Bool(_) | Value::Int(_) | Value::Float(_) => return v.clone(),
        Value::Str(s) | Value::Keyword(s) if s.len() <= 128 => return v.clone(),
        _ => {}
    }
    let (text, truncated) = crate::format::to_clojure(v, Some(10), Some(1024));
    if truncated || text.len() > 1024 {
        let cut = crate::format::grapheme_prefix_len(&text, 1024);
        Value::string(text[..cut].to_string())
    } else {
        v.clone()
    }
}
