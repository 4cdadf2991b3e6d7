[data/x (count data/s) data/_secret data/missing (get-in data/m ["a b"]) (:k data/m)]
