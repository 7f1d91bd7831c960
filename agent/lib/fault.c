// SPDX-License-Identifier: MIT
/* Fault injection for the recording fakes (see fault.h). */
#include "fault.h"

#include <string.h>

int drf_fault_inject(struct drf_fault *f, unsigned op, uint64_t id, const char *path)
{
	if (!f->err || (f->ops && !(f->ops & op)) || (f->id && f->id != id))
		return 0;
	if (f->path) {
		size_t n = path ? strlen(path) : 0, m = strlen(f->path);

		if (!path || n < m || strcmp(path + n - m, f->path) != 0)
			return 0;
	}
	f->hits++;
	return -f->err;
}
