//! Runs that stop at a tool call and go on later: call ids, the record a resumed run is
//! answered from, the host's gate in front of a call, and the calls left pending.
//!
//! Evaluation is deterministic apart from tools and the clock, so a run replayed with the same
//! tool results and clock readings reaches the same calls in the same places. A call's id says
//! where it happens: its sequence number inside its interpreter, after the path of `pmap` /
//! `pcalls` branches down to it (`3`, `2.0.1`). A resumed run answers every id it finds in the
//! record from the record (checking that the call is the one recorded), and calls tools only
//! for ids it has not seen.

use std::collections::HashMap;
use std::sync::Mutex;

use super::{EvalResult, Flow, Interp};
use crate::error::{Error, ErrorKind, Pos};
use crate::value::{identical, SetData, Shared, Str, Value, ValueMap, ValueSet};

/// What the host decides for a call of a tool that needs a decision (approval, deferred).
pub enum Gate {
    /// Call the tool now.
    Call,
    /// Do not call it: this is its value (a deferred tool answered by the host).
    Answer(Value),
    /// Do not call it: the program gets a `rejected` error with this reason.
    Reject(String),
    /// No decision yet: the run stops here.
    Pending,
}

/// How a recorded call ended, or the decision taken for a call that was pending.
#[derive(Clone)]
pub enum Recorded {
    Returned(Value),
    Failed(String),
    Rejected(String),
    /// Approved while pending: the tool is called when the run reaches it.
    Approved,
    /// Started by an earlier process that died before the call returned: whether it took
    /// effect is unknown. Made again when the tool is idempotent, else it waits for the host.
    Interrupted,
}

/// How a call in a run's record came to its outcome.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum How {
    /// Called without a decision (a tool that needs none).
    Called,
    /// Called after a decision allowed it (a person, a policy, an approved plan).
    Approved,
    /// Not called: the host gave its value.
    Answered,
    /// Not called: the host rejected it.
    Rejected,
}

impl How {
    pub fn as_str(self) -> &'static str {
        match self {
            How::Called => "called",
            How::Approved => "approved",
            How::Answered => "answered",
            How::Rejected => "rejected",
        }
    }

    pub fn parse(s: &str) -> Option<How> {
        Some(match s {
            "called" => How::Called,
            "approved" => How::Approved,
            "answered" => How::Answered,
            "rejected" => How::Rejected,
            _ => return None,
        })
    }
}

/// One call of an earlier run of the same program (or a decision for a pending one).
#[derive(Clone)]
pub struct Entry {
    pub name: Str,
    /// The arguments as recorded; functions among them are recorded as their printed label.
    /// `None`: not recorded (a call recorded by a host as it started), so not compared.
    pub args: Option<Vec<Value>>,
    pub outcome: Recorded,
    pub how: How,
    /// A decision the host gave for a pending call on this resume (not a replay of a call).
    pub decision: bool,
}

/// A call the run stopped at, waiting for the host.
#[derive(Clone)]
pub struct PendingCall {
    pub id: Str,
    pub name: Str,
    pub args: Vec<Value>,
    pub pos: Option<Pos>,
    /// Started by an earlier run that ended before the call returned (a crash): whether it
    /// took effect is unknown.
    pub interrupted: bool,
}

