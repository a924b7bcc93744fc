// SPDX-License-Identifier: GPL-2.0

//! A file's outstanding sends, for the duplicate-TID rule (ib_umad's
//! `send_list`): a hash table, by TID, of the sent packets themselves.
//!
//! A sent packet is in the table from its write until its send completes,
//! and only then, perhaps, in the receive queue as a timeout report: never
//! in both, so the two share the packet's list links and the table costs
//! no allocation. A write looks only at the sends in its TID's bucket,
//! instead of at every outstanding send as ib_umad does.

use crate::{
    ib_mad::SendContext,
    mad::{tid_bucket, SendKind},
    packet::Packet,
};
use core::ptr::NonNull;
use kernel::{
    ffi::c_void,
    list::{List, ListArc},
};

/// log2 of the number of buckets: 64 list heads, half a kilobyte a file.
const BUCKET_BITS: u32 = 6;

pub(crate) struct SendTable {
    buckets: [List<Packet>; 1 << BUCKET_BITS],
}

/// The send a posted MAD carries as its context: which packet of the send
/// table it is. Only an address: the table owns the packet.
pub(crate) struct Outstanding(NonNull<Packet>);

// SAFETY: an address, dereferenced only by `SendTable::take` of the table
// that owns the packet, under that table's lock.
unsafe impl Send for Outstanding {}

impl SendContext for Outstanding {
    fn into_raw(self) -> *mut c_void {
        self.0.as_ptr().cast()
    }

    unsafe fn from_raw(ptr: *mut c_void) -> Self {
        // SAFETY: `into_raw` made it from a `NonNull`.
        Self(unsafe { NonNull::new_unchecked(ptr.cast()) })
    }
}

impl SendTable {
    pub(crate) const fn new() -> Self {
        Self { buckets: [const { List::new() }; 1 << BUCKET_BITS] }
    }

    fn bucket(&mut self, packet: &Packet) -> &mut List<Packet> {
        let tid = packet.sent().map_or(0, |mad| mad.tid());
        &mut self.buckets[tid_bucket(tid, BUCKET_BITS)]
    }

    /// Adds a sent packet. With `check`, refuses it (giving it back) when
    /// an outstanding send with its TID and class clashes with it.
    pub(crate) fn insert(
        &mut self,
        packet: ListArc<Packet>,
        check: bool,
    ) -> Result<Outstanding, ListArc<Packet>> {
        let bucket = self.bucket(&packet);
        if check {
            if let Some(mad) = packet.sent() {
                let kind = SendKind::of(&packet.hdr, mad);
                let clash = bucket.iter().any(|other| {
                    other.sent().is_some_and(|sent| {
                        sent.tid() == mad.tid()
                            && sent.mgmt_class() == mad.mgmt_class()
                            && kind.clashes_with(&SendKind::of(&other.hdr, sent))
                    })
                });
                if clash {
                    return Err(packet);
                }
            }
        }
        let outstanding = Outstanding(NonNull::from(&*packet));
        bucket.push_back(packet);
        Ok(outstanding)
    }

    /// Takes a send's packet out of the table, once the send completed
    /// or could not be posted.
    ///
    /// # Safety
    ///
    /// `outstanding` came from this table's `insert`, and was not taken
    /// before.
    pub(crate) unsafe fn take(&mut self, outstanding: Outstanding) -> Option<ListArc<Packet>> {
        // SAFETY: the packet is in the table (the caller promised), which
        // owns it, so it is alive.
        let packet = unsafe { outstanding.0.as_ref() };
        let bucket = self.bucket(packet);
        // SAFETY: `insert` put it in the bucket of its TID, which does not
        // change: it is in `bucket`.
        unsafe { bucket.remove(packet) }
    }
}
