// SPDX-License-Identifier: GPL-2.0
/* Out-of-line wrappers of static inline helpers, for the Rust side. */
#include <ib_umad_rs/shim.h>

const char *ib_umad_rs_dev_name(const struct ib_device *device)
{
	return dev_name(&device->dev);
}

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
