// SPDX-License-Identifier: GPL-2.0

//! Character device nodes: number regions, a class, and pairs of a
//! `struct device` and a `struct cdev` whose files are served by a
//! [`FileOps`] implementation ([`file`](mod@file)), with the class's and its
//! devices' read-only sysfs attributes ([`attributes`]).
//!
//! `kernel::miscdevice` registers a node on the misc major with a dynamic
//! minor and a name only; a driver with number regions of its own (fixed
//! ones, as many C drivers have, then dynamic ones), a class, a parent
//! device and attributes wants these.
//!
//! # Examples
//!
//! ```
//! use kernel::chrdev::Region;
//!
//! let region = Region::allocate(2, c"rust_doctest_chrdev")?;
//! let first = region.first();
//! // A second claim of the same numbers fails.
//! let second = Region::claim(first, 2, c"rust_doctest_chrdev").err();
//! drop(region);
//! // Given back on drop, they can be claimed again.
//! let again = Region::claim(first, 2, c"rust_doctest_chrdev").map(|again| again.first());
//! // Asserted once the regions are gone: a failed assertion ends the test
//! // without dropping anything.
//! assert_eq!((second, again), (Some(EBUSY), Ok(first)));
//! # Ok::<(), Error>(())
//! ```
//!
//! Upstream counterpart: none in 6.12 or 7.3 for regions, classes and cdevs
//! outside `miscdevice`; `rust/kernel/miscdevice.rs` is the closest, and the
//! model for [`Node`]'s lifetime rules.

pub(crate) mod attributes;
pub(crate) mod file;

use self::{
    attributes::{devnode_callback, DevnodeDir, ForClass, ForDevices, Groups},
    file::{FileOperations, FileOps},
};
use super::bindings;
use core::{
    fmt,
    marker::PhantomData,
    ptr,
    sync::atomic::{AtomicBool, AtomicPtr, AtomicU8, AtomicUsize, Ordering},
};
use kernel::{
    c_str, device,
    error::to_result,
    ffi::c_char,
    prelude::*,
    str::{CStr, CString},
    sync::{Arc, ArcBorrow},
    types::Opaque,
};

/// A device number, `dev_t`: a major and a minor, as the kernel encodes
/// them (`MKDEV`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Devt(bindings::dev_t);

impl Devt {
    /// The number of `minor` under `major` (`MKDEV`).
    pub(crate) fn new(major: u32, minor: u32) -> Self {
        // SAFETY: a macro's arithmetic, out of line.
        Self(unsafe { bindings::MKDEV(major, minor) })
    }

    /// The major (`MAJOR`).
    pub(crate) fn major(self) -> u32 {
        // SAFETY: as above.
        unsafe { bindings::MAJOR(self.0) }
    }

    /// The minor (`MINOR`).
    pub(crate) fn minor(self) -> u32 {
        // SAFETY: as above.
        unsafe { bindings::MINOR(self.0) }
    }
}

/// The C string of `name`, in a `const fn`: where `CStr` is core's, its
/// `as_char_ptr` comes from a trait and is not `const`.
const fn const_char_ptr(name: &'static CStr) -> *const c_char {
    #[cfg(umad_rs_core_cstr)]
    let ptr = kernel::str::as_char_ptr_in_const_context(name);
    #[cfg(not(umad_rs_core_cstr))]
    let ptr = name.as_char_ptr();
    ptr
}

/// A range of character device numbers, given back on drop.
///
/// # Invariants
///
/// The region `first..first + count` is claimed by this value.
pub(crate) struct Region {
    first: Devt,
    count: u32,
}

impl Region {
    /// Claims `count` numbers from `first` (`register_chrdev_region`).
    pub(crate) fn claim(first: Devt, count: u32, name: &'static CStr) -> Result<Self> {
        // SAFETY: `name` is a NUL-terminated string that outlives the region.
        to_result(unsafe { bindings::register_chrdev_region(first.0, count, name.as_char_ptr()) })?;
        // INVARIANT: claimed just now.
        Ok(Self { first, count })
    }

    /// Claims `count` numbers under a major the kernel picks
    /// (`alloc_chrdev_region`).
    pub(crate) fn allocate(count: u32, name: &'static CStr) -> Result<Self> {
        let mut first = 0;
        // SAFETY: `first` is a valid place for the result; `name` as above.
        to_result(unsafe {
            bindings::alloc_chrdev_region(&mut first, 0, count, name.as_char_ptr())
        })?;
        // INVARIANT: claimed just now.
        Ok(Self {
            first: Devt(first),
            count,
        })
    }

    /// The first number of the region.
    pub(crate) fn first(&self) -> Devt {
        self.first
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: the region is ours by the type invariants.
        unsafe { bindings::unregister_chrdev_region(self.first.0, self.count) };
    }
}

