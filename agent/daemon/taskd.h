/* SPDX-License-Identifier: MIT */
/* The task queue in the daemon: set up at start, and the status socket's task requests. */
#ifndef DRF_TASKD_H
#define DRF_TASKD_H

#include <stddef.h>

struct drfd;

/* The queue in the state dir, when there is one and this is no dry run. */
void drfd_tasks_start(struct drfd *d);
void drfd_tasks_free(struct drfd *d);
/*
 * Answers a task request (submit, tasks, cancel, exec) from the status
 * socket's connection fd, sent by process sender (struct drfd_req's: 0
 * unknown, which an exec is refused): 1 with the answer in *out, 0 if req is
 * none of them, -errno.
 */
int drfd_tasks_answer(struct drfd *d, int fd, int sender, const char *req, char **out,
		      size_t *out_len);

/* The task queue's hooks in the daemon (daemon.h): started, free. */
struct drfd_feature;
extern const struct drfd_feature drfd_tasks_feature;

#endif
