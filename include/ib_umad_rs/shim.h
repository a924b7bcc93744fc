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
#include <rdma/ib_verbs.h>

u32 ib_umad_rs_start_port(const struct ib_device *device);
u32 ib_umad_rs_end_port(const struct ib_device *device);
bool ib_umad_rs_cap_ib_mad(const struct ib_device *device, u32 port_num);
bool ib_umad_rs_cap_ib_smi(const struct ib_device *device, u32 port_num);
struct device *ib_umad_rs_dev_parent(const struct ib_device *device);
bool ib_umad_rs_access_netns(const struct ib_device *device);
void *ib_umad_rs_dev_get_drvdata(const struct device *dev);
void ib_umad_rs_dev_set_drvdata(struct device *dev, void *data);
void ib_umad_rs_copy_name(const struct ib_device *device, char *buf, size_t len);
const char *ib_umad_rs_device_name(const struct device *dev);
void ib_umad_rs_sema_init(struct semaphore *sem, int val);
struct cdev *ib_umad_rs_inode_cdev(const struct inode *inode);
void *ib_umad_rs_get_client_data(struct ib_device *device, struct ib_client *client);

#endif
