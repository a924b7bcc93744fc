// SPDX-License-Identifier: GPL-2.0
/*
 * ib_loopback: a test-only InfiniBand HCA without hardware.
 *
 * Soft-RoCE has only QP1 on RoCE ports. This driver registers InfiniBand
 * devices (link layer InfiniBand, full IB management capabilities) so that
 * the MAD layer opens QP0 and QP1 on every port, umad gets issm nodes, and
 * SMPs, LID routing and directed routes can be tested without a fabric.
 *
 * The fabric: every port of every loopback device is an endpoint. A UD send
 * (QP0, QP1 or a UD QP) is copied when posted and delivered asynchronously
 * from a workqueue to the port whose LID is the destination LID of the
 * address handle; a send to the permissive LID (0xffff), as directed-route
 * SMPs are sent, goes to the cabled peer port:
 *  - device iblo<i> is cabled to iblo<i^1> (0-1, 2-3, ...) port p to port p;
 *  - a device whose partner does not exist has its ports cabled pairwise to
 *    each other: 1-2, 3-4, ...;
 *  - a port without a peer is not cabled; what it sends to 0xffff is lost.
 * A send that reaches nobody still completes successfully for the sender.
 *
 * LIDs: port p of iblo<i> has LID base_lid + 128 * i + p - 1, and every port
 * is ACTIVE, as if a subnet manager had configured the fabric. With
 * port_init=1 the fabric is as before its SM runs: cabled ports are INIT
 * (LinkUp) and uncabled ones DOWN (Polling), with no LID and no SM LID, and
 * only subnet management packets (QP0) pass until both ends of a link are
 * ACTIVE. GID index 0 is the port's GID prefix (fe80::/64 until an SM sets
 * another) + the port GUID; the node GUID is 0x49424c4f00000000 | i << 8
 * and the port GUID is the node GUID + p.
 *
 * Each port has a subnet management agent (SMA) that answers SubnGet and
 * SubnSet of NodeDescription, NodeInfo, GUIDInfo, PortInfo (LIDs, M_Key,
 * the state machine INIT -> ARMED -> ACTIVE, and the IB core's port events
 * that follow), P_KeyTable, SLtoVLMappingTable and VLArbitrationTable, with
 * the error status IBA gives for anything else. SMInfo goes to the port's
 * SM, if one registered for it, as on real HCAs. A performance management
 * agent (PMA) answers ClassPortInfo, PortCounters and PortCountersExtended
 * from the port's own packet counters.
 *
 * debugfs (/sys/kernel/debug/ib_loopback/):
 *  drop_every_nth  N: drop the Nth, 2Nth, ... packet sent after the write
 *                  (0: off)
 *  drop_next       K: drop the next K packets sent
 *  delay_ms        delay each delivery by that many milliseconds
 *  notify_delay_ms the worker waits that many milliseconds before it calls
 *                  a completion handler (a consumer told late)
 *  log_packets     1: log every packet's fate (MAD class, method, TID,
 *                  RMPP type and segment) to the kernel log
 *  add_device      write a port count (1-128; 0: the nports parameter) to
 *                  add a device with the lowest free index; "wire", a
 *                  wired device (below)
 *  remove_device   write "iblo<i>" or "<i>" to remove that device
 *  devices         "<name> <ports> <LID of port 1 now>" per device
 *  stats           packet counters: tx, delivered, dropped, lost; the
 *                  wire's: wire_out, wire_in, wire_dropped (its reader
 *                  too far behind)
 *  wire            the wire of wired devices (below)
 * Dropped packets (knobs) and lost ones (nobody there) complete successfully
 * on the sender. Directed-route SMPs with hop count 0 never reach the wire:
 * the MAD layer answers them through process_mad.
 *
 * Wired devices: writing "wire" to add_device adds a device of one port
 * that is not on the loopback fabric but on a wire to another fabric,
 * which a program carries (tools/testing/selftests/rdma/umad_ibsim_wire.c, a
 * fabric simulator's client). What its QP0 and QP1 send goes out on the
 * wire, directed-route SMPs of hop count 0 too (the other fabric answers
 * for the port: it has no SMA and no PMA, no process_mad); what comes in
 * is delivered to QP0 or QP1, as a port delivers it. Its PortInfo is what
 * the wire last said, Down (Polling) until then and after the wire
 * closes; its capability mask is the host's own, which the wire is told.
 * The debugfs file "wire" is the wire, opened read-write by one program at
 * a time (EBUSY): a read takes a message (struct lo_wire_msg,
 * ib_loopback_wire.h), waiting for one unless O_NONBLOCK, and poll says
 * when one is there; a write gives one, EINVAL if it is not one. Other
 * devices neither reach a wired device nor are cabled to it.
 */

#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/idr.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>
#include <linux/unaligned.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_pma.h>
#include <rdma/ib_smi.h>
#include <rdma/ib_verbs.h>

#include "ib_loopback_wire.h"

#define LO_MAX_DEVS		64
#define LO_MAX_PORTS		128	/* also the LID stride between devices */
#define LO_MAX_PKEYS		32
#define LO_GID_TBL_LEN		1
#define LO_MAX_QP_WR		8192
#define LO_MAX_SGE		8
#define LO_MAX_CQE		65536
#define LO_MAX_OBJS		65536
#define LO_MTU			4096
#define LO_GRH_LEN		sizeof(struct ib_grh)
#define LO_NODE_GUID		0x49424c4f00000000ULL	/* "IBLO" */
#define LO_GID_PREFIX		0xfe80000000000000ULL
#define LO_VENDOR_ID		0x000000
#define LO_PART_ID		0x1b10
#define LO_MAX_DELAY_MS		60000
#define LO_FIRST_UD_QPN		2
#define LO_MAX_QPN		0xffffff
/* Header bytes a UD packet carries after the GRH: BTH, DETH, ICRC. */
#define LO_UD_HDR_LEN		(12 + 8 + 4)
#define LO_LRH_LEN		8
/* Unicast LIDs are below this; the LID table covers them. */
#define LO_LID_END		0xc000
/* VLs: VLCap VL0-7 (4), and VL arbitration tables of 8 entries each. */
#define LO_VL_CAP		4
#define LO_VL_ARB_CAP		8
#define LO_SL2VL_LEN		8	/* 16 SLs, a VL nibble each */
#define LO_SUBNET_TIMEOUT	18
#define LO_RESP_TIME		8
#define LO_WIRE_QUEUE_MAX	4096	/* packets the wire's reader is owed */

static unsigned int ndevs = 2;
module_param(ndevs, uint, 0444);
MODULE_PARM_DESC(ndevs, "Devices created at load (0-64, default 2)");

static unsigned int nports = 2;
module_param(nports, uint, 0444);
MODULE_PARM_DESC(nports, "Ports per device (1-128, default 2)");

static unsigned int base_lid = 1;
module_param(base_lid, uint, 0444);
MODULE_PARM_DESC(base_lid,
		 "LID of iblo0 port 1; port p of iblo<i> has base_lid + 128 * i + p - 1 (default 1)");

static unsigned int sm_lid;
module_param(sm_lid, uint, 0444);
MODULE_PARM_DESC(sm_lid, "SM LID every port reports (default: base_lid; none with port_init)");

static bool port_init;
module_param(port_init, bool, 0444);
MODULE_PARM_DESC(port_init,
		 "Ports start INIT (or DOWN if uncabled) with no LID, for a subnet manager to configure (default: ACTIVE, LIDs from base_lid)");

static unsigned short pkeys[LO_MAX_PKEYS] = { 0xffff, 0x8001, 0x7fff, 0x8002 };
static int npkeys = 4;
module_param_array(pkeys, ushort, &npkeys, 0444);
MODULE_PARM_DESC(pkeys,
		 "P_Key table of every port (default 0xffff,0x8001,0x7fff,0x8002)");

struct lo_dev;

/* A port's packet counters, as its PMA reports them. */
struct lo_counters {
	u64 xmit_data;			/* in units of 4 octets */
	u64 rcv_data;
	u64 xmit_pkts;
	u64 rcv_pkts;
	u64 xmit_discards;
};

struct lo_port {
	struct lo_dev *dev;
	u32 num;
	/* The rest is under lo_lock. */
	struct lo_qp *qp0;
	struct lo_qp *qp1;
	struct list_head ud_qps;
	/*
	 * What the SMA keeps: the port's PortInfo as the wire has it (LID,
	 * state, capability mask, ...: what query_port reports too), its
	 * P_Key, SL to VL and VL arbitration tables, and its counters.
	 */
	struct ib_port_info pi;
	bool cap_owed;			/* wired: the wire's reader is owed pi.cap_mask */
	u16 pkeys[LO_MAX_PKEYS];
	u8 sl2vl[LO_SL2VL_LEN];
	u8 vl_arb[2][2 * LO_VL_ARB_CAP];	/* low, high priority */
	struct lo_counters counters;
};

struct lo_dev {
	struct ib_device ibdev;
	u32 idx;
	u32 nports;
	bool wired;			/* on the wire, not the loopback fabric */
	struct ida qpn_ida;
	struct lo_port *ports;		/* ports[p - 1] */
};

struct lo_pd {
	struct ib_pd ibpd;
};

struct lo_ah {
	struct ib_ah ibah;
	struct rdma_ah_attr attr;
};

struct lo_cq {
	struct ib_cq ibcq;
	spinlock_t lock;		/* the ring and notify */
	struct ib_wc *ring;
	u32 size;
	u32 head;
	u32 count;
	u32 overflows;
	int notify;			/* 0, IB_CQ_SOLICITED or IB_CQ_NEXT_COMP */
};

/* A posted receive: wr_id and sg_list[max_recv_sge]. */
struct lo_rwqe {
	u64 wr_id;
	u32 num_sge;
	struct ib_sge sg[];
};

struct lo_qp {
	struct ib_qp ibqp;
	/* The rest is under lo_lock. */
	struct lo_port *port;		/* NULL for a UD QP before INIT */
	struct list_head ud_node;	/* on port->ud_qps */
	enum ib_qp_state state;
	enum ib_sig_type sq_sig_type;
	u32 qkey;
	u16 pkey_index;
	u32 sq_psn;
	struct ib_qp_cap cap;
	u32 sq_outstanding;
	void *rq;
	size_t rq_stride;
	u32 rq_head;
	u32 rq_count;
};

/* A UD packet: a copy of what was posted, with the headers it carries. */
struct lo_pkt {
	struct list_head node;
	struct lo_qp *src_qp;		/* until its send completion */
	u64 wr_id;
	bool signaled;
	bool solicited;
	bool has_imm;
	bool has_grh;
	bool vl15;			/* from QP0: passes ports not ACTIVE */
	__be32 imm;
	unsigned long due;
	u32 src_idx;			/* sender device index and port */
	u32 src_port;
	u32 src_qpn;
	u32 dst_qpn;
	u32 qkey;
	u16 pkey;
	u16 slid;
	u16 dlid;
	u8 sl;
	struct ib_grh grh;
	u32 len;
	u8 data[];
};

/*
 * lo_lock: the fabric. Devices' publication, ports' QPs and capability
 * masks, QP state and receive queues, the packet lists and the knobs.
 * Nests outside lo_cq.lock. Completion handlers are never called under it.
 */
static DEFINE_SPINLOCK(lo_lock);
/* Device add and remove. */
static DEFINE_MUTEX(lo_dev_mutex);
/*
 * Held by the worker from a completion it queues to the call of the CQ's
 * handler; destroy_qp waits on it (lo_destroy_qp()).
 */
static DEFINE_MUTEX(lo_notify_mutex);

static struct lo_dev *lo_devs[LO_MAX_DEVS];
/* The port each unicast LID reaches (a port's LID and its LMC's path bits). */
static struct lo_port *lo_lids[LO_LID_END];
static LIST_HEAD(lo_tx_list);		/* posted, send not completed yet */
static LIST_HEAD(lo_wire_list);		/* on the wire, sorted by due */
static struct workqueue_struct *lo_wq;
static struct work_struct lo_tx_work;
static struct delayed_work lo_rx_work;
static struct dentry *lo_debugfs;

static u32 lo_drop_nth;
static u32 lo_drop_count;
static u32 lo_drop_next;
static u32 lo_delay_ms;
static u32 lo_notify_delay_ms;
static u32 lo_log_packets;
static u64 lo_stat_tx, lo_stat_delivered, lo_stat_dropped, lo_stat_lost;

/*
 * The wire, under lo_lock: whether it is open, the packets its reader has
 * yet to take, in order, and how many wired ports owe it their capability
 * mask (a port's state, not a message: the latest is what counts).
 */
static bool lo_wire_open;
static LIST_HEAD(lo_wire_out);
static u32 lo_wire_queued;
static u32 lo_wire_caps_owed;
static DECLARE_WAIT_QUEUE_HEAD(lo_wire_wait);
static u64 lo_stat_wire_out, lo_stat_wire_in, lo_stat_wire_dropped;

static void lo_wire_cap_mask(struct lo_port *port);

