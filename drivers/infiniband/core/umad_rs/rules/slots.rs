// SPDX-License-Identifier: GPL-2.0

//! A file's agent table: `IB_UMAD_MAX_AGENTS` numbered slots, the lowest
//! free one taken first, as ib_umad hands out agent ids.
//!
//! Plain `core` Rust, unit-tested on the host.

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

    /// The lowest free id, if any.
    pub(crate) fn free_id(&self) -> Option<u32> {
        let id = self.used.trailing_ones();
        (id < MAX_AGENTS).then_some(id)
    }

    /// Puts `value` at `id`, which `free_id` gave. Were `id` taken, its
    /// value would be dropped; were it past the slots, `value` would.
    pub(crate) fn put(&mut self, id: u32, value: A) {
        debug_assert!(!self.holds(id));
        drop(self.take(id));
        if let Some(slot) = slot(id) {
            self.slots[slot].write(value);
            // INVARIANT: the slot was just initialised.
            self.used |= 1 << id;
        }
    }

    /// The value at `id`; `None` for an empty or out-of-range id.
    pub(crate) fn get(&self, id: u32) -> Option<&A> {
        let slot = slot(id).filter(|_| self.holds(id))?;
        // SAFETY: the slot holds a value: its bit is set (invariant).
        Some(unsafe { self.slots[slot].assume_init_ref() })
    }

    /// Takes the value at `id` out; `None` for an empty or out-of-range id.
    pub(crate) fn take(&mut self, id: u32) -> Option<A> {
        let slot = slot(id).filter(|_| self.holds(id))?;
        // INVARIANT: the value leaves the slot below.
        self.used &= !(1 << id);
        // SAFETY: the slot held a value (its bit was set), which is read
        // out once: the bit is clear now.
        Some(unsafe { self.slots[slot].assume_init_read() })
    }

    /// Takes the value of the lowest id out, if there is one.
    pub(crate) fn take_first(&mut self) -> Option<A> {
        self.take(self.used.trailing_zeros())
    }

    /// The id of the first value that `matches`; only the slots that hold
    /// one are looked at.
    pub(crate) fn position(&self, mut matches: impl FnMut(&A) -> bool) -> Option<u32> {
        let mut left = self.used;
        while left != 0 {
            let id = left.trailing_zeros();
            left &= left - 1;
            if self.get(id).is_some_and(&mut matches) {
                return Some(id);
            }
        }
        None
    }
}

impl<A> Drop for Slots<A> {
    fn drop(&mut self) {
        while self.take_first().is_some() {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_the_lowest_free_and_run_out_at_32() {
        let mut s = Slots::new();
        for id in 0..MAX_AGENTS {
            assert_eq!(s.free_id(), Some(id));
            s.put(id, id * 10);
        }
        assert_eq!(s.free_id(), None);
        assert_eq!(s.take(5), Some(50));
        assert_eq!(s.take(5), None);
        assert_eq!(s.free_id(), Some(5));
        assert_eq!(s.get(6), Some(&60));
        assert_eq!(s.get(32), None);
        assert_eq!(s.take(u32::MAX), None);
        assert_eq!(s.position(|&v| v == 70), Some(7));
        assert_eq!(s.position(|&v| v == 50), None);
        assert_eq!(s.take_first(), Some(0));
        assert_eq!(s.take_first(), Some(10));
        assert_eq!(s.get(0), None);
        assert_eq!(s.free_id(), Some(0));
    }

    /// Counts its drops in the cell it borrows.
    struct Counted<'a>(&'a core::cell::Cell<u32>);

    impl Drop for Counted<'_> {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }

    #[test]
    fn only_the_values_held_are_dropped_once() {
        let drops = core::cell::Cell::new(0);
        let mut s = Slots::new();
        for id in [0, 7, 31] {
            s.put(id, Counted(&drops));
        }
        drop(s.take(7));
        assert_eq!(drops.get(), 1);
        drop(s);
        assert_eq!(drops.get(), 3);
    }

    #[test]
    fn take_first_goes_in_id_order_and_ends() {
        let mut s = Slots::new();
        s.put(31, 'z');
        s.put(3, 'c');
        assert_eq!(s.position(|&v| v == 'z'), Some(31));
        assert_eq!(s.take_first(), Some('c'));
        assert_eq!(s.take_first(), Some('z'));
        assert_eq!(s.take_first(), None);
        assert_eq!(s.free_id(), Some(0));
        assert_eq!(s.position(|_| true), None);
    }
}
