use _core::data::value::Value;
use _core::lang::eval::{Host, ToolCtx, ToolFailure};
use _core::run::error::{ErrorKind, LimitName};
use _core::run::session::{run_source, Outcome, SessionState};
use _core::{Limits, NoTools};

fn run_limited(src: &str, limits: Limits) -> _core::RunResult {
    let state = SessionState::new(Value::empty_map());
    run_source(src, &state, &NoTools, &limits).0
}

fn limit_err(src: &str, limits: Limits) -> _core::Error {
    let r = run_limited(src, limits);
    r.error
        .unwrap_or_else(|| panic!("{src} should hit a limit, got {:?}", r.value))
}

const SPIN: &str = "(loop [i 0] (recur (inc i)))";

#[test]
fn fuel() {
    let e = limit_err(
        SPIN,
        Limits {
            fuel: 10_000,
            ..Limits::default()
        },
    );
    assert_eq!(
        (e.kind, e.limit),
        (ErrorKind::Execution, Some(LimitName::Fuel))
    );
    assert_eq!(e.message, "evaluation step limit (fuel) of 10000 exceeded");
}

#[test]
fn loop_limit() {
    let e = limit_err(SPIN, Limits::default());
    assert_eq!(
        (e.kind, e.limit),
        (ErrorKind::LoopLimitExceeded, Some(LimitName::Loop))
    );
    assert_eq!(e.message, "loop iteration limit of 1000000 exceeded");
    let e = limit_err(
        "(doseq [x (range 100)] x)",
        Limits {
            loop_limit: 10,
            ..Limits::default()
        },
    );
    assert_eq!(e.kind, ErrorKind::LoopLimitExceeded);
}

#[test]
fn timeout() {
    let limits = Limits {
        timeout_ms: 30,
        fuel: u64::MAX,
        loop_limit: u64::MAX,
        ..Limits::default()
    };
    let t = std::time::Instant::now();
    let e = limit_err(SPIN, limits);
    assert_eq!(
        (e.kind, e.limit),
        (ErrorKind::Timeout, Some(LimitName::Timeout))
    );
    assert_eq!(e.message, "execution exceeded 30ms limit");
    assert!(t.elapsed().as_millis() < 1000);
}

#[test]
fn call_depth_is_a_limit_not_a_stack_overflow() {
    let e = limit_err("(defn f [n] (+ 1 (f n))) (f 1)", Limits::default());
    assert_eq!(
        (e.kind, e.limit),
        (ErrorKind::Execution, Some(LimitName::Depth))
    );
    // with a high limit, deep (non-tail) recursion runs: the native stack grows on demand
    let r = run_limited(
        "(defn down [n] (if (= n 0) 0 (+ 1 (down (- n 1))))) (down 20000)",
        Limits {
            max_depth: 50_000,
            ..Limits::default()
        },
    );
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_eq!(format!("{:?}", r.value), "20000");
}

#[test]
fn collection_and_string_size() {
    let small = Limits {
        max_collection_size: 1000,
        max_string_size: 1000,
        ..Limits::default()
    };
    let e = limit_err("(range 1001)", small);
    assert_eq!(
        (e.kind, e.limit),
        (ErrorKind::MemoryExceeded, Some(LimitName::CollectionSize))
    );
    let e = limit_err("(loop [v [] i 0] (recur (conj v i) (inc i)))", small);
    assert_eq!(e.limit, Some(LimitName::CollectionSize));
    let e = limit_err(
        "(loop [s \"\" i 0] (recur (str s \"abcdefghij\") (inc i)))",
        small,
    );
    assert_eq!(
        (e.kind, e.limit),
        (ErrorKind::MemoryExceeded, Some(LimitName::StringSize))
    );
    // (range) over a huge span is refused before allocating
    let e = limit_err("(range 1000000000000)", Limits::default());
    assert_eq!(e.limit, Some(LimitName::CollectionSize));
}

#[test]
fn println_output() {
    let e = limit_err(
        "(doseq [i (range 1000)] (println \"line\" i))",
        Limits {
            max_output: 100,
            ..Limits::default()
        },
    );
    assert_eq!(
        (e.kind, e.limit),
        (ErrorKind::Execution, Some(LimitName::Output))
    );
}

