// SPDX-License-Identifier: MIT
/*
 * FDS, GFJ and CEEI. See fairfam.h for the contract.
 *
 * The method, and why it gives the optimum.
 *
 * Variables. gamma_i = c_i * x_i with c_i = delta_i (FDS), 1 / G (GFJ: G a common
 * scale near the task counts, which only multiplies f by G^-lambda) or 1 (CEEI).
 * Capacities are normalized to 1: one unit of gamma_i uses v_ir = u_ir / c_i of
 * resource r, u_ir = shape_ir / capacity_r, and gamma_i <= h_i = c_i * max_units_i.
 *
 * 1. Convexity. Write A = sum_i K_i gamma_i^(1-beta) with K_i = w_i^beta (w scaled
 *    to at most 1), S = sum_i gamma_i and a = lambda - (1 - beta) / beta. Then
 *    |f| = A^(1/beta) S^a. For beta < 1, with a >= 0 (drf_family_check()),
 *    log f = (1/beta) log A + a log S is concave: A is a positive concave function
 *    and log keeps that; log S is concave. For beta > 1, with a <= 0, maximizing f
 *    is minimizing (1/beta) log A + a log S, which is convex: each gamma^(1-beta)
 *    is log-convex and so is their positive sum; -log S is convex. At beta = 1 and
 *    for CEEI, sum_i K_i log gamma_i (K_i = w_i) is concave. The constraints are
 *    linear. So the KKT conditions are sufficient, and any point meeting them is
 *    an optimum.
 *
 * 2. Linearization. With Phi = sum_i K_i phi(gamma_i), phi(g) = g^(1-beta) / (1 - beta)
 *    (log g at beta = 1), A = (1 - beta) Phi and the gradient of the objective
 *    above (maximized form) is (|1 - beta| / (beta A)) * (grad Phi + theta * 1),
 *    theta = |a| beta |Phi| / S. So x is optimal iff it satisfies the KKT
 *    conditions of the separable program
 *      SEP(theta):  max sum_i K_i phi(gamma_i) + theta gamma_i
 *                   s.t. sum_i gamma_i v_i <= 1, 0 <= gamma_i <= h_i
 *    at theta = |a| beta |Phi(x)| / S(x). SEP is strictly concave in gamma, so its
 *    optimum gamma(theta) is unique and continuous in theta. On the alpha-fair line
 *    (a = 0) and for CEEI theta = 0 and one SEP is the answer. Otherwise we find a
 *    root of G(theta) = theta - |a| beta |Phi(gamma(theta))| / S(gamma(theta)) by
 *    bisection: G(0) < 0, we double theta until G > 0 (for beta < 1 G increases,
 *    as S(gamma(theta)) cannot fall and Phi cannot rise as theta grows, so
 *    theta = -G(0) is past the root; for beta > 1 at most THETA_STEPS doublings),
 *    and by 1. any root is the optimum, so it does not matter which one the
 *    bisection finds.
 *
 * 3. SEP by its dual. D(p) = sum_r p_r + sum_i max_{0 <= g <= h_i} (K_i phi(g) +
 *    theta g - q_i g), q_i = sum_r p_r v_ir, is convex in p >= 0 and, as each
 *    inner maximizer is unique, differentiable with dD/dp_r = 1 - use_r, where
 *    gamma_i(q) = min(h_i, (K_i / (q - theta))^(1/beta)). Slater holds (small
 *    gamma > 0 fits strictly), so there is no duality gap: p minimizes D iff
 *    p >= 0, use <= 1 and p_r (1 - use_r) = 0, and then gamma(p) solves SEP.
 *    That is the stopping test below: 1e-14 of each capacity sought, 1e-9 plus
 *    what rounding of q - theta leaves (attainable()) accepted. p has at most
 *    DRF_NRES entries, so projected Newton (Hessian sum_i s_i v_i v_i^T, s_i =
 *    -d gamma_i / d q) with an exact line search on the directional derivative,
 *    which is monotone because D is convex, costs O(n m^2) per step; a step
 *    along each single price follows, so every round lowers D even where the
 *    Newton model (blind to capped tenants about to leave their caps) is poor.
 *
 * 4. Where it gives up. For theta > 0 far above the root, SEP nears the linear
 *    program max S and D is nearly piecewise linear: Newton may not reach the
 *    tolerance in NEWTON_MAX rounds. Such a theta is taken as above the root
 *    (it only narrows the bracket); if the bracket does not close, -ERANGE.
 *    Where the dual fails below the root too (large beta, where theta is
 *    orders of magnitude above the prices' differences, q - theta lost to
 *    rounding), that bracket holds no root: G at its low end is then far from
 *    0, and that is -ERANGE as well, not the low end's allocation (GFJ at beta
 *    20 gave a point 0.04 off in log f before this check).
 *    On the alpha-fair line (theta = 0) this has not happened in the tests'
 *    random instances except once in 10,000 for GFJ at beta near 7. Off the
 *    line the accepted residual (attainable()) can reach ~1e-5 of a capacity,
 *    and the allocation is then that far from the optimum.
 *
 * The answer is scaled down by the last rounding of use above 1, so it is
 * feasible exactly as alloc.h asks, and complete() makes it Pareto-efficient
 * whatever the solver left.
 */
