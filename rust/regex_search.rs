//! Regex searches a run can stop.
//!
//! The `regex` crate matches in linear time, `O(m × n)` for a pattern of `m` NFA states over
//! `n` bytes, but it cannot be interrupted, and `m × n` can be large: a lazy DFA that keeps
//! running out of room falls back to the PikeVM (`(?:[a-m].{40}){3}[a-c]{9}` over 16 MiB took
//! 13 s), and capture groups are found by the PikeVM over the whole match
//! (`(?s)` + `(.*)`×40 over 16 MiB took 24 s). So a search runs one of three ways:
//!
//! - where `m × n` is at most [`UNCHECKED_WORK`], on the `regex` crate as it is (fast, and
//!   short whatever the engine);
//! - otherwise on a lazy DFA (forward for the match's end, reverse for its start) driven here
//!   byte by byte, which charges the run every [`CHECK_BYTES`] bytes, so the deadline, fuel,
//!   `cancel()` and Ctrl-C stop it; it never gives up on a thrashing cache (each byte then
//!   costs `O(m)`, but between checks);
//! - capture groups of a large match, and patterns the lazy DFA cannot handle (a Unicode
//!   `\b` over non-ASCII text), on the PikeVM, which cannot be stopped: only where `m` × the
//!   span is at most [`UNCHECKED_WORK`], or at most [`MAX_UNCHECKED_WORK`] when the run has
//!   the time those steps may take; beyond that the call is refused with an error that says so.
//!
//! Match semantics are the `regex` crate's (leftmost-first, empty matches never split a
//! character, the same iteration over empty matches): `tests::large_matches_as_small` checks
//! both ways against each other.

use std::sync::OnceLock;

use regex_automata::hybrid;
use regex_automata::nfa::thompson::{self, pikevm::PikeVM, NFA};
use regex_automata::util::iter::Searcher;
use regex_automata::{Anchored, HalfMatch, Input, Match, MatchError};

use std::time::Duration;

use crate::error::{Error, ErrorKind, LimitName};

/// NFA states × bytes a search may take without checking the run (about 0.1 s at worst).
pub const UNCHECKED_WORK: usize = 1 << 24;
/// The most the PikeVM may take at once, for groups and where the lazy DFA cannot be used,
/// and then only when the run has the time (about 0.7 s at worst).
pub const MAX_UNCHECKED_WORK: usize = 1 << 26;
/// What a PikeVM step may cost, rounded up from measurements (6-7 ns on this project's
/// 2-core machine): used to tell whether a run has the time for the steps.
const NANOS_PER_STEP: u64 = 10;
/// Bytes a driven search reads between two charges to the run.
pub const CHECK_BYTES: usize = 1 << 12;
/// The lazy DFAs' cache, per search.
const DFA_CACHE: usize = 2 << 20;

/// A compiled pattern: the `regex` crate's form for short inputs, the NFA (its size decides
/// the way) and, built on first need, the engines for large ones.
pub struct Pattern {
    pub regex: regex::Regex,
    nfa: NFA,
    dfa: OnceLock<Option<hybrid::regex::Regex>>,
    pikevm: OnceLock<Option<PikeVM>>,
}

/// What a search gives: a match's span and, when asked for, its groups' spans.
pub type Groups = Vec<Option<(usize, usize)>>;

impl Pattern {
    /// Compiles `src` within `size_limit` bytes of NFA (as the `regex` crate counts them).
    pub fn new(src: &str, size_limit: usize) -> Result<Pattern, regex::Error> {
        let regex = regex::RegexBuilder::new(src)
            .size_limit(size_limit)
            .dfa_size_limit(DFA_CACHE)
            .build()?;
        let nfa = thompson::Compiler::new()
            .configure(thompson::Config::new().nfa_size_limit(Some(size_limit)))
            .build(src)
            .map_err(|_| regex::Error::CompiledTooBig(size_limit))?;
        Ok(Pattern {
            regex,
            nfa,
            dfa: OnceLock::new(),
            pikevm: OnceLock::new(),
        })
    }

