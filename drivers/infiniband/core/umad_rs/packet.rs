// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! What a umad file hands to `read`: received MADs, and reports of requests
//! whose response timed out. A sent MAD's packet exists from `write` on: it
//! sits in the file's send table while outstanding (`sends.rs`), and
//! becomes the timeout report if there is one, so reporting a timeout
//! allocates nothing.

use crate::{
    glue::{
        compat::{self, warn_on_once, IovIterDest, ETIMEDOUT},
        trace::Event,
    },
    infiniband::mad::ReceivedMad,
    rules::{
        mad::{data_offset, MadHdr, RecvLayout},
        uapi::{HdrLayout, UserMadHdr},
    },
};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{
    list::{impl_list_arc_safe, List, ListArc, ListLinks},
    prelude::*,
};

/// One entry of a file's receive queue, or of its send table.
#[pin_data]
pub(crate) struct Packet {
    /// Its place in the one [`PacketList`] that holds it, if any.
    #[pin]
    links: ListLinks,
    /// The umad header `read` returns, but for its agent id, which is
    /// `id` (the one here is zero).
    pub(crate) hdr: UserMadHdr,
    /// The agent id `read` returns: the file's id of the agent the packet
    /// is queued for, set as it is queued.
    id: AtomicU32,
    pub(crate) body: Body,
}

// A packet's one `ListArc` is the list's that holds it, or its maker's.
impl_list_arc_safe! {
    impl ListArcSafe<0> for Packet { untracked; }
}
compat::impl_list_item!(Packet { links });

/// A list of packets, linked through the packets (no allocation): a
/// file's receive queue, a bucket of its send table.
pub(crate) type PacketList = List<Packet>;

/// A packet the caller holds: in no list.
pub(crate) type PacketArc = ListArc<Packet>;

// A queued MAD costs no more memory than ib_umad's (its 104-byte packet
// takes a 128-byte kmalloc object): with the reference count, 8 bytes, a
// packet takes a 128-byte object too.
const _: () = assert!(core::mem::size_of::<Packet>() <= 120);

pub(crate) enum Body {
    /// A MAD that arrived for one of the file's agents.
    Received(ReceivedMad),
    /// A MAD the file sent: its common header as sent (with the rewritten
    /// TID). Queued only as a timeout report.
    Sent(MadHdr),
}

impl Packet {
    /// The packet of a received MAD, with the header `read` returns (its
    /// agent id set when the packet is queued).
    pub(crate) fn new_received(hdr: UserMadHdr, mad: ReceivedMad) -> Result<PacketArc> {
        Self::new(hdr, Body::Received(mad))
    }

    /// The packet of a MAD a file sends: the umad header it was written
    /// with, and its common header as sent.
    pub(crate) fn new_sent(hdr: &UserMadHdr, mad: MadHdr) -> Result<PacketArc> {
        Self::new(*hdr, Body::Sent(mad))
    }

    fn new(hdr: UserMadHdr, body: Body) -> Result<PacketArc> {
        ListArc::pin_init(
            try_pin_init!(Self {
                links <- ListLinks::new(),
                hdr: UserMadHdr { id: 0, ..hdr },
                id: AtomicU32::new(hdr.id),
                body,
            }? Error),
            GFP_KERNEL,
        )
    }

    /// Sets the agent id `read` returns: the file's id of the agent the
    /// packet is queued for. Under the file's lock, which `read` takes.
    pub(crate) fn set_id(&self, id: u32) {
        self.id.store(id, Ordering::Relaxed);
    }

    /// The umad header `read` returns.
    fn user_hdr(&self) -> UserMadHdr {
        UserMadHdr {
            id: self.id.load(Ordering::Relaxed),
            ..self.hdr
        }
    }

    /// A sent packet's MAD header.
    pub(crate) fn sent(&self) -> Option<&MadHdr> {
        match &self.body {
            Body::Sent(mad) => Some(mad),
            Body::Received(_) => None,
        }
    }

    /// Copies the packet to `out`, which has `count` bytes left, behind a
    /// `layout` header; returns how many bytes that is, after `trace` saw
    /// the event, header and MAD header (the last segment's, as ib_umad
    /// traces). On an error the packet is still whole, to be read again,
    /// but for `EIO`: a received message with fewer segments than its
    /// length, which no read can copy.
    pub(crate) fn copy_out(
        &self,
        out: &mut IovIterDest<'_>,
        count: usize,
        layout: HdrLayout,
        trace: impl FnOnce(Event, &UserMadHdr, &[u8]),
    ) -> Result<usize> {
        let hdr_size = layout.size();
        match &self.body {
            Body::Received(mad) => {
                let mut segments = mad.segments();
                let first = segments.next().ok_or(EINVAL)?;
                let plan = RecvLayout::new(count, hdr_size, mad.mad_len(), mad.segment_size())
                    .ok_or(EINVAL)?;
                let hdr = self.user_hdr();
                write_hdr(out, &hdr, layout)?;
                write_all(out, first.get(..plan.first).ok_or(EINVAL)?)?;
                if !plan.fits {
                    return Err(ENOSPC);
                }
                let mut last = first;
                // Most MADs have one segment, and no more to copy.
                if plan.has_more_segments() {
                    let offset = data_offset(*first.get(1).ok_or(EINVAL)?);
                    for len in plan.more_segments(offset) {
                        // The MAD layer's reassembly gives every segment
                        // the length counts; without one, what is left of
                        // `out` would be counted as data it never got.
                        let Some(segment) = segments.next() else {
                            warn_on_once!(true);
                            return Err(EIO);
                        };
                        write_all(out, segment.get(offset..offset + len).ok_or(EINVAL)?)?;
                        last = segment;
                    }
                }
                trace(Event::ReadRecv, &hdr, last);
                Ok(hdr_size + mad.mad_len())
            }
            Body::Sent(MadHdr(mad)) => {
                if count < hdr_size + mad.len() {
                    return Err(EINVAL);
                }
                let report = UserMadHdr {
                    status: ETIMEDOUT,
                    ..self.user_hdr()
                };
                write_hdr(out, &report, layout)?;
                write_all(out, mad)?;
                trace(Event::ReadSend, &report, mad);
                Ok(hdr_size + mad.len())
            }
        }
    }
}

/// Writes `hdr` in `layout` to `out`.
fn write_hdr(out: &mut IovIterDest<'_>, hdr: &UserMadHdr, layout: HdrLayout) -> Result {
    write_all(out, hdr.as_bytes().get(..layout.size()).ok_or(EINVAL)?)
}

/// Writes all of `bytes` to `out`: `EFAULT` if the IO vector ends first,
/// which it does at a fault, having taken the bytes before it.
fn write_all(out: &mut IovIterDest<'_>, bytes: &[u8]) -> Result {
    if out.copy_to_iter(bytes) == bytes.len() {
        Ok(())
    } else {
        Err(EFAULT)
    }
}