#include "fairfam.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* KKT residual, in capacities, at which the dual is solved; and the worst accepted. */
#define KKT_TOL 1e-14
#define KKT_ACCEPT 1e-9
#define NEWTON_MAX 300
#define THETA_STEPS 200
/* |G(theta)| / theta accepted at the root found: where the dual converged, 1e-15 to
 * 1.1e-7 was seen (FDS, beta 20, lambda -4.95, ten tenants); 167 and more where
 * the bracket held no root (GFJ, beta 20). */
#define ROOT_ACCEPT 1e-6

double drf_family_alpha_lambda(double beta)
{
	return (1 - beta) / beta;
}

int drf_family_check(double beta, double lambda, const char **ret_why)
{
	const char *why = NULL;
	double line;

	if (!(beta > 0) || !(beta <= DRF_FAMILY_BETA_MAX))
		why = "beta must be above 0 and at most 100";
	else if (!isfinite(lambda))
		why = "lambda must be a finite number";
	else {
		line = drf_family_alpha_lambda(beta);
		if (beta == 1 && fabs(lambda) > DRF_FAMILY_LAMBDA_SLACK)
			why = "at beta = 1 only lambda = 0 gives Pareto-efficient allocations";
		else if (beta < 1 && lambda < line - DRF_FAMILY_LAMBDA_SLACK)
			why = "with beta below 1, lambda below (1 - beta) / beta gives allocations "
			      "that are not Pareto-efficient";
		else if (beta > 1 && lambda > line + DRF_FAMILY_LAMBDA_SLACK)
			why = "with beta above 1, lambda above (1 - beta) / beta gives allocations "
			      "that are not Pareto-efficient";
	}
	if (ret_why)
		*ret_why = why;
	return why ? -EDOM : 0;
}

void drf_family_resolve(const struct drf_family *fam, double *ret_beta, double *ret_lambda)
{
	if (fam->beta != 0) {
		*ret_beta = fam->beta;
		*ret_lambda = fam->lambda;
	} else {
		*ret_beta = DRF_FAMILY_BETA_DEFAULT;
		*ret_lambda = drf_family_alpha_lambda(DRF_FAMILY_BETA_DEFAULT);
	}
}

void drf_family_of(const struct drf_problem *p, double *ret_beta, double *ret_lambda)
{
	drf_family_resolve(&p->family, ret_beta, ret_lambda);
}

const char *drf_policy_label(int policy, const struct drf_family *fam, char *buf, size_t len)
{
	double beta, lambda;

	if (policy != DRF_POLICY_FDS && policy != DRF_POLICY_GFJ)
		return drf_policy_name(policy);
	drf_family_resolve(fam, &beta, &lambda);
	snprintf(buf, len, "%s(beta=%g,lambda=%g)", drf_policy_name(policy), beta, lambda);
	return buf;
}

