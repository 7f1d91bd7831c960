// SPDX-License-Identifier: MIT
#include "res.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const res_names[DRF_NRES] = {
	[DRF_RES_CPU] = "cpu",
	[DRF_RES_MEMORY] = "memory",
	[DRF_RES_IO_READ] = "io-read-bps",
	[DRF_RES_IO_WRITE] = "io-write-bps",
	[DRF_RES_NET] = "net-rate",
	[DRF_RES_NET_IN] = "net-ingress-rate",
};

static const enum drf_unit res_units[DRF_NRES] = {
	[DRF_RES_CPU] = DRF_UNIT_CORES,
	[DRF_RES_MEMORY] = DRF_UNIT_BYTES,
	[DRF_RES_IO_READ] = DRF_UNIT_BYTES,
	[DRF_RES_IO_WRITE] = DRF_UNIT_BYTES,
	[DRF_RES_NET] = DRF_UNIT_BITS,
	[DRF_RES_NET_IN] = DRF_UNIT_BITS,
};

const char *drf_res_name(enum drf_res r)
{
	return (unsigned)r < DRF_NRES ? res_names[r] : "?";
}

int drf_res_from_name(const char *name)
{
	for (int r = 0; r < DRF_NRES; r++)
		if (strcmp(name, res_names[r]) == 0)
			return r;
	return -1;
}

enum drf_unit drf_res_unit(enum drf_res r)
{
	return res_units[r];
}

struct suffix {
	const char *name;
	double mult;
};

static const struct suffix byte_suffixes[] = {
	{ "", 1.0 },
	{ "K", 1024.0 },
	{ "M", 1024.0 * 1024 },
	{ "G", 1024.0 * 1024 * 1024 },
	{ "T", 1024.0 * 1024 * 1024 * 1024 },
	{ NULL, 0 },
};

static const struct suffix bit_suffixes[] = {
	{ "", 1.0 },
	{ "bit", 1.0 },
	{ "kbit", 1e3 },
	{ "mbit", 1e6 },
	{ "gbit", 1e9 },
	{ NULL, 0 },
};

static const struct suffix core_suffixes[] = {
	{ "", 1.0 },
	{ NULL, 0 },
};

static const struct suffix *suffixes_of(enum drf_unit unit)
{
	switch (unit) {
	case DRF_UNIT_BYTES:
		return byte_suffixes;
	case DRF_UNIT_BITS:
		return bit_suffixes;
	case DRF_UNIT_CORES:
		break;
	}
	return core_suffixes;
}

/*
 * Checks that s starts with "digits[.digits]" (or ".digits") and returns the
 * number of characters it takes, or 0 if there is no number there. Checked by
 * hand so that "1e3", "0x10", " 5", "+5", "inf" and "nan", which strtod() would
 * take, are refused; the value itself comes from strtod() for correct rounding.
 */
static size_t scan_decimal(const char *s, double *ret_v)
{
	size_t i = 0, digits = 0;
	char tmp[64];

	while (s[i] >= '0' && s[i] <= '9')
		i++, digits++;
	if (s[i] == '.') {
		size_t frac = 0;

		i++;
		while (s[i] >= '0' && s[i] <= '9')
			i++, frac++;
		if (frac == 0)
			return 0;
		digits += frac;
	}
	if (digits == 0 || i >= sizeof(tmp))
		return 0;
	memcpy(tmp, s, i);
	tmp[i] = '\0';
	*ret_v = strtod(tmp, NULL);
	return i;
}

int drf_parse_quantity(const char *s, enum drf_unit unit, double *ret, const char **ret_why)
{
	const char *why;
	double v;
	size_t n;

	if (s[0] == '-') {
		why = "negative number";
		goto range;
	}
	n = scan_decimal(s, &v);
	if (n == 0) {
		why = unit == DRF_UNIT_CORES ? "not a decimal number"
					     : "not a number (expected digits, then an optional unit)";
		if (ret_why)
			*ret_why = why;
		return -EINVAL;
	}
	for (const struct suffix *sf = suffixes_of(unit); sf->name; sf++) {
		if (strcmp(s + n, sf->name) == 0) {
			v *= sf->mult;
			if (!isfinite(v) || v > DRF_QUANTITY_MAX) {
				why = "number too large";
				goto range;
			}
			*ret = v;
			return 0;
		}
	}
	if (ret_why) {
		switch (unit) {
		case DRF_UNIT_BYTES:
			*ret_why = "unknown unit (bytes take K, M, G or T)";
			break;
		case DRF_UNIT_BITS:
			/* tc's "mbps" means megabytes per second: say so rather than guess. */
			*ret_why = "unknown unit (bits/s take kbit, mbit or gbit; "
				   "tc's kbps/mbps/gbps are bytes and are not accepted)";
			break;
		case DRF_UNIT_CORES:
			*ret_why = "unknown unit (cores are a plain decimal number)";
			break;
		}
	}
	return -ENOENT;
range:
	if (ret_why)
		*ret_why = why;
	return -ERANGE;
}

