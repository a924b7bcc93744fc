// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! The rules ib_umad_rs follows that need no kernel: the userspace ABI, the
//! MAD header rules, device numbering and agent slots. Plain `core` Rust,
//! unit-tested on the host (`cargo test`, through `tools/host-tests/`).
//! Nothing here calls C; whatever does belongs in `glue` or `infiniband`.

pub(crate) mod mad;
pub(crate) mod numbering;
pub(crate) mod slots;
pub(crate) mod uapi;
