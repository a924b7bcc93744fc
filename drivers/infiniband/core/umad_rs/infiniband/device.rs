// SPDX-License-Identifier: GPL-2.0

//! An IB device as its clients see it (`struct ib_device`): borrowed during
//! `add` and `rename`, or held as a [`DeviceHandle`], which the client's
//! `remove` waits for.
//!
//! Upstream counterpart: none yet (see `infiniband.rs`).

use crate::glue::bindings;
use core::{
    ops::{Deref, RangeInclusive},
    ptr::NonNull,
};
use kernel::{
    c_str, device,
    error::to_result,
    prelude::*,
    str::CStr,
    sync::{CondVar, SpinLock},
    types::Opaque,
};

/// An IB device, borrowed for the duration of a client's `add` or `rename`
/// callback.
///
/// # Invariants
///
/// The device is valid and is not renamed for as long as a `&Device`
/// exists: what the IB core promises a client's `add` and `rename`
/// (`struct ib_client`, `include/rdma/ib_verbs.h`). (It need not be
/// registered: a rename may run while an unregistration removes the
/// clients.)
#[repr(transparent)]
pub(crate) struct Device(Opaque<bindings::ib_device>);

impl Device {
    /// # Safety
    ///
    /// `ptr` points to an `ib_device` that stays valid, and is not renamed,
    /// during `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_device) -> &'a Self {
        // INVARIANT: the caller's promise, for `'a`.
        // SAFETY: `Device` is a transparent wrapper of `ib_device`, and the
        // caller guarantees the pointee outlives `'a`.
        unsafe { &*ptr.cast() }
    }

    pub(super) fn as_raw(&self) -> *mut bindings::ib_device {
        self.0.get()
    }

    /// The device's port numbers: port 0 alone on a switch, `1..=N` otherwise.
    pub(crate) fn ports(&self) -> RangeInclusive<u32> {
        // SAFETY: the device is valid by the type invariants.
        unsafe { ports_of(self.as_raw()) }
    }

    /// The device's name, as it is now.
    pub(crate) fn name(&self) -> DeviceName {
        // SAFETY: the device is valid and no rename writes its name array
        // meanwhile (type invariants). The array has `NAME_MAX` bytes, or
        // `DeviceName::new` would not take it.
        let name = unsafe { (*self.as_raw()).name };
        DeviceName::new(name.map(|c| c.to_ne_bytes()[0]))
    }

    /// The device's index, fixed for its life (what tracepoints name it by).
    pub(crate) fn index(&self) -> u32 {
        // SAFETY: the device is valid by the type invariants.
        unsafe { (*self.as_raw()).index }
    }

    /// The device's parent (a client's own devices sit under it in sysfs);
    /// `None` for a device without one (soft-RoCE).
    pub(crate) fn parent(&self) -> Option<&device::Device> {
        // SAFETY: the device is valid by the type invariants; its `dev` is
        // in an anonymous union with `coredev`, which starts with it.
        let parent = unsafe { (*self.as_raw()).__bindgen_anon_1.dev.parent };
        if parent.is_null() {
            return None;
        }
        #[cfg(umad_rs_device_from_raw)]
        // SAFETY: an IB device holds a reference on its parent from its
        // `device_add` to its `device_del`, which the core runs only after
        // every client's `remove`: so the parent lives at least as long as
        // `self` is borrowed.
        let parent = unsafe { device::Device::from_raw(parent.cast()) };
        #[cfg(not(umad_rs_device_from_raw))]
        // SAFETY: as for `from_raw`, its later name.
        let parent = unsafe { device::Device::as_ref(parent.cast()) };
        Some(parent)
    }

    /// Whether `port` speaks MADs (`rdma_cap_ib_mad`).
    pub(crate) fn has_mad(&self, port: u32) -> bool {
        if !self.ports().contains(&port) {
            return false;
        }
        // SAFETY: the device is valid by the type invariants; the helper only
        // indexes `port_data`, and `port` is one of the device's ports.
        unsafe { bindings::rdma_cap_ib_mad(self.as_raw(), port) }
    }

    /// Whether `port` has a subnet management interface (`rdma_cap_ib_smi`).
    pub(crate) fn has_smi(&self, port: u32) -> bool {
        if !self.ports().contains(&port) {
            return false;
        }
        // SAFETY: as in `has_mad`.
        unsafe { bindings::rdma_cap_ib_smi(self.as_raw(), port) }
    }
}

