// SPDX-License-Identifier: GPL-2.0

//! A [`Class`](super::Class)'s static C tables: its read-only attributes and its
//! devices', with typed `show` callbacks, and where its device files go
//! under `/dev`. The tables are `static`s, as the C macros
//! (`CLASS_ATTR_RO`, `DEVICE_ATTR_RO`, `ATTRIBUTE_GROUPS`) make them; a
//! device attribute's callback gets the owner of the node it shows.
//!
//! # Examples
//!
//! ```
//! use kernel::chrdev::{
//!     attributes::{
//!         attribute_groups, ClassAttribute, DeviceAttribute, DevnodeDir, ForClass, ForDevices,
//!         Page, ShowClass, ShowDevice, Shown,
//!     },
//!     Class,
//! };
//!
//! struct Sensor {
//!     reading: u32,
//! }
//!
//! struct Version;
//!
//! impl ShowClass for Version {
//!     fn show(out: &mut Page<'_>) -> Result {
//!         out.line_u32(1);
//!         Ok(())
//!     }
//! }
//!
//! struct Reading;
//!
//! impl ShowDevice<Sensor> for Reading {
//!     fn show(node: Shown<'_, Sensor>, out: &mut Page<'_>) -> Result {
//!         out.line_u32(node.owner().reading);
//!         Ok(())
//!     }
//! }
//!
//! static VERSION: ClassAttribute = ClassAttribute::new::<Version>(c"version");
//! static READING: DeviceAttribute<Sensor> = DeviceAttribute::new::<Reading>(c"reading");
//!
//! attribute_groups! {
//!     static CLASS_GROUPS: Groups<ForClass> = [VERSION];
//! }
//! attribute_groups! {
//!     static SENSOR_GROUPS: Groups<ForDevices<Sensor>> = [READING];
//! }
//!
//! /// Device files in `/dev/sensors/`.
//! struct SensorDir;
//!
//! impl DevnodeDir for SensorDir {
//!     const DIR: &'static CStr = c"sensors";
//! }
//!
//! static SENSORS: Class<Sensor> =
//!     Class::new::<SensorDir>(c"rust_doctest_sensors", &CLASS_GROUPS, &SENSOR_GROUPS);
//!
//! // `/sys/class/rust_doctest_sensors/version` while registered.
//! let registration = SENSORS.register()?;
//! let again = SENSORS.register().err();
//! drop(registration);
//! // Unregistered on drop: it registers again.
//! let after = SENSORS.register().map(drop);
//! // Asserted once the class is gone: a failed assertion ends the test
//! // without dropping anything.
//! assert_eq!((again, after), (Some(EBUSY), Ok(())));
//! # Ok::<(), Error>(())
//! ```
//!
//! Upstream counterpart: none in 6.12 or 7.3 (`kernel::device` has no
//! attribute support); a `kernel::sysfs` would replace this file.

use super::{const_char_ptr, Node};
use crate::glue::bindings;
use core::{cell::UnsafeCell, marker::PhantomData, ptr};
use kernel::{
    c_str,
    ffi::{c_char, c_int},
    prelude::*,
    str::CStr,
};

/// What a read of a class attribute shows.
pub(crate) trait ShowClass: 'static {
    /// Fills `out` with the attribute's value.
    fn show(out: &mut Page<'_>) -> Result;
}

/// What a read of an attribute of a device owned by an `O` shows.
pub(crate) trait ShowDevice<O>: 'static {
    /// Fills `out` with the attribute's value for the device of `node`.
    fn show(node: Shown<'_, O>, out: &mut Page<'_>) -> Result;
}

/// The owner of a node one of whose attributes is being shown.
///
/// # Invariants
///
/// The owner's node stays added during `'a`: sysfs holds an active
/// reference on the attribute, and removing the node (`device_del`) waits
/// for it.
pub(crate) struct Shown<'a, O> {
    owner: &'a O,
}

impl<'a, O> Shown<'a, O> {
    /// The owner of the node being shown.
    pub(crate) fn owner(&self) -> &'a O {
        self.owner
    }
}

/// The page a `show` callback fills.
///
/// # Invariants
///
/// `buf` is the `PAGE_SIZE` buffer sysfs gave the running `show` callback,
/// and `len` bytes of it are written.
pub(crate) struct Page<'a> {
    buf: *mut c_char,
    len: c_int,
    _buf: PhantomData<&'a mut [u8]>,
}

