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
    sync::atomic::{AtomicBool, Ordering},
};
#[cfg(umad_rs_sync_aref)]
use kernel::sync::aref::{ARef, AlwaysRefCounted};
#[cfg(not(umad_rs_sync_aref))]
use kernel::types::{ARef, AlwaysRefCounted};
use kernel::{
    c_str, device,
    error::to_result,
    ffi::c_char,
    prelude::*,
    str::{CStr, CString},
    sync::{Arc, CondVar, SpinLock},
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
/// the class is the device of a [`Node`] added for an owner of type `O`.
pub(crate) struct Class<O> {
    raw: Opaque<bindings::class>,
    name: &'static CStr,
    registered: AtomicBool,
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
            _owners: PhantomData,
        }
    }

    /// Registers the class until the returned guard is dropped.
    pub(crate) fn register(&'static self) -> Result<ClassRegistration<O>> {
        let nodes = Arc::pin_init(Holders::new(), GFP_KERNEL)?;
        if self.registered.swap(true, Ordering::AcqRel) {
            return Err(EBUSY);
        }
        // SAFETY: `raw` is a valid, 'static class that is not registered.
        if let Err(e) = to_result(unsafe { bindings::class_register(self.raw.get()) }) {
            self.registered.store(false, Ordering::Release);
            return Err(e);
        }
        // INVARIANT: registered just now, flagged above; the registration
        // is `nodes`' one holder.
        Ok(ClassRegistration { class: self, nodes })
    }

    fn as_raw(&self) -> *mut bindings::class {
        self.raw.get()
    }
}

/// A registered [`Class`]; dropping it unregisters the class, once every
/// node added to it is removed. It is dropped where a task may sleep.
///
/// # Examples
///
/// A node still added when the registration is dropped holds the drop
/// until it is removed, here by a work item:
///
/// ```
/// use kernel::{
///     chrdev::{
///         attributes::{
///             attribute_groups, ClassAttribute, DeviceAttribute, DevnodeDir, ForClass,
///             ForDevices, Page, ShowClass, ShowDevice, Shown,
///         },
///         file::{FileOperations, FileOps},
///         Class, Node, NodeInfo, Region,
///     },
///     fs::File,
///     sync::Arc,
///     time::{delay::fsleep, Delta},
///     workqueue, ModuleMetadata,
/// };
/// use core::sync::atomic::{AtomicBool, Ordering};
///
/// struct Fan;
///
/// struct FanFiles;
///
/// #[vtable]
/// impl FileOps for FanFiles {
///     type Owner = Fan;
///     type Ptr = KBox<()>;
///
///     fn open(_: &Node<Fan>, _: &File) -> Result<KBox<()>> {
///         Ok(KBox::new((), GFP_KERNEL)?)
///     }
///
///     fn release(_: KBox<()>, _: &File) {}
/// }
///
/// struct Zero;
///
/// impl ShowClass for Zero {
///     fn show(out: &mut Page<'_>) -> Result {
///         out.line_u32(0);
///         Ok(())
///     }
/// }
///
/// impl ShowDevice<Fan> for Zero {
///     fn show(_: Shown<'_, Fan>, out: &mut Page<'_>) -> Result {
///         out.line_u32(0);
///         Ok(())
///     }
/// }
///
/// static CLASS_ZERO: ClassAttribute = ClassAttribute::new::<Zero>(c"zero");
/// static FAN_ZERO: DeviceAttribute<Fan> = DeviceAttribute::new::<Zero>(c"zero");
///
/// attribute_groups! {
///     static CLASS_GROUPS: Groups<ForClass> = [CLASS_ZERO];
/// }
/// attribute_groups! {
///     static FAN_GROUPS: Groups<ForDevices<Fan>> = [FAN_ZERO];
/// }
///
/// struct FanDir;
///
/// impl DevnodeDir for FanDir {
///     const DIR: &'static CStr = c"fans";
/// }
///
/// static FANS: Class<Fan> =
///     Class::new::<FanDir>(c"rust_doctest_fans", &CLASS_GROUPS, &FAN_GROUPS);
/// static FAN_FILES: FileOperations<FanFiles> =
///     FileOperations::new(&<LocalModule as ModuleMetadata>::THIS_MODULE);
/// static REMOVED: AtomicBool = AtomicBool::new(false);
///
/// let region = Region::allocate(1, c"rust_doctest_fans")?;
/// let class = FANS.register()?;
/// let fan = Node::add(
///     Arc::new(Fan, GFP_KERNEL)?,
///     &FAN_FILES,
///     NodeInfo {
///         class: &class,
///         parent: None,
///         devt: region.first(),
///         name: format_args!("fan0"),
///     },
/// )?;
/// workqueue::system().try_spawn(GFP_KERNEL, move || {
///     // Long enough for the class's drop to be waiting.
///     fsleep(Delta::from_millis(100));
///     REMOVED.store(true, Ordering::Relaxed);
///     drop(fan);
/// })?;
/// drop(class);
/// let removed = REMOVED.load(Ordering::Relaxed);
/// // The drop unregistered the class: it registers again.
/// let again = FANS.register().map(drop);
/// drop(region);
/// // Asserted once everything is gone: a failed assertion ends the test
/// // without dropping anything.
/// assert_eq!((removed, again), (true, Ok(())));
/// # Ok::<(), Error>(())
/// ```
///
/// # Invariants
///
/// The class is registered; `nodes` counts this registration and the
/// [`NodeRegistration`]s of the class.
pub(crate) struct ClassRegistration<O: 'static> {
    class: &'static Class<O>,
    nodes: Arc<Holders>,
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
        let mut count = self.nodes.count.lock();
        *count -= 1;
        if *count != 0 {
            kernel::pr_warn!(
                "class {} dropped with nodes added: waiting for their removal\n",
                self.class.name
            );
        }
        while *count != 0 {
            self.nodes.none_left.wait(&mut count);
        }
        drop(count);
        // SAFETY: registered by `Class::register`, unregistered only here;
        // no node of it is added.
        unsafe { bindings::class_unregister(self.class.as_raw()) };
        self.class.registered.store(false, Ordering::Release);
    }
}

