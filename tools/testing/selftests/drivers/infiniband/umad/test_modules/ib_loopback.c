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
 * LIDs: port p of iblo<i> has LID base_lid + 128 * i + p - 1. GID index 0 is
 * fe80::/64 + the port GUID; the node GUID is 0x49424c4f00000000 | i << 8
 * and the port GUID is the node GUID + p.
 *
 * debugfs (/sys/kernel/debug/ib_loopback/):
 *  drop_every_nth  N: drop the Nth, 2Nth, ... packet sent after the write
 *                  (0: off)
 *  drop_next       K: drop the next K packets sent
 *  delay_ms        delay each delivery by that many milliseconds
 *  log_packets     1: log every packet's fate (MAD class, method, TID,
 *                  RMPP type and segment) to the kernel log
 *  add_device      write a port count (1-128; 0: the nports parameter) to
 *                  add a device with the lowest free index
 *  remove_device   write "iblo<i>" or "<i>" to remove that device
 *  devices         "<name> <ports> <lid of port 1>" per device
 *  stats           packet counters: tx, delivered, dropped, lost
 * Dropped packets (knobs) and lost ones (nobody there) complete successfully
 * on the sender. Directed-route SMPs with hop count 0 never reach the wire:
 * the MAD layer answers them through process_mad.
 */

#include <linux/debugfs.h>
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
#include <rdma/ib_smi.h>
#include <rdma/ib_verbs.h>

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
MODULE_PARM_DESC(sm_lid, "SM LID every port reports (default: base_lid)");

static unsigned short pkeys[LO_MAX_PKEYS] = { 0xffff, 0x8001, 0x7fff, 0x8002 };
static int npkeys = 4;
module_param_array(pkeys, ushort, &npkeys, 0444);
MODULE_PARM_DESC(pkeys,
		 "P_Key table of every port (default 0xffff,0x8001,0x7fff,0x8002)");

struct lo_dev;

struct lo_port {
	struct lo_dev *dev;
	u32 num;
	/* The rest is under lo_lock. */
	u32 cap_mask;
	struct lo_qp *qp0;
	struct lo_qp *qp1;
	struct list_head ud_qps;
};

struct lo_dev {
	struct ib_device ibdev;
	u32 idx;
	u32 nports;
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
/* Held while the worker calls completion handlers; destroy_cq waits on it. */
static DEFINE_MUTEX(lo_notify_mutex);

static struct lo_dev *lo_devs[LO_MAX_DEVS];
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
static u32 lo_log_packets;
static u64 lo_stat_tx, lo_stat_delivered, lo_stat_dropped, lo_stat_lost;

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

static u16 lo_lid(u32 idx, u32 port_num)
{
	return base_lid + idx * LO_MAX_PORTS + port_num - 1;
}

static u16 lo_port_lid(const struct lo_port *port)
{
	return lo_lid(port->dev->idx, port->num);
}

static __be64 lo_node_guid(u32 idx)
{
	return cpu_to_be64(LO_NODE_GUID | (u64)idx << 8);
}

static __be64 lo_port_guid(const struct lo_port *port)
{
	return cpu_to_be64(LO_NODE_GUID | (u64)port->dev->idx << 8 | port->num);
}

static void lo_port_gid(const struct lo_port *port, union ib_gid *gid)
{
	gid->global.subnet_prefix = cpu_to_be64(LO_GID_PREFIX);
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

	/*
	 * No QP uses the CQ any more, so no new completion can come; wait
	 * for the worker to be done with the handler it may be calling.
	 */
	mutex_lock(&lo_notify_mutex);
	mutex_unlock(&lo_notify_mutex);
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
	unsigned long flags;

	attr->state = IB_PORT_ACTIVE;
	attr->phys_state = IB_PORT_PHYS_STATE_LINK_UP;
	attr->max_mtu = IB_MTU_4096;
	attr->active_mtu = IB_MTU_4096;
	attr->gid_tbl_len = LO_GID_TBL_LEN;
	attr->pkey_tbl_len = npkeys;
	attr->max_msg_sz = LO_MTU;
	attr->lid = lo_port_lid(port);
	attr->sm_lid = sm_lid;
	attr->lmc = 0;
	attr->sm_sl = 0;
	attr->max_vl_num = 1;
	attr->subnet_timeout = 18;
	attr->active_width = IB_WIDTH_4X;
	attr->active_speed = IB_SPEED_SDR;
	attr->subnet_prefix = LO_GID_PREFIX;
	spin_lock_irqsave(&lo_lock, flags);
	attr->port_cap_flags = port->cap_mask;
	spin_unlock_irqrestore(&lo_lock, flags);
	return 0;
}

static int lo_modify_port(struct ib_device *ibdev, u32 port_num, int mask,
			  struct ib_port_modify *props)
{
	struct lo_port *port = lo_port(ibdev, port_num);
	unsigned long flags;

