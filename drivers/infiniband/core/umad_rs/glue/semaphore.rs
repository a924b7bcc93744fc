// SPDX-License-Identifier: GPL-2.0

//! A counting semaphore (`struct semaphore`), which 6.12's `kernel` crate
//! lacks. ib_umad uses one per port to let a single IsSM holder in: the
//! holder is whoever opened issmN and has not closed it yet, which is not a
//! scope, so taking it does not return a guard.
//!
//! Upstream counterpart: none yet.

use crate::glue::bindings;
use kernel::{prelude::*, types::Opaque};

/// A binary semaphore, free when made.
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
    pub(crate) fn new() -> impl PinInit<Self> {
        // INVARIANT: initialised in place, and pinned.
        pin_init!(Self {
            // SAFETY: `sema_init` initialises the pinned slot.
            raw <- Opaque::ffi_init(|slot| unsafe { bindings::sema_init(slot, 1) }),
        })
    }

    /// Takes it if free; `EAGAIN` otherwise.
    pub(crate) fn try_down(&self) -> Result {
        // SAFETY: initialised, by the type invariants.
        match unsafe { bindings::down_trylock(self.raw.get()) } {
            0 => Ok(()),
            _ => Err(EAGAIN),
        }
    }

    /// Waits until it is free and takes it; `ERESTARTSYS` if a signal
    /// comes first.
    pub(crate) fn down_interruptible(&self) -> Result {
        // SAFETY: initialised, by the type invariants.
        match unsafe { bindings::down_interruptible(self.raw.get()) } {
            0 => Ok(()),
            _ => Err(ERESTARTSYS),
        }
    }

    /// Gives back what `try_down` or `down_interruptible` took.
    pub(crate) fn up(&self) {
        // SAFETY: initialised, by the type invariants.
        unsafe { bindings::up(self.raw.get()) };
    }
}
