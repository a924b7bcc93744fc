// SPDX-License-Identifier: GPL-2.0

//! An open `umadN`: its MAD agents, its receive queue, and what read,
//! write, poll and the ioctls do with them.
//!
//! Locks, outermost first: the port's (`Port::state`, ib_umad's
//! `file_mutex`), the file's (`state`), the send table (`sends`). Agents
//! are dropped (unregistered) only with the port's lock held and never with
//! the file's: unregistering waits for the agent's handlers, which take the
//! file's lock. Holding the port's lock makes every agent go before the
//! port's `kill` returns, hence before the IB device goes.

use crate::{
    chardev::File,
    ib_mad::{Agent, AgentId, AddressVector, GlobalRoute, MadHandler, QpType, RecvCompletion, ReceivedMad, RegRequest},
    mad::{MadStart, SendLayout, RMPP_HDR_END},
    packet::{Body, Packet, PacketBox, PacketList},
    port::Port,
    sends::{Outstanding, SendTable},
    slots::{Slots, MAX_AGENTS},
    trace,
    uapi::{self, Be16, Be32, HdrLayout, Ioctl, RegReq, RegReq2, UserMadHdr},
    wait::{poll_bits, PollTable, WaitQueue},
};
use core::{
    mem::{offset_of, size_of},
    sync::atomic::{AtomicBool, AtomicUsize, Ordering},
};
use kernel::{
    c_str,
    new_mutex, new_spinlock,
    prelude::*,
    sync::{Arc, ArcBorrow, Mutex, SpinLock},
    uaccess::{UserSlice, UserSliceReader, UserSliceWriter},
};

/// `MAX_UMAD_RECV_LIST_SIZE`: received MADs a file queues before it drops
/// new ones. Timeout reports are always queued.
const MAX_QUEUED: usize = 200_000;

/// One open `umadN`.
#[pin_data]
pub(crate) struct UmadFile {
    port: Arc<Port>,
    #[pin]
    state: Mutex<FileState>,
    /// Outstanding sends, for the duplicate check.
    #[pin]
    sends: SpinLock<SendTable>,
    /// Readers and pollers wait here.
    #[pin]
    wait: WaitQueue,
    /// `state.received`'s length (changed under `state`), for the receive
    /// limit and the lockless readiness checks of `poll` and a blocked
    /// read.
    queued: AtomicUsize,
    /// Set (under `state`) when the port's device went away or the file is
    /// closing: its agents are gone from their slots then, and nothing
    /// more is queued.
    dead: AtomicBool,
    /// Whether the file uses the 64-byte header (set under `state`).
    new_layout: AtomicBool,
}

/// What the file's lock protects.
pub(crate) struct FileState {
    /// Empty once the file is dead.
    agents: Slots<Agent<UmadFile>>,
    /// Whether an agent was registered: the header layout is fixed then.
    already_used: bool,
    received: PacketList,
}

/// A register ioctl's request, as far as the checks go.
struct AgentRequest {
    qpn: u32,
    flags: u32,
    /// Flags REGISTER_AGENT2 does not know.
    unknown_flags: u32,
    rmpp_version: u8,
    /// What to receive unsolicited: nothing (a send-only agent), or a
    /// class's MADs; `Err` with an OUI that does not fit in 24 bits.
    request: Option<core::result::Result<RegRequest, u32>>,
}

impl AgentRequest {
    fn read(arg: usize, which: Register) -> Result<Self> {
        Ok(match which {
            Register::V1 { compat } => {
                let mut raw = [0; size_of::<RegReq>()];
                UserSlice::new(arg, raw.len()).reader().read_slice(&mut raw)?;
                let req = RegReq::from_bytes(&raw);
                Self {
                    qpn: req.qpn.into(),
                    flags: 0,
                    unknown_flags: 0,
                    rmpp_version: req.rmpp_version,
                    request: (req.mgmt_class != 0).then(|| {
                        Ok(RegRequest {
                            mgmt_class: req.mgmt_class,
                            class_version: req.mgmt_class_version,
                            oui: req.oui,
                            method_mask: req.method_mask(compat),
                        })
                    }),
                }
            }
            Register::V2 => {
                let mut raw = [0; size_of::<RegReq2>()];
                UserSlice::new(arg, raw.len()).reader().read_slice(&mut raw)?;
                let req = RegReq2::from_bytes(&raw);
                Self {
                    qpn: req.qpn,
                    flags: req.flags,
                    unknown_flags: req.unknown_flags(),
                    rmpp_version: req.rmpp_version,
                    request: (req.mgmt_class != 0).then(|| {
                        let oui = req.oui_bytes().ok_or(req.oui)?;
                        Ok(RegRequest {
                            mgmt_class: req.mgmt_class,
                            class_version: req.mgmt_class_version,
                            oui,
                            method_mask: req.method_mask,
                        })
                    }),
                }
            }
        })
    }
}

