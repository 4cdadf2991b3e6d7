(let [[a [b [c]] & more] [1 [2 [3]] 4 5] {:keys [x y] :or {y 9} :as all} {:x 1}] [a b c more x y all])
