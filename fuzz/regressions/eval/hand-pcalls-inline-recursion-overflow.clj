;; limits: max_depth=100000 timeout_ms=5000
;; Found by the eval fuzzer (crash-4b3a486e): recursion through pcalls branches that run on the
;; calling thread started a fresh interpreter at every level, whose nesting counter never reached
;; the stack check, so the native stack overflowed (SIGSEGV in the host).
(pmap (fn [_] (defn f [n] (if (<= n 0) [] (pcalls #(f (dec n)))))
  (let [r (f 20000)] (do r 1)))
  [1 2])
