// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! An open `umadN`: its MAD agents, its receive queue, and what read,
//! write and poll do with them; `ioctl` (in `file/`) registers and
//! unregisters the agents.
//!
//! Locks, outermost first: the port's (`Port::state`, ib_umad's
//! `file_mutex`), the file's (`state`), the send table (`sends`). Agents
//! are unregistered only with the port's lock held and never with the
//! file's: unregistering waits for the agent's handlers, which take the
//! file's lock. Holding the port's lock makes every agent go before the
//! port's `kill` returns, hence before the IB device goes. [`Retired`]
//! makes both rules types.

use crate::{
    glue::{
        chrdev::{file::poll_bits, Node},
        compat::{
            self, warn_on_once, ARef, File, IovIterDest, IovIterSource, MutexGuard, PollCondVar,
            PollTable,
        },
        nospec::array_index_nospec,
        trace,
    },
    infiniband::mad::{
        AddressVector, Agent, AgentId, GlobalRoute, MadHandler, ReceivedMad, RecvCompletion,
    },
    packet::{Packet, PacketArc, PacketList},
    port::{Port, PortGuard},
    rules::{
        mad::{MadStart, SendLayout, RMPP_HDR_END},
        slots::{SlotId, Slots, Vacant},
        uapi::{Be16, Be32, HdrLayout, UserMadHdr},
    },
    sends::{Outstanding, SendTable},
};
use core::{
    marker::PhantomData,
    mem::ManuallyDrop,
    sync::atomic::{AtomicBool, AtomicUsize, Ordering},
};
use kernel::{
    c_str,
    list::{impl_list_arc_safe, ListArc, ListLinks},
    new_mutex, new_spinlock,
    prelude::*,
    sync::{Arc, Mutex, SpinLock},
};

mod ioctl;

/// `MAX_UMAD_RECV_LIST_SIZE`: received MADs a file queues before it drops
/// new ones. Timeout reports are always queued.
const MAX_QUEUED: usize = 200_000;

/// One open `umadN`.
#[pin_data]
pub(crate) struct UmadFile {
    /// In the port's list of open files from open to close.
    #[pin]
    links: ListLinks,
    /// `umadN`'s node, whose device the file's messages name, and whose
    /// owner is the file's port.
    node: ARef<Node<Port>>,
    #[pin]
    state: Mutex<FileState>,
    /// Outstanding sends, for the duplicate check.
    #[pin]
    sends: SpinLock<SendTable>,
    /// Readers and pollers wait here. Nothing polls it any more when the
    /// file goes, after its release, so its drop costs no grace period.
    #[pin]
    wait: PollCondVar,
    /// `state.received`'s length (changed under `state`), for the receive
    /// limit and the lockless readiness checks of `poll` and a blocked
    /// read.
    queued: AtomicUsize,
    /// Set (under `state`) when the port's device went away or the file is
    /// closing: its agents are leaving their slots then, and nothing more
    /// is queued.
    dead: AtomicBool,
    /// Whether the file uses the 64-byte header (set under `state`).
    new_layout: AtomicBool,
}

// A file's one `ListArc` is the port's list's (`open`, `PortState`).
impl_list_arc_safe! {
    impl ListArcSafe<0> for UmadFile { untracked; }
}
compat::impl_list_item!(UmadFile { links });

/// The file's lock, held.
type FileGuard<'a> = MutexGuard<'a, FileState>;

/// What the file's lock protects.
pub(crate) struct FileState {
    /// Emptied, all at once, when the file dies: a dead file has no agent
    /// to write on or to queue for, as ib_umad's `__get_agent` finds none
    /// once `agents_dead` is set. An agent leaves only as [`Retired`].
    agents: AgentSlots,
    /// Whether an agent was registered: the header layout is fixed then.
    already_used: bool,
    received: PacketList,
}

/// A file's agent slots, allocated at its first registration: a file that
/// registers none (one opened and closed, as libibumad's probes do)
/// carries none of their 32 slots, and a dying file's slots leave it as
/// one pointer.
struct AgentSlots(Option<KBox<Slots<Agent<UmadFile>>>>);

