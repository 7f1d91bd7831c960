/* SPDX-License-Identifier: MIT */
/*
 * drfd as a fleet node ([fleet] in drfd.conf): the etcd client and the fleet
 * node (agent/fleet/fleet.h) on drfd's loop. Its assignments become the
 * tenants in force through drfd_assign().
 */
#ifndef DRF_FLEETD_H
#define DRF_FLEETD_H

#include <stddef.h>

#include "daemon.h"
#include "view.h"

/* With [fleet]: the client and the node, nothing asked of etcd yet. 0, or -errno with why in err. */
int drfd_fleet_open(struct drfd *d, char *err, size_t len);
/* Once drfd has started: the state dir's assignment, then etcd's. 0 or -errno. */
int drfd_fleet_start(struct drfd *d);
/*
 * Between drfd_fleet_open() and drfd_start(): the state dir's assignment as the
 * tenants to start with, so that the first pass keeps them (and their cgroups)
 * rather than take them for gone until the node hands it over. 0 (also when
 * there is none, or it is refused: the node offers it again), or -ENOMEM.
 */
int drfd_fleet_preload(struct drfd *d);
void drfd_fleet_free(struct drfd *d);
/* A reload in force: the node's capacity as the config now gives it (registered again if changed). */
void drfd_fleet_reloaded(struct drfd *d);
/*
 * Fleet tasks: each task the node hands over is queued in the local task
 * queue (tasks.h) from the loop, as [fleet] task-user, under the idempotency
 * key "fleet:ID" (a task handed over again, after a restart or a re-read,
 * finds its local task); its state goes back to etcd when it changes. A node
 * without task-user, or without a task queue, refuses each task.
 */
/* The most fleet tasks a step queues (a burst is queued over many steps). */
#define DRFD_FLEET_QUEUE_STEP_MAX 32
void drfd_fleet_tasks_step(struct drfd *d);

/* The fleet's hooks in the daemon (daemon.h): reloaded, its view (the node's state for
 * status and metrics; on false without [fleet]), free. */
extern const struct drfd_feature drfd_fleet_feature;

#endif
