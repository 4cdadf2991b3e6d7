(-> 0 inc inc inc inc inc inc inc inc inc inc inc inc inc inc inc inc inc inc inc inc (* 2) (- 1) str count)
