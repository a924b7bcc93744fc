// SPDX-License-Identifier: GPL-2.0

//! What differs between the `kernel` crates ib_umad_rs builds against.
//! Every version difference lives here, chosen by feature probes on the
//! kernel tree (see `Kbuild`), never by version numbers: stable kernels
//! carry backports.
//!
//! Upstream counterpart: none; this file shrinks as the oldest supported
//! kernel gains what it papers over.

use kernel::{
    error::Error,
    sync::lock::{mutex::MutexBackend, Guard},
};

/// A held `Mutex<T>`'s guard (7.x names it `kernel::sync::MutexGuard`).
pub(crate) type MutexGuard<'a, T> = Guard<'a, T, MutexBackend>;

/// `EOPNOTSUPP`, which 6.12's `kernel::error::code` lacks.
pub(crate) fn eopnotsupp() -> Error {
    Error::from_errno(-errno(kernel::bindings::EOPNOTSUPP))
}

/// `ETIMEDOUT` as a positive number, the status of a timeout report.
pub(crate) const ETIMEDOUT: u32 = kernel::bindings::ETIMEDOUT;

/// A positive errno constant of the bindings as a C int; errnos are small.
const fn errno(value: u32) -> i32 {
    assert!(value < 4096);
    // CAST: checked above to fit.
    #[allow(clippy::cast_possible_wrap)]
    let value = value as i32;
    value
}