/* The wire's messages as ib_loopback_wire.h gives them to its program. */
static_assert(sizeof(struct lo_wire_msg) == 28 + LO_WIRE_DATA_MAX);
static_assert(offsetof(struct lo_wire_msg, data) == 28);
static_assert(sizeof(struct ib_port_info) == 64);

static inline struct lo_dev *to_ldev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct lo_dev, ibdev);
}

static inline struct lo_cq *to_lcq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct lo_cq, ibcq);
}

static inline struct lo_qp *to_lqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct lo_qp, ibqp);
}

static inline struct lo_ah *to_lah(struct ib_ah *ibah)
{
	return container_of(ibah, struct lo_ah, ibah);
}

static struct lo_port *lo_port(struct ib_device *ibdev, u32 port_num)
{
	return &to_ldev(ibdev)->ports[port_num - 1];
}

/* The LID port_num of device idx has at load without port_init. */
static u16 lo_lid(u32 idx, u32 port_num)
{
	return base_lid + idx * LO_MAX_PORTS + port_num - 1;
}

/* The port's PortInfo fields, under lo_lock. */
static u16 lo_port_lid(const struct lo_port *port)
{
	return be16_to_cpu(port->pi.lid);
}

static u8 lo_port_lmc(const struct lo_port *port)
{
	return port->pi.mkeyprot_resv_lmc & 7;
}

static u8 lo_port_state(const struct lo_port *port)
{
	return port->pi.linkspeed_portstate & 0xf;
}

static u8 lo_phys_state(const struct lo_port *port)
{
	return port->pi.portphysstate_linkdown >> 4;
}

static __be64 lo_node_guid(u32 idx)
{
	return cpu_to_be64(LO_NODE_GUID | (u64)idx << 8);
}

static __be64 lo_port_guid(const struct lo_port *port)
{
	return cpu_to_be64(LO_NODE_GUID | (u64)port->dev->idx << 8 | port->num);
}

/* Under lo_lock: the SM may change the prefix. */
static void lo_port_gid(const struct lo_port *port, union ib_gid *gid)
{
	gid->global.subnet_prefix = port->pi.gid_prefix;
	gid->global.interface_id = lo_port_guid(port);
}

static struct lo_rwqe *lo_rwqe(struct lo_qp *qp, u32 i)
{
	return qp->rq + (size_t)i * qp->rq_stride;
}

/* Completion queues */

/* Queues wc; true if the consumer is to be told (lo_cq_notify()). */
static bool lo_cq_post(struct lo_cq *cq, const struct ib_wc *wc, bool solicited)
{
	unsigned long flags;
	bool notify = false;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->count == cq->size) {
		cq->overflows++;
		spin_unlock_irqrestore(&cq->lock, flags);
		pr_warn_ratelimited("ib_loopback: CQ overflow, completion lost\n");
		return false;
	}
	cq->ring[(cq->head + cq->count) % cq->size] = *wc;
	cq->count++;
	if (cq->notify == IB_CQ_NEXT_COMP ||
	    (cq->notify == IB_CQ_SOLICITED &&
	     (solicited || wc->status != IB_WC_SUCCESS))) {
		cq->notify = 0;
		notify = true;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return notify;
}

static void lo_cq_notify(struct lo_cq *cq)
{
	if (cq->ibcq.comp_handler)
		cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
}

/* Takes the completions of a destroyed QP out of cq. */
static void lo_cq_purge(struct lo_cq *cq, struct ib_qp *qp)
{
	unsigned long flags;
	u32 i, kept = 0;

	spin_lock_irqsave(&cq->lock, flags);
	for (i = 0; i < cq->count; i++) {
		struct ib_wc *wc = &cq->ring[(cq->head + i) % cq->size];

		if (wc->qp == qp)
			continue;
		if (kept != i)
			cq->ring[(cq->head + kept) % cq->size] = *wc;
		kept++;
	}
	cq->count = kept;
	spin_unlock_irqrestore(&cq->lock, flags);
}

static int lo_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
			struct uverbs_attr_bundle *attrs)
{
	struct lo_cq *cq = to_lcq(ibcq);

	if (attrs || attr->flags)
		return -EOPNOTSUPP;
	if (attr->cqe < 1 || attr->cqe > LO_MAX_CQE)
		return -EINVAL;
	cq->ring = kvcalloc(attr->cqe, sizeof(*cq->ring), GFP_KERNEL);
	if (!cq->ring)
		return -ENOMEM;
	spin_lock_init(&cq->lock);
	cq->size = attr->cqe;
	ibcq->cqe = attr->cqe;
	return 0;
}

static int lo_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct lo_cq *cq = to_lcq(ibcq);

	/* No QP uses it, and the worker owes it nothing (lo_destroy_qp()). */
	kvfree(cq->ring);
	return 0;
}

static int lo_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc)
{
	struct lo_cq *cq = to_lcq(ibcq);
	unsigned long flags;
	int n;

	spin_lock_irqsave(&cq->lock, flags);
	for (n = 0; n < num_entries && cq->count; n++) {
		wc[n] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->size;
		cq->count--;
	}
	spin_unlock_irqrestore(&cq->lock, flags);
	return n;
}

static int lo_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct lo_cq *cq = to_lcq(ibcq);
	unsigned long irqflags;
	int ret = 0;

	spin_lock_irqsave(&cq->lock, irqflags);
	if (cq->notify != IB_CQ_NEXT_COMP)
		cq->notify = flags & IB_CQ_SOLICITED_MASK;
	if ((flags & IB_CQ_REPORT_MISSED_EVENTS) && cq->count)
		ret = 1;
	spin_unlock_irqrestore(&cq->lock, irqflags);
	return ret;
}

/* Device, ports, protection domains, memory, address handles */

static int lo_query_device(struct ib_device *ibdev,
			   struct ib_device_attr *attr, struct ib_udata *udata)
{
	if (udata && (udata->inlen || udata->outlen))
		return -EINVAL;
	memset(attr, 0, sizeof(*attr));
	attr->fw_ver = 1;
	attr->sys_image_guid = ibdev->node_guid;
	attr->max_mr_size = U64_MAX;
	attr->page_size_cap = PAGE_SIZE;
	attr->vendor_id = LO_VENDOR_ID;
	attr->vendor_part_id = LO_PART_ID;
	attr->hw_ver = 1;
	attr->max_qp = LO_MAX_OBJS;
	attr->max_qp_wr = LO_MAX_QP_WR;
	attr->kernel_cap_flags = IBK_LOCAL_DMA_LKEY;
	attr->max_send_sge = LO_MAX_SGE;
	attr->max_recv_sge = LO_MAX_SGE;
	attr->max_sge_rd = LO_MAX_SGE;
	attr->max_cq = LO_MAX_OBJS;
	attr->max_cqe = LO_MAX_CQE;
	attr->max_mr = LO_MAX_OBJS;
	attr->max_pd = LO_MAX_OBJS;
	attr->max_ah = LO_MAX_OBJS;
	attr->max_pkeys = npkeys;
	attr->local_ca_ack_delay = 15;
	return 0;
}

static int lo_query_port(struct ib_device *ibdev, u32 port_num,
			 struct ib_port_attr *attr)
{
	struct lo_port *port = lo_port(ibdev, port_num);
	const struct ib_port_info *pi = &port->pi;
	unsigned long flags;

	attr->max_mtu = IB_MTU_4096;
	attr->gid_tbl_len = LO_GID_TBL_LEN;
	attr->pkey_tbl_len = npkeys;
	attr->max_msg_sz = LO_MTU;
	attr->max_vl_num = LO_VL_CAP;
	attr->active_width = IB_WIDTH_4X;
	attr->active_speed = IB_SPEED_SDR;
	spin_lock_irqsave(&lo_lock, flags);
	attr->state = lo_port_state(port);
	attr->phys_state = lo_phys_state(port);
	attr->active_mtu = pi->neighbormtu_mastersmsl >> 4;
	attr->lid = lo_port_lid(port);
	attr->sm_lid = be16_to_cpu(pi->sm_lid);
	attr->lmc = lo_port_lmc(port);
	attr->sm_sl = pi->neighbormtu_mastersmsl & 0xf;
	attr->subnet_timeout = pi->clientrereg_resv_subnetto & 0x1f;
	attr->subnet_prefix = be64_to_cpu(pi->gid_prefix);
	attr->port_cap_flags = be32_to_cpu(pi->cap_mask);
	attr->bad_pkey_cntr = be16_to_cpu(pi->pkey_violations);
	attr->qkey_viol_cntr = be16_to_cpu(pi->qkey_violations);
	spin_unlock_irqrestore(&lo_lock, flags);
	return 0;
}

static int lo_modify_port(struct ib_device *ibdev, u32 port_num, int mask,
			  struct ib_port_modify *props)
{
	struct lo_port *port = lo_port(ibdev, port_num);
	unsigned long flags;
	u32 cap_mask, old;

	spin_lock_irqsave(&lo_lock, flags);
	old = be32_to_cpu(port->pi.cap_mask);
	cap_mask = (old | props->set_port_cap_mask) & ~props->clr_port_cap_mask;
	port->pi.cap_mask = cpu_to_be32(cap_mask);
	if (port->dev->wired && cap_mask != old)
		lo_wire_cap_mask(port);
	spin_unlock_irqrestore(&lo_lock, flags);
	return 0;
}

static int lo_get_port_immutable(struct ib_device *ibdev, u32 port_num,
				 struct ib_port_immutable *immutable)
{
	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_IB;
	immutable->pkey_tbl_len = npkeys;
	immutable->gid_tbl_len = LO_GID_TBL_LEN;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;
	return 0;
}

static enum rdma_link_layer lo_get_link_layer(struct ib_device *ibdev,
					      u32 port_num)
{
	return IB_LINK_LAYER_INFINIBAND;
}

static int lo_query_pkey(struct ib_device *ibdev, u32 port_num, u16 index,
			 u16 *pkey)
{
	unsigned long flags;

	if (index >= npkeys)
		return -EINVAL;
	spin_lock_irqsave(&lo_lock, flags);
	*pkey = lo_port(ibdev, port_num)->pkeys[index];
	spin_unlock_irqrestore(&lo_lock, flags);
	return 0;
}

static int lo_query_gid(struct ib_device *ibdev, u32 port_num, int index,
			union ib_gid *gid)
{
	unsigned long flags;

	if (index < 0 || index >= LO_GID_TBL_LEN)
		return -EINVAL;
	spin_lock_irqsave(&lo_lock, flags);
	lo_port_gid(lo_port(ibdev, port_num), gid);
	spin_unlock_irqrestore(&lo_lock, flags);
	return 0;
}

static void lo_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	snprintf(str, IB_FW_VERSION_NAME_MAX, "1.0.0");
}

static int lo_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	return udata ? -EOPNOTSUPP : 0;
}

static int lo_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	return 0;
}

/* Virtual DMA: an lkey is not needed to reach the memory; any MR is a token. */
static struct ib_mr *lo_get_dma_mr(struct ib_pd *pd, int access)
{
	struct ib_mr *mr = kzalloc(sizeof(*mr), GFP_KERNEL);

	return mr ? mr : ERR_PTR(-ENOMEM);
}

/*
 * The IB core registers no device without reg_user_mr; the loopback HCA
 * has no userspace verbs, so it refuses every user MR.
 */
static struct ib_mr *lo_reg_user_mr(struct ib_pd *pd, u64 start, u64 length,
				    u64 virt_addr, int access,
#ifdef LO_REG_USER_MR_DMAH
				    struct ib_dmah *dmah,
#endif
				    struct ib_udata *udata)
{
	return ERR_PTR(-EOPNOTSUPP);
}

static int lo_dereg_mr(struct ib_mr *mr, struct ib_udata *udata)
{
	kfree(mr);
	return 0;
}

static int lo_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
			struct ib_udata *udata)
{
	struct rdma_ah_attr *attr = init->ah_attr;
	struct lo_ah *ah = to_lah(ibah);

	if (udata)
		return -EOPNOTSUPP;
	if (attr->type != RDMA_AH_ATTR_TYPE_IB)
		return -EINVAL;
	if ((rdma_ah_get_ah_flags(attr) & IB_AH_GRH) &&
	    rdma_ah_read_grh(attr)->sgid_index >= LO_GID_TBL_LEN)
		return -EINVAL;
	ah->attr = *attr;
	/* The core holds the reference; keep no pointer to it. */
	ah->attr.grh.sgid_attr = NULL;
	return 0;
}

static int lo_query_ah(struct ib_ah *ibah, struct rdma_ah_attr *attr)
{
	*attr = to_lah(ibah)->attr;
	return 0;
}

static int lo_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	return 0;
}

/* Queue pairs */

/* Frees the unsent packets of qp; with flush, completes them in error. */
static bool lo_qp_drop_tx(struct lo_qp *qp, bool flush)
{
	struct lo_cq *scq = to_lcq(qp->ibqp.send_cq);
	struct lo_pkt *pkt, *tmp;
	bool notify = false;

	list_for_each_entry_safe(pkt, tmp, &lo_tx_list, node) {
		if (pkt->src_qp != qp)
			continue;
		list_del(&pkt->node);
		if (flush) {
			struct ib_wc wc = {
				.wr_id = pkt->wr_id,
				.status = IB_WC_WR_FLUSH_ERR,
				.opcode = IB_WC_SEND,
				.qp = &qp->ibqp,
			};

			notify |= lo_cq_post(scq, &wc, false);
		}
		kfree(pkt);
	}
	qp->sq_outstanding = 0;
	return notify;
}

