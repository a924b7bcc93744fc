// SPDX-License-Identifier: GPL-2.0

//! An IB device as its clients see it (`struct ib_device`): borrowed during
//! `add`, or held as a [`DeviceHandle`] until `remove`.
//!
//! Upstream counterpart: none yet; a future `rust/kernel/infiniband/device.rs`
//! would replace this file.

use crate::glue::{bindings, chrdev::DeviceRef, sysfs::Page};
use core::{ops::RangeInclusive, ptr::NonNull};
use kernel::{error::to_result, ffi::c_char, prelude::*, types::Opaque};

/// An IB device, borrowed for the duration of a client's `add` callback.
///
/// # Invariants
///
/// The device is registered with the IB core for as long as a `&Device`
/// exists.
#[repr(transparent)]
pub(crate) struct Device(Opaque<bindings::ib_device>);

impl Device {
    /// # Safety
    ///
    /// `ptr` points to a registered `ib_device` that stays registered
    /// during `'a`.
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
                bindings::ib_umad_rs_start_port(self.as_raw()),
                bindings::ib_umad_rs_end_port(self.as_raw()),
            )
        };
        first..=last
    }

    /// The device's name, to show while the device is registered.
    ///
    /// # Safety
    ///
    /// The caller stops using it before the client's `remove` for this
    /// device returns.
    pub(crate) unsafe fn name(&self) -> DeviceName {
        // SAFETY: the device is valid by the type invariants.
        let name = unsafe { bindings::ib_umad_rs_name_array(self.as_raw()) };
        // INVARIANT: the array is the device's, which the caller stops
        // using in time.
        // SAFETY: the address of an array inside a valid device: not null.
        DeviceName(unsafe { NonNull::new_unchecked(name.cast_mut()) })
    }

    /// A handle on the device that outlives this callback.
    ///
    /// # Safety
    ///
    /// The caller stops using the handle (revokes it) before the client's
    /// `remove` for this device returns.
    pub(crate) unsafe fn handle(&self) -> DeviceHandle {
        // INVARIANT: the caller revokes the handle in time.
        // SAFETY: `self` is a valid device, so the pointer is not null.
        DeviceHandle(unsafe { NonNull::new_unchecked(self.as_raw()) })
    }

    /// The device's index, which tracepoints report; fixed for its life.
    pub(crate) fn index(&self) -> u32 {
        // SAFETY: the device is valid by the type invariants.
        unsafe { bindings::ib_umad_rs_device_index(self.as_raw()) }
    }

    /// The device's parent, under which its umad nodes sit in sysfs; `None`
    /// for a device without one (soft-RoCE).
    pub(crate) fn parent(&self) -> Option<DeviceRef<'_>> {
        // SAFETY: the device is valid by the type invariants.
        let parent = NonNull::new(unsafe { bindings::ib_umad_rs_dev_parent(self.as_raw()) })?;
        // SAFETY: a registered IB device holds a reference on its parent,
        // which so lives at least as long as `self` is borrowed.
        Some(unsafe { DeviceRef::from_raw(parent) })
    }

    /// Whether `port` speaks MADs (`rdma_cap_ib_mad`).
    pub(crate) fn has_mad(&self, port: u32) -> bool {
        if !self.ports().contains(&port) {
            return false;
        }
        // SAFETY: the device is valid by the type invariants; the helper only
        // indexes `port_data`, and `port` is one of the device's ports.
        unsafe { bindings::ib_umad_rs_cap_ib_mad(self.as_raw(), port) }
    }

    /// Whether `port` has a subnet management interface (`rdma_cap_ib_smi`).
    pub(crate) fn has_smi(&self, port: u32) -> bool {
        if !self.ports().contains(&port) {
            return false;
        }
        // SAFETY: as in `has_mad`.
        unsafe { bindings::ib_umad_rs_cap_ib_smi(self.as_raw(), port) }
    }
}

/// An IB device's name (`ib_device.name`), where it is: the array's
/// address, taken once, as it stays put while a rename changes what it
/// holds.
///
/// # Invariants
///
/// The array is the `IB_DEVICE_NAME_MAX`-byte name of a device that is
/// valid until the `remove` callback of the client that took the name
/// returns; the client drops or stops using it before then.
pub(crate) struct DeviceName(NonNull<c_char>);

// SAFETY: the address of an array that lives as long as its device; any
// thread may read it, as the core's own readers do (a rename rewrites it in
// place, and `show` reads it only up to its always-present last NUL).
unsafe impl Send for DeviceName {}
// SAFETY: as above; the value itself is immutable.
unsafe impl Sync for DeviceName {}

impl DeviceName {
    /// Shows the device's current name as `out`'s line, read where it is
    /// (a rename may run meanwhile, as for ib_umad's `dev_name`).
    pub(crate) fn show(&self, out: &mut Page<'_>) {
        // SAFETY: the array is readable while the device is valid (type
        // invariants). Its last byte is always NUL: the core fills it only
        // by `strscpy` to the array's size (`assign_name`,
        // `ib_device_rename`; the shim asserts that size), which writes no
        // character there; the core itself prints it with `%s`.
        unsafe { out.line_c_str(self.0.as_ptr()) };
    }
}

/// An IB device as a client holds it between `add` and `remove`.
///
/// # Invariants
///
/// The device is valid until the `remove` callback of the client that
/// made the handle returns; the client drops or stops using the handle
/// before then.
pub(crate) struct DeviceHandle(NonNull<bindings::ib_device>);

// SAFETY: the IB core's device functions may be called from any thread.
unsafe impl Send for DeviceHandle {}
// SAFETY: as above; the handle itself is immutable.
unsafe impl Sync for DeviceHandle {}

impl DeviceHandle {
    pub(crate) fn as_raw(&self) -> *mut bindings::ib_device {
        self.0.as_ptr()
    }

    /// Whether the calling task's network namespace may use the device
    /// (`rdma_dev_access_netns`).
    pub(crate) fn accessible_from_current_netns(&self) -> bool {
        // SAFETY: the device is valid by the type invariants.
        unsafe { bindings::ib_umad_rs_access_netns(self.as_raw()) }
    }

    /// Sets or clears the `IsSM` capability bit of `port`, which tells the
    /// subnet that an SM runs behind it.
    pub(crate) fn set_is_sm(&self, port: u32, is_sm: bool) -> Result {
        let bit = bindings::ib_port_capability_mask_bits_IB_PORT_SM;
        let (set, clear) = if is_sm { (bit, 0) } else { (0, bit) };
        self.modify_port_capabilities(port, set, clear)
    }

    /// Sets and clears bits of a port's capability mask (`ib_modify_port`).
    fn modify_port_capabilities(&self, port: u32, set: u32, clear: u32) -> Result {
        let mut modify = bindings::ib_port_modify {
            set_port_cap_mask: set,
            clr_port_cap_mask: clear,
            init_type: 0,
        };
        // SAFETY: the device is valid by the type invariants; `modify`
        // lives across the call.
        to_result(unsafe { bindings::ib_modify_port(self.as_raw(), port, 0, &mut modify) })
    }
}
