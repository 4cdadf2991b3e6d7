(let [a (loop [x [] i 0] (if (< i 200) (recur [x] (inc i)) x)) b (loop [x [] i 0] (if (< i 200) (recur [x] (inc i)) x))] [(compare a b) (= a b) (count (set [a b]))])