    /// Groups, the whole match included (1: none).
    pub fn captures_len(&self) -> usize {
        self.regex.captures_len()
    }

    /// NFA states: the pattern's size, which its compiling and searching are proportional to.
    pub fn states(&self) -> usize {
        self.nfa.states().len().max(1)
    }

    /// Whether a search of `len` bytes may run on the `regex` crate unchecked.
    pub fn is_small(&self, len: usize) -> bool {
        len.saturating_mul(self.states()) <= UNCHECKED_WORK
    }

    fn dfa(&self) -> Option<&hybrid::regex::Regex> {
        self.dfa
            .get_or_init(|| {
                let config = hybrid::dfa::Config::new()
                    .cache_capacity(DFA_CACHE)
                    .minimum_cache_clear_count(None)
                    .skip_cache_capacity_check(true)
                    // a Unicode \b: quits on non-ASCII bytes (the PikeVM then decides)
                    .unicode_word_boundary(true);
                hybrid::regex::Builder::new()
                    .dfa(config)
                    .build(self.regex.as_str())
                    .ok()
            })
            .as_ref()
    }

    fn pikevm(&self) -> Option<&PikeVM> {
        self.pikevm
            .get_or_init(|| PikeVM::new_from_nfa(self.nfa.clone()).ok())
            .as_ref()
    }

    /// The leftmost-first match in `input`, read by the driven lazy DFA (or, where it cannot
    /// be used, by the PikeVM within [`UNCHECKED_WORK`]).
    fn find(&self, caches: &mut Caches, input: &Input<'_>) -> Result<Option<Match>, Error> {
        if let Some(dfa) = self.dfa() {
            let cache = caches.dfa.get_or_insert_with(|| dfa.create_cache());
            // an error is a quit (a Unicode \b met non-ASCII text): the PikeVM decides
            if let Ok(m) = find_driven(dfa, cache, input) {
                return Ok(m);
            }
        }
        let span = input.end() - input.start();
        self.within_work(span, "search")?;
        let vm = self.pikevm().ok_or_else(too_complex)?;
        let cache = caches.vm.get_or_insert_with(|| vm.create_cache());
        Ok(vm.find(cache, input.clone()))
    }

    /// Whether the PikeVM may read `span` bytes at once (it cannot be stopped meanwhile):
    /// up to [`UNCHECKED_WORK`] steps always, up to [`MAX_UNCHECKED_WORK`] when the run has
    /// the time they may take, never more.
    fn within_work(&self, span: usize, what: &str) -> Result<(), Error> {
        let work = span.saturating_mul(self.states());
        if work <= UNCHECKED_WORK {
            return Ok(());
        }
        let hint = if what == "groups" {
            "match without capturing groups (use (?:...) instead of (...)) or on a shorter \
             string, then take the parts you need with subs or split"
        } else {
            "use a simpler pattern or search a shorter string"
        };
        let states = self.states();
        if work > MAX_UNCHECKED_WORK {
            return Err(Error::exec(format!(
                "this regex's {what} over {span} characters is too costly: up to {work} steps \
                 of its {states} states, more than the {MAX_UNCHECKED_WORK} a regex may take at \
                 once"
            ))
            .with_hint(hint));
        }
        let need = Duration::from_nanos(work as u64 * NANOS_PER_STEP);
        match crate::guard::time_left() {
            Some((left, timeout_ms)) if need > left => Err(Error::limit(
                ErrorKind::Timeout,
                LimitName::Timeout,
                format!(
                    "execution would exceed {timeout_ms}ms limit: this regex's {what} over \
                     {span} characters may take {} ms ({work} steps of its {states} states), \
                     more than the {} ms left",
                    need.as_millis(),
                    left.as_millis()
                ),
            )
            .with_hint(hint)),
            _ => Ok(()),
        }
    }

