// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! A file's agent table: `IB_UMAD_MAX_AGENTS` numbered slots, the lowest
//! free one taken first, as ib_umad hands out agent ids.
//!
//! Plain `core` Rust, with unit tests.

use core::mem::MaybeUninit;

/// `IB_UMAD_MAX_AGENTS`: agents one file can have; ids are below it.
pub(crate) const MAX_AGENTS: u32 = 32;

/// Up to [`MAX_AGENTS`] values, each under the id it was put at.
///
/// The slots are not `Option`s: `used` says which hold a value, so that
/// finding, putting, taking and dropping them looks at no slot that
/// holds none (a file's close dropped 32 `Option`s one by one).
///
/// # Invariants
///
/// Bit `i` of `used` is set exactly when `slots[i]` is initialised.
pub(crate) struct Slots<A> {
    slots: [MaybeUninit<A>; 32],
    used: u32,
}

// The slots are 32: one for each bit of a `u32`.
const _: () = assert!(MAX_AGENTS == 32);

/// The slot of an id, if the id is below [`MAX_AGENTS`].
fn slot(id: u32) -> Option<usize> {
    (id < MAX_AGENTS).then(|| usize::try_from(id).unwrap_or(usize::MAX))
}

/// An id that userspace chose, checked against [`MAX_AGENTS`] and bounded
/// under speculation too: the only key [`Slots::get`] and [`Slots::take`]
/// take, so that no lookup with a user's id can skip the hardening.
///
/// # Invariants
///
/// The id is below [`MAX_AGENTS`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct SlotId(u32);

impl SlotId {
    /// `id` if it is below [`MAX_AGENTS`]. `nospec(id, MAX_AGENTS)` is the
    /// kernel's `array_index_nospec`: the id the slots are indexed with is
    /// the one it returns, which speculation cannot take past the bound.
    #[inline]
    pub(crate) fn new(id: u32, nospec: impl FnOnce(usize, usize) -> usize) -> Option<Self> {
        if id >= MAX_AGENTS {
            return None;
        }
        // CAST: a `u32` in a `usize`, which is at least as wide on any
        // target with Rust support.
        let (id, bound) = (id as usize, MAX_AGENTS as usize);
        // INVARIANT: checked here; `array_index_nospec` returns an index
        // below the bound, and anything else is a test's bug.
        u32::try_from(nospec(id, bound))
            .ok()
            .filter(|&id| id < MAX_AGENTS)
            .map(Self)
    }
}

impl<A> Slots<A> {
    pub(crate) const fn new() -> Self {
        // INVARIANT: no bit of `used` is set.
        Self {
            slots: [const { MaybeUninit::uninit() }; 32],
            used: 0,
        }
    }

    /// Whether `id`'s slot holds a value.
    fn holds(&self, id: u32) -> bool {
        id < MAX_AGENTS && self.used & (1 << id) != 0
    }

    /// Whether no slot holds a value.
    pub(crate) fn is_empty(&self) -> bool {
        self.used == 0
    }

    /// The lowest free slot, if any, for [`Vacant::put`].
    pub(crate) fn vacant(&mut self) -> Option<Vacant<'_, A>> {
        let id = self.used.trailing_ones();
        // INVARIANT: `id` is below `MAX_AGENTS`, and its bit is clear.
        (id < MAX_AGENTS).then_some(Vacant { slots: self, id })
    }

    /// The value at `id`; `None` for an empty slot.
    pub(crate) fn get(&self, id: SlotId) -> Option<&A> {
        self.get_at(id.0)
    }

    /// Takes the value at `id` out; `None` for an empty slot.
    pub(crate) fn take(&mut self, id: SlotId) -> Option<A> {
        self.take_at(id.0)
    }

    /// The value at `id`, an id of ours; `None` for an empty or
    /// out-of-range id.
    fn get_at(&self, id: u32) -> Option<&A> {
        let slot = slot(id).filter(|_| self.holds(id))?;
        // SAFETY: the slot holds a value: its bit is set (invariant).
        Some(unsafe { self.slots[slot].assume_init_ref() })
    }

    /// Takes the value at `id`, an id of ours, out; `None` for an empty or
    /// out-of-range id.
    fn take_at(&mut self, id: u32) -> Option<A> {
        let slot = slot(id).filter(|_| self.holds(id))?;
        // INVARIANT: the value leaves the slot below.
        self.used &= !(1 << id);
        // SAFETY: the slot held a value (its bit was set), which is read
        // out once: the bit is clear now.
        Some(unsafe { self.slots[slot].assume_init_read() })
    }

    /// Takes the value of the lowest id out, if there is one.
    pub(crate) fn take_first(&mut self) -> Option<A> {
        self.take_at(self.used.trailing_zeros())
    }

    /// The id of the first value that `matches`; only the slots that hold
    /// one are looked at.
    pub(crate) fn position(&self, mut matches: impl FnMut(&A) -> bool) -> Option<u32> {
        let mut left = self.used;
        while left != 0 {
            let id = left.trailing_zeros();
            left &= left - 1;
            if self.get_at(id).is_some_and(&mut matches) {
                return Some(id);
            }
        }
        None
    }
}

