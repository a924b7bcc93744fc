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
const COMM_LEN: usize = core::mem::size_of::<bindings::ib_umad_rs_comm>();

impl TaskComm {
    /// The calling task's name.
    pub(crate) fn current() -> Self {
        let mut comm = bindings::ib_umad_rs_comm::default();
        // SAFETY: `comm` is valid for writes; `get_task_comm` fills it.
        unsafe { bindings::ib_umad_rs_get_current_comm(&mut comm) };
        Self(comm.name.map(|c| c.to_ne_bytes()[0]))
    }

    pub(crate) fn as_c_str(&self) -> &CStr {
        compat::cstr_until_nul(&self.0)
    }
}
