/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The raw-ABI tests' addressing of a UD send on QP1 to a port of the pair
 * (umad_test.h): by LID and GRH, which soft-RoCE needs and ib_loopback
 * carries. Not for the libibumad tests: libibumad has its own struct
 * ib_user_mad.
 */
#ifndef UMAD_UD_H
#define UMAD_UD_H

#include <arpa/inet.h>
#include <string.h>
#include <rdma/ib_user_mad.h>

#include "umad_test.h"

#define QP1_QKEY 0x80010000

/* Addresses umad's header (the rest of it as it is) from agent to a port. */
static inline void umad_address(struct ib_user_mad *umad, __u32 agent,
				const struct umad_port_addr *to, int timeout_ms, int retries)
{
	umad->hdr.id = agent;
	umad->hdr.timeout_ms = timeout_ms;
	umad->hdr.retries = retries;
	umad->hdr.qpn = htonl(1);
	umad->hdr.qkey = htonl(QP1_QKEY);
	umad->hdr.lid = htons(to->lid);
	umad->hdr.grh_present = 1;
	umad->hdr.hop_limit = 64;
	memcpy(umad->hdr.gid, to->gid, 16);
}

/*
 * A MAD's common header: base and class version 1, class, method and TID
 * (the rest of it as it is).
 */
static inline void umad_common_header(__u8 *mad, int class, int method, __u64 tid)
{
	mad[0] = 1;
	mad[1] = class;
	mad[2] = 1;
	mad[3] = method;
	for (int i = 0; i < 8; i++)
		mad[8 + i] = tid >> (56 - 8 * i);
}

#endif
