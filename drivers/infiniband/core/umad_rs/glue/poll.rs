// SPDX-License-Identifier: GPL-2.0

//! A wait queue that blocking reads sleep on and `poll` registers with
//! (`struct wait_queue_head`), which 6.12's `kernel` crate does not offer:
//! its `CondVar` cannot be polled, and it sleeps with a lock held by the
//! waiter's guard.
//!
//! Upstream counterpart: `PollCondVar` and `PollTable`
//! (`rust/kernel/sync/poll.rs`). `PollCondVar` makes registration safe
//! anywhere by waiting for an RCU grace period when it is dropped; that
//! would put a grace period in every close of a umad file, so this queue
//! asks its user instead (see [`WaitQueue::register`]).

use super::{bindings, compat, fs::File};
use core::pin::pin;
use kernel::{ffi::c_int, prelude::*, str::CStr, sync::LockClassKey, types::Opaque};

/// `TASK_INTERRUPTIBLE`, as `prepare_to_wait_event` takes it.
const TASK_INTERRUPTIBLE: c_int = {
    assert!(bindings::TASK_INTERRUPTIBLE <= 0x7fff_ffff);
    // CAST: checked above to fit.
    #[allow(clippy::cast_possible_wrap)]
    let state = bindings::TASK_INTERRUPTIBLE as c_int;
    state
};

/// A `struct wait_queue_head`.
///
/// # Invariants
///
/// `raw` is initialised (by `__init_waitqueue_head`) and pinned.
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
    pub(crate) fn new(name: &'static CStr, key: compat::StaticLockClass) -> impl PinInit<Self> {
        // INVARIANT: initialised in place, and pinned.
        pin_init!(Self {
            // SAFETY: `__init_waitqueue_head` initialises the pinned slot;
            // `name` and `key` are 'static, and `LockClassKey` is a
            // transparent `lock_class_key`.
            raw <- Opaque::ffi_init(|slot| unsafe {
                bindings::__init_waitqueue_head(
                    slot,
                    name.as_char_ptr(),
                    core::ptr::from_ref::<LockClassKey>(&*key).cast_mut().cast(),
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
            let interrupted =
                unsafe { bindings::prepare_to_wait_event(queue, entry.get(), TASK_INTERRUPTIBLE) };
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
            bindings::__wake_up(
                self.raw.get(),
                bindings::TASK_INTERRUPTIBLE,
                1,
                core::ptr::null_mut(),
            )
        };
    }

    /// Registers `file`'s `poll` call with the queue (`poll_wait`).
    ///
    /// # Safety
    ///
    /// The queue outlives every registration: epoll and select keep the
    /// entry until they let go of the file, which is before its `release`.
    /// A queue owned by the file's state (`FileOps::Ptr`), which goes in
    /// `release` at the earliest, does.
    pub(crate) unsafe fn register(&self, file: &File, table: &PollTable) {
        // SAFETY: `file` is the file being polled and `table` its table;
        // the queue outlives the registration, as the caller promises.
        unsafe { compat::poll_wait(file.as_raw(), self.raw.get(), table.0) };
    }
}

/// The poll bits umad reports.
pub(crate) mod poll_bits {
    use crate::glue::bindings;

    pub(crate) const IN: u32 = bindings::EPOLLIN | bindings::EPOLLRDNORM;
    pub(crate) const OUT: u32 = bindings::EPOLLOUT | bindings::EPOLLWRNORM;
    pub(crate) const ERR: u32 = bindings::EPOLLERR;
}
