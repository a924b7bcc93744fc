// SPDX-License-Identifier: GPL-2.0

//! What differs between the `kernel` crates ib_umad_rs builds against.
//! Every version difference lives here, chosen by feature probes on the
//! kernel tree (see `Kbuild`), never by version numbers: stable kernels
//! carry backports.
//!
//! Probes are used elsewhere in two cases: `umad_rs_kunit_tests` puts
//! `rules/`'s unit tests under `#[kunit_tests]`, an attribute that has to
//! sit on the test module itself; and `infiniband/`, which the patch series
//! moves into the kernel crate, carries its few differences itself, as
//! `#[cfg]`s of statements that the series resolves for its tree
//! (`tools/upstream/intree.py`), with `umad_rs_in_kernel_crate` set there:
//! inside the crate it may use the crate's private items.
//!
//! Upstream counterpart: none; this file shrinks as the oldest supported
//! kernel gains what it papers over.

use super::bindings;
use core::fmt;
use kernel::{
    device, error::Error, ffi::c_char, str::CStr, sync::LockClassKey, uaccess::UserSlice,
};

/// A held `Mutex<T>`'s guard (7.x names it `kernel::sync::MutexGuard`).
pub(crate) type MutexGuard<'a, T> =
    kernel::sync::lock::Guard<'a, T, kernel::sync::lock::mutex::MutexBackend>;

/// `EOPNOTSUPP`, which 6.12's `kernel::error::code` lacks.
pub(crate) fn eopnotsupp() -> Error {
    Error::from_errno(-errno(kernel::bindings::EOPNOTSUPP))
}

/// `ETIMEDOUT` as a positive number, the status of a timeout report.
pub(crate) const ETIMEDOUT: u32 = kernel::bindings::ETIMEDOUT;

/// A positive errno constant of the bindings as a C int; errnos are small.
const fn errno(value: u32) -> i32 {
    assert!(value < 4096);
    // CAST: checked above to fit.
    #[allow(clippy::cast_possible_wrap)]
    let value = value as i32;
    value
}

/// `len` bytes of user memory at `addr`, which each access checks: 7.x
/// takes the address as a `UserPtr`, 6.12 as a plain `usize`.
pub(crate) fn user_slice(addr: usize, len: usize) -> UserSlice {
    #[cfg(umad_rs_user_ptr_struct)]
    let ptr = kernel::uaccess::UserPtr::from_addr(addr);
    #[cfg(not(umad_rs_user_ptr_struct))]
    let ptr = addr;
    UserSlice::new(ptr, len)
}

/// An open file, borrowed for a file operation: the `kernel` crate's
/// `LocalFile` where it has one, a `struct file` of our own before.
/// `LocalFile` and not `File`: umad files are `stream_open`ed, so a read
/// or write runs under an `fdget_pos` that took no `f_pos_lock`, which
/// `LocalFile` allows on the calling thread and `File` does not.
#[cfg(umad_rs_local_file)]
#[repr(transparent)]
pub(crate) struct File(kernel::fs::LocalFile);

/// An open file, borrowed for a file operation.
#[cfg(not(umad_rs_local_file))]
#[repr(transparent)]
pub(crate) struct File(kernel::types::Opaque<bindings::file>);

impl File {
    /// # Safety
    ///
    /// `ptr` points to a `struct file` that stays valid for `'a`, and any
    /// `fdget_pos` on it that did not take `f_pos_lock` runs on this
    /// thread (a file operation's own).
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut bindings::file) -> &'a Self {
        #[cfg(umad_rs_local_file)]
        let ptr: *const kernel::fs::LocalFile = {
            // SAFETY: the caller's promise, which is `from_raw_file`'s.
            unsafe { kernel::fs::LocalFile::from_raw_file(ptr.cast()) }
        };
        // SAFETY: `Self` is transparent over either; validity for `'a` is
        // the caller's promise.
        unsafe { &*ptr.cast() }
    }

    /// Whether the file was opened with `O_NONBLOCK`.
    pub(crate) fn is_nonblocking(&self) -> bool {
        #[cfg(umad_rs_local_file)]
        let nonblocking = self.0.flags() & kernel::fs::file::flags::O_NONBLOCK != 0;
        #[cfg(not(umad_rs_local_file))]
        // SAFETY: the file is valid. `fcntl(F_SETFL)` may write `f_flags`
        // meanwhile (under `f_lock`, which readers do not take): a
        // volatile read stands for C's `READ_ONCE`, as `LocalFile::flags`
        // has it, and sees the old flags or the new.
        let nonblocking = unsafe {
            core::ptr::addr_of!((*self.0.get()).f_flags).read_volatile() & bindings::O_NONBLOCK != 0
        };
        nonblocking
    }

    /// The `struct file`.
    pub(crate) fn as_raw(&self) -> *mut bindings::file {
        #[cfg(umad_rs_local_file)]
        let ptr = self.0.as_ptr().cast();
        #[cfg(not(umad_rs_local_file))]
        let ptr = self.0.get();
        ptr
    }
}

