// SPDX-License-Identifier: GPL-2.0

//! ib_umad_rs: userspace access to InfiniBand management datagrams (MADs)
//! through `/dev/infiniband/umadN`, a Rust rewrite of `ib_umad`.
//!
//! This file holds the module and its two IB clients, `umad` and `issm`;
//! `port` is what a MAD port does. `uapi` and `numbering` are plain `core`
//! Rust, host-tested; `ib`, `chardev`, `sysfs`, `semaphore` and `bindings`
//! are the glue over C (see Documentation/ib_umad_rs.rst).

use kernel::{c_str, new_mutex, prelude::*, sync::Arc};

mod bindings;
mod chardev;
mod file;
mod ib;
mod ib_mad;
mod mad;
mod numbering;
mod packet;
mod port;
mod semaphore;
mod sends;
mod slab;
mod slots;
mod sysfs;
mod trace;
mod uapi;
mod wait;

use chardev::ChrdevRegion;
use numbering::{DevnumAllocator, Regions};
use port::{Port, UmadContext};

module! {
    type: UmadModule,
    name: "ib_umad_rs",
    author: "ib_umad_rs developers",
    description: "InfiniBand userspace MAD packet access",
    license: "GPL",
    alias: ["rdma-client-umad", "rdma-client-issm"],
}

/// What the module holds, dropped in this order: the clients (umad's
/// removal kills every port), then the number regions they used.
struct UmadModule {
    _issm: ib::Registration<IssmClient>,
    _umad: ib::Registration<UmadClient>,
    _dynamic: ChrdevRegion,
    _fixed: ChrdevRegion,
    /// Last to go: no file, hence no packet, outlives the clients.
    _packets: slab::CacheGuard<packet::Packet>,
}

const REGION_NAME: &CStr = c_str!("infiniband_mad");

impl kernel::Module for UmadModule {
    /// As ib_umad: the fixed region, the dynamic one, the class, the clients.
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let packets = packet::create_cache()?;
        let fixed = ChrdevRegion::claim(Regions::FIXED, Regions::FIXED_COUNT, REGION_NAME)
            .inspect_err(|_| pr_err!("couldn't register device number\n"))?;
        let dynamic = ChrdevRegion::allocate(Regions::DYNAMIC_COUNT, REGION_NAME)
            .inspect_err(|_| pr_err!("couldn't register dynamic device number\n"))?;
        let class = sysfs::UMAD_CLASS
            .register()
            .inspect_err(|_| pr_err!("couldn't create class infiniband_mad\n"))?;
        let context = KBox::pin(
            UmadContext {
                class,
                regions: Regions { dynamic: dynamic.first() },
                devnums: KBox::pin_init(new_mutex!(DevnumAllocator::new()), GFP_KERNEL)?,
            },
            GFP_KERNEL,
        )?;
        let umad = UMAD_CLIENT.register(context)?;
        Ok(Self {
            _issm: ISSM_CLIENT.register(KBox::pin((), GFP_KERNEL)?)?,
            _umad: umad,
            _dynamic: dynamic,
            _fixed: fixed,
            _packets: packets,
        })
    }
}

/// `EOPNOTSUPP`, which `kernel::error::code` of 6.12 lacks.
fn eopnotsupp() -> Error {
    Error::from_errno(-(kernel::bindings::EOPNOTSUPP as i32))
}

static UMAD_CLIENT: ib::Client<UmadClient> = ib::Client::new(c_str!("umad"));

/// What the module keeps for one IB device: its MAD ports.
struct UmadDevice {
    ports: KVec<Arc<Port>>,
}

/// The `umad` IB client.
struct UmadClient;

impl ib::ClientOps for UmadClient {
    type DeviceData = KBox<UmadDevice>;
    type Context = UmadContext;

    fn client() -> &'static ib::Client<Self> {
        &UMAD_CLIENT
    }

    fn add(context: &UmadContext, device: &ib::Device) -> Result<KBox<UmadDevice>> {
        let mut umad = KBox::new(UmadDevice { ports: KVec::new() }, GFP_KERNEL)?;
        for number in device.ports().filter(|&port| device.has_mad(port)) {
            let added = Port::create(context, device, number, device.has_smi(number)).and_then(|port| {
                umad.ports.push(port.clone(), GFP_KERNEL).map_err(|e| {
                    port.kill(context);
                    e.into()
                })
            });
            if let Err(e) = added {
                Self::remove(context, umad);
                return Err(e);
            }
        }
        // As the C driver: a device without MAD ports (iWARP) is not ours.
        if umad.ports.is_empty() {
            return Err(eopnotsupp());
        }
        Ok(umad)
    }

    fn remove(context: &UmadContext, device: KBox<UmadDevice>) {
        for port in device.ports.iter() {
            port.kill(context);
        }
    }

    fn chardev(device: &UmadDevice, number: u32) -> Result<ib::Chardev> {
        let port = device.ports.iter().find(|port| port.number == number);
        // As ib_umad: a port without MADs has no umad node.
        let port = port.ok_or_else(eopnotsupp)?;
        Ok(ib::Chardev { device: port.umad_device(), abi: uapi::ABI_VERSION })
    }
}

static ISSM_CLIENT: ib::Client<IssmClient> = ib::Client::new(c_str!("issm"));

/// The `issm` IB client: it only answers netlink for the issm nodes, which
/// the umad client makes. ib_umad's always says EOPNOTSUPP (it looks for
/// ports in its own, empty, client data); this one finds them.
struct IssmClient;

impl ib::ClientOps for IssmClient {
    /// The device's ports that have issm nodes.
    type DeviceData = KBox<KVec<Arc<Port>>>;
    type Context = ();

    fn client() -> &'static ib::Client<Self> {
        &ISSM_CLIENT
    }

    fn add(_context: &(), device: &ib::Device) -> Result<Self::DeviceData> {
        // SAFETY: this client registers after umad's and unregisters
        // before it, so umad's `remove` for the device runs only after
        // this client's.
        let umad = unsafe { UMAD_CLIENT.data_of(device) }.ok_or_else(eopnotsupp)?;
        let mut ports = KVec::new();
        for port in umad.ports.iter().filter(|port| port.issm_device().is_some()) {
            ports.push(port.clone(), GFP_KERNEL)?;
        }
        if ports.is_empty() {
            return Err(eopnotsupp());
        }
        Ok(KBox::new(ports, GFP_KERNEL)?)
    }

    fn remove(_context: &(), _ports: Self::DeviceData) {}

    fn chardev(ports: &KVec<Arc<Port>>, number: u32) -> Result<ib::Chardev> {
        let port = ports.iter().find(|port| port.number == number).ok_or_else(eopnotsupp)?;
        let device = port.issm_device().ok_or_else(eopnotsupp)?;
        Ok(ib::Chardev { device, abi: uapi::ABI_VERSION })
    }
}
