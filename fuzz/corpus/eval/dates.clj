[(str (java.util.Date. 0)) (.getTime (java.util.Date. "2031-05-04T06:07:08+02:00")) (java.time.LocalDate/parse "2031-05-04") (java.util.Date. 1712345678901)]
