;; Revenue per region for shipped orders, biggest first.
(defn revenue "Sum of order totals" [orders]
  (sum-by :total orders))

(def shipped "Orders that have shipped" (filter #(= (:status %) "shipped") data/orders))

(println "shipped orders:" (count shipped))

(->> (group-by :region shipped)
     (map (fn [[region orders]] {:region region :revenue (revenue orders)}))
     (sort-by :revenue >))
