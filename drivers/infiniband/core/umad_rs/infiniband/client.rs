// SPDX-License-Identifier: GPL-2.0

//! IB clients (`struct ib_client`, `include/rdma/ib_verbs.h`): a static
//! description, a guard that unregisters on drop, and trait callbacks
//! reached through generic `extern "C"` trampolines.
//!
//! Upstream counterpart: none yet (see `infiniband.rs`).

use super::{
    device::{Adding, Users},
    Device,
};
use crate::glue::bindings;
use core::{
    marker::PhantomData,
    sync::atomic::{AtomicBool, AtomicPtr, Ordering},
};
use kernel::{
    device,
    error::{from_result, to_result},
    ffi::{c_int, c_void},
    prelude::*,
    str::CStr,
    types::{ForeignOwnable, Opaque},
};

/// The callbacks of an IB client.
pub(crate) trait ClientOps: Sized + 'static {
    /// What the client keeps per device, from `add` until `remove`; the
    /// callbacks that borrow it may run at once on several CPUs.
    type DeviceData: ForeignOwnable + Send + Sync;
    /// What the callbacks share, from registration until unregistration.
    type Context: Send + Sync;

    /// The client these callbacks belong to.
    fn client() -> &'static Client<Self>;

    /// A device appeared (or the client was registered while it was there).
    /// An error means the client does not use this device; `remove` is then
    /// not called for it. The client may keep handles to the device
    /// ([`Adding::handle`]) until its `remove` for it, which waits for
    /// them; after an error, `add` itself waits for those it made, with
    /// the IB core's device and client locks held, so an error drops them
    /// all first.
    fn add(context: &Self::Context, device: &Adding<'_>) -> Result<Self::DeviceData>;

    /// The device is going away (or the client is being unregistered).
    fn remove(context: &Self::Context, data: Self::DeviceData);

    /// The device has a new name (`ib_device_rename`), which `device`
    /// gives. Runs while `add` has succeeded and `remove` has not started.
    fn rename(_data: <Self::DeviceData as ForeignOwnable>::Borrowed<'_>, _device: &Device) {}

    /// Which character device serves `port` (`RDMA_NLDEV_CMD_GET_CHARDEV`).
    /// Runs while `add` has succeeded and `remove` has not started; the
    /// device the answer names is one that `data` holds.
    fn chardev<'a>(
        data: <Self::DeviceData as ForeignOwnable>::Borrowed<'a>,
        port: u32,
    ) -> Result<Chardev<'a>, NoChardev>;
}

/// Why a client names no character device for a port. These are the
/// answers a client may give: the IB core takes `ENOENT` from a client for
/// its own "no such client", with a warning, so no other error is open to
/// it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NoChardev {
    /// The device has no such port, or the query named none: `EINVAL`.
    NoSuchPort,
    /// The port has no node of the client's: `EOPNOTSUPP`.
    NotServed,
}

impl NoChardev {
    /// The answer's errno, negative, as `get_nl_info` returns it.
    fn to_errno(self) -> c_int {
        match self {
            Self::NoSuchPort => EINVAL.to_errno(),
            // CAST: an errno constant, below 4096, which fits.
            #[allow(clippy::cast_possible_wrap)]
            Self::NotServed => -(bindings::EOPNOTSUPP as c_int),
        }
    }
}

/// A character device that serves a client on a port, for netlink: the
/// IB core takes its own reference on the device before the client's data
/// that holds it can go.
pub(crate) struct Chardev<'a> {
    device: &'a device::Device,
    abi: u32,
}

impl<'a> Chardev<'a> {
    /// The answer for the node whose device is `device`, and whose
    /// interface has ABI version `abi`.
    pub(crate) fn new(device: &'a device::Device, abi: u32) -> Self {
        Self { device, abi }
    }
}

