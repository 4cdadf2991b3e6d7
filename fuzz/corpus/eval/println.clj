(doseq [i (range 20)] (println i "x" [i {:k i}] (str (range i))))
