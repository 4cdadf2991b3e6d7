(let [p (vec (map (fn [i] :a) (range 100))) m (assoc-in {} p 1)] [(get-in m p) (get-in (update-in m p inc) p)])
