[(re-find (re-pattern "(\\d+)-(\\d+)?") "a12-") (re-seq (re-pattern "\\w+") "ab cd") (re-split (re-pattern "[,;]") "a,b;c") (re-matches (re-pattern "(?i)AB") "ab")]