/// A `struct ib_client`, meant to be a `static` like its C counterparts.
///
/// # Examples
///
/// ```
/// use kernel::{
///     infiniband::{Adding, Chardev, Client, ClientOps, NoChardev},
///     types::ForeignOwnable,
/// };
///
/// /// Keeps a number per IB device.
/// struct Counter;
///
/// impl ClientOps for Counter {
///     type DeviceData = KBox<u32>;
///     type Context = ();
///
///     fn client() -> &'static Client<Self> {
///         &COUNTER
///     }
///
///     fn add(_context: &(), _device: &Adding<'_>) -> Result<KBox<u32>> {
///         Ok(KBox::new(0, GFP_KERNEL)?)
///     }
///
///     fn remove(_context: &(), _data: KBox<u32>) {}
///
///     fn chardev<'a>(
///         _data: <Self::DeviceData as ForeignOwnable>::Borrowed<'a>,
///         _port: u32,
///     ) -> Result<Chardev<'a>, NoChardev> {
///         Err(NoChardev::NotServed)
///     }
/// }
///
/// static COUNTER: Client<Counter> = Client::new(c"rust_doctest_counter");
/// static OTHER: Client<Counter> = Client::new(c"rust_doctest_other");
///
/// // Only the client that `Counter::client` names may register: the
/// // callbacks find their client through it.
/// let other = OTHER.register(KBox::pin((), GFP_KERNEL)?).err();
/// let registration = COUNTER.register(KBox::pin((), GFP_KERNEL)?)?;
/// let again = COUNTER.register(KBox::pin((), GFP_KERNEL)?).err();
/// drop(registration);
/// // Asserted once unregistered: a failed assertion ends the test without
/// // dropping anything.
/// assert_eq!((other, again), (Some(EINVAL), Some(EBUSY)));
/// # Ok::<(), Error>(())
/// ```
///
/// # Invariants
///
/// `raw`'s callbacks are `T`'s trampolines. `context` is null while the
/// client is not registered, and while a [`Registration`] of it lives, a
/// context made by `KBox::into_raw` that the registration frees after it
/// unregisters the client. `registered` is set while a registration
/// lives.
pub(crate) struct Client<T: ClientOps> {
    raw: Opaque<bindings::ib_client>,
    registered: AtomicBool,
    /// The registration's context while registered, else null.
    context: AtomicPtr<T::Context>,
    _ops: PhantomData<T>,
}

// SAFETY: Rust only hands the `ib_client` to the IB core, which serialises
// its own use of it; `registered` is atomic.
unsafe impl<T: ClientOps> Sync for Client<T> {}

impl<T: ClientOps> Client<T> {
    /// A client named `name` (what netlink and `rdma-client-<name>` use).
    pub(crate) const fn new(name: &'static CStr) -> Self {
        // SAFETY: all zeroes is a valid `ib_client` (null name, no callbacks,
        // zero counters): what a C static initializer leaves in the fields
        // it does not name.
        let mut raw: bindings::ib_client = unsafe { core::mem::zeroed() };
        #[cfg(umad_rs_core_cstr)]
        // In a `const fn`, where `CStr` is core's and its `as_char_ptr` a
        // trait method.
        let name = kernel::str::as_char_ptr_in_const_context(name);
        #[cfg(not(umad_rs_core_cstr))]
        let name = name.as_char_ptr();
        raw.name = name;
        raw.add = Some(add_callback::<T>);
        raw.remove = Some(remove_callback::<T>);
        raw.rename = Some(rename_callback::<T>);
        raw.get_nl_info = Some(get_nl_info_callback::<T>);
        // INVARIANT: the trampolines are `T`'s; not registered, no context.
        Self {
            raw: Opaque::new(raw),
            registered: AtomicBool::new(false),
            context: AtomicPtr::new(core::ptr::null_mut()),
            _ops: PhantomData,
        }
    }

    /// Registers the client: `add` runs now for every registered device and
    /// later for every new one, until the returned guard is dropped. The
    /// callbacks see `context`.
    pub(crate) fn register(
        &'static self,
        context: Pin<KBox<T::Context>>,
    ) -> Result<Registration<T>> {
        // The callbacks find the client, its context and its data through
        // `T::client()`: only that one is registered.
        if !core::ptr::eq(self, T::client()) {
            return Err(EINVAL);
        }
        if self.registered.swap(true, Ordering::AcqRel) {
            return Err(EBUSY);
        }
        // SAFETY: the context is not moved out of its box; the
        // `Registration` frees it only after unregistering.
        let context = KBox::into_raw(unsafe { Pin::into_inner_unchecked(context) });
        // INVARIANT: the context of the registration made below, which
        // frees it.
        self.context.store(context, Ordering::Release);
        // SAFETY: `raw` is a valid, 'static `ib_client` that is not
        // registered (checked above); it stays untouched until the
        // `Registration` unregisters it.
        let ret = to_result(unsafe { bindings::ib_register_client(self.raw.get()) });
        let registration = Registration { client: self };
        if let Err(e) = ret {
            // `ib_register_client` unregistered itself; only our part is left.
            registration.release_context();
            core::mem::forget(registration);
            return Err(e);
        }
        Ok(registration)
    }