// Each line goes through `sysfs_emit_at`, but the first through
// `sysfs_emit`, which checks less: the usual attribute is one line, and
// where a show is inlined into its callback the page is known to be new,
// so the choice folds away.
impl Page<'_> {
    /// Appends `text` and a newline (`%s`), as much as fits: a one-value
    /// attribute's line.
    pub(crate) fn line_str(&mut self, text: &CStr) {
        let format = c_str!("%s\n").as_char_ptr();
        // SAFETY: `buf` is the page and `len` within it, by the type
        // invariants; `%s` reads `text` up to its NUL.
        let added = unsafe {
            if self.len == 0 {
                bindings::sysfs_emit(self.buf, format, text.as_char_ptr())
            } else {
                bindings::sysfs_emit_at(self.buf, self.len, format, text.as_char_ptr())
            }
        };
        // INVARIANT: `added` more bytes were written, within the page.
        self.len += added;
    }

    /// Appends `value` in decimal and a newline (`%u`), as
    /// [`Page::line_str`] does.
    pub(crate) fn line_u32(&mut self, value: u32) {
        let format = c_str!("%u\n").as_char_ptr();
        // SAFETY: as in `line_str`; `%u` takes the `unsigned int`
        // `value` is.
        let added = unsafe {
            if self.len == 0 {
                bindings::sysfs_emit(self.buf, format, value)
            } else {
                bindings::sysfs_emit_at(self.buf, self.len, format, value)
            }
        };
        // INVARIANT: as in `line_str`.
        self.len += added;
    }
}

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

// The `attr` member heads both attribute structs, so a pointer to either
// is a pointer to its `struct attribute`.
const _: () = assert!(core::mem::offset_of!(bindings::class_attribute, attr) == 0);
const _: () = assert!(core::mem::offset_of!(bindings::device_attribute, attr) == 0);

const fn read_only(name: &'static CStr) -> bindings::attribute {
    // SAFETY: all zeroes is a valid `attribute` (lockdep keys unused for
    // static attributes).
    let mut attr: bindings::attribute = unsafe { core::mem::zeroed() };
    attr.name = const_char_ptr(name);
    attr.mode = 0o444;
    attr
}

/// A read-only class attribute (`CLASS_ATTR_RO`).
///
/// # Invariants
///
/// The table's `show` is `show_class::<A>` for the `A` it was made with.
pub(crate) struct ClassAttribute(Table<bindings::class_attribute>);

impl ClassAttribute {
    /// The attribute `name`, which `A` shows.
    pub(crate) const fn new<A: ShowClass>(name: &'static CStr) -> Self {
        // SAFETY: all zeroes is a valid `class_attribute`: no callbacks.
        let mut attr: bindings::class_attribute = unsafe { core::mem::zeroed() };
        attr.attr = read_only(name);
        attr.show = Some(show_class::<A>);
        // INVARIANT: `show` is `A`'s.
        Self(Table(UnsafeCell::new(attr)))
    }

    /// The attribute, for a group of class attributes.
    pub(crate) const fn attribute(&'static self) -> Attribute<ForClass> {
        // INVARIANT: a `'static` class attribute (its `attr` heads it).
        Attribute(self.0.get().cast(), PhantomData)
    }
}

/// A read-only attribute of devices owned by `O`s (`DEVICE_ATTR_RO`).
///
/// # Invariants
///
/// The table's `show` is `show_device::<O, A>` for the `A` it was made
/// with.
pub(crate) struct DeviceAttribute<O>(Table<bindings::device_attribute>, PhantomData<fn(&O)>);

impl<O: 'static> DeviceAttribute<O> {
    /// The attribute `name`, which `A` shows.
    pub(crate) const fn new<A: ShowDevice<O>>(name: &'static CStr) -> Self {
        // SAFETY: all zeroes is a valid `device_attribute`: no callbacks.
        let mut attr: bindings::device_attribute = unsafe { core::mem::zeroed() };
        attr.attr = read_only(name);
        let show: DeviceShow = show_device::<O, A>;
        // `show` shares an anonymous union (a struct under CFI) with
        // `show_const` where the kernel has that.
        #[cfg(umad_rs_device_show_union)]
        {
            attr.__bindgen_anon_1.show = Some(show);
        }
        #[cfg(not(umad_rs_device_show_union))]
        {
            attr.show = Some(show);
        }
        // INVARIANT: `show` is `A`'s, for devices owned by `O`s.
        Self(Table(UnsafeCell::new(attr)), PhantomData)
    }

    /// The attribute, for a group of attributes of devices owned by `O`s.
    pub(crate) const fn attribute(&'static self) -> Attribute<ForDevices<O>> {
        // INVARIANT: a `'static` device attribute for `O`s (its `attr`
        // heads it).
        Attribute(self.0.get().cast(), PhantomData)
    }
}

