/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Out-of-line copies of the static inline helpers ib_umad_rs calls. Each is
 * the helper itself and nothing more: logic belongs in the Rust module.
 */
#ifndef IB_UMAD_RS_SHIM_H
#define IB_UMAD_RS_SHIM_H

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/semaphore.h>
#include <linux/slab.h>
#include <linux/poll.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_user_mad.h>
#include <rdma/ib_verbs.h>

u32 ib_umad_rs_start_port(const struct ib_device *device);
u32 ib_umad_rs_end_port(const struct ib_device *device);
bool ib_umad_rs_cap_ib_mad(const struct ib_device *device, u32 port_num);
bool ib_umad_rs_cap_ib_smi(const struct ib_device *device, u32 port_num);
struct device *ib_umad_rs_dev_parent(const struct ib_device *device);
bool ib_umad_rs_access_netns(const struct ib_device *device);
#ifndef IB_UMAD_RS_HAS_DEV_NAME
const char *ib_umad_rs_device_name(const struct device *dev);
#endif
const char *ib_umad_rs_name_array(const struct ib_device *device);
void ib_umad_rs_sema_init(struct semaphore *sem, int val);
struct cdev *ib_umad_rs_inode_cdev(const struct inode *inode);
void *ib_umad_rs_get_client_data(struct ib_device *device, struct ib_client *client);
#ifndef IB_UMAD_RS_HAS_POLL_WAIT
void ib_umad_rs_poll_wait(struct file *filp, wait_queue_head_t *queue, poll_table *table);
#endif
u32 ib_umad_rs_array_index_nospec(u32 index, u32 size);
struct ib_pd *ib_umad_rs_agent_pd(const struct ib_mad_agent *agent);
void ib_umad_rs_ah_init(struct rdma_ah_attr *attr, struct ib_device *device, u32 port_num,
			u32 dlid, u8 sl, u8 path_bits);
void ib_umad_rs_ah_set_grh(struct rdma_ah_attr *attr, u32 flow_label, u8 sgid_index,
			   u8 hop_limit, u8 traffic_class, const void *dgid);
const struct ib_global_route *ib_umad_rs_ah_read_grh(const struct rdma_ah_attr *attr);
/* A task's name, in an array get_task_comm() takes. */
struct ib_umad_rs_comm {
	char name[TASK_COMM_LEN];
};

void ib_umad_rs_get_current_comm(struct ib_umad_rs_comm *comm);
struct kmem_cache *ib_umad_rs_kmem_cache_create(const char *name, unsigned int size,
						unsigned int align, unsigned int useroffset,
						unsigned int usersize);
void *ib_umad_rs_kmem_cache_alloc(struct kmem_cache *cache, gfp_t flags);
u32 ib_umad_rs_device_index(const struct ib_device *device);
bool ib_umad_rs_trace_write_enabled(void);
bool ib_umad_rs_trace_read_recv_enabled(void);
bool ib_umad_rs_trace_read_send_enabled(void);
void ib_umad_rs_trace_write(u32 dev_index, u32 port_num, const struct ib_user_mad_hdr *hdr,
			    const struct ib_mad_hdr *mad);
void ib_umad_rs_trace_read_recv(u32 dev_index, u32 port_num, const struct ib_user_mad_hdr *hdr,
				const struct ib_mad_hdr *mad);
void ib_umad_rs_trace_read_send(u32 dev_index, u32 port_num, const struct ib_user_mad_hdr *hdr,
				const struct ib_mad_hdr *mad);

#ifndef IB_UMAD_RS_HAS_WARN_ON
bool ib_umad_rs_WARN_ON(bool cond);
#endif

unsigned long ib_umad_rs_jiffies(void);

int ib_umad_rs_get_user_u32(u32 *value, const u32 __user *addr);
int ib_umad_rs_put_user_u32(u32 value, u32 __user *addr);

#endif
