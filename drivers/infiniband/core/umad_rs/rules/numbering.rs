// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Device numbers of the umadN and issmN nodes, exactly as `ib_umad` lays
//! them out.
//!
//! Plain `core` Rust, with unit tests.

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
}