/// The holders of a class's registration: the registration itself and
/// each node added to the class, whose removal the registration's drop
/// waits for.
#[pin_data]
struct Holders {
    #[pin]
    count: SpinLock<usize>,
    #[pin]
    none_left: CondVar,
}

impl Holders {
    /// The registration, the one holder.
    fn new() -> impl PinInit<Self> {
        // Lockdep takes a lock class as one key with one name, compared by
        // address. The initialiser is built in each module that registers
        // a class, where a literal name would be that module's copy, while
        // the key is the kernel crate's static: so is the name.
        static COUNT: &CStr = c_str!("chrdev::Holders::count");
        static NONE_LEFT: &CStr = c_str!("chrdev::Holders::none_left");
        pin_init!(Self {
            count <- SpinLock::new(1, COUNT, kernel::static_lock_class!()),
            none_left <- CondVar::new(NONE_LEFT, kernel::static_lock_class!()),
        })
    }

    /// One holder more.
    fn hold(&self) {
        *self.count.lock() += 1;
    }

    /// One holder less, waking the registration's drop at the last.
    fn release(&self) {
        let mut count = self.count.lock();
        *count -= 1;
        if *count == 0 {
            self.none_left.notify_all();
        }
    }
}

/// A character device node: a `struct device` in a class and its `struct
/// cdev`, serving files for an owner `O`.
///
/// The device's reference count owns the node, as a C driver's device owns
/// the structure that embeds it: an `ARef<Node<O>>` is a device reference
/// (`get_device`/`put_device`), and the last one frees the node and drops
/// its owner reference. A [`NodeRegistration`] keeps the node in the
/// system; a file opened on it keeps the node by its cdev.
///
/// # Examples
///
/// ```
/// use kernel::{
///     chrdev::{
///         attributes::{
///             attribute_groups, ClassAttribute, DeviceAttribute, DevnodeDir, ForClass,
///             ForDevices, Page, ShowClass, ShowDevice, Shown,
///         },
///         file::{FileOperations, FileOps},
///         Class, Node, NodeInfo, Region,
///     },
///     fs::File,
///     sync::{aref::ARef, Arc},
///     ModuleMetadata,
/// };
/// use core::sync::atomic::{AtomicUsize, Ordering};
///
/// struct Lamp {
///     watts: u32,
/// }
///
/// static LAMPS_FREED: AtomicUsize = AtomicUsize::new(0);
///
/// impl Drop for Lamp {
///     fn drop(&mut self) {
///         LAMPS_FREED.fetch_add(1, Ordering::Relaxed);
///     }
/// }
///
/// /// A lamp's files: opening one does nothing.
/// struct LampFiles;
///
/// #[vtable]
/// impl FileOps for LampFiles {
///     type Owner = Lamp;
///     type Ptr = KBox<()>;
///
///     fn open(_: &Node<Lamp>, _: &File) -> Result<KBox<()>> {
///         Ok(KBox::new((), GFP_KERNEL)?)
///     }
///
///     fn release(_: KBox<()>, _: &File) {}
/// }
///
/// struct Version;
///
/// impl ShowClass for Version {
///     fn show(out: &mut Page<'_>) -> Result {
///         out.line_u32(1);
///         Ok(())
///     }
/// }
///
/// struct Watts;
///
/// impl ShowDevice<Lamp> for Watts {
///     fn show(node: Shown<'_, Lamp>, out: &mut Page<'_>) -> Result {
///         out.line_u32(node.owner().watts);
///         Ok(())
///     }
/// }
///
/// static VERSION: ClassAttribute = ClassAttribute::new::<Version>(c"version");
/// static WATTS: DeviceAttribute<Lamp> = DeviceAttribute::new::<Watts>(c"watts");
///
/// attribute_groups! {
///     static CLASS_GROUPS: Groups<ForClass> = [VERSION];
/// }
/// attribute_groups! {
///     static LAMP_GROUPS: Groups<ForDevices<Lamp>> = [WATTS];
/// }
///
/// /// Device files in `/dev/lamps/`.
/// struct LampDir;
///
/// impl DevnodeDir for LampDir {
///     const DIR: &'static CStr = c"lamps";
/// }
///
/// static LAMPS: Class<Lamp> =
///     Class::new::<LampDir>(c"rust_doctest_lamps", &CLASS_GROUPS, &LAMP_GROUPS);
/// static LAMP_FILES: FileOperations<LampFiles> =
///     FileOperations::new(&<LocalModule as ModuleMetadata>::THIS_MODULE);
///
/// let class = LAMPS.register()?;
/// let region = Region::allocate(1, c"rust_doctest_lamps")?;
/// let add = || {
///     let lamp = Arc::new(Lamp { watts: 40 }, GFP_KERNEL)?;
///     Node::add(
///         lamp,
///         &LAMP_FILES,
///         NodeInfo {
///             class: &class,
///             parent: None,
///             devt: region.first(),
///             name: format_args!("lamp0"),
///         },
///     )
/// };
/// let registration = add()?;
/// // `/dev/lamps/lamp0` and `/sys/class/rust_doctest_lamps/lamp0/watts`.
/// let node = ARef::from(registration.node());
/// drop(registration);
/// // Out of the system, so the same number and name can be added again,
/// // while the reference still holds the node and its owner.
/// let again = add().map(drop);
/// let (watts, held) = (node.owner().watts, LAMPS_FREED.load(Ordering::Relaxed));
/// // The last reference to each node frees it, and drops its owner.
/// drop(node);
/// let freed = LAMPS_FREED.load(Ordering::Relaxed);
/// drop(region);
/// drop(class);
/// // Asserted once everything is gone: a failed assertion ends the test
/// // without dropping anything. A debug kernel may delay the releases.
/// assert_eq!((again, watts), (Ok(()), 40));
/// if !cfg!(CONFIG_DEBUG_KOBJECT_RELEASE) {
///     assert_eq!((held, freed), (1, 2));
/// }
/// # Ok::<(), Error>(())
/// ```
///
/// # Invariants
///
/// `dev` is an initialised device whose release callback is
/// `release_node::<O>`, and whose reference count owns this allocation,
/// made by `KBox`. `cdev` is initialised (`cdev_init`) with the operations
/// of a [`FileOps`] whose owner is `O`.
#[pin_data]
pub(crate) struct Node<O: 'static> {
    #[pin]
    dev: Opaque<bindings::device>,
    #[pin]
    cdev: Opaque<bindings::cdev>,
    owner: Arc<O>,
    /// The holders of the class's registration, which the node's
    /// registration is one of.
    class_nodes: Arc<Holders>,
}

