//! Text -> forms, with positions. Iterative (an explicit stack of open brackets), so nesting
//! depth is a checked limit and never a stack overflow.
//!
//! Why one file over 600 lines: one iterative state machine (the bracket stack, literals,
//! positions); its parts share that state and read best in order.

use crate::error::{Error, Pos, Result};
#[allow(unused_imports)]
use crate::value::Str;

#[derive(Debug, Clone, PartialEq)]
pub enum FormKind {
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Str),
    Keyword(Str),
    Symbol(Str),
    List(Vec<Form>),
    Vector(Vec<Form>),
    Map(Vec<Form>),
    Set(Vec<Form>),
    /// `#( ... )`
    ShortFn(Vec<Form>),
    /// `#'name`
    VarRef(Str),
}

#[derive(Debug)]
pub struct Form {
    pub kind: FormKind,
    pub pos: Pos,
}

// Threading macros clone forms (and the analyzer compares them) as deep as the text nests, up
// to `max_nesting`: each level continues on a fresh stack segment when the native one runs low,
// and is charged to the run (nested threading clones a quadratic number of forms).
impl Clone for Form {
    fn clone(&self) -> Self {
        crate::guard::charge(1);
        crate::guard::deeper(|| Form {
            kind: self.kind.clone(),
            pos: self.pos,
        })
    }
}

impl PartialEq for Form {
    fn eq(&self, other: &Self) -> bool {
        self.pos == other.pos && crate::guard::deeper(|| self.kind == other.kind)
    }
}

impl Drop for Form {
    fn drop(&mut self) {
        // threading macros can build forms far deeper than the text they come from
        if let FormKind::List(_)
        | FormKind::Vector(_)
        | FormKind::Map(_)
        | FormKind::Set(_)
        | FormKind::ShortFn(_) = self.kind
        {
            crate::guard::drop_on_fresh_stack(&mut self.kind, FormKind::Nil);
        }
    }
}

impl Form {
    pub fn symbol_name(&self) -> Option<&str> {
        match &self.kind {
            FormKind::Symbol(s) => Some(s),
            _ => None,
        }
    }
}

pub const DEFAULT_MAX_NESTING: usize = 512;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Open {
    List,
    Vector,
    Map,
    Set,
    ShortFn,
}

impl Open {
    fn opener(self) -> &'static str {
        match self {
            Open::List => "(",
            Open::Vector => "[",
            Open::Map => "{",
            Open::Set => "#{",
            Open::ShortFn => "#(",
        }
    }
    fn closer(self) -> char {
        match self {
            Open::List | Open::ShortFn => ')',
            Open::Vector => ']',
            Open::Map | Open::Set => '}',
        }
    }
}

struct Frame {
    open: Open,
    pos: Pos,
    items: Vec<Form>,
}

pub fn is_symbol_start(c: char) -> bool {
    c.is_ascii_alphabetic() || "+-*/<>=?!_%.&".contains(c)
}

pub fn is_symbol_char(c: char) -> bool {
    is_symbol_start(c) || c.is_ascii_digit() || c == '#' || c == '\'' || c == ':'
}

fn is_delim(c: char) -> bool {
    c.is_whitespace() || c == ',' || "()[]{}\";".contains(c)
}

