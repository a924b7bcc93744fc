/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * The wire of ib_loopback's wired devices: what its debugfs file "wire"
 * gives and takes, a struct lo_wire_msg a read or a write. The program on
 * the other end (tools/testing/selftests/rdma/umad_ibsim_wire.c) carries the
 * MADs to a fabric simulator and brings back its MADs and its view of the
 * port. A message written has 0 in what its type does not use.
 */
#ifndef IB_LOOPBACK_WIRE_H
#define IB_LOOPBACK_WIRE_H

#include <linux/types.h>

#define LO_WIRE_DATA_MAX	256	/* a MAD */

enum lo_wire_type {
	/*
	 * Both ways: a MAD (256 bytes) of QP0 or QP1 of the port: QP0 to
	 * QP0 with Q_Key 0, or to QP1 with its Q_Key (0x80010000).
	 */
	LO_WIRE_MAD = 1,
	/*
	 * To the module: the port's PortInfo attribute as the fabric has it
	 * (64 bytes: LID, SM LID, state, ...), which query_port then reports
	 * and whose changes reach the IB core as port events, ClientReregister
	 * one when set. The capability mask is the host's own (what
	 * modify_port sets), not the fabric's.
	 */
	LO_WIRE_PORT_INFO = 2,
	/*
	 * From the module: the port's capability mask (data, 4 bytes, big
	 * endian) when the wire opens, when a wired device is added, and
	 * when it changes (IsSM: an issmN open); the latest, when it changed
	 * more than once before a read.
	 */
	LO_WIRE_CAP_MASK = 3,
};

struct lo_wire_msg {
	__u8 type;		/* enum lo_wire_type */
	__u8 port;		/* port number, from 1 */
	__u16 dev;		/* iblo<dev> */
	/* LO_WIRE_MAD: the packet's addresses, in host order. */
	__u16 dlid;
	__u16 slid;
	__u32 dqpn;
	__u32 sqpn;
	__u32 qkey;
	__u16 pkey;
	__u8 sl;
	__u8 reserved;		/* 0 */
	__u32 len;		/* bytes of data */
	__u8 data[LO_WIRE_DATA_MAX];
};

#endif /* IB_LOOPBACK_WIRE_H */
