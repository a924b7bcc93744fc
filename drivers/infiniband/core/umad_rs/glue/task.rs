// SPDX-License-Identifier: GPL-2.0

//! The calling task, as far as the driver looks at it.
//!
//! Upstream counterpart: `kernel::task::Task` (`rust/kernel/task.rs`),
//! which has no accessor for `comm` yet.

use super::{bindings, compat};
use kernel::str::CStr;

/// A copy of a task's name (`get_task_comm`): another thread of its
/// process may rename it at any time (`/proc/<pid>/task/<tid>/comm`),
/// writing the task's array while it is read.
pub(crate) struct TaskComm([u8; COMM_LEN]);

/// `TASK_COMM_LEN`.
// CAST: 16, in any `usize`.
#[allow(clippy::cast_possible_truncation)]
const COMM_LEN: usize = bindings::TASK_COMM_LEN as usize;

impl TaskComm {
    /// The calling task's name.
    pub(crate) fn current() -> Self {
        let mut comm = [0; COMM_LEN];
        // SAFETY: `comm` is valid for writes of `TASK_COMM_LEN` bytes;
        // `get_task_comm` fills it from the calling task, which lives
        // while it runs.
        unsafe { bindings::get_task_comm(&mut comm, kernel::bindings::get_current().cast()) };
        Self(comm.map(|c: kernel::ffi::c_char| c.to_ne_bytes()[0]))
    }

    pub(crate) fn as_c_str(&self) -> &CStr {
        compat::cstr_until_nul(&self.0)
    }
}
