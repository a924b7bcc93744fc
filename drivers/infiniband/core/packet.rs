// SPDX-License-Identifier: GPL-2.0

//! What a umad file hands to `read`: received MADs, and reports of requests
//! whose response timed out. A sent MAD's packet exists from `write` on: it
//! rides along with the send as its context, keys the file's duplicate
//! check while outstanding, and becomes the timeout report if there is one,
//! so reporting a timeout allocates nothing.

use crate::{
    ib_mad::{ReceivedMad, SendContext},
    mad::{data_offset, RecvLayout, MAD_HDR_SIZE},
    trace::Event,
    uapi::{HdrLayout, UserMadHdr},
};
use kernel::{
    ffi::c_void,
    list::{ListArc, ListLinks},
    prelude::*,
    sync::UniqueArc,
    uaccess::UserSliceWriter,
};

/// `ETIMEDOUT`, the status of a timeout report.
const ETIMEDOUT: u32 = kernel::bindings::ETIMEDOUT;

/// One entry of a file's receive queue.
#[pin_data]
pub(crate) struct Packet {
    #[pin]
    links: ListLinks,
    /// The umad header `read` returns.
    pub(crate) hdr: UserMadHdr,
    pub(crate) body: Body,
}

// A queued MAD costs no more memory than ib_umad's (its 104-byte packet
// takes a 128-byte slab object): the `Arc` around a packet adds its count.
const _: () = assert!(core::mem::size_of::<Packet>() + 8 <= 128);

kernel::list::impl_has_list_links! {
    impl HasListLinks<0> for Packet { self.links }
}
kernel::list::impl_list_arc_safe! {
    impl ListArcSafe<0> for Packet { untracked; }
}
kernel::list::impl_list_item! {
    impl ListItem<0> for Packet { using ListLinks; }
}

pub(crate) enum Body {
    /// A MAD that arrived for one of the file's agents.
    Received(ReceivedMad),
    /// A MAD the file sent: its common header as sent (with the rewritten
    /// TID). Queued only as a timeout report.
    Sent { mad: [u8; MAD_HDR_SIZE] },
}

/// An outstanding send in the file's duplicate check: TID, class, and the
/// packet's address to tell sends with the same TID apart.
pub(crate) type SendKey = (u64, u8, usize);

impl Packet {
    pub(crate) fn new(hdr: UserMadHdr, body: Body) -> Result<ListArc<Self>> {
        let packet = UniqueArc::pin_init(pin_init!(Self { links <- ListLinks::new(), hdr, body }), GFP_KERNEL)?;
        Ok(ListArc::from(packet))
    }

    /// A sent packet's key in the duplicate check.
    pub(crate) fn send_key(&self) -> Option<SendKey> {
        match &self.body {
            Body::Sent { mad } => {
                let mut tid = [0; 8];
                tid.copy_from_slice(&mad[8..16]);
                Some((u64::from_be_bytes(tid), mad[1], self as *const Self as usize))
            }
            Body::Received(_) => None,
        }
    }

    /// Copies the packet to `out`, which has `count` bytes, behind a
    /// `layout` header; returns how many bytes that is, after `trace` saw
    /// the event, header and MAD header (the last segment's, as ib_umad
    /// traces). On an error the packet is still whole, to be read again.
    pub(crate) fn copy_out(
        &self,
        mut out: UserSliceWriter,
        count: usize,
        layout: HdrLayout,
        trace: impl FnOnce(Event, &UserMadHdr, &[u8]),
    ) -> Result<usize> {
        let hdr_size = layout.size();
        match &self.body {
            Body::Received(mad) => {
                let mut segments = mad.segments();
                let first = segments.next().ok_or(EINVAL)?;
                let offset = data_offset(first[1]);
                let plan =
                    RecvLayout::new(count, hdr_size, mad.len(), mad.segment_size(), offset).ok_or(EINVAL)?;
                out.write_slice(&self.hdr.to_bytes()[..hdr_size])?;
                out.write_slice(first.get(..plan.first).ok_or(EINVAL)?)?;
                if !plan.fits {
                    return Err(ENOSPC);
                }
                let mut last = first;
                for (len, segment) in plan.more_segments().zip(segments) {
                    out.write_slice(segment.get(offset..offset + len).ok_or(EINVAL)?)?;
                    last = segment;
                }
                trace(Event::ReadRecv, &self.hdr, last);
                Ok(hdr_size + mad.len())
            }
            Body::Sent { mad } => {
                if count < hdr_size + mad.len() {
                    return Err(EINVAL);
                }
                let report = UserMadHdr { status: ETIMEDOUT, ..self.hdr };
                out.write_slice(&report.to_bytes()[..hdr_size])?;
                out.write_slice(mad)?;
                trace(Event::ReadSend, &report, mad);
                Ok(hdr_size + mad.len())
            }
        }
    }
}

impl SendContext for ListArc<Packet> {
    fn into_raw(self) -> *mut c_void {
        ListArc::into_raw(self).cast_mut().cast()
    }

    unsafe fn from_raw(ptr: *mut c_void) -> Self {
        // SAFETY: the caller passes what `into_raw` returned, once.
        unsafe { ListArc::from_raw(ptr.cast_const().cast()) }
    }
}
