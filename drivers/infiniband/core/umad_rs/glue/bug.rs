// SPDX-License-Identifier: GPL-2.0

//! Warnings about what must not happen (`include/asm-generic/bug.h`).
//!
//! Upstream counterpart: `rust/kernel/bug.rs`'s `warn_on!` (7.x; 6.12 has
//! none), which has no once variant; a `warn_on_once!` there would replace
//! this file.

use super::bindings;

/// `WARN_ON(true)`: a warning with a backtrace, and the `W` taint.
#[inline(never)]
#[cold]
pub(crate) fn warn() {
    // SAFETY: `WARN_ON` only logs and taints.
    unsafe { bindings::ib_umad_rs_WARN_ON(true) };
}

/// `WARN_ON_ONCE(cond)`: warns the first time `cond` holds at this place,
/// and returns `cond`.
macro_rules! warn_on_once {
    ($cond:expr) => {{
        use core::sync::atomic::{AtomicBool, Ordering};
        static WARNED: AtomicBool = AtomicBool::new(false);
        let cond: bool = $cond;
        if cond && !WARNED.swap(true, Ordering::Relaxed) {
            $crate::glue::bug::warn();
        }
        cond
    }};
}
pub(crate) use warn_on_once;
