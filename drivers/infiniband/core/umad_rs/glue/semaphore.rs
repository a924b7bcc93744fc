// SPDX-License-Identifier: GPL-2.0

//! Semaphores (`struct semaphore`).
//!
//! C header: [`include/linux/semaphore.h`](srctree/include/linux/semaphore.h).
//!
//! Taking one does not return a guard: a semaphore is for a hold that is
//! not a scope, such as one that lasts from a file's open to its release;
//! whoever took it gives it back with [`Semaphore::up`].
//!
//! Upstream counterpart: none yet; 6.12's and 7.3's `kernel` crates have no
//! semaphore.

use super::bindings;
use kernel::{error::to_result, prelude::*, types::Opaque};

/// A binary semaphore, free when made.
///
/// # Examples
///
/// ```
/// use kernel::sync::semaphore::Semaphore;
///
/// let sem = KBox::pin_init(Semaphore::new(), GFP_KERNEL)?;
/// assert!(sem.try_down());
/// assert!(!sem.try_down());
/// sem.up();
/// sem.down_interruptible()?;
/// sem.up();
/// # Ok::<(), Error>(())
/// ```
///
/// # Invariants
///
/// `raw` is initialised (by `sema_init`) and pinned.
#[pin_data]
pub(crate) struct Semaphore {
    #[pin]
    raw: Opaque<bindings::semaphore>,
}

// SAFETY: `struct semaphore` is meant to be shared between tasks.
unsafe impl Send for Semaphore {}
// SAFETY: as above.
unsafe impl Sync for Semaphore {}

impl Semaphore {
    /// A new semaphore, free.
    pub(crate) fn new() -> impl PinInit<Self> {
        // INVARIANT: initialised in place, and pinned.
        pin_init!(Self {
            // SAFETY: `sema_init` initialises the pinned slot.
            raw <- Opaque::ffi_init(|slot| unsafe { bindings::sema_init(slot, 1) }),
        })
    }

    /// Takes it if free; whether it did (`down_trylock`).
    pub(crate) fn try_down(&self) -> bool {
        // SAFETY: initialised, by the type invariants.
        unsafe { bindings::down_trylock(self.raw.get()) == 0 }
    }

    /// Waits until it is free and takes it; `EINTR` if a signal comes
    /// first (`down_interruptible`).
    pub(crate) fn down_interruptible(&self) -> Result {
        // SAFETY: initialised, by the type invariants.
        to_result(unsafe { bindings::down_interruptible(self.raw.get()) })
    }

    /// Gives back what `try_down` or `down_interruptible` took.
    pub(crate) fn up(&self) {
        // SAFETY: initialised, by the type invariants.
        unsafe { bindings::up(self.raw.get()) };
    }
}
