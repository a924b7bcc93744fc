// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! What umad reads in a MAD and decides from it: the common header (IBA
//! 13.4.3), which classes carry RMPP and where their data starts, what
//! makes a response, the TID rewrite, the duplicate rule for outstanding
//! sends, and how a write or a read is cut into the MAD layer's buffers.
//!
//! Plain `core` Rust, built into the module, with unit tests.
//! The numbers are `include/rdma/ib_mad.h`'s; the rules are ib_umad's
//! (`drivers/infiniband/core/user_mad.c`) and the MAD layer's (`mad.c`).

use crate::rules::uapi::UserMadHdr;

/// `IB_MGMT_MAD_HDR`: the common MAD header.
pub(crate) const MAD_HDR_SIZE: usize = 24;
/// `IB_MGMT_RMPP_HDR`: the common header and the RMPP header.
pub(crate) const RMPP_HDR_END: usize = 36;
/// `IB_MGMT_RMPP_FLAG_ACTIVE`.
const RMPP_FLAG_ACTIVE: u8 = 1;

/// `ib_get_mad_data_offset`: where a class's data starts in a MAD (the
/// common header plus the class's own header).
pub(crate) const fn data_offset(mgmt_class: u8) -> usize {
    match mgmt_class {
        0x03 => 56,               // subnet administration: IB_MGMT_SA_HDR
        0x06 | 0x10 | 0x12 => 64, // device management, device admin, BIS
        0x30..=0x4f => 40,        // vendor range 2: IB_MGMT_VENDOR_HDR
        _ => MAD_HDR_SIZE,
    }
}

/// `ib_is_mad_class_rmpp`: whether a class's MADs can carry RMPP.
pub(crate) const fn is_rmpp_class(mgmt_class: u8) -> bool {
    matches!(mgmt_class, 0x03 | 0x06 | 0x10 | 0x12 | 0x30..=0x4f)
}

/// A MAD's common header (`struct ib_mad_hdr`), as umad reads it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(transparent)]
pub(crate) struct MadHdr(pub(crate) [u8; MAD_HDR_SIZE]);

impl MadHdr {
    pub(crate) fn base_version(&self) -> u8 {
        self.0[0]
    }

    pub(crate) fn mgmt_class(&self) -> u8 {
        self.0[1]
    }

    fn method(&self) -> u8 {
        self.0[3]
    }

    pub(crate) fn tid(&self) -> u64 {
        let mut tid = [0; 8];
        tid.copy_from_slice(&self.0[8..16]);
        u64::from_be_bytes(tid)
    }

    fn attr_mod(&self) -> u32 {
        u32::from_be_bytes([self.0[20], self.0[21], self.0[22], self.0[23]])
    }

    /// `ib_response_mad`: a response method, a trap repress, or a baseboard
    /// management MAD with the response bit in its attribute modifier.
    pub(crate) fn is_response(&self) -> bool {
        const METHOD_RESP: u8 = 0x80;
        const METHOD_TRAP_REPRESS: u8 = 0x07;
        const CLASS_BM: u8 = 0x05;
        self.method() & METHOD_RESP != 0
            || self.method() == METHOD_TRAP_REPRESS
            || (self.mgmt_class() == CLASS_BM && self.attr_mod() & 1 != 0)
    }

    /// The TID a request goes out with: the agent's `hi_tid` in the upper
    /// half, so that responses find their way back to it.
    pub(crate) fn rewrite_tid(&mut self, hi_tid: u32) {
        // The TID is big-endian: its upper half is its first four bytes.
        self.0[8..12].copy_from_slice(&hi_tid.to_be_bytes());
    }
}

/// The start of a MAD: its common header and the RMPP header slot
/// (`struct ib_rmpp_mad_hdr`), as much as umad looks at.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct MadStart(pub(crate) [u8; RMPP_HDR_END]);

impl MadStart {
    pub(crate) fn hdr(&self) -> MadHdr {
        MadHdr(core::array::from_fn(|i| self.0[i]))
    }