/// The port numbers of `device` (`rdma_start_port`, `rdma_end_port`).
///
/// # Safety
///
/// `device` is a valid `ib_device`.
unsafe fn ports_of(device: *mut bindings::ib_device) -> RangeInclusive<u32> {
    // SAFETY: the caller's promise; both only read the device's fields.
    unsafe { bindings::rdma_start_port(device)..=bindings::rdma_end_port(device) }
}

/// `IB_DEVICE_NAME_MAX`: the size of an IB device's name array.
// CAST: 64, in any `usize`.
#[allow(clippy::cast_possible_truncation)]
const NAME_MAX: usize = bindings::IB_DEVICE_NAME_MAX as usize;

/// A copy of an IB device's name (`ib_device.name`). The IB core renames a
/// device by writing over its name array (`ib_device_rename`), so the array
/// is read only where no rename runs ([`Device::name`]); a client that
/// shows the name keeps a copy, which its `rename` callback renews.
///
/// # Invariants
///
/// `bytes[len]` is the first NUL in `bytes`.
pub(crate) struct DeviceName {
    bytes: [u8; NAME_MAX],
    len: usize,
}

impl DeviceName {
    /// The name in `bytes`, up to its first NUL; the core ends every name
    /// with one (it writes them with `strscpy` to the array's size), and if
    /// the last byte were not one it would be made so.
    fn new(mut bytes: [u8; NAME_MAX]) -> Self {
        if let Some(last) = bytes.last_mut() {
            *last = 0;
        }
        let len = bytes.iter().position(|&b| b == 0).unwrap_or(NAME_MAX - 1);
        // INVARIANT: the last byte is NUL, so there is a first.
        Self { bytes, len }
    }

    /// The name, as a C string.
    pub(crate) fn as_c_str(&self) -> &CStr {
        // SAFETY: by the type invariants, the slice ends with its only NUL.
        unsafe { CStr::from_bytes_with_nul_unchecked(&self.bytes[..=self.len]) }
    }
}

/// A device a client's `add` is taking: a [`Device`] of which the client
/// may keep [`DeviceHandle`]s.
pub(crate) struct Adding<'a> {
    device: &'a Device,
    users: &'a Users,
}

impl<'a> Adding<'a> {
    pub(super) fn new(device: &'a Device, users: &'a Users) -> Self {
        Self { device, users }
    }

    /// A handle to the device for the client to keep; its `remove` for the
    /// device waits until every handle is dropped.
    pub(crate) fn handle(&self) -> DeviceHandle {
        *self.users.count.lock() += 1;
        // INVARIANT: counted just now in `users`, the client's record of
        // the device, which its `remove_callback` frees only once no
        // handle is counted.
        DeviceHandle {
            users: NonNull::from(self.users),
        }
    }
}

impl Deref for Adding<'_> {
    type Target = Device;

    fn deref(&self) -> &Device {
        self.device
    }
}

/// The handles a client holds to one device, which its `remove` waits
/// for: so no handle, nor a MAD agent registered through one, outlives
/// the client's `remove`, after which the core removes the MAD layer's
/// ports (its client was added before, so it is removed after).
///
/// # Invariants
///
/// `device` is the device, and `count` the number of [`DeviceHandle`]s
/// whose `users` is this one.
#[pin_data]
pub(super) struct Users {
    device: NonNull<bindings::ib_device>,
    #[pin]
    count: SpinLock<usize>,
    #[pin]
    none_left: CondVar,
}

impl Users {
    /// No handle yet to `device`.
    pub(super) fn new(device: &Device) -> impl PinInit<Self> {
        // The names are statics, as the keys are: see `chrdev::Holders::new`.
        static COUNT: &CStr = c_str!("infiniband::Users::count");
        static NONE_LEFT: &CStr = c_str!("infiniband::Users::none_left");
        let device = NonNull::from(&device.0).cast();
        // INVARIANT: no handle exists yet.
        pin_init!(Self {
            device,
            count <- SpinLock::new(0, COUNT, kernel::static_lock_class!()),
            none_left <- CondVar::new(NONE_LEFT, kernel::static_lock_class!()),
        })
    }