/* The tenants that take part, in the units of the comment at the top. */
struct fam {
	size_t n;
	int m;
	double beta, theta;
	double *v;       /* n * m */
	double *logk, *h, *c, *gam, *slope;
	unsigned char *capped;
	size_t *idx;     /* the tenant's index in the problem */
};

/* gamma_i at task price q; its slope -d gamma / d q. Returns false outside D's domain. */
static bool respond(const struct fam *f, size_t i, double q)
{
	double e = q - f->theta, lg;

	if (!(e > 0)) {
		if (isinf(f->h[i]))
			return false;
		f->gam[i] = f->h[i];
		f->slope[i] = 0;
		f->capped[i] = 1;
		return true;
	}
	lg = (f->logk[i] - log(e)) / f->beta;
	if (lg >= log(f->h[i])) {
		f->gam[i] = f->h[i];
		f->slope[i] = 0;
		f->capped[i] = 1;
		return true;
	}
	f->gam[i] = exp(lg);
	f->slope[i] = f->gam[i] / (f->beta * e);
	f->capped[i] = 0;
	return isfinite(f->gam[i]);
}

static double price(const struct fam *f, size_t i, const double *p)
{
	double q = 0;

	for (int r = 0; r < f->m; r++)
		q += p[r] * f->v[i * (size_t)f->m + (size_t)r];
	return q;
}

/* Responses at p, and the gradient 1 - use. False outside the domain. */
static bool eval(struct fam *f, const double *p, double *g)
{
	for (int r = 0; r < f->m; r++)
		g[r] = 1;
	for (size_t i = 0; i < f->n; i++) {
		if (!respond(f, i, price(f, i, p)))
			return false;
		for (int r = 0; r < f->m; r++)
			g[r] -= f->gam[i] * f->v[i * (size_t)f->m + (size_t)r];
	}
	return true;
}

/* d/dt D(p + t d) at t (+inf outside the domain, where it grows without bound). */
static double slope_along(struct fam *f, const double *p, const double *d, double t)
{
	double pt[DRF_NRES], g[DRF_NRES], s = 0;

	for (int r = 0; r < f->m; r++)
		pt[r] = fmax(0, p[r] + t * d[r]);
	if (!eval(f, pt, g))
		return INFINITY;
	for (int r = 0; r < f->m; r++)
		s += g[r] * d[r];
	return s;
}

/* Solves A x = b (k x k, A overwritten) by elimination with partial pivoting. */
static bool solve(double *A, double *b, int k)
{
	for (int c = 0; c < k; c++) {
		int piv = c;

		for (int r = c + 1; r < k; r++)
			if (fabs(A[r * k + c]) > fabs(A[piv * k + c]))
				piv = r;
		if (!(fabs(A[piv * k + c]) > 0))
			return false;
		if (piv != c) {
			for (int j = 0; j < k; j++) {
				double t = A[c * k + j];

				A[c * k + j] = A[piv * k + j];
				A[piv * k + j] = t;
			}
			double t = b[c];
			b[c] = b[piv];
			b[piv] = t;
		}
		for (int r = c + 1; r < k; r++) {
			double l = A[r * k + c] / A[c * k + c];

			for (int j = c; j < k; j++)
				A[r * k + j] -= l * A[c * k + j];
			b[r] -= l * b[c];
		}
	}
	for (int c = k - 1; c >= 0; c--) {
		for (int j = c + 1; j < k; j++)
			b[c] -= A[c * k + j] * b[j];
		b[c] /= A[c * k + c];
	}
	return true;
}

static double kkt_residual(const struct fam *f, const double *p, const double *g)
{
	double worst = 0;

	for (int r = 0; r < f->m; r++)
		worst = fmax(worst, p[r] > 0 ? fabs(g[r]) : fmax(0, -g[r]));
	return worst;
}

/*
 * A scale for prices: the largest one, or the price at which a capped tenant
 * would start to take less than its cap.
 */
