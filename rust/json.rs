//! JSON text straight to core values, without building Python objects first (jiter's pull
//! parser drives the walk): object keys that are valid keyword text become (interned) keywords,
//! as with Python input; short strings that repeat share one allocation (per thread, when a
//! large text is read by two: see [`from_json_at`]).
//!
//! Input is the host's (never a run's: the second thread of a large text would escape a run's
//! accounting), so it is not bounded by a run's limits; instead the walk is bounded by
//! nesting depth and by the memory the process has left (`sysmem::Watch`), and every problem
//! is reported with where it is (`data.orders[3].total`, line and column).
//!
//! Why one file: the reading of one value and the two-thread split of a large text share the
//! builder (its interner, shapes, memory watch and error positions); apart they would pass
//! all of it across a module boundary.

use jiter::{
    Jiter, JiterError, JiterErrorType, JsonErrorType, LinePosition, NumberAny, NumberInt, Peek,
};

use crate::error::{Error, ErrorKind};
use crate::sysmem::Watch;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Arc;

use crate::intern::Interner;
use crate::map::{MapData, Shape, ShapeCache};
use crate::value::{is_keyword_text, Value, ValueMap};

/// Nesting deeper than this is refused (the same bound as for Python input).
pub const MAX_JSON_DEPTH: usize = 1_000;

/// Arrays longer than this are built in a buffer of their own, not on the value stack.
const SHORT_ARRAY: usize = 1024;

/// Values read between two checks of the process's memory, at most.
const CHECK_EVERY: usize = 64;
/// Checks between two looks at the host's interruption (a few milliseconds of reading).
const POLL_EVERY: usize = 4096;
/// The message of a reading stopped by the host's interruption.
pub const INTERRUPTED: &str = "interrupted";

/// Texts this long or longer are read by two threads when there are two cores (see
/// [`from_json_at`]).
pub const PARALLEL_MIN: usize = 1 << 20;

/// How far past the middle of the text the split between the two threads is looked for.
const SPLIT_SCAN: usize = 64 << 10;

/// Where in the document a problem is: keys and indexes, innermost first.
enum Seg {
    Key(String),
    Index(usize),
}

/// A problem, with the path it was found at (filled in as it propagates out).
struct Problem {
    message: String,
    path: Vec<Seg>,
    kind: ErrorKind,
}

impl Problem {
    fn new(message: impl Into<String>) -> Self {
        Problem {
            message: message.into(),
            path: Vec::new(),
            kind: ErrorKind::Type,
        }
    }
    fn under(mut self, seg: Seg) -> Self {
        self.path.push(seg);
        self
    }
}

struct Builder<'j> {
    jiter: Jiter<'j>,
    /// The whole text; `jiter` reads it from `offset` on (it restarts there after an array
    /// whose end another thread read).
    data: &'j [u8],
    offset: usize,
    interner: Interner,
    watch: Watch,
    shapes: ShapeCache,
    scratch: Vec<usize>,
    /// The keys and values of the objects being read, innermost last: each object takes its
    /// own off the top into one allocation of the exact size.
    keys: Vec<Value>,
    vals: Vec<Value>,
    /// By depth: the shape of the last record read there (taken while an object there is read).
    expect: Vec<Option<Arc<Shape>>>,
    /// The rest of an array that another thread is reading, from a known element on.
    split: Option<Split>,
    /// The deepest nesting passed to [`Builder::deeper`] (the other thread's reading is kept
    /// only if it fits under [`MAX_JSON_DEPTH`] from where it is).
    deepest: usize,
    /// Set for the other thread's reading when it is no longer wanted.
    abandon: Option<Arc<AtomicBool>>,
    /// The host's interruption (Ctrl-C), asked every [`POLL_EVERY`] checks by the thread that
    /// called: true stops the reading.
    poll: Option<&'j dyn Fn() -> bool>,
    checks: usize,
}

/// The elements of an array from `at` (the first byte of one of them) to its end, read by
/// another thread while this one reads up to there.
struct Split {
    at: usize,
    tail: Receiver<Result<Tail, ()>>,
    /// Tells the other thread to stop: this one went past `at` without meeting it.
    abandon: Arc<AtomicBool>,
}