#[test]
fn symbols_and_nesting() {
    let src: String = (0..200).map(|i| format!("(def v{i} {i})")).collect();
    let e = limit_err(
        &src,
        Limits {
            max_symbols: 100,
            ..Limits::default()
        },
    );
    assert_eq!(e.kind, ErrorKind::SymbolLimitExceeded);
    let e = limit_err(&"(".repeat(100_000), Limits::default());
    assert_eq!(e.kind, ErrorKind::Parse);
    let e = limit_err(
        &format!("{}1{}", "[".repeat(50), "]".repeat(50)),
        Limits {
            max_nesting: 10,
            ..Limits::default()
        },
    );
    assert_eq!(e.kind, ErrorKind::Parse);
}

#[test]
fn deep_values_do_not_overflow() {
    // a million-deep vector is built, compared, printed truncated and dropped
    let r = run_limited(
        "(def deep (loop [i 0 v []] (if (< i 1000000) (recur (inc i) [v]) v))) (= deep deep) (count deep)",
        Limits::default(),
    );
    assert!(r.error.is_none(), "{:?}", r.error);
    let r = run_limited(
        "(let [a (loop [i 0 v []] (if (< i 200000) (recur (inc i) [v]) v)) b (loop [i 0 v []] (if (< i 200000) (recur (inc i) [v]) v))] (= a b))",
        Limits::default(),
    );
    assert_eq!(format!("{:?}", r.value), "true");
}

struct PanicHost;
impl Host for PanicHost {
    fn has_tool(&self, _: &str) -> bool {
        true
    }
    fn tool_names(&self) -> Vec<String> {
        vec!["boom".into()]
    }
    fn call_tool(&self, _: &str, _: &[Value], _: &ToolCtx<'_>) -> Result<Value, ToolFailure> {
        panic!("boom")
    }
}

#[test]
fn panics_become_internal_errors() {
    let state = SessionState::new(Value::empty_map());
    let (r, ns) = run_source(
        "(def a 1) (tool/boom)",
        &state,
        &PanicHost,
        &Limits::default(),
    );
    assert_eq!(r.outcome, Outcome::Error);
    let e = r.error.expect("error");
    assert_eq!(e.kind, ErrorKind::Internal);
    assert_eq!(e.message, "internal error: boom");
    assert!(ns.is_none());
}

#[test]
fn failed_runs_discard_definitions() {
    let mut state = SessionState::new(Value::empty_map());
    let (r, ns) = run_source(
        "(def a 1) (defn f [] 2)",
        &state,
        &NoTools,
        &Limits::default(),
    );
    _core::run::session::commit(&mut state, &r, ns);
    assert_eq!(state.user.len(), 2);
    let (r, ns) = run_source(
        "(def a 5) (def b 2) (undefined-fn)",
        &state,
        &NoTools,
        &Limits::default(),
    );
    assert_eq!(r.outcome, Outcome::Error);
    _core::run::session::commit(&mut state, &r, ns);
    assert_eq!(
        state.user.keys().map(|k| k.to_string()).collect::<Vec<_>>(),
        vec!["a", "f"]
    );
    assert_eq!(format!("{:?}", state.user["a"].value), "1");
}

#[test]
fn memory_counts_what_the_program_allocates() {
    let limits = Limits {
        max_memory: 8 * 1024 * 1024,
        ..Limits::default()
    };
    let e = limit_err(
        "(loop [v [] i 0] (if (< i 2000000) (recur (conj v [i]) (inc i)) (count v)))",
        limits,
    );
    assert_eq!(
        (e.kind, e.limit),
        (ErrorKind::MemoryExceeded, Some(LimitName::Memory))
    );
    // the same limit allows work that allocates little
    let r = run_limited("(reduce + (map inc (range 100000)))", limits);
    assert!(r.error.is_none(), "{:?}", r.error);
}