/// `poll_wait(file, queue, table)`: the `kernel` crate's helper where it
/// has one, the module's before.
///
/// # Safety
///
/// As `poll_wait`: `file` is being polled with `table` (or `table` is
/// null), and `queue` outlives the registration.
pub(crate) unsafe fn poll_wait(
    file: *mut bindings::file,
    queue: *mut bindings::wait_queue_head,
    table: *mut bindings::poll_table_struct,
) {
    #[cfg(umad_rs_poll_wait)]
    // SAFETY: the caller's promise.
    unsafe {
        kernel::bindings::poll_wait(file.cast(), queue.cast(), table.cast())
    };
    #[cfg(not(umad_rs_poll_wait))]
    // SAFETY: the caller's promise.
    unsafe {
        bindings::poll_wait(file, queue, table)
    };
}

/// `inode->i_cdev`, in an anonymous union of `struct inode`, one place
/// further down where the kernel has `i_linklen` in an anonymous union
/// before it.
///
/// # Safety
///
/// `inode` is a valid character device inode, whose union holds `i_cdev`.
pub(crate) unsafe fn inode_cdev(inode: *const bindings::inode) -> *mut bindings::cdev {
    #[cfg(umad_rs_inode_linklen)]
    // SAFETY: the caller's promise.
    let cdev = unsafe { (*inode).__bindgen_anon_5.i_cdev };
    #[cfg(not(umad_rs_inode_linklen))]
    // SAFETY: the caller's promise.
    let cdev = unsafe { (*inode).__bindgen_anon_4.i_cdev };
    cdev
}

/// The `kernel` crate's device at `ptr` (`Device::from_raw`, which was
/// `Device::as_ref`).
///
/// # Safety
///
/// As for `Device::from_raw`: `ptr` is a valid device whose reference
/// count does not drop to zero during `'a`.
pub(crate) unsafe fn device_from_raw<'a>(ptr: *mut bindings::device) -> &'a device::Device {
    #[cfg(umad_rs_device_from_raw)]
    // SAFETY: the caller's promise.
    let device = unsafe { device::Device::from_raw(ptr.cast()) };
    #[cfg(not(umad_rs_device_from_raw))]
    // SAFETY: the caller's promise.
    let device = unsafe { device::Device::as_ref(ptr.cast()) };
    device
}

/// `dev_name(dev)`: the `kernel` crate's helper where it has one, the
/// module's before.
///
/// # Safety
///
/// `dev` is a valid device; the name lives until the device's is changed.
pub(crate) unsafe fn dev_name(dev: *const bindings::device) -> *const c_char {
    #[cfg(umad_rs_dev_name)]
    // SAFETY: the caller's promise.
    let name = unsafe { kernel::bindings::dev_name(dev.cast()) };
    #[cfg(not(umad_rs_dev_name))]
    // SAFETY: the caller's promise.
    let name = unsafe { bindings::dev_name(dev) };
    name
}

/// `WARN_ON(true)` here: the `kernel` crate's `warn_on!` where it has one,
/// which records the caller's file and line in the bug table; the module's
/// `WARN_ON` helper before, which names `helpers/fallback.c`.
macro_rules! warn_here {
    () => {{
        #[cfg(umad_rs_warn_on)]
        kernel::warn_on!(true);
        #[cfg(not(umad_rs_warn_on))]
        $crate::glue::compat::helper_warn();
    }};
}
pub(crate) use warn_here;

/// `WARN_ON(true)` through the module's helper.
#[cfg(not(umad_rs_warn_on))]
#[inline(never)]
#[cold]
pub(crate) fn helper_warn() {
    // SAFETY: `WARN_ON` only logs and taints.
    unsafe { bindings::WARN_ON(true) };
}

/// `WARN_ON_ONCE(cond)`: warns the first time `cond` holds at this place,
/// and returns `cond`. The `kernel` crate's `warn_on_once!` where it has
/// one; before, a flag of the module's own beside `warn_here!`.
#[cfg(umad_rs_warn_on_once)]
pub(crate) use kernel::warn_on_once;

