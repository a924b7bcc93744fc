//! The module's pure-logic parts, built for the host so `cargo test` runs
//! their unit tests. Each file is the one the kernel build compiles.
#![no_std]

#[path = "../../drivers/infiniband/core/uapi.rs"]
#[allow(dead_code)]
mod uapi;

#[path = "../../drivers/infiniband/core/numbering.rs"]
#[allow(dead_code)]
mod numbering;

#[path = "../../drivers/infiniband/core/mad.rs"]
#[allow(dead_code)]
mod mad;

#[path = "../../drivers/infiniband/core/slots.rs"]
#[allow(dead_code)]
mod slots;