static double price_scale(const struct fam *f, const double *p)
{
	double sc = 0;

	for (int r = 0; r < f->m; r++)
		sc = fmax(sc, p[r]);
	for (size_t i = 0; i < f->n; i++) {
		double vmax = 0;

		for (int r = 0; r < f->m; r++)
			vmax = fmax(vmax, f->v[i * (size_t)f->m + (size_t)r]);
		if (!isinf(f->h[i]))
			sc = fmax(sc, (f->theta + exp(f->logk[i] - f->beta * log(f->h[i]))) / vmax);
	}
	return sc > 0 && isfinite(sc) ? sc : 1;
}

/* The Newton direction on the free variables with curvature (0 elsewhere, or if singular). */
static void newton_step(const struct fam *f, const double *g, const unsigned char *free_r,
			double *d)
{
	double H[DRF_NRES * DRF_NRES], b[DRF_NRES], maxdiag = 0;
	int fr[DRF_NRES], k = 0, m = f->m;
	bool curved[DRF_NRES];

	for (int r = 0; r < m; r++) {
		d[r] = 0;
		if (free_r[r])
			fr[k++] = r;
	}
	for (int a = 0; a < k; a++) {
		for (int c = 0; c < k; c++) {
			double h = 0;

			for (size_t i = 0; i < f->n; i++)
				h += f->slope[i] * f->v[i * (size_t)m + (size_t)fr[a]] *
				     f->v[i * (size_t)m + (size_t)fr[c]];
			H[a * k + c] = h;
		}
		maxdiag = fmax(maxdiag, H[a * k + a]);
		b[a] = -g[fr[a]];
	}
	/*
	 * A resource without curvature (only capped tenants use it) is left to the
	 * single-resource steps of dual_solve(): a tiny ridge keeps the rest solvable.
	 */
	for (int a = 0; a < k; a++) {
		curved[a] = H[a * k + a] > 0;
		H[a * k + a] += 1e-13 * maxdiag;
	}
	if (!(maxdiag > 0) || !solve(H, b, k))
		return;
	for (int a = 0; a < k; a++)
		if (curved[a])
			d[fr[a]] = b[a];
}

/*
 * A start inside the domain: the same price P on every resource, P chosen so
 * that the use summed over resources is about m (a start only; Newton does the rest).
 */
static bool dual_start(struct fam *f, double *p)
{
	double g[DRF_NRES], pmin = 0, lo, hi, P;

	for (size_t i = 0; i < f->n; i++) {
		double vs = 0;

		if (!isinf(f->h[i]))
			continue;
		for (int r = 0; r < f->m; r++)
			vs += f->v[i * (size_t)f->m + (size_t)r];
		pmin = fmax(pmin, f->theta / vs);
	}
	/* use(P) falls as P grows; bisect log(P - pmin) between two bounds. */
	lo = -700;
	hi = 700;
	for (int k = 0; k < 80; k++) {
		double mid = (lo + hi) / 2, tot = 0;

		P = pmin + exp(mid);
		for (int r = 0; r < f->m; r++)
			p[r] = P;
		if (!eval(f, p, g)) {
			lo = mid;
			continue;
		}
		for (int r = 0; r < f->m; r++)
			tot += 1 - g[r];
		if (tot > f->m)
			lo = mid;
		else
			hi = mid;
	}
	/* Everything fits however low the price: only capped tenants, p = 0. */
	P = hi <= -699 ? 0 : pmin + exp(hi);
	for (int r = 0; r < f->m; r++)
		p[r] = P;
	return eval(f, p, g);
}

/*
 * What rounding leaves of the KKT residual: gamma_i depends on q_i - theta, whose
 * rounding error is about eps * (q_i + theta), so where theta dominates (FDS and
 * GFJ far off the alpha-fair line) use is only known to that much.
 */
static double attainable(const struct fam *f, const double *p)
{
	double worst = 0, use[DRF_NRES] = { 0 };

	for (size_t i = 0; i < f->n; i++) {
		double q = price(f, i, p), rel;

		if (f->capped[i])
			continue;
		rel = 4 * DBL_EPSILON * (q + f->theta) / (q - f->theta) / f->beta;
		for (int r = 0; r < f->m; r++)
			use[r] += rel * f->gam[i] * f->v[i * (size_t)f->m + (size_t)r];
	}
	for (int r = 0; r < f->m; r++)
		worst = fmax(worst, use[r]);
	return worst;
}

