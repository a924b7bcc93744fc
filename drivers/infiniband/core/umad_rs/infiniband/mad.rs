// SPDX-License-Identifier: GPL-2.0

//! Safe wrappers over the kernel MAD layer (`include/rdma/ib_mad.h`):
//! agents, the MADs they send and receive, and address handles.
//!
//! Ownership is in the types. An [`Agent`] is one registration, undone on
//! drop; it holds its handler and a handle to its device. A [`SendMad`]
//! borrows its agent and is either dropped (freed) or
//! posted, after which the MAD layer owns it until the send completes:
//! then this module frees it and hands the sender back the context it
//! posted it with. A [`ReceivedMad`] is a completed receive the handler
//! owns; dropping it gives its buffers back.

use super::DeviceHandle;
use crate::glue::bindings;
use core::{marker::PhantomData, mem::MaybeUninit, ops::Range, ptr::NonNull};
use kernel::{
    error::{from_err_ptr, to_result},
    ffi::{c_int, c_void},
    prelude::*,
    sync::Arc,
    types::Opaque,
};

/// The two MAD QPs of a port.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum QpType {
    /// QP0, subnet management (`IB_QPT_SMI`).
    Smi,
    /// QP1, general services (`IB_QPT_GSI`).
    Gsi,
}

/// Which MADs an agent receives unsolicited: the MAD layer's own
/// `struct ib_mad_reg_req`, made once from what the client asks and
/// passed on as it is.
#[repr(transparent)]
pub(crate) struct RegRequest(bindings::ib_mad_reg_req);

impl RegRequest {
    /// MADs of `mgmt_class` version `class_version` (and `oui`, for a
    /// vendor class that has one) whose method has its bit `m` set in
    /// `method_mask`.
    pub(crate) fn new(
        mgmt_class: u8,
        class_version: u8,
        oui: [u8; 3],
        method_mask: [u64; 2],
    ) -> Self {
        let mut raw = bindings::ib_mad_reg_req {
            mgmt_class,
            mgmt_class_version: class_version,
            oui,
            ..Default::default()
        };
        let bits = core::mem::size_of::<kernel::ffi::c_ulong>() * 8;
        for (i, word) in raw.method_mask.iter_mut().enumerate() {
            let (which, shift) = ((i * bits) / 64, (i * bits) % 64);
            // CAST: truncation intended: a 32-bit word takes its 32 bits.
            #[allow(clippy::cast_possible_truncation)]
            let bits = (method_mask[which] >> shift) as kernel::ffi::c_ulong;
            *word = bits;
        }
        Self(raw)
    }
}

/// What a sender attaches to each MAD it posts, and gets back when the
/// send completes.
pub(crate) trait SendContext: Sized + Send {
    /// The context as the pointer the MAD layer keeps with the MAD.
    fn into_raw(self) -> *mut c_void;

    /// # Safety
    ///
    /// `ptr` came from `into_raw` of this type and is taken back once.
    unsafe fn from_raw(ptr: *mut c_void) -> Self;
}

/// An agent's callbacks. The MAD layer calls them in process context,
/// never after the agent's registration is dropped.
///
/// # Deadlocks
///
/// A callback must not drop an [`Agent`] of its port, its own included:
/// the drop waits for the port's MAD work, which the callback is part of,
/// and for the agent's callbacks to return.
pub(crate) trait MadHandler: Send + Sync + Sized + 'static {
    /// What the agent's sender attaches to each MAD it posts.
    type SendContext: SendContext;

    /// A MAD arrived for `agent`: unsolicited, or a response to one of its
    /// requests. `completion` describes it, only during this call.
    fn received(&self, agent: AgentId, mad: ReceivedMad, completion: &RecvCompletion<'_>);

    /// A send of `agent` completed; `timed_out` if it was a request whose
    /// response did not come in time (`IB_WC_RESP_TIMEOUT_ERR`). The MAD
    /// and its address handle are freed already.
    fn send_done(&self, agent: AgentId, context: Self::SendContext, timed_out: bool);
}

/// Which agent a callback is about: comparable, not usable. The address
/// is only compared, never dereferenced, so it may outlive its agent.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct AgentId(*const bindings::ib_mad_agent);

// SAFETY: only an address, never dereferenced.
unsafe impl Send for AgentId {}
// SAFETY: as above.
unsafe impl Sync for AgentId {}

