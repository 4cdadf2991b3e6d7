;; limits: timeout_ms=20000 fuel=1000000000 max_memory=1000000000
(let [p (vec (map (fn [i] :a) (range 200000)))] (count (assoc-in {} p 1)))
