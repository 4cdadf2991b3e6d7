(loop [f inc i 0] (if (< i 200) (recur (fnil (juxt f) 0) (inc i)) (str (f nil))))
