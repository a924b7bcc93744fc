// SPDX-License-Identifier: GPL-2.0

//! File operations: what the files of a [`Node`] do, as a [`FileOps`]
//! trait reached through generic `extern "C"` trampolines, with per-file
//! state kept as a [`ForeignOwnable`] in `file->private_data`. Optional
//! operations are left out of `file_operations` unless implemented
//! (`#[vtable]`), so the VFS answers them as for a C driver without them.
//! Every file is a stream (`stream_open`): no seeking, no `pread` or
//! `pwrite`, no file position. Operations get the file as a [`LocalFile`],
//! which is not sent to other threads: a stream's read or write runs
//! inside an `fdget_pos` that took no `f_pos_lock` (a stream has no
//! `FMODE_ATOMIC_POS`), on this thread and maybe on others sharing the
//! file. `File`'s invariant excludes the first; `LocalFile`'s, which
//! asks the others' absence too, is about the position such a region
//! may change without the lock, which a stream does not have.
//!
//! Upstream counterpart: `rust/kernel/miscdevice.rs` (`MiscDevice`, 7.x),
//! which registers on the misc major only and has no `poll`.

use super::Node;
use crate::glue::bindings;
#[cfg(not(umad_rs_in_kernel_crate))]
use crate::glue::compat::LocalFile;
#[cfg(not(umad_rs_in_kernel_crate))]
use crate::glue::compat::PollTable;
use core::marker::PhantomData;
#[cfg(umad_rs_in_kernel_crate)]
use kernel::fs::LocalFile;
#[cfg(umad_rs_in_kernel_crate)]
use kernel::sync::poll::PollTable;
use kernel::{
    device::Device,
    ffi::{c_char, c_int, c_long, c_uint, c_ulong, c_void},
    prelude::*,
    sync::ArcBorrow,
    types::{ForeignOwnable, Opaque},
    uaccess::{UserSlice, UserSliceReader, UserSliceWriter},
};

/// The `EPOLL*` bits a [`FileOps::poll`] returns.
pub(crate) mod poll_bits {
    use crate::glue::bindings;

    /// `EPOLLIN`: there is data to read.
    pub(crate) const IN: u32 = bindings::EPOLLIN;
    /// `EPOLLRDNORM`: as `IN`, for normal data.
    pub(crate) const RDNORM: u32 = bindings::EPOLLRDNORM;
    /// `EPOLLOUT`: a write would not block.
    pub(crate) const OUT: u32 = bindings::EPOLLOUT;
    /// `EPOLLWRNORM`: as `OUT`, for normal data.
    pub(crate) const WRNORM: u32 = bindings::EPOLLWRNORM;
    /// `EPOLLERR`: the file cannot be used any more.
    pub(crate) const ERR: u32 = bindings::EPOLLERR;
}

/// What a file operation gets of the file's state.
pub(crate) type FileData<'a, T> = <<T as FileOps>::Ptr as ForeignOwnable>::Borrowed<'a>;