/// Which register ioctl.
#[derive(Clone, Copy)]
enum Register {
    /// REGISTER_AGENT; `compat` from a 32-bit process.
    V1 { compat: bool },
    /// REGISTER_AGENT2.
    V2,
}

impl UmadFile {
    /// Opens `port`'s umad node: `ENXIO` once its device is gone, `EPERM`
    /// from another network namespace.
    pub(crate) fn open(port: ArcBorrow<'_, Port>) -> Result<Arc<Self>> {
        let mut port_state = port.state.lock();
        port_state.check_open()?;
        let sends = SendTable::new()?;
        let file: Arc<Self> = Arc::pin_init(
            pin_init!(Self {
                port: port.into(),
                state <- new_mutex!(FileState {
                    agents: Slots::new(),
                    already_used: false,
                    received: PacketList::new(),
                }),
                sends <- new_spinlock!(sends),
                wait <- WaitQueue::new(c_str!("umad_file"), kernel::static_lock_class!()),
                queued: AtomicUsize::new(0),
                dead: AtomicBool::new(false),
                new_layout: AtomicBool::new(false),
            }),
            GFP_KERNEL,
        )?;
        port_state.add_file(file.clone())?;
        Ok(file)
    }

    /// The last close: the agents go, and everything queued with them.
    pub(crate) fn close(self: &Arc<Self>) {
        let mut port_state = self.port.state.lock();
        let agents = {
            let mut state = self.state.lock();
            while state.received.pop_front().is_some() {}
            self.queued.store(0, Ordering::Relaxed);
            self.mark_dead(&mut state)
        };
        port_state.remove_file(self);
        drop(agents);
    }

    /// The port's device is going: the file's agents go with it, and
    /// waiters learn of it. The file stays open, and fails from now on.
    /// Called with the port's lock held.
    pub(crate) fn kill(&self) {
        let agents = self.mark_dead(&mut self.state.lock());
        drop(agents);
    }

