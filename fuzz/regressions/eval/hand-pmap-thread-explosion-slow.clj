;; limits: timeout_ms=200
(pmap (fn [a] (pmap (fn [b] (pmap (fn [c] (pmap (fn [d] (pmap (fn [e] (count (range 100000))) (range 8))) (range 8))) (range 8))) (range 8))) (range 8))
