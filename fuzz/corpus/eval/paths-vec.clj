(let [m (assoc-in {} [:a 0 :b] 1)] [m (update-in {:a [1 2]} [:a 1] inc) (assoc-in [[1 2]] [0 2] 3)])
