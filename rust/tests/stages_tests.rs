//! Chains of map/filter/remove run as one pass (eval/stages.rs): the same values, effects in
//! the order written, the error the calls as written raise, and the same fuel.

use std::sync::Mutex;

use _core::data::value::{TypeTag, Value};
use _core::lang::eval::{Host, ToolCtx, ToolFailure};
use _core::print::format::to_clojure;
use _core::run::error::{ErrorKind, LimitName};
use _core::run::session::{run_source, Outcome, SessionState};
use _core::{Limits, NoTools, RunResult};

fn run_with(src: &str, host: &dyn Host, limits: Limits) -> RunResult {
    let state = SessionState::new(Value::empty_map());
    run_source(src, &state, host, &limits).0
}

fn run(src: &str) -> RunResult {
    run_with(src, &NoTools, Limits::default())
}

fn shown(r: &RunResult) -> String {
    match &r.error {
        Some(e) => panic!("failed: {} ({})", e.message, e.kind.as_str()),
        None => to_clojure(&r.value, None, None).0,
    }
}

#[test]
fn chains_give_the_values_of_the_calls_as_written() {
    let cases = [
        ("(map inc (filter odd? [1 2 3 4 5]))", "[2 4 6]"),
        // evens 2 4 6, squared 4 16 36, those over 20 removed
        (
            "(->> [1 2 3 4 5 6] (filter even?) (map #(* % %)) (remove #(> % 20)))",
            "[4 16]",
        ),
        (
            "(->> [{:a 1 :b true} {:a 2 :b false} {:a 3}] (filter :b) (map :a))",
            "[1]",
        ),
        ("(map :a (remove :b [{:a 1 :b true} {:a 2 :b false} {:a 3}]))", "[2 3]"),
        ("(remove nil? (map :x [{:x 1} {} {:x 3} 7]))", "[1 3]"),
        ("(filter odd? (map inc (map inc [1 2 3])))", "[3 5]"),
        ("(map inc (filter odd? []))", "[]"),
        ("(map inc (filter odd? nil))", "[]"),
        // not a vector: the calls as written
        ("(map inc (filter odd? #{3}))", "[4]"),
        ("(map upper-case (remove #(= % \"b\") \"abc\"))", "[\"A\" \"C\"]"),
        // a keyword stage over elements that are not maps reads nil
        ("(map :a (filter number? [1 {:a 2} 3]))", "[nil nil]"),
        // a chain inside a stage's function, and a sum of a chain
        (
            "(map (fn [v] (count (filter odd? (map inc v)))) (filter seq [[1 2] [] [2 4 6]]))",
            "[1 3]",
        ),
        (
            "(->> [{:s \"shipped\" :t 1.5} {:s \"new\" :t 2.0} {:s \"shipped\" :t 3}] (filter #(= (:s %) \"shipped\")) (map :t) (reduce +))",
            "4.5",
        ),
    ];
    for (src, want) in cases {
        assert_eq!(shown(&run(src)), want, "{src}");
    }
}

#[test]
fn prints_come_in_the_order_of_the_calls_as_written() {
    let r =
        run("(map (fn [x] (println \"m\" x) x) (filter (fn [x] (println \"f\" x) true) [1 2]))");
    assert_eq!(shown(&r), "[1 2]");
    assert_eq!(r.prints, ["f 1", "f 2", "m 1", "m 2"]);
}

#[test]
fn a_chain_evaluated_again_after_a_refused_effect_still_prints_in_order() {
    // the second time round the chain runs call by call at once (it is known to print)
    let r = run(
        "(doseq [i [1 2]] (->> [1 2] (filter #(do (println \"f\" i %) true)) (map #(do (println \"m\" i %) %))))",
    );
    assert_eq!(
        r.prints,
        ["f 1 1", "f 1 2", "m 1 1", "m 1 2", "f 2 1", "f 2 2", "m 2 1", "m 2 2"]
    );
}

#[test]
fn the_error_is_the_one_the_calls_as_written_raise_first() {
    // one pass would reach (mod 1 0) for the 1 before the filter's test fails on "a"
    let r = run("(map #(mod % 0) (filter #(> % 0) [1 \"a\"]))");
    let e = r.error.expect("an error");
    assert_eq!(e.kind, ErrorKind::Type, "{}", e.message);
    assert!(e.message.contains('>'), "{}", e.message);
    // and the map's own error when the filter passes everything
    let r = run("(map #(mod % 0) (filter #(> % 0) [1 2]))");
    assert_eq!(r.error.expect("an error").kind, ErrorKind::Arithmetic);
}