// SAFETY: the driver core synchronises its own use of the device and the
// cdev; the rest is an `Arc` of a `Send + Sync` owner and a shared class.
unsafe impl<O: Send + Sync + 'static> Send for Node<O> {}
// SAFETY: as above.
unsafe impl<O: Send + Sync + 'static> Sync for Node<O> {}

// SAFETY: a node's references are its device's (the type invariants),
// which `get_device` and `put_device` count; the last one frees the node.
unsafe impl<O: 'static> AlwaysRefCounted for Node<O> {
    fn inc_ref(&self) {
        // SAFETY: the device is initialised, by the type invariants.
        unsafe { bindings::get_device(self.dev.get()) };
    }

    unsafe fn dec_ref(node: ptr::NonNull<Self>) {
        // SAFETY: the caller gives up a reference it holds, so the node is
        // valid until this put.
        unsafe { bindings::put_device(node.as_ref().dev.get()) };
    }
}

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

impl<O: Send + Sync + 'static> Node<O> {
    /// Adds a node whose files `fops` serves for `owner`, until the
    /// returned registration is dropped.
    pub(crate) fn add<T: FileOps<Owner = O>>(
        owner: Arc<O>,
        fops: &'static FileOperations<T>,
        info: NodeInfo<'_, O>,
    ) -> Result<NodeRegistration<O>> {
        let name = CString::try_from_fmt(info.name)?;
        let class = info.class.class;
        let class_nodes = info.class.nodes.clone();
        let node = KBox::pin_init(
            // `device_initialize` and `cdev_init` expect zeroed structures,
            // as from kzalloc.
            pin_init!(Self {
                // SAFETY: the slot is valid for writes of one `device`.
                dev <- Opaque::ffi_init(|slot: *mut bindings::device| unsafe {
                    slot.write_bytes(0, 1)
                }),
                // SAFETY: the slot is valid for writes of one `cdev`.
                cdev <- Opaque::ffi_init(|slot: *mut bindings::cdev| unsafe {
                    slot.write_bytes(0, 1)
                }),
                owner,
                class_nodes,
            }),
            GFP_KERNEL,
        )?;
        // SAFETY: the node is never moved out of its allocation, which the
        // device's reference count owns from here on.
        let node = KBox::into_raw(unsafe { Pin::into_inner_unchecked(node) });
        #[cfg(umad_rs_in_kernel_crate)]
        let parent = info.parent.map_or(ptr::null_mut(), device::Device::as_raw);
        #[cfg(not(umad_rs_in_kernel_crate))]
        // The crate keeps `Device::as_raw` to itself; `Device` is a
        // transparent `struct device`, as its `from_raw` has it.
        let parent = info.parent.map_or(ptr::null_mut(), |parent| {
            ptr::from_ref(parent).cast_mut().cast::<bindings::device>()
        });
        // `Opaque` is a transparent wrapper; these keep `node`'s provenance,
        // which `release_node` needs back from the device.
        // SAFETY: `node` is valid; no reference to the node exists.
        let (dev, cdev) = unsafe {
            (
                ptr::addr_of_mut!((*node).dev).cast::<bindings::device>(),
                ptr::addr_of_mut!((*node).cdev).cast::<bindings::cdev>(),
            )
        };
        // SAFETY: `dev` and `cdev` are zeroed, as `cdev_init` and
        // `device_initialize` expect; `fops` is 'static. From the device's
        // initialisation on, its release callback frees the node.
        let node = unsafe {
            bindings::cdev_init(cdev, fops.as_raw());
            (*cdev).owner = (*fops.as_raw()).owner;
            bindings::device_initialize(dev);
            (*dev).class = class.as_raw();
            (*dev).parent = parent;
            (*dev).devt = info.devt.0;
            (*dev).release = Some(release_node::<O>);
            // INVARIANT: the device is initialised, released by
            // `release_node::<O>`, and `device_initialize`'s reference is
            // this `ARef`'s; the cdev has `T`'s operations, whose owner is
            // `O`.
            ARef::from_raw(ptr::NonNull::new_unchecked(node))
        };
        // SAFETY: the device is initialised; the format string takes one
        // C string argument, `name`.
        to_result(unsafe {
            bindings::dev_set_name(dev, c_str!("%s").as_char_ptr(), name.as_char_ptr())
        })?;
        // SAFETY: both are initialised, and the device named.
        to_result(unsafe { bindings::cdev_device_add(cdev, dev) })?;
        node.class_nodes.hold();
        // INVARIANT: in the system, the cdev's parent the device
        // (`cdev_device_add`), a holder of its class's registration just
        // now.
        Ok(NodeRegistration { node })
    }
}

