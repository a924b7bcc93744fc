/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What ib_umad_rs is generated against: bindgen reads this with the
 * kernel's own flags; bindgen_parameters beside it narrows it.
 */
#include <rdma/ib_verbs.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_user_mad.h>
#include <linux/poll.h>
#include "shim.h"
#include "ib_umad_rs_trace.h"
#include "core_priv.h"

/*
 * struct ib_user_mad_reg_req has "unsigned long __aligned(4)" members, which
 * bindgen lays out with 8-byte alignment. bindings.rs asserts uapi.rs against
 * what the C compiler says instead.
 */
enum {
	IB_UMAD_RS_REG_REQ_SIZE = sizeof(struct ib_user_mad_reg_req),
	IB_UMAD_RS_REG_REQ_ALIGN = __alignof__(struct ib_user_mad_reg_req),
	IB_UMAD_RS_REG_REQ_ID = offsetof(struct ib_user_mad_reg_req, id),
	IB_UMAD_RS_REG_REQ_METHOD_MASK = offsetof(struct ib_user_mad_reg_req, method_mask),
	IB_UMAD_RS_REG_REQ_QPN = offsetof(struct ib_user_mad_reg_req, qpn),
	IB_UMAD_RS_REG_REQ_MGMT_CLASS = offsetof(struct ib_user_mad_reg_req, mgmt_class),
	IB_UMAD_RS_REG_REQ_MGMT_CLASS_VERSION =
		offsetof(struct ib_user_mad_reg_req, mgmt_class_version),
	IB_UMAD_RS_REG_REQ_OUI = offsetof(struct ib_user_mad_reg_req, oui),
	IB_UMAD_RS_REG_REQ_RMPP_VERSION = offsetof(struct ib_user_mad_reg_req, rmpp_version),
};

/* The poll bits are __poll_t casts, which bindgen does not evaluate. */
enum {
	IB_UMAD_RS_EPOLLIN = (__force unsigned int)EPOLLIN,
	IB_UMAD_RS_EPOLLRDNORM = (__force unsigned int)EPOLLRDNORM,
	IB_UMAD_RS_EPOLLOUT = (__force unsigned int)EPOLLOUT,
	IB_UMAD_RS_EPOLLWRNORM = (__force unsigned int)EPOLLWRNORM,
	IB_UMAD_RS_EPOLLERR = (__force unsigned int)EPOLLERR,
};
