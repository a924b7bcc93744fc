// SPDX-License-Identifier: GPL-2.0

//! The C ib_umad's tracepoints (`ib_umad:ib_umad_write`, `ib_umad_read_recv`,
//! `ib_umad_read_send`), defined in C (`ib_umad_rs_trace.h`, with
//! `CREATE_TRACE_POINTS` in `shim.c`) and fired through the shim. Whether
//! anyone listens is the shim's `trace_*_enabled()`, the tracepoint's key
//! as a C caller checks it (a patched jump where the kernel has jump
//! labels), asked before the event's record is put together: an event
//! nobody enabled costs a call and a return.
//!
//! Upstream counterpart: `kernel::tracepoint::declare_trace!` (6.13+,
//! `rust/kernel/tracepoint.rs`), which checks a C-declared tracepoint's
//! `static_key` inline, patched where the kernel has jump labels; it would
//! replace this file and the shim's calls.

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

/// Whether `event` has a probe attached.
fn is_enabled(event: Event) -> bool {
    let enabled = match event {
        Event::Write => bindings::ib_umad_rs_trace_write_enabled,
        Event::ReadRecv => bindings::ib_umad_rs_trace_read_recv_enabled,
        Event::ReadSend => bindings::ib_umad_rs_trace_read_send_enabled,
    };
    // SAFETY: reads the tracepoint's key, which the module defines.
    unsafe { enabled() }
}

/// Fires `event` for a MAD whose common header is `mad`, if anyone listens.
pub(crate) fn emit(event: Event, origin: Origin, hdr: &UserMadHdr, mad: &[u8]) {
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
    let fire = match event {
        Event::Write => bindings::ib_umad_rs_trace_write,
        Event::ReadRecv => bindings::ib_umad_rs_trace_read_recv,
        Event::ReadSend => bindings::ib_umad_rs_trace_read_send,
    };
    // SAFETY: `UserMadHdr` has `ib_user_mad_hdr`'s layout (asserted in
    // `bindings`); both pointers are valid for the call.
    unsafe {
        fire(
            origin.device_index,
            origin.port,
            core::ptr::from_ref(hdr).cast(),
            &mad_hdr,
        )
    };
}