/// What the other thread read: the elements, where the array ended (after its `]`), its
/// deepest nesting counted from the elements, and the bytes it allocated for them.
struct Tail {
    values: Vec<Value>,
    end: usize,
    deepest: usize,
    allocated: i64,
}

impl<'j> Builder<'j> {
    /// A builder reading `data` from `offset` on, its allocations watched by `watch`.
    fn new(data: &'j [u8], offset: usize, watch: Watch) -> Self {
        Builder {
            jiter: Jiter::new(&data[offset..]).with_allow_inf_nan(),
            data,
            offset,
            interner: Interner::default(),
            watch,
            shapes: ShapeCache::default(),
            scratch: Vec::new(),
            keys: Vec::new(),
            vals: Vec::new(),
            expect: Vec::new(),
            split: None,
            deepest: 0,
            abandon: None,
            poll: None,
            checks: 0,
        }
    }

    /// Whether the number at `start` (of this builder's part) is written as `Infinity`.
    fn infinity_at(&self, start: usize) -> bool {
        let text = &self.data[self.offset + start..];
        text.starts_with(b"Infinity") || text.starts_with(b"-Infinity")
    }

    fn syntax(&self, e: JiterError) -> Problem {
        let index = self.offset + e.index;
        let pos = LinePosition::find(self.data, index);
        let what = match &e.error_type {
            JiterErrorType::JsonError(JsonErrorType::NumberOutOfRange) => {
                let (text, float) = number_text(self.data, index);
                if float {
                    format!("number {text} is out of range")
                } else {
                    format!(
                        "integer {text} does not fit in 64 bits (PTC-Lisp integers are exact i64); pass it as a float or a string"
                    )
                }
            }
            JiterErrorType::JsonError(
                JsonErrorType::LoneLeadingSurrogateInHexEscape
                | JsonErrorType::UnexpectedEndOfHexEscape,
            ) if lone_surrogate_before(self.data, index) => "a lone surrogate escape (\\uD800 to \
                 \\uDFFF without the other half of its UTF-16 pair) is not valid Unicode text"
                .to_string(),
            other => other.to_string(),
        };
        Problem::new(format!("{what} (line {}, column {})", pos.line, pos.column))
    }

    fn value(&mut self, peek: Peek, depth: usize) -> Result<Value, Problem> {
        match peek {
            Peek::Null => {
                self.jiter.known_null().map_err(|e| self.syntax(e))?;
                Ok(Value::Nil)
            }
            Peek::True | Peek::False => {
                let b = self.jiter.known_bool(peek).map_err(|e| self.syntax(e))?;
                Ok(Value::Bool(b))
            }
            Peek::String => match self.jiter.known_str() {
                Ok(s) => Ok(Value::Str(self.interner.string(s))),
                Err(e) => Err(self.syntax(e)),
            },
            // only containers nest: the stack is checked there, not for every scalar
            Peek::Array => crate::guard::deeper(|| self.array(depth)),
            Peek::Object => crate::guard::deeper(|| self.object(depth)),
            _ => {
                let start = self.jiter.current_index();
                match self.jiter.known_number(peek).map_err(|e| self.syntax(e))? {
                    NumberAny::Int(NumberInt::Int(i)) => Ok(Value::Int(i)),
                    NumberAny::Float(f) if f.is_infinite() && !self.infinity_at(start) => {
                        // `1e999999` overflows to infinity: refused, as a 20-digit integer is
                        let index = self.offset + start;
                        let (text, _) = number_text(self.data, index);
                        let pos = LinePosition::find(self.data, index);
                        Err(Problem::new(format!(
                            "number {text} is out of range: it overflows a 64-bit float \
                             (line {}, column {})",
                            pos.line, pos.column
                        )))
                    }
                    NumberAny::Float(f) => Ok(Value::Float(f)),
                }
            }
        }
    }

    /// The process's memory, checked at every container and every [`CHECK_EVERY`] values of
    /// one (between checks, scalars and strings no longer than the text itself).
    #[inline]
    fn check(&mut self, i: usize) -> Result<(), Problem> {
        if i % CHECK_EVERY == 0 {
            self.watch.check().map_err(|e| memory_problem(&e))?;
            if self.abandon.as_ref().is_some_and(|a| a.load(Relaxed)) {
                return Err(Problem::new("no longer wanted"));
            }
            self.checks += 1;
            if self.checks % POLL_EVERY == 0 && self.poll.is_some_and(|p| p()) {
                return Err(Problem::new(INTERRUPTED));
            }
        }
        Ok(())
    }