/* Empties the receive queue of qp; with flush, completes the WRs in error. */
static bool lo_qp_drop_rq(struct lo_qp *qp, bool flush)
{
	struct lo_cq *rcq = to_lcq(qp->ibqp.recv_cq);
	bool notify = false;

	while (qp->rq_count) {
		struct lo_rwqe *rwqe = lo_rwqe(qp, qp->rq_head);
		struct ib_wc wc = {
			.wr_id = rwqe->wr_id,
			.status = IB_WC_WR_FLUSH_ERR,
			.opcode = IB_WC_RECV,
			.qp = &qp->ibqp,
		};

		if (flush)
			notify |= lo_cq_post(rcq, &wc, false);
		qp->rq_head = (qp->rq_head + 1) % qp->cap.max_recv_wr;
		qp->rq_count--;
	}
	return notify;
}

static void lo_qp_unlink(struct lo_qp *qp)
{
	if (!qp->port)
		return;
	if (qp->port->qp0 == qp)
		qp->port->qp0 = NULL;
	else if (qp->port->qp1 == qp)
		qp->port->qp1 = NULL;
	else
		list_del(&qp->ud_node);
	qp->port = NULL;
}

static int lo_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
			struct ib_udata *udata)
{
	struct lo_dev *ldev = to_ldev(ibqp->device);
	struct lo_qp *qp = to_lqp(ibqp);
	struct ib_qp_cap *cap = &init->cap;
	struct lo_port *port = NULL;
	unsigned long flags;
	int ret;

	if (udata)
		return -EOPNOTSUPP;
	if (init->qp_type != IB_QPT_SMI && init->qp_type != IB_QPT_GSI &&
	    init->qp_type != IB_QPT_UD)
		return -EOPNOTSUPP;
	if (init->srq || init->create_flags || cap->max_inline_data)
		return -EOPNOTSUPP;
	if (cap->max_send_wr > LO_MAX_QP_WR || cap->max_recv_wr > LO_MAX_QP_WR ||
	    cap->max_send_sge > LO_MAX_SGE || cap->max_recv_sge > LO_MAX_SGE)
		return -EINVAL;
	if (init->qp_type != IB_QPT_UD) {
		if (!rdma_is_port_valid(ibqp->device, init->port_num))
			return -EINVAL;
		port = lo_port(ibqp->device, init->port_num);
	}

	INIT_LIST_HEAD(&qp->ud_node);
	qp->state = IB_QPS_RESET;
	qp->sq_sig_type = init->sq_sig_type;
	qp->cap = *cap;
	qp->cap.max_send_wr = max(cap->max_send_wr, 1U);
	qp->cap.max_recv_wr = max(cap->max_recv_wr, 1U);
	qp->rq_stride = struct_size_t(struct lo_rwqe, sg, cap->max_recv_sge);
	qp->rq = kvcalloc(qp->cap.max_recv_wr, qp->rq_stride, GFP_KERNEL);
	if (!qp->rq)
		return -ENOMEM;

	switch (init->qp_type) {
	case IB_QPT_SMI:
	case IB_QPT_GSI:
		ibqp->qp_num = init->qp_type == IB_QPT_SMI ? 0 : 1;
		ret = 0;
		spin_lock_irqsave(&lo_lock, flags);
		if (init->qp_type == IB_QPT_SMI && !port->qp0)
			port->qp0 = qp;
		else if (init->qp_type == IB_QPT_GSI && !port->qp1)
			port->qp1 = qp;
		else
			ret = -EBUSY;
		if (!ret)
			qp->port = port;
		spin_unlock_irqrestore(&lo_lock, flags);
		break;
	default:
		ret = ida_alloc_range(&ldev->qpn_ida, LO_FIRST_UD_QPN,
				      LO_MAX_QPN, GFP_KERNEL);
		if (ret >= 0) {
			ibqp->qp_num = ret;
			ret = 0;
		}
		break;
	}
	if (ret)
		kvfree(qp->rq);
	return ret;
}

static int lo_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
			struct ib_udata *udata)
{
	struct lo_qp *qp = to_lqp(ibqp);
	enum ib_qp_state cur, next;
	bool snotify = false, rnotify = false;
	unsigned long flags;
	int ret = 0;

	if (udata)
		return -EOPNOTSUPP;
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index >= npkeys)
		return -EINVAL;
	if ((mask & IB_QP_PORT) &&
	    !rdma_is_port_valid(ibqp->device, attr->port_num))
		return -EINVAL;

	spin_lock_irqsave(&lo_lock, flags);
	cur = (mask & IB_QP_CUR_STATE) ? attr->cur_qp_state : qp->state;
	next = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	if (cur != qp->state ||
	    !ib_modify_qp_is_ok(cur, next, ibqp->qp_type, mask)) {
		ret = -EINVAL;
		goto out;
	}
	if (mask & IB_QP_PKEY_INDEX)
		qp->pkey_index = attr->pkey_index;
	if (mask & IB_QP_QKEY)
		qp->qkey = attr->qkey;
	if (mask & IB_QP_SQ_PSN)
		qp->sq_psn = attr->sq_psn;
	if ((mask & IB_QP_PORT) && ibqp->qp_type == IB_QPT_UD) {
		struct lo_port *port = lo_port(ibqp->device, attr->port_num);

		lo_qp_unlink(qp);
		qp->port = port;
		list_add_tail(&qp->ud_node, &port->ud_qps);
	}
	if (mask & IB_QP_STATE) {
		qp->state = next;
		if (next == IB_QPS_ERR) {
			snotify = lo_qp_drop_tx(qp, true);
			rnotify = lo_qp_drop_rq(qp, true);
		} else if (next == IB_QPS_RESET) {
			lo_qp_drop_tx(qp, false);
			lo_qp_drop_rq(qp, false);
		}
	}
out:
	spin_unlock_irqrestore(&lo_lock, flags);
	if (snotify)
		lo_cq_notify(to_lcq(ibqp->send_cq));
	if (rnotify)
		lo_cq_notify(to_lcq(ibqp->recv_cq));
	return ret;
}

static int lo_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		       struct ib_qp_init_attr *init)
{
	struct lo_qp *qp = to_lqp(ibqp);
	unsigned long flags;

	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	spin_lock_irqsave(&lo_lock, flags);
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->qkey = qp->qkey;
	attr->pkey_index = qp->pkey_index;
	attr->sq_psn = qp->sq_psn;
	attr->port_num = qp->port ? qp->port->num : ibqp->port;
	spin_unlock_irqrestore(&lo_lock, flags);
	attr->path_mtu = IB_MTU_4096;
	attr->cap = qp->cap;
	init->qp_type = ibqp->qp_type;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->qp_context = ibqp->qp_context;
	init->event_handler = ibqp->event_handler;
	init->sq_sig_type = qp->sq_sig_type;
	init->cap = qp->cap;
	init->port_num = attr->port_num;
	return 0;
}

static int lo_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct lo_dev *ldev = to_ldev(ibqp->device);
	struct lo_qp *qp = to_lqp(ibqp);
	unsigned long flags;

	/* From here on the fabric neither finds it nor sends for it. */
	spin_lock_irqsave(&lo_lock, flags);
	lo_qp_unlink(qp);
	lo_qp_drop_tx(qp, false);
	lo_qp_drop_rq(qp, false);
	qp->state = IB_QPS_RESET;
	spin_unlock_irqrestore(&lo_lock, flags);

	lo_cq_purge(to_lcq(ibqp->send_cq), ibqp);
	if (ibqp->recv_cq != ibqp->send_cq)
		lo_cq_purge(to_lcq(ibqp->recv_cq), ibqp);
	/*
	 * The worker may still owe a CQ of qp the call of its handler for a
	 * completion queued before the unlink. Wait for it: ib_free_cq()
	 * cancels the CQ's work before it calls destroy_cq, so a handler
	 * called after that would queue the work of a CQ about to be freed.
	 */
	mutex_lock(&lo_notify_mutex);
	mutex_unlock(&lo_notify_mutex);
	if (ibqp->qp_type == IB_QPT_UD)
		ida_free(&ldev->qpn_ida, ibqp->qp_num);
	kvfree(qp->rq);
	return 0;
}

static int lo_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr)
{
	struct lo_qp *qp = to_lqp(ibqp);
	bool notify = false;
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&lo_lock, flags);
	for (; wr; wr = wr->next) {
		struct lo_rwqe *rwqe;

		if (wr->num_sge < 0 || wr->num_sge > qp->cap.max_recv_sge ||
		    qp->state == IB_QPS_RESET) {
			ret = -EINVAL;
			break;
		}
		if (qp->state == IB_QPS_ERR) {
			struct ib_wc wc = {
				.wr_id = wr->wr_id,
				.status = IB_WC_WR_FLUSH_ERR,
				.opcode = IB_WC_RECV,
				.qp = ibqp,
			};

			notify |= lo_cq_post(to_lcq(ibqp->recv_cq), &wc, false);
			continue;
		}
		if (qp->rq_count == qp->cap.max_recv_wr) {
			ret = -ENOMEM;
			break;
		}
		rwqe = lo_rwqe(qp, (qp->rq_head + qp->rq_count) %
				   qp->cap.max_recv_wr);
		rwqe->wr_id = wr->wr_id;
		rwqe->num_sge = wr->num_sge;
		memcpy(rwqe->sg, wr->sg_list, wr->num_sge * sizeof(*wr->sg_list));
		qp->rq_count++;
	}
	spin_unlock_irqrestore(&lo_lock, flags);
	if (notify)
		lo_cq_notify(to_lcq(ibqp->recv_cq));
	if (ret)
		*bad_wr = wr;
	return ret;
}

/* Builds the packet of one send WR; called under lo_lock. */
static int lo_make_pkt(struct lo_qp *qp, const struct ib_send_wr *wr,
		       struct lo_pkt **out)
{
	const struct ib_ud_wr *ud = ud_wr(wr);
	struct lo_port *port = qp->port;
	const struct rdma_ah_attr *ah;
	struct lo_pkt *pkt;
	u32 len = 0, off = 0;
	u16 pkey_index;
	int i;

	if (wr->opcode != IB_WR_SEND && wr->opcode != IB_WR_SEND_WITH_IMM)
		return -EINVAL;
	if (wr->num_sge < 0 || wr->num_sge > qp->cap.max_send_sge || !ud->ah)
		return -EINVAL;
	for (i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	if (len > LO_MTU)
		return -EINVAL;
	if (qp->ibqp.qp_type == IB_QPT_GSI)
		pkey_index = ud->pkey_index;
	else if (qp->ibqp.qp_type == IB_QPT_UD)
		pkey_index = qp->pkey_index;
	else
		pkey_index = 0;
	if (pkey_index >= npkeys)
		return -EINVAL;
	if (qp->sq_outstanding >= qp->cap.max_send_wr)
		return -ENOMEM;

	pkt = kzalloc(struct_size(pkt, data, len), GFP_ATOMIC);
	if (!pkt)
		return -ENOMEM;
	for (i = 0; i < wr->num_sge; i++) {
		memcpy(pkt->data + off, ib_virt_dma_to_ptr(wr->sg_list[i].addr),
		       wr->sg_list[i].length);
		off += wr->sg_list[i].length;
	}
	ah = &to_lah(ud->ah)->attr;
	pkt->src_qp = qp;
	pkt->wr_id = wr->wr_id;
	pkt->signaled = qp->sq_sig_type == IB_SIGNAL_ALL_WR ||
			(wr->send_flags & IB_SEND_SIGNALED);
	pkt->solicited = wr->send_flags & IB_SEND_SOLICITED;
	if (wr->opcode == IB_WR_SEND_WITH_IMM) {
		pkt->has_imm = true;
		pkt->imm = wr->ex.imm_data;
	}
	pkt->src_idx = port->dev->idx;
	pkt->src_port = port->num;
	pkt->src_qpn = qp->ibqp.qp_num;
	pkt->dst_qpn = ud->remote_qpn;
	/* C10-15: a Q_Key with the high bit set means the QP's own. */
	pkt->qkey = (ud->remote_qkey & 0x80000000) ? qp->qkey : ud->remote_qkey;
	pkt->vl15 = qp->ibqp.qp_type == IB_QPT_SMI;
	pkt->pkey = port->pkeys[pkey_index];
	pkt->dlid = rdma_ah_get_dlid(ah);
	/*
	 * The permissive LID on both ends of a directed route's hop, as HCAs
	 * send it (the answer goes back to the SLID); else the port's LID
	 * with the path bits its LMC leaves.
	 */
	if (pkt->dlid == be16_to_cpu(IB_LID_PERMISSIVE))
		pkt->slid = be16_to_cpu(IB_LID_PERMISSIVE);
	else
		pkt->slid = lo_port_lid(port) |
			    (rdma_ah_get_path_bits(ah) &
			     ((1 << lo_port_lmc(port)) - 1));
	pkt->sl = rdma_ah_get_sl(ah);
	if (rdma_ah_get_ah_flags(ah) & IB_AH_GRH) {
		const struct ib_global_route *grh = rdma_ah_read_grh(ah);

		pkt->has_grh = true;
		pkt->grh.version_tclass_flow =
			cpu_to_be32(6 << 28 | grh->traffic_class << 20 |
				    (grh->flow_label & 0xfffff));
		pkt->grh.paylen = cpu_to_be16(LO_UD_HDR_LEN + len);
		pkt->grh.next_hdr = 0x1b;
		pkt->grh.hop_limit = grh->hop_limit;
		lo_port_gid(port, &pkt->grh.sgid);
		pkt->grh.dgid = grh->dgid;
	}
	pkt->len = len;
	*out = pkt;
	return 0;
}

static int lo_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
			const struct ib_send_wr **bad_wr)
{
	struct lo_qp *qp = to_lqp(ibqp);
	bool notify = false, queued = false;
	unsigned long flags;
	int ret = 0;

	spin_lock_irqsave(&lo_lock, flags);
	for (; wr; wr = wr->next) {
		struct lo_pkt *pkt;

		if (qp->state == IB_QPS_ERR) {
			struct ib_wc wc = {
				.wr_id = wr->wr_id,
				.status = IB_WC_WR_FLUSH_ERR,
				.opcode = IB_WC_SEND,
				.qp = ibqp,
			};

			notify |= lo_cq_post(to_lcq(ibqp->send_cq), &wc, false);
			continue;
		}
		if (qp->state != IB_QPS_RTS || !qp->port) {
			ret = -EINVAL;
			break;
		}
		ret = lo_make_pkt(qp, wr, &pkt);
		if (ret)
			break;
		list_add_tail(&pkt->node, &lo_tx_list);
		qp->sq_outstanding++;
		queued = true;
	}
	spin_unlock_irqrestore(&lo_lock, flags);
	if (queued)
		queue_work(lo_wq, &lo_tx_work);
	if (notify)
		lo_cq_notify(to_lcq(ibqp->send_cq));
	if (ret)
		*bad_wr = wr;
	return ret;
}

