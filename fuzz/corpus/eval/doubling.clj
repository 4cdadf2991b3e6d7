(loop [x [1] i 0] (if (< i 16) (recur [x x] (inc i)) (count (flatten x))))
