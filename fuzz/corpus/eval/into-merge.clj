[(into {} [[:a 1] [:b 2]]) (merge {:a 1} {:a 2 :b 3}) (into #{} [1 1 2]) (conj {:a 1} [:b 2]) (update-vals {:a 1} inc)]
