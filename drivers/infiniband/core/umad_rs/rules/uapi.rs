// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The userspace ABI of `/dev/infiniband/umadN`: `include/uapi/rdma/ib_user_mad.h`.
//!
//! Plain `core` Rust, built into the module, with unit tests. The
//! module also asserts these layouts against the kernel's own header (see
//! `bindings.rs`), so a mistake here cannot reach userspace.

use core::mem::size_of;

/// `IB_USER_MAD_ABI_VERSION`: libibumad treats anything above 5 as "new
/// header, no ENABLE_PKEY", so it must stay 5.
pub(crate) const ABI_VERSION: u32 = 5;

/// A big-endian 16-bit field as it sits in a header.
#[repr(transparent)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(crate) struct Be16(u16);

/// A big-endian 32-bit field as it sits in a header.
#[repr(transparent)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(crate) struct Be32(u32);

impl Be16 {
    pub(crate) const fn new(value: u16) -> Self {
        Self(value.to_be())
    }

    pub(crate) const fn get(self) -> u16 {
        u16::from_be(self.0)
    }
}

impl Be32 {
    pub(crate) const fn new(value: u32) -> Self {
        Self(value.to_be())
    }

    pub(crate) const fn get(self) -> u32 {
        u32::from_be(self.0)
    }
}

/// `struct ib_user_mad_hdr`: what precedes every MAD read or written.
///
/// The old 56-byte layout (`ib_user_mad_hdr_old`) is this struct without
/// `pkey_index` and `reserved`; a file uses one or the other ([`HdrLayout`]).
#[repr(C)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(crate) struct UserMadHdr {
    pub(crate) id: u32,
    pub(crate) status: u32,
    pub(crate) timeout_ms: u32,
    pub(crate) retries: u32,
    pub(crate) length: u32,
    pub(crate) qpn: Be32,
    pub(crate) qkey: Be32,
    pub(crate) lid: Be16,
    pub(crate) sl: u8,
    pub(crate) path_bits: u8,
    pub(crate) grh_present: u8,
    pub(crate) gid_index: u8,
    pub(crate) hop_limit: u8,
    pub(crate) traffic_class: u8,
    pub(crate) gid: [u8; 16],
    pub(crate) flow_label: Be32,
    pub(crate) pkey_index: u16,
    pub(crate) reserved: [u8; 6],
}

// No padding: every byte of the header is a field's, so its bytes can be
// viewed and set directly.
const _: () = assert!(size_of::<UserMadHdr>() == 5 * 4 + 2 * 4 + 2 + 6 + 16 + 4 + 2 + 6);

impl UserMadHdr {
    /// The header as userspace sees it (its fields are in memory as they
    /// are in the ABI); a file with the old layout uses the first 56 bytes.
    pub(crate) fn as_bytes(&self) -> &[u8; size_of::<UserMadHdr>()] {
        // SAFETY: `repr(C)` without padding (asserted above): all 64 bytes
        // are initialised, and `u8` has no alignment to meet.
        unsafe { &*core::ptr::from_ref(self).cast() }
    }

    /// The header's bytes, to be written as userspace's are read: any
    /// bytes make a valid header.
    pub(crate) fn as_bytes_mut(&mut self) -> &mut [u8; size_of::<UserMadHdr>()] {
        // SAFETY: as in `as_bytes`; and every field is an integer or an
        // array of them, so any bytes written make a valid header.
        unsafe { &mut *core::ptr::from_mut(self).cast() }
    }
}

/// Which header a file reads and writes: fixed by its first ioctl.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum HdrLayout {
    /// `ib_user_mad_hdr_old`: REGISTER_AGENT as first use, or no ioctl at all.
    Old,
    /// `ib_user_mad_hdr`: REGISTER_AGENT2 or ENABLE_PKEY as first use.
    New,
}

impl HdrLayout {
    /// Bytes of header before the MAD in a read or write.
    pub(crate) const fn size(self) -> usize {
        match self {
            HdrLayout::Old => core::mem::offset_of!(UserMadHdr, pkey_index),
            HdrLayout::New => size_of::<UserMadHdr>(),
        }
    }
}

/// `struct ib_user_mad_reg_req`: REGISTER_AGENT's argument.
#[repr(C)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(crate) struct RegReq {
    pub(crate) id: u32,
    pub(crate) method_mask: [u32; 4],
    pub(crate) qpn: u8,
    pub(crate) mgmt_class: u8,
    pub(crate) mgmt_class_version: u8,
    pub(crate) oui: [u8; 3],
    pub(crate) rmpp_version: u8,
}