/// `WARN_ON_ONCE(cond)`, with a flag of the module's own.
#[cfg(not(umad_rs_warn_on_once))]
macro_rules! warn_on_once {
    ($cond:expr) => {{
        use core::sync::atomic::{AtomicBool, Ordering};
        static WARNED: AtomicBool = AtomicBool::new(false);
        let cond: bool = $cond;
        if cond && !WARNED.swap(true, Ordering::Relaxed) {
            $crate::glue::compat::warn_here!();
        }
        cond
    }};
}
#[cfg(not(umad_rs_warn_on_once))]
pub(crate) use warn_on_once;

/// A copy of the calling task's name: `Task::comm` where the `kernel`
/// crate has it, the module's copy before.
#[cfg(umad_rs_task_comm)]
pub(crate) fn current_comm() -> kernel::task::TaskComm {
    kernel::current!().comm()
}

/// A copy of the calling task's name (`get_task_comm`): another thread of
/// its process may rename it at any time (`/proc/<pid>/task/<tid>/comm`),
/// writing the task's array while it is read.
#[cfg(not(umad_rs_task_comm))]
pub(crate) fn current_comm() -> TaskComm {
    let mut comm = [0; COMM_LEN];
    // SAFETY: `comm` is valid for writes of `TASK_COMM_LEN` bytes;
    // `get_task_comm` fills it from the calling task, which lives while it
    // runs.
    unsafe { bindings::get_task_comm(&mut comm, kernel::bindings::get_current().cast()) };
    TaskComm(comm.map(|c: c_char| c.to_ne_bytes()[0]))
}

/// A copy of a task's name, as `Task::comm` makes it.
#[cfg(not(umad_rs_task_comm))]
pub(crate) struct TaskComm([u8; COMM_LEN]);

/// `TASK_COMM_LEN`.
// CAST: 16, in any `usize`.
#[allow(clippy::cast_possible_truncation)]
#[cfg(not(umad_rs_task_comm))]
const COMM_LEN: usize = bindings::TASK_COMM_LEN as usize;

#[cfg(not(umad_rs_task_comm))]
impl TaskComm {
    pub(crate) fn as_c_str(&self) -> &CStr {
        cstr_until_nul(&self.0)
    }
}

/// The `u32` at the user address `addr`, read in one access (`get_user`);
/// `EFAULT` where the memory is not the caller's. The `kernel` crate's
/// `UserPtr::get_u32` where it has one, the module's helper before.
pub(crate) fn get_user_u32(addr: usize) -> Result<u32, Error> {
    #[cfg(umad_rs_user_ptr_u32)]
    let value = kernel::uaccess::UserPtr::from_addr(addr).get_u32();
    #[cfg(not(umad_rs_user_ptr_u32))]
    let value = {
        let mut value = 0;
        // SAFETY: `value` is writable; `get_user` checks the user address.
        let ret = unsafe { bindings::get_user_u32(&mut value, user_u32(addr)) };
        if ret == 0 {
            Ok(value)
        } else {
            Err(kernel::error::code::EFAULT)
        }
    };
    value
}

/// Writes `value` at the user address `addr` in one access (`put_user`),
/// all of it or nothing; `EFAULT` where the memory is not the caller's.
/// The `kernel` crate's `UserPtr::put_u32` where it has one, the module's
/// helper before.
pub(crate) fn put_user_u32(addr: usize, value: u32) -> Result<(), Error> {
    #[cfg(umad_rs_user_ptr_u32)]
    let result = kernel::uaccess::UserPtr::from_addr(addr).put_u32(value);
    #[cfg(not(umad_rs_user_ptr_u32))]
    let result = {
        // SAFETY: `put_user` checks the user address.
        let ret = unsafe { bindings::put_user_u32(value, user_u32(addr)) };
        if ret == 0 {
            Ok(())
        } else {
            Err(kernel::error::code::EFAULT)
        }
    };
    result
}

/// The user address `addr` as the C helpers take it.
#[cfg(not(umad_rs_user_ptr_u32))]
fn user_u32(addr: usize) -> *mut u32 {
    // CAST: a user address, which only the C helpers dereference, after
    // checking it.
    addr as *mut u32
}

/// `module!` with one author, who goes under `authors` (a list) where the
/// kernel's macro has that key, under `author` before. The keys keep the
/// order both macros demand.
#[cfg(umad_rs_module_authors)]
macro_rules! module_by {
    (type: $type:ident, name: $name:tt, author: $author:tt, $($rest:tt)*) => {
        kernel::prelude::module! { type: $type, name: $name, authors: [$author], $($rest)* }
    };
}
#[cfg(not(umad_rs_module_authors))]
macro_rules! module_by {
    (type: $type:ident, name: $name:tt, author: $author:tt, $($rest:tt)*) => {
        kernel::prelude::module! { type: $type, name: $name, author: $author, $($rest)* }
    };
}
pub(crate) use module_by;

