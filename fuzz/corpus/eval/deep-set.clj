(loop [x #{} i 0] (if (< i 300) (recur #{x} (inc i)) (count (str x))))
