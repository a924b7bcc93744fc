// SPDX-License-Identifier: GPL-2.0

//! File operations: what the files of a [`Node`] do, as a [`FileOps`]
//! trait reached through generic `extern "C"` trampolines, with per-file
//! state kept as a [`ForeignOwnable`] in `file->private_data`, in the shape
//! of [`MiscDevice`](kernel::miscdevice::MiscDevice)'s: `read_iter` and
//! `write_iter` get a [`Kiocb`] and an IO vector, the other operations the
//! [`File`]. Optional operations are left out of `file_operations` unless
//! implemented (`#[vtable]`), so the VFS answers them as for a C driver
//! without them. Every file is a stream (`stream_open`): no seeking, no
//! `pread` or `pwrite`, no file position.
//!
//! A read or write runs inside an `fdget_pos` region, which `File`'s
//! invariant excludes, and which takes no `f_pos_lock` on a character
//! device (only regular files and directories have `FMODE_ATOMIC_POS`):
//! so `read_iter` and `write_iter` get no `File`, only what the `Kiocb`
//! gives. The other operations run under a plain `fdget`, as
//! `MiscDevice`'s do, and get a `&File` on the same terms as theirs: no
//! `fdget_pos` region holds the file on this thread. Another thread's
//! read may hold it in one meanwhile, which `File`'s invariant, as it is
//! written, excludes too; `MiscDevice`'s `ioctl` is in the same case (a
//! character device has no position for the lock to protect).
//!
//! Upstream counterpart: `rust/kernel/miscdevice.rs` (`MiscDevice`, 7.x),
//! which registers on the misc major only and has no `poll`.