#[test]
fn a_return_inside_a_stage_ends_the_run_as_written() {
    // as written the filter reaches the return before the map runs at all
    let r = run(
        "(map (fn [x] (println \"m\" x) x) (filter (fn [x] (if (= x 3) (return :done) true)) [1 2 3]))",
    );
    assert_eq!(r.outcome, Outcome::Return);
    assert_eq!(shown(&r), ":done");
    assert!(r.prints.is_empty(), "{:?}", r.prints);
    assert!(r.returns.is_empty());
}

#[test]
fn a_named_function_the_calls_as_written_never_reach_records_no_return_type() {
    let r = run(
        "(defn g [x] {:v x}) (map g (filter (fn [x] (if (= x 3) (return :done) true)) [1 2 3]))",
    );
    assert_eq!(shown(&r), ":done");
    assert!(r.returns.is_empty(), "g never ran as written");
    let r = run("(defn g [x] {:v x}) (map g (filter odd? [1 2 3]))");
    assert_eq!(shown(&r), "[{:v 1} {:v 3}]");
    assert_eq!(r.returns.len(), 1);
}

/// The type recorded for the named function `name` (its last call's, in the order written).
fn recorded(r: &RunResult, name: &str) -> Option<TypeTag> {
    r.returns
        .iter()
        .find(|(c, _)| c.lambda().and_then(|l| l.name.as_deref()) == Some(name))
        .map(|(_, t)| *t)
}

#[test]
fn recorded_return_types_are_those_of_the_last_call_as_written() {
    // as written: the filter calls f on 1 ("1") and 2 (nil), then the map calls f on 1 ("1")
    let r = run("(defn f [x] (when (odd? x) (str x))) (map f (filter f [1 2]))");
    assert_eq!(shown(&r), "[\"1\"]");
    assert_eq!(recorded(&r, "f"), Some(TypeTag::Str));
    // a helper both stages call: the filter keeps 1, 3 (h gives "3") and 5; the map calls h
    // last, on 5 (true)
    let r =
        run("(defn h [x] (if (= x 3) (str x) (odd? x))) (map #(h %) (filter #(h %) [1 2 3 4 5]))");
    assert_eq!(shown(&r), "[true \"3\" true]");
    assert_eq!(recorded(&r, "h"), Some(TypeTag::Bool));
    // only the filter calls k: its last call (on 3) counts
    let r = run("(defn k [x] (when (< x 3) [x])) (map inc (filter k [1 2 3]))");
    assert_eq!(recorded(&r, "k"), Some(TypeTag::Nil));
}

#[test]
fn named_functions_in_a_long_pass_cost_no_memory_per_call() {
    // 300,000 tests and 450,000 maps by named functions, within 20 MB (the source vector is
    // 4.8 MB, the output 2.4 MB)
    let limits = Limits {
        max_memory: 20 * 1024 * 1024,
        ..Limits::default()
    };
    let r = run_with(
        "(defn p [x] (odd? x)) (defn g [x] (inc x)) (count (map g (map g (map g (filter p (vec (range 300000)))))))",
        &NoTools,
        limits,
    );
    assert_eq!(shown(&r), "150000");
}

#[test]
fn one_pass_spends_the_fuel_the_calls_as_written_spend() {
    // the same program twice, one whose stage prints (its pass is refused and the calls run
    // as written) and one whose stage calls str in the same place (one pass): equal fuel
    let program = |f: &str| {
        format!(
            "(->> (range 200) (filter #(odd? %)) (map (fn [x] (if (= x 151) ({f} \"\") 0) (* x x))) (remove #(> % 1000)) (map inc))"
        )
    };
    let as_written = run(&program("println"));
    let one_pass = run(&program("str"));
    assert_eq!(as_written.prints, [""]);
    assert!(one_pass.prints.is_empty());
    assert_eq!(shown(&as_written), shown(&one_pass));
    assert_eq!(as_written.steps, one_pass.steps);
    // keyword stages charge per element as their calls do
    let kw = |f: &str| {
        format!(
            "(->> (range 300) (map (fn [i] {{:a i :b (odd? i)}})) (filter :b) (map (fn [m] (if (= (:a m) 299) ({f} \"\") 0) m)) (map :a))"
        )
    };
    let (a, b) = (run(&kw("println")), run(&kw("str")));
    assert_eq!((a.prints.len(), b.prints.len()), (1, 0));
    assert_eq!(a.steps, b.steps);
}

