// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The bindings the glue uses, for `glue` and `infiniband` only: the
//! kernel crate's own where the tree has the patch series (its
//! `rust/bindings/bindings_helper.h` and `rust/helpers/` carry what the
//! driver needs), else the module's own, made by bindgen at build time over
//! the same lines (`bindings_helper.h`, `helpers.c` and `helpers/`) with the
//! kernel's own flags (see `Kbuild`) and the allowlist in
//! `bindgen_parameters`. Either way the names are the same. Where a type
//! crosses into userspace, the layout the driver uses is asserted against
//! the kernel header here.
//!
//! Upstream counterpart: the `kernel` crate's `bindings`.

#[cfg(umad_rs_kernel_bindings)]
pub(crate) use kernel::bindings::*;

#[cfg(not(umad_rs_kernel_bindings))]
pub(crate) use generated::*;

/// The userspace ABI that the driver's layouts are asserted against: the
/// kernel's `uapi` crate, whose `uapi_helper.h` includes `rdma/ib_user_mad.h`.
#[cfg(umad_rs_kernel_bindings)]
use kernel::uapi as abi;

/// The userspace ABI that the driver's layouts are asserted against: out of
/// tree, the module's own bindings, as the rest.
#[cfg(not(umad_rs_kernel_bindings))]
use generated as abi;

/// The module's own bindings, out of tree.
#[cfg(not(umad_rs_kernel_bindings))]
#[allow(
    clippy::all,
    clippy::pedantic,
    dead_code,
    missing_docs,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    improper_ctypes,
    unreachable_pub,
    unsafe_op_in_unsafe_fn,
    clippy::undocumented_unsafe_blocks
)]
// As the kernel's own bindings crate: bindgen's output trips these on newer
// compilers.
#[cfg_attr(not(CONFIG_RUSTC_HAS_UNNECESSARY_TRANSMUTES), allow(unknown_lints))]
#[allow(unnecessary_transmutes)]
#[cfg_attr(
    CONFIG_RUSTC_HAS_SUSPICIOUS_RUNTIME_SYMBOL_DEFINITIONS,
    allow(suspicious_runtime_symbol_definitions)
)]
mod generated {
    use kernel::ffi;
    // The kernel's bindgen_parameters derive it for every struct and union
    // where pin-init has it.
    #[cfg(umad_rs_maybe_zeroable)]
    use pin_init::MaybeZeroable;

    // rust/bindgen_parameters blocklists these so that they map to Rust's
    // own pointer-sized integers, as in the kernel crate.
    type __kernel_size_t = usize;
    type __kernel_ssize_t = isize;
    type __kernel_ptrdiff_t = isize;

    include!(env!("IB_UMAD_RS_BINDINGS"));
    include!(env!("IB_UMAD_RS_HELPERS"));
}

/// Fails the build if `$ours` and the kernel's `$theirs` differ in size,
/// alignment or the offset of any named field.
macro_rules! assert_same_layout {
    ($ours:ty, $theirs:ty, [$($field:ident),* $(,)?]) => {
        const _: () = {
            use core::mem::{align_of, offset_of, size_of};
            assert!(size_of::<$ours>() == size_of::<$theirs>());
            assert!(align_of::<$ours>() == align_of::<$theirs>());
            $(assert!(offset_of!($ours, $field) == offset_of!($theirs, $field));)*
        };
    };
}

assert_same_layout!(
    crate::rules::uapi::UserMadHdr,
    abi::ib_user_mad_hdr,
    [
        id,
        status,
        timeout_ms,
        retries,
        length,
        qpn,
        qkey,
        lid,
        sl,
        path_bits,
        grh_present,
        gid_index,
        hop_limit,
        traffic_class,
        gid,
        flow_label,
        pkey_index,
        reserved,
    ]
);
const _: () = assert!(
    crate::rules::uapi::HdrLayout::Old.size() == core::mem::size_of::<abi::ib_user_mad_hdr_old>()
);
// See ib_umad_rs.h for why this one is checked against constants.
const _: () = {
    use crate::rules::uapi::RegReq;
    use core::mem::{align_of, offset_of, size_of};
    let c = [
        (size_of::<RegReq>(), IB_UMAD_RS_REG_REQ_SIZE),
        (align_of::<RegReq>(), IB_UMAD_RS_REG_REQ_ALIGN),
        (offset_of!(RegReq, id), IB_UMAD_RS_REG_REQ_ID),
        (
            offset_of!(RegReq, method_mask),
            IB_UMAD_RS_REG_REQ_METHOD_MASK,
        ),
        (offset_of!(RegReq, qpn), IB_UMAD_RS_REG_REQ_QPN),
        (
            offset_of!(RegReq, mgmt_class),
            IB_UMAD_RS_REG_REQ_MGMT_CLASS,
        ),
        (
            offset_of!(RegReq, mgmt_class_version),
            IB_UMAD_RS_REG_REQ_MGMT_CLASS_VERSION,
        ),
        (offset_of!(RegReq, oui), IB_UMAD_RS_REG_REQ_OUI),
        (
            offset_of!(RegReq, rmpp_version),
            IB_UMAD_RS_REG_REQ_RMPP_VERSION,
        ),
    ];
    let mut i = 0;
    while i < c.len() {
        assert!(c[i].0 == c[i].1 as usize);
        i += 1;
    }
};
assert_same_layout!(
    crate::rules::uapi::RegReq2,
    abi::ib_user_mad_reg_req2,
    [
        id,
        qpn,
        mgmt_class,
        mgmt_class_version,
        res,
        flags,
        method_mask,
        oui,
        rmpp_version,
        reserved,
    ]
);
const _: () = assert!(crate::rules::uapi::ABI_VERSION == abi::IB_USER_MAD_ABI_VERSION);
const _: () = assert!(crate::rules::uapi::USER_RMPP == abi::IB_USER_MAD_USER_RMPP);
const _: () = assert!(crate::rules::uapi::IOCTL_MAGIC == abi::IB_IOCTL_MAGIC);