/// What the callbacks of class attributes take: the class.
pub(crate) enum ForClass {}

/// What the callbacks of attributes of devices owned by `O`s take: such a
/// device.
pub(crate) struct ForDevices<O>(PhantomData<fn(&O)>);

/// A `'static` attribute whose callbacks take what `K` says
/// ([`ForClass`], [`ForDevices`]): the type keeps a class's attributes and
/// its devices', and devices of different owners, apart.
///
/// # Invariants
///
/// The pointer is the `attr` of a `'static` [`ClassAttribute`] if `K` is
/// [`ForClass`], of a `'static` [`DeviceAttribute<O>`] if `K` is
/// [`ForDevices<O>`].
pub(crate) struct Attribute<K>(*mut bindings::attribute, PhantomData<fn(&K)>);

impl<K> Clone for Attribute<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for Attribute<K> {}

/// A null-terminated array of `N` attributes of one kind `K`, a group of
/// them, and the null-terminated list of that one group: what
/// `class.class_groups` and `class.dev_groups` point to. Made by
/// [`attribute_groups!`].
///
/// # Invariants
///
/// `attrs` are [`Attribute<K>`]s, and `end` is null.
#[repr(C)]
pub(crate) struct AttributeArray<K, const N: usize> {
    attrs: [*mut bindings::attribute; N],
    end: *mut bindings::attribute,
    _kind: PhantomData<fn(&K)>,
}

// SAFETY: pointers to `'static` tables that nothing writes.
unsafe impl<K, const N: usize> Sync for AttributeArray<K, N> {}

impl<K, const N: usize> AttributeArray<K, N> {
    /// The array of `attrs`.
    pub(crate) const fn new(attrs: [Attribute<K>; N]) -> Self {
        let mut raw = [ptr::null_mut(); N];
        let mut i = 0;
        while i < N {
            raw[i] = attrs[i].0;
            i += 1;
        }
        // INVARIANT: the attributes given, then the null that ends them.
        Self {
            attrs: raw,
            end: ptr::null_mut(),
            _kind: PhantomData,
        }
    }
}

/// The group list of [`attribute_groups!`], typed by what its callbacks
/// take.
///
/// # Invariants
///
/// The list is one `'static` [`GroupTable<K>`], then null.
pub(crate) struct Groups<K>(
    Table<[*const bindings::attribute_group; 2]>,
    PhantomData<fn(&K)>,
);

impl<K> Groups<K> {
    /// The list of the one group `group`.
    #[doc(hidden)]
    pub(crate) const fn new(group: &'static GroupTable<K>) -> Self {
        // INVARIANT: `group`, then the null that ends the list.
        Self(
            Table(UnsafeCell::new([group.0.get(), ptr::null()])),
            PhantomData,
        )
    }

    pub(super) const fn as_raw(&'static self) -> *mut *const bindings::attribute_group {
        self.0.get().cast()
    }
}

/// One `struct attribute_group` of attributes of one kind `K`.
///
/// # Invariants
///
/// The group's `attrs` is a `'static` [`AttributeArray<K, N>`].
#[doc(hidden)]
pub(crate) struct GroupTable<K>(Table<bindings::attribute_group>, PhantomData<fn(&K)>);

impl<K> GroupTable<K> {
    /// The group of `attrs`.
    pub(crate) const fn new<const N: usize>(attrs: &'static AttributeArray<K, N>) -> Self {
        // SAFETY: all zeroes is a valid `attribute_group`.
        let mut group: bindings::attribute_group = unsafe { core::mem::zeroed() };
        let attrs: *const AttributeArray<K, N> = attrs;
        let attrs = attrs.cast_mut().cast();
        // `attrs` shares an anonymous union with `attrs_const` where the
        // kernel has that.
        #[cfg(umad_rs_group_attrs_union)]
        {
            group.__bindgen_anon_2.attrs = attrs;
        }
        #[cfg(not(umad_rs_group_attrs_union))]
        {
            group.attrs = attrs;
        }
        // INVARIANT: `attrs` is the array given.
        Self(Table(UnsafeCell::new(group)), PhantomData)
    }
}

