[(sort > [3 1 2]) (sort-by :a :desc [{:a 1} {:a 3}]) (sort (fn [a b] (< a b)) (range 50)) (sort compare ["b" "a"])]