impl AgentSlots {
    const fn new() -> Self {
        Self(None)
    }

    fn is_empty(&self) -> bool {
        match &self.0 {
            Some(slots) => slots.is_empty(),
            None => true,
        }
    }

    fn get(&self, id: SlotId) -> Option<&Agent<UmadFile>> {
        self.0.as_ref()?.get(id)
    }

    fn take(&mut self, id: SlotId) -> Option<Agent<UmadFile>> {
        self.0.as_mut()?.take(id)
    }

    fn position(&self, matches: impl FnMut(&Agent<UmadFile>) -> bool) -> Option<u32> {
        self.0.as_ref()?.position(matches)
    }

    /// The lowest free slot, `None` if all are taken; the slots are
    /// allocated first if the file has none yet.
    fn vacant(&mut self) -> Result<Option<Vacant<'_, Agent<UmadFile>>>> {
        let slots = match &mut self.0 {
            Some(slots) => slots,
            empty => empty.insert(KBox::new(Slots::new(), GFP_KERNEL)?),
        };
        Ok(slots.vacant())
    }

    /// All the slots, if the file has any, leaving it none.
    fn take_all(&mut self) -> Option<KBox<Slots<Agent<UmadFile>>>> {
        self.0.take()
    }
}

/// A file's state goes with the file, which every agent in its slots
/// holds: so the slots are empty by then (`close` and `kill` empty them),
/// which this asserts.
impl Drop for FileState {
    fn drop(&mut self) {
        warn_on_once!(!self.agents.is_empty());
    }
}

/// Agents (one, or a file's slots of them) taken out of a file and still
/// registered. Unregistering waits for their handlers, which take the
/// file's lock, and must happen before the port's `kill` returns. So they
/// are retired only by giving up the file's guard ([`Retired::new`]), and
/// unregistered only with the port's guard ([`Retired::unregister`]).
/// Dropping them any other way does not compile.
#[must_use = "retired agents are unregistered with the port's lock held"]
pub(crate) struct Retired<A>(ManuallyDrop<A>);

impl<A> Retired<A> {
    /// Retires `agents`, releasing the file's lock.
    fn new(agents: A, file: FileGuard<'_>) -> Self {
        drop(file);
        Self(ManuallyDrop::new(agents))
    }

    /// Unregisters the agents, with the port's lock held.
    pub(crate) fn unregister(self, _port: &PortGuard<'_>) {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: taken once: `this` is not dropped.
        drop(unsafe { ManuallyDrop::take(&mut this.0) });
    }
}

/// Fails the build where a [`Retired`] could be dropped without
/// [`Retired::unregister`]: its drop glue is generated only there.
struct NotUnregistered<A>(PhantomData<A>);

impl<A> NotUnregistered<A> {
    const ERROR: () = panic!("retired agents must be unregistered with the port's lock held");
}

impl<A> Drop for Retired<A> {
    fn drop(&mut self) {
        #[allow(clippy::let_unit_value)]
        let () = NotUnregistered::<A>::ERROR;
    }
}

impl UmadFile {
    /// Opens the umad node `node` of its owner, the port: `ENXIO` once its
    /// IB device is gone, `EPERM` from another network namespace.
    pub(crate) fn open(node: &Node<Port>) -> Result<Arc<Self>> {
        let mut port_state = node.owner().state.lock();
        port_state.check_open()?;
        let file = ListArc::pin_init(
            try_pin_init!(Self {
                links <- ListLinks::new(),
                node: node.into(),
                state <- new_mutex!(FileState {
                    agents: AgentSlots::new(),
                    already_used: false,
                    received: PacketList::new(),
                }),
                sends <- new_spinlock!(SendTable::new()),
                wait <- PollCondVar::new(c_str!("umad_file"), kernel::static_lock_class!()),
                queued: AtomicUsize::new(0),
                dead: AtomicBool::new(false),
                new_layout: AtomicBool::new(false),
            }? Error),
            GFP_KERNEL,
        )?;
        let opened = file.clone_arc();
        port_state.add_file(file);
        Ok(opened)
    }