/// This module's `struct module`, in a constant: the `ModuleMetadata`
/// constant of the module's type where `module!` makes one, the
/// `THIS_MODULE` static it made before.
#[cfg(umad_rs_this_module_const)]
macro_rules! this_module {
    () => {
        <crate::LocalModule as kernel::ModuleMetadata>::THIS_MODULE.as_ptr()
    };
}
#[cfg(not(umad_rs_this_module_const))]
macro_rules! this_module {
    () => {
        crate::THIS_MODULE.as_ptr()
    };
}
pub(crate) use this_module;

/// What `kernel::static_lock_class!()` gives: a pinned key where the
/// kernel pins it, a plain reference before.
#[cfg(umad_rs_pinned_lock_class)]
pub(crate) type StaticLockClass = core::pin::Pin<&'static LockClassKey>;
#[cfg(not(umad_rs_pinned_lock_class))]
pub(crate) type StaticLockClass = &'static LockClassKey;

/// The C string of a `CStr`, in a `const fn`: where `CStr` is core's, its
/// `as_char_ptr` comes from a trait and is not `const`.
pub(crate) const fn const_char_ptr(s: &'static CStr) -> *const c_char {
    #[cfg(umad_rs_core_cstr)]
    let ptr = kernel::str::as_char_ptr_in_const_context(s);
    #[cfg(not(umad_rs_core_cstr))]
    let ptr = s.as_char_ptr();
    ptr
}

/// The C string that starts `bytes`, up to its first NUL; empty without
/// one (core's `CStr::from_bytes_until_nul` where `CStr` is core's; the
/// kernel's own has no such constructor).
pub(crate) fn cstr_until_nul(bytes: &[u8]) -> &CStr {
    #[cfg(umad_rs_core_cstr)]
    let found = CStr::from_bytes_until_nul(bytes).ok();
    #[cfg(not(umad_rs_core_cstr))]
    let found = bytes
        .iter()
        .position(|&b| b == 0)
        .and_then(|len| CStr::from_bytes_with_nul(bytes.get(..=len)?).ok());
    found.unwrap_or(kernel::c_str!(""))
}

/// A `CStr` for `core::fmt` (`format_args!`): where the kernel has its own
/// `Display` (which its `CStr` implements, escaping as `BStr` does), through
/// that; before, `CStr` implements core's.
pub(crate) struct DisplayCStr<'a>(pub(crate) &'a CStr);

impl fmt::Display for DisplayCStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        #[cfg(umad_rs_kernel_display)]
        let result = kernel::fmt::Display::fmt(self.0, f);
        #[cfg(not(umad_rs_kernel_display))]
        let result = fmt::Display::fmt(self.0, f);
        result
    }
}

/// Sets `attribute_group.attrs`, which shares an anonymous union with
/// `attrs_const` where the kernel has that.
pub(crate) const fn set_group_attrs(
    group: &mut bindings::attribute_group,
    attrs: *mut *mut bindings::attribute,
) {
    #[cfg(umad_rs_group_attrs_union)]
    {
        group.__bindgen_anon_2.attrs = attrs;
    }
    #[cfg(not(umad_rs_group_attrs_union))]
    {
        group.attrs = attrs;
    }
}

/// A device attribute's `show` callback.
pub(crate) type DeviceShow = unsafe extern "C" fn(
    *mut bindings::device,
    *mut bindings::device_attribute,
    *mut c_char,
) -> isize;

/// Sets `device_attribute.show`, which shares an anonymous union (a struct
/// under CFI) with `show_const` where the kernel has that.
pub(crate) const fn set_device_show(attr: &mut bindings::device_attribute, show: DeviceShow) {
    #[cfg(umad_rs_device_show_union)]
    {
        attr.__bindgen_anon_1.show = Some(show);
    }
    #[cfg(not(umad_rs_device_show_union))]
    {
        attr.show = Some(show);
    }
}

/// `impl ListItem<0> for $item`, linked through its `ListLinks` field
/// `$field` (with its `HasListLinks`): 7.x's `impl_list_item!` names the
/// field itself, 6.12's takes it from a separate `impl_has_list_links!`.
macro_rules! impl_list_item {
    ($item:ident { $field:ident }) => {
        #[cfg(umad_rs_list_item_field)]
        kernel::list::impl_list_item! {
            impl ListItem<0> for $item { using ListLinks { self.$field }; }
        }
        #[cfg(not(umad_rs_list_item_field))]
        kernel::list::impl_has_list_links! {
            impl HasListLinks<0> for $item { self.$field }
        }
        #[cfg(not(umad_rs_list_item_field))]
        kernel::list::impl_list_item! {
            impl ListItem<0> for $item { using ListLinks; }
        }
    };
}
pub(crate) use impl_list_item;