/* The fabric; everything here runs under lo_lock */

static struct lo_port *lo_port_by_lid(u32 lid)
{
	return lid < LO_LID_END ? lo_lids[lid] : NULL;
}

/*
 * Points the port's LIDs (its LID and LMC) at it in lo_lids, or at nobody.
 * A wired port's LIDs are the other fabric's.
 */
static void lo_map_lids(struct lo_port *port, bool on)
{
	u32 lid = lo_port_lid(port), end;

	if (!lid || port->dev->wired)
		return;
	end = min_t(u32, lid + (1 << lo_port_lmc(port)), LO_LID_END);
	for (; lid < end; lid++) {
		if (on)
			lo_lids[lid] = port;
		else if (lo_lids[lid] == port)
			lo_lids[lid] = NULL;
	}
}

/*
 * The port at the other end of the cable of port p of device idx (which
 * may be gone: a packet it sent is still delivered). A wired device is
 * nobody's partner.
 */
static struct lo_port *lo_peer(u32 idx, u32 p)
{
	struct lo_dev *ldev = lo_devs[idx ^ 1];

	if (lo_devs[idx] && lo_devs[idx]->wired)
		return NULL;
	if (ldev && !ldev->wired)
		return p <= ldev->nports ? &ldev->ports[p - 1] : NULL;
	ldev = lo_devs[idx];
	p = ((p - 1) ^ 1) + 1;
	if (ldev && p <= ldev->nports)
		return &ldev->ports[p - 1];
	return NULL;
}

static struct lo_qp *lo_find_qp(struct lo_port *port, u32 qpn)
{
	struct lo_qp *qp;

	if (qpn == 0)
		return port->qp0;
	if (qpn == 1)
		return port->qp1;
	list_for_each_entry(qp, &port->ud_qps, ud_node)
		if (qp->ibqp.qp_num == qpn)
			return qp;
	return NULL;
}

/* The receiving port's index of the sender's P_Key, or -1 (C10-117). */
static int lo_pkey_index(const struct lo_port *port, u16 pkey)
{
	const u16 *table = port->pkeys;
	int i;

	for (i = 0; i < npkeys; i++)
		if (table[i] == pkey && (pkey & 0x8000))
			return i;
	for (i = 0; i < npkeys; i++)
		if ((table[i] & 0x7fff) == (pkey & 0x7fff) &&
		    (table[i] & 0x7fff) && ((table[i] | pkey) & 0x8000))
			return i;
	return -1;
}

/* What a packet of len payload bytes counts in PortXmitData/PortRcvData. */
static u64 lo_pkt_dwords(const struct lo_pkt *pkt)
{
	return (LO_LRH_LEN + (pkt->has_grh ? LO_GRH_LEN : 0) + LO_UD_HDR_LEN +
		pkt->len) / 4;
}

/* Copies len bytes of src to byte offset off of the buffers of rwqe. */
static void lo_scatter(struct lo_rwqe *rwqe, u32 off, const void *src, u32 len)
{
	u32 i;

	for (i = 0; i < rwqe->num_sge && len; i++) {
		u32 sl = rwqe->sg[i].length, n;

		if (off >= sl) {
			off -= sl;
			continue;
		}
		n = min(sl - off, len);
		memcpy(ib_virt_dma_to_ptr(rwqe->sg[i].addr) + off, src, n);
		src += n;
		len -= n;
		off = 0;
	}
}

/* Puts pkt into port's receive queue; true if it got there. */
static bool lo_deliver_to(struct lo_port *port, struct lo_pkt *pkt,
			  struct lo_cq **notify)
{
	struct lo_rwqe *rwqe;
	struct ib_wc wc = {};
	union ib_gid gid;
	struct lo_qp *qp;
	u32 capacity = 0;
	int pkey_index, i;

	port->counters.rcv_pkts++;
	port->counters.rcv_data += lo_pkt_dwords(pkt);
	/* Only subnet management enters a port that is not ACTIVE. */
	if (!pkt->vl15 && lo_port_state(port) != IB_PORT_ACTIVE)
		return false;
	qp = lo_find_qp(port, pkt->dst_qpn);
	if (!qp || (qp->state != IB_QPS_RTR && qp->state != IB_QPS_RTS &&
		    qp->state != IB_QPS_SQD && qp->state != IB_QPS_SQE))
		return false;
	if (qp->ibqp.qp_type == IB_QPT_SMI) {
		pkey_index = 0;
	} else {
		if (pkt->qkey != qp->qkey)
			return false;
		pkey_index = lo_pkey_index(port, pkt->pkey);
		if (pkey_index < 0)
			return false;
	}
	if (pkt->has_grh) {
		lo_port_gid(port, &gid);
		if (memcmp(&gid, &pkt->grh.dgid, sizeof(gid)))
			return false;
	}
	if (!qp->rq_count)
		return false;

	rwqe = lo_rwqe(qp, qp->rq_head);
	qp->rq_head = (qp->rq_head + 1) % qp->cap.max_recv_wr;
	qp->rq_count--;
	for (i = 0; i < rwqe->num_sge; i++)
		capacity += rwqe->sg[i].length;

	wc.wr_id = rwqe->wr_id;
	wc.opcode = IB_WC_RECV;
	wc.qp = &qp->ibqp;
	if (capacity < LO_GRH_LEN + pkt->len) {
		wc.status = IB_WC_LOC_LEN_ERR;
	} else {
		if (pkt->has_grh)
			lo_scatter(rwqe, 0, &pkt->grh, LO_GRH_LEN);
		lo_scatter(rwqe, LO_GRH_LEN, pkt->data, pkt->len);
		wc.status = IB_WC_SUCCESS;
		wc.byte_len = LO_GRH_LEN + pkt->len;
		wc.src_qp = pkt->src_qpn;
		wc.wc_flags = (pkt->has_grh ? IB_WC_GRH : 0) |
			      (pkt->has_imm ? IB_WC_WITH_IMM : 0);
		wc.ex.imm_data = pkt->imm;
		wc.pkey_index = pkey_index;
		wc.slid = pkt->slid;
		wc.sl = pkt->sl;
		wc.dlid_path_bits = pkt->dlid & ((1 << lo_port_lmc(port)) - 1);
		wc.port_num = port->num;
	}
	if (lo_cq_post(to_lcq(qp->ibqp.recv_cq), &wc, pkt->solicited))
		*notify = to_lcq(qp->ibqp.recv_cq);
	return true;
}

/* Puts pkt into its destination's receive queue; true if it got there. */
static bool lo_deliver(struct lo_pkt *pkt, struct lo_cq **notify)
{
	struct lo_port *port;

	if (pkt->dlid == be16_to_cpu(IB_LID_PERMISSIVE))
		port = lo_peer(pkt->src_idx, pkt->src_port);
	else
		port = lo_port_by_lid(pkt->dlid);
	return port && lo_deliver_to(port, pkt, notify);
}

static void lo_log(const struct lo_pkt *pkt, const char *what)
{
	const u8 *d = pkt->data;

	if (!lo_log_packets || pkt->len < 36)
		return;
	pr_info("ib_loopback: %s lid %u qp %u -> lid %u qp %u: class 0x%02x method 0x%02x tid 0x%llx rmpp %u seg %u\n",
		what, pkt->slid, pkt->src_qpn, pkt->dlid, pkt->dst_qpn, d[1],
		d[3], get_unaligned_be64(d + 8), d[25],
		get_unaligned_be32(d + 28));
}

/* Wakes the wire's reader: it is owed a packet or a capability mask. */
static void lo_wire_wake(void)
{
	wake_up_interruptible_poll(&lo_wire_wait, EPOLLIN | EPOLLRDNORM);
}

/*
 * Puts a packet of a wired port on the wire, for its reader; false if the
 * wire does not take it: closed, not a MAD, or its reader too far behind.
 */
static bool lo_wire_send(struct lo_pkt *pkt)
{
	if (!lo_wire_open || pkt->src_qpn > 1 || pkt->has_grh ||
	    pkt->len != LO_WIRE_DATA_MAX) {
		lo_stat_lost++;
		lo_log(pkt, "lost");
		return false;
	}
	if (lo_wire_queued >= LO_WIRE_QUEUE_MAX) {
		lo_stat_wire_dropped++;
		lo_log(pkt, "drop");
		return false;
	}
	list_add_tail(&pkt->node, &lo_wire_out);
	lo_wire_queued++;
	lo_stat_wire_out++;
	lo_log(pkt, "wire");
	lo_wire_wake();
	return true;
}

/* Owes the wire's reader the capability mask of a wired port. */
static void lo_wire_cap_mask(struct lo_port *port)
{
	if (!lo_wire_open || port->cap_owed)
		return;
	port->cap_owed = true;
	lo_wire_caps_owed++;
	lo_wire_wake();
}

/* Forgets what the wire's reader was owed of a wired device going away. */
static void lo_wire_forget(struct lo_dev *ldev)
{
	struct lo_pkt *pkt, *tmp;
	u32 p;

	list_for_each_entry_safe(pkt, tmp, &lo_wire_out, node) {
		if (pkt->src_idx != ldev->idx)
			continue;
		list_del(&pkt->node);
		lo_wire_queued--;
		kfree(pkt);
	}
	for (p = 0; p < ldev->nports; p++) {
		if (ldev->ports[p].cap_owed) {
			ldev->ports[p].cap_owed = false;
			lo_wire_caps_owed--;
		}
	}
}

/* The send completion of a packet, and its way onto the wire or not. */
static bool lo_transmit(struct lo_pkt *pkt, struct lo_cq **notify)
{
	struct lo_qp *qp = pkt->src_qp;
	struct lo_pkt *pos;

	qp->sq_outstanding--;
	if (pkt->signaled) {
		struct ib_wc wc = {
			.wr_id = pkt->wr_id,
			.status = IB_WC_SUCCESS,
			.opcode = IB_WC_SEND,
			.byte_len = pkt->len,
			.qp = &qp->ibqp,
		};

		if (lo_cq_post(to_lcq(qp->ibqp.send_cq), &wc, false))
			*notify = to_lcq(qp->ibqp.send_cq);
	}
	pkt->src_qp = NULL;
	lo_stat_tx++;

	/* Only subnet management leaves a port that is not ACTIVE. */
	if (!pkt->vl15 && lo_port_state(qp->port) != IB_PORT_ACTIVE) {
		qp->port->counters.xmit_discards++;
		lo_stat_lost++;
		lo_log(pkt, "discard");
		return false;
	}
	qp->port->counters.xmit_pkts++;
	qp->port->counters.xmit_data += lo_pkt_dwords(pkt);

	if (lo_drop_next) {
		lo_drop_next--;
		lo_stat_dropped++;
		lo_log(pkt, "drop");
		return false;
	}
	if (lo_drop_nth && ++lo_drop_count >= lo_drop_nth) {
		lo_drop_count = 0;
		lo_stat_dropped++;
		lo_log(pkt, "drop");
		return false;
	}
	if (qp->port->dev->wired)
		return lo_wire_send(pkt);
	pkt->due = jiffies + msecs_to_jiffies(lo_delay_ms);
	list_for_each_entry_reverse(pos, &lo_wire_list, node)
		if (time_before_eq(pos->due, pkt->due))
			break;
	list_add(&pkt->node, &pos->node);
	return true;
}