/*
 * Exact line search from p along d, p + t d >= 0 for t <= the largest such t:
 * the root of the monotone slope. Where tenants are about to leave their caps the
 * Newton model (which sees no curvature from capped tenants) is off by orders of
 * magnitude either way, so it brackets geometrically from t = 1, then bisects to
 * a tenth of the starting slope. Moves p; false if no step lowers D.
 */
static bool line_step(struct fam *f, double *p, const double *d, const double *g)
{
	double tmax = INFINITY, s0 = 0, lo, hi, s, t;
	int hit = -1, m = f->m;

	for (int r = 0; r < m; r++) {
		s0 += g[r] * d[r];
		if (d[r] < 0 && p[r] / -d[r] < tmax) {
			tmax = p[r] / -d[r];
			hit = r;
		}
	}
	if (!(s0 < 0))
		return false;
	if (!(tmax > 1e-300)) {
		/* A price already next to 0 that should fall: 0, if D still falls there. */
		double keep, g0[DRF_NRES];

		if (hit < 0 || !(slope_along(f, p, d, tmax) <= 0))
			return false;
		keep = p[hit];
		p[hit] = 0;
		if (eval(f, p, g0))
			return true;
		p[hit] = keep;
		return false;
	}
	lo = hi = fmin(1, tmax);
	s = slope_along(f, p, d, lo);
	if (s <= 0) {
		while (s < 0 && lo < tmax && lo < 1e300) {
			hi = fmin(lo * 16, tmax);
			s = slope_along(f, p, d, hi);
			if (s <= 0)
				lo = hi;
		}
	} else {
		while (s > 0 && lo > 1e-300) {
			hi = lo;
			lo /= 16;
			s = slope_along(f, p, d, lo);
		}
		if (s > 0)
			return false;
	}
	for (int j = 0; j < 200 && hi > lo && s < 0.1 * s0; j++) {
		double mid = (lo + hi) / 2;

		s = slope_along(f, p, d, mid);
		if (s > 0)
			hi = mid;
		else
			lo = mid;
	}
	t = lo;
	for (int r = 0; r < m; r++)
		p[r] = fmax(0, p[r] + t * d[r]);
	/* At the bound, the price is 0 (not what rounding left), if that is in the domain. */
	if (t == tmax && hit >= 0 && p[hit] != 0) {
		double keep = p[hit], g1[DRF_NRES];

		p[hit] = 0;
		if (!eval(f, p, g1))
			p[hit] = keep;
	}
	return true;
}

/*
 * Minimizes D over p >= 0, from p if warm and inside the domain, else from
 * dual_start(). Each round: a projected Newton step on the resources with
 * curvature, then an exact step along each free resource on its own (which is
 * what moves a resource only capped tenants use, and keeps every round a
 * descent whatever the Newton model says).
 */
static int dual_solve(struct fam *f, double *p, bool warm)
{
	double g[DRF_NRES], res = INFINITY;
	int m = f->m;

	if ((!warm || !eval(f, p, g)) && !dual_start(f, p))
		return -ERANGE;
	for (int it = 0; it < NEWTON_MAX; it++) {
		double d[DRF_NRES];
		unsigned char free_r[DRF_NRES];
		bool moved;

		if (!eval(f, p, g))
			return -ERANGE;
		res = kkt_residual(f, p, g);
		if (res <= KKT_TOL || (it > 20 && res <= 0.5 * attainable(f, p)))
			return 0;
		/* Free variables: priced, or at 0 with use above capacity. */
		for (int r = 0; r < m; r++)
			free_r[r] = p[r] > 0 || g[r] < 0;
		/*
		 * One at 0 that the step would push below is held there and the step
		 * solved again (projected Newton: near the optimum that is the optimum's
		 * face, where D is smooth).
		 */
		for (int again = 1; again;) {
			again = 0;
			newton_step(f, g, free_r, d);
			for (int r = 0; r < m; r++)
				if (free_r[r] && p[r] == 0 && d[r] < 0) {
					free_r[r] = 0;
					again = 1;
				}
		}
		moved = line_step(f, p, d, g);
		for (int r = 0; r < m; r++) {
			double h = 0;

			if (!eval(f, p, g))
				return -ERANGE;
			if (!(p[r] > 0 || g[r] < 0) || fabs(g[r]) <= KKT_TOL)
				continue;
			for (size_t i = 0; i < f->n; i++)
				h += f->slope[i] * f->v[i * (size_t)m + (size_t)r] *
				     f->v[i * (size_t)m + (size_t)r];
			memset(d, 0, sizeof(d));
			/* Its own Newton step if it has curvature, else its price's scale. */
			d[r] = h > 0 ? -g[r] / h : -copysign(price_scale(f, p), g[r]);
			moved |= line_step(f, p, d, g);
		}
		if (!moved)
			break; /* rounding: no step lowers D */
	}
	if (!eval(f, p, g))
		return -ERANGE;
	res = kkt_residual(f, p, g);
	return res <= KKT_ACCEPT + attainable(f, p) ? 0 : -ERANGE;
}

