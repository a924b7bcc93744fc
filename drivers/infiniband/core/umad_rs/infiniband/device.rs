// SPDX-License-Identifier: GPL-2.0

//! An IB device as its clients see it (`struct ib_device`): borrowed during
//! `add`, or held as a [`DeviceHandle`] until `remove`.
//!
//! Upstream counterpart: none yet (see `infiniband.rs`).

use crate::glue::bindings;
use core::{ops::RangeInclusive, ptr::NonNull};
use kernel::{device, error::to_result, prelude::*, str::CStr, types::Opaque};

/// An IB device, borrowed for the duration of a client's `add` or `rename`
/// callback.
///
/// # Invariants
///
/// The device is registered with the IB core and is not renamed for as
/// long as a `&Device` exists: what the core promises `add` and `rename`
/// (`struct ib_client`, `include/rdma/ib_verbs.h`).
#[repr(transparent)]
pub(crate) struct Device(Opaque<bindings::ib_device>);

impl Device {
    /// # Safety
    ///
    /// `ptr` points to a registered `ib_device` that stays registered, and
    /// is not renamed, during `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_device) -> &'a Self {
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
        let (first, last) = unsafe {
            (
                bindings::rdma_start_port(self.as_raw()),
                bindings::rdma_end_port(self.as_raw()),
            )
        };
        first..=last
    }

    /// The device's name, as it is now.
    pub(crate) fn name(&self) -> DeviceName {
        // SAFETY: the device is valid and no rename writes its name array
        // meanwhile (type invariants). The array has `NAME_MAX` bytes, or
        // `DeviceName::new` would not take it.
        let name = unsafe { (*self.as_raw()).name };
        DeviceName::new(name.map(|c| c.to_ne_bytes()[0]))
    }

    /// A counted reference to the device, which outlives this callback
    /// (`ib_device_try_get`); `None` once its unregistration has begun.
    pub(crate) fn handle(&self) -> Option<DeviceHandle> {
        // SAFETY: the device is valid by the type invariants.
        if !unsafe { bindings::ib_device_try_get(self.as_raw()) } {
            return None;
        }
        // INVARIANT: the reference just taken.
        Some(DeviceHandle(NonNull::from(&self.0).cast()))
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
        // SAFETY: a registered IB device holds a reference on its parent,
        // which so lives at least as long as `self` is borrowed.
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

/// A counted reference to an IB device, which keeps it registered: the IB
/// core's unregistration waits, once every client's `remove` has run, for
/// the last reference to go. A client drops its handles in `remove`.
///
/// # Invariants
///
/// The handle owns a reference to the device's registration count, taken
/// by `ib_device_try_get` and given back on drop by `ib_device_put`.
pub(crate) struct DeviceHandle(NonNull<bindings::ib_device>);

impl Drop for DeviceHandle {
    fn drop(&mut self) {
        // SAFETY: the handle owns a reference (type invariants), which
        // keeps the device valid until this gives it back.
        unsafe { bindings::ib_device_put(self.as_raw()) };
    }
}

// SAFETY: the IB core's device functions, `ib_device_put` among them, may
// be called from any thread.
unsafe impl Send for DeviceHandle {}
// SAFETY: as above; the handle itself is immutable.
unsafe impl Sync for DeviceHandle {}

impl DeviceHandle {
    /// The C device, for the calls this module makes.
    pub(super) fn as_raw(&self) -> *mut bindings::ib_device {
        self.0.as_ptr()
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
