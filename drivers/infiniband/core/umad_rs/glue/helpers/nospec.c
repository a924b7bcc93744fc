// SPDX-License-Identifier: GPL-2.0

#include <linux/nospec.h>

__rust_helper unsigned long rust_helper_array_index_nospec(unsigned long index,
							   unsigned long size)
{
	return array_index_nospec(index, size);
}