/* log of sum_i K_i gamma_i^(1-beta) (beta != 1), or sum_i K_i log gamma_i; and S. */
static void objective_parts(const struct fam *f, double *ret_logabsphi, double *ret_s)
{
	double mx = -INFINITY, sum = 0, s = 0;

	for (size_t i = 0; i < f->n; i++) {
		s += f->gam[i];
		mx = fmax(mx, f->logk[i] + (1 - f->beta) * log(f->gam[i]));
	}
	for (size_t i = 0; i < f->n; i++)
		sum += exp(f->logk[i] + (1 - f->beta) * log(f->gam[i]) - mx);
	*ret_logabsphi = mx + log(sum) - log(fabs(1 - f->beta));
	*ret_s = s;
}

/* G(theta) = theta - |a| beta |Phi| / S at SEP(theta)'s optimum; p is warm. */
static int root_fn(struct fam *f, double theta, double absa, double *p, double *ret_g)
{
	double lphi, s;
	int err;

	f->theta = theta;
	err = dual_solve(f, p, true);
	if (err < 0)
		return err;
	objective_parts(f, &lphi, &s);
	*ret_g = theta - absa * f->beta * exp(lphi) / s;
	return isfinite(*ret_g) ? 0 : -ERANGE;
}

static int optimize(struct fam *f, double a)
{
	double p[DRF_NRES] = { 0 }, plo[DRF_NRES], lo = 0, hi, glo, ghi;
	int err;

	f->theta = 0;
	err = dual_solve(f, p, false);
	if (err < 0 || a == 0)
		return err;
	err = root_fn(f, 0, fabs(a), p, &glo);
	if (err < 0)
		return err;
	memcpy(plo, p, sizeof(p));
	hi = -glo;
	/*
	 * Far above the root SEP nears the linear program max S, whose dual Newton
	 * may not reach the tolerance: a theta where it does not counts as above
	 * the root, which only narrows the bracket from above.
	 */
	for (int k = 0;; k++) {
		err = root_fn(f, hi, fabs(a), p, &ghi);
		if (err == -ERANGE || (err == 0 && ghi >= 0))
			break;
		if (err < 0)
			return err;
		if (k == THETA_STEPS)
			return -ERANGE;
		lo = hi;
		glo = ghi;
		memcpy(plo, p, sizeof(p));
		hi *= 2;
	}
	for (int k = 0; k < THETA_STEPS && hi - lo > 1e-14 * hi; k++) {
		double mid = (lo + hi) / 2, gm;

		/* A higher theta only raises the prices' floor: start from the lower end's. */
		memcpy(p, plo, sizeof(p));
		err = root_fn(f, mid, fabs(a), p, &gm);
		if (err < 0 && err != -ERANGE)
			return err;
		if (err == 0 && gm < 0) {
			lo = mid;
			glo = gm;
			memcpy(plo, p, sizeof(p));
		} else {
			hi = mid;
		}
	}
	if (hi - lo > 1e-12 * hi)
		return -ERANGE;
	/*
	 * G is continuous, so at the root G(lo) is next to 0. A theta taken as above
	 * the root because the dual did not converge there may have been below it:
	 * then the bracket held no root and G(lo) is still far below 0. Gave up.
	 */
	if (-glo > ROOT_ACCEPT * lo)
		return -ERANGE;
	memcpy(p, plo, sizeof(p));
	f->theta = hi;
	if (dual_solve(f, p, true) == 0)
		return 0;
	memcpy(p, plo, sizeof(p));
	f->theta = lo;
	return dual_solve(f, p, true);
}

