// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! ib_umad_rs: userspace access to InfiniBand management datagrams (MADs)
//! through `/dev/infiniband/umadN` and `issmN`, a Rust rewrite of `ib_umad`
//! (`drivers/infiniband/core/user_mad.c`).
//!
//! The crate is in four parts (Documentation/ib_umad_rs.rst, "Module
//! layout", says where new code goes):
//!
//! - the driver's logic, here at the top: this file (the module and its two
//!   IB clients), `class`, `port`, `file`, `ioctl`, `packet`, `sends`;
//! - `rules`: the ABI and MAD rules, plain `core` Rust, host-tested;
//! - `infiniband`: safe types over the IB core and its MAD layer (in a tree
//!   with the patch series, the kernel crate's `kernel::infiniband`);
//! - `glue`: safe types over generic kernel interfaces the `kernel` crate
//!   lacks, and the one place where kernel versions differ (`glue::compat`).
//!
//! Only `infiniband` and `glue` hold `unsafe` code that calls C; the logic
//! reaches C only through them. New code goes where its kind is: a rule
//! that needs no kernel in `rules` (with its tests), a C interface as a
//! safe type in `infiniband` or `glue`, a difference between kernels in
//! `glue::compat`, and what the driver does with them here.

use core::ops::RangeInclusive;
use kernel::{c_str, prelude::*, sync::Arc, types::ForeignOwnable};

mod class;
mod file;
mod glue;
mod infiniband;
mod packet;
mod port;
mod rules;
mod sends;

use glue::{
    chrdev::{Devt, Node, Region},
    compat::{eopnotsupp, ARef, IdPool},
};
use infiniband::NoChardev;
use port::{AddedPort, Port, UmadContext};
use rules::{
    numbering::{DevNumber, Regions, MAX_PORTS},
    uapi,
};

glue::compat::module_by! {
    type: UmadModule,
    name: "ib_umad_rs",
    author: "ib_umad_rs developers",
    description: "InfiniBand userspace MAD packet access",
    license: "Dual BSD/GPL",
    alias: ["rdma-client-umad", "rdma-client-issm"],
}

/// What the module holds, dropped in this order: the clients (issm's
/// registration owns umad's, whose removal kills every port), then the
/// number regions they used.
struct UmadModule {
    _clients: infiniband::Registration<IssmClient>,
    _dynamic: Region,
    _fixed: Region,
}

const REGION_NAME: &CStr = c_str!("infiniband_mad");

impl kernel::Module for UmadModule {
    /// As ib_umad: the fixed region, the dynamic one, the class, the clients.
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let fixed = Region::claim(
            Devt::from(Regions::FIXED),
            Regions::FIXED_COUNT,
            REGION_NAME,
        )
        .inspect_err(|_| pr_err!("couldn't register device number\n"))?;
        let dynamic = Region::allocate(Regions::DYNAMIC_COUNT, REGION_NAME)
            .inspect_err(|_| pr_err!("couldn't register dynamic device number\n"))?;
        let class = class::UMAD_CLASS
            .register()
            .inspect_err(|_| pr_err!("couldn't create class infiniband_mad\n"))?;
        let context = KBox::pin(
            UmadContext {
                class,
                regions: Regions {
                    dynamic: DevNumber::new(dynamic.first().major(), dynamic.first().minor()),
                },
                devnums: Arc::pin_init(
                    kernel::new_mutex!(IdPool::with_capacity(MAX_PORTS as usize, GFP_KERNEL)?),
                    GFP_KERNEL,
                )?,
            },
            GFP_KERNEL,
        )?;
        let umad = UMAD_CLIENT.register(context)?;
        Ok(Self {
            _clients: ISSM_CLIENT.register(KBox::pin(umad, GFP_KERNEL)?)?,
            _dynamic: dynamic,
            _fixed: fixed,
        })
    }
}

static UMAD_CLIENT: infiniband::Client<UmadClient> = infiniband::Client::new(c_str!("umad"));

/// What the module keeps for one IB device: its MAD ports.
struct UmadDevice {
    /// The device's port numbers, for netlink's checks.
    numbers: RangeInclusive<u32>,
    ports: KVec<AddedPort>,
}

/// The `umad` IB client.
struct UmadClient;

impl infiniband::ClientOps for UmadClient {
    type DeviceData = KBox<UmadDevice>;
    type Context = UmadContext;

