// SPDX-License-Identifier: GPL-2.0

//! What a umad file hands to `read`: received MADs, and reports of requests
//! whose response timed out. A sent MAD's packet exists from `write` on: it
//! sits in the file's send table while outstanding (`sends.rs`), and
//! becomes the timeout report if there is one, so reporting a timeout
//! allocates nothing.

use crate::{
    ib_mad::ReceivedMad,
    mad::{data_offset, MadHdr, RecvLayout},
    slab::{CacheGuard, SlabBox, SlabCache},
    trace::Event,
    uapi::{HdrLayout, UserMadHdr},
};
use core::ptr::{self, NonNull};
use kernel::{c_str, prelude::*, uaccess::UserSliceWriter};

/// `ETIMEDOUT`, the status of a timeout report.
const ETIMEDOUT: u32 = kernel::bindings::ETIMEDOUT;

/// Where packets come from.
static PACKETS: SlabCache<Packet> = SlabCache::new(c_str!("ib_umad_rs_packet"));

/// Makes the packets' slab cache, which lives while the guard does.
pub(crate) fn create_cache() -> Result<CacheGuard<Packet>> {
    PACKETS.create()
}

/// One entry of a file's receive queue, or of its send table.
pub(crate) struct Packet {
    /// Neighbours in the one `PacketList` that owns the packet; null in
    /// none.
    next: *mut Packet,
    prev: *mut Packet,
    /// The umad header `read` returns.
    pub(crate) hdr: UserMadHdr,
    pub(crate) body: Body,
}

// SAFETY: the links are only followed by the list that owns the packet,
// under its owner's lock; the rest is `Send` and `Sync` data.
unsafe impl Send for Packet {}
// SAFETY: as above.
unsafe impl Sync for Packet {}

/// A packet the caller owns: in no list.
pub(crate) type PacketBox = SlabBox<Packet>;

// A queued MAD costs less memory than ib_umad's (its 104-byte packet takes
// a 128-byte kmalloc object): an object of the packets' own cache.
const _: () = assert!(core::mem::size_of::<Packet>() <= 112);

pub(crate) enum Body {
    /// A MAD that arrived for one of the file's agents.
    Received(ReceivedMad),
    /// A MAD the file sent: its common header as sent (with the rewritten
    /// TID). Queued only as a timeout report.
    Sent(MadHdr),
}

impl Packet {
    /// A packet of `body` with an all-zero header, which the caller fills
    /// in before queueing the packet.
    pub(crate) fn new(body: Body) -> Result<PacketBox> {
        PACKETS.alloc(Self { next: ptr::null_mut(), prev: ptr::null_mut(), hdr: UserMadHdr::default(), body })
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

/// A list of packets that owns them, linked through the packets (no
/// allocation): a file's receive queue, a bucket of its send table.
pub(crate) struct PacketList {
    first: *mut Packet,
    last: *mut Packet,
}

// SAFETY: the list owns its packets, which are `Send`.
unsafe impl Send for PacketList {}

impl PacketList {
    pub(crate) const fn new() -> Self {
        Self { first: ptr::null_mut(), last: ptr::null_mut() }
    }

    /// Appends a packet; returns where it is, for `remove`.
    pub(crate) fn push_back(&mut self, packet: PacketBox) -> NonNull<Packet> {
        self.link(packet, self.last, ptr::null_mut())
    }

    pub(crate) fn push_front(&mut self, packet: PacketBox) {
        self.link(packet, ptr::null_mut(), self.first);
    }

    /// Links `packet` in between `prev` and `next`, neighbours in this list
    /// or null at its ends (`remove`'s inverse); returns where it is.
    fn link(&mut self, packet: PacketBox, prev: *mut Packet, next: *mut Packet) -> NonNull<Packet> {
        let new = packet.into_raw();
        let p = new.as_ptr();
        // SAFETY: `p` is ours and in no list (a box's packet never is);
        // `prev` and `next`, where not null, are adjacent packets of this
        // list, which `&mut self` gives us alone.
        unsafe {
            (*p).prev = prev;
            (*p).next = next;
            match NonNull::new(prev) {
                None => self.first = p,
                Some(prev) => (*prev.as_ptr()).next = p,
            }
            match NonNull::new(next) {
                None => self.last = p,
                Some(next) => (*next.as_ptr()).prev = p,
            }
        }
        new
    }

    pub(crate) fn pop_front(&mut self) -> Option<PacketBox> {
        let first = NonNull::new(self.first)?;
        // SAFETY: the first packet is in this list.
        Some(unsafe { self.remove(first) })
    }

    /// Takes `packet` out of the list.
    ///
    /// # Safety
    ///
    /// `packet` is in this list.
    pub(crate) unsafe fn remove(&mut self, packet: NonNull<Packet>) -> PacketBox {
        let p = packet.as_ptr();
        // SAFETY: `p` and its neighbours are packets of this list, which
        // owns them and which `&mut self` gives us alone.
        unsafe {
            let (prev, next) = ((*p).prev, (*p).next);
            match NonNull::new(prev) {
                None => self.first = next,
                Some(prev) => (*prev.as_ptr()).next = next,
            }
            match NonNull::new(next) {
                None => self.last = prev,
                Some(next) => (*next.as_ptr()).prev = prev,
            }
            (*p).prev = ptr::null_mut();
            (*p).next = ptr::null_mut();
            // The list owned it as a box of the packets' cache.
            SlabBox::from_raw(packet, &PACKETS)
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Packet> {
        let mut next = self.first;
        core::iter::from_fn(move || {
            // SAFETY: a non-null link is a packet of this list, alive while
            // the list is borrowed.
            let packet = unsafe { next.as_ref()? };
            next = packet.next;
            Some(packet)
        })
    }
}

impl Drop for PacketList {
    fn drop(&mut self) {
        while self.pop_front().is_some() {}
    }
}
