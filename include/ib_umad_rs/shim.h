/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Out-of-line copies of the static inline helpers ib_umad_rs calls. Each is
 * the helper itself and nothing more: logic belongs in the Rust module.
 */
#ifndef IB_UMAD_RS_SHIM_H
#define IB_UMAD_RS_SHIM_H

#include <rdma/ib_verbs.h>

const char *ib_umad_rs_dev_name(const struct ib_device *device);
u32 ib_umad_rs_start_port(const struct ib_device *device);
u32 ib_umad_rs_end_port(const struct ib_device *device);
bool ib_umad_rs_cap_ib_mad(const struct ib_device *device, u32 port_num);
bool ib_umad_rs_cap_ib_smi(const struct ib_device *device, u32 port_num);

#endif
