(pmap (fn [x] (tool/echo x)) [1 2 3])