    /// The last close: the agents go, and everything queued with them.
    /// Nobody waits on the file any more, so nobody is woken.
    pub(crate) fn close(self: &Arc<Self>) {
        let mut port_state = self.port().state.lock();
        let mut state = self.state.lock();
        self.dead.store(true, Ordering::Release);
        while state.received.pop_front().is_some() {}
        self.queued.store(0, Ordering::Relaxed);
        self.retire_agents(state, &port_state);
        port_state.remove_file(self);
    }

    /// The port's device is going: the file's agents go with it, and
    /// waiters learn of it. The file stays open, and fails from now on.
    pub(crate) fn kill(&self, port: &PortGuard<'_>) {
        let state = self.state.lock();
        self.dead.store(true, Ordering::Release);
        self.wait.notify_all();
        self.retire_agents(state, port);
    }

    /// Unregisters the agents of a file just marked dead (under `state`):
    /// they all leave their slots under the file's lock, so that no write
    /// finds one once the file is dead, and are unregistered without it,
    /// one by one. The port's lock keeps new ones out.
    fn retire_agents(&self, mut state: FileGuard<'_>, port: &PortGuard<'_>) {
        let Some(agents) = state.agents.take_all() else {
            return;
        };
        Retired::new(agents, state).unregister(port);
    }

    /// The port the file is opened on.
    fn port(&self) -> &Port {
        self.node.owner()
    }

    fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Acquire)
    }

    fn layout(&self) -> HdrLayout {
        if self.new_layout.load(Ordering::Relaxed) {
            HdrLayout::New
        } else {
            HdrLayout::Old
        }
    }

    /// `read(2)`: the next queued packet, after its umad header; `EAGAIN`
    /// instead of a wait while the file is `nonblocking()` (asked at each
    /// wait, as `fcntl` may change it meanwhile).
    pub(crate) fn read(
        &self,
        nonblocking: impl Fn() -> bool,
        out: &mut IovIterDest<'_>,
    ) -> Result<usize> {
        let count = out.len();
        if count < self.layout().size() {
            return Err(EINVAL);
        }
        let packet = loop {
            {
                let mut state = self.state.lock();
                if self.is_dead() {
                    return Err(EIO);
                }
                if let Some(packet) = state.received.pop_front() {
                    self.queued.fetch_sub(1, Ordering::Relaxed);
                    break packet;
                }
            }
            if nonblocking() {
                return Err(EAGAIN);
            }
            // Device removal ends the wait too.
            self.wait.wait_interruptible_until(|| {
                self.queued.load(Ordering::Relaxed) > 0 || self.is_dead()
            })?;
        };
        // The header as the file has it now, as ib_umad's `hdr_size(file)`
        // at the copy: a first REGISTER_AGENT2 while the read waited makes
        // it 64 bytes, which the packet's `length` already counts.
        let layout = self.layout();
        let origin = self.port().trace_origin();
        let copied = packet.copy_out(out, count, layout, |event, hdr, mad| {
            trace::emit(event, origin, hdr, mad)
        });
        if copied == Err(EIO) {
            // Broken (`copy_out`): it would fail every read again.
            drop(packet);
        } else if copied.is_err() {
            // Nothing is lost: the packet goes back to the head, and the
            // count with it, under the lock (another reader of the file
            // may take it at once).
            let mut state = self.state.lock();
            state.received.push_front(packet);
            self.queued.fetch_add(1, Ordering::Relaxed);
            // A reader that found the queue empty meanwhile may have it
            // now, rather than at the next arrival.
            self.wait.notify_all();
        }
        copied
    }

    /// `poll(2)`: always writable; readable when something is queued; only
    /// an error once the device is gone.
    ///
    /// Unlike ib_umad it takes no lock: registering with the wait queue
    /// takes the queue's lock, which `enqueue` and `kill` take to wake
    /// it after changing what is read here, so either this sees the change
    /// or the change wakes this.
    pub(crate) fn poll(&self, file: &File, table: &PollTable<'_>) -> u32 {
        #[cfg(umad_rs_poll_unpolled_drop)]
        table.register_wait(file, &self.wait);
        #[cfg(not(umad_rs_poll_unpolled_drop))]
        // SAFETY: the queue is this file's, which the file's private data
        // holds until its release, and this is the file's `->poll`.
        unsafe {
            table.register_wait(file, &self.wait)
        };
        if self.is_dead() {
            poll_bits::ERR
        } else if self.queued.load(Ordering::Relaxed) == 0 {
            poll_bits::OUT | poll_bits::WRNORM
        } else {
            poll_bits::OUT | poll_bits::WRNORM | poll_bits::IN | poll_bits::RDNORM
        }
    }

    /// `write(2)`: one MAD to send, after its umad header.
    pub(crate) fn write(&self, input: &mut IovIterSource<'_>) -> Result<usize> {
        let layout = self.layout();
        let hdr_size = layout.size();
        let count = input.len();
        if count < hdr_size + RMPP_HDR_END {
            return Err(EINVAL);
        }
        // The old layout leaves `pkey_index` at zero.
        let mut hdr = UserMadHdr::default();
        read_exact(input, hdr.as_bytes_mut().get_mut(..hdr_size).ok_or(EINVAL)?)?;
        let id = SlotId::new(hdr.id, array_index_nospec).ok_or(EINVAL)?;
        let mut start = MadStart([0; RMPP_HDR_END]);
        read_exact(input, &mut start.0)?;

        let state = self.state.lock();
        trace::emit(
            trace::Event::Write,
            self.port().trace_origin(),
            &hdr,
            &start.0,
        );
        let agent = state.agents.get(id).ok_or(EIO)?;
        let ah = agent.address_handle(&AddressVector::from(&hdr))?;
        let kernel_rmpp = agent.kernel_rmpp();
        let plan = SendLayout::new(count, hdr_size, &start, kernel_rmpp).ok_or(EINVAL)?;
        // Userspace's own RMPP segments share a TID; they are not checked.
        let check = !start.is_user_rmpp(kernel_rmpp);
        // Requests carry the agent's half of the TID, so responses find it.
        // In place: the header is copied whole into the send and the packet.
        let mad = start.hdr_mut();
        if !mad.is_response() {
            mad.rewrite_tid(agent.hi_tid());
        }
        let mad = *mad;
        let mut send = agent.create_send(
            ah,
            hdr.qpn.get(),
            hdr.pkey_index,
            plan.rmpp_active,
            plan.hdr_len,
            plan.data_len,
            mad.base_version(),
        )?;
        send.set_timeout(hdr.timeout_ms, hdr.retries);
        let buf = send.mad();
        // The common header now; an RMPP header the kernel builds is there.
        if let Some(common) = buf.first_chunk_mut() {
            *common = mad.0;
        }
        // The rest follows what `start` holds in `input`.
        if plan.rmpp_active {
            // The class header, then each segment's data, which follows it.
            let class_hdr = buf.get_mut(RMPP_HDR_END..plan.hdr_len).ok_or(EINVAL)?;
            read_exact(input, class_hdr)?;
            let mut segments = send.segments().ok_or(EINVAL)?;
            for len in plan.rmpp_segments(segments.size()) {
                let segment = segments.next().ok_or(EINVAL)?;
                let segment = segment.get_mut(..len).ok_or(EINVAL)?;
                if input.copy_from_iter_raw(segment).len() != len {
                    return Err(EFAULT);
                }
            }
        } else {
            let end = plan.hdr_len + plan.data_len;
            let rest = buf.get_mut(plan.copy_offset..end).ok_or(EINVAL)?;
            // From the class header on: its first bytes may be in `start`
            // (ib_umad reads them from userspace again).
            let known = start.0.get(plan.copy_offset..).ok_or(EINVAL)?;
            if known.len() > rest.len() {
                return Err(EINVAL);
            }
            let (copied, unread) = rest.split_at_mut(known.len());
            copied.copy_from_slice(known);
            read_exact(input, unread)?;
        }

        // The packet that keeps the send in the duplicate check, and may
        // become its timeout report.
        let packet = Packet::new_sent(&hdr, mad)?;
        let (outstanding, wanted) = {
            let mut sends = self.sends.lock();
            let outstanding = sends.insert(packet, check).map_err(|_| EINVAL)?;
            (outstanding, sends.wanted_buckets())
        };
        if let Err((e, outstanding)) = send.post(outstanding) {
            // SAFETY: not posted, so still in the table, once.
            drop(unsafe { self.sends.lock().take(outstanding) });
            return Err(e);
        }
        drop(state);
        // More buckets, allocated without the table's lock; if there is no
        // memory for them the table stays as it is.
        match wanted.map(SendTable::empty_buckets) {
            Some(Ok(buckets)) => self.sends.lock().grow(buckets),
            Some(Err(_)) => self.sends.lock().grow_failed(),
            None => {}
        }
        Ok(count)
    }

    /// Queues a packet for one of the file's agents, under the file's id
    /// of the agent, if it is still the file's; `limit` drops received
    /// MADs beyond [`MAX_QUEUED`].
    fn enqueue(&self, agent: AgentId, packet: PacketArc, limit: bool) {
        let mut state = self.state.lock();
        if self.is_dead() || (limit && self.queued.load(Ordering::Relaxed) > MAX_QUEUED) {
            return;
        }
        let Some(id) = state.agents.position(|a| a.id() == agent) else {
            return;
        };
        packet.set_id(id);
        state.received.push_back(packet);
        self.queued.fetch_add(1, Ordering::Relaxed);
        self.wait.notify_all();
    }
}

