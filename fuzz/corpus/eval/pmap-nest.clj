(pmap (fn [a] (pmap (fn [b] (pcalls (fn [] (* a b)) (fn [] (+ a b)))) (range 3))) (range 3))