/// A registered `struct ib_mad_agent`, never borrowed whole: the MAD layer
/// writes some of its fields while it is registered (`smp_allowed` when
/// the security policy changes, the security list's links as other agents
/// come and go). The fields read here are set before registration returns
/// and never written again; each is read alone, through a raw pointer.
///
/// # Invariants
///
/// The agent is registered while a `&RawAgent` exists.
#[repr(transparent)]
struct RawAgent(Opaque<bindings::ib_mad_agent>);

impl RawAgent {
    /// # Safety
    ///
    /// `ptr` is a registered agent that stays registered during `'a`.
    unsafe fn from_raw<'a>(ptr: *mut bindings::ib_mad_agent) -> &'a Self {
        // INVARIANT: the caller's promise, for `'a`.
        // SAFETY: `RawAgent` is a transparent wrapper of `ib_mad_agent`,
        // and the caller guarantees it is valid for `'a`.
        unsafe { &*ptr.cast() }
    }

    fn as_raw(&self) -> *mut bindings::ib_mad_agent {
        self.0.get()
    }

    /// The agent's half of every request's TID.
    fn hi_tid(&self) -> u32 {
        // SAFETY: registered (type invariants); `hi_tid` is set before
        // registration returns and never written again.
        unsafe { (*self.as_raw()).hi_tid }
    }

    /// The agent's IB device.
    fn device(&self) -> *mut bindings::ib_device {
        // SAFETY: as in `hi_tid`, for `device`.
        unsafe { (*self.as_raw()).device }
    }

    /// The agent's context.
    fn context(&self) -> *mut c_void {
        // SAFETY: as in `hi_tid`, for `context`.
        unsafe { (*self.as_raw()).context }
    }

    /// The agent's port on its device.
    fn port_num(&self) -> u32 {
        // SAFETY: as in `hi_tid`, for `port_num`.
        u32::from(unsafe { (*self.as_raw()).port_num })
    }
}

/// A registered MAD agent (`ib_register_mad_agent`); dropping it
/// unregisters it, which waits for its callbacks and flushes its sends.
/// It holds its handler, and a handle to its device, which keeps the IB
/// client's `remove` of the device, and so the MAD layer's ports, waiting
/// for it.
///
/// Two pointers, as a file has 32 slots of them: the handler is the
/// agent's context, as in C.
///
/// # Invariants
///
/// `raw` is a registered agent on the device of `_device`, whose context
/// is its handler, made by `Arc::into_raw` in `register`; the drop takes
/// it back once the agent is unregistered.
pub(crate) struct Agent<H: MadHandler> {
    raw: NonNull<bindings::ib_mad_agent>,
    _device: DeviceHandle,
    _handler: PhantomData<Arc<H>>,
}

// SAFETY: the MAD layer's functions may be called from any task.
unsafe impl<H: MadHandler> Send for Agent<H> {}
// SAFETY: as above; `&Agent` only reads fields fixed at registration
// (`RawAgent`).
unsafe impl<H: MadHandler> Sync for Agent<H> {}

