//! Interpreter micro-benchmarks without Python: `cargo bench --bench interp [filter]`.
use std::time::Instant;

fn main() {
    let filter = std::env::args().nth(1).filter(|a| !a.starts_with('-'));
    let progs = [
        ("loop", "(loop [i 0] (if (< i 1000000) (recur (inc i)) i))", 1e6),
        (
            "filter-closure",
            "(count (filter (fn [o] true) (range 1000000)))",
            1e6,
        ),
        ("map-reduce", "(reduce + (map inc (range 1000000)))", 1e6),
        // a closure call per element: arguments moved into the frame, values moved as words
        (
            "closure-call-reduce",
            "(reduce (fn [a x] (+ a x)) 0 (range 1000000))",
            1e6,
        ),
        // issue 9: map literals with constant keys build records (one shape, values only)
        (
            "record-build-read",
            "(reduce + (map :b (mapv (fn [i] {:a i :b (inc i) :c \"x\"}) (range 300000))))",
            3e5,
        ),
        // a record's one allocation: updating a key copies it whole (copy-on-write)
        (
            "record-update-read",
            "(let [rs (mapv (fn [i] {:a i :b i :c \"x\"}) (range 300000))] (reduce + (map :b (map #(assoc % :b 1) rs))))",
            3e5,
        ),
        // issue 9: loops over large vectors prefetch ahead; records read out of allocation
        // order (a permutation) are the case it helps (the sort is part of the time)
        (
            "record-scattered-filter-group",
            "(let [rs (sort-by #(mod (* (:a %) 7919) 300007) (mapv (fn [i] {:a i :b i :c (if (odd? i) \"x\" \"y\")}) (range 300000)))] (count (group-by :c (filter #(= (:c %) \"x\") rs))))",
            3e5,
        ),
        // a chain of field reads reads the nested map in place (no clone of it per record)
        (
            "record-field-chain",
            "(let [rs (mapv (fn [i] {:a i :c {:t i :u \"x\"}}) (range 300000))] (reduce + (map #(:t (:c %)) rs)))",
            3e5,
        ),
        // a nested record read per element, the records out of allocation order: the loop
        // prefetches, halfway ahead, the collections each record holds
        (
            "record-nested-scattered",
            "(let [rs (sort-by #(mod (* (:a %) 7919) 300007) (mapv (fn [i] {:a i :b i :c {:t (mod i 3) :u \"x\"}}) (range 300000)))] (reduce + (map (fn [_] (count (filter #(= (:t (:c %)) 1) rs))) (range 5))))",
            1.5e6,
        ),
        // group-by on a field with few values: the shared key strings are found by address
        (
            "group-by-shared-keys",
            "(let [ks [\"gold\" \"silver\" \"bronze\"] rs (mapv (fn [i] {:a i :t (nth ks (mod i 3))}) (range 300000))] (reduce + (map (fn [_] (count (group-by :t rs))) (range 10))))",
            3e6,
        ),
        // a large intermediate (the filter's output) is freed on the background thread
        (
            "dropped-intermediate",
            "(let [rs (mapv (fn [i] {:a i :b [i]}) (range 300000))] (reduce + (map (fn [_] (count (filter #(odd? (:a %)) rs))) (range 5))))",
            1.5e6,
        ),
        // a filter and a map over records run as one pass: no filtered vector to fill and free
        (
            "record-filter-map-chain",
            "(let [rs (mapv (fn [i] {:a i :s (if (odd? i) \"x\" \"y\") :t (* i 0.5)}) (range 300000))] (reduce + (map (fn [_] (reduce + (map :t (filter #(= (:s %) \"x\") rs)))) (range 20))))",
            6e6,
        ),
        (
            "hashed-build-read",
            "(reduce + (map :b (mapv (fn [i] (assoc {} :a i :b (inc i) :c \"x\")) (range 300000))))",
            3e5,
        ),
    ];
    for (name, p, n) in progs {
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        let mut best = f64::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            let v = match _core::eval_str(p) {
                Ok(v) => v,
                Err(e) => {
                    eprintln!("{name} failed: {}", e.message);
                    std::process::exit(1);
                }
            };
            best = best.min(t.elapsed().as_secs_f64());
            std::hint::black_box(v);
        }
        println!("{:8.2} ns/iter  {name}: {p}", best * 1e9 / n);
    }
    if filter
        .as_deref()
        .map_or(true, |f| "run-fixed-cost".contains(f))
    {
        run_fixed_cost();
    }
}

/// What one run of a cached tiny program costs around its evaluation (budget, snapshot of
/// the state, evaluator, records, commit), as a Session's run does without Python.
fn run_fixed_cost() {
    use _core::run::guard::{Budget, NeverInterrupted};
    use _core::run::session::{commit, execute, prepare};
    use std::sync::Arc;
    let limits = _core::Limits::default();
    let budget = Budget::new(limits, Arc::new(NeverInterrupted), None);
    let Ok(program) = prepare("(+ 1 2)", &budget) else {
        eprintln!("run-fixed-cost: (+ 1 2) did not read");
        std::process::exit(1);
    };
    let mut state = _core::SessionState::new(_core::Value::empty_map());
    let n = 200_000;
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..n {
            let budget = Budget::new(limits, Arc::new(NeverInterrupted), None);
            let snapshot = state.clone();
            let (r, ns) = execute(&program, &snapshot, &_core::NoTools, &budget);
            drop(snapshot);
            commit(&mut state, &r, ns);
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    println!(
        "{:8.2} ns/iter  run-fixed-cost: (+ 1 2) prepared once, run {n} times",
        best * 1e9 / n as f64
    );
}
