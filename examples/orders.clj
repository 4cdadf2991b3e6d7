;; Revenue per region for shipped orders, biggest first.
(defn revenue "Sum of order totals" [orders]
  (reduce + 0 (map :total orders)))

(def shipped (filter #(= (:status %) "shipped") data/orders))

(let [by-region (reduce (fn [acc o] (assoc acc (:region o) (conj (get acc (:region o) []) o)))
                        {}
                        shipped)]
  (println "shipped orders:" (count shipped))
  (map (fn [region] {:region region :revenue (revenue (get by-region region))})
       (keys by-region)))
