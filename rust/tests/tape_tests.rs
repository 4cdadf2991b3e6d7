//! Runs that stop at calls waiting for the host, and their replays (`eval/tape.rs`).

use std::collections::HashMap;
use std::sync::Mutex;

use _core::data::value::{Str, Value};
use _core::lang::eval::{Entry, Gate, Host, How, Recorded, Tape, ToolCtx, ToolFailure};
use _core::run::error::{ErrorKind, Pos};
use _core::run::guard::{Budget, NeverInterrupted};
use _core::run::session::{execute_taped, prepare, Outcome, RunResult, SessionState};
use _core::Limits;

/// `inc` returns its argument plus one; `pay` needs approval; `ask` is answered by the gate
/// when it has an answer for the argument. Every real call is remembered.
#[derive(Default)]
struct Shop {
    calls: Mutex<Vec<(String, Vec<Value>)>>,
    approve: Vec<&'static str>,
    clock: Mutex<i64>,
}

impl Host for Shop {
    fn has_tool(&self, name: &str) -> bool {
        matches!(name, "inc" | "pay" | "ask")
    }
    fn tool_names(&self) -> Vec<String> {
        vec!["inc".into(), "pay".into(), "ask".into()]
    }
    fn gated(&self, name: &str) -> bool {
        name == "pay" || name == "ask"
    }
    fn gate(&self, id: &str, name: &str, args: &[Value], _pos: Option<Pos>) -> Gate {
        if name == "ask" {
            return match &args[0] {
                Value::Int(7) => Gate::Answer(Value::Int(70)),
                Value::Int(8) => Gate::Reject("not 8".into()),
                _ => Gate::Pending,
            };
        }
        if self.approve.contains(&id) {
            Gate::Call
        } else {
            Gate::Pending
        }
    }
    fn now_ms(&self) -> i64 {
        let mut t = self.clock.lock().unwrap();
        *t += 1000;
        *t
    }
    fn call_tool(&self, name: &str, args: &[Value], _: &ToolCtx<'_>) -> Result<Value, ToolFailure> {
        self.calls
            .lock()
            .unwrap()
            .push((name.to_string(), args.to_vec()));
        match (name, args.first()) {
            (_, Some(Value::Int(n))) => Ok(Value::Int(n + 1)),
            _ => Ok(Value::Nil),
        }
    }
}

fn run(src: &str, host: &Shop, tape: &Tape) -> RunResult {
    let state = SessionState::new(Value::empty_map());
    let budget = Budget::new(
        Limits::default(),
        std::sync::Arc::new(NeverInterrupted),
        None,
    );
    let program = match prepare(src, &budget) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    execute_taped(&program, &state, host, &budget, Some(tape)).0
}

/// The record of a run, as a resume is answered from it.
fn record_of(r: &RunResult) -> HashMap<Str, Entry> {
    r.tool_calls
        .iter()
        .map(|c| {
            let outcome = match (&c.result, &c.error) {
                (Some(v), _) => Recorded::Returned(v.clone()),
                (None, Some(e)) => Recorded::Failed(e.clone()),
                (None, None) => Recorded::Returned(Value::Nil),
            };
            let e = Entry {
                name: c.name.clone(),
                args: Some(c.args.clone()),
                outcome,
                how: c.how,
                decision: false,
            };
            (c.id.clone(), e)
        })
        .collect()
}

fn ids(r: &RunResult) -> Vec<String> {
    r.tool_calls.iter().map(|c| c.id.to_string()).collect()
}

#[test]
fn calls_are_numbered_in_order_and_forks_take_a_number() {
    let host = Shop::default();
    let r = run(
        "(tool/inc 1) (pmap (fn [x] [(tool/inc x) (tool/inc x)]) [1 2]) (tool/inc 3)",
        &host,
        &Tape::default(),
    );
    assert_eq!(r.outcome, Outcome::Value);
    let mut got = ids(&r);
    got.sort();
    assert_eq!(got, ["0", "1.0.0", "1.0.1", "1.1.0", "1.1.1", "2"]);
}

