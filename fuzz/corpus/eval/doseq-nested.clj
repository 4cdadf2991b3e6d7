(doseq [a (range 30) b (range 30)] (when (= a b) (println a)))
