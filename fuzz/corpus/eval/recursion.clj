(defn f [n] (if (<= n 0) [] [(f (dec n))])) (count (str (f 300)))