static void lo_process(void)
{
	for (;;) {
		struct lo_cq *notify[2] = {};
		struct lo_pkt *pkt, *done = NULL;
		u32 notify_delay_ms;
		unsigned long flags;

		/* Per packet: destroy_qp waits for one at most. */
		mutex_lock(&lo_notify_mutex);
		spin_lock_irqsave(&lo_lock, flags);
		pkt = list_first_entry_or_null(&lo_tx_list, struct lo_pkt, node);
		if (pkt) {
			list_del(&pkt->node);
			if (!lo_transmit(pkt, &notify[0]))
				done = pkt;
		} else {
			pkt = list_first_entry_or_null(&lo_wire_list,
						       struct lo_pkt, node);
			if (!pkt) {
				spin_unlock_irqrestore(&lo_lock, flags);
				mutex_unlock(&lo_notify_mutex);
				break;
			}
			if (time_before(jiffies, pkt->due)) {
				mod_delayed_work(lo_wq, &lo_rx_work,
						 pkt->due - jiffies);
				spin_unlock_irqrestore(&lo_lock, flags);
				mutex_unlock(&lo_notify_mutex);
				break;
			}
			list_del(&pkt->node);
			if (lo_deliver(pkt, &notify[1])) {
				lo_stat_delivered++;
				lo_log(pkt, "deliver");
			} else {
				lo_stat_lost++;
				lo_log(pkt, "lost");
			}
			done = pkt;
		}
		notify_delay_ms = lo_notify_delay_ms;
		spin_unlock_irqrestore(&lo_lock, flags);
		kfree(done);
		if ((notify[0] || notify[1]) && notify_delay_ms)
			msleep(notify_delay_ms);
		if (notify[0])
			lo_cq_notify(notify[0]);
		if (notify[1])
			lo_cq_notify(notify[1]);
		mutex_unlock(&lo_notify_mutex);
		cond_resched();
	}
}

static void lo_tx_work_fn(struct work_struct *work)
{
	lo_process();
}

static void lo_rx_work_fn(struct work_struct *work)
{
	lo_process();
}

/* Port state, and the IB core's events that follow it; under lo_lock */

/* Tells the IB core (its cache, its clients) of a change of the port. */
static void lo_port_event(struct lo_port *port, enum ib_event_type type)
{
	struct ib_device *ibdev = &port->dev->ibdev;
	struct ib_event event = {
		.device = ibdev,
		.event = type,
		.element.port_num = port->num,
	};

	/*
	 * Only while registered: the event's work runs later, and
	 * unregistering waits for it; ib_dispatch_event() does not sleep.
	 */
	if (!ib_device_try_get(ibdev))
		return;
	ib_dispatch_event(&event);
	ib_device_put(ibdev);
}

static void lo_set_state(struct lo_port *port, u8 state, u8 phys_state)
{
	u8 old = lo_port_state(port);

	port->pi.linkspeed_portstate =
		(port->pi.linkspeed_portstate & 0xf0) | state;
	port->pi.portphysstate_linkdown =
		phys_state << 4 | (port->pi.portphysstate_linkdown & 0xf);
	if (old != IB_PORT_ACTIVE && state == IB_PORT_ACTIVE)
		lo_port_event(port, IB_EVENT_PORT_ACTIVE);
	else if (old == IB_PORT_ACTIVE && state != IB_PORT_ACTIVE)
		lo_port_event(port, IB_EVENT_PORT_ERR);
}

/*
 * (Re)trains the link of a port: up (INIT, LinkUp) at both ends if it is
 * cabled to a port and neither end is disabled, else down, the ends that
 * are not disabled Polling.
 */
static void lo_train_link(struct lo_port *port)
{
	struct lo_port *peer = lo_peer(port->dev->idx, port->num);
	struct lo_port *end[2] = { port, peer };
	bool up = peer &&
		  lo_phys_state(port) != IB_PORT_PHYS_STATE_DISABLED &&
		  lo_phys_state(peer) != IB_PORT_PHYS_STATE_DISABLED;
	int i;

	/* A wired port's link is what the wire says. */
	if (port->dev->wired)
		return;

	for (i = 0; i < 2 && end[i]; i++) {
		if (up)
			lo_set_state(end[i], IB_PORT_INIT,
				     IB_PORT_PHYS_STATE_LINK_UP);
		else if (lo_phys_state(end[i]) != IB_PORT_PHYS_STATE_DISABLED)
			lo_set_state(end[i], IB_PORT_DOWN,
				     IB_PORT_PHYS_STATE_POLLING);
	}
}

/*
 * The port as a fresh HCA has it: with port_init, or wired, before any SM
 * (a wired port's state is then the wire's).
 */
static void lo_port_reset(struct lo_port *port)
{
	bool before_sm = port_init || port->dev->wired;
	struct ib_port_info *pi = &port->pi;
	int i;

	memset(pi, 0, sizeof(*pi));
	pi->gid_prefix = cpu_to_be64(LO_GID_PREFIX);
	if (!before_sm) {
		pi->lid = cpu_to_be16(lo_lid(port->dev->idx, port->num));
		pi->sm_lid = cpu_to_be16(sm_lid);
	}
	pi->cap_mask = cpu_to_be32(IB_PORT_SL_MAP_SUP |
				   IB_PORT_SYS_IMAGE_GUID_SUP |
				   IB_PORT_CLIENT_REG_SUP);
	pi->local_port_num = port->num;
	pi->link_width_enabled = 3;		/* 1x, 4x */
	pi->link_width_supported = 3;
	pi->link_width_active = 2;		/* 4x */
	/* SDR; before an SM, down until the link trains (lo_train_link) */
	if (before_sm) {
		pi->linkspeed_portstate = 1 << 4 | IB_PORT_DOWN;
		pi->portphysstate_linkdown = IB_PORT_PHYS_STATE_POLLING << 4 |
					     IB_PORT_PHYS_STATE_POLLING;
	} else {
		pi->linkspeed_portstate = 1 << 4 | IB_PORT_ACTIVE;
		pi->portphysstate_linkdown = IB_PORT_PHYS_STATE_LINK_UP << 4 |
					     IB_PORT_PHYS_STATE_POLLING;
	}
	pi->linkspeedactive_enabled = 1 << 4 | 1;
	pi->neighbormtu_mastersmsl = IB_MTU_4096 << 4;
	pi->vlcap_inittype = LO_VL_CAP << 4;
	pi->vl_arb_high_cap = LO_VL_ARB_CAP;
	pi->vl_arb_low_cap = LO_VL_ARB_CAP;
	pi->inittypereply_mtucap = IB_MTU_4096;
	/*
	 * All its VLs in use, as an SM makes it of two such ports (it would
	 * otherwise take the link down to set them).
	 */
	pi->operationalvl_pei_peo_fpi_fpo = LO_VL_CAP << 4;
	pi->guid_cap = LO_GID_TBL_LEN;
	pi->clientrereg_resv_subnetto = LO_SUBNET_TIMEOUT;
	pi->resv_resptimevalue = LO_RESP_TIME;
	for (i = 0; i < npkeys; i++)
		port->pkeys[i] = pkeys[i];
}

/* The subnet management agent */

/*
 * IBA 14.2.4 M_Key checking of a SubnGet or SubnSet: whether it may
 * proceed, and whether a Get answers with the M_Key hidden (protect
 * bits 1). A failed check counts an M_Key violation.
 */
static bool lo_mkey_ok(struct lo_port *port, const struct ib_smp *smp,
		       bool *hide)
{
	u8 protect = port->pi.mkeyprot_resv_lmc >> 6;

	*hide = false;
	if (!port->pi.mkey || smp->mkey == port->pi.mkey)
		return true;
	if (smp->method == IB_MGMT_METHOD_GET && protect < 2) {
		*hide = protect == 1;
		return true;
	}
	if (port->pi.mkey_violations != cpu_to_be16(U16_MAX))
		be16_add_cpu(&port->pi.mkey_violations, 1);
	return false;
}

static void lo_node_info(struct lo_port *port, struct ib_node_info *ni)
{
	struct lo_dev *ldev = port->dev;

	ni->base_version = IB_MGMT_BASE_VERSION;
	ni->class_version = 1;
	ni->node_type = RDMA_NODE_IB_CA;
	ni->num_ports = ldev->nports;
	ni->sys_guid = ldev->ibdev.node_guid;
	ni->node_guid = ldev->ibdev.node_guid;
	ni->port_guid = lo_port_guid(port);
	ni->partition_cap = cpu_to_be16(npkeys);
	ni->device_id = cpu_to_be16(LO_PART_ID);
	ni->revision = cpu_to_be32(1);
	ni->local_port_num = port->num;
	ni->vendor_id[0] = (LO_VENDOR_ID >> 16) & 0xff;
	ni->vendor_id[1] = (LO_VENDOR_ID >> 8) & 0xff;
	ni->vendor_id[2] = LO_VENDOR_ID & 0xff;
}

/* An enable field's new value: 0 keeps it, all ones takes what is supported. */
static bool lo_enable_field(u8 req, u8 all, u8 supported, u8 *field)
{
	if (!req)
		return true;
	if (req == all)
		req = supported;
	if (req & ~supported)
		return false;
	*field = req;
	return true;
}

/*
 * A SubnSet(PortInfo): every field checked first (IBA 14.2.5.6), so that
 * an invalid one changes nothing; then the writable fields are taken, the
 * state machine moves, and the IB core hears of what changed.
 */
/* The IB core's events of the change of port's PortInfo from old. */
static void lo_port_info_events(struct lo_port *port,
				const struct ib_port_info *old)
{
	const struct ib_port_info *pi = &port->pi;

	if (pi->lid != old->lid ||
	    lo_port_lmc(port) != (old->mkeyprot_resv_lmc & 7))
		lo_port_event(port, IB_EVENT_LID_CHANGE);
	if (pi->sm_lid != old->sm_lid ||
	    (pi->neighbormtu_mastersmsl & 0xf) !=
	    (old->neighbormtu_mastersmsl & 0xf))
		lo_port_event(port, IB_EVENT_SM_CHANGE);
	if (pi->gid_prefix != old->gid_prefix)
		lo_port_event(port, IB_EVENT_GID_CHANGE);
}

static u16 lo_set_port_info(struct lo_port *port, const struct ib_port_info *req)
{
	struct ib_port_info *pi = &port->pi, old = *pi;
	u8 state = req->linkspeed_portstate & 0xf;
	u8 phys = req->portphysstate_linkdown >> 4;
	u8 down_default = req->portphysstate_linkdown & 0xf;
	u8 mtu = req->neighbormtu_mastersmsl >> 4;
	u8 op_vls = req->operationalvl_pei_peo_fpi_fpo >> 4;
	u8 width = pi->link_width_enabled;
	u8 speed = pi->linkspeedactive_enabled & 0xf;
	u8 cur = lo_port_state(port);

	if (be16_to_cpu(req->lid) >= LO_LID_END ||
	    be16_to_cpu(req->sm_lid) >= LO_LID_END)
		return IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE;
	/* NOP, Down, Armed from Init, Active from Armed (or unchanged). */
	if (state == IB_PORT_INIT || state > IB_PORT_ACTIVE ||
	    (state == IB_PORT_ARMED && cur != IB_PORT_INIT && cur != state) ||
	    (state == IB_PORT_ACTIVE && cur != IB_PORT_ARMED && cur != state))
		return IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE;
	if ((phys && phys != IB_PORT_PHYS_STATE_POLLING &&
	     phys != IB_PORT_PHYS_STATE_DISABLED) ||
	    down_default > IB_PORT_PHYS_STATE_POLLING)
		return IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE;
	if (!mtu || mtu > (pi->inittypereply_mtucap & 0xf) ||
	    op_vls > pi->vlcap_inittype >> 4)
		return IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE;
	if (!lo_enable_field(req->link_width_enabled, 0xff,
			     pi->link_width_supported, &width) ||
	    !lo_enable_field(req->linkspeedactive_enabled & 0xf, 0xf,
			     pi->linkspeed_portstate >> 4, &speed))
		return IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE;

	lo_map_lids(port, false);
	pi->mkey = req->mkey;
	pi->gid_prefix = req->gid_prefix;
	pi->lid = req->lid;
	pi->sm_lid = req->sm_lid;
	pi->mkey_lease_period = req->mkey_lease_period;
	pi->link_width_enabled = width;
	if (down_default)
		pi->portphysstate_linkdown =
			(pi->portphysstate_linkdown & 0xf0) | down_default;
	pi->mkeyprot_resv_lmc = req->mkeyprot_resv_lmc & 0xc7;
	pi->linkspeedactive_enabled =
		(pi->linkspeedactive_enabled & 0xf0) | speed;
	pi->neighbormtu_mastersmsl = req->neighbormtu_mastersmsl;
	pi->vl_high_limit = req->vl_high_limit;
	pi->inittypereply_mtucap = (req->inittypereply_mtucap & 0xf0) |
				   (pi->inittypereply_mtucap & 0xf);
	pi->vlstallcnt_hoqlife = req->vlstallcnt_hoqlife;
	pi->operationalvl_pei_peo_fpi_fpo =
		(op_vls ? op_vls << 4 : pi->operationalvl_pei_peo_fpi_fpo & 0xf0) |
		(req->operationalvl_pei_peo_fpi_fpo & 0xf);
	pi->mkey_violations = req->mkey_violations;
	pi->pkey_violations = req->pkey_violations;
	pi->qkey_violations = req->qkey_violations;
	/* ClientReregister is an event, not a setting: it reads 0. */
	pi->clientrereg_resv_subnetto = req->clientrereg_resv_subnetto & 0x1f;
	pi->localphyerrors_overrunerrors = req->localphyerrors_overrunerrors;
	lo_map_lids(port, true);

	lo_port_info_events(port, &old);
	if (req->clientrereg_resv_subnetto & 0x80)
		lo_port_event(port, IB_EVENT_CLIENT_REREGISTER);

	if (phys == IB_PORT_PHYS_STATE_DISABLED) {
		lo_set_state(port, IB_PORT_DOWN, IB_PORT_PHYS_STATE_DISABLED);
		lo_train_link(port);
	} else if (phys == IB_PORT_PHYS_STATE_POLLING) {
		lo_set_state(port, IB_PORT_DOWN, IB_PORT_PHYS_STATE_POLLING);
		lo_train_link(port);
	} else if (state == IB_PORT_DOWN) {
		/* The link goes down and comes back up, at both ends. */
		lo_train_link(port);
	} else if (state == IB_PORT_ARMED || state == IB_PORT_ACTIVE) {
		lo_set_state(port, state, lo_phys_state(port));
	}
	return IB_MGMT_MAD_STATUS_SUCCESS;
}

