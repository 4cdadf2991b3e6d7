//! A reference-counted allocation holding a header and a run of values, behind one pointer:
//! `[count | header | values...]`. Unlike `triomphe::ThinArc` (which this replaced) it stores
//! no length: the header says how many values follow ([`Header::values`]). For a record the
//! header is its shape, which knows its length already, so a record of five fields takes 96
//! bytes instead of 104 — and 104 bytes is served from the allocator's 112-byte class: a
//! million nested records hold 16 bytes less each.
//!
//! There are no weak references; the count follows `std::sync::Arc`'s orderings (relaxed
//! increments, a release decrement and an acquire fence before the last owner frees).

use std::alloc::Layout;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicUsize, Ordering};

/// The most values one allocation holds (a record has at most `map::MAX_SHAPED_KEYS`): with
/// it, an allocation's size is a small sum that cannot overflow, so sizing one cannot fail.
pub const MAX_VALUES: usize = u16::MAX as usize;

/// A header that knows how many values follow it.
///
/// # Safety
/// `values()` must be at most [`MAX_VALUES`] and give the same answer for as long as the
/// header is in a [`Thin`], even through the `&mut H` that [`Thin::parts_mut`] hands out: it
/// sizes the allocation and the run of values dropped when the last handle goes.
pub unsafe trait Header {
    fn values(&self) -> usize;
}

#[repr(C)]
struct Inner<H, T> {
    count: AtomicUsize,
    header: H,
    values: [T; 0],
}

pub struct Thin<H: Header, T> {
    ptr: NonNull<Inner<H, T>>,
    owns: PhantomData<Inner<H, T>>,
}

// SAFETY: as for `Arc<(H, [T])>`: shared references hand out `&H` and `&[T]` to any thread,
// and the last owner on any thread drops them.
unsafe impl<H: Header + Send + Sync, T: Send + Sync> Send for Thin<H, T> {}
// SAFETY: as above.
unsafe impl<H: Header + Send + Sync, T: Send + Sync> Sync for Thin<H, T> {}

/// The allocation for `n` values: `Inner`, then the values at its size (a multiple of its
/// alignment, which is at least `T`'s since it holds a `[T; 0]`; never before `Inner::values`,
/// where they are written), rounded up to that alignment.
fn layout<H, T>(n: usize) -> Layout {
    const { assert!(std::mem::size_of::<T>() <= 1 << 32) };
    debug_assert!(n <= MAX_VALUES);
    let inner = Layout::new::<Inner<H, T>>();
    let align = inner.align();
    let size = inner.size() + n * std::mem::size_of::<T>();
    // SAFETY: `align` is a type's alignment (a power of two), and `size` rounded up to it is
    // at most 2^16 * 2^32 bytes plus a header: far below `isize::MAX`.
    unsafe { Layout::from_size_align_unchecked((size + align - 1) & !(align - 1), align) }
}

impl<H: Header, T> Thin<H, T> {
    /// One allocation holding `header` and `header.values()` values taken from `values`
    /// (padded with `T::default()` if it yields fewer; any more are not taken).
    pub fn new(header: H, values: impl Iterator<Item = T>) -> Self
    where
        T: Default,
    {
        let n = header.values();
        debug_assert!(
            values.size_hint().0 <= n,
            "more values than the header has room for"
        );
        let layout = layout::<H, T>(n);
        // SAFETY: the layout is never zero-sized (it holds the count).
        let raw = unsafe { std::alloc::alloc(layout) };
        let Some(ptr) = NonNull::new(raw.cast::<Inner<H, T>>()) else {
            std::alloc::handle_alloc_error(layout);
        };
        // SAFETY: the allocation is fresh and sized for the count, the header and `n` values;
        // each field is written once before the handle exists. A panic in `values` leaks the
        // allocation (never a read of an unwritten value).
        unsafe {
            let p = ptr.as_ptr();
            std::ptr::addr_of_mut!((*p).count).write(AtomicUsize::new(1));
            std::ptr::addr_of_mut!((*p).header).write(header);
            let first = std::ptr::addr_of_mut!((*p).values).cast::<T>();
            let mut values = values.fuse();
            for i in 0..n {
                first.add(i).write(values.next().unwrap_or_default());
            }
        }
        Thin {
            ptr,
            owns: PhantomData,
        }
    }

    #[inline(always)]
    fn inner(&self) -> &Inner<H, T> {
        // SAFETY: the allocation lives while this handle holds a count.
        unsafe { self.ptr.as_ref() }
    }

    #[inline(always)]
    pub fn header(&self) -> &H {
        &self.inner().header
    }

    #[inline(always)]
    fn first(&self) -> *mut T {
        // SAFETY: in bounds of the allocation (just past the header).
        unsafe { std::ptr::addr_of_mut!((*self.ptr.as_ptr()).values).cast::<T>() }
    }

    #[inline(always)]
    pub fn values(&self) -> &[T] {
        // SAFETY: `header.values()` values were written at `first` and live as long as this.
        unsafe { std::slice::from_raw_parts(self.first(), self.header().values()) }
    }

    /// How many handles share the allocation.
    #[inline(always)]
    pub fn strong_count(&self) -> usize {
        self.inner().count.load(Ordering::Acquire)
    }

    /// The allocation's address (for identity and prefetching).
    #[inline(always)]
    pub fn ptr(&self) -> *const u8 {
        self.ptr.as_ptr().cast()
    }

    /// The header and the values, to change in place, when this is the only handle.
    pub fn parts_mut(&mut self) -> Option<(&mut H, &mut [T])> {
        if self.strong_count() != 1 {
            return None;
        }
        let n = self.header().values();
        let p = self.ptr.as_ptr();
        // SAFETY: the only handle, borrowed mutably: no one else reads the header or the
        // values while the borrows live; the two are disjoint parts of the allocation.
        unsafe {
            Some((
                &mut *std::ptr::addr_of_mut!((*p).header),
                std::slice::from_raw_parts_mut(self.first(), n),
            ))
        }
    }
}

impl<H: Header, T> Clone for Thin<H, T> {
    #[inline(always)]
    fn clone(&self) -> Self {
        // as `Arc`: relaxed, since a new handle is made from one that already holds a count
        let old = self.inner().count.fetch_add(1, Ordering::Relaxed);
        if old > isize::MAX as usize {
            // only reachable by leaking handles by the quintillion; `Arc` aborts here too
            std::process::abort();
        }
        Thin {
            ptr: self.ptr,
            owns: PhantomData,
        }
    }
}

impl<H: Header, T> Drop for Thin<H, T> {
    fn drop(&mut self) {
        if self.inner().count.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        fence(Ordering::Acquire);
        // the size before the header goes (it may hold what says how many values there are)
        let n = self.header().values();
        let layout = layout::<H, T>(n);
        let p = self.ptr.as_ptr();
        // SAFETY: the last handle: the values and the header are dropped once each, then the
        // allocation is freed with the layout it was made with.
        unsafe {
            std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(self.first(), n));
            std::ptr::drop_in_place(std::ptr::addr_of_mut!((*p).header));
            std::alloc::dealloc(p.cast(), layout);
        }
    }
}
