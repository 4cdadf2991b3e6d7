[((juxt inc dec) 5) ((fnil inc 0) nil) (map-indexed vector [:a :b]) (apply max [1 5 3]) ((all-of even? pos?) 4) (some even? [1 3 4])]