    fn deeper(&mut self, depth: usize) -> Result<usize, Problem> {
        self.deepest = self.deepest.max(depth);
        if depth >= MAX_JSON_DEPTH {
            return Err(Problem::new(format!(
                "nested more than {MAX_JSON_DEPTH} levels deep"
            )));
        }
        Ok(depth + 1)
    }

    /// Room for one more value on the stack; growing doubles it at once, so the process must
    /// have room for that first.
    #[inline]
    fn room(&mut self) -> Result<(), Error> {
        if self.vals.len() == self.vals.capacity() {
            let grow = self.vals.len().max(64);
            self.watch
                .reserve(crate::guard::values_bytes(grow).saturating_mul(2))?;
            self.vals.reserve(grow);
        }
        Ok(())
    }

    /// The values above `base`, moved into one allocation of their size.
    fn take(&mut self, base: usize) -> Result<Vec<Value>, Error> {
        self.watch
            .reserve(crate::guard::values_bytes(self.vals.len() - base))?;
        Ok(self.vals.drain(base..).collect())
    }

    /// An array. A short one gathers on the value stack and leaves in one allocation of its
    /// size; past [`SHORT_ARRAY`] elements it moves to a buffer of its own, grown by doubling
    /// and kept as it is (a copy into an exact allocation would need twice the memory of a
    /// huge array at once).
    fn array(&mut self, depth: usize) -> Result<Value, Problem> {
        let depth = self.deeper(depth)?;
        let base = self.vals.len();
        let mut own: Option<Vec<Value>> = None;
        let mut i = 0;
        let mut next = self.jiter.known_array().map_err(|e| self.syntax(e))?;
        while let Some(peek) = next {
            self.check(i).map_err(|p| p.under(Seg::Index(i)))?;
            let v = self
                .value(peek, depth)
                .map_err(|p| p.under(Seg::Index(i)))?;
            if own.is_none() && i == SHORT_ARRAY {
                self.watch
                    .reserve(crate::guard::values_bytes(2 * i))
                    .map_err(|e| memory_problem(&e).under(Seg::Index(i)))?;
                let mut out = Vec::with_capacity(2 * i);
                out.extend(self.vals.drain(base..));
                own = Some(out);
            }
            match &mut own {
                None => {
                    self.room().map_err(|e| memory_problem(&e))?;
                    self.vals.push(v);
                }
                Some(out) => {
                    if out.len() == out.capacity() {
                        // growing doubles the buffer: make sure the process has room for the
                        // added half (a large block grows by remapping, not by a copy beside
                        // the old one: `alloc.rs`)
                        self.watch
                            .reserve(crate::guard::values_bytes(out.len()))
                            .map_err(|e| memory_problem(&e).under(Seg::Index(i)))?;
                        out.reserve(out.len());
                    }
                    out.push(v);
                }
            }
            i += 1;
            next = self.jiter.array_step().map_err(|e| self.syntax(e))?;
            if self.split.is_some() && next.is_some() {
                if let Some(tail) = self.meet_split(depth) {
                    let mut out = match own {
                        Some(out) => out,
                        None => self.take(base).map_err(|e| memory_problem(&e))?,
                    };
                    self.watch.absorb(tail.allocated);
                    self.watch
                        .reserve(crate::guard::values_bytes(tail.values.len()))
                        .map_err(|e| memory_problem(&e).under(Seg::Index(i)))?;
                    out.reserve_exact(tail.values.len());
                    out.extend(tail.values);
                    release_free_memory();
                    // go on reading after the array's end
                    self.jiter = Jiter::new(&self.data[tail.end..]).with_allow_inf_nan();
                    self.offset = tail.end;
                    return Ok(Value::vector(out));
                }
            }
        }
        let out = match own {
            Some(out) => out,
            None => self.take(base).map_err(|e| memory_problem(&e))?,
        };
        Ok(Value::vector(out))
    }

