// SPDX-License-Identifier: GPL-2.0

//! InfiniBand glue: safe types over the IB core and its MAD layer, shaped
//! like a future `rust/kernel/infiniband/` (6.12's and 7.3's `kernel`
//! crates have no InfiniBand abstractions). Every call into the IB core
//! goes through here; the driver's logic never sees its bindings.
//!
//! - `device`: an IB device, borrowed in `add` or held until `remove`.
//! - `client`: IB client registration and its callbacks.
//! - `mad`: MAD agents, the MADs they send and receive, address handles.

mod client;
mod device;
pub(crate) mod mad;

pub(crate) use client::{Chardev, Client, ClientOps, Registration};
pub(crate) use device::{Device, DeviceHandle, DeviceName};
