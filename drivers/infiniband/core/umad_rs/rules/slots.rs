// SPDX-License-Identifier: GPL-2.0

//! A file's agent table: `IB_UMAD_MAX_AGENTS` numbered slots, the lowest
//! free one taken first, as ib_umad hands out agent ids.
//!
//! Plain `core` Rust, unit-tested on the host.

/// `IB_UMAD_MAX_AGENTS`: agents one file can have; ids are below it.
pub(crate) const MAX_AGENTS: u32 = 32;

/// Up to [`MAX_AGENTS`] values, each under the id it was put at.
///
/// # Invariants
///
/// Bit `i` of `used` is set exactly when `slots[i]` holds a value.
pub(crate) struct Slots<A> {
    slots: [Option<A>; 32],
    used: u32,
}

// The slots are 32: one for each bit of a `u32`.
const _: () = assert!(MAX_AGENTS == 32);

/// The slot of an id; ids past `usize` are past the slots too.
fn slot(id: u32) -> usize {
    usize::try_from(id).unwrap_or(usize::MAX)
}

/// The bit of `used` that says whether `id`'s slot holds a value; none
/// for an id past the slots.
fn bit(id: u32) -> u32 {
    1u32.checked_shl(id).unwrap_or(0)
}

impl<A> Slots<A> {
    pub(crate) const fn new() -> Self {
        Self {
            slots: [const { None }; 32],
            used: 0,
        }
    }

    /// The lowest free id, if any.
    pub(crate) fn free_id(&self) -> Option<u32> {
        let id = self.used.trailing_ones();
        (id < MAX_AGENTS).then_some(id)
    }

    /// Puts `value` at `id`, which `free_id` gave.
    pub(crate) fn put(&mut self, id: u32, value: A) {
        debug_assert!(self.used & bit(id) == 0);
        self.slots[slot(id)] = Some(value);
        self.used |= bit(id);
    }

    /// The value at `id`; `None` for an empty or out-of-range id.
    pub(crate) fn get(&self, id: u32) -> Option<&A> {
        self.slots.get(slot(id))?.as_ref()
    }

    /// Takes the value at `id` out; `None` for an empty or out-of-range id.
    pub(crate) fn take(&mut self, id: u32) -> Option<A> {
        self.used &= !bit(id);
        self.slots.get_mut(slot(id))?.take()
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
            if self.slots[slot(id)].as_ref().is_some_and(&mut matches) {
                return Some(id);
            }
        }
        None
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