impl<O: 'static> Node<O> {
    /// The node's owner.
    pub(crate) fn owner(&self) -> &Arc<O> {
        &self.owner
    }

    /// The node's device.
    pub(crate) fn device(&self) -> &device::Device {
        // SAFETY: the device is initialised (the type invariants), and
        // lives as long as the node.
        unsafe { device_ref(self.dev.get()) }
    }

    /// The node whose cdev is `cdev`.
    ///
    /// # Safety
    ///
    /// `cdev` is the cdev of a `Node<O>`, which a reference on it (as
    /// `chrdev_open` holds, and the parent device with it) keeps alive
    /// for `'a`.
    unsafe fn of_cdev<'a>(cdev: *mut bindings::cdev) -> &'a Self {
        // SAFETY: `cdev` is the `cdev` field of a `Node<O>`, by the
        // caller's promise.
        let node =
            unsafe { kernel::container_of!(cdev.cast::<Opaque<bindings::cdev>>(), Self, cdev) };
        // SAFETY: the node lives for `'a`, by the caller's promise.
        unsafe { &*node }
    }

    /// The node whose device is `dev`.
    ///
    /// # Safety
    ///
    /// `dev` is the device of a `Node<O>`.
    unsafe fn from_device(dev: *mut bindings::device) -> *mut Self {
        let dev = dev.cast::<Opaque<bindings::device>>();
        #[cfg(umad_rs_container_of_mut)]
        // SAFETY: `dev` is the `dev` field of a `Node<O>`, by the caller's
        // promise.
        let node = unsafe { kernel::container_of!(dev, Self, dev) };
        #[cfg(not(umad_rs_container_of_mut))]
        // SAFETY: as above; this `container_of!` gives a `*const`.
        let node = unsafe { kernel::container_of!(dev, Self, dev) }.cast_mut();
        node
    }
}

