// SPDX-License-Identifier: MIT
/*
 * Allocation engine. See alloc.h for the contract, docs/design.md for the policies.
 *
 * Progressive filling is done exactly, by jumping from event to event instead of
 * raising the level in small steps. At level s an active tenant i holds
 * units_i = a_i * s copies of its shape, a_i = w_i / delta_i, so it uses
 * a_i * u_ir * s of resource r, normalized to capacity 1 (u_ir = shape_ir /
 * capacity_r). Per resource we keep F_r (use by tenants no longer growing) and
 * K_r (sum of a_i * u_ir over active tenants); r runs out at s = (1 - F_r) / K_r,
 * and stops every active tenant that needs it. The other events are the tenants'
 * own caps, at t_i = max_units_i / a_i. There are at most m events of the first
 * kind, and fill() below takes those of the second kind by the bucket of cap
 * levels, not one by one: O(n m) in all, plus O(m) passes over the capped tenants
 * still active when a resource runs out, plus a sort of the few buckets in which
 * one does.
 */
#include "alloc.h"
#include "fairfam.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
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

/* The capacities, and the participating resources. */
static int validate_caps(const struct drf_problem *p, struct resset *rs)
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
	return 0;
}

/* The demands; fill() makes the same checks in its first pass. */
static int validate_demands(const struct drf_problem *p, const struct resset *rs)
{
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

static int validate(const struct drf_problem *p, struct resset *rs)
{
	int err = validate_caps(p, rs);

	return err < 0 ? err : validate_demands(p, rs);
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

/*
 * The filling tracks unlimited tenants by class only: the set of resources a
 * tenant needs (bit r: u_ir > 0). A class's unlimited tenants grow together until
 * the first resource in the class runs out, so their sums of a_i * u_ir are all
 * the filling needs of them, and a resource running out stops whole classes at
 * once. Tenants with a cap are put in buckets by t_i, and a bucket in which no
 * resource runs out, even at its largest t_i, is met whole from its sums; only a
 * bucket in which one does is taken tenant by tenant, in order. Each tenant's
 * outcome follows from its class, its t_i and the levels at which resources ran
 * out (it stops at the first of its class's resources to run out, unless its cap
 * comes first), and is written in a last pass.
 *
 * Until that pass, a tenant's share holds what the filling needs of it, so that
 * the demands are read once and the scratch holds only bytes and indexes per
 * tenant: alloc[] the masked shape, units max_units, dominant_share t_i (+inf if
 * none), and the 8 bytes of dominant_res and limited_by a_i.
 *
 * The passes over all tenants have no branch on the kind of a demand: integer
 * selects, and sums into a spare bucket where a tenant has nothing to add.
 * Kinds come in any order, and a branch mispredicted on every other tenant
 * costs more than the pass's work; a loop over the same data again and again
 * hides that, as the predictor learns the data (the benchmark's engine runs
 * right after drf_allocate_discrete, which leaves nothing of it).
 */
#define NCLASS (1 << DRF_NRES)
/*
 * State of a capped tenant: met one by one, or not (met with its bucket, stopped
 * by a resource in its class, or still active).
 */
#define LIM_ACTIVE (-2)
/* Key (bits of its cap level) of a tenant without one: those of +inf. */
#define KEY_NONE 0x7ff0000000000000ULL
/* Bits of DBL_MAX: a non-negative double is finite iff its bits are at most these. */
#define BITS_DBL_MAX 0x7fefffffffffffffULL
#define NO_TENANT UINT32_MAX
/* At most this many buckets, and about 8 tenants to a bucket: their sums stay in L2. */
#define MAX_BUCKETS 4096
#define PER_BUCKET 8

/*
 * Capped tenants whose cap levels fall in one bucket, and their sums. The same
 * rows, after the spare bucket, sum the unlimited tenants of each class in the
 * first pass.
 */
struct bucket {
	uint64_t hi;              /* largest key */
	uint32_t cnt;             /* tenants still active */
	uint32_t head;            /* a list of them all (linked by next[]), last first */
	double use[DRF_NRES];     /* sum of max_units * u_ir: their use once met */
	double slope[DRF_NRES];   /* sum of a_i * u_ir */
};

/*
 * Every loop over resources runs over all DRF_NRES of them, for code without
 * branches that the compiler unrolls: a resource that takes no part has inv 0 and
 * its shape entries, whatever they hold, masked to 0.
 */
struct filler {
	const struct drf_problem *p;
	double inv[DRF_NRES];     /* 1 / capacity, 0 if not participating */
	uint64_t mask[DRF_NRES];  /* all ones if participating, 0 if not */
	struct drf_share *sh;     /* per tenant: its share, holding the above */
	uint8_t *cls;             /* per tenant: its class */
	int8_t *dom;              /* per tenant: the first r of largest u_ir, -1 if none > 0 */
	int8_t *lim;              /* per capped tenant: LIM_ACTIVE or DRF_LIMIT_DEMAND */
	uint32_t *next;           /* per capped tenant: the next in its bucket's list */
	uint32_t *bucket;         /* per capped tenant: its bucket */
	uint32_t *list;           /* capped tenants that may still be active, in index order */
	size_t nlist;
	struct sortkey *keys, *tmp;
	struct bucket *buckets;   /* nb of them, the spare, the rows of the classes */
	size_t nb, cur;           /* buckets, and the one being taken */
	uint64_t minb, maxb;      /* keys below minb go to bucket 0, above maxb to the last */
	size_t done;              /* buckets before this one are met whole or taken */
	unsigned shift;           /* bucket of a key k in [minb, maxb]: (k - minb) >> shift */
	unsigned sat;             /* bit r: resource r has run out */
	int nsat;
	double level;
	double used[DRF_NRES];    /* F_r: use by met and stopped tenants, capacity 1 */
	double capped[DRF_NRES];  /* sum of a_i * u_ir over active capped tenants */
	double removed[DRF_NRES]; /* taken out of capped[] since it was last summed */
	double unl[DRF_NRES];     /* sum of a_i * u_ir over active unlimited tenants */
	double sat_level[DRF_NRES];
	int sat_order[DRF_NRES];
	size_t cls_n[NCLASS];     /* unlimited tenants per class */
	double cls_sum[NCLASS][DRF_NRES]; /* their sums of a_i * u_ir */
};

/* The 8 bytes of dominant_res and limited_by, which hold a_i until the last pass. */
#define A_OFFSET offsetof(struct drf_share, dominant_res)
_Static_assert(offsetof(struct drf_share, limited_by) == A_OFFSET + sizeof(int) &&
	       sizeof(int) == 4, "two ints hold a double");

static inline double share_a(const struct drf_share *s)
{
	double a;

	memcpy(&a, (const unsigned char *)s + A_OFFSET, sizeof(a));
	return a;
}

static inline void share_set_a(struct drf_share *s, double a)
{
	memcpy((unsigned char *)s + A_OFFSET, &a, sizeof(a));
}

static inline uint64_t share_key(const struct drf_share *s)
{
	return key_bits(s->dominant_share);
}

/*
 * c ? x : y without a branch. The passes over every tenant take these rather
 * than branches on the kind of each demand: the kinds come in any order, and a
 * branch mispredicted on every other tenant costs more than the pass's work.
 */
static inline uint64_t select_bits(bool c, uint64_t x, uint64_t y)
{
	uint64_t m = -(uint64_t)c;

	return (x & m) | (y & ~m);
}

static inline double select_double(bool c, double x, double y)
{
	uint64_t xb, yb;

	memcpy(&xb, &x, sizeof(xb));
	memcpy(&yb, &y, sizeof(yb));
	xb = select_bits(c, xb, yb);
	memcpy(&x, &xb, sizeof(x));
	return x;
}

static double key_level(uint64_t bits)
{
	double v;

	memcpy(&v, &bits, sizeof(v));
	return v;
}

/*
 * The capped tenants still active, first in the list: those met since drop out,
 * one by one or with their bucket.
 */
static size_t active_capped(struct filler *f)
{
	size_t n = 0;

	/* Without a branch on each: met and active ones come in any order. */
	for (size_t j = 0; j < f->nlist; j++) {
		uint32_t i = f->list[j];

		f->list[n] = i;
		n += (f->lim[i] == LIM_ACTIVE) & (f->bucket[i] >= f->done) & !(f->cls[i] & f->sat);
	}
	return f->nlist = n;
}

/*
 * The shares of the capped tenants still active are far apart in memory, and a
 * pass over them waits on each one's cache lines unless they are asked for ahead.
 */
#define PREFETCH_AHEAD 8

static void prefetch_share(const struct filler *f, size_t j, size_t n)
{
	if (j + PREFETCH_AHEAD < n) {
		const char *s = (const char *)&f->sh[f->list[j + PREFETCH_AHEAD]];

		__builtin_prefetch(s);
		__builtin_prefetch(s + sizeof(struct drf_share) - 1);
	}
}

/* capped[] summed afresh. */
static void resum(struct filler *f)
{
	double sum[DRF_NRES] = { 0 };
	size_t n = active_capped(f);

	for (size_t j = 0; j < n; j++) {
		const struct drf_share *s = &f->sh[f->list[j]];
		double a = share_a(s);

		prefetch_share(f, j, n);
#pragma GCC unroll 8
		for (int r = 0; r < DRF_NRES; r++)
			sum[r] += a * (s->alloc[r] * f->inv[r]);
	}
	memcpy(f->capped, sum, sizeof(sum));
	memset(f->removed, 0, sizeof(f->removed));
}

/*
 * A resource has run out (and is in sat): the capped tenants that need it stop
 * at the level. They are not visited: what they held of each resource is the
 * level times their part of the slope, the slope before less the slope of those
 * that stay, which (and the sums of the buckets after the current one) is summed
 * afresh from them: sums of positive terms, with no rounding left behind by what
 * was taken out.
 */
static void stop_capped(struct filler *f)
{
	double capped[DRF_NRES] = { 0 };
	size_t n = active_capped(f);

	for (size_t b = f->cur + 1; b <= f->nb; b++) {
		struct bucket *bk = &f->buckets[b];

		bk->hi = 0;
		bk->cnt = 0;
		memset(bk->use, 0, sizeof(bk->use));
		memset(bk->slope, 0, sizeof(bk->slope));
	}
	for (size_t j = 0; j < n; j++) {
		uint32_t i = f->list[j];
		const struct drf_share *s = &f->sh[i];
		uint64_t key = share_key(s);
		size_t b = f->bucket[i];
		/* One in the current bucket goes to the spare one. */
		struct bucket *bk = &f->buckets[b + ((f->nb - b) & -(size_t)(b <= f->cur))];
		double a = share_a(s);

		prefetch_share(f, j, n);
		bk->cnt++;
		bk->hi = key > bk->hi ? key : bk->hi;
#pragma GCC unroll 8
		for (int r = 0; r < DRF_NRES; r++) {
			double u = s->alloc[r] * f->inv[r];

			capped[r] += a * u;
			bk->use[r] += s->units * u;
			bk->slope[r] += a * u;
		}
	}
	for (int r = 0; r < DRF_NRES; r++)
		f->used[r] += f->level * max2(0, f->capped[r] - capped[r]);
	memcpy(f->capped, capped, sizeof(capped));
	memset(f->removed, 0, sizeof(f->removed));
}

/*
 * Taking large terms out of a sum leaves their rounding error (2^-53 of them)
 * behind; once the remainder is 2^-16 of what was removed, that error could reach
 * 2^-37 of it, so add the remainder up afresh. A resource no active capped tenant
 * needs ends here too, with capped[] exactly 0.
 */
static void check_slopes(struct filler *f)
{
	for (int r = 0; r < DRF_NRES; r++) {
		if (f->removed[r] > 0 && f->capped[r] < f->removed[r] * 0x1p-16) {
			resum(f);
			return;
		}
	}
}

/* Unlimited tenants still active: those in classes with no resource run out. */
static size_t unlimited_active(const struct filler *f)
{
	size_t n = 0;

	for (unsigned c = 0; c < NCLASS; c++)
		if (!(c & f->sat))
			n += f->cls_n[c];
	return n;
}

/* Resource r runs out at the level: every active tenant that needs it stops. */
static void saturate(struct filler *f, int r, double level)
{
	f->level = level;
	f->sat_level[r] = level;
	f->sat_order[r] = f->nsat++;
	for (unsigned c = 0; c < NCLASS; c++) {
		if (!(c >> r & 1) || (c & f->sat) || !f->cls_n[c])
			continue;
		for (int q = 0; q < DRF_NRES; q++)
			f->used[q] += level * f->cls_sum[c][q];
	}
	f->sat |= 1u << r;
	memset(f->unl, 0, sizeof(f->unl));
	for (unsigned c = 0; c < NCLASS; c++) {
		if (c & f->sat)
			continue;
		for (int q = 0; q < DRF_NRES; q++)
			f->unl[q] += f->cls_sum[c][q];
	}
	stop_capped(f);
}

/* The first resource to run out from the level on, and when; -1 if none will. */
static int next_saturation(const struct filler *f, double *ret_level)
{
	double best = INFINITY;
	int best_r = -1;

	for (int r = 0; r < DRF_NRES; r++) {
		double l, k = f->unl[r] + f->capped[r];

		if ((f->sat >> r & 1) || !(k > 0))
			continue;
		l = (1.0 - f->used[r]) / k;
		if (l < f->level)
			l = f->level; /* already full, up to rounding */
		if (l < best) {
			best = l;
			best_r = r;
		}
	}
	*ret_level = best;
	return best_r;
}

/* Capped tenant i's demand is met at its cap level t. */
static void meet(struct filler *f, uint32_t i, double t)
{
	const struct drf_share *s = &f->sh[i];
	double a = share_a(s);

#pragma GCC unroll 8
	for (int r = 0; r < DRF_NRES; r++) {
		double u = s->alloc[r] * f->inv[r];

		f->used[r] += s->units * u;
		f->capped[r] -= a * u;
		f->removed[r] += a * u;
	}
	f->lim[i] = DRF_LIMIT_DEMAND;
	f->level = t;
	check_slopes(f);
}

/* Capped tenant i is neither met one by one nor stopped by a resource run out. */
static bool live(const struct filler *f, uint32_t i)
{
	return f->lim[i] == LIM_ACTIVE && !(f->cls[i] & f->sat);
}

/*
 * A bucket in which a resource runs out: its tenants one by one in the order of
 * their cap levels (ties in index order), each after any resource that runs out
 * before it, as in plain event-driven filling.
 */
static void take_bucket_in_order(struct filler *f)
{
	struct sortkey *sorted;
	size_t cnt = 0;

	for (uint32_t i = f->buckets[f->cur].head; i != NO_TENANT; i = f->next[i]) {
		if (live(f, i)) {
			f->keys[cnt].bits = share_key(&f->sh[i]);
			f->keys[cnt].idx = i;
			cnt++;
		}
	}
	/* The list runs from the last tenant to the first: back to index order. */
	for (size_t j = 0; j < cnt / 2; j++) {
		struct sortkey x = f->keys[j];

		f->keys[j] = f->keys[cnt - 1 - j];
		f->keys[cnt - 1 - j] = x;
	}
	if (cnt > 32) {
		sorted = radix_sort(f->keys, f->tmp, cnt);
	} else {
		/* Insertion sort: stable, so ties stay in index order. */
		for (size_t j = 1; j < cnt; j++) {
			struct sortkey x = f->keys[j];
			size_t q = j;

			for (; q > 0 && f->keys[q - 1].bits > x.bits; q--)
				f->keys[q] = f->keys[q - 1];
			f->keys[q] = x;
		}
		sorted = f->keys;
	}
	for (size_t j = 0; j < cnt; j++) {
		uint32_t i = sorted[j].idx;
		double t = key_level(sorted[j].bits), l;
		int r;

		/* Ties go to the cap: that tenant is served in full. */
		while (live(f, i) && (r = next_saturation(f, &l)) >= 0 && l < t)
			saturate(f, r, l);
		if (live(f, i))
			meet(f, i, t);
	}
}

/*
 * Sets up at most nb buckets for keys from minb to maxb, the spare bucket after
 * them and, after that, the rows of the classes.
 */
static void buckets_init(struct filler *f, uint64_t minb, uint64_t maxb, size_t nb)
{
	f->minb = minb;
	f->maxb = maxb;
	f->shift = 0;
	while (((maxb - minb) >> f->shift) >= nb)
		f->shift++;
	f->nb = (size_t)((maxb - minb) >> f->shift) + 1;
	memset(f->buckets, 0, (f->nb + 1 + NCLASS) * sizeof(*f->buckets));
	for (size_t b = 0; b <= f->nb + NCLASS; b++)
		f->buckets[b].head = NO_TENANT;
}

/* The bucket of a key; keys out of [minb, maxb] go to the first or the last. */
static inline size_t bucket_of(const struct filler *f, uint64_t key)
{
	uint64_t k = key < f->minb ? f->minb : key > f->maxb ? f->maxb : key;

	return (size_t)((k - f->minb) >> f->shift);
}

/* Puts tenant i (a_i, max_units mu, u_ir) in the list and sums of row b. */
static inline void bucket_put(struct filler *f, uint32_t i, size_t b, uint64_t key, double a,
			      double mu, const double *u)
{
	struct bucket *bk = &f->buckets[b];

	f->lim[i] = LIM_ACTIVE;
	f->bucket[i] = (uint32_t)b;
	f->next[i] = bk->head;
	bk->head = i;
	bk->cnt++;
	bk->hi = key > bk->hi ? key : bk->hi;
#pragma GCC unroll 8
	for (int r = 0; r < DRF_NRES; r++) {
		bk->use[r] += mu * u[r];
		bk->slope[r] += a * u[r];
	}
}

/*
 * Where the cap levels lie, from a sample of the tenants spread over the whole
 * list, so that the first pass can put tenants in buckets as it goes: the range
 * of the sample's levels (in bits) widened by half its width on either side, and
 * a factor of 2 wide at least. Returns the capped tenants that the sample
 * suggests, 0 if it has none.
 */
#define SAMPLE 256

static size_t sample_caps(const struct filler *f, size_t n, bool asset, uint64_t *ret_lo,
			  uint64_t *ret_hi)
{
	uint64_t lo = KEY_NONE, hi = 0, span;
	size_t s = n < SAMPLE ? n : SAMPLE, ncap = 0;

	for (size_t j = 0; j < s; j++) {
		const struct drf_demand *d = &f->p->demands[j * n / s];
		double dmax = 0, dsum = 0, t;

		for (int r = 0; r < DRF_NRES; r++) {
			uint64_t b;
			double u;

			memcpy(&b, &d->shape[r], sizeof(b));
			b &= f->mask[r];
			memcpy(&u, &b, sizeof(u));
			u *= f->inv[r];
			dsum += u;
			dmax = max2(dmax, u);
		}
		t = d->max_units * (asset ? dsum : dmax) / d->weight;
		/* Anything but a positive finite level (or a malformed demand) tells nothing. */
		if (!(t > 0 && t <= DBL_MAX))
			continue;
		lo = key_bits(t) < lo ? key_bits(t) : lo;
		hi = key_bits(t) > hi ? key_bits(t) : hi;
		ncap++;
	}
	if (!ncap)
		return 0;
	span = hi - lo > 1ULL << 52 ? hi - lo : 1ULL << 52;
	*ret_lo = lo > span / 2 ? lo - span / 2 : 0;
	*ret_hi = BITS_DBL_MAX - hi > span / 2 ? hi + span / 2 : BITS_DBL_MAX;
	return ncap * n / s;
}

/*
 * First pass: checks each demand (as validate_demands() does), works out its
 * growth a_i = w_i / delta_i, its class, its dominant resource and its cap level
 * t_i = max_units_i / a_i, and puts it in its bucket, or in its class's row if it
 * has no cap. Branch-free but for the rare cases, as the kinds of demands come in
 * any order. A shape entry is checked by its bits: those of non-negative finite
 * doubles are at most BITS_DBL_MAX; anything else, -0 included, goes to
 * validate_demands().
 */
static int fill_setup(struct filler *f, const struct resset *rs, size_t n, bool asset,
		      uint32_t *capped, size_t *ret_ncap, uint64_t *ret_minb, uint64_t *ret_maxb)
{
	const struct drf_demand *dem = f->p->demands;
	uint64_t minb = KEY_NONE, maxb = 0;
	size_t ncap = 0;

	for (size_t i = 0; i < n; i++) {
		const struct drf_demand *d = &dem[i];
		struct drf_share *s = &f->sh[i];
		double w = d->weight, mu = d->max_units, dmax = 0, dsum = 0, delta, a, t;
		double u[DRF_NRES];
		uint64_t bor = 0, b, wb, mb;
		unsigned c = 0, top = 0;
		bool fin;

#pragma GCC unroll 8
		for (int r = 0; r < DRF_NRES; r++) {
			double v;

			memcpy(&b, &d->shape[r], sizeof(b));
			b &= f->mask[r];
			bor |= b;
			memcpy(&v, &b, sizeof(v));
			s->alloc[r] = v;
			u[r] = v * f->inv[r];
			c |= (unsigned)(u[r] > 0) << r;
			dsum += u[r];
			dmax = max2(dmax, u[r]);
		}
		/* The first resource of the largest share, as a bit mask of those of it. */
#pragma GCC unroll 8
		for (int r = 0; r < DRF_NRES; r++)
			top |= (unsigned)!(u[r] < dmax) << r;
		f->dom[i] = (int8_t)(dmax > 0 ? __builtin_ctz(top) : -1);
		delta = asset ? dsum : dmax;
		memcpy(&wb, &w, sizeof(wb));
		memcpy(&mb, &mu, sizeof(mb));
		/*
		 * The common case in few instructions: weight in (0, DBL_MAX], max_units in
		 * (0, inf], no shape entry with its sign bit set, and a finite sum of the
		 * entries' shares (no entry inf or NaN).
		 */
		if (wb - 1 >= BITS_DBL_MAX || mb - 1 >= KEY_NONE || bor >> 63 ||
		    !(dsum <= DBL_MAX) || delta == 0) {
			struct drf_problem one = { .n = 1, .demands = d };

			/* Also refuses an unlimited demand that needs nothing. */
			if (validate_demands(&one, rs) < 0)
				return -EINVAL;
			if (delta == 0) {
				/* Needs nothing that is shared: fully served at once. */
				s->units = mu;
				s->dominant_share = INFINITY;
				share_set_a(s, 0);
				f->cls[i] = 0;
				continue;
			}
		}
		a = w / delta;
		t = mu * delta / w;
		fin = t <= DBL_MAX;
		b = select_bits(fin, key_bits(t), KEY_NONE);
		s->units = mu;
		s->dominant_share = key_level(b);
		share_set_a(s, a);
		f->cls[i] = (uint8_t)c;
		/*
		 * A capped tenant into its bucket, an unlimited one into the row of its
		 * class after the spare bucket (its use there, 0, is not looked at).
		 */
		bucket_put(f, (uint32_t)i, select_bits(fin, bucket_of(f, b), f->nb + 1 + c), b, a,
			   select_double(fin, mu, 0), u);
		capped[ncap] = (uint32_t)i;
		ncap += fin;
		minb = b < minb ? b : minb;
		maxb = (b & -(uint64_t)fin) > maxb ? b & -(uint64_t)fin : maxb;
	}
	*ret_ncap = ncap;
	*ret_minb = minb;
	*ret_maxb = maxb;
	return 0;
}

/* Last pass: every share written whole, in index order, from its tenant's outcome. */
static void fill_output(const struct filler *f, size_t n, struct drf_result *out)
{
	double used[DRF_NRES] = { 0 }, stop[NCLASS];
	int8_t stop_by[NCLASS];

	/* Per class: the first of its resources to run out, and when (none: +inf). */
	for (unsigned c = 0; c < NCLASS; c++) {
		int first = -1;

		for (int r = 0; r < DRF_NRES; r++)
			if ((c & f->sat) >> r & 1 &&
			    (first < 0 || f->sat_order[r] < f->sat_order[first]))
				first = r;
		stop_by[c] = (int8_t)first;
		stop[c] = first >= 0 ? f->sat_level[first] : INFINITY;
	}
	for (size_t i = 0; i < n; i++) {
		struct drf_share *s = &out->shares[i];
		unsigned c = f->cls[i];
		double mu = s->units, a = share_a(s), l, y, x, xa, best = 0;
		int best_r, dom = f->dom[i];
		bool met;

		l = stop[c];
		y = a * l;
		/* Met if its cap comes first; ties go to the cap. */
		met = s->dominant_share <= l;
		x = select_double(met | !(y < mu), mu, y);
		/* A tenant that needs nothing shared (a = 0) takes nothing, even x = inf. */
		xa = select_double(a > 0, x, 0);
#pragma GCC unroll 8
		for (int r = 0; r < DRF_NRES; r++) {
			s->alloc[r] *= xa;
			used[r] += s->alloc[r];
		}
		/* The dominant resource of x copies of the shape is the shape's. */
		if (dom >= 0 && a > 0) {
			best_r = dom;
			best = s->alloc[dom] * f->inv[dom];
		} else {
			memset(s->alloc, 0, sizeof(s->alloc));
			drf_shape_dominant(f->p, &f->p->demands[i], &best_r);
		}
		s->units = x;
		s->dominant_share = best;
		s->dominant_res = best_r;
		_Static_assert(DRF_LIMIT_DEMAND == -1, "all bits set");
		s->limited_by = stop_by[c] | -(int)met; /* DRF_LIMIT_DEMAND if met */
	}
	for (int r = 0; r < DRF_NRES; r++)
		out->unallocated[r] = f->mask[r] ? max2(0, f->p->capacity[r] - used[r]) : 0;
}

/*
 * Progressive filling of weighted DRF (delta = dominant share) or asset fairness
 * (delta = summed share), event to event. See the comment at the top.
 */
static int fill(const struct drf_problem *p, const struct resset *rs, enum drf_policy policy,
		struct drf_result *out, struct drf_engine *e)
{
	struct filler f = { .p = p };
	size_t n = p->n, ncap, nb_max, nb_want, most = 0;
	uint64_t minb, maxb, sample_lo, sample_hi;
	uint32_t *capped;
	void *own;
	char *at;
	int err;

	nb_max = n / PER_BUCKET < MAX_BUCKETS ? n / PER_BUCKET + 1 : MAX_BUCKETS;
	for (int k = 0; k < rs->m; k++) {
		f.inv[rs->res[k]] = 1 / p->capacity[rs->res[k]];
		f.mask[rs->res[k]] = UINT64_MAX;
	}
	f.sh = out->shares;
	at = scratch_get(e, 16 * 10 + n * (sizeof(*f.cls) + sizeof(*f.dom) + sizeof(*f.lim) +
					   3 * sizeof(*f.next) +
					  2 * sizeof(*f.keys)) +
				    (nb_max + 1 + NCLASS) * sizeof(*f.buckets), &own);
	if (!at)
		return -ENOMEM;
	f.keys = carve(&at, n * sizeof(*f.keys));
	f.tmp = carve(&at, n * sizeof(*f.tmp));
	f.next = carve(&at, n * sizeof(*f.next));
	f.bucket = carve(&at, n * sizeof(*f.bucket));
	capped = carve(&at, n * sizeof(*capped));
	f.cls = carve(&at, n * sizeof(*f.cls));
	f.dom = carve(&at, n * sizeof(*f.dom));
	f.lim = carve(&at, n * sizeof(*f.lim));
	f.buckets = carve(&at, (nb_max + 1 + NCLASS) * sizeof(*f.buckets));

	/*
	 * Buckets over the range of a sample's cap levels, filled by the first pass
	 * (without a sample, one bucket, done again below).
	 */
	if (sample_caps(&f, n, policy == DRF_POLICY_ASSET, &sample_lo, &sample_hi) / PER_BUCKET > 0)
		buckets_init(&f, sample_lo, sample_hi, nb_max);
	else
		buckets_init(&f, 0, 0, 1);
	err = fill_setup(&f, rs, n, policy == DRF_POLICY_ASSET, capped, &ncap, &minb, &maxb);
	if (err < 0) {
		free(own);
		return err;
	}
	for (unsigned c = 0; c < NCLASS; c++) {
		const struct bucket *row = &f.buckets[f.nb + 1 + c];

		f.cls_n[c] = row->cnt;
		for (int r = 0; r < DRF_NRES; r++) {
			f.cls_sum[c][r] = row->slope[r];
			f.unl[r] += row->slope[r];
		}
	}
	/*
	 * Cap levels into buckets by their bits, which order like the levels: again,
	 * over the levels' own range, if the sample left a bucket with many times its
	 * share of them (a resource running out in it would take them one by one).
	 */
	for (size_t b = 0; b < f.nb; b++)
		most = f.buckets[b].cnt > most ? f.buckets[b].cnt : most;
	nb_want = ncap / PER_BUCKET < nb_max ? ncap / PER_BUCKET + 1 : nb_max;
	if (most > 8 * PER_BUCKET + 8 * ncap / nb_want) {
		buckets_init(&f, minb, maxb, nb_want);
		for (size_t j = 0; j < ncap; j++) {
			uint32_t i = capped[j];
			const struct drf_share *s = &f.sh[i];
			double u[DRF_NRES];

			for (int r = 0; r < DRF_NRES; r++)
				u[r] = s->alloc[r] * f.inv[r];
			bucket_put(&f, i, bucket_of(&f, share_key(s)), share_key(s), share_a(s),
				   s->units, u);
		}
	}
	for (size_t b = 0; b < f.nb; b++)
		for (int r = 0; r < DRF_NRES; r++)
			f.capped[r] += f.buckets[b].slope[r];
	f.list = capped;
	f.nlist = ncap;
	for (f.cur = 0; f.cur < f.nb; f.cur++) {
		struct bucket *bk = &f.buckets[f.cur];
		double hi = key_level(bk->hi);
		bool whole = true;

		if (bk->cnt == 0)
			continue;
		f.done = f.cur;
#pragma GCC unroll 8
		for (int r = 0; r < DRF_NRES; r++)
			whole &= (f.sat >> r & 1) ||
				 f.used[r] + bk->use[r] +
				 (f.unl[r] + f.capped[r] - bk->slope[r]) * hi <= 1.0;
		if (!whole) {
			take_bucket_in_order(&f);
			continue;
		}
#pragma GCC unroll 8
		for (int r = 0; r < DRF_NRES; r++) {
			f.used[r] += bk->use[r];
			f.capped[r] -= bk->slope[r];
			f.removed[r] += bk->slope[r];
		}
		f.level = hi;
		f.done = f.cur + 1;
		check_slopes(&f);
	}
	/* Every capped tenant is met or stopped: on to the unlimited ones. */
	f.nlist = 0;
	memset(f.capped, 0, sizeof(f.capped));
	memset(f.removed, 0, sizeof(f.removed));
	while (unlimited_active(&f) > 0) {
		double l;
		int r = next_saturation(&f, &l);

		if (r < 0) {
			/*
			 * Only when a_i * u_ir underflows to 0: stop an active class where it
			 * is, on the first resource it needs.
			 */
			unsigned c = 0;

			while ((c & f.sat) || !f.cls_n[c])
				c++;
			for (r = 0; !(c >> r & 1); r++)
				;
			l = f.level;
		}
		saturate(&f, r, l);
	}
	fill_output(&f, n, out);
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
	err = validate_caps(p, &rs);
	if (err < 0)
		return err;
	/* fill() checks the demands as it reads them, and writes every share whole. */
	if (policy == DRF_POLICY_DRF || policy == DRF_POLICY_ASSET)
		return fill(p, &rs, policy, out, e);
	err = validate_demands(p, &rs);
	if (err < 0)
		return err;
	if (e) /* Every share starts from zero, as calloc() gives drf_allocate(). */
		memset(out->shares, 0, p->n * sizeof(*out->shares));
	err = policy == DRF_POLICY_PER_RESOURCE ? water_fill(p, &rs, out, e)
						: drf_fairfam_fill(p, policy, out);
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
