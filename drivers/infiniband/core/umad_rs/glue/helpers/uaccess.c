// SPDX-License-Identifier: GPL-2.0

#include <linux/uaccess.h>

__rust_helper int rust_helper_get_user_u32(u32 *value, const u32 __user *addr)
{
	return get_user(*value, addr);
}

__rust_helper int rust_helper_put_user_u32(u32 value, u32 __user *addr)
{
	return put_user(value, addr);
}
