// SPDX-License-Identifier: MIT
/*
 * Allocation engine. See alloc.h for the contract, the README for the policies.
 *
 * Progressive filling is done exactly, by jumping from event to event instead of
 * raising the level in small steps. At level s an active tenant i holds
 * units_i = w_i * s / delta_i, so it uses coef_ir * s of resource r, normalized to
 * capacity 1, with coef_ir = w_i * u_ir / delta_i <= w_i. Per resource we keep
 * F_r (use by frozen tenants) and K_r (sum of coef_ir over active tenants); r runs
 * out at s = (1 - F_r) / K_r. The other events are the tenants' own caps, at
 * s = max_units_i * delta_i / w_i, visited in sorted order. Each event freezes at
 * least one tenant or one resource, so there are at most n + m of them, and each
 * costs O(m) plus the tenants it freezes.
 */
#include "alloc.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* fmax()/fmin() are calls into libm at -O2; these inline (no NaN reaches them). */
static inline double max2(double a, double b)
{
	return a > b ? a : b;
}

static inline double min2(double a, double b)
{
	return a < b ? a : b;
}

/* Relative slack for "this resource is used up" and "this copy still fits". */
#define FIT_EPS 1e-12

const char *drf_policy_name(enum drf_policy p)
{
	switch (p) {
	case DRF_POLICY_DRF:
		return "drf";
	case DRF_POLICY_ASSET:
		return "asset";
	case DRF_POLICY_PER_RESOURCE:
		return "per-resource";
	case DRF_NPOLICY:
		break;
	}
	return "?";
}

int drf_policy_from_name(const char *name)
{
	for (int p = 0; p < DRF_NPOLICY; p++)
		if (strcmp(name, drf_policy_name(p)) == 0)
			return p;
	return -1;
}

void drf_result_free(struct drf_result *r)
{
	if (!r)
		return;
	free(r->shares);
	r->shares = NULL;
	r->n = 0;
}

/* Scratch memory: the engine's, kept between calls, or the call's own. */
static void *scratch_get(struct drf_engine *e, size_t size, void **own)
{
	*own = NULL;
	if (!e)
		return *own = malloc(size + 1);
	if (size > e->cap) {
		size_t cap = size > 2 * e->cap ? size : 2 * e->cap;
		void *b = malloc(cap + 1);

		if (!b)
			return NULL;
		free(e->buf);
		e->buf = b;
		e->cap = cap;
	}
	return e->buf;
}

/* Carves size bytes, 16-aligned, off *at. */
static void *carve(char **at, size_t size)
{
	void *p = *at;

	*at += (size + 15) & ~(size_t)15;
	return p;
}

int drf_engine_init(struct drf_engine *e)
{
	memset(e, 0, sizeof(*e));
	return 0;
}

void drf_engine_free(struct drf_engine *e)
{
	if (!e)
		return;
	free(e->buf);
	free(e->shares);
	memset(e, 0, sizeof(*e));
}

/* Participating resources, in index order. */
struct resset {
	int m;
	int res[DRF_NRES];
};

static int validate(const struct drf_problem *p, struct resset *rs)
{
	rs->m = 0;
	for (int r = 0; r < DRF_NRES; r++) {
		double c = p->capacity[r];

		if (!(c >= 0) || !isfinite(c))
			return -EINVAL;
		if (c > 0)
			rs->res[rs->m++] = r;
	}
	if (p->n > 0 && !p->demands)
		return -EINVAL;
	if (p->n > UINT32_MAX)
		return -EINVAL;
	for (size_t i = 0; i < p->n; i++) {
		const struct drf_demand *d = &p->demands[i];
		bool needs = false;

		if (!(d->weight > 0) || !isfinite(d->weight))
			return -EINVAL;
		if (!(d->max_units > 0) || isnan(d->max_units))
			return -EINVAL;
		for (int k = 0; k < rs->m; k++) {
			double v = d->shape[rs->res[k]];

			if (!(v >= 0) || !isfinite(v))
				return -EINVAL;
			if (v > 0)
				needs = true;
		}
		/* An unlimited demand that needs nothing would take infinitely many copies. */
		if (!needs && isinf(d->max_units))
			return -EINVAL;
	}
	return 0;
}

