// SPDX-License-Identifier: GPL-2.0

//! A wait queue that blocking reads sleep on and `poll` registers with
//! (`struct wait_queue_head`), which 6.12's `kernel` crate does not offer:
//! its `CondVar` cannot be polled, and it sleeps with a lock held by the
//! waiter's guard. Shaped like mainline's `PollCondVar`
//! (`rust/kernel/sync/poll.rs`), which can replace it.
//!
//! The queue must outlive every `poll` registration on it: keep it in the
//! state of the file that is polled, which the VFS frees only after
//! epoll and select have let go of the file.

use crate::{bindings, chardev::File};
use core::pin::pin;
use kernel::{
    ffi::c_int,
    prelude::*,
    str::CStr,
    sync::LockClassKey,
    types::Opaque,
};

/// A `struct wait_queue_head`.
#[pin_data]
pub(crate) struct WaitQueue {
    #[pin]
    raw: Opaque<bindings::wait_queue_head>,
}

// SAFETY: a wait queue is meant to be used from any task; it has its own lock.
unsafe impl Send for WaitQueue {}
// SAFETY: as above.
unsafe impl Sync for WaitQueue {}

/// The `poll_table` a `poll` call passes in; may be null (no waiting).
pub(crate) struct PollTable(pub(crate) *mut bindings::poll_table_struct);

impl WaitQueue {
    pub(crate) fn new(name: &'static CStr, key: &'static LockClassKey) -> impl PinInit<Self> {
        pin_init!(Self {
            // SAFETY: `__init_waitqueue_head` initialises the pinned slot;
            // `name` and `key` are 'static, and `LockClassKey` is a
            // transparent `lock_class_key`.
            raw <- Opaque::ffi_init(|slot| unsafe {
                bindings::__init_waitqueue_head(
                    slot,
                    name.as_char_ptr(),
                    (key as *const LockClassKey).cast_mut().cast(),
                )
            }),
        })
    }

    /// Waits until `done` says so, or a signal arrives (`ERESTARTSYS`):
    /// `wait_event_interruptible`. `done` runs in an interruptible sleep
    /// state and so must not sleep: read atomics, take no mutex.
    pub(crate) fn wait_interruptible(&self, mut done: impl FnMut() -> bool) -> Result {
        if done() {
            return Ok(());
        }
        let entry = pin!(Opaque::<bindings::wait_queue_entry>::uninit());
        let queue = self.raw.get();
        // SAFETY: `entry` is pinned on this stack frame for the whole wait
        // and taken off the queue by `finish_wait` before it goes.
        unsafe { bindings::init_wait_entry(entry.get(), 0) };
        let result = loop {
            // SAFETY: the queue is initialised and `entry` is valid; this
            // queues the entry and sets the task's state before `done`
            // looks, so a wake-up between the two is not lost.
            let interrupted = unsafe {
                bindings::prepare_to_wait_event(queue, entry.get(), bindings::TASK_INTERRUPTIBLE as c_int)
            };
            if done() {
                break Ok(());
            }
            if interrupted != 0 {
                break Err(ERESTARTSYS);
            }
            // SAFETY: plain sleep until woken; no lock is held.
            unsafe { bindings::schedule() };
        };
        // SAFETY: as for `prepare_to_wait_event`.
        unsafe { bindings::finish_wait(queue, entry.get()) };
        result
    }

    /// Wakes everything sleeping in `wait_interruptible` or `poll`
    /// (`wake_up_interruptible`).
    pub(crate) fn wake_up(&self) {
        // SAFETY: the queue is initialised.
        unsafe {
            bindings::__wake_up(self.raw.get(), bindings::TASK_INTERRUPTIBLE, 1, core::ptr::null_mut())
        };
    }

    /// Registers `file`'s `poll` call with the queue (`poll_wait`).
    pub(crate) fn register(&self, file: &File, table: &PollTable) {
        // SAFETY: `file` is the file being polled and `table` its table;
        // the queue outlives the registration (see the module docs).
        unsafe { bindings::ib_umad_rs_poll_wait(file.as_raw(), self.raw.get(), table.0) };
    }
}

/// The poll bits umad reports.
pub(crate) mod poll_bits {
    use crate::bindings;

    pub(crate) const IN: u32 = bindings::IB_UMAD_RS_EPOLLIN | bindings::IB_UMAD_RS_EPOLLRDNORM;
    pub(crate) const OUT: u32 = bindings::IB_UMAD_RS_EPOLLOUT | bindings::IB_UMAD_RS_EPOLLWRNORM;
    pub(crate) const ERR: u32 = bindings::IB_UMAD_RS_EPOLLERR;
}
