;; limits: timeout_ms=200
(loop [x [] i 0] (if (< i 60) (recur [x x] (inc i)) x))
