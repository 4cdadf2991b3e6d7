[(flatten [[1 [2 [3]]] 4]) (interleave [1 2] [3 4]) (interpose 0 [1 2 3]) (partition 2 1 [1 2 3 4]) (zip [1 2] [:a :b])]