#[test]
fn a_pass_that_runs_out_of_fuel_leaves_the_error_of_the_calls_as_written() {
    // one pass would spend 1000 steps per element on the map before the filter's test fails
    // on "a"; as written, the filter fails first, well within the fuel (and after checks of
    // the budget, which the pass must not have stopped)
    let src = "(map (fn [x] (reduce + (range 1000))) (filter #(> % 0) (conj (vec (range 1 3001)) \"a\")))";
    let limits = Limits {
        fuel: 50_000,
        ..Limits::default()
    };
    let e = run_with(src, &NoTools, limits).error.expect("an error");
    assert_eq!(e.kind, ErrorKind::Type, "{}", e.message);
    // and a run that does exhaust its fuel as written still does
    let src = "(map (fn [x] (reduce + (range 1000))) (filter #(> % 0) (vec (range 1 100))))";
    let e = run_with(src, &NoTools, limits).error.expect("an error");
    assert_eq!(e.limit, Some(LimitName::Fuel));
}

#[test]
fn walks_inside_a_refused_pass_are_not_charged() {
    // `(set v)` walks v (100,000 elements) per call. As written: two walks by the filter; the
    // pass walks once before the map's println is refused, then the calls walk twice
    let program = |f: &str| {
        format!(
            "(let [v (vec (range 100000))] (map #(do ({f} \"\") %) (filter #(contains? (set v) %) [1 2])))"
        )
    };
    let (refused, one_pass) = (run(&program("println")), run(&program("str")));
    assert_eq!((refused.prints.len(), one_pass.prints.len()), (2, 0));
    assert_eq!(shown(&refused), "[1 2]");
    assert_eq!(refused.steps, one_pass.steps);
}

#[test]
fn walks_inside_a_pass_that_fails_do_not_end_the_run() {
    // building v and w costs about 200,000 steps; (= v w) walks their 100,000 elements (walk
    // charges only). As written the filter fails on "a" before the map compares anything:
    // within 250,000. The pass compares for the 1 first and would run out in that walk
    let limits = Limits {
        fuel: 250_000,
        ..Limits::default()
    };
    let program = |xs: &str| {
        format!(
            "(let [v (vec (range 100000)) w (vec (range 100000))] (map (fn [_] (= v w)) (filter #(> % 0) {xs})))"
        )
    };
    let e = run_with(&program("[1 \"a\"]"), &NoTools, limits)
        .error
        .expect("an error");
    assert_eq!(e.kind, ErrorKind::Type, "{}", e.message);
    // and a pass that succeeds charges its walks: as written this runs out
    let e = run_with(&program("[1 2]"), &NoTools, limits)
        .error
        .expect("an error");
    assert_eq!(e.limit, Some(LimitName::Fuel));
}

/// Records each tool call's argument; answers with it.
struct Echo(Mutex<Vec<i64>>);
impl Host for Echo {
    fn has_tool(&self, name: &str) -> bool {
        name == "echo"
    }
    fn tool_names(&self) -> Vec<String> {
        vec!["echo".into()]
    }
    fn call_tool(&self, _: &str, args: &[Value], _: &ToolCtx<'_>) -> Result<Value, ToolFailure> {
        if let Some(Value::Int(i)) = args.first() {
            self.0.lock().unwrap_or_else(|p| p.into_inner()).push(*i);
        }
        Ok(args.first().cloned().unwrap_or(Value::Nil))
    }
}

#[test]
fn tools_in_a_stage_are_called_once_each_in_the_order_written() {
    let host = Echo(Mutex::new(Vec::new()));
    let r = run_with(
        "(->> [1 2 3 4] (filter #(odd? (tool/echo %))) (map #(tool/echo (* 10 %))))",
        &host,
        Limits::default(),
    );
    assert_eq!(shown(&r), "[10 30]");
    assert_eq!(
        *host.0.lock().unwrap_or_else(|p| p.into_inner()),
        [1, 2, 3, 4, 10, 30]
    );
    assert_eq!(r.tool_calls.len(), 6);
}

#[test]
fn definitions_and_parallel_branches_in_a_stage_happen_as_written() {
    let r = run("(map (fn [x] (def seen x) x) (filter odd? [1 2 3])) seen");
    assert_eq!(shown(&r), "3");
    let r = run("(map (fn [x] (pmap inc [x])) (filter odd? [1 2 3]))");
    assert_eq!(shown(&r), "[[2] [4]]");
}