impl<H: MadHandler> Agent<H> {
    /// Registers an agent on `port` of `device` for `qp`, with `handler`
    /// as its callbacks; `EINVAL` for a port the device does not have.
    /// Without a request the agent only sends.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn register(
        device: &DeviceHandle,
        port: u32,
        qp: QpType,
        request: Option<&RegRequest>,
        rmpp_version: u8,
        flags: u32,
        handler: Arc<H>,
    ) -> Result<Self> {
        if !device.ports().contains(&port) {
            return Err(EINVAL);
        }
        let request_ptr = request.map_or(core::ptr::null_mut(), |req| {
            core::ptr::from_ref(&req.0).cast_mut()
        });
        let qp_type = match qp {
            QpType::Smi => bindings::ib_qp_type_IB_QPT_SMI,
            QpType::Gsi => bindings::ib_qp_type_IB_QPT_GSI,
        };
        let context = Arc::into_raw(handler);
        // SAFETY: the device and its MAD ports are there while the handle
        // lives; the request lives across the call, which only reads it
        // (the MAD layer keeps a copy); the callbacks are this type's, and
        // the context lives until the agent is unregistered.
        let raw = unsafe {
            bindings::ib_register_mad_agent(
                device.as_raw(),
                port,
                qp_type,
                request_ptr,
                rmpp_version,
                Some(send_callback::<H>),
                Some(recv_callback::<H>),
                context.cast_mut().cast(),
                flags,
            )
        };
        let raw = match from_err_ptr(raw).and_then(|raw| NonNull::new(raw).ok_or(EINVAL)) {
            Ok(raw) => raw,
            Err(e) => {
                // SAFETY: no agent was registered with the context, which
                // is still only ours.
                drop(unsafe { Arc::from_raw(context) });
                return Err(e);
            }
        };
        // INVARIANT: registered just now on the handle's device, with the
        // handler as its context.
        Ok(Self {
            raw,
            _device: device.clone(),
            _handler: PhantomData,
        })
    }

    /// The agent's identity, as its handler's calls name it.
    pub(crate) fn id(&self) -> AgentId {
        AgentId(self.raw.as_ptr())
    }

    fn raw(&self) -> &RawAgent {
        // SAFETY: registered while `self` lives (type invariants).
        unsafe { RawAgent::from_raw(self.raw.as_ptr()) }
    }

    /// The agent's half of every request's TID.
    pub(crate) fn hi_tid(&self) -> u32 {
        self.raw().hi_tid()
    }

    /// Whether the MAD layer runs RMPP for this agent.
    pub(crate) fn kernel_rmpp(&self) -> bool {
        // SAFETY: registered by the type invariants.
        unsafe { bindings::ib_mad_kernel_rmpp_agent(self.raw.as_ptr()) != 0 }
    }

    /// An address handle for sends to `to` from this agent's port
    /// (`rdma_create_user_ah`); its errors pass through (a RoCE port
    /// without a GRH: `EINVAL`).
    pub(crate) fn address_handle(&self, to: &AddressVector) -> Result<AddressHandle<'_>> {
        let agent = self.raw();
        // All zeroes: no GRH, no GID attribute, type UNDEFINED until set
        // below.
        let mut attr = bindings::rdma_ah_attr::default();
        // The C setters, in the order ib_umad calls them.
        //
        // SAFETY: the agent's device is registered; `attr` is valid and the
        // setters only write it; `rdma_ah_set_dgid_raw` only reads the GID
        // it is given.
        unsafe {
            attr.type_ = bindings::rdma_ah_find_type(agent.device(), agent.port_num());
            bindings::rdma_ah_set_dlid(&mut attr, to.dlid.into());
            bindings::rdma_ah_set_sl(&mut attr, to.sl);
            bindings::rdma_ah_set_path_bits(&mut attr, to.path_bits);
            bindings::rdma_ah_set_port_num(&mut attr, agent.port_num());
            if let Some(grh) = &to.grh {
                bindings::rdma_ah_set_grh(
                    &mut attr,
                    core::ptr::null_mut(),
                    grh.flow_label,
                    grh.sgid_index,
                    grh.hop_limit,
                    grh.traffic_class,
                );
                bindings::rdma_ah_set_dgid_raw(&mut attr, grh.dgid.as_ptr().cast_mut().cast());
            }
        }
        // SAFETY: the agent's QP and its PD are valid while it is
        // registered; `attr` is initialised; no udata from the kernel.
        let ah = unsafe {
            bindings::rdma_create_user_ah(
                (*(*self.raw.as_ptr()).qp).pd,
                &mut attr,
                core::ptr::null_mut(),
            )
        };
        let ah = from_err_ptr(ah)?;
        // INVARIANT: made just now for this agent's port; the agent is
        // borrowed for the handle's lifetime.
        Ok(AddressHandle {
            raw: NonNull::new(ah).ok_or(EINVAL)?,
            agent: self.raw,
            _agent: PhantomData,
        })
    }

    /// A MAD to send to `ah` (`ib_create_send_mad`): `hdr_len` header bytes
    /// and `data_len` data bytes, zero-filled. Non-RMPP MADs over 256 bytes
    /// are refused with `EINVAL`, as is an address handle another agent
    /// made (for another port, or one that may go before the send ends).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn create_send<'a>(
        &'a self,
        ah: AddressHandle<'a>,
        remote_qpn: u32,
        pkey_index: u16,
        rmpp_active: bool,
        hdr_len: usize,
        data_len: usize,
        base_version: u8,
    ) -> Result<SendMad<'a, H>> {
        if ah.agent != self.raw {
            return Err(EINVAL);
        }
        let hdr = i32::try_from(hdr_len).map_err(|_| EINVAL)?;
        let data = i32::try_from(data_len).map_err(|_| EINVAL)?;
        // SAFETY: the agent is registered.
        let raw = unsafe {
            bindings::ib_create_send_mad(
                self.raw.as_ptr(),
                remote_qpn,
                pkey_index,
                rmpp_active.into(),
                hdr,
                data,
                kernel::bindings::GFP_KERNEL,
                base_version,
            )
        };
        let raw = NonNull::new(from_err_ptr(raw)?).ok_or(ENOMEM)?;
        // INVARIANT: made just now for this agent, not posted; `ah` is
        // checked above to be this agent's.
        Ok(SendMad {
            raw,
            ah,
            rmpp_active,
            _agent: PhantomData,
        })
    }
}

