// SPDX-License-Identifier: GPL-2.0

//! Errors from C calls, told apart inline: error pointers
//! (`include/linux/err.h`) and negative returns.
//!
//! Upstream counterpart: `kernel::error::{from_err_ptr, to_result}`, which
//! would replace this file once they inline into modules: each is an
//! out-of-line call of the `kernel` crate (`from_err_ptr` calling a helper
//! for `IS_ERR`), made on every send a write posts (measured by
//! `tools/rig/trace.sh`).

use kernel::{ffi::c_int, prelude::*};

/// Error pointers are the last `MAX_ERRNO` addresses.
// CAST: 4095, which any address width holds.
const MAX_ERRNO: usize = kernel::bindings::MAX_ERRNO as usize;

/// `ptr`, or the errno it encodes (`IS_ERR`, `PTR_ERR`).
#[inline]
pub(crate) fn from_err_ptr<T>(ptr: *mut T) -> Result<*mut T> {
    // CAST: the address alone, compared as `IS_ERR_VALUE` compares it.
    let addr = ptr as usize;
    if addr > usize::MAX - MAX_ERRNO {
        // CAST: truncation intended: -4095..=-1, which an int holds.
        #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap)]
        let errno = addr as i32;
        Err(Error::from_errno(errno))
    } else {
        Ok(ptr)
    }
}

/// `Ok` for a call that returned zero or more, its errno otherwise.
#[inline]
pub(crate) fn to_result(ret: c_int) -> Result {
    if ret < 0 {
        Err(Error::from_errno(ret))
    } else {
        Ok(())
    }
}
