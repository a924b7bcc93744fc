// SPDX-License-Identifier: GPL-2.0

//! Indexing that speculation cannot take past a bound
//! (`include/linux/nospec.h`).
//!
//! Upstream counterpart: none yet.

use super::bindings;

/// `index` if it is below `size`, else 0, also under speculation
/// (`array_index_nospec`): for an index userspace chose.
pub(crate) fn array_index_nospec(index: u32, size: u32) -> u32 {
    // CAST: a `u32` in a `usize`, which is at least as wide on any target
    // with Rust support.
    let (index_in, size_in) = (index as usize, size as usize);
    // SAFETY: plain arithmetic on two integers.
    let index_out = unsafe { bindings::array_index_nospec(index_in, size_in) };
    // CAST: `index` or 0.
    #[allow(clippy::cast_possible_truncation)]
    let index_out = index_out as u32;
    index_out
}