	spin_lock_irqsave(&lo_lock, flags);
	port->cap_mask = (port->cap_mask | props->set_port_cap_mask) &
			 ~props->clr_port_cap_mask;
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
	if (index >= npkeys)
		return -EINVAL;
	*pkey = pkeys[index];
	return 0;
}

static int lo_query_gid(struct ib_device *ibdev, u32 port_num, int index,
			union ib_gid *gid)
{
	if (index < 0 || index >= LO_GID_TBL_LEN)
		return -EINVAL;
	lo_port_gid(lo_port(ibdev, port_num), gid);
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
	pkt->pkey = pkeys[pkey_index];
	pkt->slid = lo_port_lid(port);	/* LMC 0: no path bits */
	pkt->dlid = rdma_ah_get_dlid(ah);
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
	struct lo_dev *ldev;
	u32 off;

	if (lid < base_lid || lid >= be16_to_cpu(IB_MULTICAST_LID_BASE))
		return NULL;
	off = lid - base_lid;
	if (off / LO_MAX_PORTS >= LO_MAX_DEVS)
		return NULL;
	ldev = lo_devs[off / LO_MAX_PORTS];
	if (!ldev || off % LO_MAX_PORTS >= ldev->nports)
		return NULL;
	return &ldev->ports[off % LO_MAX_PORTS];
}

/* The port at the other end of the cable of port p of device idx. */
static struct lo_port *lo_peer(u32 idx, u32 p)
{
	struct lo_dev *ldev = lo_devs[idx ^ 1];

