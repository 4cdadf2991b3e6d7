[(count "e\u0301🇸🇪") (reverse "👨‍👩‍👧ab") (upper-case "ßİ") (split "a,,b," ",") (replace "abc" "" "-") (subs "🇸🇪x" 1) (split-lines "a\r\nb\n\n")]