/// `static $name: Groups<$kind>`: one group of the given attributes, all of
/// the kind `$kind` ([`ForClass`], [`ForDevices`]).
macro_rules! attribute_groups {
    ($vis:vis static $name:ident: Groups<$kind:ty> = [$($attr:expr),+ $(,)?];) => {
        $vis static $name: $crate::glue::chrdev::attributes::Groups<$kind> = {
            const N: usize = [$(stringify!($attr)),+].len();
            static ATTRS: $crate::glue::chrdev::attributes::AttributeArray<$kind, N> =
                $crate::glue::chrdev::attributes::AttributeArray::new([$($attr.attribute()),+]);
            static GROUP: $crate::glue::chrdev::attributes::GroupTable<$kind> =
                $crate::glue::chrdev::attributes::GroupTable::new(&ATTRS);
            $crate::glue::chrdev::attributes::Groups::new(&GROUP)
        };
    };
}
pub(crate) use attribute_groups;

/// Where a class's device files go: `/dev/<DIR>/<device name>`.
pub(crate) trait DevnodeDir: 'static {
    /// The directory under `/dev`.
    const DIR: &'static CStr;
}

/// The `devnode` callback of a class whose files go under `D::DIR`.
pub(super) const fn devnode_callback<D: DevnodeDir>(
) -> unsafe extern "C" fn(*const bindings::device, *mut u16) -> *mut c_char {
    devnode::<D>
}

/// `class.devnode`: `/dev/<D::DIR>/<name>`, default mode.
///
/// # Safety
///
/// `dev` is a valid, named device.
unsafe extern "C" fn devnode<D: DevnodeDir>(
    dev: *const bindings::device,
    _mode: *mut u16,
) -> *mut c_char {
    // SAFETY: the driver core passes a valid, named device; the format
    // takes two C strings.
    unsafe {
        bindings::kasprintf(
            kernel::bindings::GFP_KERNEL,
            c_str!("%s/%s").as_char_ptr(),
            D::DIR.as_char_ptr(),
            dev_name(dev),
        )
    }
}

/// A device attribute's `show` callback.
type DeviceShow = unsafe extern "C" fn(
    *mut bindings::device,
    *mut bindings::device_attribute,
    *mut c_char,
) -> isize;

/// `dev_name(dev)`: the `kernel` crate's helper where it has one, the
/// module's before.
///
/// # Safety
///
/// `dev` is a valid device; the name lives until the device's is changed.
unsafe fn dev_name(dev: *const bindings::device) -> *const c_char {
    #[cfg(umad_rs_dev_name)]
    // SAFETY: the caller's promise.
    let name = unsafe { kernel::bindings::dev_name(dev.cast()) };
    #[cfg(not(umad_rs_dev_name))]
    // SAFETY: the caller's promise.
    let name = unsafe { bindings::dev_name(dev) };
    name
}

/// A `show` callback's return: the length written, or a negative errno.
fn shown(page: Page<'_>, result: Result) -> isize {
    let written = result.map(|()| page.len).unwrap_or_else(|e| e.to_errno());
    // CAST: an int, widened.
    written as isize
}

/// `class_attribute.show` of `A`.
///
/// # Safety
///
/// `buf` is the page sysfs gives a show callback.
unsafe extern "C" fn show_class<A: ShowClass>(
    _class: *const bindings::class,
    _attr: *const bindings::class_attribute,
    buf: *mut c_char,
) -> isize {
    // INVARIANT: sysfs's page, nothing written yet.
    let mut page = Page {
        buf,
        len: 0,
        _buf: PhantomData,
    };
    let result = A::show(&mut page);
    shown(page, result)
}

/// `device_attribute.show` of `A` for a device owned by an `O`.
///
/// # Safety
///
/// `dev` is the device of a node added for an `O` (the attribute is in a
/// [`Groups<ForDevices<O>>`], which only a `Class<O>` takes, whose devices are such
/// nodes), alive during the call: sysfs holds an active reference on the
/// attribute, and `device_del` drains it. `buf` is sysfs's page.
unsafe extern "C" fn show_device<O: 'static, A: ShowDevice<O>>(
    dev: *mut bindings::device,
    _attr: *mut bindings::device_attribute,
    buf: *mut c_char,
) -> isize {
    // SAFETY: the device is a `Node<O>`'s, alive during the call, as the
    // caller promises.
    let owner = unsafe { (*Node::<O>::from_device(dev)).owner() };
    // INVARIANT: sysfs's page, nothing written yet.
    let mut page = Page {
        buf,
        len: 0,
        _buf: PhantomData,
    };
    // INVARIANT: the show runs with the attribute active (see above).
    let node = Shown { owner: &**owner };
    let result = A::show(node, &mut page);
    shown(page, result)
}
