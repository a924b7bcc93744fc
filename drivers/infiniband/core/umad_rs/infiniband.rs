// SPDX-License-Identifier: GPL-2.0

//! InfiniBand: safe types over the IB core (`include/rdma/ib_verbs.h`) and
//! its MAD layer (`include/rdma/ib_mad.h`) for IB clients.
//!
//! - `device`: an IB device, borrowed in `add` and `rename`, or held
//!   until `remove`, which waits for every handle.
//! - `client`: IB client registration and its callbacks.
//! - `mad`: MAD agents, the MADs they send and receive, address handles.
//!
//! Upstream counterpart: none yet in 6.12 or 7.3; the patch series moves
//! this module to `rust/kernel/infiniband/`. Every call of ib_umad_rs into
//! the IB core goes through here; its logic never sees the bindings.

mod client;
mod device;
pub(crate) mod mad;

pub(crate) use client::{Chardev, Client, ClientOps, NoChardev, Registration};
pub(crate) use device::{Adding, Device, DeviceHandle, DeviceName, PortCapabilities};
