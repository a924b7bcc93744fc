// SPDX-License-Identifier: GPL-2.0

//! Warnings about what must not happen (`include/asm-generic/bug.h`).
//!
//! Upstream counterpart: `rust/kernel/bug.rs`'s `warn_on!` (7.x; 6.12 has
//! none), which `compat::warn_here!` uses where the kernel has it; it has
//! no once variant, which this file adds.

/// `WARN_ON_ONCE(cond)`: warns the first time `cond` holds at this place,
/// and returns `cond`.
macro_rules! warn_on_once {
    ($cond:expr) => {{
        use core::sync::atomic::{AtomicBool, Ordering};
        static WARNED: AtomicBool = AtomicBool::new(false);
        let cond: bool = $cond;
        if cond && !WARNED.swap(true, Ordering::Relaxed) {
            $crate::glue::compat::warn_here!();
        }
        cond
    }};
}
pub(crate) use warn_on_once;
