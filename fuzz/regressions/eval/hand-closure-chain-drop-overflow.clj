;; limits: timeout_ms=20000 fuel=1000000000 max_memory=1000000000
(loop [f identity i 0] (if (< i 300000) (recur (fn [y] (f y)) (inc i)) 1))