    /// The spans of `m`'s groups (the whole match first), read by the PikeVM over `m` only.
    fn groups(&self, caches: &mut Caches, hay: &str, m: Match) -> Result<Groups, Error> {
        self.within_work(m.len(), "groups")?;
        let vm = self.pikevm().ok_or_else(too_complex)?;
        let cache = caches.vm.get_or_insert_with(|| vm.create_cache());
        let mut caps = vm.create_captures();
        let input = Input::new(hay).span(m.range()).anchored(Anchored::Yes);
        vm.search(cache, &input, &mut caps);
        Ok((0..self.captures_len())
            .map(|i| caps.get_group(i).map(|s| (s.start, s.end)))
            .collect())
    }

    /// Every match of a large `hay` in order (as the `regex` crate iterates them), with its
    /// groups when `with_groups`, handed to `each`; the run is charged as the search reads.
    pub fn each_large<E: From<Error>>(
        &self,
        hay: &str,
        first_only: bool,
        with_groups: bool,
        mut each: impl FnMut(Groups) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut caches = Caches::default();
        let mut searcher = Searcher::new(Input::new(hay));
        let mut failed = None;
        loop {
            let next = searcher.try_advance(|input| match self.find(&mut caches, input) {
                Ok(m) => Ok(m),
                Err(e) => {
                    failed = Some(e);
                    Err(MatchError::quit(0, input.start()))
                }
            });
            let m = match next {
                Ok(Some(m)) => m,
                Ok(None) => return Ok(()),
                Err(_) => return Err(failed.unwrap_or_else(too_complex).into()),
            };
            let groups = if with_groups && self.captures_len() > 1 {
                self.groups(&mut caches, hay, m)?
            } else {
                vec![Some((m.start(), m.end()))]
            };
            each(groups)?;
            if first_only {
                return Ok(());
            }
        }
    }
}

fn too_complex() -> Error {
    Error::exec("Regex too complex: its compiled form exceeds the size limit")
}

#[derive(Default)]
struct Caches {
    dfa: Option<hybrid::regex::Cache>,
    vm: Option<thompson::pikevm::Cache>,
}

/// The leftmost-first match in `input`: its end by the forward DFA, its start by the reverse
/// one; an empty match that would split a character is skipped, as the `regex` crate does.
fn find_driven(
    re: &hybrid::regex::Regex,
    cache: &mut hybrid::regex::Cache,
    input: &Input<'_>,
) -> Result<Option<Match>, MatchError> {
    let (fcache, rcache) = cache.as_parts_mut();
    let (fwd, rev) = (re.forward(), re.reverse());
    let utf8_empty = fwd.get_nfa().has_empty() && fwd.get_nfa().is_utf8();
    let mut input = input.clone();
    loop {
        let Some(end) = scan_forward(fwd, fcache, &input)? else {
            return Ok(None);
        };
        let start = if input.start() == end.offset() {
            end.offset()
        } else {
            let back = input
                .clone()
                .span(input.start()..end.offset())
                .anchored(Anchored::Yes)
                .earliest(false);
            match scan_reverse(rev, rcache, &back)? {
                Some(start) => start.offset(),
                // cannot happen (the reverse DFA matches where the forward one did); said as
                // no match rather than a panic
                None => return Ok(None),
            }
        };
        let m = Match::new(end.pattern(), start..end.offset());
        if utf8_empty && m.is_empty() && !input.haystack().is_char_boundary_at(m.start()) {
            if input.get_anchored().is_anchored() || m.start() >= input.end() {
                return Ok(None);
            }
            input.set_start(m.start() + 1);
            continue;
        }
        return Ok(Some(m));
    }
}

/// `is_char_boundary` on the haystack's bytes (a `&str`'s, so valid UTF-8).
trait CharBoundary {
    fn is_char_boundary_at(&self, i: usize) -> bool;
}

