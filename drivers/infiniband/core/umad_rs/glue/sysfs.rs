// SPDX-License-Identifier: GPL-2.0

//! The `infiniband_mad` class: `/sys/class/infiniband_mad/abi_version`,
//! each node's `ibdev` and `port` attributes, and the `infiniband/` prefix
//! of the device files. Static tables, as the C driver's macros make them.

use crate::{bindings, chardev::Class, port::Port, uapi};
use core::{cell::UnsafeCell, ptr};
use kernel::ffi::{c_char, c_uint};

/// A C table the driver core reads and never writes.
#[repr(transparent)]
struct Table<T>(UnsafeCell<T>);

// SAFETY: only the driver core reads these tables; nothing writes them.
unsafe impl<T> Sync for Table<T> {}

impl<T> Table<T> {
    const fn get(&self) -> *mut T {
        self.0.get()
    }
}

/// The `attr` member heads both attribute structs, so a pointer to either
/// is a pointer to its `struct attribute`.
const _: () = assert!(core::mem::offset_of!(bindings::class_attribute, attr) == 0);
const _: () = assert!(core::mem::offset_of!(bindings::device_attribute, attr) == 0);

const fn read_only(name: &'static core::ffi::CStr) -> bindings::attribute {
    // SAFETY: all zeroes is a valid `attribute` (lockdep keys unused for
    // static attributes).
    let mut attr: bindings::attribute = unsafe { core::mem::zeroed() };
    attr.name = name.as_ptr().cast();
    attr.mode = 0o444;
    attr
}

const fn class_attribute(
    name: &'static core::ffi::CStr,
    show: unsafe extern "C" fn(*const bindings::class, *const bindings::class_attribute, *mut c_char) -> isize,
) -> bindings::class_attribute {
    // SAFETY: all zeroes is a valid `class_attribute`: no callbacks.
    let mut attr: bindings::class_attribute = unsafe { core::mem::zeroed() };
    attr.attr = read_only(name);
    attr.show = Some(show);
    attr
}

const fn device_attribute(
    name: &'static core::ffi::CStr,
    show: unsafe extern "C" fn(*mut bindings::device, *mut bindings::device_attribute, *mut c_char) -> isize,
) -> bindings::device_attribute {
    // SAFETY: all zeroes is a valid `device_attribute`: no callbacks.
    let mut attr: bindings::device_attribute = unsafe { core::mem::zeroed() };
    attr.attr = read_only(name);
    attr.show = Some(show);
    attr
}

const fn group(attrs: *mut *mut bindings::attribute) -> bindings::attribute_group {
    // SAFETY: all zeroes is a valid `attribute_group`.
    let mut group: bindings::attribute_group = unsafe { core::mem::zeroed() };
    group.attrs = attrs;
    group
}

static ABI_VERSION: Table<bindings::class_attribute> =
    Table(UnsafeCell::new(class_attribute(c"abi_version", abi_version_show)));
static CLASS_ATTRS: Table<[*mut bindings::attribute; 2]> =
    Table(UnsafeCell::new([ABI_VERSION.get().cast(), ptr::null_mut()]));
static CLASS_GROUP: Table<bindings::attribute_group> = Table(UnsafeCell::new(group(CLASS_ATTRS.get().cast())));
static CLASS_GROUPS: Table<[*const bindings::attribute_group; 2]> =
    Table(UnsafeCell::new([CLASS_GROUP.get(), ptr::null()]));

static IBDEV: Table<bindings::device_attribute> = Table(UnsafeCell::new(device_attribute(c"ibdev", ibdev_show)));
static PORT: Table<bindings::device_attribute> = Table(UnsafeCell::new(device_attribute(c"port", port_show)));
static DEV_ATTRS: Table<[*mut bindings::attribute; 3]> =
    Table(UnsafeCell::new([IBDEV.get().cast(), PORT.get().cast(), ptr::null_mut()]));
static DEV_GROUP: Table<bindings::attribute_group> = Table(UnsafeCell::new(group(DEV_ATTRS.get().cast())));
static DEV_GROUPS: Table<[*const bindings::attribute_group; 2]> =
    Table(UnsafeCell::new([DEV_GROUP.get(), ptr::null()]));

const fn umad_class() -> bindings::class {
    // SAFETY: all zeroes is a valid `class`: no callbacks, no groups.
    let mut class: bindings::class = unsafe { core::mem::zeroed() };
    class.name = c"infiniband_mad".as_ptr().cast();
    class.devnode = Some(devnode);
    class.class_groups = CLASS_GROUPS.get().cast();
    class.dev_groups = DEV_GROUPS.get().cast();
    class
}

/// `infiniband_mad`; every device in it is a node of a [`Port`].
pub(crate) static UMAD_CLASS: Class = Class::new(umad_class());

/// `class.devnode`: `/dev/infiniband/<name>`, default mode.
///
/// # Safety
///
/// `dev` is a valid, named device of this class.
unsafe extern "C" fn devnode(dev: *const bindings::device, _mode: *mut u16) -> *mut c_char {
    // SAFETY: the driver core passes a valid, named device; the format
    // takes one C string.
    unsafe {
        bindings::kasprintf(
            kernel::bindings::GFP_KERNEL,
            c"infiniband/%s".as_ptr().cast(),
            bindings::ib_umad_rs_device_name(dev),
        )
    }
}

/// `abi_version`'s show callback.
///
/// # Safety
///
/// `buf` is the page sysfs gives a show callback.
unsafe extern "C" fn abi_version_show(
    _class: *const bindings::class,
    _attr: *const bindings::class_attribute,
    buf: *mut c_char,
) -> isize {
    // SAFETY: `buf` is the page sysfs gives a show callback.
    unsafe { bindings::sysfs_emit(buf, c"%u\n".as_ptr().cast(), uapi::ABI_VERSION as c_uint) as isize }
}

/// `ibdev`'s show callback.
///
/// # Safety
///
/// `dev` is a device of this class, alive during the call (sysfs holds an
/// active reference on the attribute, and `device_del` drains it); `buf` is
/// the page sysfs gives a show callback.
unsafe extern "C" fn ibdev_show(
    dev: *mut bindings::device,
    _attr: *mut bindings::device_attribute,
    buf: *mut c_char,
) -> isize {
    // SAFETY: every device of the class belongs to a node of a `Port`.
    let port = unsafe { crate::chardev::owner_of_device::<Port>(dev) };
    match port.ib_device_name() {
        // SAFETY: `buf` is the page sysfs gives; one C string argument.
        Some(name) => unsafe {
            bindings::sysfs_emit(buf, c"%s\n".as_ptr().cast(), name.as_cstr().as_char_ptr()) as isize
        },
        None => kernel::error::code::ENODEV.to_errno() as isize,
    }
}

/// `port`'s show callback.
///
/// # Safety
///
/// As for [`ibdev_show`].
unsafe extern "C" fn port_show(
    dev: *mut bindings::device,
    _attr: *mut bindings::device_attribute,
    buf: *mut c_char,
) -> isize {
    // SAFETY: every device of the class belongs to a node of a `Port`.
    let port = unsafe { crate::chardev::owner_of_device::<Port>(dev) };
    // SAFETY: `buf` is the page sysfs gives; one unsigned argument.
    unsafe { bindings::sysfs_emit(buf, c"%u\n".as_ptr().cast(), port.number as c_uint) as isize }
}
