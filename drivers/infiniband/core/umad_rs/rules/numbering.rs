// SPDX-License-Identifier: GPL-2.0

//! Device numbers of the umadN and issmN nodes, exactly as `ib_umad` lays
//! them out, and the lowest-free index allocator that hands out N.
//!
//! Plain `core` Rust, unit-tested on the host.

/// The umad major: the first 64 ports' nodes live at 231:0-127.
pub(crate) const UMAD_MAJOR: u32 = 231;
/// Ports whose nodes sit in the fixed region.
pub(crate) const FIXED_MINORS: u32 = 64;
/// `IB_UMAD_MAX_PORTS` (`RDMA_MAX_PORTS`): how many devnums there are.
pub(crate) const MAX_PORTS: u32 = 8192;
/// Minors in the dynamic region for each of umad and issm.
pub(crate) const DYNAMIC_MINORS: u32 = MAX_PORTS - FIXED_MINORS;

/// A device number: its major and its minor. The glue makes the kernel's
/// `dev_t` of it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct DevNumber {
    pub(crate) major: u32,
    pub(crate) minor: u32,
}

impl DevNumber {
    pub(crate) const fn new(major: u32, minor: u32) -> Self {
        Self { major, minor }
    }

    /// The number `by` minors on, under the same major.
    const fn offset(self, by: u32) -> Self {
        Self::new(self.major, self.minor + by)
    }
}

/// Where the two regions start: the fixed one at 231:0, the dynamic one
/// wherever `alloc_chrdev_region` put it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Regions {
    /// First of the `DYNAMIC_MINORS * 2` dynamic numbers.
    pub(crate) dynamic: DevNumber,
}

impl Regions {
    /// The fixed region: umad at 231:0-63, issm at 231:64-127.
    pub(crate) const FIXED: DevNumber = DevNumber::new(UMAD_MAJOR, 0);
    /// How many numbers the fixed region spans.
    pub(crate) const FIXED_COUNT: u32 = FIXED_MINORS * 2;
    /// How many numbers the dynamic region spans.
    pub(crate) const DYNAMIC_COUNT: u32 = DYNAMIC_MINORS * 2;

    /// umadN's number.
    pub(crate) fn umad(&self, devnum: u32) -> DevNumber {
        if devnum < FIXED_MINORS {
            Self::FIXED.offset(devnum)
        } else {
            self.dynamic.offset(devnum - FIXED_MINORS)
        }
    }

    /// issmN's number.
    pub(crate) fn issm(&self, devnum: u32) -> DevNumber {
        if devnum < FIXED_MINORS {
            Self::FIXED.offset(FIXED_MINORS + devnum)
        } else {
            self.dynamic.offset(DYNAMIC_MINORS + devnum - FIXED_MINORS)
        }
    }
}

/// Hands out the lowest free index below `64 * WORDS`, like an IDA with
/// `ida_alloc_max`, for devnums (8192); agent ids come from `Slots`.
pub(crate) struct IndexAllocator<const WORDS: usize> {
    used: [u64; WORDS],
}

impl<const WORDS: usize> IndexAllocator<WORDS> {
    pub(crate) const fn new() -> Self {
        Self { used: [0; WORDS] }
    }

    /// The lowest free index not above `max`, now taken; `None` if none.
    pub(crate) fn alloc(&mut self, max: u32) -> Option<u32> {
        for (i, word) in self.used.iter_mut().enumerate() {
            let bit = (!*word).trailing_zeros();
            if bit == 64 {
                continue;
            }
            let index = u32::try_from(i).ok()? * 64 + bit;
            if index > max {
                return None;
            }
            *word |= 1 << bit;
            return Some(index);
        }
        None
    }

    /// Gives `index` back. Freeing a free index is a bug, and ignored.
    pub(crate) fn free(&mut self, index: u32) {
        if let Some(word) = self.used.get_mut(index as usize / 64) {
            *word &= !(1 << (index % 64));
        }
    }
}

/// The devnum allocator: one number for umadN and issmN of a port.
pub(crate) type DevnumAllocator = IndexAllocator<{ MAX_PORTS as usize / 64 }>;

// Run by `cargo test` on the host and, where the kernel crate has
// `#[kunit_tests]`, by KUnit when the module loads.
#[cfg(any(test, umad_rs_kunit_tests))]
#[cfg_attr(not(test), kernel::macros::kunit_tests(ib_umad_rs_numbering))]
mod tests {
    use super::*;

    #[test]
    fn fixed_region_numbers() {
        let r = Regions {
            dynamic: DevNumber::new(240, 0),
        };
        assert_eq!(r.umad(0), DevNumber::new(231, 0));
        assert_eq!(r.umad(63), DevNumber::new(231, 63));
        assert_eq!(r.issm(0), DevNumber::new(231, 64));
        assert_eq!(r.issm(63), DevNumber::new(231, 127));
    }

    #[test]
    fn dynamic_region_numbers() {
        let r = Regions {
            dynamic: DevNumber::new(240, 0),
        };
        assert_eq!(r.umad(64), DevNumber::new(240, 0));
        assert_eq!(r.umad(70), DevNumber::new(240, 6));
        assert_eq!(r.issm(64), DevNumber::new(240, 8128));
        assert_eq!(r.issm(MAX_PORTS - 1), DevNumber::new(240, 2 * 8128 - 1));
        assert_eq!(Regions::DYNAMIC_COUNT, 2 * 8128);
    }

    #[test]
    fn allocator_gives_the_lowest_free_index() {
        let mut a = IndexAllocator::<2>::new();
        assert_eq!(a.alloc(127), Some(0));
        assert_eq!(a.alloc(127), Some(1));
        assert_eq!(a.alloc(127), Some(2));
        a.free(1);
        assert_eq!(a.alloc(127), Some(1));
        assert_eq!(a.alloc(127), Some(3));
    }

    #[test]
    fn allocator_crosses_words_and_runs_out() {
        let mut a = IndexAllocator::<2>::new();
        for want in 0..128 {
            assert_eq!(a.alloc(127), Some(want));
        }
        assert_eq!(a.alloc(127), None);
        a.free(100);
        assert_eq!(a.alloc(127), Some(100));
    }

    #[test]
    fn allocator_respects_max() {
        let mut a = IndexAllocator::<1>::new();
        for want in 0..32 {
            assert_eq!(a.alloc(31), Some(want));
        }
        assert_eq!(a.alloc(31), None);
        a.free(7);
        assert_eq!(a.alloc(31), Some(7));
    }

    #[test]
    fn devnum_allocator_spans_all_ports() {
        let mut a = DevnumAllocator::new();
        for want in 0..MAX_PORTS {
            assert_eq!(a.alloc(MAX_PORTS - 1), Some(want));
        }
        assert_eq!(a.alloc(MAX_PORTS - 1), None);
    }
}
