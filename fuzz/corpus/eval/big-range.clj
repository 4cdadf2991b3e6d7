(let [r (range 100000)] [(count r) (reduce + r) (count (frequencies (map #(mod % 7) r))) (last (sort-by - r))])
