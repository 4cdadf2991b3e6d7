(def a [1 2]) (def b [a a]) (def c [b b]) (defn g [x & r] (count r)) [(count (flatten c)) (g 1 2 3) #'a]
