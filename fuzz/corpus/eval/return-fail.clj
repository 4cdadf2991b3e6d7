(do (def z 1) (when (= z 1) (return {:done [z z]})) (fail :never))