/// A cursor over the source. Positions are byte offsets into `src` (always on character
/// boundaries), so reading needs no memory per character of the program.
struct Reader<'a> {
    src: &'a str,
    i: usize,
    line: u32,
    col: u32,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<char> {
        self.src[self.i..].chars().next()
    }
    fn peek_at(&self, k: usize) -> Option<char> {
        self.src[self.i..].chars().nth(k)
    }
    fn pos(&self) -> Pos {
        Pos {
            line: self.line,
            col: self.col,
        }
    }
    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.i += c.len_utf8();
        if c == '\n' {
            self.line += 1;
            self.col = 1;
        } else {
            self.col += 1;
        }
        Some(c)
    }
    fn skip_ws(&mut self) {
        while let Some(c) = self.peek() {
            if c.is_whitespace() || c == ',' {
                self.bump();
            } else if c == ';' {
                while let Some(c) = self.peek() {
                    if c == '\n' {
                        break;
                    }
                    self.bump();
                }
            } else {
                break;
            }
        }
    }
    /// The byte offset where the raw token starting here ends (at the next delimiter).
    fn token_end(&self) -> usize {
        match self.src[self.i..]
            .char_indices()
            .find(|&(_, c)| is_delim(c))
        {
            Some((j, _)) => self.i + j,
            None => self.src.len(),
        }
    }
    /// Consumes the text up to (not including) the next `"`, `\\`, `\n` or `\r`.
    fn plain_run(&mut self) -> &'a str {
        let rest = &self.src.as_bytes()[self.i..];
        let n = rest
            .iter()
            .position(|b| matches!(b, b'"' | b'\\' | b'\n' | b'\r'))
            .unwrap_or(rest.len());
        let run = &self.src[self.i..self.i + n];
        self.i += n;
        // columns count characters: every byte that does not continue a UTF-8 sequence
        self.col += run.bytes().filter(|b| (b & 0xC0) != 0x80).count() as u32;
        run
    }
    /// Like `token_end` for a token starting at `from`, but never past `max` bytes.
    fn token_end_within(&self, from: usize, max: usize) -> usize {
        let limit = (from + max).min(self.src.len());
        match self.src[from..]
            .char_indices()
            .take_while(|&(j, _)| from + j < limit)
            .find(|&(_, c)| is_delim(c))
        {
            Some((j, _)) => from + j,
            None => {
                let mut end = limit;
                while !self.src.is_char_boundary(end) {
                    end += 1;
                }
                end
            }
        }
    }
    fn slice(&self, from: usize, to: usize) -> &'a str {
        &self.src[from..to]
    }
    fn advance_to(&mut self, j: usize) {
        while self.i < j {
            self.bump();
        }
    }
}

pub fn read(src: &str) -> Result<Vec<Form>> {
    read_with_limit(src, DEFAULT_MAX_NESTING)
}

pub fn read_with_limit(src: &str, max_nesting: usize) -> Result<Vec<Form>> {
    let unlimited = SymbolLimit {
        max: usize::MAX,
        is_core: |_| false,
    };
    read_with_limits(src, max_nesting, unlimited)
}

/// The `max_symbols` limit: at most `max` distinct symbols and keywords, not counting the
/// language's own names (`is_core`: core forms and builtins, which the analyzer knows) or
/// `:else` (LANGUAGE.md §11).
#[derive(Clone, Copy)]
pub struct SymbolLimit {
    pub max: usize,
    pub is_core: fn(&str) -> bool,
}

impl SymbolLimit {
    /// The name a form contributes to the limit, if any.
    pub fn counted<'f>(&self, kind: &'f FormKind) -> Option<&'f Str> {
        match kind {
            FormKind::Symbol(s) if !(self.is_core)(s) => Some(s),
            FormKind::Keyword(k) if k.as_str() != "else" => Some(k),
            _ => None,
        }
    }

    pub fn exceeded(&self, pos: Pos) -> Error {
        Error::limit(
            crate::error::ErrorKind::SymbolLimitExceeded,
            crate::error::LimitName::Symbols,
            format!(
                "the program uses more than {} distinct symbols and keywords",
                self.max
            ),
        )
        .at(pos)
    }
}

