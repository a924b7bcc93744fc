// SPDX-License-Identifier: GPL-2.0
/* Out-of-line wrappers of static inline helpers, for the Rust side. */
#include <linux/nsproxy.h>
#include <linux/nospec.h>
#include <linux/poll.h>
#include <linux/ratelimit.h>
#include <linux/sched.h>
#include <linux/uaccess.h>
#include "shim.h"

#define CREATE_TRACE_POINTS
#include "ib_umad_rs_trace.h"

u32 ib_umad_rs_start_port(const struct ib_device *device)
{
	return rdma_start_port(device);
}

u32 ib_umad_rs_end_port(const struct ib_device *device)
{
	return rdma_end_port(device);
}

bool ib_umad_rs_cap_ib_mad(const struct ib_device *device, u32 port_num)
{
	return rdma_cap_ib_mad(device, port_num);
}

bool ib_umad_rs_cap_ib_smi(const struct ib_device *device, u32 port_num)
{
	return rdma_cap_ib_smi(device, port_num);
}

struct device *ib_umad_rs_dev_parent(const struct ib_device *device)
{
	return device->dev.parent;
}

bool ib_umad_rs_access_netns(const struct ib_device *device)
{
	return rdma_dev_access_netns(device, current->nsproxy->net_ns);
}

static_assert(sizeof_field(struct ib_device, name) == IB_DEVICE_NAME_MAX);

const char *ib_umad_rs_name_array(const struct ib_device *device)
{
	return device->name;
}

#ifndef IB_UMAD_RS_HAS_DEV_NAME
const char *ib_umad_rs_device_name(const struct device *dev)
{
	return dev_name(dev);
}
#endif

void ib_umad_rs_sema_init(struct semaphore *sem, int val)
{
	sema_init(sem, val);
}

struct cdev *ib_umad_rs_inode_cdev(const struct inode *inode)
{
	return inode->i_cdev;
}

void *ib_umad_rs_get_client_data(struct ib_device *device, struct ib_client *client)
{
	return ib_get_client_data(device, client);
}

#ifndef IB_UMAD_RS_HAS_POLL_WAIT
void ib_umad_rs_poll_wait(struct file *filp, wait_queue_head_t *queue, poll_table *table)
{
	poll_wait(filp, queue, table);
}
#endif

u32 ib_umad_rs_array_index_nospec(u32 index, u32 size)
{
	return array_index_nospec(index, size);
}

struct ib_pd *ib_umad_rs_agent_pd(const struct ib_mad_agent *agent)
{
	return agent->qp->pd;
}

/* The inline setters ib_umad_write uses, for a zeroed attr, in one call. */
void ib_umad_rs_ah_init(struct rdma_ah_attr *attr, struct ib_device *device, u32 port_num,
			u32 dlid, u8 sl, u8 path_bits)
{
	attr->type = rdma_ah_find_type(device, port_num);
	rdma_ah_set_dlid(attr, dlid);
	rdma_ah_set_sl(attr, sl);
	rdma_ah_set_path_bits(attr, path_bits);
	rdma_ah_set_port_num(attr, port_num);
}

void ib_umad_rs_ah_set_grh(struct rdma_ah_attr *attr, u32 flow_label, u8 sgid_index,
			   u8 hop_limit, u8 traffic_class, const void *dgid)
{
	rdma_ah_set_grh(attr, NULL, flow_label, sgid_index, hop_limit, traffic_class);
	rdma_ah_set_dgid_raw(attr, (void *)dgid);
}

const struct ib_global_route *ib_umad_rs_ah_read_grh(const struct rdma_ah_attr *attr)
{
	return rdma_ah_read_grh(attr);
}

void ib_umad_rs_get_current_comm(struct ib_umad_rs_comm *comm)
{
	get_task_comm(comm->name, current);
}

u32 ib_umad_rs_device_index(const struct ib_device *device)
{
	return device->index;
}

bool ib_umad_rs_trace_write_enabled(void)
{
	return trace_ib_umad_write_enabled();
}

bool ib_umad_rs_trace_read_recv_enabled(void)
{
	return trace_ib_umad_read_recv_enabled();
}

bool ib_umad_rs_trace_read_send_enabled(void)
{
	return trace_ib_umad_read_send_enabled();
}

void ib_umad_rs_trace_write(u32 dev_index, u32 port_num, const struct ib_user_mad_hdr *hdr,
			    const struct ib_mad_hdr *mad)
{
	trace_ib_umad_write(dev_index, port_num, hdr, mad);
}

void ib_umad_rs_trace_read_recv(u32 dev_index, u32 port_num, const struct ib_user_mad_hdr *hdr,
				const struct ib_mad_hdr *mad)
{
	trace_ib_umad_read_recv(dev_index, port_num, hdr, mad);
}

void ib_umad_rs_trace_read_send(u32 dev_index, u32 port_num, const struct ib_user_mad_hdr *hdr,
				const struct ib_mad_hdr *mad)
{
	trace_ib_umad_read_send(dev_index, port_num, hdr, mad);
}

/* kmem_cache_create_usercopy() and kmem_cache_alloc() are macros in 7.x. */
struct kmem_cache *ib_umad_rs_kmem_cache_create(const char *name, unsigned int size,
						unsigned int align, unsigned int useroffset,
						unsigned int usersize)
{
	return kmem_cache_create_usercopy(name, size, align, 0, useroffset, usersize, NULL);
}

void *ib_umad_rs_kmem_cache_alloc(struct kmem_cache *cache, gfp_t flags)
{
	return kmem_cache_alloc(cache, flags);
}

#ifndef IB_UMAD_RS_HAS_WARN_ON
bool ib_umad_rs_WARN_ON(bool cond)
{
	return WARN_ON(cond);
}
#endif

unsigned long ib_umad_rs_jiffies(void)
{
	return jiffies;
}

int ib_umad_rs_get_user_u32(u32 *value, const u32 __user *addr)
{
	return get_user(*value, addr);
}

int ib_umad_rs_put_user_u32(u32 value, u32 __user *addr)
{
	return put_user(value, addr);
}
