/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What ib_umad_rs is generated against, out of tree: bindgen reads this
 * with the kernel's own flags, and bindgen_parameters beside it narrows it.
 * In the kernel tree, the patch series puts each group below, with the
 * patch that needs it, in rust/bindings/bindings_helper.h (a uAPI header
 * in rust/uapi/uapi_helper.h), and the driver's own header under its
 * Kconfig symbol.
 */

/* For abstraction ratelimit: glue/ratelimit.rs */
#include <linux/ratelimit.h>

/* For abstraction nospec: glue/nospec.rs */
#include <linux/nospec.h>

/* For abstraction chrdev: glue/chrdev.rs and its directory */
#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/poll.h>

const __poll_t RUST_CONST_HELPER_EPOLLIN = EPOLLIN;
const __poll_t RUST_CONST_HELPER_EPOLLRDNORM = EPOLLRDNORM;
const __poll_t RUST_CONST_HELPER_EPOLLOUT = EPOLLOUT;
const __poll_t RUST_CONST_HELPER_EPOLLWRNORM = EPOLLWRNORM;
const __poll_t RUST_CONST_HELPER_EPOLLERR = EPOLLERR;

/* For abstraction infiniband: infiniband/ */
#include <rdma/ib_mad.h>
#include <rdma/ib_verbs.h>
#include "core_priv.h"

/* For driver: the userspace ABI its layouts are asserted against, its header */
#include <rdma/ib_user_mad.h>
#include "ib_umad_rs.h"