/// A `struct class` whose devices are nodes owned by `O`s, meant to be a
/// `static` like its C counterparts.
///
/// # Invariants
///
/// `registered` is true while a [`ClassRegistration`] of the class lives,
/// and only then is `raw` registered with the driver core. Every device of
/// the class is the device of a [`Node`] added for an owner of type `O`;
/// `nodes` counts those added and not removed.
pub(crate) struct Class<O> {
    raw: Opaque<bindings::class>,
    name: &'static CStr,
    registered: AtomicBool,
    nodes: AtomicUsize,
    _owners: PhantomData<fn(&O)>,
}

// SAFETY: Rust never touches `raw` after construction; the driver core
// serialises its own use of it.
unsafe impl<O> Sync for Class<O> {}

impl<O> Class<O> {
    /// A class named `name` whose device files go in `/dev/<D::DIR>/`, with
    /// `class_groups` for the class and `dev_groups` for each device.
    pub(crate) const fn new<D: DevnodeDir>(
        name: &'static CStr,
        class_groups: &'static Groups<ForClass>,
        dev_groups: &'static Groups<ForDevices<O>>,
    ) -> Self {
        // SAFETY: all zeroes is a valid `class`: no callbacks, no groups.
        let mut raw: bindings::class = unsafe { core::mem::zeroed() };
        raw.name = const_char_ptr(name);
        raw.devnode = Some(devnode_callback::<D>());
        raw.class_groups = class_groups.as_raw();
        raw.dev_groups = dev_groups.as_raw();
        // INVARIANT: not registered yet; devices join only through
        // `Node::add`, which takes an `O` owner, and the device attributes'
        // callbacks are typed for `O`.
        Self {
            raw: Opaque::new(raw),
            name,
            registered: AtomicBool::new(false),
            nodes: AtomicUsize::new(0),
            _owners: PhantomData,
        }
    }

    /// Registers the class until the returned guard is dropped.
    pub(crate) fn register(&'static self) -> Result<ClassRegistration<O>> {
        if self.registered.swap(true, Ordering::AcqRel) {
            return Err(EBUSY);
        }
        // SAFETY: `raw` is a valid, 'static class that is not registered.
        if let Err(e) = to_result(unsafe { bindings::class_register(self.raw.get()) }) {
            self.registered.store(false, Ordering::Release);
            return Err(e);
        }
        // INVARIANT: registered just now, flagged above.
        Ok(ClassRegistration { class: self })
    }

    fn as_raw(&self) -> *mut bindings::class {
        self.raw.get()
    }
}

/// A registered [`Class`]; dropping it unregisters the class, once every
/// node added to it is removed. It is dropped where a task may sleep.
pub(crate) struct ClassRegistration<O: 'static> {
    class: &'static Class<O>,
}

impl<O> Drop for ClassRegistration<O> {
    fn drop(&mut self) {
        // A node still added would be taken out of a class that is gone
        // (`device_del` unlinks it from the class's private data), and a
        // class left registered would outlive the module that holds it.
        // The nodes' owners order it: they remove their nodes before they
        // drop the registration (an IB client's `remove`, which its
        // unregistration waits for). A node never removed is a driver
        // bug, which holds the drop here rather than let either happen.
        if self.class.nodes.load(Ordering::Acquire) != 0 {
            kernel::pr_warn!(
                "class {} dropped with nodes added: waiting for their removal\n",
                self.class.name
            );
            while self.class.nodes.load(Ordering::Acquire) != 0 {
                #[cfg(umad_rs_fsleep)]
                kernel::time::delay::fsleep(kernel::time::Delta::from_millis(10));
                #[cfg(not(umad_rs_fsleep))]
                // SAFETY: a plain sleep, where the drop may sleep.
                unsafe {
                    bindings::msleep(10)
                };
            }
        }
        // SAFETY: registered by `Class::register`, unregistered only here;
        // no node of it is added.
        unsafe { bindings::class_unregister(self.class.as_raw()) };
        self.class.registered.store(false, Ordering::Release);
    }
}

