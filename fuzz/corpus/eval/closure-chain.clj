(loop [f identity i 0] (if (< i 500) (recur (fn [y] (f y)) (inc i)) (f 1)))
