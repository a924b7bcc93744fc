// SPDX-License-Identifier: GPL-2.0

//! Indexing that speculation cannot take past a bound
//! (`include/linux/nospec.h`).
//!
//! Upstream counterpart: none yet.

use super::bindings;

/// `index` if it is below `size`, else 0, also under speculation
/// (`array_index_nospec`): for an index userspace chose.
pub(crate) fn array_index_nospec(index: u32, size: u32) -> u32 {
    // SAFETY: plain arithmetic on two integers.
    unsafe { bindings::ib_umad_rs_array_index_nospec(index, size) }
}