    /// The common header, where it is: changed in place, and copied
    /// whole from here.
    pub(crate) fn hdr_mut(&mut self) -> &mut MadHdr {
        let (hdr, _) = self.0.split_at_mut(MAD_HDR_SIZE);
        let hdr = hdr.as_mut_ptr().cast::<MadHdr>();
        // SAFETY: `hdr` points to the array's first `MAD_HDR_SIZE` bytes,
        // borrowed mutably for as long as `self` is; `MadHdr` is a
        // transparent array of that many bytes, and any bytes are valid.
        unsafe { &mut *hdr }
    }

    /// The RMPP header's ACTIVE flag: meaningful only for an RMPP class.
    fn rmpp_active(&self) -> bool {
        self.0[26] & RMPP_FLAG_ACTIVE != 0
    }

    /// Whether the MAD is an RMPP transfer that userspace runs itself
    /// (an active RMPP MAD of an agent without kernel RMPP): such sends
    /// are not checked for duplicates.
    pub(crate) fn is_user_rmpp(&self, kernel_rmpp: bool) -> bool {
        !kernel_rmpp && is_rmpp_class(self.hdr().mgmt_class()) && self.rmpp_active()
    }
}

/// How a write becomes a send buffer (`ib_umad_write`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct SendLayout {
    /// Header bytes of the MAD: common, RMPP and class headers.
    pub(crate) hdr_len: usize,
    /// Bytes after the header.
    pub(crate) data_len: usize,
    /// Whether the MAD layer runs RMPP for this send (and builds the RMPP
    /// header itself).
    pub(crate) rmpp_active: bool,
    /// Where the copy from userspace starts: past the RMPP header when the
    /// kernel builds it, else right after the common header.
    pub(crate) copy_offset: usize,
}

impl SendLayout {
    /// The layout of a `count`-byte write with a `hdr_size`-byte umad
    /// header and a MAD starting `mad`, for an agent with (`kernel_rmpp`)
    /// or without kernel RMPP. `None` when `count` is too short for the
    /// class's header (EINVAL: CVE-2026-23243 was this going negative).
    pub(crate) fn new(
        count: usize,
        hdr_size: usize,
        mad: &MadStart,
        kernel_rmpp: bool,
    ) -> Option<Self> {
        let class = mad.hdr().mgmt_class();
        let hdr_len = data_offset(class);
        let (copy_offset, rmpp_active) = if is_rmpp_class(class) && kernel_rmpp {
            (RMPP_HDR_END, mad.rmpp_active())
        } else {
            (MAD_HDR_SIZE, false)
        };
        let data_len = count.checked_sub(hdr_size + hdr_len)?;
        Some(Self {
            hdr_len,
            data_len,
            rmpp_active,
            copy_offset,
        })
    }

    /// For a kernel-RMPP send: the lengths of its data segments, in order
    /// from segment 1, for segments of `seg_size` bytes. Their data follows
    /// the headers in the user's MAD, from `hdr_len` on.
    pub(crate) fn rmpp_segments(&self, seg_size: usize) -> SegmentLengths {
        SegmentLengths::new(self.data_len, seg_size)
    }
}

/// Where an outstanding send went, for the duplicate rule: a LID, or a GID
/// when it had a GRH. A LID never equals a GID (ib_umad's
/// `same_destination`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Destination {
    Lid(u16),
    Gid([u8; 16]),
}

impl Destination {
    pub(crate) fn of(hdr: &UserMadHdr) -> Self {
        if hdr.grh_present != 0 {
            Destination::Gid(hdr.gid)
        } else {
            Destination::Lid(hdr.lid.get())
        }
    }
}

/// What the duplicate rule needs of an outstanding send besides its TID
/// and class.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct SendKind {
    pub(crate) response: bool,
    pub(crate) destination: Destination,
}

