// SPDX-License-Identifier: GPL-2.0

#include <rdma/ib_verbs.h>

__rust_helper u32 rust_helper_rdma_start_port(const struct ib_device *device)
{
	return rdma_start_port(device);
}

__rust_helper u32 rust_helper_rdma_end_port(const struct ib_device *device)
{
	return rdma_end_port(device);
}

__rust_helper bool rust_helper_rdma_cap_ib_mad(const struct ib_device *device, u32 port_num)
{
	return rdma_cap_ib_mad(device, port_num);
}

__rust_helper bool rust_helper_rdma_cap_ib_smi(const struct ib_device *device, u32 port_num)
{
	return rdma_cap_ib_smi(device, port_num);
}

__rust_helper void *rust_helper_ib_get_client_data(struct ib_device *device,
						   struct ib_client *client)
{
	return ib_get_client_data(device, client);
}

__rust_helper enum rdma_ah_attr_type rust_helper_rdma_ah_find_type(struct ib_device *device,
								   u32 port_num)
{
	return rdma_ah_find_type(device, port_num);
}

__rust_helper void rust_helper_rdma_ah_set_dlid(struct rdma_ah_attr *attr, u32 dlid)
{
	rdma_ah_set_dlid(attr, dlid);
}

__rust_helper void rust_helper_rdma_ah_set_sl(struct rdma_ah_attr *attr, u8 sl)
{
	rdma_ah_set_sl(attr, sl);
}

__rust_helper void rust_helper_rdma_ah_set_path_bits(struct rdma_ah_attr *attr, u8 path_bits)
{
	rdma_ah_set_path_bits(attr, path_bits);
}

__rust_helper void rust_helper_rdma_ah_set_port_num(struct rdma_ah_attr *attr, u32 port_num)
{
	rdma_ah_set_port_num(attr, port_num);
}

__rust_helper void rust_helper_rdma_ah_set_grh(struct rdma_ah_attr *attr, union ib_gid *dgid,
					       u32 flow_label, u8 sgid_index, u8 hop_limit,
					       u8 traffic_class)
{
	rdma_ah_set_grh(attr, dgid, flow_label, sgid_index, hop_limit, traffic_class);
}

__rust_helper void rust_helper_rdma_ah_set_dgid_raw(struct rdma_ah_attr *attr, void *dgid)
{
	rdma_ah_set_dgid_raw(attr, dgid);
}

__rust_helper const struct ib_global_route *
rust_helper_rdma_ah_read_grh(const struct rdma_ah_attr *attr)
{
	return rdma_ah_read_grh(attr);
}
