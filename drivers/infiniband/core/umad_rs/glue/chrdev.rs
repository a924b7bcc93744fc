// SPDX-License-Identifier: GPL-2.0

//! Safe wrappers for character device nodes: number regions, a class, and a
//! `struct device` + `struct cdev` pair whose files are served by a
//! [`FileOps`] implementation.
//!
//! 6.12's `kernel` crate has none of these. [`FileOps`] is shaped like
//! mainline's `MiscDevice` (`rust/kernel/miscdevice.rs`): trait callbacks
//! reached through generic `extern "C"` trampolines, per-file state kept as a
//! [`ForeignOwnable`] in `file->private_data`. Optional operations are
//! left out of `file_operations` unless implemented (`#[vtable]`), so the
//! VFS answers them as for a C driver without them.

use crate::bindings;
use crate::numbering::Devt;
use crate::wait::PollTable;
use core::{
    fmt,
    marker::PhantomData,
    sync::atomic::{AtomicBool, AtomicU8, Ordering},
};
use kernel::{
    error::to_result,
    ffi::{c_char, c_int, c_long, c_uint, c_ulong, c_void},
    prelude::*,
    str::{CStr, CString},
    sync::{Arc, ArcBorrow},
    types::{ForeignOwnable, Opaque},
    uaccess::{UserSlice, UserSliceReader, UserSliceWriter},
};

/// A range of character device numbers, given back on drop.
pub(crate) struct ChrdevRegion {
    first: Devt,
    count: u32,
}

impl ChrdevRegion {
    /// Claims `count` numbers from `first` (`register_chrdev_region`).
    pub(crate) fn claim(first: Devt, count: u32, name: &'static CStr) -> Result<Self> {
        // SAFETY: `name` is a NUL-terminated string that outlives the region.
        to_result(unsafe { bindings::register_chrdev_region(first.0, count, name.as_char_ptr()) })?;
        Ok(Self { first, count })
    }

    /// Claims `count` numbers under a major the kernel picks
    /// (`alloc_chrdev_region`).
    pub(crate) fn allocate(count: u32, name: &'static CStr) -> Result<Self> {
        let mut first = 0;
        // SAFETY: `first` is a valid place for the result; `name` as above.
        to_result(unsafe { bindings::alloc_chrdev_region(&mut first, 0, count, name.as_char_ptr()) })?;
        Ok(Self { first: Devt(first), count })
    }

    /// The first number of the region.
    pub(crate) fn first(&self) -> Devt {
        self.first
    }
}

impl Drop for ChrdevRegion {
    fn drop(&mut self) {
        // SAFETY: the region was claimed by `claim` or `allocate`.
        unsafe { bindings::unregister_chrdev_region(self.first.0, self.count) };
    }
}

/// A `struct class`, meant to be a `static` like its C counterparts.
pub(crate) struct Class {
    raw: Opaque<bindings::class>,
    registered: AtomicBool,
}

// SAFETY: Rust never touches `raw` after construction; the driver core
// serialises its own use of it.
unsafe impl Sync for Class {}

impl Class {
    pub(crate) const fn new(raw: bindings::class) -> Self {
        Self {
            raw: Opaque::new(raw),
            registered: AtomicBool::new(false),
        }
    }

    /// Registers the class until the returned guard is dropped.
    pub(crate) fn register(&'static self) -> Result<ClassRegistration> {
        if self.registered.swap(true, Ordering::AcqRel) {
            return Err(EBUSY);
        }
        // SAFETY: `raw` is a valid, 'static class that is not registered.
        if let Err(e) = to_result(unsafe { bindings::class_register(self.raw.get()) }) {
            self.registered.store(false, Ordering::Release);
            return Err(e);
        }
        Ok(ClassRegistration { class: self })
    }

    fn as_raw(&self) -> *mut bindings::class {
        self.raw.get()
    }
}

/// A registered [`Class`]; dropping it unregisters the class.
pub(crate) struct ClassRegistration {
    class: &'static Class,
}

impl ClassRegistration {
    pub(crate) fn class(&self) -> &'static Class {
        self.class
    }
}

impl Drop for ClassRegistration {
    fn drop(&mut self) {
        // SAFETY: registered by `Class::register`, unregistered only here.
        unsafe { bindings::class_unregister(self.class.as_raw()) };
        self.class.registered.store(false, Ordering::Release);
    }
}

