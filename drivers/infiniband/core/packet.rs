// SPDX-License-Identifier: GPL-2.0

//! What a umad file hands to `read`: received MADs, and reports of requests
//! whose response timed out. A sent MAD's packet exists from `write` on: it
//! sits in the file's send table while outstanding (`sends.rs`), and
//! becomes the timeout report if there is one, so reporting a timeout
//! allocates nothing.

use crate::{
    ib_mad::ReceivedMad,
    mad::{data_offset, MadHdr, RecvLayout},
    trace::Event,
    uapi::{HdrLayout, UserMadHdr},
};
use core::pin::Pin;
use kernel::{
    list::ListLinks,
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
    Sent(MadHdr),
}

impl Packet {
    /// A packet of `body` with an all-zero header, which the caller fills
    /// in place before queueing the packet.
    pub(crate) fn new(body: Body) -> Result<Pin<UniqueArc<Self>>> {
        UniqueArc::pin_init(
            pin_init!(Self { links <- ListLinks::new(), hdr: UserMadHdr::default(), body }),
            GFP_KERNEL,
        )
    }

    /// The header, to fill in.
    pub(crate) fn hdr_mut(self: Pin<&mut Self>) -> &mut UserMadHdr {
        // SAFETY: only `links` is structurally pinned; the header is
        // plain data that may move.
        unsafe { &mut self.get_unchecked_mut().hdr }
    }

    /// The body, to fill in.
    pub(crate) fn body_mut(self: Pin<&mut Self>) -> &mut Body {
        // SAFETY: as in `hdr_mut`.
        unsafe { &mut self.get_unchecked_mut().body }
    }

    /// A sent packet's MAD header.
    pub(crate) fn sent(&self) -> Option<&MadHdr> {
        match &self.body {
            Body::Sent(mad) => Some(mad),
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
                out.write_slice(&self.hdr.as_bytes()[..hdr_size])?;
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
            Body::Sent(MadHdr(mad)) => {
                if count < hdr_size + mad.len() {
                    return Err(EINVAL);
                }
                let report = UserMadHdr { status: ETIMEDOUT, ..self.hdr };
                out.write_slice(&report.as_bytes()[..hdr_size])?;
                out.write_slice(mad)?;
                trace(Event::ReadSend, &report, mad);
                Ok(hdr_size + mad.len())
            }
        }
    }
}