    /// The context of the running registration.
    ///
    /// # Safety
    ///
    /// Only from a callback of this client, which the IB core runs only
    /// while the client is registered.
    unsafe fn context(&self) -> &T::Context {
        // SAFETY: set before `ib_register_client`, freed after
        // `ib_unregister_client`, and callbacks run only in between.
        unsafe { &*self.context.load(Ordering::Acquire) }
    }
}

/// A registered client; dropping it unregisters the client, which runs
/// `remove` for every device that `add` accepted.
///
/// # Invariants
///
/// `client` is registered with the IB core, by `Client::register`, and
/// only this registration unregisters it.
#[must_use = "dropping the registration unregisters the client"]
pub(crate) struct Registration<T: ClientOps> {
    client: &'static Client<T>,
}

impl<T: ClientOps> Registration<T> {
    /// The data this client's `add` attached to `device`, if it took it,
    /// for another client's `add` for that device: for example, that of a
    /// client whose context is this registration, which is then dropped
    /// only after that client is unregistered.
    pub(crate) fn data_of<'a>(
        &'a self,
        device: &'a Adding<'_>,
    ) -> Option<<T::DeviceData as ForeignOwnable>::Borrowed<'a>> {
        let (device, client) = (device.as_raw(), self.client.raw.get());
        // SAFETY: the device is valid, and `device` is an `add` for it, in
        // which `struct ib_client` documents this call: another client's
        // data, or NULL where that client did not take the device.
        let attached = unsafe { bindings::ib_get_client_data(device, client) };
        // SAFETY: non-null client data is an `Attached` that `add_callback`
        // stored. While an `add` runs for the device, a client's `remove`
        // for it runs only through that client's own unregistration (as
        // `struct ib_client` documents `add`), which dropping this
        // registration does, and which the borrow rules out for `'a`.
        (!attached.is_null()).then(|| unsafe { Attached::borrow::<T>(attached) })
    }

    /// Frees the context and lets the client be registered again.
    fn release_context(&self) {
        let context = self
            .client
            .context
            .swap(core::ptr::null_mut(), Ordering::AcqRel);
        // SAFETY: `context` came from `KBox::into_raw` in `register`, and no
        // callback can run any more.
        drop(unsafe { KBox::from_raw(context) });
        self.client.registered.store(false, Ordering::Release);
    }
}

impl<T: ClientOps> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: the client was registered by `Client::register`, and only
        // this guard unregisters it.
        unsafe { bindings::ib_unregister_client(self.client.raw.get()) };
        self.release_context();
    }
}

/// What a client keeps for a device it took, as the device's client data:
/// its own data, and its handles' count.
///
/// # Invariants
///
/// Once `add_callback` stores it as client data, `data` is what the
/// client's `add` returned, made by `into_foreign`.
#[pin_data]
struct Attached {
    data: AtomicPtr<c_void>,
    #[pin]
    users: Users,
}

impl Attached {
    /// The client's data of the device whose client data is `attached`.
    ///
    /// # Safety
    ///
    /// `attached` is the client data `add_callback::<T>` stored, and
    /// `remove_callback::<T>` does not run for it during `'a`.
    unsafe fn borrow<'a, T: ClientOps>(
        attached: *mut c_void,
    ) -> <T::DeviceData as ForeignOwnable>::Borrowed<'a> {
        // SAFETY: `attached` is an `Attached` that lives during `'a`, whose
        // data came from `into_foreign` and is not taken back meanwhile
        // (the caller's promise).
        unsafe {
            let attached = &*attached.cast::<Attached>();
            T::DeviceData::borrow(attached.data.load(Ordering::Relaxed))
        }
    }
}