/// An open file, borrowed for the duration of a file operation.
#[repr(transparent)]
pub(crate) struct File(Opaque<bindings::file>);

impl File {
    /// # Safety
    ///
    /// `ptr` points to a `struct file` that stays valid for `'a`.
    unsafe fn from_raw<'a>(ptr: *mut bindings::file) -> &'a Self {
        // SAFETY: transparent wrapper; validity is the caller's promise.
        unsafe { &*ptr.cast() }
    }

    /// Whether the file was opened with `O_NONBLOCK`.
    pub(crate) fn is_nonblocking(&self) -> bool {
        // SAFETY: the file is valid; `f_flags` is not changed under us in
        // a way that matters for one flag read (fcntl writes it whole).
        let flags = unsafe { (*self.0.get()).f_flags };
        flags & bindings::O_NONBLOCK != 0
    }

    pub(crate) fn as_raw(&self) -> *mut bindings::file {
        self.0.get()
    }
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

    /// A file is being opened on a node of `owner`.
    fn open(owner: ArcBorrow<'_, Self::Owner>, file: &File) -> Result<Self::Ptr>;

    /// The last reference to the file is gone.
    fn release(data: Self::Ptr, file: &File);

    /// `read(2)` into `buf`; returns how many bytes it wrote there.
    fn read(_data: FileData<'_, Self>, _file: &File, _buf: UserSliceWriter) -> Result<usize> {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// `write(2)` from `buf`; returns how many bytes it took.
    fn write(_data: FileData<'_, Self>, _file: &File, _buf: UserSliceReader) -> Result<usize> {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// `poll(2)` and friends: the `EPOLL*` bits that hold now, after
    /// registering with every wait queue that will signal a change.
    fn poll(_data: FileData<'_, Self>, _file: &File, _table: &PollTable) -> u32 {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }

    /// `ioctl(2)`; `compat` when the caller is a 32-bit process. Unknown
    /// commands answer `ENOIOCTLCMD`, which userspace sees as `ENOTTY`.
    fn ioctl(_data: FileData<'_, Self>, _file: &File, _cmd: u32, _arg: usize, _compat: bool) -> Result<isize> {
        kernel::build_error!(kernel::error::VTABLE_DEFAULT_ERROR)
    }
}

/// The `file_operations` of `T`'s nodes, with the module as owner so that
/// the module stays loaded while a file is open.
pub(crate) struct FileOperations<T: FileOps> {
    raw: Opaque<bindings::file_operations>,
    _ops: PhantomData<T>,
}

// SAFETY: read-only after construction.
unsafe impl<T: FileOps> Sync for FileOperations<T> {}
// SAFETY: as above.
unsafe impl<T: FileOps> Send for FileOperations<T> {}

impl<T: FileOps> FileOperations<T> {
    /// The operations of `T`'s files, owned by `module` (`THIS_MODULE`).
    pub(crate) const fn new(module: *mut kernel::bindings::module) -> Self {
        // SAFETY: all zeroes is a valid `file_operations`: no callbacks.
        let mut raw: bindings::file_operations = unsafe { core::mem::zeroed() };
        raw.owner = module.cast();
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
        Self { raw: Opaque::new(raw), _ops: PhantomData }
    }
}

/// A character device node: a `struct device` in a class and its `struct
/// cdev`, added and removed together (`cdev_device_add`/`cdev_device_del`).
///
/// It lives inside its owner (see [`Node::add`]); the device holds a
/// reference to the owner until its release, so the node outlives every
/// file opened on it.
#[pin_data]
pub(crate) struct Node {
    #[pin]
    dev: Opaque<bindings::device>,
    #[pin]
    cdev: Opaque<bindings::cdev>,
    /// `NODE_NEW`, then `NODE_ADDED` while in the system, then `NODE_GONE`
    /// for good: a device is initialised once in its life.
    state: AtomicU8,
}

const NODE_NEW: u8 = 0;
const NODE_ADDED: u8 = 1;
const NODE_GONE: u8 = 2;

// SAFETY: the driver core synchronises its own use of the device and the
// cdev; Rust only hands out their addresses, and `state` is atomic.
unsafe impl Send for Node {}
// SAFETY: as above.
unsafe impl Sync for Node {}

/// Where a [`Node`] goes and what it is called.
pub(crate) struct NodeInfo<'a> {
    pub(crate) class: &'a ClassRegistration,
    pub(crate) parent: *mut bindings::device,
    pub(crate) devt: Devt,
    pub(crate) name: fmt::Arguments<'a>,
}

impl Node {
    pub(crate) fn new() -> impl PinInit<Self> {
        // `device_initialize` expects a zeroed device, as from kzalloc.
        pin_init!(Self {
            // SAFETY: the slot is valid for writes of one `device`.
            dev <- Opaque::ffi_init(|slot: *mut bindings::device| unsafe { slot.write_bytes(0, 1) }),
            // SAFETY: the slot is valid for writes of one `cdev`.
            cdev <- Opaque::ffi_init(|slot: *mut bindings::cdev| unsafe { slot.write_bytes(0, 1) }),
            state: AtomicU8::new(NODE_NEW),
        })
    }

    /// Adds the node `node(&owner)` to the system with `fops`; its device
    /// keeps a reference to `owner` until it is released. The projection
    /// guarantees the node lives inside the owner (or longer).
    pub(crate) fn add<T: FileOps>(
        owner: &Arc<T::Owner>,
        node: fn(&T::Owner) -> &Node,
        fops: &'static FileOperations<T>,
        info: NodeInfo<'_>,
    ) -> Result {
        let this = node(owner);
        let name = CString::try_from_fmt(info.name)?;
        if this
            .state
            .compare_exchange(NODE_NEW, NODE_ADDED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(EBUSY);
        }
        let dev = this.dev.get();
        let cdev = this.cdev.get();
        let reference = Arc::into_raw(owner.clone());
        // SAFETY: `dev` and `cdev` are this node's, never used before
        // (checked by `state`); the device takes the owner reference just
        // made and gives it back in `release_device::<T>`, which
        // `device_initialize` makes responsible for it from here on.
        unsafe {
            bindings::device_initialize(dev);
            (*dev).class = info.class.class().as_raw();
            (*dev).parent = info.parent;
            (*dev).devt = info.devt.0;
            (*dev).release = Some(release_device::<T>);
            bindings::ib_umad_rs_dev_set_drvdata(dev, reference.cast_mut().cast());
        }
        // SAFETY: the device is initialised; the format string takes one
        // C string argument, `name`.
        let ret = to_result(unsafe {
            bindings::dev_set_name(dev, c"%s".as_ptr().cast(), name.as_char_ptr())
        });
        // SAFETY: `cdev` is this node's; `fops` is 'static.
        let ret = ret.and_then(|()| unsafe {
            bindings::cdev_init(cdev, fops.raw.get());
            (*cdev).owner = (*fops.raw.get()).owner;
            to_result(bindings::cdev_device_add(cdev, dev))
        });
        if let Err(e) = ret {
            this.state.store(NODE_GONE, Ordering::Release);
            // SAFETY: balances `device_initialize`; the release callback
            // drops the owner reference.
            unsafe { bindings::put_device(dev) };
            return Err(e);
        }
        Ok(())
    }

    /// The node's `struct device`.
    pub(crate) fn device(&self) -> *mut bindings::device {
        self.dev.get()
    }

    /// Logs a notice about the node (`dev_notice`), as
    /// "infiniband_mad umadN: ...".
    pub(crate) fn notice(&self, message: fmt::Arguments<'_>) {
        self.log(bindings::_dev_notice, message);
    }

    /// Logs a warning about the node (`dev_warn`).
    pub(crate) fn warn(&self, message: fmt::Arguments<'_>) {
        self.log(bindings::_dev_warn, message);
    }

    fn log(
        &self,
        printk: unsafe extern "C" fn(*const bindings::device, *const c_char, ...),
        message: fmt::Arguments<'_>,
    ) {
        // SAFETY: the device lives as long as the node; `%pA` formats the
        // `fmt::Arguments` it is passed, as the kernel's `pr_*` macros do.
        unsafe { printk(self.dev.get(), c"%pA".as_ptr().cast(), &message as *const _ as *const c_void) };
    }

    /// Removes the node, if added: its device file and sysfs directory are
    /// gone when this returns; files already open keep working until
    /// closed, and the owner reference goes with the last of them.
    pub(crate) fn remove(&self) {
        if self
            .state
            .compare_exchange(NODE_ADDED, NODE_GONE, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        // SAFETY: the node was added by `Node::add` and is removed once.
        unsafe {
            bindings::cdev_device_del(self.cdev.get(), self.dev.get());
            bindings::put_device(self.dev.get());
        }
    }
}

/// `device.release` of a node's device: gives back its owner reference.
///
/// # Safety
///
/// Called by the driver core once, when the last device reference is gone,
/// for a device that `Node::add` set up for `T`.
unsafe extern "C" fn release_device<T: FileOps>(dev: *mut bindings::device) {
    // SAFETY: drvdata is the reference `Node::add` made with `into_raw`.
    let owner = unsafe { bindings::ib_umad_rs_dev_get_drvdata(dev) };
    // SAFETY: as above; this is its only `from_raw`.
    drop(unsafe { Arc::<T::Owner>::from_raw(owner.cast()) });
}

/// The owner of the node whose device is `dev`.
///
/// # Safety
///
/// `dev` is the device of a node that `Node::add` added for an owner of
/// type `O`, alive for `'a`.
pub(crate) unsafe fn owner_of_device<'a, O>(dev: *mut bindings::device) -> ArcBorrow<'a, O> {
    // SAFETY: drvdata holds an owner reference for as long as the device
    // lives, which the caller guarantees for `'a`.
    unsafe { ArcBorrow::from_raw(bindings::ib_umad_rs_dev_get_drvdata(dev).cast()) }
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
    let owner = unsafe {
        let node = kernel::container_of!(bindings::ib_umad_rs_inode_cdev(inode), Node, cdev).cast_mut();
        owner_of_device::<T::Owner>(Node::raw_dev(node))
    };
    // SAFETY: the VFS passes a valid file for the duration of `open`.
    let f = unsafe { File::from_raw(file) };
    match T::open(owner, f) {
        Ok(data) => {
            // SAFETY: `file` is valid and not yet shared; `release_callback`
            // takes the data back. stream_open makes the file a stream, as
            // ib_umad does: no seeking, no pread/pwrite.
            unsafe {
                (*file).private_data = data.into_foreign().cast_mut();
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
    // SAFETY: the file is valid during `release`.
    T::release(data, unsafe { File::from_raw(file) });
    0
}

impl Node {
    /// # Safety
    ///
    /// `node` points to a valid `Node`.
    unsafe fn raw_dev(node: *mut Node) -> *mut bindings::device {
        // SAFETY: `node` is valid by the caller's promise.
        unsafe { (*node).dev.get() }
    }
}

/// The state of a file whose `open_callback` succeeded.
///
/// # Safety
///
/// `file` is such a file, valid for `'a` (the VFS holds it during every
/// file operation).
unsafe fn file_data<'a, T: FileOps>(file: *mut bindings::file) -> (FileData<'a, T>, &'a File) {
    // SAFETY: `private_data` came from `into_foreign` in `open_callback`,
    // and `release_callback`, which takes it back, runs only after the last
    // operation on the file.
    unsafe { (T::Ptr::borrow((*file).private_data), File::from_raw(file)) }
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
    // SAFETY: the VFS calls this for an open file of ours.
    let (data, file) = unsafe { file_data::<T>(file) };
    // The user pointer is checked by each copy, not trusted here.
    let buf = UserSlice::new(buf as usize, count).writer();
    match T::read(data, file, buf) {
        Ok(n) => n as isize,
        Err(e) => e.to_errno() as isize,
    }
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
    // SAFETY: the VFS calls this for an open file of ours.
    let (data, file) = unsafe { file_data::<T>(file) };
    let buf = UserSlice::new(buf as usize, count).reader();
    match T::write(data, file, buf) {
        Ok(n) => n as isize,
        Err(e) => e.to_errno() as isize,
    }
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
    // SAFETY: the VFS calls this for an open file of ours.
    let (data, file) = unsafe { file_data::<T>(file) };
    T::poll(data, file, &PollTable(table))
}

fn ioctl_result(result: Result<isize>) -> c_long {
    match result {
        Ok(n) => n as c_long,
        Err(e) => e.to_errno() as c_long,
    }
}

/// `file_operations.unlocked_ioctl`.
///
/// # Safety
///
/// Called by the VFS on a file that `open_callback::<T>` opened.
unsafe extern "C" fn ioctl_callback<T: FileOps>(file: *mut bindings::file, cmd: c_uint, arg: c_ulong) -> c_long {
    // SAFETY: the VFS calls this for an open file of ours.
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
    // SAFETY: the VFS calls this for an open file of ours.
    let (data, file) = unsafe { file_data::<T>(file) };
    ioctl_result(T::ioctl(data, file, cmd, arg, true))
}
