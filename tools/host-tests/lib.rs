//! The module's pure rules (`drivers/infiniband/core/umad_rs/rules/`),
//! built for the host so that `cargo test` runs their unit tests. The files
//! are the ones the kernel build compiles into ib_umad_rs.ko, at the same
//! paths (`crate::rules::...`); `rules.rs` there lists the same modules.
#![no_std]
#![allow(dead_code)]

#[path = "../../drivers/infiniband/core/umad_rs/rules"]
mod rules {
    pub(crate) mod mad;
    pub(crate) mod numbering;
    pub(crate) mod slots;
    pub(crate) mod uapi;
}