    /// Marks the file dead, wakes its waiters, and hands back its agents,
    /// to be dropped once the file's lock is released.
    #[must_use]
    fn mark_dead(&self, state: &mut FileState) -> Slots<Agent<UmadFile>> {
        self.dead.store(true, Ordering::Release);
        self.wait.wake_up();
        core::mem::replace(&mut state.agents, Slots::new())
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

    /// `read(2)`: the next queued packet, after its umad header.
    pub(crate) fn read(&self, file: &File, out: UserSliceWriter) -> Result<usize> {
        let layout = self.layout();
        let count = out.len();
        if count < layout.size() {
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
            if file.is_nonblocking() {
                return Err(EAGAIN);
            }
            // Unlike ib_umad, device removal ends the wait too.
            self.wait.wait_interruptible(|| {
                self.queued.load(Ordering::Relaxed) > 0 || self.is_dead()
            })?;
        };
        let origin = self.port.trace_origin();
        let copied = packet.copy_out(out, count, layout, |event, hdr, mad| trace::emit(event, origin, hdr, mad));
        if copied.is_err() {
            // Nothing is lost: the packet goes back to the head.
            self.state.lock().received.push_front(packet);
            self.queued.fetch_add(1, Ordering::Relaxed);
        }
        copied
    }

    /// `poll(2)`: always writable; readable when something is queued; only
    /// an error once the device is gone.
    ///
    /// Unlike ib_umad it takes no lock: registering with the wait queue
    /// takes the queue's lock, which `enqueue` and `mark_dead` take to wake
    /// it after changing what is read here, so either this sees the change
    /// or the change wakes this.
    pub(crate) fn poll(&self, file: &File, table: &PollTable) -> u32 {
        self.wait.register(file, table);
        if self.is_dead() {
            poll_bits::ERR
        } else if self.queued.load(Ordering::Relaxed) == 0 {
            poll_bits::OUT
        } else {
            poll_bits::OUT | poll_bits::IN
        }
    }

    /// `write(2)`: one MAD to send, after its umad header.
    pub(crate) fn write(&self, input: UserSliceReader) -> Result<usize> {
        let layout = self.layout();
        let hdr_size = layout.size();
        let count = input.len();
        if count < hdr_size + RMPP_HDR_END {
            return Err(EINVAL);
        }
        let mut input = input;
        // The old layout leaves `pkey_index` at zero.
        let mut hdr = UserMadHdr::default();
        input.read_slice(&mut hdr.as_bytes_mut()[..hdr_size])?;
        if hdr.id as usize >= MAX_AGENTS {
            return Err(EINVAL);
        }
        let user_mad = input.clone_reader();
        let mut start = MadStart([0; RMPP_HDR_END]);
        input.read_slice(&mut start.0)?;

        let state = self.state.lock();
        trace::emit(trace::Event::Write, self.port.trace_origin(), &hdr, &start.0);
        let agent = state.agents.get(hdr.id).ok_or(EIO)?;
        let ah = agent.address_handle(&AddressVector::from(&hdr))?;
        let kernel_rmpp = agent.kernel_rmpp();
        let plan = SendLayout::new(count, hdr_size, &start, kernel_rmpp).ok_or(EINVAL)?;
        let mut mad = start.hdr();
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
        // Requests carry the agent's half of the TID, so responses find it.
        if !mad.is_response() {
            mad.rewrite_tid(agent.hi_tid());
        }
        // The common header now; an RMPP header the kernel builds is there.
        if let Some(common) = send.mad().first_chunk_mut() {
            *common = mad.0;
        }
        let from = |offset: usize| -> Result<UserSliceReader> {
            let mut reader = user_mad.clone_reader();
            reader.skip(offset)?;
            Ok(reader)
        };
        if plan.rmpp_active {
            // The class header, then each segment's data.
            from(RMPP_HDR_END)?.read_slice(&mut send.mad()[RMPP_HDR_END..plan.hdr_len])?;
            for (number, offset, len) in plan.rmpp_segments(send.segment_size()) {
                let segment = send.segment(number).ok_or(EINVAL)?;
                from(offset)?.read_slice(&mut segment[..len])?;
            }
        } else {
            let end = plan.hdr_len + plan.data_len;
            from(plan.copy_offset)?.read_slice(&mut send.mad()[plan.copy_offset..end])?;
        }

        // The packet that keeps the send in the duplicate check, and may
        // become its timeout report.
        let mut packet = Packet::new(Body::Sent(mad))?;
        packet.hdr = hdr;
        // Userspace's own RMPP segments share a TID; they are not checked.
        let check = !start.is_user_rmpp(kernel_rmpp);
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
        if let Some(Ok(buckets)) = wanted.map(SendTable::empty_buckets) {
            self.sends.lock().grow(buckets);
        }
        Ok(count)
    }

    /// The umad ioctls; unknown ones are `ENOIOCTLCMD` (`ENOTTY`).
    pub(crate) fn ioctl(self: ArcBorrow<'_, Self>, cmd: u32, arg: usize, compat: bool) -> Result<isize> {
        match Ioctl::from_cmd(cmd) {
            Some(Ioctl::RegisterAgent) => self.register(arg, Register::V1 { compat }),
            Some(Ioctl::RegisterAgent2) => self.register(arg, Register::V2),
            Some(Ioctl::UnregisterAgent) => self.unregister(arg),
            Some(Ioctl::EnablePkey) => self.enable_pkey(),
            None => Err(ENOIOCTLCMD),
        }
        .map(|()| 0)
    }

    /// REGISTER_AGENT and REGISTER_AGENT2: a new agent in the lowest free
    /// slot, whose number goes back in the request's `id`. The checks and
    /// their order are ib_umad's.
    fn register(self: ArcBorrow<'_, Self>, arg: usize, which: Register) -> Result {
        let port_state = self.port.state.lock();
        let mut state = self.state.lock();
        let Some(device) = port_state.device() else {
            self.port.notice(format_args!("register_agent: invalid device\n"));
            return Err(EPIPE);
        };
        let req = AgentRequest::read(arg, which)?;
        if req.qpn > 1 {
            self.port.notice(format_args!("register_agent: invalid QPN {} specified\n", req.qpn));
            return Err(EINVAL);
        }
        if req.unknown_flags != 0 {
            self.port.notice(format_args!(
                "register_agent2: invalid registration flags specified {:#x}; supported {:#x}\n",
                req.flags,
                uapi::REG_FLAGS_CAP
            ));
            // Tell the caller what is supported.
            let at = arg + offset_of!(RegReq2, flags);
            UserSlice::new(at, 4).writer().write_slice(&uapi::REG_FLAGS_CAP.to_ne_bytes())?;
            return Err(EINVAL);
        }
        let Some(id) = state.agents.free_id() else {
            self.port.notice(format_args!("register_agent: Max Agents ({MAX_AGENTS}) reached\n"));
            return Err(ENOMEM);
        };
        let request = match req.request {
            None => None,
            Some(Err(oui)) => {
                self.port.notice(format_args!("register_agent2: oui invalid {oui:#010x}\n"));
                return Err(EINVAL);
            }
            Some(Ok(ref request)) => Some(request),
        };
        let qp = if req.qpn == 0 { QpType::Smi } else { QpType::Gsi };
        // SAFETY: the agent goes into this file's slots, from which it is
        // dropped only under the port's lock, before the port's `kill`
        // returns (see the module docs).
        let agent = unsafe {
            Agent::register(device, self.port.number, qp, request, req.rmpp_version, req.flags, self.into())
        }?;
        if let Err(e) = UserSlice::new(arg, 4).writer().write_slice(&id.to_ne_bytes()) {
            // Unregister without the file's lock: the agent's handlers take it.
            drop(state);
            drop(agent);
            return Err(e);
        }
        if !state.already_used {
            state.already_used = true;
            match which {
                Register::V2 => self.new_layout.store(true, Ordering::Relaxed),
                Register::V1 { .. } if self.layout() == HdrLayout::Old => self.port.warn_old_abi(),
                Register::V1 { .. } => {}
            }
        }
        state.agents.put(id, agent);
        Ok(())
    }

    /// UNREGISTER_AGENT.
    fn unregister(&self, arg: usize) -> Result {
        let mut raw = [0; 4];
        UserSlice::new(arg, 4).reader().read_slice(&mut raw)?;
        let id = u32::from_ne_bytes(raw);
        if id as usize >= MAX_AGENTS {
            return Err(EINVAL);
        }
        let _port_state = self.port.state.lock();
        let agent = {
            let mut state = self.state.lock();
            // No speculative read past the table with a wild id.
            // SAFETY: plain arithmetic on two integers.
            let id = unsafe { crate::bindings::ib_umad_rs_array_index_nospec(id, MAX_AGENTS as u32) };
            state.agents.take(id).ok_or(EINVAL)?
        };
        // Unregistered here: with the port's lock, without the file's.
        drop(agent);
        Ok(())
    }

    /// ENABLE_PKEY: the 64-byte header, unless an agent fixed the layout.
    fn enable_pkey(&self) -> Result {
        let state = self.state.lock();
        if state.already_used {
            return Err(EINVAL);
        }
        self.new_layout.store(true, Ordering::Relaxed);
        drop(state);
        Ok(())
    }

    /// Queues a packet for one of the file's agents, if it is still the
    /// file's: `packet` makes it, given the agent's id; `limit` drops
    /// received MADs beyond [`MAX_QUEUED`].
    fn enqueue(&self, agent: AgentId, packet: impl FnOnce(u32) -> PacketBox, limit: bool) {
        let mut state = self.state.lock();
        if limit && self.queued.load(Ordering::Relaxed) > MAX_QUEUED {
            return;
        }
        let Some(id) = state.agents.position(|a| a.id() == agent) else {
            return;
        };
        state.received.push_back(packet(id));
        self.queued.fetch_add(1, Ordering::Relaxed);
        self.wait.wake_up();
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

    fn received(this: ArcBorrow<'_, Self>, agent: AgentId, mad: ReceivedMad, completion: &RecvCompletion<'_>) {
        if !completion.is_success() {
            return;
        }
        let length = (this.layout().size() + mad.len()) as u32;
        // Dropping the packet on the way out frees the MAD.
        let Ok(mut packet) = Packet::new(Body::Received(mad)) else {
            return;
        };
        let hdr = &mut packet.hdr;
        hdr.length = length;
        hdr.qpn = Be32::new(completion.src_qp());
        // The LID is 16 bits on InfiniBand (OPA's upper bits are dropped).
        hdr.lid = Be16::new(completion.slid() as u16);
        hdr.sl = completion.sl();
        hdr.path_bits = completion.dlid_path_bits();
        hdr.pkey_index = completion.pkey_index();
        if completion.has_grh() {
            let Ok(route) = completion.route_back() else {
                return;
            };
            hdr.grh_present = 1;
            hdr.gid_index = route.sgid_index;
            hdr.hop_limit = route.hop_limit;
            hdr.traffic_class = route.traffic_class;
            hdr.gid = route.dgid;
            hdr.flow_label = Be32::new(route.flow_label);
        }
        this.enqueue(
            agent,
            move |id| {
                packet.hdr.id = id;
                packet
            },
            true,
        );
    }

    fn send_done(this: ArcBorrow<'_, Self>, agent: AgentId, outstanding: Outstanding, timed_out: bool) {
        // SAFETY: the file's agents post only sends that `write` put in
        // the file's table, and each completes once.
        let packet = unsafe { this.sends.lock().take(outstanding) };
        if timed_out {
            // Reported if the agent is still the file's; never dropped for
            // the queue's length.
            this.enqueue(agent, |_| packet, false);
        }
    }
}
