// SPDX-License-Identifier: GPL-2.0

//! One `u32` in user memory, read or written in one access, as C's
//! `get_user` and `put_user` make it. The `kernel` crate's `UserSlice`,
//! which the driver uses for every other user copy, has no such access: a
//! `u32` through it is a copy of four bytes, which can write the first of
//! them and then fault where `put_user` writes all four or none (a value
//! across the end of what the caller may write), and costs a whole copy.
//!
//! Upstream counterpart: none; `rust/kernel/uaccess.rs` would have these as
//! `UserPtr` methods.

use super::bindings;
use kernel::prelude::*;

/// The user address `addr` as the C helpers take it.
fn user_ptr(addr: usize) -> *mut u32 {
    // CAST: a user address, which only the C helpers dereference, after
    // checking it.
    addr as *mut u32
}

/// The `u32` at the user address `addr` (`get_user`); `EFAULT` where the
/// memory is not the caller's.
pub(crate) fn get_u32(addr: usize) -> Result<u32> {
    let mut value = 0;
    // SAFETY: `value` is writable; `get_user` checks the user address.
    let ret = unsafe { bindings::get_user_u32(&mut value, user_ptr(addr)) };
    if ret == 0 {
        Ok(value)
    } else {
        Err(EFAULT)
    }
}

/// Writes `value` at the user address `addr` (`put_user`), all of it or
/// nothing; `EFAULT` where the memory is not the caller's.
pub(crate) fn put_u32(addr: usize, value: u32) -> Result {
    // SAFETY: `put_user` checks the user address.
    let ret = unsafe { bindings::put_user_u32(value, user_ptr(addr)) };
    if ret == 0 {
        Ok(())
    } else {
        Err(EFAULT)
    }
}