const char *drf_quantity_hint(const char *s, enum drf_unit unit, char *buf, size_t len)
{
	char suf[16];
	double v;
	size_t n = scan_decimal(s, &v), k;

	if (n == 0 || strlen(s + n) >= sizeof(suf))
		return NULL;
	/* the unit in lower case, spaces before it dropped ("8 GB" -> "gb") */
	k = 0;
	for (const char *p = s + n; *p; p++)
		if (*p != ' ')
			suf[k++] = (char)tolower((unsigned char)*p);
	suf[k] = '\0';
	switch (unit) {
	case DRF_UNIT_BYTES: {
		/* K, KB, KiB, kib, k: the binary multiple drfd means */
		static const char units[] = "kmgt";
		const char *u = k ? strchr(units, suf[0]) : NULL;

		if (!u || !(k == 1 || strcmp(suf + 1, "b") == 0 || strcmp(suf + 1, "ib") == 0))
			return NULL;
		snprintf(buf, len, "did you mean '%.*s%c'? (K, M, G and T are 1024's powers)",
			 (int)n, s, (char)toupper((unsigned char)*u));
		return buf;
	}
	case DRF_UNIT_BITS: {
		static const char *const forms[][2] = {
			{ "k", "kbit" }, { "kbits", "kbit" }, { "kbit/s", "kbit" },
			{ "m", "mbit" }, { "mbits", "mbit" }, { "mbit/s", "mbit" },
			{ "g", "gbit" }, { "gbits", "gbit" }, { "gbit/s", "gbit" },
			/* the unit itself, in another case (100Mbit): lower case it is */
			{ "kbit", "kbit" }, { "mbit", "mbit" }, { "gbit", "gbit" },
		};
		for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
			if (strcmp(suf, forms[i][0]) != 0)
				continue;
			snprintf(buf, len, "did you mean '%.*s%s'?", (int)n, s, forms[i][1]);
			return buf;
		}
		return NULL;
	}
	case DRF_UNIT_CORES:
		if (strcmp(suf, "%") == 0)
			snprintf(buf, len, "cpu is in cores, not percent: did you mean '%g'?", v / 100);
		else if (strcmp(suf, "m") == 0)
			snprintf(buf, len, "cpu is in cores, not millicores: did you mean '%g'?",
				 v / 1000);
		else if (strcmp(suf, "core") == 0 || strcmp(suf, "cores") == 0 ||
			 strcmp(suf, "cpu") == 0 || strcmp(suf, "cpus") == 0)
			snprintf(buf, len, "did you mean '%.*s'?", (int)n, s);
		else
			return NULL;
		return buf;
	}
	return NULL;
}

double drf_res_shown(enum drf_res r, double v)
{
	return drf_res_unit(r) == DRF_UNIT_CORES || !isfinite(v) ? v : round(v);
}

int drf_parse_duration_ms(const char *s, double *ret_ms, const char **ret_why)
{
	double v;
	size_t n;

	if (s[0] == '-') {
		if (ret_why)
			*ret_why = "negative duration";
		return -ERANGE;
	}
	n = scan_decimal(s, &v);
	if (n == 0) {
		if (ret_why)
			*ret_why = "not a duration (expected e.g. 500ms or 1s)";
		return -EINVAL;
	}
	if (strcmp(s + n, "ms") == 0) {
		*ret_ms = v;
	} else if (strcmp(s + n, "s") == 0 || s[n] == '\0') {
		*ret_ms = v * 1000;
	} else {
		if (ret_why)
			*ret_why = "unknown unit (durations take ms or s)";
		return -ENOENT;
	}
	return 0;
}

static void format_scaled(double v, const char *suffix, char *buf, size_t len)
{
	char num[64];
	char *dot;

	if (v == floor(v) && v < 1e15)
		snprintf(num, sizeof(num), "%.0f", v);
	else
		snprintf(num, sizeof(num), "%.*f", v >= 100 ? 1 : v >= 10 ? 2 : 3, v);
	/* what reads as whole is written whole: a solver's 3.9999996 is "4", as 4 is */
	dot = strchr(num, '.');
	if (dot && dot[strspn(dot + 1, "0") + 1] == '\0')
		*dot = '\0';
	if (strcmp(num, "-0") == 0)
		snprintf(num, sizeof(num), "0");
	snprintf(buf, len, "%s%s", num, suffix);
}

char *drf_format_quantity(double v, enum drf_unit unit, char *buf, size_t len)
{
	const struct suffix *sf, *best;

	if (isinf(v)) {
		snprintf(buf, len, "unlimited");
		return buf;
	}
	sf = suffixes_of(unit);
	best = sf;
	for (; sf->name; sf++)
		if (sf->mult > best->mult && fabs(v) >= sf->mult)
			best = sf;
	format_scaled(v / best->mult, best->name, buf, len);
	return buf;
}