/*
 * A wired port takes the PortInfo the wire says it has, but for its
 * capability mask, which is the host's (modify_port's), and tells the IB
 * core what changed; EINVAL for a port state or physical state that no
 * port has.
 */
static int lo_wire_port_info(struct lo_port *port,
			     const struct ib_port_info *wire)
{
	u8 state = wire->linkspeed_portstate & 0xf;
	u8 phys = wire->portphysstate_linkdown >> 4;
	struct ib_port_info old = port->pi;

	if (state < IB_PORT_DOWN || state > IB_PORT_ACTIVE ||
	    phys < IB_PORT_PHYS_STATE_SLEEP || phys > IB_PORT_PHYS_STATE_PHY_TEST)
		return -EINVAL;
	port->pi = *wire;
	port->pi.cap_mask = old.cap_mask;
	/* The states stay old's until lo_set_state, which compares. */
	port->pi.linkspeed_portstate = (wire->linkspeed_portstate & 0xf0) |
				       (old.linkspeed_portstate & 0xf);
	port->pi.portphysstate_linkdown =
		(old.portphysstate_linkdown & 0xf0) |
		(wire->portphysstate_linkdown & 0xf);
	/* ClientReregister is an event, not a setting: it reads 0. */
	port->pi.clientrereg_resv_subnetto &= 0x1f;
	lo_port_info_events(port, &old);
	if (wire->clientrereg_resv_subnetto & 0x80)
		lo_port_event(port, IB_EVENT_CLIENT_REREGISTER);
	lo_set_state(port, state, phys);
	return 0;
}

/* A P_KeyTable block: 32 P_Keys; a CA ignores the port part. */
static u16 lo_pkey_table(struct lo_port *port, const struct ib_smp *smp,
			 u8 *data)
{
	u32 first = (be32_to_cpu(smp->attr_mod) & 0xffff) * 32, i;
	bool changed = false;

	if (first >= npkeys)
		return IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE;
	for (i = first; i < npkeys && i < first + 32; i++) {
		if (smp->method == IB_MGMT_METHOD_SET) {
			u16 pkey = get_unaligned_be16(smp->data + 2 * (i - first));

			changed |= pkey != port->pkeys[i];
			port->pkeys[i] = pkey;
		}
		put_unaligned_be16(port->pkeys[i], data + 2 * (i - first));
	}
	if (changed)
		lo_port_event(port, IB_EVENT_PKEY_CHANGE);
	return IB_MGMT_MAD_STATUS_SUCCESS;
}

/*
 * The SMA's answer to a SubnGet or SubnSet of an attribute (its data,
 * already zeroed, in rsp), as a MAD status.
 */
static u16 lo_sma_attr(struct lo_port *port, const struct ib_smp *smp,
		       struct ib_smp *rsp, bool hide_mkey)
{
	bool set = smp->method == IB_MGMT_METHOD_SET;
	u32 mod = be32_to_cpu(smp->attr_mod);
	u16 status = IB_MGMT_MAD_STATUS_SUCCESS;

	switch (smp->attr_id) {
	case IB_SMP_ATTR_NODE_DESC:
		if (set)
			return IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB;
		memcpy(rsp->data, port->dev->ibdev.node_desc,
		       IB_DEVICE_NODE_DESC_MAX);
		return status;
	case IB_SMP_ATTR_NODE_INFO:
		if (set)
			return IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB;
		lo_node_info(port, (struct ib_node_info *)rsp->data);
		return status;
	case IB_SMP_ATTR_GUID_INFO:
		/* GUIDCap 1: GUID 0, the port GUID, which a Set cannot change. */
		if (mod != 0)
			return IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE;
		put_unaligned(lo_port_guid(port), (__be64 *)rsp->data);
		return status;
	case IB_SMP_ATTR_PORT_INFO:
		if (set)
			status = lo_set_port_info(port,
						  (const struct ib_port_info *)smp->data);
		memcpy(rsp->data, &port->pi, sizeof(port->pi));
		if (hide_mkey)
			((struct ib_port_info *)rsp->data)->mkey = 0;
		return status;
	case IB_SMP_ATTR_PKEY_TABLE:
		return lo_pkey_table(port, smp, rsp->data);
	case IB_SMP_ATTR_SL_TO_VL_TABLE:
		/* A CA's one table: input and output port are 0. */
		if (mod != 0)
			return IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE;
		if (set)
			memcpy(port->sl2vl, smp->data, LO_SL2VL_LEN);
		memcpy(rsp->data, port->sl2vl, LO_SL2VL_LEN);
		return status;
	case IB_SMP_ATTR_VL_ARB_TABLE:
		/* Blocks 1-2 low priority, 3-4 high; 8 entries of each. */
		mod >>= 16;
		if (mod != 1 && mod != 3)
			return IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE;
		if (set)
			memcpy(port->vl_arb[mod / 2], smp->data,
			       sizeof(port->vl_arb[0]));
		memcpy(rsp->data, port->vl_arb[mod / 2], sizeof(port->vl_arb[0]));
		return status;
	default:
		return IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB;
	}
}

static int lo_sma(struct lo_port *port, const struct ib_mad *in,
		  struct ib_mad *out)
{
	const struct ib_smp *smp = (const struct ib_smp *)in;
	struct ib_smp *rsp = (struct ib_smp *)out;
	unsigned long flags;
	bool hide_mkey;
	u16 status;

	/* The port sends no traps: a repress of one ends here, as on HCAs. */
	if (smp->method == IB_MGMT_METHOD_TRAP_REPRESS)
		return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_CONSUMED;
	/* Responses, traps and the like are for the agents, the SM's. */
	if (smp->method != IB_MGMT_METHOD_GET &&
	    smp->method != IB_MGMT_METHOD_SET)
		return IB_MAD_RESULT_SUCCESS;
	/* SMInfo is the SM's to answer (an SMA cannot), if one is there. */
	if (smp->attr_id == IB_SMP_ATTR_SM_INFO)
		return IB_MAD_RESULT_SUCCESS;

	memcpy(out, in, sizeof(*out));
	memset(rsp->data, 0, sizeof(rsp->data));
	spin_lock_irqsave(&lo_lock, flags);
	if (!lo_mkey_ok(port, smp, &hide_mkey)) {
		spin_unlock_irqrestore(&lo_lock, flags);
		return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_CONSUMED;
	}
	if (smp->class_version != 1)
		status = IB_MGMT_MAD_STATUS_BAD_VERSION;
	else
		status = lo_sma_attr(port, smp, rsp, hide_mkey);
	spin_unlock_irqrestore(&lo_lock, flags);

	rsp->method = IB_MGMT_METHOD_GET_RESP;
	rsp->status = cpu_to_be16(status);
	if (smp->mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE)
		rsp->status |= IB_SMP_DIRECTION;
	return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_REPLY;
}

/* The performance management agent */

static __be32 lo_counter32(u64 v)
{
	return cpu_to_be32(min_t(u64, v, U32_MAX));
}

static __be16 lo_counter16(u64 v)
{
	return cpu_to_be16(min_t(u64, v, U16_MAX));
}

/* PortCounters: the 32-bit view (saturating, IBA 16.1.3.5). */
static void lo_port_counters(struct lo_counters *c, bool set,
			     const struct ib_pma_portcounters *req,
			     struct ib_pma_portcounters *pc)
{
	__be16 sel = req->counter_select;

	if (set) {
		if (sel & IB_PMA_SEL_PORT_XMIT_DISCARDS)
			c->xmit_discards = 0;
		if (sel & IB_PMA_SEL_PORT_XMIT_DATA)
			c->xmit_data = 0;
		if (sel & IB_PMA_SEL_PORT_RCV_DATA)
			c->rcv_data = 0;
		if (sel & IB_PMA_SEL_PORT_XMIT_PACKETS)
			c->xmit_pkts = 0;
		if (sel & IB_PMA_SEL_PORT_RCV_PACKETS)
			c->rcv_pkts = 0;
	}
	pc->port_xmit_discards = lo_counter16(c->xmit_discards);
	pc->port_xmit_data = lo_counter32(c->xmit_data);
	pc->port_rcv_data = lo_counter32(c->rcv_data);
	pc->port_xmit_packets = lo_counter32(c->xmit_pkts);
	pc->port_rcv_packets = lo_counter32(c->rcv_pkts);
}

/* PortCountersExtended: the 64-bit view; every packet is unicast. */
static void lo_port_counters_ext(struct lo_counters *c, bool set,
				 const struct ib_pma_portcounters_ext *req,
				 struct ib_pma_portcounters_ext *pc)
{
	__be16 sel = req->counter_select;

	if (set) {
		if (sel & IB_PMA_SELX_PORT_XMIT_DATA)
			c->xmit_data = 0;
		if (sel & IB_PMA_SELX_PORT_RCV_DATA)
			c->rcv_data = 0;
		if (sel & (IB_PMA_SELX_PORT_XMIT_PACKETS |
			   IB_PMA_SELX_PORT_UNI_XMIT_PACKETS))
			c->xmit_pkts = 0;
		if (sel & (IB_PMA_SELX_PORT_RCV_PACKETS |
			   IB_PMA_SELX_PORT_UNI_RCV_PACKETS))
			c->rcv_pkts = 0;
	}
	pc->port_xmit_data = cpu_to_be64(c->xmit_data);
	pc->port_rcv_data = cpu_to_be64(c->rcv_data);
	pc->port_xmit_packets = cpu_to_be64(c->xmit_pkts);
	pc->port_rcv_packets = cpu_to_be64(c->rcv_pkts);
	pc->port_unicast_xmit_packets = cpu_to_be64(c->xmit_pkts);
	pc->port_unicast_rcv_packets = cpu_to_be64(c->rcv_pkts);
}

static int lo_pma(struct lo_port *port, const struct ib_mad *in,
		  struct ib_mad *out)
{
	const struct ib_pma_mad *req = (const struct ib_pma_mad *)in;
	struct ib_pma_mad *rsp = (struct ib_pma_mad *)out;
	bool set = req->mad_hdr.method == IB_MGMT_METHOD_SET;
	u16 status = IB_MGMT_MAD_STATUS_SUCCESS;
	unsigned long flags;

	if (req->mad_hdr.method != IB_MGMT_METHOD_GET && !set)
		return IB_MAD_RESULT_SUCCESS;

