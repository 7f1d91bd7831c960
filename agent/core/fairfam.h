/* SPDX-License-Identifier: MIT */
/*
 * The fairness-efficiency families FDS and GFJ (Joe-Wong, Sen, Lan, Chiang) and
 * CEEI (the Eisenberg-Gale program), as policies of drf_allocate(). Pure: no I/O.
 *
 * Every tenant i gets x_i copies of its shape (its units, as alloc.h says), within
 * the capacities and its max_units. What is maximized:
 *
 *   FDS  f(gamma) = sgn(1 - beta) * (sum_i w_i^beta gamma_i^(1-beta) S^(beta-1))^(1/beta) * S^lambda,
 *        gamma_i = x_i * delta_i (its dominant share), S = sum_i gamma_i;
 *   GFJ  the same with gamma_i = x_i (the task count: "fairness on jobs");
 *   CEEI sum_i w_i log x_i (Eisenberg-Gale: each tenant spends a budget w_i on
 *        tasks at market prices; with equal weights, equal incomes).
 *
 * With w_i = 1 the families are the seed's: (sum_i (gamma_i / S)^(1-beta))^(1/beta) *
 * S^lambda. A weight w counts as w tenants sharing the tenant's allocation equally
 * (for whole w that is exact), so beta -> infinity gives weighted max-min of
 * gamma_i / w_i (FDS: weighted DRF) and beta = 1 gives sum_i w_i log gamma_i.
 * beta = 1 is taken as that limit (the family's alpha-fair line below, at alpha =
 * 1), where FDS, GFJ and CEEI coincide: proportional fairness.
 *
 * On lambda = (1 - beta) / beta the objective is alpha-fairness with alpha = beta:
 * sum_i w_i^beta gamma_i^(1-beta) / (1 - beta).
 *
 * Parameters whose optimum need not be Pareto-efficient are refused (see
 * drf_family_check()). Tenants that need no participating resource get their
 * whole demand and take no part.
 */
#ifndef DRF_FAIRFAM_H
#define DRF_FAIRFAM_H

#include "problem.h"

/* beta in (0, DRF_FAMILY_BETA_MAX]: beyond it x^-beta leaves the doubles. */
#define DRF_FAMILY_BETA_MAX 100.0
#define DRF_FAMILY_BETA_DEFAULT 2.0
/* lambda this close to (1 - beta) / beta is taken as on that line. */
#define DRF_FAMILY_LAMBDA_SLACK 1e-9

/* (1 - beta) / beta: the alpha-fair lambda, and the default when none is given. */
double drf_family_alpha_lambda(double beta);

/*
 * 0 if (beta, lambda) define a Pareto-efficient FDS or GFJ, else -EDOM with
 * *ret_why (when not NULL) pointing at a static phrase saying why:
 *   beta not in (0, 100];
 *   beta < 1 and lambda < (1 - beta) / beta;
 *   beta > 1 and lambda > (1 - beta) / beta;
 *   beta = 1 and lambda != 0.
 * Why: write A = sum_j w_j^beta gamma_j^(1-beta) and a = lambda - (1 - beta) / beta,
 * so |f| = A^(1/beta) S^a and S * d log|f| / d gamma_i = ((1 - beta) / beta) *
 * w_i^beta gamma_i^-beta S / A + a. The first term has the sign of 1 - beta and
 * can be made as small as one likes (one tenant far larger than the rest, or many
 * small ones). So f grows with every gamma_i in every allocation iff a is 0 or
 * has the sign of 1 - beta; otherwise some instance has its optimum where giving
 * a tenant more lowers f, with capacity left over that nobody takes.
 */
int drf_family_check(double beta, double lambda, const char **ret_why);

/* The parameters fam asks for: its own, or (beta 0) beta 2 on the alpha-fair line. */
void drf_family_resolve(const struct drf_family *fam, double *ret_beta, double *ret_lambda);
/* The same for p->family. */
void drf_family_of(const struct drf_problem *p, double *ret_beta, double *ret_lambda);

/*
 * A policy's name, with its beta and lambda for fds and gfj (as drf_family_of()
 * reads fam): "fds(beta=3,lambda=-0.666667)". Returns buf, or the bare name.
 */
const char *drf_policy_label(int policy, const struct drf_family *fam, char *buf, size_t len);

/*
 * For alloc.c: fills units, alloc and limited_by of out's n zeroed shares for a
 * problem drf_allocate() has validated, under DRF_POLICY_FDS, _GFJ or _CEEI.
 * Returns 0, -EDOM for refused parameters, -ENOMEM, or -ERANGE if the solver
 * gave up short of its tolerance: with lambda far off (1 - beta) / beta, where
 * the program nears a linear one (fairfam.c, 4.), and rarely on the line (once
 * in the tests' 10,000 random GFJ instances).
 */
int drf_fairfam_fill(const struct drf_problem *p, enum drf_policy policy,
		     struct drf_result *out);

#endif