/// `struct ib_user_mad_reg_req2`: REGISTER_AGENT2's argument.
#[repr(C)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(crate) struct RegReq2 {
    pub(crate) id: u32,
    pub(crate) qpn: u32,
    pub(crate) mgmt_class: u8,
    pub(crate) mgmt_class_version: u8,
    pub(crate) res: u16,
    pub(crate) flags: u32,
    pub(crate) method_mask: [u64; 2],
    pub(crate) oui: u32,
    pub(crate) rmpp_version: u8,
    pub(crate) reserved: [u8; 3],
}

/// `IB_USER_MAD_USER_RMPP`: userspace does RMPP itself.
pub(crate) const USER_RMPP: u32 = 1;
/// `IB_USER_MAD_REG_FLAGS_CAP`: every flag REGISTER_AGENT2 knows.
pub(crate) const REG_FLAGS_CAP: u32 = USER_RMPP;

/// `IB_IOCTL_MAGIC`: the umad ioctls' type; `file/ioctl.rs` makes their
/// numbers with the kernel's `_IOC` (`kernel::ioctl`).
pub(crate) const IOCTL_MAGIC: u32 = 0x1b;

/// Reads a native-endian `u32` at `at`.
fn ne_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// Reads a native-endian `u64` at `at`.
fn ne_u64(bytes: &[u8], at: usize) -> u64 {
    let mut b = [0; 8];
    b.copy_from_slice(&bytes[at..at + 8]);
    u64::from_ne_bytes(b)
}

/// A method mask as the MAD layer takes it: bit `m` set for method `m`,
/// in `IB_MGMT_MAX_METHODS` (128) bits.
pub(crate) type MethodMask = [u64; 2];

impl RegReq {
    /// REGISTER_AGENT's argument, from the bytes userspace passed.
    pub(crate) fn from_bytes(b: &[u8; size_of::<RegReq>()]) -> Self {
        Self {
            id: ne_u32(b, 0),
            method_mask: [ne_u32(b, 4), ne_u32(b, 8), ne_u32(b, 12), ne_u32(b, 16)],
            qpn: b[20],
            mgmt_class: b[21],
            mgmt_class_version: b[22],
            oui: [b[23], b[24], b[25]],
            rmpp_version: b[26],
        }
    }

    /// The method mask: a 64-bit process passed two `unsigned long`s, a
    /// 32-bit one (`compat`) four `u32`s, low half first.
    pub(crate) fn method_mask(&self, compat: bool) -> MethodMask {
        let w = &self.method_mask;
        // An `unsigned long` in memory has its low half first where the
        // machine is little-endian. In shifts, not bytes: the compiler
        // assembled the bytes one at a time (55 instructions a register).
        let low_first = compat || cfg!(target_endian = "little");
        let join = |first: u32, second: u32| {
            let (low, high) = if low_first {
                (first, second)
            } else {
                (second, first)
            };
            u64::from(low) | (u64::from(high) << 32)
        };
        [join(w[0], w[1]), join(w[2], w[3])]
    }
}

impl RegReq2 {
    /// REGISTER_AGENT2's argument, from the bytes userspace passed.
    pub(crate) fn from_bytes(b: &[u8; size_of::<RegReq2>()]) -> Self {
        Self {
            id: ne_u32(b, 0),
            qpn: ne_u32(b, 4),
            mgmt_class: b[8],
            mgmt_class_version: b[9],
            res: u16::from_ne_bytes([b[10], b[11]]),
            flags: ne_u32(b, 12),
            method_mask: [ne_u64(b, 16), ne_u64(b, 24)],
            oui: ne_u32(b, 32),
            rmpp_version: b[36],
            reserved: [b[37], b[38], b[39]],
        }
    }

    /// The OUI as the MAD layer takes it, most significant byte first;
    /// `None` if it does not fit in 24 bits (ib_umad: EINVAL).
    pub(crate) fn oui_bytes(&self) -> Option<[u8; 3]> {
        let [top, b0, b1, b2] = self.oui.to_be_bytes();
        (top == 0).then_some([b0, b1, b2])
    }

    /// The flags it has that REGISTER_AGENT2 does not know.
    pub(crate) fn unknown_flags(&self) -> u32 {
        self.flags & !REG_FLAGS_CAP
    }
}

// Run by `cargo test` on the host and, where the kernel crate has
// `#[kunit_tests]`, by KUnit when the module loads.
#[cfg(any(test, umad_rs_kunit_tests))]
#[cfg_attr(not(test), kernel::macros::kunit_tests(ib_umad_rs_uapi))]
mod tests {
    use super::*;
    use core::mem::{align_of, offset_of};