impl<H: MadHandler> Drop for Agent<H> {
    fn drop(&mut self) {
        let context = self.raw().context();
        // SAFETY: registered by the type invariants, on the device of
        // `_device`, which is dropped after this body, and whose MAD ports
        // are there while it lives. This waits for running callbacks and completes every
        // outstanding send (through `send_callback`) before returning.
        unsafe { bindings::ib_unregister_mad_agent(self.raw.as_ptr()) };
        // SAFETY: the context came from `Arc::into_raw` in `register`
        // (type invariants), and the MAD layer is done with it. The handle
        // goes after this, with the agent's fields.
        drop(unsafe { Arc::<H>::from_raw(context.cast()) });
    }
}

/// Where a MAD goes: a send's address fields.
pub(crate) struct AddressVector {
    /// The destination LID.
    pub(crate) dlid: u16,
    /// The service level.
    pub(crate) sl: u8,
    /// The source path bits, the low bits of the port's LID.
    pub(crate) path_bits: u8,
    /// The global route, for a MAD sent with a GRH.
    pub(crate) grh: Option<GlobalRoute>,
}

/// A GRH's fields: what is sent with a MAD, or came with one.
#[derive(Clone, Copy, Default)]
pub(crate) struct GlobalRoute {
    /// The flow label (20 bits).
    pub(crate) flow_label: u32,
    /// The index of the local GID in the port's table.
    pub(crate) sgid_index: u8,
    /// The hop limit.
    pub(crate) hop_limit: u8,
    /// The traffic class.
    pub(crate) traffic_class: u8,
    /// The remote GID.
    pub(crate) dgid: [u8; 16],
}

/// An address handle, destroyed on drop; it cannot outlive the agent
/// whose port it was made for, and only that agent sends with it.
///
/// # Invariants
///
/// `raw` was made by `rdma_create_user_ah` for the port of `agent`, an
/// agent registered for `'a`, and only this handle (or the send it goes
/// with) destroys it.
pub(crate) struct AddressHandle<'a> {
    raw: NonNull<bindings::ib_ah>,
    agent: NonNull<bindings::ib_mad_agent>,
    _agent: PhantomData<&'a ()>,
}

impl Drop for AddressHandle<'_> {
    fn drop(&mut self) {
        // SAFETY: made by `rdma_create_user_ah` and destroyed once; its
        // device is registered while the agent borrowed for `'a` is.
        unsafe {
            bindings::rdma_destroy_ah_user(
                self.raw.as_ptr(),
                bindings::rdma_destroy_ah_flags_RDMA_DESTROY_AH_SLEEPABLE,
                core::ptr::null_mut(),
            )
        };
    }
}

/// The data segments of a kernel-RMPP [`SendMad`], borrowed from it: each
/// in turn, from segment 1, to be filled. The MAD layer leaves them
/// uninitialised (but for the last one's pad).
///
/// # Invariants
///
/// `raw` is the send's buffer, ours until posted, whose segments each hold
/// `size` data bytes; `numbers` are segments of it, from the first not yet
/// handed out to its last.
pub(crate) struct SendSegments<'a> {
    raw: NonNull<bindings::ib_mad_send_buf>,
    numbers: Range<c_int>,
    size: usize,
    _send: PhantomData<&'a mut bindings::ib_mad_send_buf>,
}

impl SendSegments<'_> {
    /// Data bytes of each segment.
    pub(crate) fn size(&self) -> usize {
        self.size
    }
}

impl<'a> Iterator for SendSegments<'a> {
    type Item = &'a mut [MaybeUninit<u8>];