/// A character device node: a `struct device` in a class and its `struct
/// cdev`, added and removed together (`cdev_device_add`/`cdev_device_del`).
///
/// It lives inside its owner (see [`Node::add`]); the device holds a
/// reference to the owner until its release, so the node outlives every
/// file opened on it.
///
/// # Invariants
///
/// `state` goes from `NODE_NEW` to `NODE_ADDING`, then to `NODE_ADDED` and
/// `NODE_GONE`, or straight to `NODE_GONE`, once. From `NODE_ADDING` on,
/// only the `add` that set it touches `dev` and `cdev` until it sets the
/// next state; from then on `dev` is an initialised device whose drvdata
/// is an owner reference made by `Arc::into_raw` and given back by its
/// release callback. While `NODE_ADDED`, `dev` and `cdev` are in the
/// system, counted in `class`'s `nodes`.
#[pin_data]
pub(crate) struct Node {
    #[pin]
    dev: Opaque<bindings::device>,
    #[pin]
    cdev: Opaque<bindings::cdev>,
    state: AtomicU8,
    /// The `nodes` count of the class the node was added to.
    class: AtomicPtr<AtomicUsize>,
}

const NODE_NEW: u8 = 0;
const NODE_ADDING: u8 = 1;
const NODE_ADDED: u8 = 2;
const NODE_GONE: u8 = 3;

// SAFETY: the driver core synchronises its own use of the device and the
// cdev; Rust only hands out their addresses, and `state` is atomic.
unsafe impl Send for Node {}
// SAFETY: as above.
unsafe impl Sync for Node {}

/// Where a [`Node`] goes and what it is called.
pub(crate) struct NodeInfo<'a, O: 'static> {
    /// The class the node's device joins.
    pub(crate) class: &'a ClassRegistration<O>,
    /// The node's parent device, if any.
    pub(crate) parent: Option<&'a device::Device>,
    /// The node's device number.
    pub(crate) devt: Devt,
    /// The node's name, which is its device file's under the class's
    /// directory.
    pub(crate) name: fmt::Arguments<'a>,
}

impl Node {
    /// A node not added yet.
    pub(crate) fn new() -> impl PinInit<Self> {
        // `device_initialize` expects a zeroed device, as from kzalloc.
        pin_init!(Self {
            // SAFETY: the slot is valid for writes of one `device`.
            dev <- Opaque::ffi_init(|slot: *mut bindings::device| unsafe {
                slot.write_bytes(0, 1)
            }),
            // SAFETY: the slot is valid for writes of one `cdev`.
            cdev <- Opaque::ffi_init(|slot: *mut bindings::cdev| unsafe {
                slot.write_bytes(0, 1)
            }),
            // INVARIANT: new.
            state: AtomicU8::new(NODE_NEW),
            class: AtomicPtr::new(ptr::null_mut()),
        })
    }

    /// Adds the node `node(&owner)` to the system with `fops`; its device
    /// keeps a reference to `owner` until it is released. The projection
    /// guarantees the node lives inside the owner (or longer). A node is
    /// added once: `EBUSY` for one that was added before.
    pub(crate) fn add<T: FileOps>(
        owner: &Arc<T::Owner>,
        node: fn(&T::Owner) -> &Node,
        fops: &'static FileOperations<T>,
        info: NodeInfo<'_, T::Owner>,
    ) -> Result {
        let this = node(owner);
        let name = CString::try_from_fmt(info.name)?;
        if this
            .state
            .compare_exchange(NODE_NEW, NODE_ADDING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(EBUSY);
        }
        let dev = this.dev.get();
        let cdev = this.cdev.get();
        let reference = Arc::into_raw(owner.clone());
        #[cfg(umad_rs_in_kernel_crate)]
        let parent = info.parent.map_or(ptr::null_mut(), device::Device::as_raw);
        #[cfg(not(umad_rs_in_kernel_crate))]
        // The crate keeps `Device::as_raw` to itself; `Device` is a
        // transparent `struct device`, as its `from_raw` has it.
        let parent = info.parent.map_or(ptr::null_mut(), |parent| {
            ptr::from_ref(parent).cast_mut().cast::<bindings::device>()
        });
        // INVARIANT: the device is initialised with the owner reference as
        // its drvdata, which `release_device::<T>` gives back: from here on
        // `device_initialize` makes the release callback responsible for it.
        // SAFETY: `dev` and `cdev` are this node's, never used before
        // (checked by `state`).
        unsafe {
            bindings::device_initialize(dev);
            (*dev).class = info.class.class.as_raw();
            (*dev).parent = parent;
            (*dev).devt = info.devt.0;
            (*dev).release = Some(release_device::<T>);
            // `dev_set_drvdata`, which is this store.
            (*dev).driver_data = reference.cast_mut().cast();
        }
        // SAFETY: the device is initialised; the format string takes one
        // C string argument, `name`.
        let ret = to_result(unsafe {
            bindings::dev_set_name(dev, c_str!("%s").as_char_ptr(), name.as_char_ptr())
        });
        // SAFETY: `cdev` is this node's; `fops` is 'static.
        let ret = ret.and_then(|()| unsafe {
            bindings::cdev_init(cdev, fops.as_raw());
            (*cdev).owner = (*fops.as_raw()).owner;
            to_result(bindings::cdev_device_add(cdev, dev))
        });
        if let Err(e) = ret {
            // SAFETY: balances `device_initialize`; the release callback
            // drops the owner reference.
            unsafe { bindings::put_device(dev) };
            // INVARIANT: never in the system; gone for good.
            this.state.store(NODE_GONE, Ordering::Release);
            return Err(e);
        }
        let class = &info.class.class.nodes;
        class.fetch_add(1, Ordering::AcqRel);
        this.class
            .store(ptr::from_ref(class).cast_mut(), Ordering::Release);
        // INVARIANT: in the system, counted in its class.
        this.state.store(NODE_ADDED, Ordering::Release);
        Ok(())
    }

