/* SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB */
/*
 * What ib_umad_rs's Rust needs from C beyond the kernel's headers: the
 * driver's tracepoints, and the layout of a uapi struct that bindgen cannot
 * give.
 */
#ifndef IB_UMAD_RS_H
#define IB_UMAD_RS_H

#include <rdma/ib_user_mad.h>
#include "ib_umad_rs_trace.h"

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

#endif