#[test]
fn a_gated_call_stops_the_run_and_nothing_after_it_runs() {
    let host = Shop::default();
    let r = run(
        "(println \"a\") (def x (tool/pay 1)) (println \"b\")",
        &host,
        &Tape::default(),
    );
    assert_eq!(r.outcome, Outcome::Pending);
    assert_eq!(r.prints, ["a"]);
    assert!(r.defined.is_empty());
    assert_eq!(r.pending.len(), 1);
    let p = &r.pending[0];
    assert_eq!((p.id.as_str(), p.name.as_str()), ("0", "pay"));
    assert_eq!(p.pos, Some(Pos { line: 1, col: 22 }));
    assert!(host.calls.lock().unwrap().is_empty());
}

#[test]
fn every_branch_runs_to_its_own_stop() {
    let host = Shop::default();
    let r = run(
        "(pmap (fn [x] (tool/inc x) (tool/pay x)) [1 2 3])",
        &host,
        &Tape::default(),
    );
    assert_eq!(r.outcome, Outcome::Pending);
    let pending: Vec<&str> = r.pending.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(pending, ["0.0.1", "0.1.1", "0.2.1"]);
    assert_eq!(host.calls.lock().unwrap().len(), 3);
}

#[test]
fn a_failing_branch_before_a_waiting_one_decides_the_outcome() {
    let host = Shop::default();
    let r = run(
        "(pmap (fn [x] (if (= x 1) (fail \"no\") (tool/pay x))) [1 2])",
        &host,
        &Tape::default(),
    );
    assert_eq!(r.outcome, Outcome::Error);
    assert_eq!(r.error.unwrap().kind, ErrorKind::Pmap);
    assert!(r.pending.is_empty());
}

#[test]
fn a_replay_answers_from_the_record_and_calls_only_new_ids() {
    let host = Shop::default();
    let src = "(def a (tool/inc 1)) (def b (tool/pay a)) (+ a b (tool/inc 10))";
    let first = run(src, &host, &Tape::default());
    assert_eq!(first.outcome, Outcome::Pending);
    let mut record = record_of(&first);
    record.insert(
        Str::from("1"),
        Entry {
            name: Str::from("pay"),
            args: Some(vec![Value::Int(2)]),
            outcome: Recorded::Approved,
            how: How::Approved,
            decision: true,
        },
    );
    let second = run(src, &host, &Tape::new(record, HashMap::new()));
    assert_eq!(second.outcome, Outcome::Value);
    assert_eq!(second.value, Value::Int(2 + 3 + 11));
    let calls: Vec<String> = host
        .calls
        .lock()
        .unwrap()
        .iter()
        .map(|(n, _)| n.clone())
        .collect();
    assert_eq!(calls, ["inc", "pay", "inc"]); // the first inc once, not twice
    let how: Vec<(String, How, bool)> = second
        .tool_calls
        .iter()
        .map(|c| (c.id.to_string(), c.how, c.replayed))
        .collect();
    assert_eq!(
        how,
        [
            ("0".to_string(), How::Called, true),
            ("1".to_string(), How::Approved, false),
            ("2".to_string(), How::Called, false)
        ]
    );
}

#[test]
fn a_replay_that_leaves_its_record_is_an_error_whatever_follows() {
    let host = Shop::default();
    let mut record = HashMap::new();
    record.insert(
        Str::from("0"),
        Entry {
            name: Str::from("inc"),
            args: Some(vec![Value::Int(5)]),
            outcome: Recorded::Returned(Value::Int(6)),
            how: How::Called,
            decision: false,
        },
    );
    let r = run("(tool/inc 1)", &host, &Tape::new(record, HashMap::new()));
    assert_eq!(r.outcome, Outcome::Error);
    let e = r.error.unwrap();
    assert_eq!(e.kind, ErrorKind::Replay);
    assert_eq!(
        e.message,
        "the resumed run left its record at call 0: it called tool/inc with [1] where the \
         record has [5]"
    );
    assert!(host.calls.lock().unwrap().is_empty());
}

