/* SPDX-License-Identifier: MIT */
/*
 * An etcd in memory, for tests: the ops of etcd.h (struct etcd_ops) over a
 * store that keeps etcd's rules where drfd depends on them, with a clock the
 * test moves. Clients connect to it (fakeetcd_connect: one per node of a
 * fleet), and their callbacks run from the sd-event loop, as the real
 * client's do: each call is queued and run, in the order of the calls, by a
 * defer source, never within the call.
 *
 *   - one revision for the store, moved by one by each request or txn that
 *     writes (a delete that finds nothing does not write); a pair's
 *     create_revision, mod_revision and version as etcd keeps them; a range
 *     answers with the store as of any revision since the compaction, and
 *     -ESTALE before it, -ERANGE past the current one;
 *   - txns: comparisons on version, create/mod revision, value, lease (a
 *     missing key's value compares false), then one branch, its requests
 *     seeing the earlier ones; a key put twice or put and deleted in a branch
 *     -EINVAL, as a put with a lease that does not exist (-ENOENT): nothing
 *     of such a txn is applied;
 *   - leases: a TTL of at least FAKEETCD_MIN_TTL, expiring by the test's
 *     clock (fakeetcd_tick, or any call run after the clock passed it): its
 *     keys deleted in one revision, which watchers see; a keepalive renews
 *     it for its TTL, -ENOENT once it is gone;
 *   - watches: from a start revision (history replayed, in revision order)
 *     or from now on, events in batches, prev_kv on request; a start before
 *     the compaction (fakeetcd_compact, or a client's etcd_compact) ends
 *     the watch with -ESTALE and the compact revision;
 *   - faults: fault (fault.h) fails the calls it names (the FAKEETCD_OP_*
 *     bits, keys ending in fault.path), at most fault_times times if not 0;
 *     with ECONNREFUSED or ETIMEDOUT on every op, etcd is unreachable;
 *     fakeetcd_break_watches() breaks every watch's stream; a client cut off
 *     (fakeetcd_partition) fails its calls with -ECONNREFUSED and its
 *     watches with -ECONNRESET, while others go on.
 *
 * Each call is recorded when made, as one line: "range KEY", "range KEY..END
 * rev=N limit=N", "put KEY LEN lease=ID", "delete KEY[..END]", "txn cmp=N
 * success=N failure=N", "compact REV", "lease-grant TTL", "lease-keepalive
 * ID", "lease-revoke ID", "watch KEY[..END] from=REV", "cancel ID" (a prefix
 * range shows as KEY*, a range to the end as KEY..).
 */
#ifndef DRF_FAKEETCD_H
#define DRF_FAKEETCD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "clock.h"
#include "etcd.h"
#include "fault.h"

/* etcd's least TTL with its default election timeout (1 s): 1.5 s, rounded up. */
#define FAKEETCD_MIN_TTL 2

/* The operations, as bits, for fault injection. */
enum fakeetcd_op {
	FAKEETCD_OP_RANGE = 1 << 0,
	FAKEETCD_OP_PUT = 1 << 1,
	FAKEETCD_OP_DELETE = 1 << 2,
	FAKEETCD_OP_TXN = 1 << 3,
	FAKEETCD_OP_COMPACT = 1 << 4,
	FAKEETCD_OP_GRANT = 1 << 5,
	FAKEETCD_OP_KEEPALIVE = 1 << 6,
	FAKEETCD_OP_REVOKE = 1 << 7,
	FAKEETCD_OP_WATCH = 1 << 8,
};

struct fakeetcd_store;

struct fakeetcd {
	/* The test's to set. */
	FILE *out;              /* the record; NULL: only counted */
	size_t calls;           /* calls recorded */
	struct drf_fault fault; /* ops: FAKEETCD_OP_* bits; path: a suffix of the key */
	unsigned fault_times;   /* then the fault clears; 0: it stays */
	/* The fake's. */
	struct fakeetcd_store *s;
};

extern const struct etcd_ops fakeetcd_ops;

/* An empty store at revision 1 on event, its leases timed by clock (kept, not copied). */
struct fakeetcd *fakeetcd_new(struct sd_event *event, const struct drf_clock *clock);
/* Frees the store once every client is closed too. NULL is fine. */
void fakeetcd_free(struct fakeetcd *f);

/* A client of f's (etcd_close() closes it): 0, or -ENOMEM. */
int fakeetcd_connect(struct fakeetcd *f, struct etcd **ret);

/* The store's revision, the compact revision. */
int64_t fakeetcd_revision(const struct fakeetcd *f);
int64_t fakeetcd_compacted(const struct fakeetcd *f);
/* The pair at key now, or NULL (valid until the store next changes). */
const struct etcd_kv *fakeetcd_get(const struct fakeetcd *f, const char *key);
size_t fakeetcd_nkeys(const struct fakeetcd *f);
size_t fakeetcd_nleases(const struct fakeetcd *f);
size_t fakeetcd_nwatches(const struct fakeetcd *f);

/*
 * Forgets the history before revision: 0, -ESTALE at or before the compact
 * revision, -ERANGE past the store's revision.
 */
int fakeetcd_compact(struct fakeetcd *f, int64_t revision);

/* Expires the leases whose time passed by the clock; the watchers learn of it from the loop. */
void fakeetcd_tick(struct fakeetcd *f);

/* Every watch's stream breaks: each ends with err (-ECONNRESET, say), from the loop. */
void fakeetcd_break_watches(struct fakeetcd *f, int err);

/*
 * Client e (fakeetcd_connect's) cut off from etcd (cut) or back: cut off,
 * its calls fail with -ECONNREFUSED and its watches end with -ECONNRESET.
 * 0, or -EINVAL for a client not the fake's.
 */
int fakeetcd_partition(struct etcd *e, bool cut);

#endif
