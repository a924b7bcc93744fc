// SPDX-License-Identifier: GPL-2.0

/*
 * Helpers of an out-of-tree build only. The first four are the kernel
 * crate's own on newer kernels (the Kbuild's probes say which this one
 * has; waitqueue_active is the series' patch to rust/helpers/wait.c). The
 * tracepoint wrappers stand in for the kernel crate's declare_trace!, which
 * needs the events in the kernel's own bindings.
 */

#include <linux/bug.h>
#include <linux/device.h>
#include <linux/poll.h>
#include <linux/wait.h>
#include "ib_umad_rs_trace.h"

#ifndef IB_UMAD_RS_HAS_POLL_WAIT
__rust_helper void rust_helper_poll_wait(struct file *filp, wait_queue_head_t *queue,
					 poll_table *table)
{
	poll_wait(filp, queue, table);
}
#endif

#ifndef IB_UMAD_RS_HAS_DEV_NAME
__rust_helper const char *rust_helper_dev_name(const struct device *dev)
{
	return dev_name(dev);
}
#endif

#ifndef IB_UMAD_RS_HAS_WARN_ON
__rust_helper bool rust_helper_WARN_ON(bool cond)
{
	return WARN_ON(cond);
}
#endif

#ifndef IB_UMAD_RS_HAS_WAITQUEUE_ACTIVE
__rust_helper int rust_helper_waitqueue_active(struct wait_queue_head *wq_head)
{
	/* Unlocked: the caller confirms it under the queue's lock, or may act on a stale answer. */
	return waitqueue_active(wq_head);
}
#endif

__rust_helper bool rust_helper_trace_ib_umad_write_enabled(void)
{
	return trace_ib_umad_write_enabled();
}

__rust_helper bool rust_helper_trace_ib_umad_read_recv_enabled(void)
{
	return trace_ib_umad_read_recv_enabled();
}

__rust_helper bool rust_helper_trace_ib_umad_read_send_enabled(void)
{
	return trace_ib_umad_read_send_enabled();
}

__rust_helper void rust_helper_trace_ib_umad_write(u32 dev_index, u32 port_num,
						   const struct ib_user_mad_hdr *hdr,
						   const struct ib_mad_hdr *mad)
{
	trace_ib_umad_write(dev_index, port_num, hdr, mad);
}

__rust_helper void rust_helper_trace_ib_umad_read_recv(u32 dev_index, u32 port_num,
						       const struct ib_user_mad_hdr *hdr,
						       const struct ib_mad_hdr *mad)
{
	trace_ib_umad_read_recv(dev_index, port_num, hdr, mad);
}

__rust_helper void rust_helper_trace_ib_umad_read_send(u32 dev_index, u32 port_num,
						       const struct ib_user_mad_hdr *hdr,
						       const struct ib_mad_hdr *mad)
{
	trace_ib_umad_read_send(dev_index, port_num, hdr, mad);
}