impl From<&UserMadHdr> for AddressVector {
    fn from(hdr: &UserMadHdr) -> Self {
        AddressVector {
            dlid: hdr.lid.get(),
            sl: hdr.sl,
            path_bits: hdr.path_bits,
            grh: (hdr.grh_present != 0).then(|| GlobalRoute {
                flow_label: hdr.flow_label.get(),
                sgid_index: hdr.gid_index,
                hop_limit: hdr.hop_limit,
                traffic_class: hdr.traffic_class,
                dgid: hdr.gid,
            }),
        }
    }
}

impl MadHandler for UmadFile {
    type SendContext = Outstanding;

    fn received(&self, agent: AgentId, mad: ReceivedMad, completion: &RecvCompletion<'_>) {
        if !completion.is_success() {
            return;
        }
        let Ok(length) = u32::try_from(self.layout().size() + mad.mad_len()) else {
            return;
        };
        // The LID is 16 bits on InfiniBand (OPA's upper bits are dropped).
        // CAST: truncation intended.
        #[allow(clippy::cast_possible_truncation)]
        let lid = completion.slid() as u16;
        // Dropping the MAD (or the packet) on the way out frees it.
        let mut hdr = UserMadHdr {
            length,
            qpn: Be32::new(completion.src_qp()),
            lid: Be16::new(lid),
            sl: completion.sl(),
            path_bits: completion.dlid_path_bits(),
            pkey_index: completion.pkey_index(),
            ..UserMadHdr::default()
        };
        let Ok(route) = completion.route_back() else {
            return;
        };
        if let Some(route) = route {
            hdr.grh_present = 1;
            hdr.gid_index = route.sgid_index;
            hdr.hop_limit = route.hop_limit;
            hdr.traffic_class = route.traffic_class;
            hdr.gid = route.dgid;
            hdr.flow_label = Be32::new(route.flow_label);
        }
        let Ok(packet) = Packet::new_received(hdr, mad) else {
            return;
        };
        self.enqueue(agent, packet, true);
    }

    fn send_done(&self, agent: AgentId, outstanding: Outstanding, timed_out: bool) {
        // SAFETY: the file's agents post only sends that `write` put in
        // the file's table, and each completes once.
        let packet = unsafe { self.sends.lock().take(outstanding) };
        if let (true, Some(packet)) = (timed_out, packet) {
            // Reported if the agent is still the file's, under the id of
            // its slot; never dropped for the queue's length.
            self.enqueue(agent, packet, false);
        }
    }
}

/// Fills `out` from `input`: `EFAULT` if the IO vector ends first, which
/// it does at a fault, having given the bytes before it.
fn read_exact(input: &mut IovIterSource<'_>, out: &mut [u8]) -> Result {
    if input.copy_from_iter(out) == out.len() {
        Ok(())
    } else {
        Err(EFAULT)
    }
}
