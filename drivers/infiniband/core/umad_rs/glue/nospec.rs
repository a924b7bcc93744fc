// SPDX-License-Identifier: GPL-2.0

//! Indexing that speculation cannot take past a bound
//! (`include/linux/nospec.h`).
//!
//! Upstream counterpart: none yet.

use super::bindings;

/// `index` if it is below `size`, else 0, also under speculation
/// (`array_index_nospec`): for an index that userspace chose, after the
/// bounds check, so that no speculative access goes past the bound.
///
/// # Examples
///
/// ```
/// use kernel::nospec::array_index_nospec;
///
/// let table = [10, 20, 30];
/// let index = 2; // from userspace
/// assert!(index < table.len());
/// assert_eq!(table[array_index_nospec(index, table.len())], 30);
/// assert_eq!(array_index_nospec(3, table.len()), 0);
/// ```
#[inline]
pub(crate) fn array_index_nospec(index: usize, size: usize) -> usize {
    // SAFETY: plain arithmetic on two integers.
    unsafe { bindings::array_index_nospec(index, size) }
}
