(loop [x [] i 0] (if (< i 1000) (recur [x] (inc i)) (count (flatten x))))
