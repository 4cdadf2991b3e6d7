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

#[cfg(test)]
mod tests {
    //! The cases the unsafe code relies on: sizes from the header, each value and the header
    //! dropped exactly once by the last handle on any thread, uniqueness for `parts_mut`,
    //! empty runs, zero-sized and over-aligned values. Run under Miri by `scripts/miri.sh`.

    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    /// A header of `n` values that counts its own drops.
    struct Len(usize, Option<Arc<AtomicUsize>>);

    // SAFETY: `values` is the fixed field `0`, at most MAX_VALUES in these tests.
    unsafe impl Header for Len {
        fn values(&self) -> usize {
            self.0
        }
    }

    impl Drop for Len {
        fn drop(&mut self) {
            if let Some(c) = &self.1 {
                c.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    /// A value that counts its drops.
    #[derive(Default)]
    struct Counted(Option<Arc<AtomicUsize>>, u64);

    impl Drop for Counted {
        fn drop(&mut self) {
            if let Some(c) = &self.0 {
                c.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    fn counted(n: usize, drops: &Arc<AtomicUsize>) -> impl Iterator<Item = Counted> + '_ {
        (0..n).map(move |i| Counted(Some(drops.clone()), i as u64))
    }

    #[test]
    fn values_read_back_in_order() {
        let t: Thin<Len, u32> = Thin::new(Len(4, None), [7, 8, 9, 10].into_iter());
        assert_eq!(t.values(), &[7, 8, 9, 10]);
        assert_eq!(t.header().values(), 4);
        assert_eq!(t.strong_count(), 1);
    }

    #[test]
    fn fewer_values_are_padded_with_the_default() {
        let t: Thin<Len, u32> = Thin::new(Len(5, None), [1, 2].into_iter());
        assert_eq!(t.values(), &[1, 2, 0, 0, 0]);
    }

    #[test]
    fn an_empty_run() {
        let t: Thin<Len, String> = Thin::new(Len(0, None), std::iter::empty());
        assert!(t.values().is_empty());
        let u = t.clone();
        assert_eq!(u.strong_count(), 2);
    }

    #[test]
    fn clones_share_one_allocation_and_count() {
        let t: Thin<Len, u8> = Thin::new(Len(3, None), [1, 2, 3].into_iter());
        let u = t.clone();
        let v = u.clone();
        assert_eq!(t.ptr(), v.ptr());
        assert_eq!(t.strong_count(), 3);
        drop(u);
        assert_eq!(v.strong_count(), 2);
        drop(t);
        assert_eq!(v.strong_count(), 1);
        assert_eq!(v.values(), &[1, 2, 3]);
    }

    #[test]
    fn the_last_handle_drops_each_value_and_the_header_once() {
        let values = Arc::new(AtomicUsize::new(0));
        let headers = Arc::new(AtomicUsize::new(0));
        let t = Thin::new(Len(6, Some(headers.clone())), counted(6, &values));
        let u = t.clone();
        drop(t);
        assert_eq!(values.load(Ordering::SeqCst), 0);
        assert_eq!(headers.load(Ordering::SeqCst), 0);
        drop(u);
        assert_eq!(values.load(Ordering::SeqCst), 6);
        assert_eq!(headers.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn padding_values_are_dropped_too() {
        let values = Arc::new(AtomicUsize::new(0));
        let t = Thin::new(Len(4, None), counted(1, &values));
        drop(t);
        // one counted value was given; the three defaults count nothing, but all four drop
        assert_eq!(values.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn parts_mut_only_when_unique() {
        let mut t: Thin<Len, u32> = Thin::new(Len(2, None), [1, 2].into_iter());
        {
            let (h, vs) = t.parts_mut().expect("the only handle");
            assert_eq!(h.values(), 2);
            vs[0] = 40;
            vs[1] += 1;
        }
        assert_eq!(t.values(), &[40, 3]);
        let u = t.clone();
        assert!(t.parts_mut().is_none());
        drop(u);
        assert!(t.parts_mut().is_some());
    }

    #[test]
    fn handles_dropped_on_many_threads_free_once() {
        let values = Arc::new(AtomicUsize::new(0));
        let headers = Arc::new(AtomicUsize::new(0));
        let t = Thin::new(Len(3, Some(headers.clone())), counted(3, &values));
        let handles: Vec<_> = (0..8).map(|_| t.clone()).collect();
        drop(t);
        let threads: Vec<_> = handles
            .into_iter()
            .map(|h| {
                std::thread::spawn(move || {
                    let again = h.clone();
                    assert_eq!(again.values()[2].1, 2);
                    drop(h);
                    drop(again);
                })
            })
            .collect();
        for th in threads {
            th.join().unwrap();
        }
        assert_eq!(values.load(Ordering::SeqCst), 3);
        assert_eq!(headers.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn zero_sized_values() {
        let t: Thin<Len, ()> = Thin::new(Len(1000, None), std::iter::repeat_n((), 1000));
        assert_eq!(t.values().len(), 1000);
        drop(t.clone());
    }

    #[repr(align(64))]
    #[derive(Default, Clone, Copy, PartialEq, Debug)]
    struct Wide(u8);

    #[test]
    fn over_aligned_values_are_aligned() {
        let t: Thin<Len, Wide> = Thin::new(Len(3, None), [Wide(1), Wide(2)].into_iter());
        assert_eq!(t.values(), &[Wide(1), Wide(2), Wide(0)]);
        for v in t.values() {
            assert_eq!(std::ptr::from_ref(v) as usize % 64, 0);
        }
    }

    #[test]
    fn the_most_values_one_allocation_holds() {
        let t: Thin<Len, u8> = Thin::new(Len(MAX_VALUES, None), std::iter::repeat_n(1, MAX_VALUES));
        assert_eq!(t.values().len(), MAX_VALUES);
        assert!(t.values().iter().all(|&b| b == 1));
    }
}
