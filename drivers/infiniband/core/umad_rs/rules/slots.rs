// SPDX-License-Identifier: GPL-2.0

//! A file's agent table: `IB_UMAD_MAX_AGENTS` numbered slots, the lowest
//! free one taken first, as ib_umad hands out agent ids.
//!
//! Plain `core` Rust, unit-tested on the host.

/// `IB_UMAD_MAX_AGENTS`: agents one file can have.
pub(crate) const MAX_AGENTS: usize = 32;

/// Up to [`MAX_AGENTS`] values, each under the id it was put at.
pub(crate) struct Slots<A> {
    slots: [Option<A>; MAX_AGENTS],
}

impl<A> Slots<A> {
    pub(crate) const fn new() -> Self {
        Self { slots: [const { None }; MAX_AGENTS] }
    }

    /// The lowest free id, if any.
    pub(crate) fn free_id(&self) -> Option<u32> {
        self.slots.iter().position(Option::is_none).map(|id| id as u32)
    }

    /// Puts `value` at `id`, which `free_id` gave.
    pub(crate) fn put(&mut self, id: u32, value: A) {
        debug_assert!(self.slots[id as usize].is_none());
        self.slots[id as usize] = Some(value);
    }

    /// The value at `id`; `None` for an empty or out-of-range id.
    pub(crate) fn get(&self, id: u32) -> Option<&A> {
        self.slots.get(id as usize)?.as_ref()
    }

    /// Takes the value at `id` out; `None` for an empty or out-of-range id.
    pub(crate) fn take(&mut self, id: u32) -> Option<A> {
        self.slots.get_mut(id as usize)?.take()
    }

    /// The id of the first value that `matches`.
    pub(crate) fn position(&self, mut matches: impl FnMut(&A) -> bool) -> Option<u32> {
        self.slots
            .iter()
            .position(|slot| slot.as_ref().is_some_and(&mut matches))
            .map(|id| id as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_the_lowest_free_and_run_out_at_32() {
        let mut s = Slots::new();
        for id in 0..MAX_AGENTS as u32 {
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
    }
}
