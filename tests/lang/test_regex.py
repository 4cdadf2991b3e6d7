"""Regular expressions (LANGUAGE.md §7.11): `re-pattern`, `re-find`, `re-matches`, `re-seq`,
`re-split`, `regex?`, the supported syntax, the size limits and linear-time matching.

Expected values are written from LANGUAGE.md. Patterns are written as PTC-Lisp string literals,
so a regex backslash is doubled inside the program text (``"\\\\d"`` in Python source).
"""

from __future__ import annotations

import time

import ptc
import pytest
from lang_helpers import err, ev
from lang_helpers import show_printed as show

# --------------------------------------------------------------------------- helpers


def lisp_str(s: str) -> str:
    """A PTC-Lisp string literal for ``s`` (only the escapes of §2.4)."""
    out = s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return '"' + out.replace("\r", "\\r") + '"'


def re_(pattern: str) -> str:
    """Program text building a regex from the Python string ``pattern``."""
    return f"(re-pattern {lisp_str(pattern)})"


# --------------------------------------------------------------------------- happy paths

# (function, pattern, subject, expected printed result)
MATCH_CASES: list[tuple[str, str, str, str]] = [
    # re-find: matched string without groups, [whole g1 …] with groups, nil if none
    ("re-find", r"\d+", "ab123cd45", '"123"'),
    ("re-find", r"z", "abc", "nil"),
    ("re-find", r"(\d)(x)?", "a1b", '["1" "1" nil]'),
    ("re-find", r"(\w+)@(\w+)", "mail ann@host now", '["ann@host" "ann" "host"]'),
    ("re-find", r"(?:ab)+", "xababy", '"abab"'),
    ("re-find", r"", "abc", '""'),
    ("re-find", r"a", "", "nil"),
    # re-matches: must span the entire string
    ("re-matches", r"\d+", "123", '"123"'),
    ("re-matches", r"\d+", "123a", "nil"),
    ("re-matches", r"\d+", "a123", "nil"),
    ("re-matches", r"(a)(b)", "ab", '["ab" "a" "b"]'),
    ("re-matches", r"(a)|b", "b", '["b" nil]'),
    ("re-matches", r"a|ab", "ab", '"ab"'),
    ("re-matches", r".*", "", '""'),
    # re-seq: all non-overlapping matches, shaped as re-find
    ("re-seq", r"\d", "a1b2c3", '["1" "2" "3"]'),
    ("re-seq", r"(\w)(\d)", "a1b2", '[["a1" "a" "1"] ["b2" "b" "2"]]'),
    ("re-seq", r"z", "abc", "[]"),
    ("re-seq", r"aa", "aaaaa", '["aa" "aa"]'),
    ("re-seq", r"\w+", "one, two three", '["one" "two" "three"]'),
    # re-split: empty pieces kept; captured text inserted between the pieces
    ("re-split", r",", "a,b,c", '["a" "b" "c"]'),
    ("re-split", r",", ",a,,b,", '["" "a" "" "b" ""]'),
    ("re-split", r"\s+", "one  two\tthree", '["one" "two" "three"]'),
    ("re-split", r";", "abc", '["abc"]'),
    ("re-split", r"(,)", "a,b", '["a" "," "b"]'),
    # syntax required by §7.11
    ("re-find", r"[a-c]+", "xxbcay", '"bca"'),
    ("re-find", r"[^a-c]+", "abxyc", '"xy"'),
    ("re-find", r"\D+", "12ab34", '"ab"'),
    ("re-find", r"\W+", "ab, cd", '", "'),
    ("re-find", r"\S+", "  word  ", '"word"'),
    ("re-find", r"a.c", "xabcx", '"abc"'),
    ("re-seq", r"\bfoo\b", "foo food foo", '["foo" "foo"]'),
    ("re-find", r"\Bo", "foo", '"o"'),
    ("re-find", r"^ab", "abab", '"ab"'),
    ("re-find", r"ab$", "abab", '"ab"'),
    ("re-find", r"\Aab\z", "ab", '"ab"'),
    ("re-find", r"\Aab\z", "ab\n", "nil"),
    ("re-find", r"(?<year>\d{4})-(?<month>\d{2})", "on 2031-05-04", '["2031-05" "2031" "05"]'),
    ("re-find", r"cat|dog", "hotdog", '"dog"'),
    ("re-find", r"a+", "aaa", '"aaa"'),
    ("re-find", r"a+?", "aaa", '"a"'),
    ("re-find", r"a*?b", "aaab", '"aaab"'),
    ("re-find", r"a{2,3}", "aaaa", '"aaa"'),
    ("re-find", r"a{2,3}?", "aaaa", '"aa"'),
    ("re-find", r"a{2}", "a aa", '"aa"'),
    ("re-find", r"a{2,}", "aaaaa", '"aaaaa"'),
    ("re-find", r"(?i)ABC", "xabcx", '"abc"'),
    ("re-find", r"(?m)^b$", "a\nb\nc", '"b"'),
    ("re-find", r"^b$", "a\nb\nc", "nil"),
    ("re-find", r"(?s)a.b", "a\nb", '"a\\nb"'),
    ("re-find", r"a.b", "a\nb", "nil"),
    ("re-find", r"(?x) a b  # comment", "ab", '"ab"'),
    ("re-find", r"\.", "a.b", '"."'),
    ("re-find", r"\(\)", "f()", '"()"'),
    ("re-find", r"\t", "a\tb", '"\\t"'),
    # Unicode-aware
    ("re-find", r"\w+", "héllo!", '"héllo"'),
    ("re-find", r"\p{L}+", "1ñandú2", '"ñandú"'),
    ("re-find", r".", "é", '"é"'),
    ("re-find", r"(?i)É", "é", '"é"'),
]