#[test]
fn fuel_bounds_native_work_too() {
    let limits = Limits {
        fuel: 10_000,
        ..Limits::default()
    };
    for src in [
        "(count (sort (range 100000)))",
        "(reduce + (range 100000))",
        "(count (frequencies (range 100000)))",
    ] {
        let e = limit_err(src, limits);
        assert_eq!(e.limit, Some(LimitName::Fuel), "{src}: {}", e.message);
    }
}

/// Issue 8.2: 60 doublings of `[x x]` are 60 small vectors but 2^60 leaves. Every walk that
/// follows the expanded value ends at the run's limits instead of never returning.
#[test]
fn walks_over_shared_structure_end_at_the_deadline() {
    let build = "(loop [x [1] i 0] (if (< i 60) (recur [x x] (inc i)) x))";
    let y = "(loop [x [1] i 0] (if (< i 60) (recur [x x] (inc i)) x))";
    for walk in [
        format!("(= {build} {y})"),
        format!("(compare {build} {y})"),
        format!("(count (set [{build} [{y}]]))"),
        format!("(count (frequencies [{build} {y}]))"),
        format!("(count (str {build}))"),
        format!("(count (group-by identity [{build} {y}]))"),
        format!("(sort [{build} {y}])"),
    ] {
        let started = std::time::Instant::now();
        let e = limit_err(
            &walk,
            Limits {
                timeout_ms: 200,
                fuel: u64::MAX / 4,
                max_memory: 1 << 34,
                ..Limits::default()
            },
        );
        // printing may reach max_string_size first on a fast machine; both end the walk
        assert!(
            e.kind == ErrorKind::Timeout
                || e.limit == Some(_core::run::error::LimitName::StringSize),
            "{walk}: {}",
            e.message
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{walk} took {:?}",
            started.elapsed()
        );
    }
}

/// The same walks count as work: with fuel as the bound, they end on fuel.
#[test]
fn walks_over_shared_structure_are_charged_fuel() {
    let e = limit_err(
        "(= (loop [x [1] i 0] (if (< i 60) (recur [x x] (inc i)) x)) (loop [x [1] i 0] (if (< i 60) (recur [x x] (inc i)) x)))",
        Limits {
            fuel: 1_000_000,
            ..Limits::default()
        },
    );
    assert_eq!(
        e.limit,
        Some(_core::run::error::LimitName::Fuel),
        "{}",
        e.message
    );
}

/// Issue 8.4: the native stack a deep recursion grows (on the heap, segment by segment) is
/// memory of the run: with a high `max_depth` and a small `max_memory`, memory is the limit.
#[test]
fn grown_stack_counts_as_memory() {
    let e = limit_err(
        "(defn down [n] (if (= n 0) 0 (inc (down (dec n))))) (down 99000)",
        Limits {
            max_depth: 100_000,
            max_memory: 16 * 1024 * 1024,
            ..Limits::default()
        },
    );
    assert_eq!(
        e.limit,
        Some(_core::run::error::LimitName::Memory),
        "{}",
        e.message
    );
}

/// The same recursion with room for its stack completes.
#[test]
fn deep_recursion_within_memory_completes() {
    let r = run_limited(
        "(defn down [n] (if (= n 0) 0 (inc (down (dec n))))) (down 20000)",
        Limits {
            max_depth: 100_000,
            ..Limits::default()
        },
    );
    assert!(r.error.is_none(), "{:?}", r.error);
    assert_eq!(format!("{:?}", r.value), "20000");
}

/// Reservations made before allocations end with them: a program whose allocations add up to
/// gigabytes over the run while little is alive at once stays within `max_memory`.
#[test]
fn memory_counts_what_is_alive_not_what_was_reserved() {
    for src in [
        "(reduce + (mapv (fn [i] (count (range 20))) (range 1000000)))",
        "(reduce + (map (fn [_] (count (vec (range 1000000)))) (range 20)))",
        "(reduce + (map (fn [_] (count (sort (range 300000)))) (range 20)))",
    ] {
        let r = run_limited(
            src,
            Limits {
                max_memory: 64 * 1024 * 1024,
                ..Limits::default()
            },
        );
        assert!(r.error.is_none(), "{src}: {:?}", r.error);
    }
}

