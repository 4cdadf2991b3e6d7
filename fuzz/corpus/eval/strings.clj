(let [s (loop [s "ab" i 0] (if (< i 10) (recur (str s s) (inc i)) s))] [(count s) (count (split s "")) (count (re-split (re-pattern "a") s)) (join "," (take 3 (split s "b")))])
