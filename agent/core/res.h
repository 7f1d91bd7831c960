/* SPDX-License-Identifier: MIT */
/*
 * The resources drfd shares, their names in config and JSON, and the parsing and
 * printing of their units. Pure: no I/O.
 */
#ifndef DRF_RES_H
#define DRF_RES_H

#include <stddef.h>

enum drf_res {
	DRF_RES_CPU,      /* cores */
	DRF_RES_MEMORY,   /* bytes */
	DRF_RES_IO_READ,  /* bytes/s */
	DRF_RES_IO_WRITE, /* bytes/s */
	DRF_RES_NET,      /* bits/s, egress */
	DRF_RES_NET_IN,   /* bits/s, ingress */
	DRF_NRES,
};

enum drf_unit {
	DRF_UNIT_CORES,   /* plain decimal */
	DRF_UNIT_BYTES,   /* K, M, G, T: powers of 1024 */
	DRF_UNIT_BITS,    /* kbit, mbit, gbit: powers of 1000, as tc(8) */
};

/* Config and JSON name of a resource: "cpu", "memory", "io-read-bps", ... */
const char *drf_res_name(enum drf_res r);
/* Resource index of a name, or -1. */
int drf_res_from_name(const char *name);
enum drf_unit drf_res_unit(enum drf_res r);

/*
 * Parse a non-negative quantity in the given unit family. Accepts digits with an
 * optional fraction ("1.5G"), nothing else: no sign, exponent, hex, spaces, inf
 * or nan. On failure returns a negative errno and, when ret_why is not NULL,
 * points it at a static phrase saying what is wrong:
 *   -EINVAL  malformed number, -ERANGE  negative or too large,
 *   -ENOENT  unknown unit.
 */
int drf_parse_quantity(const char *s, enum drf_unit unit, double *ret, const char **ret_why);

/*
 * For a quantity drf_parse_quantity refused for its unit: what was probably
 * meant, as a phrase for the error ("did you mean '8G'?" for 8GB, "cpu is in
 * cores: did you mean '1.5'?" for 150%), in buf; NULL when nothing is near.
 */
const char *drf_quantity_hint(const char *s, enum drf_unit unit, char *buf, size_t len);

/*
 * A quantity as drfd shows it (JSON, metrics): whole bytes and whole bits/s,
 * the kernel's units (an allocation of 2300875337.14 bytes is 2300875337),
 * cores as they are; NaN and infinities as they are.
 */
double drf_res_shown(enum drf_res r, double v);

/* The largest quantity drf_parse_quantity() takes ("too large" past it). */
#define DRF_QUANTITY_MAX 1e18

/* Parse a duration: "250ms", "1s", "1.5s"; a plain number is seconds. */
int drf_parse_duration_ms(const char *s, double *ret_ms, const char **ret_why);

/*
 * Print a quantity for people: "3", "2.5", "12G", "1.5M", "100mbit". Returns the
 * buffer. Values that are not whole in the chosen unit get up to 3 significant
 * decimals; "unlimited" for infinity.
 */
char *drf_format_quantity(double v, enum drf_unit unit, char *buf, size_t len);

#endif