/// The record a run is answered from, and what the run adds to it besides its tool calls:
/// clock readings and the calls it stopped at. Shared by the run's parallel branches.
#[derive(Default)]
pub struct Tape {
    calls: HashMap<Str, Entry>,
    clock: HashMap<Str, i64>,
    readings: Mutex<Vec<(Str, i64)>>,
    pending: Mutex<Vec<PendingCall>>,
    diverged: Mutex<Option<Error>>,
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Tape {
    pub fn new(calls: HashMap<Str, Entry>, clock: HashMap<Str, i64>) -> Tape {
        Tape {
            calls,
            clock,
            ..Tape::default()
        }
    }

    pub fn entry(&self, id: &str) -> Option<&Entry> {
        self.calls.get(id)
    }

    /// The recorded entries no call of this run reached (`reached`: the ids it did reach).
    pub fn unreached<'t>(&'t self, reached: &[&str]) -> Vec<(&'t Str, &'t Entry)> {
        let mut out: Vec<_> = self
            .calls
            .iter()
            .filter(|(id, e)| {
                !matches!(e.outcome, Recorded::Approved | Recorded::Interrupted)
                    && e.args.is_some()
                    && !reached.contains(&id.as_str())
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(b.0));
        out
    }

    pub fn clock_reading(&self, id: &str) -> Option<i64> {
        self.clock.get(id).copied()
    }

    fn note_reading(&self, id: Str, ms: i64) {
        locked(&self.readings).push((id, ms));
    }

    /// The clock readings of this run, in id order.
    pub fn take_readings(&self) -> Vec<(Str, i64)> {
        let mut r = std::mem::take(&mut *locked(&self.readings));
        r.sort_by(|a, b| a.0.cmp(&b.0));
        r
    }

    fn add_pending(&self, call: PendingCall) {
        locked(&self.pending).push(call);
    }

    /// The calls this run stopped at, in id order.
    pub fn take_pending(&self) -> Vec<PendingCall> {
        let mut p = std::mem::take(&mut *locked(&self.pending));
        p.sort_by(|a, b| a.id.cmp(&b.id));
        p
    }

    fn diverge(&self, e: Error) {
        locked(&self.diverged).get_or_insert(e);
    }

    /// The first divergence from the record, if any: it decides the run's outcome whatever
    /// else happened (a replay that left its record must not produce a result).
    pub fn take_divergence(&self) -> Option<Error> {
        locked(&self.diverged).take()
    }
}

/// What becomes of a tool call before the tool is called.
pub(super) enum Settle {
    /// Call the tool; recorded as this.
    Call(How),
    /// Settled without calling it; `record`: how the call is recorded, with its error text
    /// (`None`: not recorded, as a pending call or a divergence is not a call).
    Done {
        r: EvalResult,
        record: Option<(How, Option<String>, bool)>,
    },
}

impl Settle {
    fn unrecorded(r: EvalResult) -> Settle {
        Settle::Done { r, record: None }
    }
    fn recorded(r: EvalResult, error: Option<String>, how: How, replayed: bool) -> Settle {
        Settle::Done {
            r,
            record: Some((how, error, replayed)),
        }
    }
}

/// A value as a record can hold it: functions and regexes become their printed label, so the
/// arguments of a call can be compared with a record read back from text.
pub fn recordable(v: &Value) -> Value {
    match v {
        Value::Builtin(_) | Value::Closure(_) | Value::Native(_) | Value::Var(_) => {
            Value::string(crate::format::fn_label(v))
        }
        Value::Regex(r) => Value::string(format!("#\"{}\"", r.source)),
        Value::Vector(xs) if xs.iter().any(holds_function) => {
            Value::vector(xs.iter().map(recordable).collect())
        }
        Value::Set(s) if s.0.iter().any(holds_function) => {
            let mut out = ValueSet::default();
            out.extend(s.0.iter().map(recordable));
            Value::Set(Shared::new(SetData(out)))
        }
        Value::Map(m) if holds_function(v) => {
            let mut out = ValueMap::default();
            out.extend(m.iter().map(|(k, x)| (recordable(k), recordable(x))));
            Value::map(out)
        }
        other => other.clone(),
    }
}

fn holds_function(v: &Value) -> bool {
    match v {
        Value::Builtin(_)
        | Value::Closure(_)
        | Value::Native(_)
        | Value::Var(_)
        | Value::Regex(_) => true,
        Value::Vector(xs) => xs.iter().any(holds_function),
        Value::Set(s) => s.0.iter().any(holds_function),
        Value::Map(m) => m
            .iter()
            .any(|(k, v)| holds_function(k) || holds_function(v)),
        _ => false,
    }
}

fn same_args(computed: &[Value], recorded: &[Value]) -> bool {
    computed.len() == recorded.len()
        && computed
            .iter()
            .zip(recorded)
            .all(|(c, r)| identical(c, r) || (holds_function(c) && identical(&recordable(c), r)))
}

/// The error a run ends with when the replay does not find the call its record holds.
fn divergence(id: &str, name: &str, args: &[Value], entry: &Entry) -> Error {
    let show =
        |xs: &[Value]| crate::format::to_clojure(&Value::vector(xs.to_vec()), Some(5), Some(200)).0;
    let shown = show(args);
    let what = match &entry.args {
        // a call recorded as it started: only its tool is known
        None => format!(
            "tool/{name} {shown} where the record has a call of tool/{}",
            entry.name
        ),
        Some(was) if entry.name.as_str() == name => {
            format!(
                "tool/{name} with {shown} where the record has {}",
                show(was)
            )
        }
        Some(was) => format!(
            "tool/{name} {shown} where the record has tool/{} {}",
            entry.name,
            show(was)
        ),
    };
    Error::new(
        ErrorKind::Replay,
        format!("the resumed run left its record at call {id}: it called {what}"),
    )
    .with_hint(
        "the program, the data, the definitions or the record changed since the run stopped; \
         start the run again instead of resuming it",
    )
}

impl<'a> Interp<'a> {
    /// The id of this interpreter's call number `seq`.
    pub(super) fn call_id(&self, seq: u32) -> Str {
        // on every tool call: the digits on the stack, and most ids fit a `Str` inline
        let mut digits = [0u8; 10];
        let mut at = digits.len();
        let mut n = seq;
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let digits = std::str::from_utf8(&digits[at..]).unwrap_or("0");
        if self.prefix.is_empty() {
            return Str::from(digits);
        }
        let mut id = String::with_capacity(self.prefix.len() + digits.len());
        id.push_str(&self.prefix);
        id.push_str(digits);
        Str::from(id.as_str())
    }