impl SendKind {
    /// The kind of a send of `mad` behind the umad header `hdr`.
    pub(crate) fn of(hdr: &UserMadHdr, mad: &MadHdr) -> Self {
        Self {
            response: mad.is_response(),
            destination: Destination::of(hdr),
        }
    }

    /// ib_umad's `is_duplicate` for two sends with the same TID and class:
    /// two requests always clash (stricter than the spec, on purpose), two
    /// responses clash when they go to the same place, a request and a
    /// response never do.
    pub(crate) fn clashes_with(&self, outstanding: &SendKind) -> bool {
        match (self.response, outstanding.response) {
            (false, false) => true,
            (true, true) => self.destination == outstanding.destination,
            _ => false,
        }
    }
}

/// Which of `1 << bits` buckets a TID hashes to (Fibonacci hashing: the
/// low word userspace counts up and the agent's high word both spread).
pub(crate) const fn tid_bucket(tid: u64, bits: u32) -> usize {
    // CAST: the hash has `bits` bits, fewer than a `usize` has.
    #[allow(clippy::cast_possible_truncation)]
    let bucket = (tid.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - bits)) as usize;
    bucket
}

/// How a received MAD of `mad_len` bytes, in segments of `seg_size` bytes,
/// is read into `count` bytes after a `hdr_size`-byte umad header
/// (`copy_recv_mad`): the first segment whole, then every further
/// segment's data without its headers.
pub(crate) struct RecvLayout {
    /// Bytes of the first segment to copy.
    pub(crate) first: usize,
    /// Whether the whole message fits. If not (an RMPP message), the umad
    /// header, which has the length, and the first segment are copied and
    /// the read fails with ENOSPC: userspace sizes its next read from it.
    pub(crate) fits: bool,
    mad_len: usize,
    seg_size: usize,
}

impl RecvLayout {
    /// `None` if not even the first segment fits (EINVAL).
    pub(crate) fn new(
        count: usize,
        hdr_size: usize,
        mad_len: usize,
        seg_size: usize,
    ) -> Option<Self> {
        let first = mad_len.min(seg_size);
        if count < hdr_size + first {
            return None;
        }
        let fits = first == mad_len || count >= hdr_size + mad_len;
        Some(Self {
            first,
            fits,
            mad_len,
            seg_size,
        })
    }

    /// Whether there are segments after the first.
    pub(crate) fn has_more_segments(&self) -> bool {
        self.first < self.mad_len
    }

    /// The lengths to copy from the second segment on, in order, each from
    /// `offset` (the segments' headers) in its segment.
    pub(crate) fn more_segments(&self, offset: usize) -> SegmentLengths {
        SegmentLengths::new(
            self.mad_len - self.first,
            self.seg_size.saturating_sub(offset),
        )
    }
}

/// The lengths of `total` bytes cut in segments of `per` bytes (at least
/// one), in order: [`RecvLayout::more_segments`] and
/// [`SendLayout::rmpp_segments`]. Its own type, small enough that a read
/// or write inlines the whole loop (a closure over a range did not inline).
pub(crate) struct SegmentLengths {
    left: usize,
    per: usize,
}

impl SegmentLengths {
    fn new(total: usize, per: usize) -> Self {
        Self {
            left: total,
            per: per.max(1),
        }
    }
}

impl Iterator for SegmentLengths {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if self.left == 0 {
            return None;
        }
        let len = self.per.min(self.left);
        self.left -= len;
        Some(len)
    }
}

// Run by `cargo test` on the host and, where the kernel crate has
// `#[kunit_tests]`, by KUnit when the module loads.
#[cfg(any(test, umad_rs_kunit_tests))]
#[cfg_attr(not(test), kernel::macros::kunit_tests(ib_umad_rs_mad))]
mod tests {
    use super::*;
    use crate::rules::uapi::{Be16, HdrLayout};