@pytest.mark.parametrize(("fn", "pattern", "subject", "expected"), MATCH_CASES)
def test_regex_functions(fn: str, pattern: str, subject: str, expected: str) -> None:
    """§7.11: results of re-find / re-matches / re-seq / re-split and the required syntax."""
    assert show(f"({fn} {re_(pattern)} {lisp_str(subject)})") == expected


def test_regex_predicate() -> None:
    """§7.11 `regex?`: true for regex values only; §7.14 regex?."""
    assert ev('(regex? (re-pattern "a"))') is True
    for other in ['"a"', "nil", "1", ":a", "[]", "{}", "inc"]:
        assert ev(f"(regex? {other})") is False


def test_regex_is_a_value() -> None:
    """§3/§9.1: a regex is an opaque value, printed as #"pattern text"; it can be stored."""
    assert show('(re-pattern "a+b")') == '#"a+b"'
    assert ev('(let [r (re-pattern "\\\\d")] (re-seq r "1a2"))') == ["1", "2"]
    assert ev('(do (def digits (re-pattern "\\\\d+")) (re-find digits "x77"))') == "77"
    assert ev('(map #(re-find (re-pattern "\\\\d") %) ["a1" "b" "2c"])') == ["1", None, "2"]


def test_regex_usable_with_higher_order_functions() -> None:
    """§7.11/§7.3: regex functions compose with filter/map over strings."""
    src = (
        '(filter #(re-matches (re-pattern "[A-Z]{3}-\\\\d+") %) ["ABC-1" "abc-2" "XYZ-99x" "Q-1"])'
    )
    assert ev(src) == ["ABC-1"]


def test_namespaced_regex_functions() -> None:
    """§7.17: `regex/` and `clojure.core/` prefixes are accepted on regex builtins."""
    assert ev('(regex/re-find (regex/re-pattern "b") "abc")') == "b"
    assert ev('(clojure.core/re-seq (re-pattern "b") "bb")') == ["b", "b"]


# --------------------------------------------------------------------------- errors

INVALID_PATTERNS = ["(a", "a)", "[a", "*a", "a{2,1}", "(?<n>a", "\\"]


@pytest.mark.parametrize("pattern", INVALID_PATTERNS)
def test_invalid_pattern_is_execution_error(pattern: str) -> None:
    """§7.11 `re-pattern`: an invalid pattern ⇒ execution_error ("Invalid regex …")."""
    e = err(re_(pattern))
    assert e.type == "execution_error", (e.type, e.message)
    assert e.message.startswith("Invalid regex"), e.message


def test_invalid_pattern_message_gives_the_position() -> None:
    """§7.11: the message has the documented shape `Invalid regex at position N: …`."""
    e = err('(re-pattern "ab(")')
    assert e.type == "execution_error"
    assert e.message.startswith("Invalid regex at position "), e.message


@pytest.mark.parametrize("pattern", [r"(a)\1", r"(?=a)", r"(?!a)", r"(?<=a)b", r"(?<!a)b"])
def test_unsupported_constructs_rejected(pattern: str) -> None:
    """§7.11: constructs a linear-time engine cannot run (backreferences, lookaround) are
    rejected by `re-pattern` with execution_error."""
    e = err(re_(pattern))
    assert e.type == "execution_error", (e.type, e.message)


def test_pattern_over_256_bytes() -> None:
    """§7.11/§11: a pattern over 256 bytes ⇒ execution_error; exactly 256 is fine."""
    e = err(re_("a" * 257))
    assert e.type == "execution_error", (e.type, e.message)
    assert ev(f"(re-find {re_('a' * 256)} {lisp_str('a' * 300)})") == "a" * 256
    # bytes, not characters: 129 two-byte characters = 258 bytes
    e = err(re_("é" * 129))
    assert e.type == "execution_error", (e.type, e.message)