/// Reads with the nesting limit and the `max_symbols` limit, the latter checked as names are
/// read: a program of a million distinct names stops after the first few thousand.
pub fn read_with_limits(src: &str, max_nesting: usize, symbols: SymbolLimit) -> Result<Vec<Form>> {
    let max_symbols = symbols.max;
    let mut names: ahash::AHashSet<Str> = ahash::AHashSet::new();
    let mut r = Reader {
        src,
        i: 0,
        line: 1,
        col: 1,
    };
    let mut stack: Vec<Frame> = Vec::new();
    let mut top: Vec<Form> = Vec::new();

    loop {
        r.skip_ws();
        let pos = r.pos();
        let Some(c) = r.peek() else { break };
        let form = match c {
            '(' | '[' | '{' => {
                r.bump();
                let open = match c {
                    '(' => Open::List,
                    '[' => Open::Vector,
                    _ => Open::Map,
                };
                push_frame(&mut stack, open, pos, max_nesting)?;
                continue;
            }
            ')' | ']' | '}' => {
                r.bump();
                match stack.pop() {
                    None => continue, // stray closer between top-level forms: ignored (§2.9)
                    Some(frame) => {
                        if frame.open.closer() != c {
                            return Err(Error::parse(
                                format!(
                                    "mismatched '{c}' at {pos}: expected '{}' to close '{}' opened at {}",
                                    frame.open.closer(),
                                    frame.open.opener(),
                                    frame.pos
                                ),
                                pos,
                            ));
                        }
                        close_frame(frame)?
                    }
                }
            }
            '"' => read_string(&mut r)?,
            '#' => match r.peek_at(1) {
                Some('{') => {
                    r.bump();
                    r.bump();
                    push_frame(&mut stack, Open::Set, pos, max_nesting)?;
                    continue;
                }
                Some('(') => {
                    r.bump();
                    r.bump();
                    push_frame(&mut stack, Open::ShortFn, pos, max_nesting)?;
                    continue;
                }
                Some('\'') => {
                    r.bump();
                    r.bump();
                    let start = r.i;
                    let end = r.token_end();
                    let name = r.slice(start, end).to_string();
                    if name.is_empty() || !name.chars().next().is_some_and(is_symbol_start) {
                        return Err(Error::parse(
                            "#' must be followed by a name, e.g. #'total",
                            pos,
                        ));
                    }
                    r.advance_to(end);
                    Form {
                        kind: FormKind::VarRef(Str::from(name.as_str())),
                        pos,
                    }
                }
                next => {
                    let lead = match next {
                        Some('"') => "#\"",
                        Some('_') => "#_",
                        Some('#') => "##",
                        _ => "#",
                    };
                    return Err(unsupported(lead, pos));
                }
            },
            '\'' => return Err(unsupported("'", pos)),
            '`' => return Err(unsupported("`", pos)),
            '~' => return Err(unsupported("~", pos)),
            '@' => return Err(unsupported("@", pos)),
            '^' => {
                // `(^ 2 10)` is an exponent, `^:private` metadata
                let spaced = r.src[r.i + 1..]
                    .chars()
                    .next()
                    .is_some_and(char::is_whitespace);
                return Err(unsupported(if spaced { "^ " } else { "^" }, pos));
            }
            '\\' => read_char(&mut r)?,
            ':' => read_keyword(&mut r)?,
            _ => read_atom(&mut r)?,
        };
        // reading is part of the run: a huge program runs into its memory and time limits
        crate::guard::charge(1);
        if let Some(name) = symbols.counted(&form.kind) {
            if names.len() <= max_symbols && !names.contains(name) {
                names.insert(name.clone());
                if names.len() > max_symbols {
                    return Err(symbols.exceeded(form.pos));
                }
            }
        }
        match stack.last_mut() {
            Some(frame) => frame.items.push(form),
            None => top.push(form),
        }
    }

    if let Some(first) = stack.first() {
        let mut counts: Vec<(char, usize)> = Vec::new();
        for f in &stack {
            let ch = f.open.opener().chars().last().unwrap_or('(');
            match counts.iter_mut().find(|(c, _)| *c == ch) {
                Some(e) => e.1 += 1,
                None => counts.push((ch, 1)),
            }
        }
        let what: Vec<String> = counts
            .iter()
            .map(|(c, n)| format!("{n} unclosed '{c}'"))
            .collect();
        let innermost = stack.last().map_or(first.pos, |f| f.pos);
        return Err(Error::parse(
            format!(
                "unbalanced brackets: {} (the innermost '{}' opened at {} is never closed)",
                what.join(", "),
                stack.last().map_or("(", |f| f.open.opener()),
                innermost
            ),
            innermost,
        )
        .with_hint(format!(
            "add the missing closing bracket(s); the outermost open form starts at {}",
            first.pos
        )));
    }
    Ok(top)
}