	memcpy(out, in, sizeof(*out));
	memset(rsp->data, 0, sizeof(rsp->data));
	if (req->mad_hdr.class_version != 1) {
		status = IB_MGMT_MAD_STATUS_BAD_VERSION;
	} else if (req->mad_hdr.attr_id == IB_PMA_CLASS_PORT_INFO) {
		struct ib_class_port_info *cpi = (void *)rsp->data;

		if (set) {
			status = IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB;
		} else {
			cpi->base_version = IB_MGMT_BASE_VERSION;
			cpi->class_version = 1;
			cpi->capability_mask = IB_PMA_CLASS_CAP_EXT_WIDTH;
			cpi->cap_mask2_resp_time = cpu_to_be32(LO_RESP_TIME);
		}
	} else if (req->mad_hdr.attr_id == IB_PMA_PORT_COUNTERS ||
		   req->mad_hdr.attr_id == IB_PMA_PORT_COUNTERS_EXT) {
		/* PortSelect is at the same place in both. */
		const struct ib_pma_portcounters *pc = (const void *)req->data;

		memcpy(rsp->data, req->data, 4);	/* PortSelect, CounterSelect */
		spin_lock_irqsave(&lo_lock, flags);
		if (pc->port_select != port->num)
			status = IB_MGMT_MAD_STATUS_INVALID_ATTRIB_VALUE;
		else if (req->mad_hdr.attr_id == IB_PMA_PORT_COUNTERS)
			lo_port_counters(&port->counters, set, pc,
					 (void *)rsp->data);
		else
			lo_port_counters_ext(&port->counters, set,
					     (const void *)req->data,
					     (void *)rsp->data);
		spin_unlock_irqrestore(&lo_lock, flags);
	} else {
		status = IB_MGMT_MAD_STATUS_UNSUPPORTED_METHOD_ATTRIB;
	}
	rsp->mad_hdr.method = IB_MGMT_METHOD_GET_RESP;
	rsp->mad_hdr.status = cpu_to_be16(status);
	return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_REPLY;
}

static int lo_process_mad(struct ib_device *ibdev, int mad_flags, u32 port_num,
			  const struct ib_wc *in_wc, const struct ib_grh *in_grh,
			  const struct ib_mad *in, struct ib_mad *out,
			  size_t *out_mad_size, u16 *out_mad_pkey_index)
{
	struct lo_port *port;

	if (!rdma_is_port_valid(ibdev, port_num) ||
	    *out_mad_size < sizeof(struct ib_mad))
		return IB_MAD_RESULT_FAILURE;
	if (in->mad_hdr.base_version != IB_MGMT_BASE_VERSION)
		return IB_MAD_RESULT_SUCCESS;
	port = lo_port(ibdev, port_num);
	switch (in->mad_hdr.mgmt_class) {
	case IB_MGMT_CLASS_SUBN_LID_ROUTED:
	case IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE:
		return lo_sma(port, in, out);
	case IB_MGMT_CLASS_PERF_MGMT:
		return lo_pma(port, in, out);
	default:
		return IB_MAD_RESULT_SUCCESS;
	}
}

static const struct ib_device_ops lo_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,

	.alloc_pd = lo_alloc_pd,
	.create_ah = lo_create_ah,
	.create_cq = lo_create_cq,
	.create_qp = lo_create_qp,
	.dealloc_pd = lo_dealloc_pd,
	.dereg_mr = lo_dereg_mr,
	.destroy_ah = lo_destroy_ah,
	.destroy_cq = lo_destroy_cq,
	.destroy_qp = lo_destroy_qp,
	.get_dev_fw_str = lo_get_dev_fw_str,
	.get_dma_mr = lo_get_dma_mr,
	.get_link_layer = lo_get_link_layer,
	.get_port_immutable = lo_get_port_immutable,
	.modify_port = lo_modify_port,
	.modify_qp = lo_modify_qp,
	.poll_cq = lo_poll_cq,
	.post_recv = lo_post_recv,
	.post_send = lo_post_send,
	.query_ah = lo_query_ah,
	.query_device = lo_query_device,
	.query_gid = lo_query_gid,
	.query_pkey = lo_query_pkey,
	.query_port = lo_query_port,
	.query_qp = lo_query_qp,
	.reg_user_mr = lo_reg_user_mr,
	.req_notify_cq = lo_req_notify_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, lo_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, lo_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, lo_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, lo_qp, ibqp),
};

/* The SMA and the PMA of a device on the loopback fabric. */
static const struct ib_device_ops lo_agent_ops = {
	.process_mad = lo_process_mad,
};

/* Devices */

/*
 * With port_init, the links of device idx and of its partner train anew
 * when either comes or goes: the cabling changes (see the top). Devices
 * other than idx are registered (lo_dev_mutex), so their ports' events
 * reach the IB core.
 */
static void lo_recable(u32 idx)
{
	u32 i, p;

	if (!port_init)
		return;
	for (i = idx & ~1; i <= (idx | 1); i++)
		for (p = 0; lo_devs[i] && p < lo_devs[i]->nports; p++)
			lo_train_link(&lo_devs[i]->ports[p]);
}

static void lo_free_dev(struct lo_dev *ldev)
{
	unsigned long flags;
	u32 p;

	spin_lock_irqsave(&lo_lock, flags);
	for (p = 0; p < ldev->nports; p++)
		lo_map_lids(&ldev->ports[p], false);
	lo_devs[ldev->idx] = NULL;
	if (ldev->wired)
		lo_wire_forget(ldev);
	else
		lo_recable(ldev->idx);
	spin_unlock_irqrestore(&lo_lock, flags);
	ida_destroy(&ldev->qpn_ida);
	kfree(ldev->ports);
	ib_dealloc_device(&ldev->ibdev);
}

/* Adds a device of count ports, on the wire (one port) or not. */
static int lo_add_device(u32 count, bool wired)
{
	struct lo_dev *ldev;
	unsigned long flags;
	char name[IB_DEVICE_NAME_MAX];
	u32 idx, p;
	int ret;

	if (count < 1 || count > LO_MAX_PORTS || (wired && count != 1))
		return -EINVAL;
	mutex_lock(&lo_dev_mutex);
	for (idx = 0; idx < LO_MAX_DEVS && lo_devs[idx]; idx++)
		;
	if (idx == LO_MAX_DEVS) {
		ret = -ENOSPC;
		goto out;
	}
	ldev = ib_alloc_device(lo_dev, ibdev);
	if (!ldev) {
		ret = -ENOMEM;
		goto out;
	}
	ldev->ports = kcalloc(count, sizeof(*ldev->ports), GFP_KERNEL);
	if (!ldev->ports) {
		ib_dealloc_device(&ldev->ibdev);
		ret = -ENOMEM;
		goto out;
	}
	ldev->idx = idx;
	ldev->nports = count;
	ldev->wired = wired;
	ida_init(&ldev->qpn_ida);
	for (p = 0; p < count; p++) {
		ldev->ports[p].dev = ldev;
		ldev->ports[p].num = p + 1;
		INIT_LIST_HEAD(&ldev->ports[p].ud_qps);
		lo_port_reset(&ldev->ports[p]);
	}

	ldev->ibdev.node_type = RDMA_NODE_IB_CA;
	ldev->ibdev.phys_port_cnt = count;
	ldev->ibdev.num_comp_vectors = 1;
	ldev->ibdev.local_dma_lkey = 0;
	ldev->ibdev.node_guid = lo_node_guid(idx);
	snprintf(ldev->ibdev.node_desc, sizeof(ldev->ibdev.node_desc),
		 "ib_loopback iblo%u", idx);
	ib_set_device_ops(&ldev->ibdev, &lo_dev_ops);
	if (!wired)
		ib_set_device_ops(&ldev->ibdev, &lo_agent_ops);

	/* On the fabric from now: its ports answer once their QPs exist. */
	spin_lock_irqsave(&lo_lock, flags);
	lo_devs[idx] = ldev;
	for (p = 0; p < count; p++) {
		lo_map_lids(&ldev->ports[p], true);
		if (wired)
			lo_wire_cap_mask(&ldev->ports[p]);
	}
	if (!wired)
		lo_recable(idx);
	spin_unlock_irqrestore(&lo_lock, flags);

	snprintf(name, sizeof(name), "iblo%u", idx);
	ret = ib_register_device(&ldev->ibdev, name, NULL);
	if (ret) {
		pr_err("ib_loopback: registering %s: %d\n", name, ret);
		lo_free_dev(ldev);
	}
out:
	mutex_unlock(&lo_dev_mutex);
	return ret;
}

static int lo_remove_device(u32 idx)
{
	struct lo_dev *ldev;

	if (idx >= LO_MAX_DEVS)
		return -ENODEV;
	mutex_lock(&lo_dev_mutex);
	ldev = lo_devs[idx];
	if (ldev) {
		ib_unregister_device(&ldev->ibdev);
		lo_free_dev(ldev);
	}
	mutex_unlock(&lo_dev_mutex);
	return ldev ? 0 : -ENODEV;
}

/* debugfs */

static int lo_knob_get(void *data, u64 *val)
{
	unsigned long flags;

	spin_lock_irqsave(&lo_lock, flags);
	*val = *(u32 *)data;
	spin_unlock_irqrestore(&lo_lock, flags);
	return 0;
}

static int lo_knob_set(void *data, u64 val)
{
	unsigned long flags;

	if (val > U32_MAX ||
	    ((data == &lo_delay_ms || data == &lo_notify_delay_ms) &&
	     val > LO_MAX_DELAY_MS))
		return -EINVAL;
	spin_lock_irqsave(&lo_lock, flags);
	*(u32 *)data = val;
	if (data == &lo_drop_nth)
		lo_drop_count = 0;
	spin_unlock_irqrestore(&lo_lock, flags);
	return 0;
}

DEFINE_DEBUGFS_ATTRIBUTE(lo_knob_fops, lo_knob_get, lo_knob_set, "%llu\n");

static ssize_t lo_add_write(struct file *file, const char __user *buf,
			    size_t len, loff_t *ppos)
{
	char word[sizeof("wire\n")] = {};
	unsigned int count = 1;
	bool wired;
	int ret;

	if (copy_from_user(word, buf, min(len, sizeof(word) - 1)))
		return -EFAULT;
	wired = len < sizeof(word) && sysfs_streq(word, "wire");
	if (!wired) {
		ret = kstrtouint_from_user(buf, len, 0, &count);
		if (ret)
			return ret;
	}
	ret = lo_add_device(count ? count : nports, wired);
	return ret ? ret : len;
}

static const struct file_operations lo_add_fops = {
	.owner = THIS_MODULE,
	.write = lo_add_write,
	.llseek = noop_llseek,
};

static ssize_t lo_remove_write(struct file *file, const char __user *buf,
			       size_t len, loff_t *ppos)
{
	char kbuf[IB_DEVICE_NAME_MAX], *s;
	unsigned int idx;
	int ret;

	if (len >= sizeof(kbuf))
		return -EINVAL;
	if (copy_from_user(kbuf, buf, len))
		return -EFAULT;
	kbuf[len] = '\0';
	s = strim(kbuf);
	if (!strncmp(s, "iblo", 4))
		s += 4;
	ret = kstrtouint(s, 10, &idx);
	if (ret)
		return ret;
	ret = lo_remove_device(idx);
	return ret ? ret : len;
}

static const struct file_operations lo_remove_fops = {
	.owner = THIS_MODULE,
	.write = lo_remove_write,
	.llseek = noop_llseek,
};

