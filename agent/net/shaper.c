// SPDX-License-Identifier: MIT
#include "shaper.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "index.h"
#include "vec.h"

/* A failure: counted every tick, said once per errno. */
static void failed(struct drf_shaper *s, int *slot, int err, struct drf_shaper_stats *st,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void failed(struct drf_shaper *s, int *slot, int err, struct drf_shaper_stats *st,
		   const char *fmt, ...)
{
	char what[512];
	va_list ap;

	st->errors++;
	if (*slot == -err)
		return;
	*slot = -err;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	drf_log(&s->log, LOG_ERR, "%s: %s; will retry", what, strerror(-err));
}

/* A success after failures: said once. */
static void mended(struct drf_shaper *s, int *slot, const char *what)
{
	if (*slot)
		drf_log(&s->log, LOG_NOTICE, "%s: done now, after %s", what, strerror(*slot));
	*slot = 0;
}

int drf_shaper_init(struct drf_shaper *s, const char *ifname, const struct drf_tc_ops *tc,
		    void *tc_ctx, const struct drf_netbpf_ops *bpf, void *bpf_ctx,
		    const struct cgfs *fs, const char *pin_dir, uint32_t root_level,
		    const struct drf_logger *log)
{
	*s = (struct drf_shaper){ .tc = tc, .tc_ctx = tc_ctx, .bpf = bpf, .bpf_ctx = bpf_ctx,
				  .fs = fs, .root_level = root_level, .map_dirty = true,
				  .leaf_fq_codel = true };
	if (log)
		s->log = *log;
	if (strlen(pin_dir) >= sizeof(s->pin_dir))
		return -ENAMETOOLONG;
	snprintf(s->pin_dir, sizeof(s->pin_dir), "%s", pin_dir);
	s->ifname = strdup(ifname ? ifname : "");
	s->by_minor = calloc(65536, sizeof(*s->by_minor));
	s->leaf_of = calloc(65536, sizeof(*s->leaf_of));
	return s->ifname && s->by_minor && s->leaf_of ? 0 : -ENOMEM;
}

static void tenants_free(struct drf_shaper_tenant *t, size_t n)
{
	for (size_t i = 0; t && i < n; i++) {
		free(t[i].name);
		free(t[i].cgroup);
	}
	free(t);
}

void drf_shaper_free(struct drf_shaper *s)
{
	if (s->attached && s->bpf)
		s->bpf->close(s->bpf_ctx);
	tenants_free(s->t, s->n);
	for (size_t i = 0; i < s->n_mem; i++)
		free(s->mem_name[i]);
	free(s->mem_name);
	free(s->mem_minor);
	free(s->ifname);
	free(s->by_minor);
	free(s->leaf_of);
	memset(s, 0, sizeof(*s));
}

int drf_shaper_remember(struct drf_shaper *s, const char *name, uint16_t minor)
{
	if (minor < DRF_HTB_FIRST_TENANT || minor > DRF_HTB_LAST_TENANT)
		return -EINVAL;
	/* Each array its own capacity: one may have grown when the other could not. */
	if (DRF_VEC_GROW(s->mem_name, &s->mem_name_cap, s->n_mem + 1) < 0 ||
	    DRF_VEC_GROW(s->mem_minor, &s->mem_minor_cap, s->n_mem + 1) < 0)
		return -ENOMEM;
	s->mem_name[s->n_mem] = strdup(name);
	if (!s->mem_name[s->n_mem])
		return -ENOMEM;
	s->mem_minor[s->n_mem++] = minor;
	return 0;
}

#define BIT(set, m) ((set)[(m) >> 3] & (1u << ((m) & 7)))
#define SET_BIT(set, m) ((set)[(m) >> 3] |= (uint8_t)(1u << ((m) & 7)))

/* A minor for a newcomer: the first free one from its name's hint on. */
static int pick_minor(const char *name, uint8_t *used, uint16_t *ret)
{
	uint16_t m = drf_htb_minor_hint(name);

	for (unsigned k = 0; k < DRF_HTB_MAX_TENANTS; k++) {
		if (!BIT(used, m)) {
			SET_BIT(used, m);
			*ret = m;
			return 0;
		}
		m = m == DRF_HTB_LAST_TENANT ? DRF_HTB_FIRST_TENANT : (uint16_t)(m + 1);
	}
	return -ENOSPC;
}

/* The classes and map entries wanted, from the plan and the link as now known. */
static void remap(struct drf_shaper *s)
{
	uint32_t mtu = s->link.mtu ? s->link.mtu : 1500;
	uint64_t link = s->link_rate ? s->link_rate : s->link.speed;

	drf_htb_base(&s->plan, link, mtu, s->base);
	memset(s->wanted, 0, sizeof(s->wanted));
	for (size_t i = 0; i < s->n; i++)
		SET_BIT(s->wanted, s->t[i].minor);
	for (size_t i = 0; i < s->n; i++) {
		struct drf_shaper_tenant *t = &s->t[i];
		struct drf_policer pol = drf_htb_policer(&s->plan, &t->in, mtu);

		t->want = drf_htb_tenant_class(&s->plan, &t->in, t->minor, s->max_eg, link, mtu);
		t->want_map = (struct drf_net_tenant){
			.classid = s->plan.eg_cap > 0 ? t->want.classid : 0,
			.in_rate = s->plan.in_cap > 0 ? pol.rate : 0,
			.in_burst = s->plan.in_cap > 0 ? pol.burst : 0,
		};
		/* Compared with the kernel's by the next tick. */
		t->class_ok = t->map_ok = false;
	}
}

/* The key of tenant i in the index by name (a reload is O(n)): its name. */
static const void *name_key(const void *ctx, size_t i, size_t *ret_len)
{
	const struct drf_shaper *s = ctx;

	*ret_len = strlen(s->t[i].name);
	return s->t[i].name;
}

int drf_shaper_set(struct drf_shaper *s, const struct drf_plan *p)
{
	const struct drf_config *c = &p->decl->cfg;
	struct drf_shaper_tenant *nt;
	uint8_t used[65536 / 8] = { 0 };
	size_t n = c->n_tenants, *old_of = NULL;
	struct drf_index names;
	double max_eg = 0;
	int r = -ENOMEM;

	if (n > DRF_HTB_MAX_TENANTS)
		return -ENOSPC;
	drf_index_init(&names, name_key, s);
	nt = calloc(n + 1, sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	/*
	 * Tenants that keep their minor first (from the plan in force, or the
	 * state file after a restart), so that a newcomer never takes one.
	 */
	old_of = calloc(n + 1, sizeof(*old_of));
	if (!old_of || drf_index_build(&names, s->n) < 0)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		ssize_t o = drf_index_find_str(&names, c->tenants[i].name);

		old_of[i] = o + 1;
		if (o >= 0) {
			nt[i].minor = s->t[o].minor;
			SET_BIT(used, nt[i].minor);
		}
	}
	/* Then the state file's, for tenants not in the plan, where still free. */
	for (size_t i = 0; i < n; i++)
		for (size_t m = 0; m < s->n_mem && !nt[i].minor; m++)
			if (strcmp(s->mem_name[m], c->tenants[i].name) == 0 &&
			    !BIT(used, s->mem_minor[m])) {
				nt[i].minor = s->mem_minor[m];
				SET_BIT(used, nt[i].minor);
			}
	for (size_t i = 0; i < n; i++) {
		const struct drf_shaper_tenant *old = old_of[i] ? &s->t[old_of[i] - 1] : NULL;

		if (old) {
			/* Observed state, counters and minor carried over. */
			nt[i] = *old;
			nt[i].name = nt[i].cgroup = NULL; /* old's stay old's */
			if (strcmp(old->cgroup, c->tenants[i].cgroup) != 0)
				nt[i].cgid = 0; /* moved: another cgroup, another id */
		} else if (!nt[i].minor) {
			r = pick_minor(c->tenants[i].name, used, &nt[i].minor);
			if (r < 0)
				goto fail;
		}
		nt[i].name = strdup(c->tenants[i].name);
		nt[i].cgroup = strdup(c->tenants[i].cgroup);
		if (!nt[i].name || !nt[i].cgroup) {
			r = -ENOMEM;
			goto fail;
		}
		nt[i].in = p->net.t[i];
		if (nt[i].in.eg_alloc > max_eg)
			max_eg = nt[i].in.eg_alloc;
	}
	/* Committed. The state file's minors served the first plan after a restart. */
	drf_index_free(&names);
	free(old_of);
	tenants_free(s->t, s->n);
	s->t = nt;
	s->n = n;
	s->max_eg = max_eg;
	for (size_t m = 0; m < s->n_mem; m++)
		free(s->mem_name[m]);
	free(s->mem_name);
	free(s->mem_minor);
	s->mem_name = NULL;
	s->mem_minor = NULL;
	s->n_mem = s->mem_name_cap = s->mem_minor_cap = 0;
	s->plan = p->net.htb;
	s->link_rate = p->net.link_rate;
	/* No more egress shaping: drfd's tree goes, also one a previous run left. */
	if ((s->egress || !s->planned) && !(s->plan.eg_cap > 0))
		s->drop_qdisc = true;
	s->egress = s->plan.eg_cap > 0;
	if (s->egress)
		s->drop_qdisc = false;
	s->planned = true;
	s->ingress = s->plan.in_cap > 0;
	s->replace_foreign = p->net.replace_foreign;
	s->map_dirty = true;
	remap(s);
	return 0;
fail:
	drf_index_free(&names);
	free(old_of);
	tenants_free(nt, n);
	return r;
}

/* Whether the kernel's class holds what drfd wants; bursts round through ticks. */
static bool class_matches(const struct drf_tc_class *want, const struct drf_tc_class *have)
{
	/* A class made under the qdisc itself reads back as a root class. */
	uint32_t wp = want->parent == DRF_TC_HANDLE(DRF_HTB_MAJOR, 0) ? DRF_TC_ROOT : want->parent;

	if (wp != have->parent || want->rate != have->rate || want->ceil != have->ceil)
		return false;
	/* Only leaves use a quantum: the kernel reports any value for an inner class. */
	if (DRF_TC_MIN(want->classid) != DRF_HTB_LINK_MIN &&
	    DRF_TC_MIN(want->classid) != DRF_HTB_TENANTS_MIN && want->quantum != have->quantum)
		return false;
	/* libnl turns bytes into microseconds of the rate and back: a little either way. */
	for (int k = 0; k < 2; k++) {
		double w = k ? want->cburst : want->burst, h = k ? have->cburst : have->burst;

		if (h < w * 0.99 - 2 || h > w * 1.01 + 2)
			return false;
	}
	return true;
}

/*
 * The tick's indexes, by class minor: the class read back (index + 1 into the
 * dump) and the leaf qdisc under it (index + 1 into the qdisc list), so that a
 * tick is O(n) however many tenants. Only drfd's qdisc d7f: is indexed.
 */
static void index_dump(struct drf_shaper *s, const struct drf_tc_class *cl, size_t nc,
		       const struct drf_tc_qdisc *q, size_t nq)
{
	memset(s->by_minor, 0, 65536 * sizeof(*s->by_minor));
	memset(s->leaf_of, 0, 65536 * sizeof(*s->leaf_of));
	for (size_t i = 0; i < nc; i++)
		if (DRF_TC_MAJ(cl[i].classid) == DRF_HTB_MAJOR)
			s->by_minor[DRF_TC_MIN(cl[i].classid)] = (uint32_t)i + 1;
	for (size_t i = 0; i < nq; i++)
		if (DRF_TC_MAJ(q[i].parent) == DRF_HTB_MAJOR)
			s->leaf_of[DRF_TC_MIN(q[i].parent)] = (uint32_t)i + 1;
}

static const struct drf_tc_class *find_class(const struct drf_shaper *s,
					     const struct drf_tc_class *cl, uint32_t id)
{
	uint32_t x = s->by_minor[DRF_TC_MIN(id)];

	return x ? &cl[x - 1] : NULL;
}

/* Whether the class's leaf is fq_codel with CoDel's parameters for its rate. */
static bool leaf_holds(const struct drf_shaper *s, const struct drf_tc_qdisc *q,
		       const struct drf_tc_class *cl)
{
	uint32_t target, interval, x = s->leaf_of[DRF_TC_MIN(cl->classid)];

	drf_htb_codel(cl->rate, &target, &interval);
	/* What the kernel reports is in its own units: compared as it reads back. */
	return x && strcmp(q[x - 1].kind, "fq_codel") == 0 &&
	       q[x - 1].target_us == drf_htb_codel_read_back(target) &&
	       q[x - 1].interval_us == drf_htb_codel_read_back(interval);
}

/* Makes the root qdisc drfd's; false while it cannot (foreign, or failing). */
static bool ensure_root(struct drf_shaper *s, const struct drf_tc_qdisc *q, size_t nq,
			struct drf_shaper_stats *st)
{
	const uint32_t ours = DRF_TC_HANDLE(DRF_HTB_MAJOR, 0);
	const struct drf_tc_qdisc *root = NULL;
	char h[16];
	int r;

	for (size_t i = 0; i < nq && !root; i++)
		if (q[i].parent == DRF_TC_ROOT)
			root = &q[i];
	if (root && root->handle == ours && strcmp(root->kind, "htb") == 0) {
		s->qdisc_ok = true;
		s->foreign = false;
		return true;
	}
	/* The kernel's own default root qdisc has handle 0:; anything else was put there. */
	if (root && root->handle != 0 && !s->replace_foreign) {
		if (!s->foreign || s->foreign_handle != root->handle)
			drf_log(&s->log, LOG_ERR, "%s: its root qdisc is %s %s, which drfd did "
						  "not install; drfd leaves it alone and does not "
						  "shape egress. Remove it (tc qdisc del dev %s "
						  "root), or set net-replace-qdisc = yes in "
						  "[agent]",
				s->ifname, root->kind,
				drf_tc_handle_str(root->handle, true, h, sizeof(h)), s->ifname);
		s->foreign = true;
		s->foreign_handle = root->handle;
		snprintf(s->foreign_kind, sizeof(s->foreign_kind), "%s", root->kind);
		st->errors++;
		s->qdisc_ok = false;
		return false;
	}
	if (root && root->handle != 0)
		drf_log(&s->log, LOG_WARNING, "%s: replacing its root qdisc %s %s "
					      "(net-replace-qdisc = yes)",
			s->ifname, root->kind, drf_tc_handle_str(root->handle, true, h, sizeof(h)));
	r = s->tc->add_htb(s->tc_ctx, s->link.ifindex, ours,
			   DRF_HTB_DEFAULT_MIN, root != NULL);
	if (r < 0) {
		failed(s, &s->err_qdisc, r, st, "cannot install the htb root qdisc on %s", s->ifname);
		s->qdisc_ok = false;
		return false;
	}
	mended(s, &s->err_qdisc, "the htb root qdisc");
	drf_log(&s->log, LOG_INFO, "%s: installed htb root qdisc %x:", s->ifname, DRF_HTB_MAJOR);
	st->writes++;
	s->foreign = false;
	s->qdisc_ok = true;
	return true;
}

/*
 * Writes want if the kernel's differs (have NULL: missing). wrote is what drfd
 * last wrote or found matching: a difference from it, not from a new plan, is
 * someone else's doing.
 */
static int sync_class(struct drf_shaper *s, const struct drf_tc_class *want,
		      const struct drf_tc_class *have, struct drf_tc_class *wrote, int *err,
		      struct drf_shaper_stats *st)
{
	char id[16];
	int r;

	if (have && class_matches(want, have)) {
		*wrote = *want;
		return 0;
	}
	if (have && wrote->classid == want->classid && !class_matches(wrote, have))
		drf_log(&s->log, LOG_WARNING, "%s: class %s was changed by someone else (rate %llu "
					      "ceil %llu); restoring rate %llu ceil %llu",
			s->ifname, drf_tc_handle_str(want->classid, false, id, sizeof(id)),
			(unsigned long long)have->rate, (unsigned long long)have->ceil,
			(unsigned long long)want->rate, (unsigned long long)want->ceil);
	r = s->tc->set_class(s->tc_ctx, s->link.ifindex, want);
	if (r < 0) {
		failed(s, err, r, st, "cannot set class %s on %s",
		       drf_tc_handle_str(want->classid, false, id, sizeof(id)), s->ifname);
		return r;
	}
	mended(s, err, "an htb class");
	*wrote = *want;
	st->writes++;
	return 1;
}

static bool wanted_minor(const struct drf_shaper *s, uint32_t minor)
{
	return minor == DRF_HTB_LINK_MIN || minor == DRF_HTB_TENANTS_MIN ||
	       minor == DRF_HTB_DEFAULT_MIN || BIT(s->wanted, minor);
}

static void egress_tick(struct drf_shaper *s, double dt, struct drf_shaper_stats *st)
{
	struct drf_tc_qdisc *q = NULL;
	struct drf_tc_class *cl = NULL;
	size_t nq = 0, nc = 0;
	int r;

	r = s->tc->qdiscs(s->tc_ctx, s->link.ifindex, &q, &nq);
	if (r < 0) {
		failed(s, &s->err_dump, r, st, "cannot list the qdiscs of %s", s->ifname);
		return;
	}
	if (!ensure_root(s, q, nq, st))
		goto out;
	r = s->tc->classes(s->tc_ctx, s->link.ifindex, DRF_TC_HANDLE(DRF_HTB_MAJOR, 0), &cl, &nc);
	if (r < 0) {
		failed(s, &s->err_dump, r, st, "cannot list the classes of %s", s->ifname);
		goto out;
	}
	mended(s, &s->err_dump, "reading tc state");
	index_dump(s, cl, nc, q, nq);
	/* Parents before children: the link, the tenants' and default classes, then tenants. */
	for (int b = 0; b < 3; b++)
		if (sync_class(s, &s->base[b], find_class(s, cl, s->base[b].classid),
			       &s->base_wrote[b], &s->err_qdisc, st) < 0)
			goto out;
	for (size_t i = 0; i < s->n; i++) {
		struct drf_shaper_tenant *t = &s->t[i];
		const struct drf_tc_class *have = find_class(s, cl, t->want.classid);

		r = sync_class(s, &t->want, have, &t->wrote, &t->err_class, st);
		t->class_ok = r >= 0;
		if (r < 0)
			continue;
		if (have) {
			/* The class's counters: bytes HTB sent, and their rate since the last tick. */
			if (t->seen_valid && dt > 0 && have->bytes >= t->seen.bytes)
				t->class_bps = (double)(have->bytes - t->seen.bytes) * 8 / dt;
			t->seen = *have;
			t->seen_valid = true;
		}
		/* A rewritten class keeps its leaf: the leaf is judged on its own. */
		t->leaf_ok = !s->leaf_fq_codel || leaf_holds(s, q, &t->want);
		if (t->leaf_ok)
			continue;
		{
			uint32_t target, interval;

			drf_htb_codel(t->want.rate, &target, &interval);
			r = s->tc->add_leaf(s->tc_ctx, s->link.ifindex, t->want.classid, target,
					    interval);
		}
		if (r == -ENOENT && !s->fq_codel_known) {
			/*
			 * The class is there (just read or written) and the kernel
			 * could not say it has sch_fq_codel: it lacks the kind.
			 */
			drf_log(&s->log, LOG_WARNING, "%s: this kernel has no fq_codel qdisc "
						      "(sch_fq_codel): tenant classes keep HTB's "
						      "default FIFO queue", s->ifname);
			s->leaf_fq_codel = false;
			t->leaf_ok = true;
			continue;
		}
		if (r < 0) {
			failed(s, &t->err_leaf, r, st, "cannot add fq_codel under class %x:%x of tenant "
				  "'%s' on %s", DRF_HTB_MAJOR, t->minor, t->name, s->ifname);
			continue;
		}
		mended(s, &t->err_leaf, "a leaf qdisc");
		t->leaf_ok = true;
		st->writes++;
	}
	/* Classes of drfd's qdisc that no tenant has any more. */
	for (size_t k = 0; k < nc; k++) {
		char id[16];

		if (wanted_minor(s, DRF_TC_MIN(cl[k].classid)))
			continue;
		r = s->tc->del_class(s->tc_ctx, s->link.ifindex, cl[k].classid);
		if (r < 0 && r != -ENOENT) {
			failed(s, &s->err_dump, r, st, "cannot delete class %s of a departed tenant",
			       drf_tc_handle_str(cl[k].classid, false, id, sizeof(id)));
			continue;
		}
		drf_log(&s->log, LOG_INFO, "%s: deleted class %s of a departed tenant", s->ifname,
		    drf_tc_handle_str(cl[k].classid, false, id, sizeof(id)));
		st->writes++;
	}
out:
	free(q);
	free(cl);
}

/* The key of tenant i in the index by cgroup id: the id's 8 bytes. */
static const void *cgid_key(const void *ctx, size_t i, size_t *ret_len)
{
	const struct drf_shaper *s = ctx;

	*ret_len = sizeof(s->t[i].cgid);
	return &s->t[i].cgid;
}

/*
 * The tenants by cgroup id, those whose id is known (0: not found yet) only;
 * of two with one id, the first. The ids must not change while ix is used.
 * 0, or -ENOMEM with ix empty.
 */
static int cg_index(const struct drf_shaper *s, struct drf_index *ix)
{
	drf_index_init(ix, cgid_key, s);
	for (size_t i = 0; i < s->n; i++) {
		int r;

		if (!s->t[i].cgid)
			continue;
		r = drf_index_add(ix, i, NULL);
		if (r < 0 && r != -EEXIST) {
			drf_index_free(ix);
			return r;
		}
	}
	return 0;
}

/* The tenant whose cgroup id is cgid, by cg_index(); -1 if none (0 is no cgroup's). */
static ssize_t tenant_by_cgid(const struct drf_index *ix, uint64_t cgid)
{
	return cgid ? drf_index_find(ix, &cgid, sizeof(cgid)) : -1;
}

/* Removes drfd's root qdisc, with its classes, once net-rate left the config. */
static void drop_root(struct drf_shaper *s, struct drf_shaper_stats *st)
{
	const uint32_t ours = DRF_TC_HANDLE(DRF_HTB_MAJOR, 0);
	struct drf_tc_qdisc *q = NULL;
	size_t nq = 0;
	bool deleted = false;
	int r = s->tc->qdiscs(s->tc_ctx, s->link.ifindex, &q, &nq);

	for (size_t i = 0; r == 0 && i < nq; i++)
		if (q[i].parent == DRF_TC_ROOT && q[i].handle == ours && strcmp(q[i].kind, "htb") == 0) {
			r = s->tc->del_qdisc(s->tc_ctx, s->link.ifindex, DRF_TC_ROOT, ours);
			deleted = r == 0;
		}
	free(q);
	if (r < 0 && r != -ENOENT) {
		failed(s, &s->err_qdisc, r, st, "cannot remove drfd's root qdisc from %s (net-rate "
			  "is gone from the config)", s->ifname);
		st->retrying++;
		return;
	}
	mended(s, &s->err_qdisc, "removing the root qdisc");
	if (deleted) {
		drf_log(&s->log, LOG_NOTICE, "%s: net-rate is not in the config: removed drfd's "
					     "root qdisc", s->ifname);
		st->writes++;
	}
	s->drop_qdisc = false;
	s->qdisc_ok = false;
}

static bool map_equal(const struct drf_net_tenant *a, const struct drf_net_tenant *b)
{
	return a->classid == b->classid && a->in_rate == b->in_rate && a->in_burst == b->in_burst;
}

static void bpf_tick(struct drf_shaper *s, size_t verify_from, size_t verify,
		     struct drf_shaper_stats *st)
{
	bool adopted = false;
	int r;

	if (!s->attached) {
		r = s->bpf->attach(s->bpf_ctx, s->pin_dir, s->fs->rootfd, s->root_level,
				   s->link.related, s->link.n_related, &adopted);
		if (r < 0) {
			failed(s, &s->err_bpf, r, st, "cannot load or attach the network programs "
				  "(pinned in %s)", s->pin_dir);
			return;
		}
		mended(s, &s->err_bpf, "the network programs");
		drf_log(&s->log, LOG_INFO, "network programs %s at %s (pinned in %s)",
			adopted ? "took over from the pinned ones" : "attached", s->fs->root,
			s->pin_dir);
		s->attached = true;
		s->map_dirty = true;
	}
	for (size_t i = 0; i < s->n; i++) {
		struct drf_shaper_tenant *t = &s->t[i];
		bool v = verify >= s->n || (i >= verify_from && i < verify_from + verify) ||
			 (verify_from + verify > s->n && i < verify_from + verify - s->n);
		struct drf_net_tenant have;
		uint64_t id;

		if (t->map_ok && !v)
			continue;
		/* The cgroup's id: a recreated cgroup has a new one. */
		r = cgfs_id(s->fs, t->cgroup, &id);
		if (r < 0) {
			/* Not there (yet): the cgroup reconciler makes it. */
			t->map_ok = false;
			st->retrying++;
			continue;
		}
		if (t->cgid && t->cgid != id) {
			s->bpf->del(s->bpf_ctx, t->cgid);
			t->map_ok = false;
		}
		t->cgid = id;
		r = s->bpf->get(s->bpf_ctx, id, &have);
		if (r == 0 && map_equal(&have, &t->want_map)) {
			mended(s, &t->err_map, "a network map entry");
			t->map_ok = true;
			continue;
		}
		if (r < 0 && r != -ENOENT) {
			t->map_ok = false;
			failed(s, &t->err_map, r, st, "cannot read the network map entry of tenant "
				  "'%s'", t->name);
			continue;
		}
		if (r == 0 && t->map_ok)
			drf_log(&s->log, LOG_WARNING, "tenant '%s': its network map entry was "
						      "changed by someone else; restoring it",
				t->name);
		r = s->bpf->set(s->bpf_ctx, id, &t->want_map);
		if (r < 0) {
			t->map_ok = false;
			failed(s, &t->err_map, r, st, "cannot write the network map entry of tenant '%s'",
			       t->name);
			continue;
		}
		mended(s, &t->err_map, "a network map entry");
		t->map_ok = true;
		st->writes++;
	}
	if (s->map_dirty) {
		uint64_t *keys = NULL;
		size_t nk = 0;
		struct drf_index ix;

		r = s->bpf->keys(s->bpf_ctx, &keys, &nk);
		if (r < 0) {
			failed(s, &s->err_bpf, r, st, "cannot list the network map");
			return;
		}
		if (cg_index(s, &ix) < 0) {
			free(keys);
			return; /* tried again next tick */
		}
		s->map_dirty = false;
		for (size_t k = 0; k < nk; k++) {
			if (tenant_by_cgid(&ix, keys[k]) >= 0)
				continue;
			r = s->bpf->del(s->bpf_ctx, keys[k]);
			if (r < 0) {
				s->map_dirty = true;
				failed(s, &s->err_bpf, r, st, "cannot delete a departed tenant's "
					  "network map entry");
				continue;
			}
			st->writes++;
		}
		drf_index_free(&ix);
		free(keys);
	}
}

/*
 * Every tenant's counters in one pass over the map, and the rates since the
 * last tick. Counters of no tenant (a packet in flight when drfd deleted its
 * tenant's entry re-creates them) are deleted: left, they would fill the
 * pinned maps for good.
 */
static void counters_tick(struct drf_shaper *s, double dt)
{
	struct drf_net_counters *vals = NULL;
	uint64_t *keys = NULL;
	struct drf_index ix;
	size_t n = 0;
	bool indexed;

	if (s->bpf->counters(s->bpf_ctx, &keys, &vals, &n) < 0)
		return; /* counters are for the status: a failure here changes nothing */
	indexed = cg_index(s, &ix) == 0;
	for (size_t k = 0; indexed && k < n; k++) {
		ssize_t i = tenant_by_cgid(&ix, keys[k]);
		struct drf_shaper_tenant *t;

		if (i < 0) {
			s->bpf->del(s->bpf_ctx, keys[k]);
			continue;
		}
		t = &s->t[i];
		if (dt > 0 && vals[k].eg_bytes >= t->cnt.eg_bytes && vals[k].in_bytes >= t->cnt.in_bytes) {
			t->eg_bps = (double)(vals[k].eg_bytes - t->cnt.eg_bytes) * 8 / dt;
			t->in_bps = (double)(vals[k].in_bytes - t->cnt.in_bytes) * 8 / dt;
		}
		t->cnt = vals[k];
	}
	drf_index_free(&ix);
	free(keys);
	free(vals);
}

int drf_shaper_tick(struct drf_shaper *s, uint64_t now_us, size_t verify,
		    struct drf_shaper_stats *ret)
{
	struct drf_shaper_stats st = { 0 };
	double dt = s->last_us && now_us > s->last_us ? (double)(now_us - s->last_us) / 1e6 : 0;
	struct drf_tc_link l;
	int r;

	if (!s->egress && !s->ingress)
		goto out;
	r = s->tc->link(s->tc_ctx, s->ifname, &l);
	if (r < 0) {
		failed(s, &s->err_link, r, &st, "net-device '%s'", s->ifname);
		s->link_ok = false;
		st.retrying = (unsigned)s->n + 1; /* nothing of the network holds */
		goto out;
	}
	mended(s, &s->err_link, "net-device");
	if (!s->link_ok || l.ifindex != s->link.ifindex || l.mtu != s->link.mtu ||
	    l.speed != s->link.speed || l.n_related != s->link.n_related ||
	    memcmp(l.related, s->link.related, l.n_related * sizeof(l.related[0])) != 0) {
		/* The programs act on these devices' packets: others, new programs. */
		if (s->attached && (l.n_related != s->link.n_related ||
				    memcmp(l.related, s->link.related,
					   l.n_related * sizeof(l.related[0])) != 0)) {
			s->bpf->close(s->bpf_ctx);
			s->attached = false;
		}
		s->link = l;
		s->link_ok = true;
		remap(s);
	}
	if (s->egress)
		egress_tick(s, dt, &st);
	else if (s->drop_qdisc)
		drop_root(s, &st);
	bpf_tick(s, s->cursor, verify, &st);
	if (s->n)
		s->cursor = verify >= s->n ? 0 : (s->cursor + verify) % s->n;
	if (s->attached)
		counters_tick(s, dt);
	s->last_us = now_us;
	for (size_t i = 0; i < s->n; i++)
		st.retrying += (s->egress && (!s->t[i].class_ok || !s->t[i].leaf_ok)) + !s->t[i].map_ok;
	/* A foreign root qdisc, or programs not attached: nothing of it holds. */
	st.retrying += (s->egress && !s->qdisc_ok) + !s->attached;
out:
	s->total_writes += st.writes;
	s->total_errors += st.errors;
	if (ret)
		*ret = st;
	return 0;
}

int drf_shaper_reset(struct drf_shaper *s)
{
	struct drf_tc_qdisc *q = NULL;
	struct drf_tc_link l;
	size_t nq = 0;
	int r, ret = 0;

	r = s->tc->link(s->tc_ctx, s->ifname, &l);
	if (r == 0)
		r = s->tc->qdiscs(s->tc_ctx, l.ifindex, &q, &nq);
	if (r == 0) {
		for (size_t i = 0; i < nq; i++) {
			/* Only drfd's own: htb d7f: at the root. */
			if (q[i].parent != DRF_TC_ROOT || q[i].handle != DRF_TC_HANDLE(DRF_HTB_MAJOR, 0) ||
			    strcmp(q[i].kind, "htb") != 0)
				continue;
			r = s->tc->del_qdisc(s->tc_ctx, l.ifindex, DRF_TC_ROOT, q[i].handle);
			if (r < 0)
				ret = r;
		}
		free(q);
	} else if (r != -ENODEV) {
		ret = r;
	}
	r = s->bpf->reset(s->bpf_ctx, s->pin_dir);
	s->attached = false;
	return ret < 0 ? ret : r;
}

int drf_shaper_unpin(struct drf_shaper *s)
{
	int r = s->bpf->reset(s->bpf_ctx, s->pin_dir);

	s->attached = false;
	return r;
}
