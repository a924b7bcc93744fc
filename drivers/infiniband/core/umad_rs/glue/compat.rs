// SPDX-License-Identifier: GPL-2.0

//! What differs between the `kernel` crates ib_umad_rs builds against.
//! Every version difference lives here, chosen by feature probes on the
//! kernel tree (see `Kbuild`), never by version numbers: stable kernels
//! carry backports.
//!
//! Upstream counterpart: none; this file shrinks as the oldest supported
//! kernel gains what it papers over.

use super::bindings;
use core::fmt;
use kernel::{error::Error, ffi::c_char, str::CStr, sync::LockClassKey};

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
