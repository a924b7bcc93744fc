// SPDX-License-Identifier: GPL-2.0
/* Out-of-line wrappers of static inline helpers, for the Rust side. */
#include <linux/nsproxy.h>
#include <linux/sched.h>
#include <ib_umad_rs/shim.h>

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

void *ib_umad_rs_dev_get_drvdata(const struct device *dev)
{
	return dev_get_drvdata(dev);
}

void ib_umad_rs_dev_set_drvdata(struct device *dev, void *data)
{
	dev_set_drvdata(dev, data);
}

void ib_umad_rs_copy_name(const struct ib_device *device, char *buf, size_t len)
{
	strscpy(buf, device->name, len);
}

const char *ib_umad_rs_device_name(const struct device *dev)
{
	return dev_name(dev);
}

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