    #[test]
    fn header_bytes_round_trip_at_the_uapi_offsets() {
        let hdr = UserMadHdr {
            id: 3,
            status: 110,
            timeout_ms: 100,
            retries: 2,
            length: 88,
            qpn: Be32::new(1),
            qkey: Be32::new(0x8001_0000),
            lid: Be16::new(0x1234),
            sl: 5,
            path_bits: 6,
            grh_present: 1,
            gid_index: 7,
            hop_limit: 64,
            traffic_class: 9,
            gid: [0xfe; 16],
            flow_label: Be32::new(0xabcde),
            pkey_index: 0x0102,
            reserved: [0; 6],
        };
        let b = *hdr.as_bytes();
        let mut read = UserMadHdr::default();
        *read.as_bytes_mut() = b;
        assert_eq!(read, hdr);
        assert_eq!(&b[0..4], &3u32.to_ne_bytes());
        assert_eq!(&b[4..8], &110u32.to_ne_bytes());
        assert_eq!(&b[16..20], &88u32.to_ne_bytes());
        assert_eq!(&b[20..24], &[0, 0, 0, 1]);
        assert_eq!(&b[28..30], &[0x12, 0x34]);
        assert_eq!(b[30], 5);
        assert_eq!(&b[52..56], &[0, 0x0a, 0xbc, 0xde]);
        assert_eq!(&b[56..58], &0x0102u16.to_ne_bytes());
        // The old layout's 56 bytes leave `pkey_index` at zero.
        let mut old = UserMadHdr::default();
        old.as_bytes_mut()[..HdrLayout::Old.size()].copy_from_slice(&b[..HdrLayout::Old.size()]);
        assert_eq!(
            old,
            UserMadHdr {
                pkey_index: 0,
                ..hdr
            }
        );
    }

    #[test]
    fn header_layout_matches_the_uapi_header() {
        assert_eq!(size_of::<UserMadHdr>(), 64);
        assert_eq!(HdrLayout::Old.size(), 56);
        assert_eq!(HdrLayout::New.size(), 64);
        let offsets = [
            (offset_of!(UserMadHdr, id), 0),
            (offset_of!(UserMadHdr, status), 4),
            (offset_of!(UserMadHdr, timeout_ms), 8),
            (offset_of!(UserMadHdr, retries), 12),
            (offset_of!(UserMadHdr, length), 16),
            (offset_of!(UserMadHdr, qpn), 20),
            (offset_of!(UserMadHdr, qkey), 24),
            (offset_of!(UserMadHdr, lid), 28),
            (offset_of!(UserMadHdr, sl), 30),
            (offset_of!(UserMadHdr, path_bits), 31),
            (offset_of!(UserMadHdr, grh_present), 32),
            (offset_of!(UserMadHdr, gid_index), 33),
            (offset_of!(UserMadHdr, hop_limit), 34),
            (offset_of!(UserMadHdr, traffic_class), 35),
            (offset_of!(UserMadHdr, gid), 36),
            (offset_of!(UserMadHdr, flow_label), 52),
            (offset_of!(UserMadHdr, pkey_index), 56),
            (offset_of!(UserMadHdr, reserved), 58),
        ];
        for (got, want) in offsets {
            assert_eq!(got, want);
        }
    }

    #[test]
    fn reg_req_layouts_match_the_uapi_header() {
        assert_eq!((size_of::<RegReq>(), align_of::<RegReq>()), (28, 4));
        assert_eq!(offset_of!(RegReq, method_mask), 4);
        assert_eq!(offset_of!(RegReq, qpn), 20);
        assert_eq!(offset_of!(RegReq, mgmt_class), 21);
        assert_eq!(offset_of!(RegReq, mgmt_class_version), 22);
        assert_eq!(offset_of!(RegReq, oui), 23);
        assert_eq!(offset_of!(RegReq, rmpp_version), 26);

        assert_eq!((size_of::<RegReq2>(), align_of::<RegReq2>()), (40, 8));
        assert_eq!(offset_of!(RegReq2, qpn), 4);
        assert_eq!(offset_of!(RegReq2, mgmt_class), 8);
        assert_eq!(offset_of!(RegReq2, mgmt_class_version), 9);
        assert_eq!(offset_of!(RegReq2, res), 10);
        assert_eq!(offset_of!(RegReq2, flags), 12);
        assert_eq!(offset_of!(RegReq2, method_mask), 16);
        assert_eq!(offset_of!(RegReq2, oui), 32);
        assert_eq!(offset_of!(RegReq2, rmpp_version), 36);
        assert_eq!(offset_of!(RegReq2, reserved), 37);
    }

