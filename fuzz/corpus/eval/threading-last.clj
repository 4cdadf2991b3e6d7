(->> (range 100) (map inc) (filter odd?) (map #(* % %)) (reduce +))
