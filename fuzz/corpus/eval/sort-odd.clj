(sort (fn [a b] true) (range 40))