    #[test]
    fn big_endian_fields_are_stored_in_network_order() {
        let hdr = UserMadHdr {
            qpn: Be32::new(1),
            lid: Be16::new(0x1234),
            ..Default::default()
        };
        // SAFETY: `UserMadHdr` is `repr(C)` plain data without padding.
        let bytes: [u8; 64] = unsafe { core::mem::transmute(hdr) };
        assert_eq!(&bytes[20..24], &[0, 0, 0, 1]);
        assert_eq!(&bytes[28..30], &[0x12, 0x34]);
        assert_eq!(hdr.qpn.get(), 1);
        assert_eq!(hdr.lid.get(), 0x1234);
    }

    /// The bytes of a `struct ib_user_mad_reg_req` as a 64-bit process
    /// lays it out, with methods 1 (GET) and 65 set.
    fn reg_req_bytes() -> [u8; 28] {
        let mut b = [0u8; 28];
        b[0..4].copy_from_slice(&7u32.to_ne_bytes());
        b[4..12].copy_from_slice(&(1u64 << 1).to_ne_bytes());
        b[12..20].copy_from_slice(&(1u64 << 1).to_ne_bytes());
        b[20] = 1; // qpn
        b[21] = 0x09; // class
        b[22] = 1; // class version
        b[23..26].copy_from_slice(&[0x00, 0x14, 0x05]);
        b[26] = 1; // rmpp version
        b
    }

    #[test]
    fn reg_req_parses_every_field() {
        let r = RegReq::from_bytes(&reg_req_bytes());
        assert_eq!(r.id, 7);
        assert_eq!((r.qpn, r.mgmt_class, r.mgmt_class_version), (1, 0x09, 1));
        assert_eq!(r.oui, [0x00, 0x14, 0x05]);
        assert_eq!(r.rmpp_version, 1);
        assert_eq!(r.method_mask(false), [1 << 1, 1 << 1]);
    }

    #[test]
    fn compat_method_mask_joins_u32_pairs_low_first() {
        let mut b = [0u8; 28];
        // A 32-bit process: methods 1 and 33 in the first pair, 127 in the last.
        b[4..8].copy_from_slice(&(1u32 << 1).to_ne_bytes());
        b[8..12].copy_from_slice(&(1u32 << 1).to_ne_bytes());
        b[16..20].copy_from_slice(&(1u32 << 31).to_ne_bytes());
        let r = RegReq::from_bytes(&b);
        assert_eq!(r.method_mask(true), [(1 << 1) | (1 << 33), 1 << 63]);
    }

    #[test]
    fn native_method_mask_is_the_longs_as_passed() {
        let mut b = [0u8; 28];
        b[4..12].copy_from_slice(&0x8000_0000_0000_0002u64.to_ne_bytes());
        b[12..20].copy_from_slice(&0x0000_0001_0000_0000u64.to_ne_bytes());
        let r = RegReq::from_bytes(&b);
        assert_eq!(
            r.method_mask(false),
            [0x8000_0000_0000_0002, 0x0000_0001_0000_0000]
        );
    }

    #[test]
    fn reg_req2_parses_every_field() {
        let mut b = [0u8; 40];
        b[0..4].copy_from_slice(&3u32.to_ne_bytes());
        b[4..8].copy_from_slice(&1u32.to_ne_bytes());
        b[8] = 0x30;
        b[9] = 1;
        b[12..16].copy_from_slice(&USER_RMPP.to_ne_bytes());
        b[16..24].copy_from_slice(&(1u64 << 1).to_ne_bytes());
        b[24..32].copy_from_slice(&(1u64 << 3).to_ne_bytes());
        b[32..36].copy_from_slice(&0x0014_0500u32.to_ne_bytes());
        b[36] = 1;
        let r = RegReq2::from_bytes(&b);
        assert_eq!(
            (r.id, r.qpn, r.mgmt_class, r.mgmt_class_version),
            (3, 1, 0x30, 1)
        );
        assert_eq!(r.flags, USER_RMPP);
        assert_eq!(r.method_mask, [1 << 1, 1 << 3]);
        assert_eq!(r.rmpp_version, 1);
        assert_eq!(r.oui_bytes(), Some([0x14, 0x05, 0x00]));
        assert_eq!(r.unknown_flags(), 0);
    }

    #[test]
    fn reg_req2_rejects_a_wide_oui_and_unknown_flags() {
        let r = RegReq2 {
            oui: 0x0100_0000,
            flags: 0x6,
            ..Default::default()
        };
        assert_eq!(r.oui_bytes(), None);
        assert_eq!(r.unknown_flags(), 0x6);
        let r = RegReq2 {
            oui: 0x00ff_ffff,
            ..Default::default()
        };
        assert_eq!(r.oui_bytes(), Some([0xff, 0xff, 0xff]));
    }

    #[test]
    fn abi_version_is_five() {
        assert_eq!(ABI_VERSION, 5);
    }
}
