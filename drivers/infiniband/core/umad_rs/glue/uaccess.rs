// SPDX-License-Identifier: GPL-2.0

//! User memory: a buffer read from its start ([`UserReader`]) or written
//! from its start ([`UserWriter`]), and single `u32`s ([`get_u32`],
//! [`put_u32`]), each access one call of the kernel's own `copy_from_user`,
//! `copy_to_user`, `get_user` or `put_user` (through the shim), as ib_umad
//! makes them. A read of a size fixed at build time into an array, or a
//! write of one from an array, calls `_copy_from_user` or `_copy_to_user`
//! itself, which is what C's inline `copy_from_user` and `copy_to_user`
//! come to for a constant size (`check_copy_size` then checks nothing).
//!
//! Upstream counterpart: `rust/kernel/uaccess.rs` (`UserSlice`), which
//! would replace this file once its accessors inline into modules: each of
//! its reads and writes is an out-of-line call of the `kernel` crate around
//! the C helper, and a `u32` goes through a whole copy (measured by
//! `tools/rig/trace.sh`: 30-60 instructions an access, on every read,
//! write and ioctl).

use super::bindings;
use core::mem::MaybeUninit;
use kernel::{
    ffi::{c_ulong, c_void},
    prelude::*,
};

/// The user address `addr` as the C helpers take it.
fn user_ptr<T>(addr: usize) -> *mut T {
    // CAST: a user address, which only the C helpers dereference, after
    // checking it.
    addr as *mut T
}

/// `len` bytes of user memory at `addr`, used from the start: what a
/// [`UserReader`] has left to read, or a [`UserWriter`] to write.
#[derive(Clone)]
struct UserRange {
    addr: usize,
    len: usize,
}

impl UserRange {
    /// Skips `n` bytes; `EFAULT` past the end.
    fn skip(&mut self, n: usize) -> Result {
        self.len = self.len.checked_sub(n).ok_or(EFAULT)?;
        self.addr = self.addr.wrapping_add(n);
        Ok(())
    }

    /// The next `len` bytes through `copy`, a C copy to or from user memory
    /// (given the user address and `len` as the count) that returns what
    /// it left uncopied; `EFAULT` past the end or for anything left.
    fn copy_next(&mut self, len: usize, copy: impl FnOnce(usize, c_ulong) -> c_ulong) -> Result {
        if len > self.len {
            return Err(EFAULT);
        }
        let n = c_ulong::try_from(len).map_err(|_| EFAULT)?;
        if copy(self.addr, n) != 0 {
            return Err(EFAULT);
        }
        self.skip(len)
    }
}

/// The user memory a `write(2)` or an ioctl gives to read, read from its
/// start.
#[derive(Clone)]
pub(crate) struct UserReader(UserRange);

impl UserReader {
    /// `len` bytes of user memory at `addr`; nothing is checked until an
    /// access, which fails with `EFAULT` where the memory is not the
    /// caller's.
    pub(crate) fn new(addr: usize, len: usize) -> Self {
        Self(UserRange { addr, len })
    }

    /// The bytes left to read.
    pub(crate) fn len(&self) -> usize {
        self.0.len
    }

    /// Skips `n` bytes; `EFAULT` past the end.
    pub(crate) fn skip(&mut self, n: usize) -> Result {
        self.0.skip(n)
    }

    /// Copies the next `len` bytes to `to`; `EFAULT` past the end or where
    /// the memory is not the caller's.
    ///
    /// # Safety
    ///
    /// `to` is valid for writes of `len` bytes.
    unsafe fn read_to(&mut self, to: *mut c_void, len: usize) -> Result {
        // SAFETY: `copy_next` copies `n` = `len` bytes, for which `to` is
        // writable (the caller's promise); `copy_from_user` checks the user
        // range itself, and fails on a bad one.
        self.0.copy_next(len, |from, n| unsafe {
            bindings::ib_umad_rs_copy_from_user(to, user_ptr(from), n)
        })
    }

