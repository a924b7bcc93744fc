// SPDX-License-Identifier: GPL-2.0

#include <linux/slab.h>

__rust_helper struct kmem_cache *
rust_helper_kmem_cache_create_usercopy(const char *name, unsigned int size, unsigned int align,
				       slab_flags_t flags, unsigned int useroffset,
				       unsigned int usersize, void (*ctor)(void *))
{
	return kmem_cache_create_usercopy(name, size, align, flags, useroffset, usersize, ctor);
}

__rust_helper void *rust_helper_kmem_cache_alloc(struct kmem_cache *cache, gfp_t flags)
{
	return kmem_cache_alloc(cache, flags);
}