/// A [`Node`] in the system (`cdev_device_add`) until dropped
/// (`cdev_device_del`): its device file and sysfs directory are gone when
/// the drop returns. Files already open keep working until closed, each
/// holding the node.
///
/// # Invariants
///
/// `node`'s device and cdev are in the system, the cdev's parent the
/// device, and it is one of the holders of its class's registration.
#[must_use = "dropping the registration removes the node"]
pub(crate) struct NodeRegistration<O: Send + Sync + 'static> {
    node: ARef<Node<O>>,
}

impl<O: Send + Sync + 'static> NodeRegistration<O> {
    /// The node, which an `ARef` of it keeps after the registration.
    pub(crate) fn node(&self) -> &Node<O> {
        &self.node
    }
}

impl<O: Send + Sync + 'static> Drop for NodeRegistration<O> {
    fn drop(&mut self) {
        // SAFETY: in the system by the type invariants, taken out once,
        // here.
        unsafe { bindings::cdev_device_del(self.node.cdev.get(), self.node.dev.get()) };
        // After the deletion: the class's registration may go once it is
        // the last holder.
        self.node.class_nodes.release();
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

/// `device.release` of a node's device: frees the node.
///
/// # Safety
///
/// Called by the driver core once, when the last reference to a
/// `Node<O>`'s device is gone.
unsafe extern "C" fn release_node<O: 'static>(dev: *mut bindings::device) {
    // SAFETY: the device is a `Node<O>`'s, whose allocation its reference
    // count owned (the type invariants); this is the last reference.
    drop(unsafe { KBox::from_raw(Node::<O>::from_device(dev)) });
}
