use crate::common::*;

#[test]
fn arithmetic_and_literals() {
    assert_eq!(ev("(+ 1 2 3)"), "6");
    assert_eq!(ev("(/ 12 4)"), "3.0");
    assert_eq!(ev("(- 5)"), "-5");
    assert_eq!(ev("[1 2.5 \"x\" :k nil true]"), "[1 2.5 \"x\" :k nil true]");
    assert_eq!(ev("{:a 1 :b [1 2]}"), "{:a 1, :b [1 2]}");
    assert_eq!(ev("#{1 2 2 3}"), "#{1 2 3}");
    assert_eq!(ev(""), "nil");
}

#[test]
fn let_loop_recur_moves() {
    assert_eq!(ev("(let [x 1 y (+ x 1)] (* x y))"), "2");
    assert_eq!(
        ev("(loop [k 3 out []] (if (= k 0) out (recur (dec k) (conj out (* k k)))))"),
        "[9 4 1]"
    );
    assert_eq!(
        ev("(loop [i 0 out []] (if (< i 5) (recur (inc i) (conj out i)) out))"),
        "[0 1 2 3 4]"
    );
}

#[test]
fn functions_and_closures() {
    assert_eq!(ev("((fn [a & more] (count more)) 10 20 30)"), "2");
    assert_eq!(ev("(defn add [a b] (+ a b)) (add 2 3)"), "5");
    assert_eq!(ev("(let [n 10] (map (fn [x] (+ x n)) [1 2]))"), "[11 12]");
    assert_eq!(ev("(map #(- 100 %) [30 45])"), "[70 55]");
    assert_eq!(ev("(#(str %2 %1) \"x\" \"y\")"), "\"yx\"");
    assert_eq!(ev("(-> {:lvl 2} (assoc :x 1) :lvl)"), "2");
    assert_eq!(ev("(->> [1 2 3] (map inc) (reduce +))"), "9");
}

#[test]
fn destructuring() {
    assert_eq!(ev("(let [[lat lon] [59.33 18.06]] lon)"), "18.06");
    assert_eq!(ev("(let [[h & t] [5 6 7]] t)"), "[6 7]");
    assert_eq!(
        ev("(let [{:keys [sku qty] :or {qty 1}} {:sku \"B-7\"}] qty)"),
        "1"
    );
    assert_eq!(
        ev("(let [{hue :name} {\"name\" \"teal\"}] hue)"),
        "\"teal\""
    );
}

#[test]
fn value_and_result_sizes_stay_small() {
    assert_eq!(std::mem::size_of::<_core::Value>(), 16);
    assert_eq!(std::mem::size_of::<Option<_core::Value>>(), 16);
    assert_eq!(std::mem::size_of::<_core::lang::eval::EvalResult>(), 16);
}

#[test]
fn analysis_errors_name_the_form() {
    use _core::ErrorKind;
    for (src, kind, needle) in [
        ("(if)", ErrorKind::Analysis, "if takes a test"),
        ("(let [a] a)", ErrorKind::Analysis, "even number of forms"),
        ("(let [a 1])", ErrorKind::Analysis, "needs a body"),
        (
            "(cond 1)",
            ErrorKind::Analysis,
            "cond needs test/result pairs",
        ),
        ("()", ErrorKind::Analysis, "() is not a valid expression"),
        (
            "(loop [i 0] (+ 1 (recur i)))",
            ErrorKind::Analysis,
            "tail position",
        ),
        ("(recur 1)", ErrorKind::Analysis, "tail position"),
        (
            "(loop [i 0] (recur))",
            ErrorKind::Arity,
            "recur expects 1 argument",
        ),
        (
            "(defn f ([a] a) ([a b] b))",
            ErrorKind::Analysis,
            "multi-arity",
        ),
        ("(fn self [x] x)", ErrorKind::Analysis, "named fn"),
        (
            "(def count 1)",
            ErrorKind::CannotShadowBuiltin,
            "cannot define count",
        ),
        ("(def x)", ErrorKind::Analysis, "missing its value"),
        (
            "(for [x [1]] x)",
            ErrorKind::Analysis,
            "for is not supported",
        ),
        ("(< 1 2 3)", ErrorKind::Analysis, "exactly 2 arguments"),
        (
            "(map and [1])",
            ErrorKind::UndefinedVariable,
            "special form",
        ),
        (
            "(http/get 1)",
            ErrorKind::Analysis,
            "unknown namespace http/",
        ),
        (
            "(str/escape 1)",
            ErrorKind::Analysis,
            "escape is not available",
        ),
        ("#(#(%))", ErrorKind::Analysis, "nested #( )"),
        ("(+ % 1)", ErrorKind::Analysis, "only meaningful inside #("),
        ("(let [{:as x} {}] x)", ErrorKind::Analysis, "needs :keys"),
        ("(if-let [[a] [1]] a)", ErrorKind::Analysis, "plain name"),
        (
            "(doseq [x [1] :when true] x)",
            ErrorKind::Analysis,
            "modifiers",
        ),
        ("(where :f 3)", ErrorKind::Analysis, "missing its operator"),
        (
            "(undefined-fn 1)",
            ErrorKind::UndefinedVariable,
            "undefined-fn is not defined",
        ),
        (
            "(filtr odd? [1])",
            ErrorKind::UndefinedVariable,
            "filtr is not defined",
        ),
        (
            "(7 1)",
            ErrorKind::NotCallable,
            "integer 7 is not a function",
        ),
        ("(:k [1 2])", ErrorKind::Type, "expects a map"),
        (
            "((fn [a b] a) 1)",
            ErrorKind::Arity,
            "fn expects 2 argument(s), got 1",
        ),
        (
            "(count 1 2)",
            ErrorKind::Arity,
            "count expects 1 argument(s), got 2",
        ),
        (
            "(+ 1 \"2\")",
            ErrorKind::Type,
            "expected a number, got string \"2\"",
        ),
        (
            "(* 9223372036854775807 2)",
            ErrorKind::Arithmetic,
            "integer overflow",
        ),
        (
            "(let [[a] 5] a)",
            ErrorKind::Destructure,
            "cannot destructure integer 5",
        ),
    ] {
        let e = err(src);
        assert_eq!(e.kind, kind, "{src}: {}", e.message);
        assert!(e.message.contains(needle), "{src}: {}", e.message);
    }
    assert_eq!(
        err("(filtr odd? [1])").hint.as_deref(),
        Some("Did you mean: filter")
    );
    assert_eq!(
        err("(let [total-count 1] total_count)").hint.as_deref(),
        Some("names use hyphens: did you mean total-count?")
    );
    let e = err("(do\n  (+ 1 :a))");
    assert_eq!(e.pos.map(|p| (p.line, p.col)), Some((2, 3)));
}

