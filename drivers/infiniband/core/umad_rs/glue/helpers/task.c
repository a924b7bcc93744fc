// SPDX-License-Identifier: GPL-2.0

#include <linux/sched.h>

__rust_helper void rust_helper_get_task_comm(char (*buf)[TASK_COMM_LEN], struct task_struct *tsk)
{
	get_task_comm(*buf, tsk);
}
