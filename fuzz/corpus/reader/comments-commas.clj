; a comment
(+ 1, 2) ; trailing
{:a 1, :b 2}))
