(let [v (vec (map (fn [i] [i (mod i 3)]) (range 100)))] [(count (set v)) (frequencies (map second v)) (distinct (map second v)) (group-by second (take 5 v))])