double drf_shape_dominant(const struct drf_problem *p, const struct drf_demand *d, int *ret_res)
{
	double best = 0;
	int best_r = -1;

	for (int r = 0; r < DRF_NRES; r++) {
		double u;

		if (!(p->capacity[r] > 0))
			continue;
		u = d->shape[r] / p->capacity[r];
		if (best_r < 0 || u > best) {
			best = u;
			best_r = r;
		}
	}
	if (ret_res)
		*ret_res = best_r;
	return best;
}

/* Sets dominant_share and dominant_res of a share from its allocation. */
static void finish_share(const struct drf_problem *p, const struct drf_demand *d,
			 struct drf_share *s)
{
	double best = 0;
	int best_r = -1;

	for (int r = 0; r < DRF_NRES; r++) {
		double v;

		if (!(p->capacity[r] > 0))
			continue;
		v = s->alloc[r] / p->capacity[r];
		if (v > best) {
			best = v;
			best_r = r;
		}
	}
	if (best_r < 0)
		drf_shape_dominant(p, d, &best_r);
	s->dominant_share = best;
	s->dominant_res = best_r;
}

static void finish_result(const struct drf_problem *p, struct drf_result *out)
{
	double used[DRF_NRES] = { 0 };

	for (size_t i = 0; i < out->n; i++) {
		for (int r = 0; r < DRF_NRES; r++)
			used[r] += out->shares[i].alloc[r];
		finish_share(p, &p->demands[i], &out->shares[i]);
	}
	for (int r = 0; r < DRF_NRES; r++)
		out->unallocated[r] = p->capacity[r] > 0 ? max2(0, p->capacity[r] - used[r]) : 0;
}

/*
 * Stable LSD radix sort of (key, index) pairs by key. The keys are non-negative
 * doubles (or +inf), whose IEEE-754 bit patterns sort like the unsigned integers
 * they spell, so 11-bit digits take 6 passes, skipping digits all keys share.
 * Stability keeps equal keys in config order.
 */
struct sortkey {
	uint64_t bits;
	uint32_t idx;
};

#define RADIX_BITS 11
#define RADIX_SIZE (1u << RADIX_BITS)

static struct sortkey *radix_sort(struct sortkey *a, struct sortkey *tmp, size_t n)
{
	_Static_assert(sizeof(double) == sizeof(uint64_t), "IEEE-754 doubles");
	size_t count[RADIX_SIZE];

