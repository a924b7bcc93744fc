// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The `infiniband_mad` class, as ib_umad has it: the class attribute
//! `abi_version`, each node's `ibdev` and `port`, and device files under
//! `/dev/infiniband/`.

use crate::{
    glue::chrdev::{
        attributes::{
            attribute_groups, ClassAttribute, DeviceAttribute, DevnodeDir, ForClass, ForDevices,
            Page, ShowClass, ShowDevice, Shown,
        },
        Class,
    },
    port::Port,
    rules::uapi,
};
use kernel::{c_str, prelude::*};

/// `infiniband_mad`: every device in it is a node of a [`Port`].
pub(crate) static UMAD_CLASS: Class<Port> =
    Class::new::<InfinibandDir>(c_str!("infiniband_mad"), &CLASS_GROUPS, &NODE_GROUPS);

struct InfinibandDir;

impl DevnodeDir for InfinibandDir {
    const DIR: &'static CStr = c_str!("infiniband");
}

attribute_groups! {
    static CLASS_GROUPS: Groups<ForClass> = [ABI_VERSION];
}

attribute_groups! {
    static NODE_GROUPS: Groups<ForDevices<Port>> = [IBDEV, PORT];
}

static ABI_VERSION: ClassAttribute = ClassAttribute::new::<AbiVersion>(c_str!("abi_version"));
static IBDEV: DeviceAttribute<Port> = DeviceAttribute::new::<IbDev>(c_str!("ibdev"));
static PORT: DeviceAttribute<Port> = DeviceAttribute::new::<PortNumber>(c_str!("port"));

/// `/sys/class/infiniband_mad/abi_version`.
struct AbiVersion;

impl ShowClass for AbiVersion {
    fn show(out: &mut Page<'_>) -> Result {
        out.line_u32(uapi::ABI_VERSION);
        Ok(())
    }
}

/// A node's IB device, by its name: the port's copy, renewed when the
/// device is renamed.
struct IbDev;

impl ShowDevice<Port> for IbDev {
    fn show(node: Shown<'_, Port>, out: &mut Page<'_>) -> Result {
        Port::show_ib_device_name(node, out);
        Ok(())
    }
}

/// A node's port number on its IB device.
struct PortNumber;

impl ShowDevice<Port> for PortNumber {
    fn show(node: Shown<'_, Port>, out: &mut Page<'_>) -> Result {
        out.line_u32(node.owner().number);
        Ok(())
    }
}
