// SPDX-License-Identifier: GPL-2.0

#include <linux/kdev_t.h>

__rust_helper dev_t rust_helper_MKDEV(unsigned int major, unsigned int minor)
{
	return MKDEV(major, minor);
}

__rust_helper unsigned int rust_helper_MAJOR(dev_t dev)
{
	return MAJOR(dev);
}

__rust_helper unsigned int rust_helper_MINOR(dev_t dev)
{
	return MINOR(dev);
}