	for (unsigned shift = 0; shift < 64; shift += RADIX_BITS) {
		size_t sum = 0;
		struct sortkey *t;

		memset(count, 0, sizeof(count));
		for (size_t i = 0; i < n; i++)
			count[(a[i].bits >> shift) & (RADIX_SIZE - 1)]++;
		if (n == 0 || count[(a[0].bits >> shift) & (RADIX_SIZE - 1)] == n)
			continue;
		for (size_t d = 0; d < RADIX_SIZE; d++) {
			size_t c = count[d];

			count[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			tmp[count[(a[i].bits >> shift) & (RADIX_SIZE - 1)]++] = a[i];
		t = a;
		a = tmp;
		tmp = t;
	}
	return a;
}

static uint64_t key_bits(double v)
{
	uint64_t b;

	memcpy(&b, &v, sizeof(b));
	return b;
}

struct filler {
	const struct drf_problem *p;
	struct drf_share *shares;
	struct resset rs;
	size_t n, active;
	double *delta;    /* per tenant: the metric equalized (dominant or summed share) */
	double *coef;     /* n x m, row-major: w_i * u_ir / delta_i */
	bool *frozen;
	uint32_t *list;   /* per resource (CSR): tenants with u_ir > 0 */
	uint32_t list_start[DRF_NRES + 1];
	double used[DRF_NRES];    /* F_r: use by frozen tenants */
	double slope[DRF_NRES];   /* K_r: sum of coef over active tenants */
	double removed[DRF_NRES]; /* coef taken out of K_r since it was last summed */
	size_t nactive[DRF_NRES];      /* active tenants needing r */
	bool saturated[DRF_NRES];
};

static void resum_slope(struct filler *f, int k)
{
	double s = 0;

	for (uint32_t j = f->list_start[k]; j < f->list_start[k + 1]; j++)
		if (!f->frozen[f->list[j]])
			s += f->coef[(size_t)f->list[j] * f->rs.m + k];
	f->slope[k] = s;
	f->removed[k] = 0;
}

static void freeze(struct filler *f, size_t i, double level, int limited_by)
{
	const struct drf_demand *d = &f->p->demands[i];
	struct drf_share *s = &f->shares[i];
	int m = f->rs.m;

	f->frozen[i] = true;
	f->active--;
	if (limited_by == DRF_LIMIT_DEMAND)
		s->units = d->max_units;
	else
		s->units = min2(d->max_units, d->weight * level / f->delta[i]);
	s->limited_by = limited_by;
	for (int k = 0; k < m; k++) {
		int r = f->rs.res[k];
		double c = f->coef[i * m + k];

		s->alloc[r] = s->units * d->shape[r];
		if (c <= 0)
			continue;
		f->used[k] += c * level;
		if (--f->nactive[k] == 0) {
			f->slope[k] = 0;
			f->removed[k] = 0;
			continue;
		}
		f->slope[k] -= c;
		f->removed[k] += c;
		/*
		 * Taking large terms out of a sum leaves their rounding error (2^-53 of
		 * them) behind; once the remainder is 2^-16 of what was removed, that error
		 * could reach 2^-37 of it, so add the remainder up afresh.
		 */
		if (f->slope[k] < f->removed[k] * 0x1p-16)
			resum_slope(f, k);
	}
}

static int fill(const struct drf_problem *p, const struct resset *rs, enum drf_policy policy,
		struct drf_result *out, struct drf_engine *e)
{
	struct filler f = { .p = p, .shares = out->shares, .n = p->n, .rs = *rs };
	struct sortkey *keys, *tmp, *sorted;
	size_t ncap = 0, next = 0, nnz = 0, um = (size_t)rs->m;
	int m = rs->m;
	double level = 0;
	void *own;
	char *at = scratch_get(e, 16 * 6 + f.n * (sizeof(*f.delta) + um * sizeof(*f.coef) +
					       sizeof(*f.frozen) + 2 * sizeof(*keys) +
					       um * sizeof(*f.list)), &own);

	if (!at)
		return -ENOMEM;
	f.delta = carve(&at, f.n * sizeof(*f.delta));
	f.coef = carve(&at, f.n * um * sizeof(*f.coef));
	f.frozen = carve(&at, f.n * sizeof(*f.frozen));
	keys = carve(&at, f.n * sizeof(*keys));
	tmp = carve(&at, f.n * sizeof(*tmp));
	f.list = carve(&at, f.n * um * sizeof(*f.list));
	memset(f.frozen, 0, f.n * sizeof(*f.frozen));

	for (size_t i = 0; i < f.n; i++) {
		const struct drf_demand *d = &p->demands[i];
		double delta = 0;

		for (int k = 0; k < m; k++) {
			int r = f.rs.res[k];
			double u = d->shape[r] / p->capacity[r];

			f.coef[i * m + k] = u; /* scaled below, once delta is known */
			if (policy == DRF_POLICY_ASSET)
				delta += u;
			else
				delta = max2(delta, u);
		}
		f.delta[i] = delta;
		if (delta == 0) {
			/* Needs nothing that is shared: fully served at once. */
			memset(&out->shares[i], 0, sizeof(out->shares[i]));
			out->shares[i].units = d->max_units;
			out->shares[i].limited_by = DRF_LIMIT_DEMAND;
			f.frozen[i] = true;
			for (int k = 0; k < m; k++)
				f.coef[i * m + k] = 0;
			continue;
		}
		f.active++;
		for (int k = 0; k < m; k++) {
			double c = d->weight * (f.coef[i * m + k] / delta);

			f.coef[i * m + k] = c;
			if (c > 0) {
				f.slope[k] += c;
				f.nactive[k]++;
			}
		}
		if (isfinite(d->max_units)) {
			keys[ncap].bits = key_bits(d->max_units * delta / d->weight);
			keys[ncap].idx = (uint32_t)i;
			ncap++;
		}
	}
	/* Per-resource lists of the tenants that need each resource (CSR). */
	for (int k = 0; k < m; k++) {
		f.list_start[k] = (uint32_t)nnz;
		nnz += f.nactive[k];
	}
	f.list_start[m] = (uint32_t)nnz;
	{
		uint32_t fillpos[DRF_NRES];

		memcpy(fillpos, f.list_start, sizeof(fillpos));
		for (size_t i = 0; i < f.n; i++)
			for (int k = 0; k < m; k++)
				if (f.coef[i * m + k] > 0)
					f.list[fillpos[k]++] = (uint32_t)i;
	}
	sorted = radix_sort(keys, tmp, ncap);

	while (f.active > 0) {
		double cap_level = INFINITY, sat_level = INFINITY;
		int sat_k = -1;

		while (next < ncap && f.frozen[sorted[next].idx])
			next++;
		if (next < ncap)
			memcpy(&cap_level, &sorted[next].bits, sizeof(cap_level));
		for (int k = 0; k < m; k++) {
			double l;

			if (f.saturated[k] || f.nactive[k] == 0)
				continue;
			l = (1.0 - f.used[k]) / f.slope[k];
			if (l < level)
				l = level; /* already full, up to rounding */
			if (l < sat_level) {
				sat_level = l;
				sat_k = k;
			}
		}
		if (cap_level <= sat_level) {
			/* Ties go to the cap: that tenant is served in full. */
			level = cap_level;
			freeze(&f, sorted[next].idx, level, DRF_LIMIT_DEMAND);
			next++;
			continue;
		}
		/* Every active tenant has a resource it needs, so sat_k >= 0 here. */
		level = sat_level;
		f.saturated[sat_k] = true;
		for (uint32_t j = f.list_start[sat_k]; j < f.list_start[sat_k + 1]; j++)
			if (!f.frozen[f.list[j]])
				freeze(&f, f.list[j], level, f.rs.res[sat_k]);
	}
	free(own);
	return 0;
}

/*
 * Weighted max-min water-filling of each resource on its own. A tenant's demand
 * on r is max_units * shape_r (infinite for unlimited tasks).
 */
static int water_fill(const struct drf_problem *p, const struct resset *prs,
		      struct drf_result *out, struct drf_engine *e)
{
	struct sortkey *keys, *tmp, *sorted;
	const struct resset rs = *prs;
	double *suffix_w;
	void *own;
	char *at = scratch_get(e, 16 * 3 + p->n * 2 * sizeof(*keys) +
				       (p->n + 1) * sizeof(*suffix_w), &own);

	if (!at)
		return -ENOMEM;
	keys = carve(&at, p->n * sizeof(*keys));
	tmp = carve(&at, p->n * sizeof(*tmp));
	suffix_w = carve(&at, (p->n + 1) * sizeof(*suffix_w));

	for (int k = 0; k < rs.m; k++) {
		int r = rs.res[k];
		double left = p->capacity[r];
		size_t cnt = 0;

		for (size_t i = 0; i < p->n; i++) {
			const struct drf_demand *d = &p->demands[i];

			if (d->shape[r] > 0) {
				keys[cnt].bits = key_bits(d->shape[r] * d->max_units / d->weight);
				keys[cnt].idx = (uint32_t)i;
				cnt++;
			}
		}
		sorted = radix_sort(keys, tmp, cnt);
		/* Summed from the back so that no weight is ever subtracted. */
		suffix_w[cnt] = 0;
		for (size_t j = cnt; j-- > 0;)
			suffix_w[j] = suffix_w[j + 1] + p->demands[sorted[j].idx].weight;
		for (size_t j = 0; j < cnt; j++) {
			const struct drf_demand *d = &p->demands[sorted[j].idx];
			double fair = left / suffix_w[j], want;

			memcpy(&want, &sorted[j].bits, sizeof(want));
			if (want <= fair) {
				double a = d->shape[r] * d->max_units;

				out->shares[sorted[j].idx].alloc[r] = a;
				left = max2(0, left - a);
				continue;
			}
			for (; j < cnt; j++)
				out->shares[sorted[j].idx].alloc[r] =
					p->demands[sorted[j].idx].weight * fair;
		}
	}
	/* The usable part: as many copies of the shape as every resource allows. */
	for (size_t i = 0; i < p->n; i++) {
		const struct drf_demand *d = &p->demands[i];
		struct drf_share *s = &out->shares[i];
		double units = d->max_units;
		int lim = DRF_LIMIT_DEMAND;

		for (int k = 0; k < rs.m; k++) {
			int r = rs.res[k];
			double u;

			if (d->shape[r] <= 0)
				continue;
			u = s->alloc[r] / d->shape[r];
			if (u < units * (1 - FIT_EPS)) {
				units = u;
				lim = r;
			}
		}
		s->units = min2(units, d->max_units);
		s->limited_by = lim;
	}
	free(own);
	return 0;
}

static int result_init(const struct drf_problem *p, struct drf_result *r)
{
	r->n = p->n;
	r->shares = calloc(p->n + 1, sizeof(*r->shares));
	memset(r->unallocated, 0, sizeof(r->unallocated));
	return r->shares ? 0 : -ENOMEM;
}

static int allocate(const struct drf_problem *p, enum drf_policy policy, struct drf_result *out,
		    struct drf_engine *e)
{
	struct resset rs;
	int err;

	if ((unsigned)policy >= DRF_NPOLICY)
		return -EINVAL;
	err = validate(p, &rs);
	if (err < 0)
		return err;
	if (policy == DRF_POLICY_PER_RESOURCE)
		err = water_fill(p, &rs, out, e);
	else
		err = fill(p, &rs, policy, out, e);
	if (err < 0)
		return err;
	finish_result(p, out);
	return 0;
}

int drf_allocate(const struct drf_problem *p, enum drf_policy policy, struct drf_result *ret)
{
	struct drf_result out;
	int err;

	if ((unsigned)policy >= DRF_NPOLICY)
		return -EINVAL;
	err = result_init(p, &out);
	if (err < 0)
		return err;
	err = allocate(p, policy, &out, NULL);
	if (err < 0) {
		drf_result_free(&out);
		return err;
	}
	*ret = out;
	return 0;
}

int drf_engine_allocate(struct drf_engine *e, const struct drf_problem *p, enum drf_policy policy,
			struct drf_result *ret)
{
	int err;

	if ((unsigned)policy >= DRF_NPOLICY)
		return -EINVAL;
	if (!e->shares || e->shares_cap < p->n) {
		size_t cap = p->n > 2 * e->shares_cap ? p->n : 2 * e->shares_cap;
		struct drf_share *ns = malloc((cap + 1) * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		free(e->shares);
		e->shares = ns;
		e->shares_cap = cap;
	}
	/* Every share starts from zero, as calloc() gives drf_allocate(). */
	memset(e->shares, 0, p->n * sizeof(*e->shares));
	e->result.n = p->n;
	e->result.shares = e->shares;
	memset(e->result.unallocated, 0, sizeof(e->result.unallocated));
	err = allocate(p, policy, &e->result, e);
	if (err < 0)
		return err;
	*ret = e->result;
	return 0;
}

/* Min-heap of tenants by (weighted dominant share, index). */
struct heap {
	uint32_t *a;
	size_t n;
	const double *key;
};

static bool heap_less(const struct heap *h, uint32_t x, uint32_t y)
{
	return h->key[x] < h->key[y] || (h->key[x] == h->key[y] && x < y);
}

static void heap_down(struct heap *h, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, best = i;
		uint32_t t;

		if (l < h->n && heap_less(h, h->a[l], h->a[best]))
			best = l;
		if (l + 1 < h->n && heap_less(h, h->a[l + 1], h->a[best]))
			best = l + 1;
		if (best == i)
			return;
		t = h->a[i];
		h->a[i] = h->a[best];
		h->a[best] = t;
		i = best;
	}
}

int drf_allocate_discrete(const struct drf_problem *p, struct drf_result *ret)
{
	struct drf_result out;
	struct heap h = { 0 };
	/*
	 * used[] grows by one task at a time, up to DRF_DISCRETE_MAX_TASKS times: a
	 * plain running sum drifts by up to a rounding per task, enough to refuse a
	 * last task that fits. Neumaier's compensated sum keeps the error at a few
	 * roundings whatever the count.
	 */
	double used[DRF_NRES] = { 0 }, comp[DRF_NRES] = { 0 }, *key = NULL, *step = NULL;
	double placed = 0;
	struct resset rs;
	int err;

	err = validate(p, &rs);
	if (err < 0)
		return err;
	err = result_init(p, &out);
	if (err < 0)
		return err;
	err = -ENOMEM;
	key = calloc(p->n + 1, sizeof(*key));
	step = calloc(p->n + 1, sizeof(*step));
	h.a = malloc((p->n + 1) * sizeof(*h.a));
	if (!key || !step || !h.a)
		goto out_free;
	h.key = key;

	for (size_t i = 0; i < p->n; i++) {
		const struct drf_demand *d = &p->demands[i];
		double delta = drf_shape_dominant(p, d, NULL);

		if (delta == 0) {
			out.shares[i].units = d->max_units;
			out.shares[i].limited_by = DRF_LIMIT_DEMAND;
			continue;
		}
		step[i] = delta / d->weight;
		h.a[h.n++] = (uint32_t)i;
	}
	for (size_t i = h.n / 2; i-- > 0;)
		heap_down(&h, i);

	while (h.n > 0) {
		uint32_t i = h.a[0];
		const struct drf_demand *d = &p->demands[i];
		struct drf_share *s = &out.shares[i];
		int misfit = -1;

		for (int k = 0; k < rs.m && misfit < 0; k++) {
			int r = rs.res[k];

			if (used[r] + comp[r] + d->shape[r] > p->capacity[r] * (1 + FIT_EPS))
				misfit = r;
		}
		if (misfit >= 0 || s->units >= d->max_units) {
			s->limited_by = misfit >= 0 ? misfit : DRF_LIMIT_DEMAND;
			h.a[0] = h.a[--h.n];
			heap_down(&h, 0);
			continue;
		}
		if (++placed > DRF_DISCRETE_MAX_TASKS) {
			err = -E2BIG;
			goto out_free;
		}
		for (int k = 0; k < rs.m; k++) {
			int r = rs.res[k];
			double x = d->shape[r], t = used[r] + x;

			comp[r] += fabs(used[r]) >= fabs(x) ? (used[r] - t) + x : (x - t) + used[r];
			used[r] = t;
		}
		s->units += 1;
		/* units * step rather than a running sum: no drift over many tasks. */
		key[i] = s->units * step[i];
		heap_down(&h, 0);
	}
	for (size_t i = 0; i < p->n; i++)
		for (int k = 0; k < rs.m; k++)
			out.shares[i].alloc[rs.res[k]] =
				out.shares[i].units * p->demands[i].shape[rs.res[k]];
	finish_result(p, &out);
	*ret = out;
	out.shares = NULL;
	err = 0;
out_free:
	drf_result_free(&out);
	free(h.a);
	free(step);
	free(key);
	return err;
}

void drf_metrics_compute(const struct drf_problem *p, const struct drf_result *res,
			 struct drf_metrics *ret)
{
	struct drf_metrics m = { 0 };
	double wsum = 0, ysum = 0, y2sum = 0;

	for (size_t i = 0; i < p->n; i++)
		wsum += p->demands[i].weight;
	for (size_t i = 0; i < p->n; i++) {
		const struct drf_demand *d = &p->demands[i];
		const struct drf_share *s = &res->shares[i];
		double share = 0, full, y;

		for (int r = 0; r < DRF_NRES; r++) {
			double usable;

			if (!(p->capacity[r] > 0))
				continue;
			usable = s->units * d->shape[r];
			share = max2(share, usable / p->capacity[r]);
			m.utilization[r] += usable / p->capacity[r];
			m.allocated[r] += s->alloc[r] / p->capacity[r];
		}
		y = share / d->weight;
		ysum += y;
		y2sum += y * y;
		full = d->max_units * drf_shape_dominant(p, d, NULL);
		if (isnan(full))
			full = INFINITY;
		if (share < min2(full, d->weight / wsum) * (1 - 1e-9) - 1e-12)
			m.si_violations++;
	}
	m.jain = y2sum > 0 ? ysum * ysum / ((double)p->n * y2sum) : 1.0;
	*ret = m;
}