    fn client() -> &'static infiniband::Client<Self> {
        &UMAD_CLIENT
    }

    fn add(context: &UmadContext, device: &infiniband::Adding<'_>) -> Result<KBox<UmadDevice>> {
        let numbers = device.ports();
        let mut umad = KBox::new(
            UmadDevice {
                numbers,
                ports: KVec::new(),
            },
            GFP_KERNEL,
        )?;
        // An error drops `umad`, which takes its ports away.
        for number in device.ports().filter(|&port| device.has_mad(port)) {
            let port = Port::create(context, device, number, device.has_smi(number))?;
            umad.ports.push(port, GFP_KERNEL)?;
        }
        // As the C driver: a device without MAD ports (iWARP) is not ours.
        if umad.ports.is_empty() {
            return Err(eopnotsupp());
        }
        Ok(umad)
    }

    fn remove(_context: &UmadContext, device: KBox<UmadDevice>) {
        // Each port is taken away as it is dropped (`AddedPort`), in order.
        drop(device);
    }

    fn rename(umad: &UmadDevice, device: &infiniband::Device) {
        for added in umad.ports.iter() {
            added.port().rename(device);
        }
    }

    /// As ib_umad: `EINVAL` for no port of the device (or none named),
    /// `EOPNOTSUPP` for a port without MADs.
    fn chardev<'a>(
        device: <Self::DeviceData as ForeignOwnable>::Borrowed<'a>,
        number: u32,
    ) -> Result<infiniband::Chardev<'a>, NoChardev> {
        if !device.numbers.contains(&number) {
            return Err(NoChardev::NoSuchPort);
        }
        let port = device
            .ports
            .iter()
            .find(|added| added.port().number == number);
        let node = port.ok_or(NoChardev::NotServed)?.umad_node();
        Ok(infiniband::Chardev::new(node.device(), uapi::ABI_VERSION))
    }
}

static ISSM_CLIENT: infiniband::Client<IssmClient> = infiniband::Client::new(c_str!("issm"));

/// The `issm` IB client: it only answers netlink for the issm nodes, which
/// the umad client makes. Like ib_umad's, it takes every device, so that a
/// query about one without issm nodes gets its answer without the IB core
/// looking for the client with `request_module`. It finds the issm nodes
/// in the umad client's data for the device.
struct IssmClient;

/// What the issm client keeps for one IB device.
struct IssmDevice {
    /// The device's port numbers, for netlink's checks.
    numbers: RangeInclusive<u32>,
    /// The issm nodes of the device's ports.
    nodes: KVec<ARef<Node<Port>>>,
}

impl infiniband::ClientOps for IssmClient {
    type DeviceData = KBox<IssmDevice>;
    /// The umad client's registration, which therefore outlives this
    /// one's: every `add` of this client can read the umad client's data.
    type Context = infiniband::Registration<UmadClient>;

    fn client() -> &'static infiniband::Client<Self> {
        &ISSM_CLIENT
    }

    fn add(
        umad_client: &infiniband::Registration<UmadClient>,
        device: &infiniband::Adding<'_>,
    ) -> Result<Self::DeviceData> {
        let mut issm = KBox::new(
            IssmDevice {
                numbers: device.ports(),
                nodes: KVec::new(),
            },
            GFP_KERNEL,
        )?;
        if let Some(umad) = umad_client.data_of(device) {
            for node in umad.ports.iter().filter_map(AddedPort::issm_node) {
                issm.nodes.push(ARef::from(node), GFP_KERNEL)?;
            }
        }
        Ok(issm)
    }

    fn remove(_: &infiniband::Registration<UmadClient>, _issm: Self::DeviceData) {}

    /// As ib_umad: `EINVAL` for no port of the device (or none named),
    /// `EOPNOTSUPP` for a port without an SMI.
    fn chardev<'a>(
        issm: <Self::DeviceData as ForeignOwnable>::Borrowed<'a>,
        number: u32,
    ) -> Result<infiniband::Chardev<'a>, NoChardev> {
        if !issm.numbers.contains(&number) {
            return Err(NoChardev::NoSuchPort);
        }
        let node = issm.nodes.iter().find(|node| node.owner().number == number);
        let node = node.ok_or(NoChardev::NotServed)?;
        Ok(infiniband::Chardev::new(node.device(), uapi::ABI_VERSION))
    }
}