    fn start(class: u8, method: u8, set: &[(usize, u8)]) -> MadStart {
        let mut m = [0; RMPP_HDR_END];
        m[0] = 1;
        m[1] = class;
        m[2] = 1;
        m[3] = method;
        for &(at, value) in set {
            m[at] = value;
        }
        MadStart(m)
    }

    fn mad(class: u8, method: u8) -> MadStart {
        start(class, method, &[])
    }

    #[test]
    fn data_offsets_and_rmpp_classes_follow_the_mad_layer() {
        for class in 0..=255u8 {
            let (offset, rmpp) = match class {
                0x03 => (56, true),
                0x06 | 0x10 | 0x12 => (64, true),
                0x30..=0x4f => (40, true),
                _ => (24, false),
            };
            assert_eq!(data_offset(class), offset);
            assert_eq!(is_rmpp_class(class), rmpp);
        }
    }

    #[test]
    fn responses_are_recognised() {
        assert!(!mad(0x04, 0x01).hdr().is_response());
        assert!(mad(0x04, 0x81).hdr().is_response());
        assert!(mad(0x03, 0x07).hdr().is_response()); // trap repress
        assert!(!mad(0x05, 0x01).hdr().is_response());
        assert!(start(0x05, 0x01, &[(23, 1)]).hdr().is_response());
        assert!(!start(0x04, 0x01, &[(23, 1)]).hdr().is_response());
    }

    #[test]
    fn the_tid_keeps_its_low_word_and_takes_the_agents_high_word() {
        let tid = 0x1122_3344_5566_7788u64.to_be_bytes();
        let mut start = start(
            0x04,
            0x01,
            &core::array::from_fn::<_, 8, _>(|i| (8 + i, tid[i])),
        );
        let m = start.hdr_mut();
        assert_eq!(m.tid(), 0x1122_3344_5566_7788);
        m.rewrite_tid(0xdead_beef);
        assert_eq!(m.tid(), 0xdead_beef_5566_7788);
        assert_eq!(
            &m.0[8..16],
            &[0xde, 0xad, 0xbe, 0xef, 0x55, 0x66, 0x77, 0x88]
        );
    }

    #[test]
    fn a_write_too_short_for_its_class_header_is_refused() {
        let new = HdrLayout::New.size();
        // SA: 56-byte header; 36 MAD bytes pass the first check only.
        assert_eq!(SendLayout::new(new + 36, new, &mad(0x03, 0x01), true), None);
        assert_eq!(SendLayout::new(new + 55, new, &mad(0x03, 0x01), true), None);
        let sa = SendLayout::new(new + 56, new, &mad(0x03, 0x01), true).unwrap();
        assert_eq!((sa.hdr_len, sa.data_len), (56, 0));
        assert_eq!(
            SendLayout::new(new + 63, new, &mad(0x06, 0x01), false),
            None
        );
        let old = HdrLayout::Old.size();
        let v = SendLayout::new(old + 256, old, &mad(0x30, 0x01), true).unwrap();
        assert_eq!((v.hdr_len, v.data_len, v.copy_offset), (40, 216, 36));
    }

    #[test]
    fn rmpp_flags_count_only_for_rmpp_classes_of_kernel_rmpp_agents() {
        let m = start(0x30, 0x01, &[(26, RMPP_FLAG_ACTIVE)]);
        let k = SendLayout::new(64 + 1000, 64, &m, true).unwrap();
        assert!(k.rmpp_active);
        assert_eq!(k.copy_offset, RMPP_HDR_END);
        let u = SendLayout::new(64 + 256, 64, &m, false).unwrap();
        assert!(!u.rmpp_active);
        assert_eq!(u.copy_offset, MAD_HDR_SIZE);
        assert!(m.is_user_rmpp(false));
        assert!(!m.is_user_rmpp(true));
        // Class 0x04 has no RMPP header: bytes 26/27 are data.
        let perf = start(0x04, 0x01, &[(26, 1), (27, 1)]);
        let p = SendLayout::new(64 + 256, 64, &perf, true).unwrap();
        assert!(!p.rmpp_active);
        assert_eq!((p.hdr_len, p.data_len), (24, 232));
        assert!(!perf.is_user_rmpp(false));
    }

