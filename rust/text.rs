//! `Str`: the text of strings, keywords and names, in one word.
//!
//! A text of up to seven bytes (on 64-bit targets) is held in the word itself; a longer one is a
//! shared `ArcStr` whose pointer is the word. Most texts in records are short (statuses, codes,
//! tiers, field names): held in place they cost no allocation, no interner lookup and no
//! reference-count traffic (a clone is a copy, a drop is nothing, and two threads reading the
//! same keyword never write to one shared line), and two of them compare as one integer.
//!
//! The form is canonical: every text that fits is held in place, so two equal short texts have
//! equal words, and an interned long text has one pointer. [`Str::identity`] is therefore a
//! key for "the same interned text" wherever a pointer used to be.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::ptr::NonNull;

use arcstr::ArcStr;

const WORD: usize = std::mem::size_of::<usize>();
/// The longest text held in place: the word less its tag byte.
pub const INLINE_MAX: usize = WORD - 1;
/// The tag byte is the word's least significant byte: its low bit set marks a text in place
/// (an `ArcStr` pointer is 8-aligned, so its low bit is clear) and its other bits are the length.
#[cfg(target_endian = "little")]
const TAG_AT: usize = 0;
#[cfg(target_endian = "big")]
const TAG_AT: usize = WORD - 1;
#[cfg(target_endian = "little")]
const TEXT_AT: usize = 1;
#[cfg(target_endian = "big")]
const TEXT_AT: usize = 0;

/// A pointer-sized text handle (see the module docs). `NonNull` keeps the heap form's
/// provenance and gives `Option<Str>` its niche; the in-place form is never dereferenced as a
/// pointer, only read as bytes.
#[repr(transparent)]
pub struct Str(NonNull<()>);

// SAFETY: the heap form is an `ArcStr`, which is `Send` and `Sync`; the in-place form is plain
// bytes.
unsafe impl Send for Str {}
// SAFETY: as above.
unsafe impl Sync for Str {}

impl Str {
    #[inline(always)]
    fn bits(&self) -> usize {
        self.0.as_ptr() as usize
    }

    #[inline(always)]
    fn is_inline(&self) -> bool {
        self.bits() & 1 == 1
    }

    /// Holds `s` in place. The caller checks `s.len() <= INLINE_MAX`.
    #[inline(always)]
    fn inline(s: &[u8]) -> Str {
        let mut b = [0u8; WORD];
        b[TAG_AT] = ((s.len() as u8) << 1) | 1;
        b[TEXT_AT..TEXT_AT + s.len()].copy_from_slice(s);
        let bits = usize::from_ne_bytes(b);
        // SAFETY: the tag bit is set, so the word is not zero. The text is data, not an
        // address: a pointer without provenance holds it (never dereferenced as a pointer).
        Str(unsafe {
            NonNull::new_unchecked(std::ptr::null_mut::<u8>().wrapping_add(bits).cast::<()>())
        })
    }

    #[inline]
    fn heap(a: ArcStr) -> Str {
        let p = ArcStr::into_raw(a);
        debug_assert!(
            p.as_ptr() as usize & 1 == 0,
            "ArcStr allocations are 8-aligned"
        );
        Str(p)
    }

    /// The heap form's `ArcStr`, borrowed. The caller checks `!self.is_inline()`.
    #[inline(always)]
    fn arc(&self) -> &ArcStr {
        // SAFETY: `ArcStr` is a transparent `NonNull` and the heap form's word is the pointer
        // `ArcStr::into_raw` gave, still owned by this handle.
        unsafe { &*(self as *const Str).cast::<ArcStr>() }
    }

    #[inline(always)]
    pub fn as_str(&self) -> &str {
        if self.is_inline() {
            let len = (self.bits() & 0xff) >> 1;
            // SAFETY: the in-place form holds `len <= INLINE_MAX` bytes of one UTF-8 text at
            // `TEXT_AT`, inside this handle, which the returned borrow keeps alive.
            unsafe {
                let p = (self as *const Str).cast::<u8>().add(TEXT_AT);
                std::str::from_utf8_unchecked(std::slice::from_raw_parts(p, len))
            }
        } else {
            self.arc().as_str()
        }
    }

    /// Whether two handles hold the same text by identity: equal short texts always are; long
    /// texts only when they share one allocation (interned).
    #[inline(always)]
    pub fn ptr_eq(a: &Str, b: &Str) -> bool {
        a.0 == b.0
    }

    /// A key for identity (see [`Str::ptr_eq`]): valid while this handle, or one equal by
    /// identity, is alive.
    #[inline(always)]
    pub fn identity(&self) -> usize {
        self.bits()
    }

    /// Whether the text is held in place (no allocation).
    #[inline]
    pub fn is_inline_text(&self) -> bool {
        self.is_inline()
    }
}

impl From<&str> for Str {
    #[inline]
    fn from(s: &str) -> Str {
        if s.len() <= INLINE_MAX {
            Str::inline(s.as_bytes())
        } else {
            Str::heap(ArcStr::from(s))
        }
    }
}

impl From<String> for Str {
    #[inline]
    fn from(s: String) -> Str {
        Str::from(s.as_str())
    }
}

impl From<&String> for Str {
    #[inline]
    fn from(s: &String) -> Str {
        Str::from(s.as_str())
    }
}

impl From<Str> for String {
    fn from(s: Str) -> String {
        s.as_str().to_owned()
    }
}

impl Default for Str {
    #[inline]
    fn default() -> Str {
        Str::inline(b"")
    }
}

impl Clone for Str {
    #[inline(always)]
    fn clone(&self) -> Str {
        if self.is_inline() {
            Str(self.0)
        } else {
            Str::heap(self.arc().clone())
        }
    }
}

impl Drop for Str {
    #[inline(always)]
    fn drop(&mut self) {
        if !self.is_inline() {
            // SAFETY: the heap form owns one count of the `ArcStr` `into_raw` gave.
            drop(unsafe { ArcStr::from_raw(self.0) });
        }
    }
}

impl Deref for Str {
    type Target = str;
    #[inline(always)]
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Str {
    #[inline]
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Str {
    #[inline]
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for Str {
    #[inline(always)]
    fn eq(&self, other: &Str) -> bool {
        // canonical form: a short text differs from any other word; only two long texts at
        // different addresses need their bytes compared
        self.0 == other.0 || ((self.bits() | other.bits()) & 1 == 0 && self.arc() == other.arc())
    }
}
impl Eq for Str {}

impl PartialEq<str> for Str {
    #[inline]
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Str {
    #[inline]
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialOrd for Str {
    #[inline]
    fn partial_cmp(&self, other: &Str) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Str {
    #[inline]
    fn cmp(&self, other: &Str) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl Hash for Str {
    // as the text hashes, so a table of `Str` can be searched by `&str` (`Borrow<str>`)
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl fmt::Display for Str {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

impl fmt::Debug for Str {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}
