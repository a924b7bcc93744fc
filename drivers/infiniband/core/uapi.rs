// SPDX-License-Identifier: GPL-2.0

//! The userspace ABI of `/dev/infiniband/umadN`: `include/uapi/rdma/ib_user_mad.h`.
//!
//! Plain `core` Rust, built into the module and unit-tested on the host. The
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

/// `_IOC()` of `include/uapi/asm-generic/ioctl.h` (x86 uses the generic one).
const fn ioc(dir: u32, nr: u32, size: usize) -> u32 {
    const TYPE: u32 = 0x1b; // IB_IOCTL_MAGIC
    (dir << 30) | ((size as u32) << 16) | (TYPE << 8) | nr
}
const IOC_WRITE: u32 = 1;
const IOC_READ: u32 = 2;

/// `IB_USER_MAD_REGISTER_AGENT`: `_IOWR(0x1b, 1, struct ib_user_mad_reg_req)`.
pub(crate) const REGISTER_AGENT: u32 = ioc(IOC_READ | IOC_WRITE, 1, size_of::<RegReq>());
/// `IB_USER_MAD_UNREGISTER_AGENT`: `_IOW(0x1b, 2, __u32)`.
pub(crate) const UNREGISTER_AGENT: u32 = ioc(IOC_WRITE, 2, size_of::<u32>());
/// `IB_USER_MAD_ENABLE_PKEY`: `_IO(0x1b, 3)`.
pub(crate) const ENABLE_PKEY: u32 = ioc(0, 3, 0);
/// `IB_USER_MAD_REGISTER_AGENT2`: `_IOWR(0x1b, 4, struct ib_user_mad_reg_req2)`.
pub(crate) const REGISTER_AGENT2: u32 = ioc(IOC_READ | IOC_WRITE, 4, size_of::<RegReq2>());

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{align_of, offset_of};

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
    fn ioctl_numbers_are_the_c_drivers() {
        assert_eq!(REGISTER_AGENT, 0xc01c_1b01);
        assert_eq!(UNREGISTER_AGENT, 0x4004_1b02);
        assert_eq!(ENABLE_PKEY, 0x1b03);
        assert_eq!(REGISTER_AGENT2, 0xc028_1b04);
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

    #[test]
    fn abi_version_is_five() {
        assert_eq!(ABI_VERSION, 5);
    }
}
