/* SPDX-License-Identifier: MIT */
/*
 * The status socket's limits and its request framing (listener.c), shared with
 * drfctl (which refuses a request over the limit before sending it), the unit
 * tests and the protocol's fuzz target.
 *
 * The limits keep drfd far below the usual soft limit of 1,024 open files
 * whatever its users do: at most DRFD_CONN_MAX connections of users other
 * than root (64 fds), and root's own (at most DRFD_CONN_MAX + DRFD_CONN_ROOT
 * in all while root holds some), beside the few dozen drfd needs for itself
 * (cgroupfs, metrics, state and task files, netlink, BPF); a connection costs
 * its buffers only as its request and answer need them.
 */
#ifndef DRF_LISTENER_H
#define DRF_LISTENER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"
#include "view.h"

/*
 * Connections at once of everyone but root, and of one such user: a user's
 * drfctl commands (top, a script's submits) rarely hold more than a few, and
 * four users at their cap fill the socket.
 */
#define DRFD_CONN_MAX 64
#define DRFD_CONN_MAX_UID 16
/*
 * Root is under neither cap of the others (its connections do not count in
 * DRFD_CONN_MAX) and gets in while all connections number fewer than
 * DRFD_CONN_MAX + DRFD_CONN_ROOT: with the others at their cap, 16 slots stay root's.
 */
#define DRFD_CONN_ROOT 16

/*
 * drfctl sends its request right after connecting and reads the answer at
 * once: a client that has not sent its line within 2 s, or not read the answer
 * within 5 s of it being ready, holds a slot for nothing and is dropped. A
 * status is sent in parts, each with its 5 s: a client that keeps reading gets
 * the whole of one however long it is.
 */
#define DRFD_REQ_TIMEOUT_USEC (2 * 1000000ULL)
#define DRFD_SEND_TIMEOUT_USEC (5 * 1000000ULL)

/*
 * A reload is answered once its writes are made (the reconciler's pass has
 * ended), so that `systemctl reload drfd` returns with the knobs in place; a
 * pass longer than this (1,000 new slices on a slow host) is answered "ok" at
 * this point, saying the writes go on: drfctl reload waits 60 s.
 */
#define DRFD_RELOAD_WAIT_USEC (45 * 1000000ULL)

/*
 * Refusing a connection costs drfd an accept and a close, and a client that
 * reconnects at once asks for that in a loop: past 20 refusals in 100 ms,
 * accepting pauses for the rest of the 100 ms (clients wait in the backlog,
 * root's too), so refusals cost at most 200 accepts a second.
 */
#define DRFD_REFUSE_WINDOW_USEC 100000ULL
#define DRFD_REFUSE_MAX 20

/* Out of file descriptors: accepting stops for 100 ms, then twice as long each time, up to 1 s. */
#define DRFD_BACKOFF_MIN_USEC 100000ULL
#define DRFD_BACKOFF_MAX_USEC 1000000ULL

/* One request line as it arrives: its buffer grows with it, up to DRF_REQ_MAX + 1. */
struct drfd_req {
	char *buf;
	size_t len, cap;        /* bytes kept: at most DRF_REQ_MAX */
	size_t seen;            /* bytes of the line received, kept or not */
	bool done;              /* its newline came, or the client shut its side */
	/*
	 * The process that sent the line, as the kernel stamped each part
	 * (SO_PASSCRED): 0 unknown, -1 more than one process sent parts of it.
	 */
	int sender;
};

/*
 * Takes the next n bytes from the client; n == 0: the client shut its side,
 * which ends the line. Bytes after the newline are ignored. Returns 1 when the
 * line is complete, 0 when more is needed, -ENOMEM.
 */
int drfd_req_feed(struct drfd_req *r, const char *data, size_t n);

struct drfd;
/*
 * The answer to a complete request, from the connection fd (its peer is who
 * asks), into *out (malloc'ed). A line over DRF_REQ_MAX or holding a NUL byte
 * is refused, never run. 0 or -errno; 1 for a reload put in force whose writes
 * are under way (*out NULL): drfd_reload_answer() gives its answer later. A
 * status is rendered whole here, all its parts at once (the socket sends it a
 * part a turn).
 */
int drfd_req_answer(struct drfd *d, int fd, const struct drfd_req *r, char **out,
		    size_t *out_len);
void drfd_req_free(struct drfd_req *r);
/* The answer to a reload in force: its writes made, or (done false) still under way. */
int drfd_reload_answer(const struct drfd *d, bool done, char **out, size_t *out_len);

/* All zero without a socket. */
void drfd_sock_stats(const struct drfd *d, struct drf_sock_stats *ret);

/* The sockets' hooks in the daemon (daemon.h): their counters in the view, closed at exit. */
extern const struct drfd_feature drfd_sockets_feature;

#endif
