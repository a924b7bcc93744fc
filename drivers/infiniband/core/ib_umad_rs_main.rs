// SPDX-License-Identifier: GPL-2.0

//! ib_umad_rs: userspace access to InfiniBand management datagrams (MADs)
//! through `/dev/infiniband/umadN`, a Rust rewrite of `ib_umad`.
//!
//! Layout: `ib` wraps the IB core, `bindings` is generated from its headers,
//! `uapi` is the userspace ABI (plain `core` Rust, host-tested). This file
//! holds the module and its IB client.

use core::fmt;
use kernel::{c_str, prelude::*, str::CString};

mod bindings;
mod ib;
// The ioctl, read and write paths use most of it; for now the layout
// assertions in `bindings` do.
#[allow(dead_code)]
mod uapi;

module! {
    type: UmadModule,
    name: "ib_umad_rs",
    author: "ib_umad_rs developers",
    description: "InfiniBand userspace MAD packet access",
    license: "GPL",
    alias: ["rdma-client-umad"],
}

struct UmadModule {
    _umad: ib::Registration<UmadClient>,
}

impl kernel::Module for UmadModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        Ok(Self {
            _umad: UMAD_CLIENT.register()?,
        })
    }
}

static UMAD_CLIENT: ib::Client<UmadClient> = ib::Client::new(c_str!("umad"));

/// A port through which userspace reaches the MAD layer.
struct MadPort {
    number: u32,
    smi: bool,
}

impl fmt::Display for MadPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MAD port {}", self.number)?;
        if self.smi {
            f.write_str(" with SMI")?;
        }
        Ok(())
    }
}

/// What the module keeps for one IB device.
struct UmadDevice {
    /// The name at `add` time, for messages.
    name: CString,
    ports: KVec<MadPort>,
}

/// The `umad` IB client.
struct UmadClient;

impl ib::ClientOps for UmadClient {
    type DeviceData = KBox<UmadDevice>;

    fn client() -> &'static ib::Client<Self> {
        &UMAD_CLIENT
    }

    fn add(device: &ib::Device) -> Result<KBox<UmadDevice>> {
        let mut ports = KVec::new();
        for number in device.ports().filter(|&port| device.has_mad(port)) {
            ports.push(MadPort { number, smi: device.has_smi(number) }, GFP_KERNEL)?;
        }
        // As the C driver: a device without MAD ports (iWARP) is not ours.
        if ports.is_empty() {
            return Err(Error::from_errno(-(kernel::bindings::EOPNOTSUPP as i32)));
        }
        let name = CString::try_from_fmt(kernel::fmt!("{}", device.name()))?;
        for port in ports.iter() {
            pr_info!("{}: {}\n", &*name, port);
        }
        Ok(KBox::new(UmadDevice { name, ports }, GFP_KERNEL)?)
    }

    fn remove(device: KBox<UmadDevice>) {
        for port in device.ports.iter() {
            pr_info!("{}: {} removed\n", &*device.name, port);
        }
    }
}