impl CharBoundary for [u8] {
    fn is_char_boundary_at(&self, i: usize) -> bool {
        // a UTF-8 continuation byte is 0b10xx_xxxx
        self.get(i).map_or(true, |&b| (b as i8) >= -0x40)
    }
}

/// Charges `bytes` read to the run (which stops the search by unwinding once it must end).
#[inline]
fn charge(bytes: usize) {
    crate::guard::charge(bytes);
}

/// The end of the leftmost-first match in `input`, reading forward (matches are seen one byte
/// late, so a match state at `at` ends the match at `at`).
fn scan_forward(
    dfa: &hybrid::dfa::DFA,
    cache: &mut hybrid::dfa::Cache,
    input: &Input<'_>,
) -> Result<Option<HalfMatch>, MatchError> {
    if input.is_done() {
        return Ok(None);
    }
    let hay = input.haystack();
    let mut mat = None;
    let mut sid = dfa.start_state_forward(cache, input)?;
    let mut at = input.start();
    let mut unpaid = 0;
    while at < input.end() {
        sid = dfa
            .next_state(cache, sid, hay[at])
            .map_err(|_| MatchError::gave_up(at))?;
        if sid.is_tagged() {
            if sid.is_match() {
                mat = Some(HalfMatch::new(dfa.match_pattern(cache, sid, 0), at));
            } else if sid.is_dead() {
                charge(unpaid);
                return Ok(mat);
            } else if sid.is_quit() {
                return Err(MatchError::quit(hay[at], at));
            }
        }
        at += 1;
        unpaid += 1;
        if unpaid == CHECK_BYTES {
            charge(std::mem::take(&mut unpaid));
        }
    }
    charge(unpaid);
    // the byte after the span (or the end of the text) settles a match ending there
    let end = input.end();
    match hay.get(end) {
        Some(&b) => {
            sid = dfa
                .next_state(cache, sid, b)
                .map_err(|_| MatchError::gave_up(end))?;
            if sid.is_match() {
                mat = Some(HalfMatch::new(dfa.match_pattern(cache, sid, 0), end));
            } else if sid.is_quit() {
                return Err(MatchError::quit(b, end));
            }
        }
        None => {
            sid = dfa
                .next_eoi_state(cache, sid)
                .map_err(|_| MatchError::gave_up(hay.len()))?;
            if sid.is_match() {
                mat = Some(HalfMatch::new(dfa.match_pattern(cache, sid, 0), hay.len()));
            }
        }
    }
    Ok(mat)
}

