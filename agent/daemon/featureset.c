// SPDX-License-Identifier: MIT
#include "featureset.h"

#include "daemon.h"
#include "fleetd.h"
#include "listener.h"
#include "taskd.h"

int drfd_add_features(struct drfd *d)
{
	/* The fleet first: at exit its etcd calls end while the loop is whole. */
	static const struct drfd_feature *const all[] = {
		&drfd_fleet_feature,
		&drfd_tasks_feature,
		&drfd_sockets_feature,
	};
	int r = 0;

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]) && r == 0; i++)
		r = drfd_add_feature(d, all[i]);
	return r;
}
