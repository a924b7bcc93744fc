// SPDX-License-Identifier: GPL-2.0

//! The C ib_umad's tracepoints (`ib_umad:ib_umad_write`, `ib_umad_read_recv`,
//! `ib_umad_read_send`), defined in C (`ib_umad_rs_trace.h`, created in
//! `ib_umad_rs_events.c`). In the kernel tree, where the kernel's bindings
//! carry them, the `kernel` crate's `declare_trace!` fires them: it checks
//! each tracepoint's key inline, a patched jump where the kernel has jump
//! labels. Out of tree, `declare_trace!` cannot reach them, and the
//! module's helpers check the key (`trace_*_enabled()`, as a C caller
//! would) and fire the event: a call and a return for an event nobody
//! enabled, asked before the event's record is put together; in the tree,
//! the 24-byte copy of the MAD header comes first.
//!
//! Upstream counterpart: `kernel::tracepoint::declare_trace!`.

use super::bindings;
use crate::rules::{mad::MAD_HDR_SIZE, uapi::UserMadHdr};

/// Which event.
#[derive(Clone, Copy)]
pub(crate) enum Event {
    /// A MAD written, as userspace wrote it.
    Write,
    /// A received MAD read.
    ReadRecv,
    /// A timeout report read.
    ReadSend,
}

/// Where an event happened: the IB device's index and the port's number.
#[derive(Clone, Copy)]
pub(crate) struct Origin {
    pub(crate) device_index: u32,
    pub(crate) port: u32,
}

const _: () = assert!(core::mem::size_of::<bindings::ib_mad_hdr>() == MAD_HDR_SIZE);

#[cfg(umad_rs_kernel_bindings)]
mod events {
    use super::bindings::{ib_mad_hdr, ib_user_mad_hdr};

    kernel::tracepoint::declare_trace! {
        /// # Safety
        ///
        /// `hdr` and `mad` are valid for reads.
        pub(super) unsafe fn ib_umad_write(
            dev_index: u32,
            port_num: u32,
            hdr: *const ib_user_mad_hdr,
            mad: *const ib_mad_hdr,
        );
        /// # Safety
        ///
        /// As for `ib_umad_write`.
        pub(super) unsafe fn ib_umad_read_recv(
            dev_index: u32,
            port_num: u32,
            hdr: *const ib_user_mad_hdr,
            mad: *const ib_mad_hdr,
        );
        /// # Safety
        ///
        /// As for `ib_umad_write`.
        pub(super) unsafe fn ib_umad_read_send(
            dev_index: u32,
            port_num: u32,
            hdr: *const ib_user_mad_hdr,
            mad: *const ib_mad_hdr,
        );
    }
}

/// Fires `event` for a MAD whose common header is `mad`, if anyone listens
/// (`declare_trace!`'s check comes after the 24-byte copy of the header).
#[cfg(umad_rs_kernel_bindings)]
pub(crate) fn emit(event: Event, origin: Origin, hdr: &UserMadHdr, mad: &[u8]) {
    let fire = match event {
        Event::Write => events::ib_umad_write,
        Event::ReadRecv => events::ib_umad_read_recv,
        Event::ReadSend => events::ib_umad_read_send,
    };
    let hdr = core::ptr::from_ref(hdr).cast();
    // SAFETY: `UserMadHdr` has `ib_user_mad_hdr`'s layout (asserted in
    // `bindings`); the MAD header is valid during the call.
    with_mad_hdr(mad, |mad| unsafe {
        fire(origin.device_index, origin.port, hdr, mad)
    });
}

/// Calls `f` with the common header of `mad` (zeroes past its end), copied
/// where the 8-byte alignment of its `tid` holds, which a byte slice lacks.
fn with_mad_hdr(mad: &[u8], f: impl FnOnce(*const bindings::ib_mad_hdr)) {
    let mut mad_hdr = bindings::ib_mad_hdr::default();
    let len = mad.len().min(MAD_HDR_SIZE);
    // SAFETY: `mad_hdr` is `MAD_HDR_SIZE` bytes, at least `len`.
    unsafe {
        core::ptr::copy_nonoverlapping(mad.as_ptr(), core::ptr::from_mut(&mut mad_hdr).cast(), len)
    };
    f(&mad_hdr);
}

/// Whether `event` has a probe attached.
#[cfg(not(umad_rs_kernel_bindings))]
fn is_enabled(event: Event) -> bool {
    let enabled = match event {
        Event::Write => bindings::trace_ib_umad_write_enabled,
        Event::ReadRecv => bindings::trace_ib_umad_read_recv_enabled,
        Event::ReadSend => bindings::trace_ib_umad_read_send_enabled,
    };
    // SAFETY: reads the tracepoint's key, which the module defines.
    unsafe { enabled() }
}

/// Fires `event` for a MAD whose common header is `mad`, if anyone listens.
#[cfg(not(umad_rs_kernel_bindings))]
pub(crate) fn emit(event: Event, origin: Origin, hdr: &UserMadHdr, mad: &[u8]) {
    if !is_enabled(event) {
        return;
    }
    let fire = match event {
        Event::Write => bindings::trace_ib_umad_write,
        Event::ReadRecv => bindings::trace_ib_umad_read_recv,
        Event::ReadSend => bindings::trace_ib_umad_read_send,
    };
    let hdr = core::ptr::from_ref(hdr).cast();
    // SAFETY: `UserMadHdr` has `ib_user_mad_hdr`'s layout (asserted in
    // `bindings`); the MAD header is valid during the call.
    with_mad_hdr(mad, |mad| unsafe {
        fire(origin.device_index, origin.port, hdr, mad)
    });
}