    #[test]
    fn rmpp_segments_cover_the_data_once() {
        let m = mad(0x30, 0x01);
        let l = SendLayout::new(64 + 40 + 500, 64, &m, true).unwrap();
        assert!(l.rmpp_segments(216).eq([216, 216, 68]));
        assert_eq!(l.hdr_len + l.rmpp_segments(216).sum::<usize>(), 40 + 500);
        let l = SendLayout::new(64 + 40 + 432, 64, &m, true).unwrap();
        assert_eq!(l.rmpp_segments(216).count(), 2);
        let l = SendLayout::new(64 + 40, 64, &m, true).unwrap();
        assert_eq!(l.rmpp_segments(216).count(), 0);
    }

    #[test]
    fn duplicates_follow_ib_umad() {
        let to = |lid| Destination::Lid(lid);
        let req = |d| SendKind {
            response: false,
            destination: d,
        };
        let resp = |d| SendKind {
            response: true,
            destination: d,
        };
        assert!(req(to(1)).clashes_with(&req(to(2))));
        assert!(!req(to(1)).clashes_with(&resp(to(1))));
        assert!(!resp(to(1)).clashes_with(&req(to(1))));
        assert!(resp(to(1)).clashes_with(&resp(to(1))));
        assert!(!resp(to(1)).clashes_with(&resp(to(2))));
        let gid = Destination::Gid([7; 16]);
        assert!(resp(gid).clashes_with(&resp(gid)));
        assert!(!resp(gid).clashes_with(&resp(Destination::Gid([8; 16]))));
        assert!(!resp(gid).clashes_with(&resp(to(0))));
        let mut hdr = UserMadHdr {
            lid: Be16::new(9),
            ..Default::default()
        };
        assert_eq!(Destination::of(&hdr), to(9));
        hdr.grh_present = 1;
        hdr.gid = [7; 16];
        assert_eq!(Destination::of(&hdr), gid);
        assert_eq!(SendKind::of(&hdr, &mad(0x03, 0x81).hdr()), resp(gid));
    }

    #[test]
    fn tids_spread_over_the_send_buckets() {
        const BITS: u32 = 6;
        // Counted up from any start, with any agent's high word, TIDs
        // fill every bucket about evenly.
        for hi in [0u64, 1, 0xdead_beef, 0xffff_ffff] {
            let mut count = [0u32; 1 << BITS];
            for low in 1000..1000 + 64 * 16 {
                count[tid_bucket(hi << 32 | low, BITS)] += 1;
            }
            assert!(count.iter().all(|&n| (8..=24).contains(&n)));
        }
    }

    #[test]
    fn received_mads_are_read_whole_or_refused_as_ib_umad_does() {
        let hdr = 64;
        // One segment: the buffer must hold it all.
        assert!(RecvLayout::new(hdr + 99, hdr, 100, 256).is_none());
        let one = RecvLayout::new(hdr + 100, hdr, 100, 256).unwrap();
        assert!(one.fits);
        assert!(!one.has_more_segments());
        assert_eq!((one.first, one.more_segments(40).count()), (100, 0));
        // RMPP: the first 256 bytes, then 216 and 100 data bytes.
        let len = 256 + 216 + 100;
        assert!(RecvLayout::new(hdr + 255, hdr, len, 256).is_none());
        let short = RecvLayout::new(hdr + 256, hdr, len, 256).unwrap();
        assert_eq!((short.first, short.fits), (256, false));
        assert!(!RecvLayout::new(hdr + len - 1, hdr, len, 256).unwrap().fits);
        let all = RecvLayout::new(hdr + len, hdr, len, 256).unwrap();
        assert!(all.fits);
        assert!(all.has_more_segments());
        assert!(all.more_segments(40).eq([216, 100]));
    }
}