use super::Node;
use crate::glue::bindings;
#[cfg(not(umad_rs_in_kernel_crate))]
use crate::glue::compat::{File, IovIterDest, IovIterSource, Kiocb, PollTable};
use core::marker::PhantomData;
use kernel::{
    ffi::{c_int, c_long, c_uint, c_ulong},
    prelude::*,
    types::{ForeignOwnable, Opaque},
};
#[cfg(umad_rs_in_kernel_crate)]
use kernel::{
    fs::{File, Kiocb},
    iov::{IovIterDest, IovIterSource},
    sync::poll::PollTable,
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
    /// The object that owns the node; the node holds a reference to it.
    type Owner: Send + Sync + 'static;
    /// Per-file state, from `open` until `release`.
    type Ptr: ForeignOwnable + Send + Sync;

    /// A file is being opened on `node` (an `ARef` of it keeps it past the
    /// call).
    fn open(node: &Node<Self::Owner>, file: &File) -> Result<Self::Ptr>;

    /// The last reference to the file is gone.
    fn release(data: Self::Ptr, file: &File);

    /// `read(2)` and `readv(2)`: returns how many bytes it wrote to `iov`.
    fn read_iter(_kiocb: Kiocb<'_, Self::Ptr>, _iov: &mut IovIterDest<'_>) -> Result<usize> {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// `write(2)` and `writev(2)`: returns how many bytes it took from
    /// `iov`.
    fn write_iter(_kiocb: Kiocb<'_, Self::Ptr>, _iov: &mut IovIterSource<'_>) -> Result<usize> {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// `poll(2)` and friends: the `EPOLL*` bits that hold now, after
    /// registering with every wait queue that will signal a change.
    fn poll(_data: FileData<'_, Self>, _file: &File, _table: &PollTable<'_>) -> u32 {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// `ioctl(2)`. Unknown commands answer `ENOIOCTLCMD`, which userspace
    /// sees as `ENOTTY`.
    fn ioctl(_data: FileData<'_, Self>, _file: &File, _cmd: u32, _arg: usize) -> Result<isize> {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// `ioctl(2)` from a 32-bit process. Without it, such a process's
    /// calls go to [`FileOps::ioctl`] (`compat_ptr_ioctl`).
    fn compat_ioctl(
        _data: FileData<'_, Self>,
        _file: &File,
        _cmd: u32,
        _arg: usize,
    ) -> Result<isize> {
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
        if T::HAS_READ_ITER {
            raw.read_iter = Some(read_iter_callback::<T>);
        }
        if T::HAS_WRITE_ITER {
            raw.write_iter = Some(write_iter_callback::<T>);
        }
        if T::HAS_POLL {
            raw.poll = Some(poll_callback::<T>);
        }
        if T::HAS_IOCTL {
            raw.unlocked_ioctl = Some(ioctl_callback::<T>);
        }
        #[cfg(CONFIG_COMPAT)]
        if T::HAS_COMPAT_IOCTL {
            raw.compat_ioctl = Some(compat_ioctl_callback::<T>);
        } else if T::HAS_IOCTL {
            #[cfg(umad_rs_kernel_bindings)]
            // The kernel's bindings give `compat_ptr_ioctl` as the `Option`
            // that a `file_operations` holds (`rust/bindings/lib.rs`).
            let compat_ptr_ioctl = bindings::compat_ptr_ioctl;
            #[cfg(not(umad_rs_kernel_bindings))]
            let compat_ptr_ioctl: Option<unsafe extern "C" fn(_, _, _) -> _> =
                Some(bindings::compat_ptr_ioctl);
            raw.compat_ioctl = compat_ptr_ioctl;
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
    // SAFETY: the inode is a char device inode whose `i_cdev` is the cdev
    // of a `Node<T::Owner>` that `T`'s operations serve (chrdev_open set
    // it), and the cdev reference chrdev_open holds keeps the node's
    // device, hence the node, alive during the call.
    let node = unsafe { Node::<T::Owner>::of_cdev(inode_cdev(inode)) };
    // SAFETY: the VFS passes a valid file for the duration of `open`,
    // before any descriptor refers to it: no `fdget_pos` region can hold
    // it.
    let f = unsafe { File::from_raw_file(file.cast_const().cast()) };
    match T::open(node, f) {
        Ok(data) => {
            // SAFETY: `file` is valid and not yet shared; `release_callback`
            // takes the data back. stream_open makes the file a stream.
            unsafe {
                #[cfg(umad_rs_into_foreign_mut)]
                let foreign = data.into_foreign();
                #[cfg(not(umad_rs_into_foreign_mut))]
                // This `into_foreign` gives a `*const`.
                let foreign = data.into_foreign().cast_mut();
                (*file).private_data = foreign;
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
    // SAFETY: the file is valid during `release`, which runs once the
    // last reference is gone, so no `fdget_pos` region holds it.
    T::release(data, unsafe {
        File::from_raw_file(file.cast_const().cast())
    });
    0
}

/// The state of a file whose `open_callback` succeeded, and the file.
///
/// # Safety
///
/// `file` is such a file, valid for `'a` (the VFS holds it during every
/// file operation), in an operation other than `read_iter` and
/// `write_iter`, which the VFS runs under `fdget`, not `fdget_pos`.
unsafe fn file_data<'a, T: FileOps>(file: *mut bindings::file) -> (FileData<'a, T>, &'a File) {
    // SAFETY: `private_data` came from `into_foreign` in `open_callback`,
    // and `release_callback`, which takes it back, runs only after the last
    // operation on the file. This thread is in no `fdget_pos` region for
    // the file, as `MiscDevice`'s operations are not. Another thread's
    // read or write may be, which `File::from_raw_file`'s contract, as it
    // is written, excludes; on a character device that region takes no
    // `f_pos_lock` and nothing here touches the position, so this is the
    // contract `MiscDevice`'s own operations rely on (see the module's
    // documentation).
    unsafe {
        (
            T::Ptr::borrow((*file).private_data),
            File::from_raw_file(file.cast_const().cast()),
        )
    }
}

/// `file_operations.read_iter`.
///
/// # Safety
///
/// Called by the VFS with a kiocb on a file that `open_callback::<T>`
/// opened and an IO vector to write to, both valid during the call.
unsafe extern "C" fn read_iter_callback<T: FileOps>(
    kiocb: *mut bindings::kiocb,
    iter: *mut bindings::iov_iter,
) -> isize {
    // SAFETY: the kiocb is valid during the call, and its file's private
    // data is a `T::Ptr` (`open_callback`).
    let kiocb = unsafe { Kiocb::from_raw(kiocb.cast()) };
    // SAFETY: the VFS gives `read_iter` an IO vector to write to, used only
    // through this reference during the call.
    let iov = unsafe { IovIterDest::from_raw(iter.cast()) };
    ssize(T::read_iter(kiocb, iov))
}

/// `file_operations.write_iter`.
///
/// # Safety
///
/// Called by the VFS with a kiocb on a file that `open_callback::<T>`
/// opened and an IO vector to read from, both valid during the call.
unsafe extern "C" fn write_iter_callback<T: FileOps>(
    kiocb: *mut bindings::kiocb,
    iter: *mut bindings::iov_iter,
) -> isize {
    // SAFETY: as in `read_iter_callback`.
    let kiocb = unsafe { Kiocb::from_raw(kiocb.cast()) };
    // SAFETY: the VFS gives `write_iter` an IO vector to read from, used
    // only through this reference during the call.
    let iov = unsafe { IovIterSource::from_raw(iter.cast()) };
    ssize(T::write_iter(kiocb, iov))
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
    // SAFETY: the VFS calls this for an open file of ours, under `fdget`.
    let (data, file) = unsafe { file_data::<T>(file) };
    // SAFETY: the VFS passes a poll table that is valid or null during
    // the call.
    let table = unsafe { PollTable::from_raw(table.cast()) };
    T::poll(data, file, &table)
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

/// What `read_iter` and `write_iter` return: a count, or a negative
/// errno. Counts are at most the IO vector's length, itself at most
/// `MAX_RW_COUNT`.
fn ssize(result: Result<usize>) -> isize {
    result
        .and_then(|n| isize::try_from(n).map_err(|_| EINVAL))
        .unwrap_or_else(|e| {
            // CAST: an int widened to a pointer-sized int, which holds it.
            e.to_errno() as isize
        })
}

/// What `ioctl` returns: a value, or a negative errno.
fn ioctl_result(result: Result<isize>) -> c_long {
    result.unwrap_or_else(|e| {
        // CAST: an int widened to a pointer-sized int, which holds it.
        e.to_errno() as isize
    })
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
    // SAFETY: the VFS calls this for an open file of ours, under `fdget`.
    let (data, file) = unsafe { file_data::<T>(file) };
    ioctl_result(T::ioctl(data, file, cmd, arg))
}

/// `file_operations.compat_ioctl`: a 32-bit process's ioctl.
///
/// # Safety
///
/// Called by the VFS on a file that `open_callback::<T>` opened.
#[cfg(CONFIG_COMPAT)]
unsafe extern "C" fn compat_ioctl_callback<T: FileOps>(
    file: *mut bindings::file,
    cmd: c_uint,
    arg: c_ulong,
) -> c_long {
    // SAFETY: as in `ioctl_callback`.
    let (data, file) = unsafe { file_data::<T>(file) };
    ioctl_result(T::compat_ioctl(data, file, cmd, arg))
}