/// The lowest free slot of a [`Slots`], the id it gives.
///
/// # Invariants
///
/// `id` is below [`MAX_AGENTS`], and its bit in `slots.used` is clear.
pub(crate) struct Vacant<'a, A> {
    slots: &'a mut Slots<A>,
    id: u32,
}

impl<A> Vacant<'_, A> {
    pub(crate) fn id(&self) -> u32 {
        self.id
    }

    /// Fills the slot with `value`.
    pub(crate) fn put(self, value: A) {
        // The slot exists and is free (invariant): nothing is dropped.
        if let Some(cell) = slot(self.id).and_then(|i| self.slots.slots.get_mut(i)) {
            cell.write(value);
            // INVARIANT: the slot was just initialised.
            self.slots.used |= 1 << self.id;
        }
    }
}

impl<A> Drop for Slots<A> {
    fn drop(&mut self) {
        while self.take_first().is_some() {}
    }
}

// Run by `cargo test` on the host and, where the kernel crate has
// `#[kunit_tests]`, by KUnit when the module loads.
#[cfg(any(test, umad_rs_kunit_tests))]
#[cfg_attr(not(test), kernel::macros::kunit_tests(ib_umad_rs_slots))]
mod tests {
    use super::*;

    /// `id` as a key: a test has no speculation to bound.
    fn key(id: u32) -> SlotId {
        SlotId::new(id, |id, _| id).unwrap()
    }

    /// Puts `value` in the lowest free slot; its id.
    fn put<A>(s: &mut Slots<A>, value: A) -> Option<u32> {
        let slot = s.vacant()?;
        let id = slot.id();
        slot.put(value);
        Some(id)
    }

    #[test]
    fn ids_are_the_lowest_free_and_run_out_at_32() {
        let mut s = Slots::new();
        for id in 0..MAX_AGENTS {
            assert_eq!(put(&mut s, id * 10), Some(id));
        }
        assert!(s.vacant().is_none());
        assert_eq!(s.take(key(5)), Some(50));
        assert_eq!(s.take(key(5)), None);
        assert_eq!(s.vacant().map(|v| v.id()), Some(5));
        assert_eq!(s.get(key(6)), Some(&60));
        assert_eq!(s.position(|&v| v == 70), Some(7));
        assert_eq!(s.position(|&v| v == 50), None);
        assert_eq!(s.take_first(), Some(0));
        assert_eq!(s.take_first(), Some(10));
        assert_eq!(s.get(key(0)), None);
        assert_eq!(put(&mut s, 1), Some(0));
        assert_eq!(put(&mut s, 2), Some(1));
        assert_eq!(put(&mut s, 3), Some(5));
        assert!(s.vacant().is_none());
    }

    /// Counts its drops in the cell it borrows.
    struct Counted<'a>(&'a core::cell::Cell<u32>);

    impl Drop for Counted<'_> {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }

    #[test]
    fn a_key_is_an_id_below_the_bound_as_the_hardening_returned_it() {
        assert_eq!(SlotId::new(31, |id, _| id), Some(SlotId(31)));
        assert_eq!(SlotId::new(32, |id, _| id), None);
        assert_eq!(SlotId::new(u32::MAX, |id, _| id), None);
        // The slot looked up is the one `array_index_nospec` gave.
        assert_eq!(SlotId::new(7, |_, _| 0), Some(SlotId(0)));
        assert_eq!(SlotId::new(7, |_, bound| bound), None);
        let mut s = Slots::new();
        assert!(s.is_empty());
        assert_eq!(put(&mut s, 'a'), Some(0));
        assert!(!s.is_empty());
        assert_eq!(s.get(SlotId::new(9, |_, _| 0).unwrap()), Some(&'a'));
    }

    #[test]
    fn only_the_values_held_are_dropped_once() {
        let drops = core::cell::Cell::new(0);
        let mut s = Slots::new();
        for _ in 0..3 {
            put(&mut s, Counted(&drops));
        }
        drop(s.take(key(1)));
        assert_eq!(drops.get(), 1);
        // A vacant slot left unfilled holds nothing to drop.
        assert_eq!(s.vacant().map(|v| v.id()), Some(1));
        drop(s);
        assert_eq!(drops.get(), 3);
    }

    #[test]
    fn take_first_goes_in_id_order_and_ends() {
        let mut s = Slots::new();
        for id in 0..MAX_AGENTS {
            put(&mut s, id);
        }
        for id in (0..MAX_AGENTS).filter(|&id| id != 3 && id != 31) {
            assert_eq!(s.take(key(id)), Some(id));
        }
        assert_eq!(s.position(|&v| v == 31), Some(31));
        assert_eq!(s.take_first(), Some(3));
        assert_eq!(s.take_first(), Some(31));
        assert_eq!(s.take_first(), None);
        assert_eq!(s.vacant().map(|v| v.id()), Some(0));
        assert_eq!(s.position(|_| true), None);
    }
}