fn push_frame(stack: &mut Vec<Frame>, open: Open, pos: Pos, max: usize) -> Result<()> {
    if stack.len() >= max {
        let mut e = Error::parse(
            format!("forms are nested more than {max} levels deep (max_nesting)"),
            pos,
        )
        .with_hint("flatten the program: bind intermediate results with let");
        e.limit = Some(crate::error::LimitName::Nesting);
        return Err(e);
    }
    stack.push(Frame {
        open,
        pos,
        items: Vec::new(),
    });
    Ok(())
}

fn close_frame(frame: Frame) -> Result<Form> {
    let kind = match frame.open {
        Open::List => FormKind::List(frame.items),
        Open::Vector => FormKind::Vector(frame.items),
        Open::Set => FormKind::Set(frame.items),
        Open::ShortFn => FormKind::ShortFn(frame.items),
        Open::Map => {
            if frame.items.len() % 2 != 0 {
                return Err(Error::parse(
                    format!(
                        "map literal needs an even number of forms (key value pairs), got {} in the map opened at {}",
                        frame.items.len(),
                        frame.pos
                    ),
                    frame.pos,
                ));
            }
            FormKind::Map(frame.items)
        }
    };
    Ok(Form {
        kind,
        pos: frame.pos,
    })
}

fn read_string(r: &mut Reader) -> Result<Form> {
    let pos = r.pos();
    r.bump();
    // most literals have no escapes: then the text is copied once, straight into the value
    let first = r.plain_run();
    crate::guard::charge(first.len() / 64);
    if r.peek() == Some('"') {
        r.bump();
        return Ok(Form {
            kind: FormKind::Str(Str::from(first)),
            pos,
        });
    }
    let mut s = String::from(first);
    loop {
        // plain text up to the next quote, escape or line break, copied at once
        let run = r.plain_run();
        if !run.is_empty() {
            s.push_str(run);
            crate::guard::charge(run.len() / 64);
        }
        let here = r.pos();
        match r.bump() {
            None => {
                return Err(Error::parse(
                    format!("unterminated string opened at {pos}"),
                    pos,
                ))
            }
            Some('"') => break,
            Some('\n') | Some('\r') => {
                return Err(Error::parse(
                    format!(
                    "strings must be on one line: raw line break inside the string opened at {pos}"
                ),
                    here,
                )
                .with_hint("write \\n for a newline"))
            }
            Some('\\') => match r.bump() {
                Some('\\') => s.push('\\'),
                Some('"') => s.push('"'),
                Some('n') => s.push('\n'),
                Some('t') => s.push('\t'),
                Some('r') => s.push('\r'),
                Some(c) => {
                    let hint = if "dDwWsSbB.()[]{}+*?|^$".contains(c) {
                        // a regex escape written in a string for re-pattern
                        format!("in a string a regex backslash is doubled: \"\\\\{c}\"")
                    } else {
                        "only \\\\, \\\", \\n, \\t and \\r are supported".to_string()
                    };
                    return Err(
                        Error::parse(format!("unsupported escape \\{c} in string"), here)
                            .with_hint(hint),
                    );
                }
                None => {
                    return Err(Error::parse(
                        format!("unterminated string opened at {pos}"),
                        pos,
                    ))
                }
            },
            Some(c) => s.push(c),
        }
    }
    Ok(Form {
        kind: FormKind::Str(Str::from(s)),
        pos,
    })
}