#[test]
fn answers_and_rejections_of_the_gate_are_recorded() {
    let host = Shop::default();
    let r = run("[(tool/ask 7)]", &host, &Tape::default());
    assert_eq!(r.value, Value::vector(vec![Value::Int(70)]));
    assert_eq!(r.tool_calls[0].how, How::Answered);
    let r = run("(tool/ask 8)", &host, &Tape::default());
    let e = r.error.unwrap();
    assert_eq!(e.kind, ErrorKind::Rejected);
    assert_eq!(e.message, "tool/ask was not allowed: not 8");
    assert_eq!(r.tool_calls[0].how, How::Rejected);
    assert!(host.calls.lock().unwrap().is_empty());
}

#[test]
fn clock_readings_are_recorded_and_replayed() {
    let host = Shop::default();
    let src = "(def t (System/currentTimeMillis)) (tool/pay 1) t";
    let first = run(src, &host, &Tape::default());
    assert_eq!(first.clock, [(Str::from("t0"), 1000)]);
    let clock: HashMap<Str, i64> = first.clock.iter().cloned().collect();
    let mut record = HashMap::new();
    record.insert(
        Str::from("0"),
        Entry {
            name: Str::from("pay"),
            args: Some(vec![Value::Int(1)]),
            outcome: Recorded::Returned(Value::Nil),
            how: How::Approved,
            decision: false,
        },
    );
    let second = run(src, &host, &Tape::new(record, clock));
    assert_eq!(second.value, Value::Int(1000)); // not the clock's next reading, 2000
}

#[test]
fn a_gated_call_in_a_run_without_a_tape_cannot_wait() {
    let host = Shop::default();
    let (r, _) = _core::run_source(
        "(tool/pay 1)",
        &SessionState::new(Value::empty_map()),
        &host,
        &Limits::default(),
    );
    let e = r.error.unwrap();
    assert_eq!(e.kind, ErrorKind::Execution);
    assert_eq!(
        e.message,
        "tool/pay needs a decision by the host, and this run cannot stop to wait for one"
    );
}

#[test]
fn an_interrupted_call_waits_unless_its_tool_is_idempotent() {
    struct Idem(Shop);
    impl Host for Idem {
        fn has_tool(&self, name: &str) -> bool {
            self.0.has_tool(name)
        }
        fn tool_names(&self) -> Vec<String> {
            self.0.tool_names()
        }
        fn idempotent(&self, name: &str) -> bool {
            name == "inc"
        }
        fn call_tool(
            &self,
            name: &str,
            args: &[Value],
            ctx: &ToolCtx<'_>,
        ) -> Result<Value, ToolFailure> {
            self.0.call_tool(name, args, ctx)
        }
    }
    let interrupted = |name: &str| {
        let mut record = HashMap::new();
        record.insert(
            Str::from("0"),
            Entry {
                name: Str::from(name),
                args: None, // recorded as it started: arguments not kept
                outcome: Recorded::Interrupted,
                how: How::Called,
                decision: false,
            },
        );
        Tape::new(record, HashMap::new())
    };
    // not idempotent: the run waits, the call marked interrupted
    let host = Shop::default();
    let r = run("(tool/inc 1)", &host, &interrupted("inc"));
    assert_eq!(r.outcome, Outcome::Pending);
    assert!(r.pending[0].interrupted);
    assert!(host.calls.lock().unwrap().is_empty());
    // idempotent: made again
    let host = Idem(Shop::default());
    let state = SessionState::new(Value::empty_map());
    let budget = Budget::new(
        Limits::default(),
        std::sync::Arc::new(NeverInterrupted),
        None,
    );
    let program = prepare("(tool/inc 1)", &budget).ok().unwrap();
    let tape = interrupted("inc");
    let (r, _) = execute_taped(&program, &state, &host, &budget, Some(&tape));
    assert_eq!(r.value, Value::Int(2));
    assert_eq!(host.0.calls.lock().unwrap().len(), 1);
}