    /// At an element of an array at `depth`: the other thread's reading of the rest of this
    /// array, if it starts here, succeeded and nests no deeper than allowed from here. Once
    /// this thread is at or past the split, the split is over either way.
    fn meet_split(&mut self, depth: usize) -> Option<Tail> {
        let here = self.offset + self.jiter.current_index();
        let at = self.split.as_ref()?.at;
        if here < at {
            return None;
        }
        let split = self.split.take()?;
        if here > at {
            split.abandon.store(true, Relaxed);
            return None;
        }
        match split.tail.recv() {
            Ok(Ok(tail)) if tail.deepest == 0 || depth + tail.deepest - 1 < MAX_JSON_DEPTH => {
                Some(tail)
            }
            // it failed (bad text, memory) or nests too deep: read on here, for the message
            _ => None,
        }
    }

    fn object(&mut self, depth: usize) -> Result<Value, Problem> {
        let depth = self.deeper(depth)?;
        let base = self.vals.len();
        let kbase = self.keys.len();
        // the previous object at this depth usually has the same keys: while they match, no
        // key is interned or pushed, and the record takes that shape as it is
        let mut guess = Guess {
            shape: self.expect.get_mut(depth).and_then(Option::take),
        };
        let mut n = 0;
        let mut more = match self.jiter.known_object() {
            Ok(k) => k.map(|k| guess.key(&mut self.interner, &mut self.keys, 0, k)),
            Err(e) => return Err(self.syntax(e)),
        };
        while more.is_some() {
            let v = self
                .check(n)
                .and_then(|()| self.room().map_err(|e| memory_problem(&e)))
                .and_then(|()| {
                    let peek = self.jiter.peek().map_err(|e| self.syntax(e))?;
                    self.value(peek, depth)
                })
                .map_err(|p| {
                    let key = match &guess.shape {
                        Some(shape) => &shape.keys()[n],
                        None => &self.keys[kbase + n], // deeper objects' keys may lie above it
                    };
                    p.under(Seg::Key(crate::intern::key_text(key).to_string()))
                })?;
            self.vals.push(v);
            n += 1;
            more = match self.jiter.next_key() {
                Ok(k) => k.map(|k| guess.key(&mut self.interner, &mut self.keys, n, k)),
                Err(e) => return Err(self.syntax(e)),
            };
        }
        let shape = match guess.shape {
            Some(shape) if shape.len() == n => Some(shape),
            Some(shape) => {
                // fewer keys than the guess: its first `n` are this object's
                self.keys.extend_from_slice(&shape.keys()[..n]);
                self.shape(kbase)
            }
            None => self.shape(kbase),
        };
        if let Some(shape) = shape {
            self.keys.truncate(kbase);
            self.watch
                .reserve(crate::guard::values_bytes(self.vals.len() - base))
                .map_err(|e| memory_problem(&e))?;
            if self.expect.len() <= depth {
                self.expect.resize_with(depth + 1, || None);
            }
            self.expect[depth] = Some(shape.clone());
            // straight from the value stack into the record's one allocation
            return Ok(Value::Map(MapData::record(shape, self.vals.drain(base..))));
        }
        let vals = self.take(base).map_err(|e| memory_problem(&e))?;
        // a repeated key: the last value wins, at the first key's place
        let mut out = ValueMap::with_capacity_and_hasher(vals.len(), Default::default());
        for (k, v) in self.keys.drain(kbase..).zip(vals) {
            out.insert(k, v);
        }
        Ok(Value::map(out))
    }

    /// The shared shape of an object with these keys (objects with the same keys in the same
    /// order are records of one shape); `None` for an empty, wide or repeated-key object.
    fn shape(&mut self, kbase: usize) -> Option<Arc<Shape>> {
        let keys = &self.keys[kbase..];
        if keys.is_empty() || keys.len() > crate::map::MAX_SHAPED_KEYS {
            return None;
        }
        // keyed by the keys' identities: interned, and kept alive by the cached shapes
        self.scratch.clear();
        for k in keys {
            match k {
                Value::Keyword(s) | Value::Str(s) => self.scratch.push(s.identity()),
                _ => return None,
            }
        }
        self.shapes.get(&self.scratch, || keys.to_vec())
    }
}