/// The parse error for Clojure reader syntax outside the subset (see `meant::SYNTAX`).
fn unsupported(lead: &str, pos: Pos) -> Error {
    match crate::meant::unsupported_syntax(lead) {
        Some((message, Some(hint))) => Error::parse(message, pos).with_hint(hint),
        Some((message, None)) => Error::parse(message, pos),
        None => Error::parse(format!("{lead} is not supported"), pos),
    }
}

fn read_char(r: &mut Reader) -> Result<Form> {
    let pos = r.pos();
    r.bump();
    let Some(first) = r.bump() else {
        return Err(Error::parse(
            "a character literal needs a character after \\",
            pos,
        ));
    };
    let start = r.i - first.len_utf8();
    // character names are short: look no further than that (adjacent literals such as
    // `\\\\...` would otherwise each scan to the end of the run: quadratic)
    let end = r.token_end_within(start, 16).max(r.i);
    let text = r.slice(start, end);
    let named = match text {
        "newline" => Some("\n"),
        "space" => Some(" "),
        "tab" => Some("\t"),
        "return" => Some("\r"),
        "backspace" => Some("\u{8}"),
        "formfeed" => Some("\u{c}"),
        _ => None,
    };
    if let Some(s) = named {
        r.advance_to(end);
        return Ok(Form {
            kind: FormKind::Str(Str::from(s)),
            pos,
        });
    }
    if first.is_alphanumeric() && text.chars().count() > 1 && text.starts_with(first) {
        return Err(Error::parse(format!("unknown character literal \\{text}"), pos).with_hint(
            "character names are newline, space, tab, return, backspace, formfeed; there is no \\uXXXX form",
        ));
    }
    let mut buf = [0u8; 4];
    Ok(Form {
        kind: FormKind::Str(Str::from(&*first.encode_utf8(&mut buf))),
        pos,
    })
}

fn read_keyword(r: &mut Reader) -> Result<Form> {
    let pos = r.pos();
    r.bump();
    let start = r.i;
    let end = r.token_end();
    let text = r.slice(start, end);
    r.advance_to(end);
    if text.is_empty() {
        return Err(Error::parse("a keyword needs a name after ':'", pos));
    }
    if text.contains('/') {
        return Err(Error::parse(
            format!("namespaced keywords like :{text} are not supported"),
            pos,
        )
        .with_hint("use a plain keyword such as :lat"));
    }
    if !crate::value::is_keyword_text(text) {
        return Err(Error::parse(format!("invalid keyword :{text}"), pos)
            .with_hint("keywords may contain only letters, digits, -, _, ? and !"));
    }
    Ok(Form {
        kind: FormKind::Keyword(crate::value::intern_keyword(text)),
        pos,
    })
}

fn read_atom(r: &mut Reader) -> Result<Form> {
    let pos = r.pos();
    let start = r.i;
    let end = r.token_end();
    let text = r.slice(start, end);
    r.advance_to(end);
    let kind = match text {
        "nil" => FormKind::Nil,
        "true" => FormKind::Bool(true),
        "false" => FormKind::Bool(false),
        _ => {
            let body = text.strip_prefix('-').unwrap_or(text);
            if body.starts_with(|c: char| c.is_ascii_digit()) {
                parse_number(text, pos)?
            } else if text.starts_with('.') && text[1..].starts_with(|c: char| c.is_ascii_digit()) {
                return Err(Error::parse(format!("invalid number {text}"), pos)
                    .with_hint("write a digit before the point, e.g. 0.5"));
            } else if text.chars().next().is_some_and(is_symbol_start)
                && text.chars().all(is_symbol_char)
            {
                if matches!(text, "f" | "rf" | "fr" | "F") && r.src[end..].starts_with('"') {
                    // Python's f"...{x}..." reads as the symbol f and a string
                    return Err(Error::parse("f-strings are not supported", pos)
                        .with_hint("build text with str: (str \"total: \" x)"));
                }
                FormKind::Symbol(Str::from(text))
            } else {
                let bad = text.chars().find(|c| !is_symbol_char(*c)).unwrap_or(' ');
                let e = Error::parse(format!("unexpected character '{bad}' in {text}"), pos);
                // an operator from another language (`||`)
                return Err(match crate::meant::idiom(text) {
                    Some(idiom) => e.with_hint(format!("{text} is not part of PTC-Lisp; {idiom}")),
                    None => e,
                });
            }
        }
    };
    Ok(Form { kind, pos })
}