/*
 * Pareto completion. Where the solver stopped short of its tolerance (it accepts
 * what rounding of q - theta leaves, which off the alpha-fair line can be far
 * more than 1e-12), a tenant short of its cap may need no used-up resource. Such
 * tenants are raised together, in proportion, until a resource they need is used
 * up or they reach their caps, as progressive filling would: at most n + m
 * rounds. The optimum is Pareto-efficient, so this moves the answer only by what
 * the solver left; use[] is updated.
 */
static void complete(struct fam *f, double *use)
{
	const double full_at = 1 - 1e-12;
	int m = f->m;

	for (size_t round = 0; round <= f->n + (size_t)m; round++) {
		double rate[DRF_NRES] = { 0 }, t = INFINITY;
		int stop_r = -1;
		bool any = false;

		/* Summed afresh each round: what the caller reads is the allocation's own use. */
		for (int r = 0; r < m; r++)
			use[r] = 0;
		for (size_t j = 0; j < f->n; j++)
			for (int r = 0; r < m; r++)
				use[r] += f->gam[j] * f->v[j * (size_t)m + (size_t)r];

		for (size_t j = 0; j < f->n; j++) {
			bool blocked = f->capped[j] || !(f->gam[j] > 0);

			for (int r = 0; r < m && !blocked; r++)
				blocked = f->v[j * (size_t)m + (size_t)r] > 0 && use[r] >= full_at;
			f->slope[j] = blocked ? 0 : 1; /* reused: raised this round */
			if (blocked)
				continue;
			any = true;
			for (int r = 0; r < m; r++)
				rate[r] += f->gam[j] * f->v[j * (size_t)m + (size_t)r];
			if (!isinf(f->h[j]))
				t = fmin(t, f->h[j] / f->gam[j] - 1);
		}
		if (!any)
			return;
		for (int r = 0; r < m; r++)
			if (rate[r] > 0 && (1 - use[r]) / rate[r] < t) {
				t = (1 - use[r]) / rate[r];
				stop_r = r;
			}
		if (!(t > 0) || !isfinite(t))
			return;
		for (size_t j = 0; j < f->n; j++) {
			if (f->slope[j] == 0)
				continue;
			f->gam[j] *= 1 + t;
			if (!isinf(f->h[j]) && f->gam[j] >= f->h[j] * (1 - 1e-15)) {
				f->gam[j] = f->h[j];
				f->capped[j] = 1;
			}
		}
		(void)stop_r;
	}
}

static void fam_free(struct fam *f)
{
	free(f->v);
	free(f->logk);
	free(f->h);
	free(f->c);
	free(f->gam);
	free(f->slope);
	free(f->capped);
	free(f->idx);
}

