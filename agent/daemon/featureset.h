/* SPDX-License-Identifier: MIT */
/*
 * The features drfd carries beside its loop, each behind its hooks
 * (struct drfd_feature, daemon.h): the fleet (fleetd.c), the task queue
 * (taskd.c), the sockets (listener.c). The one place that names them all:
 * main() and the tests' whole daemon add them through it.
 */
#ifndef DRF_FEATURESET_H
#define DRF_FEATURESET_H

struct drfd;

/* Adds every feature to d, in the order their hooks run (the fleet's first). 0 or -E2BIG. */
int drfd_add_features(struct drfd *d);

#endif