    /// Waits until no handle is left. A handle kept past the client's
    /// `remove` is a driver bug, which holds the removal here rather than
    /// let the handle reach a device the core is taking apart.
    pub(super) fn wait_for_none(&self) {
        let mut count = self.count.lock();
        if *count != 0 {
            pr_warn!(
                "IB client removed with {} device handles: waiting for them\n",
                *count
            );
        }
        while *count != 0 {
            self.none_left.wait(&mut count);
        }
    }
}

/// A client's handle to an IB device, from its `add` on; the client's
/// `remove` for the device waits until every handle is dropped, so the
/// device is there, with its MAD layer's ports, while one lives.
///
/// One pointer, as each MAD agent holds one.
///
/// # Invariants
///
/// `users` is the client's count of handles to the device, which counts
/// this one; `users` lives, and the client's `remove` for the device has
/// not returned, until this is dropped.
pub(crate) struct DeviceHandle {
    users: NonNull<Users>,
}

impl Clone for DeviceHandle {
    fn clone(&self) -> Self {
        *self.users().count.lock() += 1;
        // INVARIANT: counted just now, beside `self`, which keeps `users`
        // alive meanwhile.
        Self { users: self.users }
    }
}

impl Drop for DeviceHandle {
    fn drop(&mut self) {
        let users = self.users();
        let mut count = users.count.lock();
        *count -= 1;
        // The waiter in `remove` frees `users` once it sees no handle,
        // which it does only after this unlocks: nothing touches `users`
        // after that.
        if *count == 0 {
            users.none_left.notify_all();
        }
    }
}

// SAFETY: the IB core's device functions may be called from any thread,
// and `Users` is a lock and a condition variable.
unsafe impl Send for DeviceHandle {}
// SAFETY: as above; the handle itself is immutable.
unsafe impl Sync for DeviceHandle {}

impl DeviceHandle {
    /// The C device, for the calls this module makes.
    pub(super) fn as_raw(&self) -> *mut bindings::ib_device {
        self.users().device.as_ptr()
    }

    fn users(&self) -> &Users {
        // SAFETY: `users` lives while the handle does (type invariants).
        unsafe { self.users.as_ref() }
    }

    /// The device's port numbers, as [`Device::ports`].
    pub(crate) fn ports(&self) -> RangeInclusive<u32> {
        // SAFETY: the device is valid by the type invariants.
        unsafe { ports_of(self.as_raw()) }
    }

    /// Whether the calling task's network namespace may use the device
    /// (`rdma_dev_access_netns`); `false` for an exiting task, which has
    /// left its namespaces.
    pub(crate) fn accessible_from_current_netns(&self) -> bool {
        // SAFETY: only the task itself changes its `nsproxy` (to null when
        // it exits), so it stays while this runs, and its network
        // namespace with it.
        let nsproxy = unsafe { (*kernel::bindings::get_current()).nsproxy };
        if nsproxy.is_null() {
            return false;
        }
        // SAFETY: as above; the device is valid by the type invariants.
        // `net` is read with the kernel crate's layout and passed on.
        unsafe { bindings::rdma_dev_access_netns(self.as_raw(), (*nsproxy).net_ns.cast()) }
    }

    /// Sets and clears bits of `port`'s capability mask (`ib_modify_port`),
    /// which the port tells the subnet.
    pub(crate) fn modify_port_capabilities(
        &self,
        port: u32,
        set: PortCapabilities,
        clear: PortCapabilities,
    ) -> Result {
        let mut modify = bindings::ib_port_modify {
            set_port_cap_mask: set.0,
            clr_port_cap_mask: clear.0,
            init_type: 0,
        };
        // SAFETY: the device is valid by the type invariants; `modify`
        // lives across the call.
        to_result(unsafe { bindings::ib_modify_port(self.as_raw(), port, 0, &mut modify) })
    }
}

/// Bits of a port's capability mask (`enum ib_port_capability_mask_bits`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PortCapabilities(u32);

impl PortCapabilities {
    /// No bit.
    pub(crate) const NONE: Self = Self(0);
    /// `IB_PORT_SM`: a subnet manager runs behind the port.
    pub(crate) const SM: Self = Self(bindings::ib_port_capability_mask_bits_IB_PORT_SM);
}
