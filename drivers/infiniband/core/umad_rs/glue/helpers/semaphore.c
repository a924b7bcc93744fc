// SPDX-License-Identifier: GPL-2.0

#include <linux/semaphore.h>

__rust_helper void rust_helper_sema_init(struct semaphore *sem, int val)
{
	sema_init(sem, val);
}