    /// Fills the array `out` from the next bytes, as
    /// [`UserReader::read_slice`]: `copy_from_user` of a constant size,
    /// for which C skips hardened usercopy's check of the kernel object
    /// (`check_copy_size`), as `_copy_from_user` here does. The bounds of
    /// `out` are its type's.
    pub(crate) fn read_array<const N: usize>(&mut self, out: &mut [u8; N]) -> Result {
        // SAFETY: `copy_next` copies `n` = `N` bytes, for which `out` is
        // writable; `_copy_from_user` checks the user range itself, and
        // fails on a bad one.
        self.0.copy_next(N, |from, n| unsafe {
            bindings::_copy_from_user(out.as_mut_ptr().cast(), user_ptr(from), n)
        })
    }

    /// Fills `out` from the next bytes, as [`UserReader::read_slice`].
    pub(crate) fn read_raw(&mut self, out: &mut [MaybeUninit<u8>]) -> Result {
        // SAFETY: `out` is writable for its length.
        unsafe { self.read_to(out.as_mut_ptr().cast(), out.len()) }
    }

    /// Fills `out` from the next bytes; `EFAULT` past the end or where the
    /// memory is not the caller's.
    pub(crate) fn read_slice(&mut self, out: &mut [u8]) -> Result {
        // SAFETY: `out` is writable for its length.
        unsafe { self.read_to(out.as_mut_ptr().cast(), out.len()) }
    }
}

/// The user memory a `read(2)` gives to fill, written from its start.
pub(crate) struct UserWriter(UserRange);

impl UserWriter {
    /// `len` bytes of user memory at `addr`, as [`UserReader::new`].
    pub(crate) fn new(addr: usize, len: usize) -> Self {
        Self(UserRange { addr, len })
    }

    /// The bytes left to write.
    pub(crate) fn len(&self) -> usize {
        self.0.len
    }

    /// Writes `data` to the next bytes; `EFAULT` past the end or where the
    /// memory is not the caller's.
    pub(crate) fn write_slice(&mut self, data: &[u8]) -> Result {
        // SAFETY: `copy_next` copies `n` = `data.len()` bytes, which `data`
        // has; `copy_to_user` checks the user range itself, and fails on a
        // bad one.
        self.0.copy_next(data.len(), |to, n| unsafe {
            bindings::ib_umad_rs_copy_to_user(user_ptr(to), data.as_ptr().cast(), n)
        })
    }

    /// Writes the array `data` to the next bytes, as
    /// [`UserWriter::write_slice`]: `copy_to_user` of a constant size, for
    /// which C skips hardened usercopy's check of the kernel object
    /// (`check_copy_size`), as `_copy_to_user` here does. The bounds of
    /// `data` are its type's.
    pub(crate) fn write_array<const N: usize>(&mut self, data: &[u8; N]) -> Result {
        // SAFETY: `copy_next` copies `n` = `N` bytes, which `data` has;
        // `_copy_to_user` checks the user range itself, and fails on a bad
        // one.
        self.0.copy_next(N, |to, n| unsafe {
            bindings::_copy_to_user(user_ptr(to), data.as_ptr().cast(), n)
        })
    }
}

/// The `u32` at the user address `addr` (`get_user`); `EFAULT` where the
/// memory is not the caller's.
pub(crate) fn get_u32(addr: usize) -> Result<u32> {
    let mut value = 0;
    // SAFETY: `value` is writable; `get_user` checks the user address.
    let ret = unsafe { bindings::ib_umad_rs_get_user_u32(&mut value, user_ptr(addr)) };
    if ret == 0 {
        Ok(value)
    } else {
        Err(EFAULT)
    }
}

/// Writes `value` at the user address `addr` (`put_user`); `EFAULT` where
/// the memory is not the caller's.
pub(crate) fn put_u32(addr: usize, value: u32) -> Result {
    // SAFETY: `put_user` checks the user address.
    let ret = unsafe { bindings::ib_umad_rs_put_user_u32(value, user_ptr(addr)) };
    if ret == 0 {
        Ok(())
    } else {
        Err(EFAULT)
    }
}
