// SPDX-License-Identifier: GPL-2.0

//! The calling task, as far as the driver looks at it.
//!
//! Upstream counterpart: `kernel::task::Task` (`rust/kernel/task.rs`),
//! which has no accessor for `comm` yet.

use super::{bindings, compat};
use kernel::str::CStr;

/// Calls `f` with the calling task's name (`current->comm`), for a message
/// about it. The name is borrowed for the call only: the task may go later.
pub(crate) fn with_current_comm<R>(f: impl FnOnce(&CStr) -> R) -> R {
    // SAFETY: `current->comm` is a NUL-terminated array inside the calling
    // task, which outlives this call; `f` cannot keep the borrow.
    f(unsafe { compat::cstr_from_char_ptr(bindings::ib_umad_rs_current_comm()) })
}
