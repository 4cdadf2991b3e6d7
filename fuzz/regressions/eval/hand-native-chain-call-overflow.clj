;; limits: max_depth=100000 timeout_ms=5000
;; Found by the eval fuzzer (crash-696e8ea6): calling a chain of juxt/fnil/all-of built in a
;; loop nested native calls without evaluating a node, so neither max_depth nor the stack check
;; saw them, and 200,000 levels overflowed the native stack.
(let [j (loop [f :k i 0] (if (< i 200000) (recur (juxt f) (inc i)) f))
      g (loop [f inc i 0] (if (< i 200000) (recur (fnil f 0) (inc i)) f))]
  [(j {:k 1}) (g 1)])
