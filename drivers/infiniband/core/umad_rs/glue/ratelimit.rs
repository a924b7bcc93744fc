// SPDX-License-Identifier: GPL-2.0

//! Rate limits for messages a program can provoke at will, as
//! `printk_ratelimited` has them: at most `BURST` messages from one place
//! in each `INTERVAL`, and a count of the ones held back when the next
//! interval lets a message through.
//!
//! C header: [`include/linux/ratelimit.h`](srctree/include/linux/ratelimit.h),
//! whose `struct ratelimit_state` has an initialiser Rust cannot make
//! `const`, so the state here is Rust's own, with `__ratelimit`'s rules.
//!
//! Upstream counterpart: none in the `kernel` crate.

use super::bindings;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// `DEFAULT_RATELIMIT_BURST`: messages let through per interval.
const BURST: u32 = 10;

/// `DEFAULT_RATELIMIT_INTERVAL` (`5 * HZ`), in jiffies.
// CAST: a u32 widened; every target the kernel supports has a usize of 32
// bits or more.
const INTERVAL: usize = bindings::DEFAULT_RATELIMIT_INTERVAL as usize;

/// One place's message budget.
///
/// # Examples
///
/// ```
/// use kernel::print::ratelimit::{RateLimit, Verdict};
///
/// static LIMIT: RateLimit = RateLimit::new();
/// for _ in 0..10 {
///     assert!(matches!(LIMIT.check(), Verdict::Print { suppressed: 0 }));
/// }
/// assert!(matches!(LIMIT.check(), Verdict::Suppress));
/// ```
///
/// # Invariants
///
/// `start` is the jiffies at which the current interval began (0: none
/// yet); `printed` and `missed` count that interval's messages.
pub(crate) struct RateLimit {
    start: AtomicUsize,
    printed: AtomicU32,
    missed: AtomicU32,
}

/// What to do with one message.
pub(crate) enum Verdict {
    /// Print it.
    Print {
        /// How many messages were held back before it.
        suppressed: u32,
    },
    /// Hold it back.
    Suppress,
}

impl Default for RateLimit {
    fn default() -> Self {
        Self::new()
    }
}

impl RateLimit {
    /// A budget with no message counted yet.
    pub(crate) const fn new() -> Self {
        // INVARIANT: no interval yet.
        Self {
            start: AtomicUsize::new(0),
            printed: AtomicU32::new(0),
            missed: AtomicU32::new(0),
        }
    }

    /// Counts a message. Racing callers may let a message or two more
    /// through than `BURST`, as a log limit may.
    pub(crate) fn check(&self) -> Verdict {
        // SAFETY: the jiffies counter is always there. The timer interrupt
        // writes it, an aligned word, so a volatile read sees it old or new,
        // never torn: C's `READ_ONCE`, as `LocalFile::flags` reads `f_flags`.
        let now = unsafe { core::ptr::addr_of!(bindings::jiffies).read_volatile() };
        let start = self.start.load(Ordering::Relaxed);
        let mut suppressed = 0;
        if start == 0 || now.wrapping_sub(start) >= INTERVAL {
            // INVARIANT: a new interval, counted from nothing.
            if self
                .start
                .compare_exchange(start, now.max(1), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
            {
                self.printed.store(0, Ordering::Relaxed);
                suppressed = self.missed.swap(0, Ordering::Relaxed);
            }
        }
        if self.printed.fetch_add(1, Ordering::Relaxed) < BURST {
            Verdict::Print { suppressed }
        } else {
            self.missed.fetch_add(1, Ordering::Relaxed);
            Verdict::Suppress
        }
    }
}