int drf_fairfam_fill(const struct drf_problem *p, enum drf_policy policy, struct drf_result *out)
{
	struct fam f = { 0 };
	int res[DRF_NRES], m = 0, err = 0;
	double beta = 1, lambda = 0, a = 0, wmax = 0, logscale = 0, use[DRF_NRES] = { 0 }, over = 1;
	size_t n = p->n, k = 0;

	if (policy == DRF_POLICY_FDS || policy == DRF_POLICY_GFJ) {
		drf_family_of(p, &beta, &lambda);
		if (drf_family_check(beta, lambda, NULL) < 0)
			return -EDOM;
		/* On the line within the slack: exactly on it (a = 0 takes the one-SEP path). */
		a = lambda - drf_family_alpha_lambda(beta);
		if (fabs(a) <= DRF_FAMILY_LAMBDA_SLACK || beta == 1)
			a = 0;
	} else if (policy != DRF_POLICY_CEEI) {
		return -EINVAL;
	}
	for (int r = 0; r < DRF_NRES; r++)
		if (p->capacity[r] > 0)
			res[m++] = r;
	f.m = m;
	f.beta = beta;
	f.v = malloc((n * (size_t)m + 1) * sizeof(double));
	f.logk = malloc((n + 1) * sizeof(double));
	f.h = malloc((n + 1) * sizeof(double));
	f.c = malloc((n + 1) * sizeof(double));
	f.gam = malloc((n + 1) * sizeof(double));
	f.slope = malloc((n + 1) * sizeof(double));
	f.capped = malloc(n + 1);
	f.idx = malloc((n + 1) * sizeof(size_t));
	if (!f.v || !f.logk || !f.h || !f.c || !f.gam || !f.slope || !f.capped || !f.idx) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		wmax = fmax(wmax, p->demands[i].weight);
	/* GFJ's scale: the geometric mean of the task counts each tenant could run alone. */
	if (policy == DRF_POLICY_GFJ) {
		size_t cnt = 0;

		for (size_t i = 0; i < n; i++) {
			double dl = drf_shape_dominant(p, &p->demands[i], NULL);

			if (dl > 0) {
				logscale += log(dl);
				cnt++;
			}
		}
		logscale = cnt ? logscale / (double)cnt : 0;
	}
	for (size_t i = 0; i < n; i++) {
		const struct drf_demand *d = &p->demands[i];
		struct drf_share *s = &out->shares[i];
		double dl = drf_shape_dominant(p, d, NULL), c;

		if (!(dl > 0)) {
			/* Needs nothing shared: its whole demand, which takes nothing. */
			s->units = d->max_units;
			s->limited_by = DRF_LIMIT_DEMAND;
			continue;
		}
		c = policy == DRF_POLICY_FDS ? dl : policy == DRF_POLICY_GFJ ? exp(logscale) : 1;
		f.c[k] = c;
		f.h[k] = c * d->max_units;
		f.logk[k] = beta * log(d->weight / wmax);
		for (int j = 0; j < m; j++)
			f.v[k * (size_t)m + (size_t)j] = d->shape[res[j]] / p->capacity[res[j]] / c;
		f.idx[k++] = i;
	}
	f.n = k;
	if (k > 0) {
		err = optimize(&f, a);
		if (err < 0)
			goto out;
	}
	for (size_t j = 0; j < k; j++)
		for (int r = 0; r < m; r++)
			use[r] += f.gam[j] * f.v[j * (size_t)m + (size_t)r];
	for (int r = 0; r < m; r++)
		over = fmax(over, use[r]);
	if (over > 1) {
		/* Scaled down, a capped tenant is short of its cap: complete() may raise it. */
		for (size_t j = 0; j < k; j++) {
			f.gam[j] /= over;
			f.capped[j] = 0;
		}
		for (int r = 0; r < m; r++)
			use[r] /= over;
	}
	complete(&f, use);
	for (size_t j = 0; j < k; j++) {
		size_t i = f.idx[j];
		const struct drf_demand *d = &p->demands[i];
		struct drf_share *s = &out->shares[i];
		double x = f.gam[j] / f.c[j], best = -1;

		if (f.capped[j])
			x = d->max_units;
		s->units = x;
		s->limited_by = DRF_LIMIT_DEMAND;
		for (int r = 0; r < m; r++)
			s->alloc[res[r]] = x * d->shape[res[r]];
		/* at its cap, or within rounding of it (11.999999999999998 of 12 tasks):
		 * its demand is what stops it, as the exact policies say */
		if (f.capped[j] || x >= d->max_units * (1 - 1e-9))
			continue;
		/* Stopped by the fullest resource it needs (used up, by the KKT test). */
		for (int r = 0; r < m; r++)
			if (f.v[j * (size_t)m + (size_t)r] > 0 && use[r] > best) {
				best = use[r];
				s->limited_by = res[r];
			}
	}
out:
	fam_free(&f);
	return err;
}
