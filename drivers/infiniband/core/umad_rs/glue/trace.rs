// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

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

/// The C entry point that fires `event`: `declare_trace!`'s in the tree,
/// which asks the key itself, the module's helper out of it.
#[cfg(umad_rs_kernel_bindings)]
fn tracepoint(event: Event) -> TracepointFn {
    match event {
        Event::Write => events::ib_umad_write,
        Event::ReadRecv => events::ib_umad_read_recv,
        Event::ReadSend => events::ib_umad_read_send,
    }
}

/// The C entry point that fires `event`.
#[cfg(not(umad_rs_kernel_bindings))]
fn tracepoint(event: Event) -> TracepointFn {
    match event {
        Event::Write => bindings::trace_ib_umad_write,
        Event::ReadRecv => bindings::trace_ib_umad_read_recv,
        Event::ReadSend => bindings::trace_ib_umad_read_send,
    }
}

/// What fires one of the events: `declare_trace!`'s Rust function.
#[cfg(umad_rs_kernel_bindings)]
type TracepointFn =
    unsafe fn(u32, u32, *const bindings::ib_user_mad_hdr, *const bindings::ib_mad_hdr);

/// What fires one of the events: a C helper.
#[cfg(not(umad_rs_kernel_bindings))]
type TracepointFn =
    unsafe extern "C" fn(u32, u32, *const bindings::ib_user_mad_hdr, *const bindings::ib_mad_hdr);

/// Fires `event` for a MAD whose common header is `mad`, if anyone listens.
/// Out of tree the key is asked first; in the tree `declare_trace!` asks
/// it, after the 24-byte copy of the header.
pub(crate) fn emit(event: Event, origin: Origin, hdr: &UserMadHdr, mad: &[u8]) {
    #[cfg(not(umad_rs_kernel_bindings))]
    if !is_enabled(event) {
        return;
    }
    let mut mad_hdr = bindings::ib_mad_hdr::default();
    let len = mad.len().min(MAD_HDR_SIZE);
    // SAFETY: `mad_hdr` is `MAD_HDR_SIZE` bytes, at least `len`; a copy
    // keeps the 8-byte alignment of its `tid` that a byte slice lacks.
    unsafe {
        core::ptr::copy_nonoverlapping(mad.as_ptr(), core::ptr::from_mut(&mut mad_hdr).cast(), len)
    };
    // SAFETY: `UserMadHdr` has `ib_user_mad_hdr`'s layout (asserted in
    // `bindings`); both pointers are valid for the call.
    unsafe {
        tracepoint(event)(
            origin.device_index,
            origin.port,
            core::ptr::from_ref(hdr).cast(),
            &mad_hdr,
        )
    };
}