#[test]
fn nil_hints_follow_locals_and_stay_bounded() {
    let hint = |src: &str| err(src).hint.clone();
    let empty = Some("(first ...) is nil: the sequence was empty".to_string());
    assert_eq!(hint("(let [x (first [])] (inc x))"), empty);
    // a local whose value a later argument moved out is not read as nil
    assert_eq!(hint("(let [o {:a 1}] (+ (:b o) (count o)))"), None);
    // nested lookups are read only so deep
    let deep = format!("(+ {}[]{} 1)", "(first ".repeat(400), ")".repeat(400));
    assert_eq!(hint(&deep), None);
    assert_eq!(
        hint(&format!("(+ {}[]{} 1)", "(first ".repeat(8), ")".repeat(8))),
        empty
    );
    // a chain of lets, each renaming the last, is followed out to the first
    let mut src = "(inc x399)".to_string();
    for i in (0..400).rev() {
        let init = if i == 0 {
            "(first [])".to_string()
        } else {
            format!("x{}", i - 1)
        };
        src = format!("(let [x{i} {init}] {src})");
    }
    assert_eq!(hint(&src), empty);
    // a long chain of renamings in one let is followed only so far
    let names: String = (1..2000).map(|i| format!(" x{i} x{}", i - 1)).collect();
    let e = err(&format!("(let [x0 (first []){names}] (inc x1999))"));
    assert_eq!(
        (e.message.as_str(), e.hint.as_deref()),
        ("inc expected a number, got nil", None)
    );
}

#[test]
fn special_forms_semantics() {
    assert_eq!(ev("(if-not false 1 2)"), "1");
    assert_eq!(ev("(when-not false 1 2)"), "2");
    assert_eq!(ev("(cond false 1 nil 2 :else 3)"), "3");
    assert_eq!(ev("(cond false 1)"), "nil");
    assert_eq!(ev("(and)"), "true");
    assert_eq!(ev("(or)"), "nil");
    assert_eq!(ev("(and 1 nil 2)"), "nil");
    assert_eq!(ev("(or nil false 3)"), "3");
    assert_eq!(ev("(do)"), "nil");
    assert_eq!(ev("(if-let [x 0] x :no)"), "0");
    assert_eq!(ev("(when-let [x nil] 1)"), "nil");
    assert_eq!(ev("(-> 5 (- 2))"), "3");
    assert_eq!(ev("(->> 5 (- 2))"), "-3");
    assert_eq!(ev("(->> [1 2] (map #(* % 10)))"), "[10 20]");
    assert_eq!(ev("(#(42))"), "42");
    assert_eq!(ev("(#([% %]) 1)"), "[1 1]");
    assert_eq!(ev("(#(str %3) 1 2 3)"), "\"3\"");
    assert_eq!(
        ev("(defn f [n] (if (= n 0) :done (recur (dec n)))) (f 5)"),
        ":done"
    );
    assert_eq!(
        ev("(defn g [a & r] (if (empty? r) a (recur (+ a (first r)) (rest r)))) (g 1 2 3)"),
        "6"
    );
    assert_eq!(ev("(def x 1) (def x 2) x"), "2");
    assert_eq!(ev("(doseq [x [1 2]] (def last-x x)) last-x"), "2");
    assert_eq!(ev("((where :age > 18) {:age 20})"), "true");
    assert_eq!(ev("((where [:a :b] = :x) {:a {\"b\" \"x\"}})"), "true");
}