fn parse_number(text: &str, pos: Pos) -> Result<FormKind> {
    let body = text.strip_prefix('-').unwrap_or(text);
    let bytes = body.as_bytes();
    let mut i = 0;
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        i += 1;
    }
    let mut is_float = false;
    if i < bytes.len() && bytes[i] == b'.' {
        let j = i + 1;
        let mut k = j;
        while k < bytes.len() && bytes[k].is_ascii_digit() {
            k += 1;
        }
        if k == j {
            return Err(Error::parse(format!("invalid number {text}"), pos)
                .with_hint("write a digit after the point, e.g. 5.0"));
        }
        i = k;
        is_float = true;
    }
    if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
        let mut k = i + 1;
        if k < bytes.len() && (bytes[k] == b'+' || bytes[k] == b'-') {
            k += 1;
        }
        let ds = k;
        while k < bytes.len() && bytes[k].is_ascii_digit() {
            k += 1;
        }
        if k == ds {
            return Err(Error::parse(format!("invalid number {text}"), pos));
        }
        i = k;
        is_float = true;
    }
    if i != bytes.len() {
        let hint = if body.contains('/') {
            "ratios are not supported; use (/ a b), which gives a float"
        } else {
            "numbers are decimal integers (42) or floats (4.2, 6e3); no suffixes, hex or radix forms"
        };
        return Err(Error::parse(format!("invalid number {text}"), pos).with_hint(hint));
    }
    if is_float {
        let f: f64 = text
            .parse()
            .map_err(|_| Error::parse(format!("invalid number {text}"), pos))?;
        if !f.is_finite() {
            return Err(Error::parse(
                format!("float literal {text} is out of range"),
                pos,
            ));
        }
        Ok(FormKind::Float(f))
    } else {
        text.parse::<i64>().map(FormKind::Int).map_err(|_| {
            Error::parse(
                format!("integer literal {text} does not fit in 64 bits"),
                pos,
            )
            .with_hint("integers range from -9223372036854775808 to 9223372036854775807; write a float such as 1e20 if an approximation is fine")
        })
    }
}

/// The length in bytes of the longest prefix of `src` made of whole top-level forms that more
/// text cannot change: what a program streaming in can already run. A form counts once it is
/// closed (`)`, `]`, `}`, a string's quote) or, for an atom, once whitespace follows it; the
/// prefix must read (so a `#_` or `'` still waiting for its form does not count).
pub fn complete_prefix(src: &str) -> usize {
    let mut cuts = Vec::new();
    let (mut depth, mut in_str, mut in_comment, mut escaped, mut in_atom) =
        (0usize, false, false, false, false);
    for (i, c) in src.char_indices() {
        if in_comment {
            in_comment = c != '\n';
            continue;
        }
        if in_str {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
                if depth == 0 {
                    cuts.push(i + 1);
                }
            }
            continue;
        }
        match c {
            ';' => in_comment = true,
            '"' => in_str = true,
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    cuts.push(i + 1);
                }
            }
            c if (c.is_whitespace() || c == ',') && in_atom && depth == 0 => cuts.push(i),
            _ => {}
        }
        in_atom = !(c.is_whitespace() || c == ',' || "()[]{}\";".contains(c));
    }
    // the last cut that reads; reading is linear, so only the last few are tried
    cuts.iter()
        .rev()
        .take(8)
        .copied()
        .find(|&cut| read(&src[..cut]).is_ok())
        .unwrap_or(0)
}