    fn next(&mut self) -> Option<Self::Item> {
        // INVARIANT: `number` leaves `numbers`, handed out once.
        let number = self.numbers.next()?;
        // SAFETY: by the type invariants the send is ours and `number` one
        // of its segments.
        let data = unsafe { bindings::ib_get_rmpp_segment(self.raw.as_ptr(), number) };
        let data = NonNull::new(data.cast::<MaybeUninit<u8>>())?;
        // SAFETY: the segment is `size` bytes, in the send's buffer, which
        // stays ours for `'a`; no other view of it is handed out, and
        // `MaybeUninit` lets it be uninitialised.
        Some(unsafe { core::slice::from_raw_parts_mut(data.as_ptr(), self.size) })
    }
}

/// A MAD being put together for sending; freed on drop unless posted.
///
/// # Invariants
///
/// `raw` was made by `ib_create_send_mad` for the agent borrowed for `'a`
/// and is not posted: it is ours until `post` or the drop, and `ah` is the
/// address handle it goes to.
pub(crate) struct SendMad<'a, H: MadHandler> {
    raw: NonNull<bindings::ib_mad_send_buf>,
    ah: AddressHandle<'a>,
    rmpp_active: bool,
    _agent: PhantomData<&'a Agent<H>>,
}

impl<H: MadHandler> SendMad<'_, H> {
    fn buf(&self) -> &bindings::ib_mad_send_buf {
        // SAFETY: allocated by `ib_create_send_mad` and ours until posted.
        unsafe { self.raw.as_ref() }
    }

    /// The MAD's first buffer: its header, and for a MAD without kernel
    /// RMPP its data too.
    pub(crate) fn mad(&mut self) -> &mut [u8] {
        let buf = self.buf();
        let len = if self.rmpp_active {
            buf.hdr_len
        } else {
            buf.hdr_len + buf.data_len
        };
        let len = usize::try_from(len).unwrap_or(0);
        // SAFETY: `ib_create_send_mad` allocated `hdr_len` bytes for an
        // RMPP send and a whole MAD (at least `hdr_len + data_len`, which
        // it checked) otherwise; `&mut self` makes this the only view.
        unsafe { core::slice::from_raw_parts_mut(buf.mad.cast::<u8>(), len) }
    }

    /// The data segments of a kernel-RMPP send, to be filled; `None` for
    /// another send. Their count and size are read once, for all of them.
    pub(crate) fn segments(&mut self) -> Option<SendSegments<'_>> {
        if !self.rmpp_active {
            return None;
        }
        let buf = self.buf();
        let size = usize::try_from(buf.seg_size).ok()?;
        // INVARIANT: its segments and their size, read just now; `&mut self`
        // keeps the send ours, and unchanged, while they are borrowed, and
        // none is handed out yet.
        Some(SendSegments {
            raw: self.raw,
            numbers: 1..buf.seg_count.saturating_add(1),
            size,
            _send: PhantomData,
        })
    }

    /// How long to wait for a response, and how often to resend.
    pub(crate) fn set_timeout(&mut self, timeout_ms: u32, retries: u32) {
        // SAFETY: the send is ours until posted.
        let buf = unsafe { self.raw.as_mut() };
        // CAST: bit for bit, as C's assignment to the `int` fields.
        #[allow(clippy::cast_possible_wrap)]
        let (timeout_ms, retries) = (timeout_ms as i32, retries as i32);
        buf.timeout_ms = timeout_ms;
        buf.retries = retries;
    }

    /// Posts the MAD (`ib_post_send_mad`). When it completes, the handler's
    /// `send_done` gets `context` back. On failure the MAD is freed and
    /// `context` returned with the error.
    pub(crate) fn post(
        self,
        context: H::SendContext,
    ) -> core::result::Result<(), (Error, H::SendContext)> {
        let raw = self.raw.as_ptr();
        let context = context.into_raw();
        // SAFETY: the send is ours; the MAD layer takes it, the address
        // handle and the context, and gives them to `send_callback`.
        let ret = unsafe {
            (*raw).ah = self.ah.raw.as_ptr();
            (*raw).context[0] = context;
            to_result(bindings::ib_post_send_mad(raw, core::ptr::null_mut()))
        };
        match ret {
            Ok(()) => {
                // The MAD layer owns them now.
                core::mem::forget(self);
                Ok(())
            }
            // SAFETY: not posted, so the context is still ours to take back.
            Err(e) => Err((e, unsafe { H::SendContext::from_raw(context) })),
        }
    }
}