/// The keys an object is expected to have (the shape of the previous object at its depth),
/// while every key read so far has matched them.
struct Guess {
    shape: Option<Arc<Shape>>,
}

impl Guess {
    /// Takes the object's key number `i`, text `k`: nothing to do while it is the guess's,
    /// else the guess is dropped and the keys so far go on the stack, interned.
    #[inline]
    fn key(&mut self, interner: &mut Interner, keys: &mut Vec<Value>, i: usize, k: &str) {
        if let Some(shape) = &self.shape {
            if shape
                .keys()
                .get(i)
                .is_some_and(|g| crate::intern::key_text(g) == k)
            {
                return;
            }
            keys.extend_from_slice(&shape.keys()[..i]);
            self.shape = None;
        }
        keys.push(interner.key(k));
    }
}

fn memory_problem(e: &Error) -> Problem {
    let mut p = Problem::new(e.message.clone());
    p.kind = ErrorKind::MemoryExceeded;
    p
}

/// The number around `index` (for messages; long ones abbreviated), and whether it is written
/// as a float.
fn number_text(data: &[u8], index: usize) -> (String, bool) {
    let is_num = |b: u8| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E');
    let mut start = index.min(data.len());
    while start > 0 && is_num(data[start - 1]) {
        start -= 1;
    }
    let mut end = start;
    while end < data.len() && is_num(data[end]) {
        end += 1;
    }
    let text = String::from_utf8_lossy(&data[start..end]).into_owned();
    let float = text.contains(['.', 'e', 'E']);
    if text.len() > 100 {
        let digits = text.trim_start_matches('-').len();
        (format!("{}... ({digits} digits)", &text[..40]), float)
    } else {
        (text, float)
    }
}

/// Whether the text just before `index` holds a `\uD800`-`\uDFFF` escape (the parser stops
/// a little after it when its pair is missing).
fn lone_surrogate_before(data: &[u8], index: usize) -> bool {
    let from = index.saturating_sub(12);
    let window = &data[from..index.min(data.len())];
    window.windows(3).enumerate().any(|(i, w)| {
        (w == b"\\uD" || w == b"\\ud")
            && window
                .get(i + 3)
                .is_some_and(|&c| matches!(c.to_ascii_lowercase(), b'8'..=b'9' | b'a'..=b'f'))
    })
}

/// Where a second thread can start reading: the first byte of an object that follows another
/// object in an array, a little past the middle of the text, in the outermost array seen there
/// (so that it reads the rest of the big array, not of a small one inside a record). A guess:
/// brackets are counted without telling strings apart (the middle may be inside one), so the
/// reader checks it.
pub fn split_point(data: &[u8]) -> Option<usize> {
    let mid = data.len() / 2;
    let window = &data[mid..(mid + SPLIT_SCAN).min(data.len())];
    let skip_space = |mut j: usize| {
        while j < window.len() && matches!(window[j], b' ' | b'\t' | b'\n' | b'\r') {
            j += 1;
        }
        j
    };
    let mut depth = 0i64;
    let mut best: Option<(i64, usize)> = None;
    for (i, &c) in window.iter().enumerate() {
        match c {
            b'{' | b'[' => depth += 1,
            b']' => depth -= 1,
            b'}' => {
                depth -= 1;
                let j = skip_space(i + 1);
                if window.get(j) == Some(&b',') {
                    let k = skip_space(j + 1);
                    if window.get(k) == Some(&b'{') && best.map_or(true, |(d, _)| depth < d) {
                        best = Some((depth, mid + k));
                    }
                }
            }
            _ => {}
        }
    }
    best.map(|(_, at)| at)
}

