// SPDX-License-Identifier: GPL-2.0

//! What a umad file hands to `read`: received MADs, and reports of requests
//! whose response timed out. A sent MAD's packet exists from `write` on: it
//! sits in the file's send table while outstanding (`sends.rs`), and
//! becomes the timeout report if there is one, so reporting a timeout
//! allocates nothing.

use crate::{
    glue::{
        compat::{warn_on_once, ETIMEDOUT},
        list::{impl_linked, BoxList, Links},
        slab::{CacheGuard, SlabBox, SlabCache, UserCopy},
        trace::Event,
    },
    infiniband::mad::ReceivedMad,
    rules::{
        mad::{data_offset, MadHdr, RecvLayout},
        uapi::{HdrLayout, UserMadHdr},
    },
};
use core::mem::{offset_of, size_of};
use kernel::{c_str, prelude::*, uaccess::UserSliceWriter};

/// Where packets come from. `read` copies a packet's header straight to
/// user memory; nothing else of it.
static PACKETS: SlabCache<Packet> = SlabCache::new(
    c_str!("ib_umad_rs_packet"),
    UserCopy {
        offset: offset_of!(Packet, hdr),
        size: size_of::<UserMadHdr>(),
    },
);

/// Makes the packets' slab cache, which lives while the guard does.
///
/// # Safety
///
/// The guard is dropped only once every packet is freed and no packet is
/// being made (the module's exit, after both IB clients are gone).
pub(crate) unsafe fn create_cache() -> Result<CacheGuard<Packet>> {
    // SAFETY: the caller promised.
    unsafe { PACKETS.create() }
}

/// One entry of a file's receive queue, or of its send table.
pub(crate) struct Packet {
    /// Its place in the one [`PacketList`] that owns it, if any.
    links: Links<Packet>,
    /// The umad header `read` returns.
    pub(crate) hdr: UserMadHdr,
    pub(crate) body: Body,
}

impl_linked!(Packet { links });

/// A list of packets that owns them, linked through the packets (no
/// allocation): a file's receive queue, a bucket of its send table.
pub(crate) type PacketList = BoxList<Packet>;

/// A packet the caller owns: in no list.
pub(crate) type PacketBox = SlabBox<Packet>;

// A queued MAD costs less memory than ib_umad's (its 104-byte packet takes
// a 128-byte kmalloc object): an object of the packets' own cache, of
// 120 bytes (the links keep the packet's cache, 8 of them).
const _: () = assert!(core::mem::size_of::<Packet>() <= 120);

pub(crate) enum Body {
    /// A MAD that arrived for one of the file's agents.
    Received(ReceivedMad),
    /// A MAD the file sent: its common header as sent (with the rewritten
    /// TID). Queued only as a timeout report.
    Sent(MadHdr),
}

impl Packet {
    /// A packet of a received MAD with an all-zero header, which the
    /// caller fills in before queueing the packet.
    pub(crate) fn new_received(mad: ReceivedMad) -> Result<PacketBox> {
        PACKETS.alloc(Self {
            links: Links::new(),
            hdr: UserMadHdr::default(),
            body: Body::Received(mad),
        })
    }

    /// The packet of a MAD a file sends: the umad header it was written
    /// with, and its common header as sent.
    pub(crate) fn new_sent(hdr: &UserMadHdr, mad: MadHdr) -> Result<PacketBox> {
        PACKETS.alloc(Self {
            links: Links::new(),
            hdr: *hdr,
            body: Body::Sent(mad),
        })
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
    /// traces). On an error the packet is still whole, to be read again,
    /// but for `EIO`: a received message with fewer segments than its
    /// length, which no read can copy.
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
                let plan = RecvLayout::new(count, hdr_size, mad.mad_len(), mad.segment_size())
                    .ok_or(EINVAL)?;
                write_hdr(&mut out, &self.hdr, layout)?;
                out.write_slice(first.get(..plan.first).ok_or(EINVAL)?)?;
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
                        out.write_slice(segment.get(offset..offset + len).ok_or(EINVAL)?)?;
                        last = segment;
                    }
                }
                trace(Event::ReadRecv, &self.hdr, last);
                Ok(hdr_size + mad.mad_len())
            }
            Body::Sent(MadHdr(mad)) => {
                if count < hdr_size + mad.len() {
                    return Err(EINVAL);
                }
                let report = UserMadHdr {
                    status: ETIMEDOUT,
                    ..self.hdr
                };
                write_hdr(&mut out, &report, layout)?;
                // Through the stack: only the header may leave the slab
                // object directly (`PACKETS`).
                let sent = *mad;
                out.write_slice(&sent)?;
                trace(Event::ReadSend, &report, mad);
                Ok(hdr_size + mad.len())
            }
        }
    }
}

/// Writes `hdr` in `layout` to `out`: a copy of a constant size per layout.
fn write_hdr(out: &mut UserSliceWriter, hdr: &UserMadHdr, layout: HdrLayout) -> Result {
    let bytes = hdr.as_bytes();
    match layout {
        HdrLayout::Old => out.write(
            bytes
                .first_chunk::<{ HdrLayout::Old.size() }>()
                .ok_or(EINVAL)?,
        ),
        HdrLayout::New => out.write(bytes),
    }
}