impl<H: MadHandler> Drop for SendMad<'_, H> {
    fn drop(&mut self) {
        // SAFETY: allocated by `ib_create_send_mad`, not posted; the agent
        // it holds a reference to is registered for `'a`.
        unsafe { bindings::ib_free_send_mad(self.raw.as_ptr()) };
        // `ah` is destroyed after it, as it was made before.
    }
}

/// A received MAD, whole (an RMPP message is reassembled); its buffers go
/// back on drop. It needs neither its agent nor its device to live.
///
/// # Invariants
///
/// `raw` is a receive that the MAD layer handed to a receive handler, owned
/// by this value and freed only by its drop.
pub(crate) struct ReceivedMad {
    raw: NonNull<bindings::ib_mad_recv_wc>,
}

// SAFETY: owned buffers; `ib_free_recv_mad` may run in any task.
unsafe impl Send for ReceivedMad {}
// SAFETY: `&ReceivedMad` only reads the buffers.
unsafe impl Sync for ReceivedMad {}

impl ReceivedMad {
    fn wc(&self) -> &bindings::ib_mad_recv_wc {
        // SAFETY: ours until dropped.
        unsafe { self.raw.as_ref() }
    }

    /// The message's length: all segments' data plus the first header
    /// (`mad_len`).
    pub(crate) fn mad_len(&self) -> usize {
        usize::try_from(self.wc().mad_len).unwrap_or(0)
    }

    /// The size of each segment's MAD buffer.
    pub(crate) fn segment_size(&self) -> usize {
        self.wc().mad_seg_size
    }

    /// The MAD buffers in order, each `segment_size` bytes: one, or an
    /// RMPP message's segments.
    pub(crate) fn segments(&self) -> impl Iterator<Item = &[u8]> {
        let wc = self.raw.as_ptr();
        let size = self.segment_size();
        // SAFETY: `rmpp_list` heads a list of this receive's buffers, the
        // first being `recv_buf`, in segment order, which nobody changes
        // while we own the receive.
        let head = unsafe { core::ptr::addr_of_mut!((*wc).rmpp_list) };
        // SAFETY: as above.
        let mut next = unsafe { (*head).next };
        core::iter::from_fn(move || {
            if next == head || next.is_null() {
                return None;
            }
            // SAFETY: `next` is the `list` field, at offset 0, of an
            // `ib_mad_recv_buf` in the list; its MAD buffer is `size` bytes.
            unsafe {
                let buf = next.cast::<bindings::ib_mad_recv_buf>();
                next = (*next).next;
                let mad = (*buf).__bindgen_anon_1.mad.cast::<u8>();
                Some(core::slice::from_raw_parts(mad, size))
            }
        })
    }
}

impl Drop for ReceivedMad {
    fn drop(&mut self) {
        // SAFETY: handed to us by the receive handler, freed once.
        unsafe { bindings::ib_free_recv_mad(self.raw.as_ptr()) };
    }
}

/// How a MAD arrived (its work completion), during the receive handler.
///
/// # Invariants
///
/// `agent` is the agent the MAD arrived for, registered for `'a`; `wc` and
/// `grh` are the receive's work completion and GRH buffer, valid for `'a`.
pub(crate) struct RecvCompletion<'a> {
    agent: &'a RawAgent,
    /// The receive's own, which nothing else writes during the handler.
    wc: &'a bindings::ib_wc,
    grh: *const bindings::ib_grh,
}