/// `ib_client.add`.
///
/// # Safety
///
/// Called by the IB core as `struct ib_client` documents `add`: with a
/// device that is registered and not renamed during the call.
unsafe extern "C" fn add_callback<T: ClientOps>(ibdev: *mut bindings::ib_device) -> c_int {
    // SAFETY: the device stays registered, and its name as it is, for
    // this call (the caller's promise).
    let device = unsafe { Device::from_raw(ibdev) };
    // SAFETY: this is a callback of the client.
    let context = unsafe { T::client().context() };
    from_result(|| {
        let attached = KBox::pin_init(
            pin_init!(Attached {
                data: AtomicPtr::new(core::ptr::null_mut()),
                users <- Users::new(device),
            }),
            GFP_KERNEL,
        )?;
        let data = T::add(context, &Adding::new(device, &attached.users));
        let data = match data {
            Ok(data) => data,
            Err(e) => {
                // Whatever handles `add` made go with it.
                attached.users.wait_for_none();
                return Err(e);
            }
        };
        #[cfg(umad_rs_into_foreign_mut)]
        let data = data.into_foreign();
        #[cfg(not(umad_rs_into_foreign_mut))]
        // This `into_foreign` gives a `*const`.
        let data = data.into_foreign().cast_mut();
        attached.data.store(data, Ordering::Relaxed);
        // SAFETY: the record is freed by `remove_callback` only, and not
        // moved meanwhile.
        let attached = KBox::into_raw(unsafe { Pin::into_inner_unchecked(attached) });
        // SAFETY: the client is registered (the core is calling it) and the
        // device is valid; `remove_callback` takes the record back.
        unsafe { bindings::ib_set_client_data(ibdev, T::client().raw.get(), attached.cast()) };
        Ok(0)
    })
}

/// `ib_client.remove`.
///
/// # Safety
///
/// Called by the IB core as `struct ib_client` documents `remove`: once
/// for every device whose `add` succeeded, with the client data that
/// `add_callback` stored, when no `rename` or `get_nl_info` call that
/// borrows it runs or is to come.
unsafe extern "C" fn remove_callback<T: ClientOps>(
    _ibdev: *mut bindings::ib_device,
    client_data: *mut c_void,
) {
    // SAFETY: `client_data` came from `KBox::into_raw` of a pinned
    // `Attached` in `add_callback`, and the core calls `remove` once for it.
    let attached = unsafe { Pin::new_unchecked(KBox::from_raw(client_data.cast::<Attached>())) };
    // SAFETY: the data came from `into_foreign` (type invariants) and is
    // taken back once, here.
    let data = unsafe { T::DeviceData::from_foreign(attached.data.load(Ordering::Relaxed)) };
    // SAFETY: this is a callback of the client.
    T::remove(unsafe { T::client().context() }, data);
    attached.users.wait_for_none();
}

/// `ib_client.rename`.
///
/// # Safety
///
/// Called by the IB core as `struct ib_client` documents `rename`: with a
/// device that it has just renamed and that keeps its name during the
/// call, and with the client data that `add_callback` stored, between
/// `add` and `remove`.
unsafe extern "C" fn rename_callback<T: ClientOps>(
    ibdev: *mut bindings::ib_device,
    client_data: *mut c_void,
) {
    // SAFETY: the device stays valid, and its name as it is now, for this
    // call (the caller's promise).
    let device = unsafe { Device::from_raw(ibdev) };
    // SAFETY: `client_data` is what `add_callback` stored, and `remove`
    // does not run during this call.
    let data = unsafe { Attached::borrow::<T>(client_data) };
    T::rename(data, device);
}

/// `ib_client.get_nl_info`.
///
/// # Safety
///
/// Called by the IB core as `struct ib_client` documents `get_nl_info`:
/// with the data that `add_callback` stored, between `add` and `remove`,
/// which waits for the call; `res` is valid for writes.
unsafe extern "C" fn get_nl_info_callback<T: ClientOps>(
    _ibdev: *mut bindings::ib_device,
    client_data: *mut c_void,
    res: *mut bindings::ib_client_nl_info,
) -> c_int {
    // SAFETY: `client_data` is what `add_callback` stored, and `remove`
    // does not run during this call.
    let data = unsafe { Attached::borrow::<T>(client_data) };
    // SAFETY: `res` is valid, as the caller promises.
    match T::chardev(data, unsafe { (*res).port }) {
        Err(why) => why.to_errno(),
        Ok(chardev) => {
            #[cfg(umad_rs_in_kernel_crate)]
            let cdev = chardev.device.as_raw();
            #[cfg(not(umad_rs_in_kernel_crate))]
            // Outside the crate, which keeps `Device::as_raw` to itself: `Device`
            // is a transparent `struct device`, as its `from_raw` has it.
            let cdev = core::ptr::from_ref(chardev.device).cast_mut().cast();
            // SAFETY: as above.
            unsafe {
                (*res).abi = chardev.abi.into();
                (*res).cdev = cdev;
            }
            0
        }
    }
}