    /// The node's `struct device`, for instance for a netlink answer that
    /// names it.
    ///
    /// # Safety
    ///
    /// The node has been added, and is not removed while the reference
    /// lives (removal drops the reference the device was made with).
    pub(crate) unsafe fn device(&self) -> &device::Device {
        // SAFETY: an added node's device is initialised, and holds the
        // reference it was made with until the node is removed, which the
        // caller rules out meanwhile.
        unsafe { device_ref(self.dev.get()) }
    }

    /// Removes the node, if added: its device file and sysfs directory are
    /// gone when this returns; files already open keep working until
    /// closed, and the owner reference goes with the last of them. Does
    /// nothing for a node that is not added, or whose `add` has not
    /// returned yet.
    pub(crate) fn remove(&self) {
        // INVARIANT: out of the system below, for good.
        if self
            .state
            .compare_exchange(NODE_ADDED, NODE_GONE, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        let class = self.class.load(Ordering::Acquire);
        // SAFETY: the node was added by `Node::add` and is removed once;
        // its class, whose count `add` stored, stays registered while the
        // node is counted in it.
        // The count goes last: the class's registration may go once it is
        // zero, and the put may release the device (and the node with its
        // owner) at once.
        unsafe {
            bindings::cdev_device_del(self.cdev.get(), self.dev.get());
            bindings::put_device(self.dev.get());
            (*class).fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// The owner and the device of the node whose cdev is `cdev`.
    ///
    /// # Safety
    ///
    /// `cdev` is the cdev of a node that `Node::add` added for an owner of
    /// type `O`, and a reference on it (as `chrdev_open` holds) keeps the
    /// node's device alive for `'a`.
    unsafe fn of_cdev<'a, O>(cdev: *mut bindings::cdev) -> (ArcBorrow<'a, O>, &'a device::Device) {
        // SAFETY: `cdev` is the `cdev` field of a `Node`, by the caller's
        // promise; the node's device lives for `'a`, and so its drvdata.
        unsafe {
            let node = kernel::container_of!(cdev.cast::<Opaque<bindings::cdev>>(), Node, cdev);
            let dev = (*node).dev.get();
            (owner_of_device::<O>(dev), device_ref(dev))
        }
    }
}

/// `dev` as the `kernel` crate's `Device`.
///
/// # Safety
///
/// `dev` is an initialised device, alive for `'a`.
unsafe fn device_ref<'a>(dev: *mut bindings::device) -> &'a device::Device {
    let dev = dev.cast();
    #[cfg(umad_rs_device_from_raw)]
    // SAFETY: the caller's promise.
    let device = unsafe { device::Device::from_raw(dev) };
    #[cfg(not(umad_rs_device_from_raw))]
    // SAFETY: the caller's promise.
    let device = unsafe { device::Device::as_ref(dev) };
    device
}

/// `device.release` of a node's device: gives back its owner reference.
///
/// # Safety
///
/// Called by the driver core once, when the last device reference is gone,
/// for a device that `Node::add` set up for `T`.
unsafe extern "C" fn release_device<T: FileOps>(dev: *mut bindings::device) {
    // SAFETY: the device is valid during its release; drvdata is the
    // reference `Node::add` made with `into_raw`, and this is its only
    // `from_raw`.
    drop(unsafe { Arc::<T::Owner>::from_raw((*dev).driver_data.cast()) });
}

/// The owner of the node whose device is `dev`.
///
/// # Safety
///
/// `dev` is the device of a node that `Node::add` added for an owner of
/// type `O`, alive for `'a`.
unsafe fn owner_of_device<'a, O>(dev: *mut bindings::device) -> ArcBorrow<'a, O> {
    // SAFETY: the device is valid for `'a` (the caller's promise), and its
    // drvdata (`dev_get_drvdata`, which is this load) holds an owner
    // reference made by `Arc::into_raw` for as long as the device lives.
    unsafe { ArcBorrow::from_raw((*dev).driver_data.cast()) }
}
