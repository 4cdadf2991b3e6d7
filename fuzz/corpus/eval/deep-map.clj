(loop [x {} i 0] (if (< i 500) (recur {:a x} (inc i)) (get-in x [:a :a :a])))
