;; limits: timeout_ms=200
(let [a (loop [x [] i 0] (if (< i 60) (recur [x x] (inc i)) x)) b (loop [x [] i 0] (if (< i 60) (recur [x x] (inc i)) x))] (= a b))