impl RecvCompletion<'_> {
    /// Whether the receive completed without error.
    pub(crate) fn is_success(&self) -> bool {
        self.wc.status == bindings::ib_wc_status_IB_WC_SUCCESS
    }

    /// The sender's QP number.
    pub(crate) fn src_qp(&self) -> u32 {
        self.wc.src_qp
    }

    /// The sender's LID.
    pub(crate) fn slid(&self) -> u32 {
        self.wc.slid
    }

    /// The service level the MAD came on.
    pub(crate) fn sl(&self) -> u8 {
        self.wc.sl
    }

    /// The path bits of the LID the MAD was sent to.
    pub(crate) fn dlid_path_bits(&self) -> u8 {
        self.wc.dlid_path_bits
    }

    /// The index of the P_Key the MAD came with in the port's table.
    pub(crate) fn pkey_index(&self) -> u16 {
        self.wc.pkey_index
    }

    /// Whether the MAD came with a GRH.
    fn has_grh(&self) -> bool {
        i32::try_from(bindings::ib_wc_flags_IB_WC_GRH).is_ok_and(|grh| self.wc.wc_flags & grh != 0)
    }

    /// The route back to the sender, from the GRH it came with
    /// (`ib_init_ah_attr_from_wc`): remote GID, local GID index, ...;
    /// `None` for a MAD that came without a GRH.
    pub(crate) fn route_back(&self) -> Result<Option<GlobalRoute>> {
        if !self.has_grh() {
            return Ok(None);
        }
        let mut attr = bindings::rdma_ah_attr::default();
        // SAFETY: the agent is registered during its receive handler; `wc`
        // and `grh` are the completion's.
        to_result(unsafe {
            bindings::ib_init_ah_attr_from_wc(
                self.agent.device(),
                self.agent.port_num(),
                self.wc,
                self.grh,
                &mut attr,
            )
        })?;
        // SAFETY: `attr` was initialised above from a completion with a
        // GRH, so it has one.
        let route = unsafe {
            let grh = &*bindings::rdma_ah_read_grh(&attr);
            GlobalRoute {
                flow_label: grh.flow_label,
                sgid_index: grh.sgid_index,
                hop_limit: grh.hop_limit,
                traffic_class: grh.traffic_class,
                dgid: grh.dgid.raw,
            }
        };
        // SAFETY: releases the GID attribute `ib_init_ah_attr_from_wc` took.
        unsafe { bindings::rdma_destroy_ah_attr(&mut attr) };
        Ok(Some(route))
    }
}

/// `ib_mad_agent.recv_handler`.
///
/// # Safety
///
/// Called by the MAD layer for an agent `Agent::<H>::register` made, with a
/// receive the handler now owns.
unsafe extern "C" fn recv_callback<H: MadHandler>(
    agent: *mut bindings::ib_mad_agent,
    _send_buf: *mut bindings::ib_mad_send_buf,
    recv_wc: *mut bindings::ib_mad_recv_wc,
) {
    // SAFETY: the context is the handler, held by the agent while it is
    // registered (the `Agent` invariants), which it is during its callbacks.
    let handler = unsafe { &*(*agent).context.cast::<H>() };
    // SAFETY: the agent is registered during its callbacks; the work
    // completion and GRH belong to the receive and are valid during this
    // call (the work completion may not be after it).
    // INVARIANT: so they are for the completion's lifetime, this call's.
    let completion = unsafe {
        RecvCompletion {
            agent: RawAgent::from_raw(agent),
            wc: &*(*recv_wc).wc,
            grh: (*recv_wc).recv_buf.grh,
        }
    };
    // SAFETY: the receive is ours to free, and is not null.
    let raw = unsafe { NonNull::new_unchecked(recv_wc) };
    // INVARIANT: the receive handler owns the receive; it passes it on.
    let mad = ReceivedMad { raw };
    handler.received(AgentId(agent), mad, &completion);
}

/// `ib_mad_agent.send_handler`.
///
/// # Safety
///
/// Called by the MAD layer once for each MAD that `SendMad::post` posted
/// for an agent `Agent::<H>::register` made.
unsafe extern "C" fn send_callback<H: MadHandler>(
    agent: *mut bindings::ib_mad_agent,
    send_wc: *mut bindings::ib_mad_send_wc,
) {
    // SAFETY: as in `recv_callback`.
    let handler = unsafe { &*(*agent).context.cast::<H>() };
    // SAFETY: `send_wc` describes one of our posted sends, now complete:
    // its buffer, address handle and context are ours again.
    let (timed_out, context) = unsafe {
        let buf = (*send_wc).send_buf;
        let timed_out = (*send_wc).status == bindings::ib_wc_status_IB_WC_RESP_TIMEOUT_ERR;
        let context = H::SendContext::from_raw((*buf).context[0]);
        // INVARIANT: the send's handle, made for this agent's port, ours
        // again and destroyed here, during the callback.
        let ah = AddressHandle {
            raw: NonNull::new_unchecked((*buf).ah),
            agent: NonNull::new_unchecked(agent),
            _agent: PhantomData,
        };
        bindings::ib_free_send_mad(buf);
        drop(ah);
        (timed_out, context)
    };
    handler.send_done(AgentId(agent), context, timed_out);
}