static int lo_devices_show(struct seq_file *m, void *v)
{
	u32 idx;

	mutex_lock(&lo_dev_mutex);
	for (idx = 0; idx < LO_MAX_DEVS; idx++) {
		unsigned long flags;
		u16 lid;

		if (!lo_devs[idx])
			continue;
		spin_lock_irqsave(&lo_lock, flags);
		lid = lo_port_lid(&lo_devs[idx]->ports[0]);
		spin_unlock_irqrestore(&lo_lock, flags);
		seq_printf(m, "iblo%u %u %u\n", idx, lo_devs[idx]->nports, lid);
	}
	mutex_unlock(&lo_dev_mutex);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(lo_devices);

static int lo_stats_show(struct seq_file *m, void *v)
{
	u64 tx, delivered, dropped, lost, wire_out, wire_in, wire_dropped;
	unsigned long flags;

	spin_lock_irqsave(&lo_lock, flags);
	tx = lo_stat_tx;
	delivered = lo_stat_delivered;
	dropped = lo_stat_dropped;
	lost = lo_stat_lost;
	wire_out = lo_stat_wire_out;
	wire_in = lo_stat_wire_in;
	wire_dropped = lo_stat_wire_dropped;
	spin_unlock_irqrestore(&lo_lock, flags);
	seq_printf(m, "tx %llu\ndelivered %llu\ndropped %llu\nlost %llu\n", tx,
		   delivered, dropped, lost);
	seq_printf(m, "wire_out %llu\nwire_in %llu\nwire_dropped %llu\n",
		   wire_out, wire_in, wire_dropped);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(lo_stats);

/* Port port_num of wired device idx, or NULL; under lo_lock. */
static struct lo_port *lo_wired_port(u32 idx, u32 port_num)
{
	struct lo_dev *ldev = idx < LO_MAX_DEVS ? lo_devs[idx] : NULL;

	if (!ldev || !ldev->wired || port_num < 1 || port_num > ldev->nports)
		return NULL;
	return &ldev->ports[port_num - 1];
}

/* Claims the wire: one opener, which reads and writes it. */
static int lo_wire_open_file(struct inode *inode, struct file *file)
{
	struct lo_port *port;
	unsigned long flags;
	u32 idx;
	int ret = 0;

	if ((file->f_mode & (FMODE_READ | FMODE_WRITE)) !=
	    (FMODE_READ | FMODE_WRITE))
		return -EINVAL;
	spin_lock_irqsave(&lo_lock, flags);
	if (lo_wire_open) {
		ret = -EBUSY;
	} else {
		lo_wire_open = true;
		for (idx = 0; idx < LO_MAX_DEVS; idx++) {
			port = lo_wired_port(idx, 1);
			if (port)
				lo_wire_cap_mask(port);
		}
	}
	spin_unlock_irqrestore(&lo_lock, flags);
	return ret ? ret : stream_open(inode, file);
}

/* The wire is cut: what it was owed is gone, and its ports go down. */
static int lo_wire_release(struct inode *inode, struct file *file)
{
	struct lo_pkt *pkt, *tmp;
	struct lo_port *port;
	unsigned long flags;
	LIST_HEAD(owed);
	u32 idx;

	spin_lock_irqsave(&lo_lock, flags);
	lo_wire_open = false;
	list_splice_init(&lo_wire_out, &owed);
	lo_wire_queued = 0;
	lo_wire_caps_owed = 0;
	for (idx = 0; idx < LO_MAX_DEVS; idx++) {
		port = lo_wired_port(idx, 1);
		if (!port)
			continue;
		port->cap_owed = false;
		lo_set_state(port, IB_PORT_DOWN, IB_PORT_PHYS_STATE_POLLING);
	}
	spin_unlock_irqrestore(&lo_lock, flags);
	list_for_each_entry_safe(pkt, tmp, &owed, node)
		kfree(pkt);
	return 0;
}

static bool lo_wire_owes(void)
{
	return READ_ONCE(lo_wire_caps_owed) || READ_ONCE(lo_wire_queued);
}

/* A wired port that owes the wire's reader its capability mask. */
static struct lo_port *lo_wire_owed_port(void)
{
	struct lo_port *port;
	u32 idx;

	for (idx = 0; lo_wire_caps_owed && idx < LO_MAX_DEVS; idx++) {
		port = lo_wired_port(idx, 1);
		if (port && port->cap_owed)
			return port;
	}
	return NULL;
}

/*
 * The next message the wire's reader is owed, capability masks first:
 * true, with *pkt the packet taken off the queue for a MAD (the caller
 * frees it, or gives it back).
 */
static bool lo_wire_take(struct lo_wire_msg *msg, struct lo_pkt **pkt)
{
	struct lo_port *port;
	unsigned long flags;

	memset(msg, 0, sizeof(*msg));
	*pkt = NULL;
	spin_lock_irqsave(&lo_lock, flags);
	port = lo_wire_owed_port();
	if (port) {
		port->cap_owed = false;
		lo_wire_caps_owed--;
		msg->type = LO_WIRE_CAP_MASK;
		msg->dev = port->dev->idx;
		msg->port = port->num;
		msg->len = sizeof(port->pi.cap_mask);
		memcpy(msg->data, &port->pi.cap_mask, sizeof(port->pi.cap_mask));
	} else {
		*pkt = list_first_entry_or_null(&lo_wire_out, struct lo_pkt,
						node);
		if (*pkt) {
			list_del(&(*pkt)->node);
			lo_wire_queued--;
		}
	}
	spin_unlock_irqrestore(&lo_lock, flags);
	if (!*pkt)
		return port;
	msg->type = LO_WIRE_MAD;
	msg->dev = (*pkt)->src_idx;
	msg->port = (*pkt)->src_port;
	msg->dlid = (*pkt)->dlid;
	msg->slid = (*pkt)->slid;
	msg->dqpn = (*pkt)->dst_qpn;
	msg->sqpn = (*pkt)->src_qpn;
	msg->qkey = (*pkt)->qkey;
	msg->pkey = (*pkt)->pkey;
	msg->sl = (*pkt)->sl;
	msg->len = (*pkt)->len;
	memcpy(msg->data, (*pkt)->data, (*pkt)->len);
	return true;
}

/* Gives back what lo_wire_take took, which its reader did not get. */
static void lo_wire_untake(const struct lo_wire_msg *msg, struct lo_pkt *pkt)
{
	struct lo_port *port;
	unsigned long flags;

	spin_lock_irqsave(&lo_lock, flags);
	if (pkt && lo_wire_open) {
		list_add(&pkt->node, &lo_wire_out);
		lo_wire_queued++;
		pkt = NULL;
	} else if (!pkt) {
		port = lo_wired_port(msg->dev, msg->port);
		if (port)
			lo_wire_cap_mask(port);
	}
	spin_unlock_irqrestore(&lo_lock, flags);
	kfree(pkt);
}

/*
 * Takes a message off the wire: it waits for one, unless O_NONBLOCK
 * (EAGAIN). The module cannot go while the file is open, so a reader may
 * wait here.
 */
static ssize_t lo_wire_read(struct file *file, char __user *buf, size_t len,
			    loff_t *ppos)
{
	struct lo_wire_msg msg;
	struct lo_pkt *pkt;

	if (len < sizeof(msg))
		return -EINVAL;
	while (!lo_wire_take(&msg, &pkt)) {
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		if (wait_event_interruptible(lo_wire_wait, lo_wire_owes()))
			return -ERESTARTSYS;
	}
	if (copy_to_user(buf, &msg, sizeof(msg))) {
		lo_wire_untake(&msg, pkt);
		return -EFAULT;
	}
	kfree(pkt);
	return sizeof(msg);
}

/* A MAD off the wire into a wired port's QP0 or QP1. */
static int lo_wire_receive(const struct lo_wire_msg *msg)
{
	struct lo_cq *notify = NULL;
	struct lo_port *port;
	struct lo_pkt *pkt;
	unsigned long flags;

	pkt = kzalloc(struct_size(pkt, data, msg->len), GFP_KERNEL);
	if (!pkt)
		return -ENOMEM;
	pkt->src_qpn = msg->sqpn;
	pkt->dst_qpn = msg->dqpn;
	pkt->qkey = msg->qkey;
	pkt->pkey = msg->pkey;
	pkt->slid = msg->slid;
	pkt->dlid = msg->dlid;
	pkt->sl = msg->sl;
	pkt->vl15 = msg->dqpn == 0;
	pkt->len = msg->len;
	memcpy(pkt->data, msg->data, msg->len);

	/* As the worker delivers: destroy_qp waits for the notify. */
	mutex_lock(&lo_notify_mutex);
	spin_lock_irqsave(&lo_lock, flags);
	port = lo_wired_port(msg->dev, msg->port);
	if (port && lo_deliver_to(port, pkt, &notify)) {
		lo_stat_wire_in++;
		lo_log(pkt, "deliver");
	} else if (port) {
		/* As a port drops what it cannot take, the wire's reader unaware. */
		lo_stat_lost++;
		lo_log(pkt, "lost");
	}
	spin_unlock_irqrestore(&lo_lock, flags);
	if (notify)
		lo_cq_notify(notify);
	mutex_unlock(&lo_notify_mutex);
	kfree(pkt);
	return port ? 0 : -ENODEV;
}

/* The PortInfo the wire says a wired port has. */
static int lo_wire_set_port(const struct lo_wire_msg *msg)
{
	struct ib_port_info pi;
	struct lo_port *port;
	unsigned long flags;
	int ret = -ENODEV;

	memcpy(&pi, msg->data, sizeof(pi));
	spin_lock_irqsave(&lo_lock, flags);
	port = lo_wired_port(msg->dev, msg->port);
	if (port)
		ret = lo_wire_port_info(port, &pi);
	spin_unlock_irqrestore(&lo_lock, flags);
	return ret;
}

/*
 * Whether a message written to the wire is one: a MAD between QP0s with
 * Q_Key 0, or to QP1 with its Q_Key, a whole MAD; a PortInfo attribute,
 * and nothing else. What a message does not use is 0.
 */
static bool lo_wire_valid(const struct lo_wire_msg *msg)
{
	if (msg->reserved)
		return false;
	switch (msg->type) {
	case LO_WIRE_MAD:
		return msg->dqpn <= 1 && msg->sqpn <= 1 &&
		       (msg->dqpn == 0) == (msg->sqpn == 0) &&
		       msg->qkey == (msg->dqpn ? IB_QP1_QKEY : 0) &&
		       msg->sl <= 15 && msg->len == LO_WIRE_DATA_MAX;
	case LO_WIRE_PORT_INFO:
		return !msg->dlid && !msg->slid && !msg->dqpn && !msg->sqpn &&
		       !msg->qkey && !msg->pkey && !msg->sl &&
		       msg->len == sizeof(struct ib_port_info) &&
		       !memchr_inv(msg->data + msg->len, 0,
				   sizeof(msg->data) - msg->len);
	default:
		return false;
	}
}

/* Puts a message on the wire: a MAD for a port, or a port's PortInfo. */
static ssize_t lo_wire_write(struct file *file, const char __user *buf,
			     size_t len, loff_t *ppos)
{
	struct lo_wire_msg *msg;
	int ret;

	if (len != sizeof(*msg))
		return -EINVAL;
	msg = memdup_user(buf, len);
	if (IS_ERR(msg))
		return PTR_ERR(msg);
	if (!lo_wire_valid(msg))
		ret = -EINVAL;
	else if (msg->type == LO_WIRE_MAD)
		ret = lo_wire_receive(msg);
	else
		ret = lo_wire_set_port(msg);
	kfree(msg);
	return ret ? ret : len;
}

static __poll_t lo_wire_poll(struct file *file, poll_table *wait)
{
	__poll_t mask = EPOLLOUT | EPOLLWRNORM;

	poll_wait(file, &lo_wire_wait, wait);
	if (lo_wire_owes())
		mask |= EPOLLIN | EPOLLRDNORM;
	return mask;
}

static const struct file_operations lo_wire_fops = {
	.owner = THIS_MODULE,
	.open = lo_wire_open_file,
	.release = lo_wire_release,
	.read = lo_wire_read,
	.write = lo_wire_write,
	.poll = lo_wire_poll,
};

static void lo_debugfs_init(void)
{
	lo_debugfs = debugfs_create_dir("ib_loopback", NULL);
	debugfs_create_file_unsafe("drop_every_nth", 0600, lo_debugfs,
				   &lo_drop_nth, &lo_knob_fops);
	debugfs_create_file_unsafe("drop_next", 0600, lo_debugfs,
				   &lo_drop_next, &lo_knob_fops);
	debugfs_create_file_unsafe("delay_ms", 0600, lo_debugfs,
				   &lo_delay_ms, &lo_knob_fops);
	debugfs_create_file_unsafe("notify_delay_ms", 0600, lo_debugfs,
				   &lo_notify_delay_ms, &lo_knob_fops);
	debugfs_create_file_unsafe("log_packets", 0600, lo_debugfs,
				   &lo_log_packets, &lo_knob_fops);
	debugfs_create_file("add_device", 0200, lo_debugfs, NULL,
			    &lo_add_fops);
	debugfs_create_file("remove_device", 0200, lo_debugfs, NULL,
			    &lo_remove_fops);
	debugfs_create_file("devices", 0400, lo_debugfs, NULL,
			    &lo_devices_fops);
	debugfs_create_file("stats", 0400, lo_debugfs, NULL, &lo_stats_fops);
	debugfs_create_file("wire", 0600, lo_debugfs, NULL, &lo_wire_fops);
}

static void lo_cleanup(void)
{
	struct lo_pkt *pkt, *tmp;
	u32 idx;

	debugfs_remove_recursive(lo_debugfs);
	for (idx = 0; idx < LO_MAX_DEVS; idx++)
		lo_remove_device(idx);
	cancel_work_sync(&lo_tx_work);
	cancel_delayed_work_sync(&lo_rx_work);
	destroy_workqueue(lo_wq);
	/* No QP is left, so nothing can be queued any more. */
	list_for_each_entry_safe(pkt, tmp, &lo_tx_list, node)
		kfree(pkt);
	list_for_each_entry_safe(pkt, tmp, &lo_wire_list, node)
		kfree(pkt);
	INIT_LIST_HEAD(&lo_tx_list);
	INIT_LIST_HEAD(&lo_wire_list);
}

static int __init lo_init(void)
{
	u32 i;
	int ret;

	if (ndevs > LO_MAX_DEVS || nports < 1 || nports > LO_MAX_PORTS ||
	    base_lid < 1 ||
	    base_lid + LO_MAX_DEVS * LO_MAX_PORTS >
	    be16_to_cpu(IB_MULTICAST_LID_BASE) ||
	    npkeys < 1 || sm_lid >= be16_to_cpu(IB_MULTICAST_LID_BASE))
		return -EINVAL;
	if (!sm_lid)
		sm_lid = base_lid;

	lo_wq = alloc_ordered_workqueue("ib_loopback", 0);
	if (!lo_wq)
		return -ENOMEM;
	INIT_WORK(&lo_tx_work, lo_tx_work_fn);
	INIT_DELAYED_WORK(&lo_rx_work, lo_rx_work_fn);
	for (i = 0; i < ndevs; i++) {
		ret = lo_add_device(nports, false);
		if (ret) {
			lo_cleanup();
			return ret;
		}
	}
	/* Last: a module whose init fails is freed, open files or not. */
	lo_debugfs_init();
	return 0;
}

static void __exit lo_exit(void)
{
	lo_cleanup();
}

module_init(lo_init);
module_exit(lo_exit);

MODULE_DESCRIPTION("Test-only InfiniBand loopback HCA and fabric");
MODULE_LICENSE("GPL");
