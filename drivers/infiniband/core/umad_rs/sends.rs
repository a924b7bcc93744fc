// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! A file's outstanding sends, for the duplicate-TID rule (ib_umad's
//! `send_list`): a hash table, by TID, of the sent packets themselves.
//!
//! A sent packet is in the table from its write until its send completes,
//! and only then, perhaps, in the receive queue as a timeout report: never
//! in both, so the two share the packet's links and a send costs the table
//! no allocation. A write looks only at the sends in its TID's bucket,
//! instead of at every outstanding send as ib_umad does; the buckets double
//! when they hold more than two sends each, so with thousands of TIDs
//! outstanding a write still looks at about two. A table starts as one
//! bucket of its own, allocating nothing: most files never have more than
//! two sends outstanding, and many send nothing.

use crate::{
    infiniband::mad::SendContext,
    packet::{Packet, PacketArc, PacketList},
    rules::mad::{tid_bucket, SendKind},
};
use core::ptr::NonNull;
use kernel::{alloc::flags::__GFP_NOWARN, ffi::c_void, prelude::*};

/// The buckets a table allocates when its own one holds more than two
/// sends: 64 list heads, a kilobyte.
const FIRST_BUCKETS: usize = 64;

/// The most buckets a table grows to: 4096 list heads, 64 KiB. Past 8192
/// outstanding sends the chains grow longer, and a write still looks at a
/// 4096th of what ib_umad walks; the last rehash, under the table's lock,
/// moves 8192 packets.
const MAX_BUCKETS: usize = 4096;

pub(crate) struct SendTable {
    /// The one bucket while there are no `buckets`; empty after.
    first: PacketList,
    /// A power of two of them, once the table grew. Not an empty `KVec`
    /// before: dropping one calls `krealloc` to free nothing.
    buckets: Option<KVec<PacketList>>,
    /// Packets in the table.
    count: usize,
    /// After a failed grow, the count below which the table does not try
    /// again.
    no_grow_below: usize,
}

/// The send a posted MAD carries as its context: which packet of the send
/// table it is. Only an address: the table holds the packet.
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
        Self {
            first: PacketList::new(),
            buckets: None,
            count: 0,
            no_grow_below: 0,
        }
    }

    /// `n` empty buckets, for `grow`. Without memory for them the table
    /// does without: no warning.
    pub(crate) fn empty_buckets(n: usize) -> Result<KVec<PacketList>> {
        let mut buckets = KVec::with_capacity(n, GFP_KERNEL | __GFP_NOWARN)?;
        for _ in 0..n {
            buckets.push(PacketList::new(), GFP_KERNEL)?;
        }
        Ok(buckets)
    }

    fn bucket_of(packet: &Packet, buckets: &[PacketList]) -> usize {
        let tid = packet.sent().map_or(0, |mad| mad.tid());
        tid_bucket(tid, buckets.len().trailing_zeros())
    }

    fn bucket(&mut self, packet: &Packet) -> &mut PacketList {
        match &mut self.buckets {
            None => &mut self.first,
            Some(buckets) => {
                let b = Self::bucket_of(packet, buckets);
                &mut buckets[b]
            }
        }
    }

    /// The buckets the table has: its own one, or the allocated ones.
    fn bucket_count(&self) -> usize {
        self.buckets.as_ref().map_or(1, KVec::len)
    }

    /// How many buckets the table should have, when more than it has:
    /// more once it holds more than two sends a bucket ([`FIRST_BUCKETS`]
    /// after its own one, then twice as many), up to [`MAX_BUCKETS`].
    pub(crate) fn wanted_buckets(&self) -> Option<usize> {
        let have = self.bucket_count();
        let grow = self.count > 2 * have && have < MAX_BUCKETS && self.count >= self.no_grow_below;
        grow.then(|| {
            if self.buckets.is_none() {
                FIRST_BUCKETS
            } else {
                2 * have
            }
        })
    }

    /// There was no memory for the buckets `wanted_buckets` asked for: ask
    /// again only once the table holds twice as many sends.
    pub(crate) fn grow_failed(&mut self) {
        self.no_grow_below = 2 * self.count;
    }

    /// Spreads the sends over `buckets` (from `empty_buckets`), if they
    /// are more than the table has: another writer may have grown it.
    pub(crate) fn grow(&mut self, mut buckets: KVec<PacketList>) {
        if buckets.len() <= self.bucket_count() || !buckets.len().is_power_of_two() {
            return;
        }
        let allocated = self.buckets.iter_mut().flat_map(|b| b.iter_mut());
        for old in Iterator::chain(core::iter::once(&mut self.first), allocated) {
            while let Some(packet) = old.pop_front() {
                let b = Self::bucket_of(&packet, &buckets);
                buckets[b].push_back(packet);
            }
        }
        self.buckets = Some(buckets);
    }

    /// Adds a sent packet. With `check`, refuses it (giving it back) when
    /// an outstanding send with its TID and class clashes with it.
    pub(crate) fn insert(
        &mut self,
        packet: PacketArc,
        check: bool,
    ) -> Result<Outstanding, PacketArc> {
        let bucket = self.bucket(&packet);
        if check {
            if let Some(mad) = packet.sent() {
                // The kinds only for a TID and class that match: seldom.
                let clash = bucket.iter().any(|other| {
                    other.sent().is_some_and(|sent| {
                        sent.tid() == mad.tid()
                            && sent.mgmt_class() == mad.mgmt_class()
                            && SendKind::of(&packet.hdr, mad)
                                .clashes_with(&SendKind::of(&other.hdr, sent))
                    })
                });
                if clash {
                    return Err(packet);
                }
            }
        }
        let outstanding = Outstanding(NonNull::from(&*packet));
        bucket.push_back(packet);
        self.count += 1;
        Ok(outstanding)
    }

    /// Takes a send's packet out of the table, once the send completed
    /// or could not be posted.
    ///
    /// # Safety
    ///
    /// `outstanding` came from this table's `insert`, and was not taken
    /// before.
    pub(crate) unsafe fn take(&mut self, outstanding: Outstanding) -> Option<PacketArc> {
        // SAFETY: the packet is in the table (the caller promised), which
        // holds it, so it is alive.
        let packet = unsafe { outstanding.0.as_ref() };
        let bucket = self.bucket(packet);
        // SAFETY: `insert` (or `grow`) put it in the bucket of its TID,
        // which does not change, and in no other list: a packet is in one
        // list at a time, and this table's lists are its buckets.
        let packet = unsafe { bucket.remove(packet) };
        self.count -= usize::from(packet.is_some());
        packet
    }
}