/// Gives the system back the free memory glibc's malloc keeps: the other thread's element
/// buffer, freed just now, lay in that thread's arena, which keeps what is freed in it (10 MB
/// more held per million records).
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages of malloc's arenas to the system.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The other thread's part: the elements from `at` to the end of their array.
fn read_tail(data: &[u8], at: usize, abandon: Arc<AtomicBool>, watch: Watch) -> Result<Tail, ()> {
    let mut b = Builder::new(data, at, watch);
    b.abandon = Some(abandon.clone());
    // dropped before `b`: an abandoned reading's values are freed before its watch's last word
    let mut values: Vec<Value> = Vec::new();
    let mut next = Some(b.jiter.peek().map_err(drop)?);
    while let Some(peek) = next {
        if abandon.load(Relaxed) {
            return Err(());
        }
        b.check(values.len()).map_err(drop)?;
        if values.len() == values.capacity() {
            let grow = values.len().max(64);
            b.watch
                .reserve(crate::guard::values_bytes(values.len() + grow))
                .map_err(drop)?;
            values.reserve(grow);
        }
        values.push(b.value(peek, 1).map_err(drop)?);
        next = b.jiter.array_step().map_err(drop)?;
    }
    Ok(Tail {
        values,
        end: at + b.jiter.current_index(),
        deepest: b.deepest,
        allocated: b.watch.used(),
    })
}

/// Parses JSON text into a core value. `root` names the document in messages (`data`).
///
/// A large text is read by two threads when there are two cores: one from the start, the
/// other from an element of an array past the middle to that array's end. When the first
/// arrives at that element it takes the other's elements and reads on after the array; if it
/// never arrives there exactly (the guess was inside a string), or the other failed, it reads
/// everything itself, so the value and every message are those of one thread's reading.
pub fn from_json_at(text: &str, root: &str) -> Result<Value, Error> {
    from_json_split(text, root, PARALLEL_MIN)
}

/// [`from_json_at`], read by two threads from `min_len` bytes of text on (tests and the
/// fuzzer compare small texts read both ways).
pub fn from_json_split(text: &str, root: &str, min_len: usize) -> Result<Value, Error> {
    from_json_polled(text, root, min_len, &|| false)
}

/// [`from_json_split`], `poll` asked now and then by the calling thread whether to stop (the
/// error then says [`INTERRUPTED`]).
pub fn from_json_polled(
    text: &str,
    root: &str,
    min_len: usize,
    poll: &dyn Fn() -> bool,
) -> Result<Value, Error> {
    // a byte-order mark is not JSON, but editors write one
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let data = text.as_bytes();
    let at = if data.len() >= min_len && crate::guard::cpus() > 1 {
        split_point(data)
    } else {
        None
    };
    let Some(at) = at else {
        let mut b = Builder::new(data, 0, Watch::new());
        b.poll = Some(poll);
        return read(b, root);
    };
    // one allowance for both threads: each counts only its own allocations
    let shared = crate::sysmem::Shared::new();
    std::thread::scope(|scope| {
        let abandon = Arc::new(AtomicBool::new(false));
        let (send, tail) = sync_channel(1);
        let flag = abandon.clone();
        let theirs = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("ptc-json".into())
            .spawn_scoped(scope, move || {
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    read_tail(data, at, flag, Watch::sharing(theirs))
                }));
                let _ = send.send(r.unwrap_or(Err(())));
            });
        let mut b = Builder::new(data, 0, Watch::sharing(shared));
        b.poll = Some(poll);
        if spawned.is_ok() {
            b.split = Some(Split {
                at,
                tail,
                abandon: abandon.clone(),
            });
        }
        let r = read(b, root);
        abandon.store(true, Relaxed); // the scope waits for the other thread: let it stop
        r
    })
}

/// Reads the document with `b` (at its start); `root` names it in messages.
fn read(mut b: Builder<'_>, root: &str) -> Result<Value, Error> {
    let result = b
        .jiter
        .peek()
        .map_err(|e| b.syntax(e))
        .and_then(|peek| b.value(peek, 0))
        .and_then(|v| b.jiter.finish().map(|()| v).map_err(|e| b.syntax(e)));
    result.map_err(|p| {
        let mut path = root.to_string();
        for seg in p.path.iter().rev() {
            match seg {
                Seg::Key(k) if is_keyword_text(k) => {
                    path.push('.');
                    path.push_str(k);
                }
                Seg::Key(k) => path.push_str(&format!("[{k:?}]")),
                Seg::Index(i) => path.push_str(&format!("[{i}]")),
            }
        }
        Error::new(
            p.kind,
            format!("invalid JSON data at {path}: {}", p.message),
        )
    })
}

/// Parses JSON text into a core value.
pub fn from_json(text: &str) -> Result<Value, Error> {
    from_json_at(text, "data")
}