    /// The tool call at `id` as the record and the host decide it.
    pub(super) fn settle(
        &mut self,
        id: &Str,
        name: &Str,
        args: &[Value],
        site: Option<Pos>,
    ) -> Settle {
        let Some(tape) = self.tape else {
            if !self.host.gated(name) {
                return Settle::Call(How::Called);
            }
            return match self.host.gate(id, name, args, site) {
                Gate::Call => Settle::Call(How::Approved),
                _ => Settle::unrecorded(Err(Error::exec(format!(
                    "tool/{name} needs a decision by the host, and this run cannot stop to \
                     wait for one"
                ))
                .into())),
            };
        };
        if let Some(entry) = tape.entry(id) {
            let args_differ = entry.args.as_ref().is_some_and(|a| !same_args(args, a));
            if entry.name != *name || args_differ {
                let e = divergence(id, name, args, entry);
                tape.diverge(e.clone());
                return Settle::unrecorded(Err(e.into()));
            }
            let (how, replayed) = (entry.how, !entry.decision);
            return match &entry.outcome {
                Recorded::Approved => Settle::Call(How::Approved),
                // made again as it was first made (an approval tool's call stays approved)
                Recorded::Interrupted if self.host.idempotent(name) => Settle::Call(how),
                Recorded::Interrupted => {
                    tape.add_pending(PendingCall {
                        id: id.clone(),
                        name: name.clone(),
                        args: args.to_vec(),
                        pos: site,
                        interrupted: true,
                    });
                    Settle::unrecorded(Err(Flow::pending()))
                }
                Recorded::Returned(v) => Settle::recorded(Ok(v.clone()), None, how, replayed),
                Recorded::Failed(m) => Settle::recorded(
                    Err(tool_failed(name, m).into()),
                    Some(m.clone()),
                    how,
                    replayed,
                ),
                Recorded::Rejected(r) => Settle::recorded(
                    Err(rejected(name, r).into()),
                    Some(r.clone()),
                    How::Rejected,
                    replayed,
                ),
            };
        }
        if !self.host.gated(name) {
            return Settle::Call(How::Called);
        }
        match self.host.gate(id, name, args, site) {
            Gate::Call => Settle::Call(How::Approved),
            Gate::Answer(v) => Settle::recorded(Ok(v), None, How::Answered, false),
            Gate::Reject(r) => Settle::recorded(
                Err(rejected(name, &r).into()),
                Some(r),
                How::Rejected,
                false,
            ),
            Gate::Pending => {
                tape.add_pending(PendingCall {
                    id: id.clone(),
                    name: name.clone(),
                    args: args.to_vec(),
                    pos: site,
                    interrupted: false,
                });
                Settle::unrecorded(Err(Flow::pending()))
            }
        }
    }

    /// The clock in milliseconds since the epoch: the record's reading when the run is a
    /// replay, else the host's clock (recorded). Refused in a speculative pass, so readings
    /// happen in the order the program is written.
    pub fn clock_ms(&mut self) -> EvalResult<i64> {
        self.refuse_effect()?;
        let n = self.clock_seq;
        self.clock_seq += 1;
        let Some(tape) = self.tape else {
            return Ok(self.host.now_ms());
        };
        let id = Str::from(format!("{}t{n}", self.prefix).as_str());
        let ms = match tape.clock_reading(&id) {
            Some(ms) => ms,
            None => self.host.now_ms(),
        };
        tape.note_reading(id, ms);
        Ok(ms)
    }
}

pub(super) fn tool_failed(name: &str, msg: &str) -> Error {
    Error::new(ErrorKind::Tool, format!("Tool '{name}' failed: {msg}"))
}

fn rejected(name: &str, reason: &str) -> Error {
    Error::new(
        ErrorKind::Rejected,
        format!("tool/{name} was not allowed: {reason}"),
    )
    .with_hint("the host rejected this call; do not repeat it unchanged")
}
