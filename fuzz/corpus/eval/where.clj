(filter (where [:a :b] >= 2) [{:a {:b 1}} {:a {:b 3}} {:a nil} nil])
