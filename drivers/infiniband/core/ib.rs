// SPDX-License-Identifier: GPL-2.0

//! Safe wrappers over the IB core's client interface (`include/rdma/ib_verbs.h`).
//!
//! 6.12's `kernel` crate has no InfiniBand abstractions. These are shaped
//! like mainline's registration abstractions (a static description, a guard
//! that unregisters on drop, trait callbacks reached through generic
//! `extern "C"` trampolines) so that they can move out of the module when
//! the kernel grows them.

use crate::bindings;
use core::{
    marker::PhantomData,
    ops::RangeInclusive,
    sync::atomic::{AtomicBool, Ordering},
};
use kernel::{
    error::{from_result, to_result},
    ffi::{c_int, c_void},
    prelude::*,
    str::CStr,
    types::{ForeignOwnable, Opaque},
};

/// An IB device, borrowed for the duration of a client's `add` callback.
///
/// # Invariants
///
/// The device is registered with the IB core, and renaming it is excluded
/// (the core holds `devices_rwsem` around `add`), for as long as a
/// `&Device` exists.
#[repr(transparent)]
pub(crate) struct Device(Opaque<bindings::ib_device>);

impl Device {
    /// # Safety
    ///
    /// `ptr` points to a registered `ib_device` that cannot be renamed or
    /// unregistered during `'a`.
    unsafe fn from_raw<'a>(ptr: *mut bindings::ib_device) -> &'a Self {
        // SAFETY: `Device` is a transparent wrapper of `ib_device`, and the
        // caller guarantees the pointee outlives `'a`.
        unsafe { &*ptr.cast() }
    }

    fn as_raw(&self) -> *mut bindings::ib_device {
        self.0.get()
    }

    /// The device's current name (`rxe0`, `mlx5_0`, ...).
    pub(crate) fn name(&self) -> &CStr {
        // SAFETY: by the type invariants the device is registered and its
        // name cannot change while `self` is borrowed, so `dev_name` points
        // to a NUL-terminated string that outlives the borrow.
        unsafe { CStr::from_char_ptr(bindings::ib_umad_rs_dev_name(self.as_raw())) }
    }

    /// The device's port numbers: port 0 alone on a switch, `1..=N` otherwise.
    pub(crate) fn ports(&self) -> RangeInclusive<u32> {
        // SAFETY: the device is valid by the type invariants.
        let (first, last) = unsafe {
            (
                bindings::ib_umad_rs_start_port(self.as_raw()),
                bindings::ib_umad_rs_end_port(self.as_raw()),
            )
        };
        first..=last
    }

    /// Whether `port` speaks MADs (`rdma_cap_ib_mad`).
    pub(crate) fn has_mad(&self, port: u32) -> bool {
        // SAFETY: the device is valid by the type invariants; the helper only
        // indexes `port_data`, so `port` must be one of the device's ports.
        self.ports().contains(&port) && unsafe { bindings::ib_umad_rs_cap_ib_mad(self.as_raw(), port) }
    }

    /// Whether `port` has a subnet management interface (`rdma_cap_ib_smi`).
    pub(crate) fn has_smi(&self, port: u32) -> bool {
        // SAFETY: as in `has_mad`.
        self.ports().contains(&port) && unsafe { bindings::ib_umad_rs_cap_ib_smi(self.as_raw(), port) }
    }
}

/// The callbacks of an IB client.
pub(crate) trait ClientOps: Sized + 'static {
    /// What the client keeps per device, from `add` until `remove`.
    type DeviceData: ForeignOwnable;

    /// The client these callbacks belong to.
    fn client() -> &'static Client<Self>;

    /// A device appeared (or the client was registered while it was there).
    /// An error means the client does not use this device; `remove` is then
    /// not called for it.
    fn add(device: &Device) -> Result<Self::DeviceData>;

    /// The device is going away (or the client is being unregistered).
    fn remove(data: Self::DeviceData);
}

/// A `struct ib_client`, meant to be a `static` like its C counterparts.
pub(crate) struct Client<T: ClientOps> {
    raw: Opaque<bindings::ib_client>,
    registered: AtomicBool,
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
        raw.name = name.as_char_ptr();
        raw.add = Some(add_callback::<T>);
        raw.remove = Some(remove_callback::<T>);
        Self {
            raw: Opaque::new(raw),
            registered: AtomicBool::new(false),
            _ops: PhantomData,
        }
    }

    /// Registers the client: `add` runs now for every registered device and
    /// later for every new one, until the returned guard is dropped.
    pub(crate) fn register(&'static self) -> Result<Registration<T>> {
        if self.registered.swap(true, Ordering::AcqRel) {
            return Err(EBUSY);
        }
        // SAFETY: `raw` is a valid, 'static `ib_client` that is not
        // registered (checked above); it stays untouched until the
        // `Registration` unregisters it.
        let ret = to_result(unsafe { bindings::ib_register_client(self.raw.get()) });
        if let Err(e) = ret {
            self.registered.store(false, Ordering::Release);
            return Err(e);
        }
        Ok(Registration { client: self })
    }
}

/// A registered client; dropping it unregisters the client, which runs
/// `remove` for every device that `add` accepted.
pub(crate) struct Registration<T: ClientOps> {
    client: &'static Client<T>,
}

impl<T: ClientOps> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: the client was registered by `Client::register`, and only
        // this guard unregisters it.
        unsafe { bindings::ib_unregister_client(self.client.raw.get()) };
        self.client.registered.store(false, Ordering::Release);
    }
}

/// `ib_client.add`.
///
/// # Safety
///
/// Called by the IB core with a registered device, under `devices_rwsem`.
unsafe extern "C" fn add_callback<T: ClientOps>(ibdev: *mut bindings::ib_device) -> c_int {
    // SAFETY: the IB core holds `devices_rwsem` across `add`, which keeps
    // the device registered and its name fixed for this call.
    let device = unsafe { Device::from_raw(ibdev) };
    from_result(|| {
        let data = T::add(device)?.into_foreign();
        // SAFETY: the client is registered (the core is calling it) and the
        // device is valid; `remove_callback` takes the data back.
        unsafe {
            bindings::ib_set_client_data(ibdev, T::client().raw.get(), data.cast_mut())
        };
        Ok(0)
    })
}

/// `ib_client.remove`.
///
/// # Safety
///
/// Called by the IB core once for every device whose `add` succeeded, with
/// the data that `add_callback` stored.
unsafe extern "C" fn remove_callback<T: ClientOps>(
    _ibdev: *mut bindings::ib_device,
    client_data: *mut c_void,
) {
    // SAFETY: `client_data` came from `into_foreign` in `add_callback`, and
    // the core calls `remove` once for it.
    let data = unsafe { T::DeviceData::from_foreign(client_data) };
    T::remove(data);
}
