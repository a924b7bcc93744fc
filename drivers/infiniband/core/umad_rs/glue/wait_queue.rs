// SPDX-License-Identifier: GPL-2.0

//! A wait queue (`struct wait_queue_head`) that tasks sleep on, holding no
//! lock, until a condition holds, and that `poll` registers with.
//!
//! The crate's `CondVar`, `PollCondVar` among them, sleeps with a lock that
//! the waiter's guard holds. A file whose `read` waits as C's
//! `wait_event_interruptible()` does, before it takes any lock, and whose
//! `poll` registers with the same queue, wants the queue itself.
//!
//! # Examples
//!
//! ```
//! use kernel::sync::poll::wait_queue::WaitQueue;
//!
//! let queue = KBox::pin_init(
//!     WaitQueue::new(c"rust_doctest_wait_queue", kernel::static_lock_class!()),
//!     GFP_KERNEL,
//! )?;
//! // Nobody sleeps on it: a no-op.
//! queue.wake_up();
//! // The condition is checked again once the task is queued, so that a
//! // wake-up in between is not lost; here it holds then.
//! let mut checks = 0;
//! queue.wait_interruptible(|| {
//!     checks += 1;
//!     checks == 2
//! })?;
//! assert_eq!(checks, 2);
//! # Ok::<(), Error>(())
//! ```
//!
//! Upstream counterpart: `PollCondVar` and `PollTable`
//! (`rust/kernel/sync/poll.rs`, 7.x). `PollCondVar` is a `CondVar`, which
//! sleeps holding a lock, and `PollTable::register_wait` takes only that.

use super::bindings;
#[cfg(not(umad_rs_in_kernel_crate))]
use crate::glue::compat::LocalFile;
#[cfg(not(umad_rs_in_kernel_crate))]
use core::marker::PhantomData;
use core::pin::pin;
#[cfg(umad_rs_in_kernel_crate)]
use kernel::fs::LocalFile;
#[cfg(umad_rs_in_kernel_crate)]
use kernel::sync::poll::PollTable;
use kernel::{ffi::c_int, prelude::*, str::CStr, sync::LockClassKey, types::Opaque};

/// What `static_lock_class!()` gives: a pinned key where the crate pins it.
#[cfg(umad_rs_pinned_lock_class)]
type LockClass = core::pin::Pin<&'static LockClassKey>;
/// What `static_lock_class!()` gives.
#[cfg(not(umad_rs_pinned_lock_class))]
type LockClass = &'static LockClassKey;

/// `TASK_INTERRUPTIBLE`, as `prepare_to_wait_event` takes it.
const TASK_INTERRUPTIBLE: c_int = {
    assert!(bindings::TASK_INTERRUPTIBLE <= 0x7fff_ffff);
    // CAST: checked above to fit.
    #[allow(clippy::cast_possible_wrap)]
    let state = bindings::TASK_INTERRUPTIBLE as c_int;
    state
};

/// The `poll_table` a `poll` call passes in; null when the caller will not
/// wait. (The crate's `PollTable`, where its pointer is visible.)
#[cfg(not(umad_rs_in_kernel_crate))]
pub(crate) struct PollTable<'a> {
    table: *mut bindings::poll_table_struct,
    _table: PhantomData<&'a bindings::poll_table_struct>,
}

#[cfg(not(umad_rs_in_kernel_crate))]
impl PollTable<'_> {
    /// # Safety
    ///
    /// `table` is null or a valid `poll_table` for the lifetime.
    pub(crate) unsafe fn from_raw(table: *mut bindings::poll_table_struct) -> Self {
        Self {
            table,
            _table: PhantomData,
        }
    }
}

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

impl WaitQueue {
    /// An empty queue whose lock is named `name`, in the lock class `key`.
    pub(crate) fn new(name: &'static CStr, key: LockClass) -> impl PinInit<Self> {
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
    /// A queue owned by the file's state, which goes in `release` at the
    /// earliest, does.
    pub(crate) unsafe fn register(&self, file: &LocalFile, table: &PollTable<'_>) {
        #[cfg(umad_rs_poll_wait)]
        // SAFETY: `file` is the file being polled and `table` its table;
        // the queue outlives the registration, as the caller promises.
        unsafe {
            kernel::bindings::poll_wait(
                file.as_ptr().cast(),
                self.raw.get().cast(),
                table.table.cast(),
            )
        };
        #[cfg(not(umad_rs_poll_wait))]
        // SAFETY: as above.
        unsafe {
            bindings::poll_wait(file.as_ptr(), self.raw.get(), table.table)
        };
    }
}
