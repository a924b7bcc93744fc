// SPDX-License-Identifier: GPL-2.0

//! Rate limits for messages a program can provoke at will, as C's
//! `printk_ratelimited()` and `dev_notice_ratelimited()` have them: a
//! static `struct ratelimit_state` per place, checked by the kernel's
//! `__ratelimit()`.
//!
//! C header: [`include/linux/ratelimit.h`](srctree/include/linux/ratelimit.h)
//!
//! Upstream counterpart: none in the `kernel` crate.

use super::bindings;
use core::sync::atomic::{AtomicU8, Ordering};
#[cfg(umad_rs_core_cstr)]
use kernel::str::CStrExt;
use kernel::{str::CStr, types::Opaque};

/// `state` is not initialized, and nobody is initializing it.
const UNINIT: u8 = 0;
/// A caller is initializing `state`.
const INITIALIZING: u8 = 1;
/// `state` is initialized.
const READY: u8 = 2;

/// A message budget, to be a `static`: `DEFAULT_RATELIMIT_BURST` messages
/// (10) in each `DEFAULT_RATELIMIT_INTERVAL` (5 s). The kernel reports the
/// messages it held back, as "`<name>`: N callbacks suppressed", when the
/// next interval begins.
///
/// C's `DEFINE_RATELIMIT_STATE()` initializes the state statically, with a
/// lock initializer that has no `const` form in Rust: this one is
/// initialized by its first use (`ratelimit_default_init()`). A use that
/// races that one is refused, and not counted as held back.
///
/// # Examples
///
/// ```
/// use kernel::{c_str, print::ratelimit::RateLimit};
///
/// static LIMIT: RateLimit = RateLimit::new();
/// let name = c_str!("rust_doctest_ratelimit");
/// let allowed = (0..20).filter(|_| LIMIT.allow(name)).count();
/// // Twenty tries in far less than an interval: the burst goes through.
/// assert_eq!(allowed, 10);
/// ```
///
/// # Invariants
///
/// `state` is initialized once `init` is `READY`, and only then used.
/// It is never moved after that: [`RateLimit::allow`] takes a `'static`
/// reference.
pub(crate) struct RateLimit {
    state: Opaque<bindings::ratelimit_state>,
    init: AtomicU8,
}

// SAFETY: the state is initialized by one caller, which `init` chooses,
// and then used only through `___ratelimit()`, which synchronizes its own
// accesses.
unsafe impl Sync for RateLimit {}

impl RateLimit {
    /// A budget with nothing spent. (No `Default`: only a `static` one is
    /// of use.)
    #[allow(clippy::new_without_default)]
    pub(crate) const fn new() -> Self {
        // INVARIANT: not initialized, and so not used yet.
        Self {
            state: Opaque::uninit(),
            init: AtomicU8::new(UNINIT),
        }
    }

    /// Spends a message: whether it may be printed now. `name` is what
    /// the kernel's count of held-back messages names (C's
    /// `__ratelimit()` passes its caller's function).
    pub(crate) fn allow(&'static self, name: &'static CStr) -> bool {
        if self.init.load(Ordering::Acquire) != READY && !self.initialize() {
            return false;
        }
        // SAFETY: the state is initialized (`init` is `READY`, read with
        // `Acquire` after the initializer's `Release`), and `name` is a
        // 'static C string.
        unsafe { bindings::___ratelimit(self.state.get(), name.as_char_ptr()) != 0 }
    }

    /// Initializes the state unless another caller does, or did: whether
    /// it is initialized now.
    fn initialize(&'static self) -> bool {
        match self
            .init
            .compare_exchange(UNINIT, INITIALIZING, Ordering::Relaxed, Ordering::Acquire)
        {
            Ok(_) => {
                // SAFETY: this caller alone moved `init` from `UNINIT`, so
                // nobody else touches the state; it is `'static` (see
                // `allow`), so it does not move once initialized.
                unsafe { bindings::ratelimit_default_init(self.state.get()) };
                // INVARIANT: initialized.
                self.init.store(READY, Ordering::Release);
                true
            }
            Err(READY) => true,
            Err(_) => false,
        }
    }
}
