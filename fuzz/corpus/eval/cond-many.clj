(let [c 7] (cond (= c 0) :a (= c 1) :b (= c 2) :c (= c 3) :d (= c 4) :e (= c 5) :f (= c 6) :g (= c 7) :h :else :z))
