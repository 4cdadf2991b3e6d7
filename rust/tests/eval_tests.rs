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
    assert_eq!(ev("(loop [k 3 out []] (if (= k 0) out (recur (dec k) (conj out (* k k)))))").len() > 0, true);
    assert_eq!(ev("(loop [i 0 out []] (if (< i 5) (recur (inc i) (conj out i)) out))"), "[0 1 2 3 4]");
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
    assert_eq!(ev("(let [{:keys [sku qty] :or {qty 1}} {:sku \"B-7\"}] qty)"), "1");
    assert_eq!(ev("(let [{hue :name} {\"name\" \"teal\"}] hue)"), "\"teal\"");
}