/// Builtins that build outputs as large as their inputs check size and memory before they
/// allocate, and charge their work as they go (the review's list of bypasses).
#[test]
fn builtins_check_what_they_build() {
    let small = Limits {
        max_memory: 64 * 1024 * 1024,
        timeout_ms: 20_000,
        ..Limits::default()
    };
    for src in [
        "(count (set (range 5000000)))",
        "(count (zip (range 5000000) (range 5000000)))",
        "(count (distinct (range 5000000)))",
        "(count (pmap inc (range 5000000)))",
        "(count (concat (range 3000000) (range 3000000)))",
        "(count (vec (set (range 3000000))))",
        "(let [m (into {} (map (fn [i] [i i]) (range 1000000)))] (count (entries m)))",
        "(count (group-by :a (mapv (fn [i] {:a (mod i 1000)}) (range 3000000))))",
    ] {
        let r = run_limited(src, small);
        let e = r
            .error
            .unwrap_or_else(|| panic!("{src} should hit a limit"));
        assert!(
            matches!(e.limit, Some(_core::run::error::LimitName::Memory)),
            "{src}: {} ({:?})",
            e.message,
            e.limit
        );
    }
    let r = run_limited(
        "(count (union (set (range 600000)) (set (range 600000 1200000))))",
        Limits {
            max_collection_size: 1_000_000,
            ..Limits::default()
        },
    );
    let e = r.error.expect("union past max_collection_size");
    assert_eq!(
        e.limit,
        Some(_core::run::error::LimitName::CollectionSize),
        "{}",
        e.message
    );
}

/// Counts its calls; `capped` caps its own at 2.
struct Counting(std::sync::atomic::AtomicUsize);

impl Host for Counting {
    fn has_tool(&self, name: &str) -> bool {
        name == "free" || name == "capped"
    }
    fn tool_names(&self) -> Vec<String> {
        vec!["free".into(), "capped".into()]
    }
    fn max_calls(&self, name: &str) -> Option<u64> {
        (name == "capped").then_some(2)
    }
    fn call_tool(&self, _: &str, _: &[Value], _: &ToolCtx<'_>) -> Result<Value, ToolFailure> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(Value::Int(1))
    }
}

#[test]
fn tool_calls_past_a_cap_are_refused_before_they_are_made() {
    let state = SessionState::new(Value::empty_map());
    let host = Counting(Default::default());
    let limits = Limits {
        max_tool_calls: 4,
        ..Limits::default()
    };
    let r = run_source(
        "(mapv (fn [_] (tool/free)) (range 9))",
        &state,
        &host,
        &limits,
    )
    .0;
    let e = r.error.expect("past max_tool_calls");
    assert_eq!(
        (e.kind, e.limit),
        (ErrorKind::Tool, Some(LimitName::ToolCalls))
    );
    assert_eq!(host.0.load(std::sync::atomic::Ordering::SeqCst), 4);
    assert_eq!(r.tool_calls.len(), 4);

    let host = Counting(Default::default());
    let r = run_source(
        "(tool/free) (tool/capped) (tool/capped) (tool/capped)",
        &state,
        &host,
        &limits,
    )
    .0;
    let e = r.error.expect("past the tool's own cap");
    assert_eq!(e.limit, Some(LimitName::ToolMaxCalls));
    assert_eq!(host.0.load(std::sync::atomic::Ordering::SeqCst), 3);
    // a refused call is not counted: the run's other calls still fit
    assert_eq!(r.tool_calls.len(), 3);
}

#[test]
fn sites_walk_a_deep_program_without_recursion() {
    // nested as deep as a host may allow: the walk keeps its own stack
    let depth = 20_000;
    let src = format!("{}(tool/t 1){}", "(str ".repeat(depth), ")".repeat(depth));
    let limits = Limits {
        max_nesting: 100_000,
        ..Limits::default()
    };
    let budget = _core::run::guard::Budget::new(
        limits,
        std::sync::Arc::new(_core::run::guard::NeverInterrupted),
        None,
    );
    let program = _core::run::session::prepare(&src, &budget).unwrap_or_else(|_| panic!("reads"));
    let found = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || _core::run::sites::sites(&program).calls.len())
        .unwrap()
        .join();
    assert_eq!(found.ok(), Some(1));
}
