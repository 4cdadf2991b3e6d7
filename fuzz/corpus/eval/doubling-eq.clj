(let [a (loop [x [] i 0] (if (< i 12) (recur [x x] (inc i)) x)) b (loop [x [] i 0] (if (< i 12) (recur [x x] (inc i)) x))] (= a b))