@pytest.mark.parametrize("pattern", [r"a{1000}{1000}", r"(?:\w{100}){100}", r"\w{1000}"])
def test_regex_too_complex(pattern: str) -> None:
    """§7.11: a short pattern whose compiled form exceeds the size limit ⇒ execution_error
    ("Regex too complex")."""
    e = err(re_(pattern))
    assert e.type == "execution_error", (e.type, e.message)
    assert "Regex too complex" in e.message, e.message


# (program, function name, fragment naming the offending value with its label)
TYPE_ERROR_CASES: list[tuple[str, str, str]] = [
    ("(re-pattern 12)", "re-pattern", "got integer 12"),
    ("(re-pattern nil)", "re-pattern", "got nil"),
    ("(re-pattern :a)", "re-pattern", "got keyword :a"),
    ('(re-find "a" "abc")', "re-find", 'got string "a"'),
    ('(re-find nil "abc")', "re-find", "got nil"),
    ('(re-find (re-pattern "a") nil)', "re-find", "got nil"),
    ('(re-find (re-pattern "a") :abc)', "re-find", "got keyword :abc"),
    ('(re-find (re-pattern "a") 12)', "re-find", "got integer 12"),
    ('(re-matches "a" "a")', "re-matches", 'got string "a"'),
    ('(re-matches (re-pattern "a") ["a"])', "re-matches", 'got vector ["a"]'),
    ('(re-seq "a" "a")', "re-seq", 'got string "a"'),
    ('(re-seq (re-pattern "a") nil)', "re-seq", "got nil"),
    ('(re-split "," "a,b")', "re-split", 'got string ","'),
    ('(re-split (re-pattern ",") nil)', "re-split", "got nil"),
    ('(re-split (re-pattern ",") 1.5)', "re-split", "got float 1.5"),
]


@pytest.mark.parametrize(("src", "fn", "fragment"), TYPE_ERROR_CASES)
def test_regex_type_errors(src: str, fn: str, fragment: str) -> None:
    """§7.11: first argument not a regex or subject not a string ⇒ type_error naming both."""
    e = err(src)
    assert e.type == "type_error", (e.type, e.message)
    assert fn in e.message, e.message
    assert fragment in e.message, e.message


ARITY_CASES: list[tuple[str, str, int]] = [
    ("(re-pattern)", "re-pattern", 0),
    ('(re-pattern "a" "b")', "re-pattern", 2),
    ('(re-find (re-pattern "a"))', "re-find", 1),
    ('(re-find (re-pattern "a") "a" "a")', "re-find", 3),
    ("(re-matches)", "re-matches", 0),
    ('(re-seq (re-pattern "a"))', "re-seq", 1),
    ('(re-split (re-pattern "a") "a" 2)', "re-split", 3),
    ("(regex?)", "regex?", 0),
    ("(regex? 1 2)", "regex?", 2),
]


@pytest.mark.parametrize(("src", "fn", "got"), ARITY_CASES)
def test_regex_arity_errors(src: str, fn: str, got: int) -> None:
    """§7.0/§7.11: wrong argument count ⇒ arity_error naming the function and the count."""
    e = err(src)
    assert e.type == "arity_error", (e.type, e.message)
    assert fn in e.message, e.message
    assert f"got {got}" in e.message, e.message


def test_regex_literal_is_a_parse_error_with_hint() -> None:
    """§2.9/§10.3: `#"…"` is rejected with a hint naming `re-pattern`."""
    e = err('(re-find #"\\d" "a1")')
    assert e.type == "parse_error"
    assert "re-pattern" in f"{e.message} {e.hint}"


# --------------------------------------------------------------------------- linear time

PATHOLOGICAL = [r"(a|a)*b", r"(a+)+b", r"(a*)*c", r"^(a|aa)+$", r"(x+x+)+y", r"(.*a){12}"]


@pytest.mark.timeout(10)
@pytest.mark.parametrize("pattern", PATHOLOGICAL)
def test_pathological_patterns_run_in_linear_time(pattern: str) -> None:
    """§7.11 Safety: matching is linear in the input, so catastrophic-backtracking patterns
    finish quickly on a long subject (no backtracking engine)."""
    subject = "a" * 200_000 + "!"
    started = time.monotonic()
    r = ptc.run(
        f"[(re-find {re_(pattern)} data/s) (count (re-seq {re_(pattern)} data/s))]",
        data={"s": subject},
    )
    elapsed = time.monotonic() - started
    assert r.error is None, r.error
    assert elapsed < 5, f"{pattern} took {elapsed:.1f}s"
