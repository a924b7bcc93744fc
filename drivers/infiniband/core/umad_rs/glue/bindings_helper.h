/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What ib_umad_rs is generated against, out of tree: bindgen reads this
 * with the kernel's own flags, and bindgen_parameters beside it narrows it.
 * In the kernel tree, the patch series puts the same lines in
 * rust/bindings/bindings_helper.h, the driver's own header under its
 * Kconfig symbol.
 */
#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/nospec.h>
#include <linux/poll.h>
#include <linux/ratelimit.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_user_mad.h>
#include <rdma/ib_verbs.h>

const __poll_t RUST_CONST_HELPER_EPOLLIN = EPOLLIN;
const __poll_t RUST_CONST_HELPER_EPOLLRDNORM = EPOLLRDNORM;
const __poll_t RUST_CONST_HELPER_EPOLLOUT = EPOLLOUT;
const __poll_t RUST_CONST_HELPER_EPOLLWRNORM = EPOLLWRNORM;
const __poll_t RUST_CONST_HELPER_EPOLLERR = EPOLLERR;

#include "core_priv.h"
#include "ib_umad_rs.h"