/// The start of the match ending at `input`'s end, reading backward (anchored there).
fn scan_reverse(
    dfa: &hybrid::dfa::DFA,
    cache: &mut hybrid::dfa::Cache,
    input: &Input<'_>,
) -> Result<Option<HalfMatch>, MatchError> {
    if input.is_done() {
        return Ok(None);
    }
    let hay = input.haystack();
    let mut mat = None;
    let mut sid = dfa.start_state_reverse(cache, input)?;
    let mut unpaid = 0;
    let mut at = input.end();
    while at > input.start() {
        at -= 1;
        sid = dfa
            .next_state(cache, sid, hay[at])
            .map_err(|_| MatchError::gave_up(at))?;
        if sid.is_tagged() {
            if sid.is_match() {
                // seen one byte late: the match starts after this byte
                mat = Some(HalfMatch::new(dfa.match_pattern(cache, sid, 0), at + 1));
            } else if sid.is_dead() {
                charge(unpaid);
                return Ok(mat);
            } else if sid.is_quit() {
                return Err(MatchError::quit(hay[at], at));
            }
        }
        unpaid += 1;
        if unpaid == CHECK_BYTES {
            charge(std::mem::take(&mut unpaid));
        }
    }
    charge(unpaid);
    let start = input.start();
    if start > 0 {
        let b = hay[start - 1];
        sid = dfa
            .next_state(cache, sid, b)
            .map_err(|_| MatchError::gave_up(start))?;
        if sid.is_match() {
            mat = Some(HalfMatch::new(dfa.match_pattern(cache, sid, 0), start));
        } else if sid.is_quit() {
            return Err(MatchError::quit(b, start - 1));
        }
    } else {
        sid = dfa
            .next_eoi_state(cache, sid)
            .map_err(|_| MatchError::gave_up(0))?;
        if sid.is_match() {
            mat = Some(HalfMatch::new(dfa.match_pattern(cache, sid, 0), 0));
        }
    }
    Ok(mat)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATTERNS: &[&str] = &[
        r"a",
        r"a+",
        r"a*",
        r"",
        r"\d+",
        r"(\d+)-(\d+)?",
        r"(?m)^\w+$",
        r"(?s).*",
        r"(a)|(b)|(é+)",
        r"\bfoo\b",
        r"(?-u:\b)x",
        r"[^a]*",
        r"(?i)straße",
        r"x*y?",
        r"(?:[a-m].{3}){2}[a-c]{2}",
        r"$",
        r"^",
        r"\B",
        r"(é)|(.)",
    ];
    const HAYSTACKS: &[&str] = &[
        "",
        "a",
        "aaa bbb aaa",
        "12-34 5- 678-9",
        "foo\nbar baz\nqux",
        "éé aé xyzzy ☃ foo foo, STRASSE straße",
        "abcdefghijklmnopqrstuvwxyz abc mno aab",
        "xxyxyyxx",
        "ab\u{10000}cd",
    ];

    /// Every match and its groups, by the regex crate (the small way).
    fn small(p: &Pattern, hay: &str) -> Vec<Groups> {
        p.regex
            .captures_iter(hay)
            .map(|c| c.iter().map(|g| g.map(|m| (m.start(), m.end()))).collect())
            .collect()
    }

    fn large(p: &Pattern, hay: &str) -> Vec<Groups> {
        let mut out = Vec::new();
        p.each_large::<Error>(hay, false, true, |g| {
            out.push(g);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{}", e.message));
        out
    }

    #[test]
    fn large_matches_as_small() {
        for src in PATTERNS {
            let p = Pattern::new(src, 1 << 20).unwrap_or_else(|e| panic!("{src}: {e}"));
            for hay in HAYSTACKS {
                assert_eq!(large(&p, hay), small(&p, hay), "{src:?} over {hay:?}");
                let mut first = None;
                p.each_large::<Error>(hay, true, false, |g| {
                    first = g[0];
                    Ok(())
                })
                .unwrap_or_else(|e| panic!("{}", e.message));
                let expect = p.regex.find(hay).map(|m| (m.start(), m.end()));
                assert_eq!(first, expect, "first of {src:?} over {hay:?}");
            }
        }
    }

    #[test]
    fn a_unicode_word_boundary_over_non_ascii_text_is_read_by_the_pikevm() {
        let p = Pattern::new(r"\bé\w*", 1 << 20).unwrap_or_else(|e| panic!("{e}"));
        let hay = "x éa é éé";
        assert_eq!(large(&p, hay), small(&p, hay));
        assert_eq!(small(&p, hay).len(), 3);
    }

    #[test]
    fn groups_over_a_long_match_are_refused_with_the_reason() {
        let p = Pattern::new(r"(?s)(.*)(.*)", 1 << 20).unwrap_or_else(|e| panic!("{e}"));
        let hay = "x".repeat(1 << 26);
        let e = p
            .each_large::<Error>(&hay, true, true, |_| Ok(()))
            .err()
            .unwrap_or_else(|| panic!("refused"));
        assert!(
            e.message.starts_with(&format!(
                "this regex's groups over {} characters is too costly",
                1 << 26
            )),
            "{}",
            e.message
        );
        // without groups the same search is the driven DFA's: allowed
        let mut whole = None;
        p.each_large::<Error>(&hay, true, false, |g| {
            whole = g[0];
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{}", e.message));
        assert_eq!(whole, Some((0, 1 << 26)));
    }
}
