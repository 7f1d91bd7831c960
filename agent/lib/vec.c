// SPDX-License-Identifier: MIT
/* The growable array (see vec.h). */
#include "vec.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int drf_vec_grow(void *ptr_addr, size_t *cap, size_t need, size_t elem)
{
	size_t nc = *cap ? *cap : DRF_VEC_MIN;
	void *p, *np;

	if (need <= *cap)
		return 0;
	while (nc < need) {
		if (nc > SIZE_MAX / 2)
			return -ENOMEM;
		nc *= 2;
	}
	if (!elem)
		return -EINVAL;
	if (nc > SIZE_MAX / elem)
		return -ENOMEM;
	/*
	 * The array's pointer is read and written through memcpy: ptr_addr points
	 * at a `struct x *`, which must not be accessed as a `void *` lvalue.
	 */
	memcpy(&p, ptr_addr, sizeof(p));
	np = realloc(p, nc * elem);
	if (!np)
		return -ENOMEM;
	memcpy(ptr_addr, &np, sizeof(np));
	*cap = nc;
	return 0;
}