/// What the files of a [`Node`] do: a subset of `file_operations`.
#[vtable]
pub(crate) trait FileOps: Sized + 'static {
    /// The object that owns the node; the node's `struct device` holds a
    /// reference to it.
    type Owner: Send + Sync;
    /// Per-file state, from `open` until `release`.
    type Ptr: ForeignOwnable + Send + Sync;

    /// A file is being opened on a node of `owner`, whose device is
    /// `device` (an `ARef` of it keeps it past the call).
    fn open(
        owner: ArcBorrow<'_, Self::Owner>,
        device: &Device,
        file: &LocalFile,
    ) -> Result<Self::Ptr>;

    /// The last reference to the file is gone.
    fn release(data: Self::Ptr, file: &LocalFile);

    /// `read(2)` into `buf`; returns how many bytes it wrote there.
    fn read(_data: FileData<'_, Self>, _file: &LocalFile, _buf: UserSliceWriter) -> Result<usize> {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// `write(2)` from `buf`; returns how many bytes it took.
    fn write(_data: FileData<'_, Self>, _file: &LocalFile, _buf: UserSliceReader) -> Result<usize> {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// `poll(2)` and friends: the `EPOLL*` bits that hold now, after
    /// registering with every wait queue that will signal a change.
    fn poll(_data: FileData<'_, Self>, _file: &LocalFile, _table: &PollTable<'_>) -> u32 {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// `ioctl(2)`; `compat` when the caller is a 32-bit process. Unknown
    /// commands answer `ENOIOCTLCMD`, which userspace sees as `ENOTTY`.
    fn ioctl(
        _data: FileData<'_, Self>,
        _file: &LocalFile,
        _cmd: u32,
        _arg: usize,
        _compat: bool,
    ) -> Result<i32> {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }
}

/// The `file_operations` of `T`'s nodes, with the module as owner so that
/// the module stays loaded while a file is open.
///
/// # Invariants
///
/// `raw` holds `T`'s trampolines, and only the operations `T` implements;
/// it is never written after construction.
pub(crate) struct FileOperations<T: FileOps> {
    raw: Opaque<bindings::file_operations>,
    _ops: PhantomData<T>,
}

// SAFETY: read-only after construction.
unsafe impl<T: FileOps> Sync for FileOperations<T> {}
// SAFETY: as above.
unsafe impl<T: FileOps> Send for FileOperations<T> {}

impl<T: FileOps> FileOperations<T> {
    /// The operations of `T`'s files, owned by `module` (the calling
    /// module's `THIS_MODULE`), which stays loaded while a file is open.
    pub(crate) const fn new(module: &'static ThisModule) -> Self {
        // SAFETY: all zeroes is a valid `file_operations`: no callbacks.
        let mut raw: bindings::file_operations = unsafe { core::mem::zeroed() };
        raw.owner = module.as_ptr().cast();
        raw.open = Some(open_callback::<T>);
        raw.release = Some(release_callback::<T>);
        if T::HAS_READ {
            raw.read = Some(read_callback::<T>);
        }
        if T::HAS_WRITE {
            raw.write = Some(write_callback::<T>);
        }
        if T::HAS_POLL {
            raw.poll = Some(poll_callback::<T>);
        }
        if T::HAS_IOCTL {
            raw.unlocked_ioctl = Some(ioctl_callback::<T>);
            raw.compat_ioctl = Some(compat_ioctl_callback::<T>);
        }
        // INVARIANT: `T`'s trampolines, as `T` implements them.
        Self {
            raw: Opaque::new(raw),
            _ops: PhantomData,
        }
    }

    pub(super) fn as_raw(&self) -> *mut bindings::file_operations {
        self.raw.get()
    }
}

/// `file_operations.open`.
///
/// # Safety
///
/// Called by the VFS for an inode of a node added with `T`'s operations.
unsafe extern "C" fn open_callback<T: FileOps>(
    inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: the inode is a char device inode whose `i_cdev` is a node's
    // cdev (chrdev_open set it), and the cdev reference chrdev_open holds
    // keeps the node's device, hence its owner, alive during the call.
    let (owner, device) = unsafe { Node::of_cdev::<T::Owner>(inode_cdev(inode)) };
    // SAFETY: the VFS passes a valid file for the duration of `open`, on
    // this thread.
    let f = unsafe { LocalFile::from_raw_file(file.cast_const().cast()) };
    match T::open(owner, device, f) {
        Ok(data) => {
            // SAFETY: `file` is valid and not yet shared; `release_callback`
            // takes the data back. stream_open makes the file a stream.
            unsafe {
                // `*const` from 6.12's `into_foreign`, `*mut` (coerced) from 7.x's.
                let foreign: *const c_void = data.into_foreign();
                (*file).private_data = foreign.cast_mut();
                bindings::stream_open(inode, file)
            }
        }
        Err(e) => e.to_errno(),
    }
}

/// `file_operations.release`.
///
/// # Safety
///
/// Called by the VFS once for every file whose `open_callback` succeeded.
unsafe extern "C" fn release_callback<T: FileOps>(
    _inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: `private_data` came from `into_foreign` in `open_callback`
    // and is taken back only here.
    let data = unsafe { T::Ptr::from_foreign((*file).private_data) };
    // SAFETY: the file is valid during `release`, which runs when no
    // `fdget_pos` holds it.
    T::release(data, unsafe {
        LocalFile::from_raw_file(file.cast_const().cast())
    });
    0
}

/// The state of a file whose `open_callback` succeeded.
///
/// # Safety
///
/// `file` is such a file, valid for `'a` (the VFS holds it during every
/// file operation), and the operation's own (see the module's
/// documentation for the `fdget_pos` regions it may run in).
unsafe fn file_data<'a, T: FileOps>(file: *mut bindings::file) -> (FileData<'a, T>, &'a LocalFile) {
    // SAFETY: `private_data` came from `into_foreign` in `open_callback`,
    // and `release_callback`, which takes it back, runs only after the last
    // operation on the file; the `LocalFile` stays on this thread, with
    // the operation, and nothing reads or writes a stream's position.
    unsafe {
        (
            T::Ptr::borrow((*file).private_data),
            LocalFile::from_raw_file(file.cast_const().cast()),
        )
    }
}

/// `file_operations.read`.
///
/// # Safety
///
/// Called by the VFS on a file that `open_callback::<T>` opened.
unsafe extern "C" fn read_callback<T: FileOps>(
    file: *mut bindings::file,
    buf: *mut c_char,
    count: usize,
    _pos: *mut bindings::loff_t,
) -> isize {
    // SAFETY: the VFS calls this for an open file of ours, on the thread
    // that holds it.
    let (data, file) = unsafe { file_data::<T>(file) };
    // The user pointer is checked by each copy, not trusted here.
    let buf = user_slice(buf as usize, count).writer();
    ssize(T::read(data, file, buf))
}

/// `file_operations.write`.
///
/// # Safety
///
/// Called by the VFS on a file that `open_callback::<T>` opened.
unsafe extern "C" fn write_callback<T: FileOps>(
    file: *mut bindings::file,
    buf: *const c_char,
    count: usize,
    _pos: *mut bindings::loff_t,
) -> isize {
    // SAFETY: the VFS calls this for an open file of ours, on the thread
    // that holds it.
    let (data, file) = unsafe { file_data::<T>(file) };
    let buf = user_slice(buf as usize, count).reader();
    ssize(T::write(data, file, buf))
}

/// `file_operations.poll`.
///
/// # Safety
///
/// Called by the VFS on a file that `open_callback::<T>` opened, with a
/// poll table that is valid or null.
unsafe extern "C" fn poll_callback<T: FileOps>(
    file: *mut bindings::file,
    table: *mut bindings::poll_table_struct,
) -> c_uint {
    // SAFETY: the VFS calls this for an open file of ours, on the thread
    // that holds it.
    let (data, file) = unsafe { file_data::<T>(file) };
    // SAFETY: the VFS passes a poll table that is valid or null during
    // the call.
    let table = unsafe { PollTable::from_raw(table) };
    T::poll(data, file, &table)
}

/// `len` bytes of user memory at `addr`, which each access checks: 7.x
/// takes the address as a `UserPtr`, 6.12 as a plain `usize`.
fn user_slice(addr: usize, len: usize) -> UserSlice {
    #[cfg(umad_rs_user_ptr_struct)]
    let ptr = kernel::uaccess::UserPtr::from_addr(addr);
    #[cfg(not(umad_rs_user_ptr_struct))]
    let ptr = addr;
    UserSlice::new(ptr, len)
}

/// `inode->i_cdev`, in an anonymous union of `struct inode`, one place
/// further down where the kernel has `i_linklen` in an anonymous union
/// before it.
///
/// # Safety
///
/// `inode` is a valid character device inode, whose union holds `i_cdev`.
unsafe fn inode_cdev(inode: *const bindings::inode) -> *mut bindings::cdev {
    #[cfg(umad_rs_inode_linklen)]
    // SAFETY: the caller's promise.
    let cdev = unsafe { (*inode).__bindgen_anon_5.i_cdev };
    #[cfg(not(umad_rs_inode_linklen))]
    // SAFETY: the caller's promise.
    let cdev = unsafe { (*inode).__bindgen_anon_4.i_cdev };
    cdev
}

/// What `read` and `write` return: a count, or a negative errno. Counts
/// are at most the `count` the VFS passed, itself at most `MAX_RW_COUNT`.
fn ssize(result: Result<usize>) -> isize {
    result
        .and_then(|n| isize::try_from(n).map_err(|_| EINVAL))
        .unwrap_or_else(errno)
}

/// What `ioctl` returns: a value, or a negative errno.
fn ioctl_result(result: Result<i32>) -> c_long {
    // CAST: an int widened to a long, which holds it.
    result.unwrap_or_else(|e| e.to_errno()) as c_long
}

/// A negative errno as a `ssize_t`.
fn errno(e: Error) -> isize {
    // CAST: an int widened to a pointer-sized int, which holds it.
    e.to_errno() as isize
}

/// `file_operations.unlocked_ioctl`.
///
/// # Safety
///
/// Called by the VFS on a file that `open_callback::<T>` opened.
unsafe extern "C" fn ioctl_callback<T: FileOps>(
    file: *mut bindings::file,
    cmd: c_uint,
    arg: c_ulong,
) -> c_long {
    // SAFETY: the VFS calls this for an open file of ours, on the thread
    // that holds it.
    let (data, file) = unsafe { file_data::<T>(file) };
    ioctl_result(T::ioctl(data, file, cmd, arg, false))
}

/// `file_operations.compat_ioctl`: a 32-bit process's ioctl. Its pointer
/// argument is zero-extended already, so it is used as it is
/// (`compat_ptr` is the identity on the architectures Rust builds for).
///
/// # Safety
///
/// Called by the VFS on a file that `open_callback::<T>` opened.
unsafe extern "C" fn compat_ioctl_callback<T: FileOps>(
    file: *mut bindings::file,
    cmd: c_uint,
    arg: c_ulong,
) -> c_long {
    // SAFETY: the VFS calls this for an open file of ours, on the thread
    // that holds it.
    let (data, file) = unsafe { file_data::<T>(file) };
    ioctl_result(T::ioctl(data, file, cmd, arg, true))
}
