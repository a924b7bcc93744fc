// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB

//! Generic kernel glue: safe types over the C interfaces ib_umad_rs needs
//! that the `kernel` crate it builds against does not offer. Each file
//! names the upstream abstraction that would replace it. Nothing here knows
//! about MADs or ports; the InfiniBand glue is in `infiniband`.
//!
//! - `bindings`: the kernel crate's bindings in the kernel tree, the
//!   module's own bindgen output out of it, for the glue only; the driver's
//!   logic never uses them (`tools/rig/lint.sh` checks).
//! - `compat`: what differs between the kernels the module builds for,
//!   and what the `kernel` crate has only with the series' patches to it
//!   (`warn_on_once!`, `Task::comm`, `UserPtr::get` and `put`, a
//!   lock-free wait on a `CondVar`, `Kiocb::file_flags`), and `kernel::fs`
//!   and `kernel::iov` for 6.12.
//! - `chrdev`: device number regions, a class, device nodes, the file
//!   operations of their files (`chrdev::file`), and the class's and its
//!   devices' read-only attributes (`chrdev::attributes`).
//! - `ratelimit`: rate limits for messages userspace can provoke.
//! - `nospec`: speculation-safe indexing.
//! - `trace`: the C tracepoints.
//!
//! `helpers.c` and `helpers/` hold out-of-line copies of the static inline
//! helpers the glue calls, and nothing else, as `rust/helpers/` in the
//! kernel tree, where the patch series puts them.

pub(crate) mod bindings;
pub(crate) mod chrdev;
pub(crate) mod compat;
pub(crate) mod nospec;
pub(crate) mod ratelimit;
pub(crate) mod trace;