	if (ldev)
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

/* The receiver's index of the sender's P_Key, or -1 (C10-117 matching). */
static int lo_pkey_index(u16 pkey)
{
	int i;

	for (i = 0; i < npkeys; i++)
		if (pkeys[i] == pkey && (pkey & 0x8000))
			return i;
	for (i = 0; i < npkeys; i++)
		if ((pkeys[i] & 0x7fff) == (pkey & 0x7fff) &&
		    (pkeys[i] & 0x7fff) && ((pkeys[i] | pkey) & 0x8000))
			return i;
	return -1;
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

/* Puts pkt into its destination's receive queue; true if it got there. */
static bool lo_deliver(struct lo_pkt *pkt, struct lo_cq **notify)
{
	struct lo_port *port;
	struct lo_rwqe *rwqe;
	struct ib_wc wc = {};
	union ib_gid gid;
	struct lo_qp *qp;
	u32 capacity = 0;
	int pkey_index, i;

	if (pkt->dlid == be16_to_cpu(IB_LID_PERMISSIVE))
		port = lo_peer(pkt->src_idx, pkt->src_port);
	else
		port = lo_port_by_lid(pkt->dlid);
	if (!port)
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
		pkey_index = lo_pkey_index(pkt->pkey);
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
		wc.dlid_path_bits = 0;	/* LMC 0 */
		wc.port_num = port->num;
	}
	if (lo_cq_post(to_lcq(qp->ibqp.recv_cq), &wc, pkt->solicited))
		*notify = to_lcq(qp->ibqp.recv_cq);
	return true;
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
	pkt->due = jiffies + msecs_to_jiffies(lo_delay_ms);
	list_for_each_entry_reverse(pos, &lo_wire_list, node)
		if (time_before_eq(pos->due, pkt->due))
			break;
	list_add(&pkt->node, &pos->node);
	return true;
}

static void lo_process(void)
{
	mutex_lock(&lo_notify_mutex);
	for (;;) {
		struct lo_cq *notify[2] = {};
		struct lo_pkt *pkt, *done = NULL;
		unsigned long flags;

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
				break;
			}
			if (time_before(jiffies, pkt->due)) {
				mod_delayed_work(lo_wq, &lo_rx_work,
						 pkt->due - jiffies);
				spin_unlock_irqrestore(&lo_lock, flags);
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
		spin_unlock_irqrestore(&lo_lock, flags);
		kfree(done);
		if (notify[0])
			lo_cq_notify(notify[0]);
		if (notify[1])
			lo_cq_notify(notify[1]);
		cond_resched();
	}
	mutex_unlock(&lo_notify_mutex);
}

static void lo_tx_work_fn(struct work_struct *work)
{
	lo_process();
}

static void lo_rx_work_fn(struct work_struct *work)
{
	lo_process();
}

/* The subnet management agent: what a real SMA answers to a Get */

static void lo_node_info(struct lo_port *port, u8 *d)
{
	struct lo_dev *ldev = port->dev;

	d[0] = IB_MGMT_BASE_VERSION;
	d[1] = 1;					/* ClassVersion */
	d[2] = RDMA_NODE_IB_CA;
	d[3] = ldev->nports;
	memcpy(d + 4, &ldev->ibdev.node_guid, 8);	/* SystemImageGUID */
	memcpy(d + 12, &ldev->ibdev.node_guid, 8);	/* NodeGUID */
	put_unaligned(lo_port_guid(port), (__be64 *)(d + 20));
	put_unaligned_be16(npkeys, d + 28);		/* PartitionCap */
	put_unaligned_be16(LO_PART_ID, d + 30);	/* DeviceID */
	put_unaligned_be32(1, d + 32);			/* Revision */
	d[36] = port->num;				/* LocalPortNum */
	d[37] = (LO_VENDOR_ID >> 16) & 0xff;
	d[38] = (LO_VENDOR_ID >> 8) & 0xff;
	d[39] = LO_VENDOR_ID & 0xff;
}

static void lo_port_info(struct lo_port *port, struct ib_port_info *pi)
{
	unsigned long flags;
	u32 cap_mask;

	spin_lock_irqsave(&lo_lock, flags);
	cap_mask = port->cap_mask;
	spin_unlock_irqrestore(&lo_lock, flags);

	pi->gid_prefix = cpu_to_be64(LO_GID_PREFIX);
	pi->lid = cpu_to_be16(lo_port_lid(port));
	pi->sm_lid = cpu_to_be16(sm_lid);
	pi->cap_mask = cpu_to_be32(cap_mask);
	pi->local_port_num = port->num;
	pi->link_width_enabled = 3;		/* 1x, 4x */
	pi->link_width_supported = 3;
	pi->link_width_active = 2;		/* 4x */
	pi->linkspeed_portstate = 1 << 4 | IB_PORT_ACTIVE;	/* SDR */
	pi->portphysstate_linkdown = IB_PORT_PHYS_STATE_LINK_UP << 4 |
				     IB_PORT_PHYS_STATE_POLLING;
	pi->mkeyprot_resv_lmc = 0;
	pi->linkspeedactive_enabled = 1 << 4 | 1;
	pi->neighbormtu_mastersmsl = IB_MTU_4096 << 4;
	pi->vlcap_inittype = 1 << 4;		/* VL0 */
	pi->inittypereply_mtucap = IB_MTU_4096;
	pi->operationalvl_pei_peo_fpi_fpo = 1 << 4;
	pi->guid_cap = LO_GID_TBL_LEN;
	pi->clientrereg_resv_subnetto = 18;
	pi->resv_resptimevalue = 8;
}

static int lo_process_mad(struct ib_device *ibdev, int mad_flags, u32 port_num,
			  const struct ib_wc *in_wc, const struct ib_grh *in_grh,
			  const struct ib_mad *in, struct ib_mad *out,
			  size_t *out_mad_size, u16 *out_mad_pkey_index)
{
	const struct ib_smp *smp = (const struct ib_smp *)in;
	struct ib_smp *rsp = (struct ib_smp *)out;
	struct lo_port *port;
	u32 block, i;

	if (!rdma_is_port_valid(ibdev, port_num) ||
	    *out_mad_size < sizeof(struct ib_mad))
		return IB_MAD_RESULT_FAILURE;
	if (smp->base_version != IB_MGMT_BASE_VERSION ||
	    smp->class_version != 1 || smp->method != IB_MGMT_METHOD_GET ||
	    (smp->mgmt_class != IB_MGMT_CLASS_SUBN_LID_ROUTED &&
	     smp->mgmt_class != IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE))
		return IB_MAD_RESULT_SUCCESS;

	port = lo_port(ibdev, port_num);
	memcpy(out, in, sizeof(struct ib_mad));
	memset(rsp->data, 0, sizeof(rsp->data));
	switch (smp->attr_id) {
	case IB_SMP_ATTR_NODE_DESC:
		memcpy(rsp->data, ibdev->node_desc, IB_DEVICE_NODE_DESC_MAX);
		break;
	case IB_SMP_ATTR_NODE_INFO:
		lo_node_info(port, rsp->data);
		break;
	case IB_SMP_ATTR_PORT_INFO:
		lo_port_info(port, (struct ib_port_info *)rsp->data);
		break;
	case IB_SMP_ATTR_PKEY_TABLE:
		/* Blocks of 32 P_Keys; a CA ignores the port part. */
		block = be32_to_cpu(smp->attr_mod) & 0xffff;
		for (i = 0; i < 32 && block * 32 + i < npkeys; i++)
			put_unaligned_be16(pkeys[block * 32 + i],
					   rsp->data + 2 * i);
		break;
	default:
		return IB_MAD_RESULT_SUCCESS;
	}
	rsp->method = IB_MGMT_METHOD_GET_RESP;
	rsp->status = smp->mgmt_class == IB_MGMT_CLASS_SUBN_DIRECTED_ROUTE ?
		      IB_SMP_DIRECTION : 0;
	return IB_MAD_RESULT_SUCCESS | IB_MAD_RESULT_REPLY;
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
	.process_mad = lo_process_mad,
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

/* Devices */

static void lo_free_dev(struct lo_dev *ldev)
{
	unsigned long flags;

	spin_lock_irqsave(&lo_lock, flags);
	lo_devs[ldev->idx] = NULL;
	spin_unlock_irqrestore(&lo_lock, flags);
	ida_destroy(&ldev->qpn_ida);
	kfree(ldev->ports);
	ib_dealloc_device(&ldev->ibdev);
}

static int lo_add_device(u32 count)
{
	struct lo_dev *ldev;
	unsigned long flags;
	char name[IB_DEVICE_NAME_MAX];
	u32 idx, p;
	int ret;

	if (count < 1 || count > LO_MAX_PORTS)
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
	ida_init(&ldev->qpn_ida);
	for (p = 0; p < count; p++) {
		ldev->ports[p].dev = ldev;
		ldev->ports[p].num = p + 1;
		ldev->ports[p].cap_mask = IB_PORT_SYS_IMAGE_GUID_SUP |
					  IB_PORT_CLIENT_REG_SUP;
		INIT_LIST_HEAD(&ldev->ports[p].ud_qps);
	}

	ldev->ibdev.node_type = RDMA_NODE_IB_CA;
	ldev->ibdev.phys_port_cnt = count;
	ldev->ibdev.num_comp_vectors = 1;
	ldev->ibdev.local_dma_lkey = 0;
	ldev->ibdev.node_guid = lo_node_guid(idx);
	snprintf(ldev->ibdev.node_desc, sizeof(ldev->ibdev.node_desc),
		 "ib_loopback iblo%u", idx);
	ib_set_device_ops(&ldev->ibdev, &lo_dev_ops);

	/* On the fabric from now: its ports answer once their QPs exist. */
	spin_lock_irqsave(&lo_lock, flags);
	lo_devs[idx] = ldev;
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

	if (val > U32_MAX || (data == &lo_delay_ms && val > LO_MAX_DELAY_MS))
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
	unsigned int count;
	int ret;

	ret = kstrtouint_from_user(buf, len, 0, &count);
	if (ret)
		return ret;
	ret = lo_add_device(count ? count : nports);
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
	for (idx = 0; idx < LO_MAX_DEVS; idx++)
		if (lo_devs[idx])
			seq_printf(m, "iblo%u %u %u\n", idx,
				   lo_devs[idx]->nports, lo_lid(idx, 1));
	mutex_unlock(&lo_dev_mutex);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(lo_devices);

static int lo_stats_show(struct seq_file *m, void *v)
{
	u64 tx, delivered, dropped, lost;
	unsigned long flags;

	spin_lock_irqsave(&lo_lock, flags);
	tx = lo_stat_tx;
	delivered = lo_stat_delivered;
	dropped = lo_stat_dropped;
	lost = lo_stat_lost;
	spin_unlock_irqrestore(&lo_lock, flags);
	seq_printf(m, "tx %llu\ndelivered %llu\ndropped %llu\nlost %llu\n",
		   tx, delivered, dropped, lost);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(lo_stats);

static void lo_debugfs_init(void)
{
	lo_debugfs = debugfs_create_dir("ib_loopback", NULL);
	debugfs_create_file_unsafe("drop_every_nth", 0600, lo_debugfs,
				   &lo_drop_nth, &lo_knob_fops);
	debugfs_create_file_unsafe("drop_next", 0600, lo_debugfs,
				   &lo_drop_next, &lo_knob_fops);
	debugfs_create_file_unsafe("delay_ms", 0600, lo_debugfs,
				   &lo_delay_ms, &lo_knob_fops);
	debugfs_create_file_unsafe("log_packets", 0600, lo_debugfs,
				   &lo_log_packets, &lo_knob_fops);
	debugfs_create_file("add_device", 0200, lo_debugfs, NULL,
			    &lo_add_fops);
	debugfs_create_file("remove_device", 0200, lo_debugfs, NULL,
			    &lo_remove_fops);
	debugfs_create_file("devices", 0400, lo_debugfs, NULL,
			    &lo_devices_fops);
	debugfs_create_file("stats", 0400, lo_debugfs, NULL, &lo_stats_fops);
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
	lo_debugfs_init();
	for (i = 0; i < ndevs; i++) {
		ret = lo_add_device(nports);
		if (ret) {
			lo_cleanup();
			return ret;
		}
	}
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
