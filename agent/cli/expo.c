// SPDX-License-Identifier: MIT
/* The Prometheus text exposition format, strictly (see expo.h). */
#include "expo.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "vec.h"

/* A line being read: its bytes and the next one to look at. */
struct cur {
	const char *s;
	size_t len, at;
	const char *why;
};

static int peek(const struct cur *c)
{
	return c->at < c->len ? (unsigned char)c->s[c->at] : -1;
}

static void skip_blanks(struct cur *c)
{
	while (peek(c) == ' ' || peek(c) == '\t')
		c->at++;
}

static int fail(struct cur *c, const char *why)
{
	c->why = why;
	return -EINVAL;
}

static bool is_alpha_(int ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
}

static bool is_digit(int ch)
{
	return ch >= '0' && ch <= '9';
}

/* A name of [a-zA-Z_(:)][a-zA-Z0-9_(:)]*, colons allowed for metric names only. */
static int take_name(struct cur *c, bool colons, char **ret)
{
	size_t start = c->at;

	if (!is_alpha_(peek(c)) && !(colons && peek(c) == ':'))
		return fail(c, colons ? "a metric name must start with a letter, '_' or ':'"
				      : "a label name must start with a letter or '_'");
	while (is_alpha_(peek(c)) || is_digit(peek(c)) || (colons && peek(c) == ':'))
		c->at++;
	*ret = strndup(c->s + start, c->at - start);
	return *ret ? 0 : -ENOMEM;
}

/* Is s[0..len) well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF)? */
static bool utf8_valid(const unsigned char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned char b = s[i];
		size_t n;
		uint32_t cp;

		if (b < 0x80) {
			i++;
			continue;
		}
		if (b >= 0xc2 && b <= 0xdf) {
			n = 1;
			cp = b & 0x1f;
		} else if (b >= 0xe0 && b <= 0xef) {
			n = 2;
			cp = b & 0x0f;
		} else if (b >= 0xf0 && b <= 0xf4) {
			n = 3;
			cp = b & 0x07;
		} else {
			return false;
		}
		if (len - i <= n)
			return false;
		for (size_t k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n + 1;
	}
	return true;
}

/* A quoted label value, unescaped. */
static int take_label_value(struct cur *c, char **ret)
{
	size_t start, n = 0;
	char *v;

	if (peek(c) != '"')
		return fail(c, "a label value must be quoted");
	start = ++c->at;
	/* First pass: find the closing quote, check the escapes, count. */
	for (;;) {
		int ch = peek(c);

		if (ch < 0)
			return fail(c, "a label value is not closed");
		c->at++;
		if (ch == '"')
			break;
		if (ch == '\\') {
			ch = peek(c);
			if (ch != '\\' && ch != '"' && ch != 'n')
				return fail(c, "a label value has an escape other than \\\\, \\\" or \\n");
			c->at++;
		}
		n++;
	}
	v = malloc(n + 1);
	if (!v)
		return -ENOMEM;
	n = 0;
	for (size_t i = start; i < c->at - 1; i++) {
		char ch = c->s[i];

		if (ch == '\\') {
			ch = c->s[++i];
			if (ch == 'n')
				ch = '\n';
		}
		v[n++] = ch;
	}
	v[n] = '\0';
	if (memchr(v, '\0', n) || !utf8_valid((const unsigned char *)v, n)) {
		free(v);
		return fail(c, "a label value is not valid UTF-8");
	}
	*ret = v;
	return 0;
}

/* The labels of s, which has none yet. */
static int take_labels(struct cur *c, struct expo_sample *s)
{
	size_t cap = 0;
	int r;

	c->at++; /* '{' */
	for (;;) {
		struct expo_label *l;

		skip_blanks(c);
		if (peek(c) == '}') {
			c->at++;
			return 0;
		}
		if (DRF_VEC_GROW(s->labels, &cap, s->n_labels + 1) < 0)
			return -ENOMEM;
		l = &s->labels[s->n_labels];
		*l = (struct expo_label){ 0 };
		s->n_labels++;
		r = take_name(c, false, &l->name);
		if (r < 0)
			return r;
		for (size_t i = 0; i + 1 < s->n_labels; i++)
			if (strcmp(s->labels[i].name, l->name) == 0)
				return fail(c, "a label is given twice");
		skip_blanks(c);
		if (peek(c) != '=')
			return fail(c, "a label name must be followed by '='");
		c->at++;
		skip_blanks(c);
		r = take_label_value(c, &l->value);
		if (r < 0)
			return r;
		skip_blanks(c);
		if (peek(c) == ',') {
			c->at++;
			continue;
		}
		if (peek(c) != '}')
			return fail(c, "labels must be separated by ',' and closed by '}'");
	}
}

/* The token that starts at c->at and ends at a blank or the end of the line. */
static size_t token_len(const struct cur *c)
{
	size_t n = 0;

	while (c->at + n < c->len && c->s[c->at + n] != ' ' && c->s[c->at + n] != '\t')
		n++;
	return n;
}

static bool token_is(const char *t, size_t n, const char *word)
{
	return strlen(word) == n && strncasecmp(t, word, n) == 0;
}

/* A decimal float: [+-] (digits [. [digits]] | . digits) [e [+-] digits]. */
static bool decimal_syntax(const char *t, size_t n)
{
	size_t i = 0, digits = 0;

	if (i < n && (t[i] == '+' || t[i] == '-'))
		i++;
	for (; i < n && is_digit(t[i]); i++)
		digits++;
	if (i < n && t[i] == '.')
		for (i++; i < n && is_digit(t[i]); i++)
			digits++;
	if (!digits)
		return false;
	if (i < n && (t[i] == 'e' || t[i] == 'E')) {
		i++;
		if (i < n && (t[i] == '+' || t[i] == '-'))
			i++;
		if (i >= n || !is_digit(t[i]))
			return false;
		while (i < n && is_digit(t[i]))
			i++;
	}
	return i == n;
}

static int take_value(struct cur *c, double *ret)
{
	const char *t = c->s + c->at;
	size_t n = token_len(c);
	char buf[128];
	char *end;
	double v;

	if (n == 0)
		return fail(c, "a sample has no value");
	c->at += n;
	if (token_is(t, n, "NaN")) {
		*ret = NAN;
		return 0;
	}
	if (token_is(t, n, "+Inf") || token_is(t, n, "Inf")) {
		*ret = INFINITY;
		return 0;
	}
	if (token_is(t, n, "-Inf")) {
		*ret = -INFINITY;
		return 0;
	}
	if (n >= sizeof(buf) || !decimal_syntax(t, n))
		return fail(c, "a value must be a decimal number, NaN, +Inf or -Inf");
	memcpy(buf, t, n);
	buf[n] = '\0';
	errno = 0;
	v = strtod(buf, &end);
	if (*end != '\0')
		return fail(c, "a value must be a decimal number, NaN, +Inf or -Inf");
	if (errno == ERANGE && isinf(v))
		return fail(c, "a value is out of range");
	*ret = v;
	return 0;
}

static int take_timestamp(struct cur *c, int64_t *ret)
{
	const char *t = c->s + c->at;
	size_t n = token_len(c), i = 0;
	uint64_t v = 0, max = INT64_MAX;
	bool neg = false;

	if (n > 0 && t[0] == '-') {
		neg = true;
		i = 1;
		max = (uint64_t)INT64_MAX + 1;
	}
	if (i == n)
		return fail(c, "a timestamp must be whole milliseconds");
	for (; i < n; i++) {
		if (!is_digit(t[i]))
			return fail(c, "a timestamp must be whole milliseconds");
		if (v > (max - (uint64_t)(t[i] - '0')) / 10)
			return fail(c, "a timestamp is out of range");
		v = v * 10 + (uint64_t)(t[i] - '0');
	}
	c->at += n;
	*ret = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

void expo_sample_free(struct expo_sample *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_labels; i++) {
		free(s->labels[i].name);
		free(s->labels[i].value);
	}
	free(s->labels);
	free(s->name);
	*s = (struct expo_sample){ 0 };
}

int expo_parse_line(const char *line, size_t len, struct expo_sample *ret, const char **ret_why)
{
	struct cur c = { .s = line, .len = len };
	struct expo_sample s = { 0 };
	size_t at;
	int r;

	skip_blanks(&c);
	if (peek(&c) < 0 || peek(&c) == '#')
		return 0;
	r = take_name(&c, true, &s.name);
	if (r < 0)
		goto fail;
	at = c.at;
	skip_blanks(&c);
	if (peek(&c) == '{') {
		r = take_labels(&c, &s);
		if (r < 0)
			goto fail;
		skip_blanks(&c);
	} else if (c.at == at && peek(&c) >= 0) {
		r = fail(&c, "a metric name has a character other than [a-zA-Z0-9_:]");
		goto fail;
	}
	r = take_value(&c, &s.value);
	if (r < 0)
		goto fail;
	skip_blanks(&c);
	if (peek(&c) >= 0) {
		r = take_timestamp(&c, &s.timestamp_ms);
		if (r < 0)
			goto fail;
		s.has_timestamp = true;
		skip_blanks(&c);
		if (peek(&c) >= 0) {
			r = fail(&c, "a sample has something after its timestamp");
			goto fail;
		}
	}
	*ret = s;
	return 1;
fail:
	if (ret_why)
		*ret_why = r == -ENOMEM ? "out of memory" : c.why;
	expo_sample_free(&s);
	return r;
}

void expo_free(struct expo *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n; i++)
		expo_sample_free(&e->samples[i]);
	free(e->samples);
	*e = (struct expo){ 0 };
}

int expo_parse(const char *text, size_t len, struct expo *ret, size_t *ret_line,
	       const char **ret_why)
{
	struct expo e = { 0 };
	size_t cap = 0, lineno = 0, at = 0;
	const char *why = NULL;
	int r = 0;

	while (at < len) {
		const char *nl = memchr(text + at, '\n', len - at);
		struct expo_sample s;

		lineno++;
		if (!nl) {
			r = -EINVAL;
			why = "the last line does not end in a newline (cut short?)";
			goto fail;
		}
		if (memchr(text + at, '\0', (size_t)(nl - text) - at)) {
			r = -EINVAL;
			why = "a line holds a NUL byte";
			goto fail;
		}
		r = expo_parse_line(text + at, (size_t)(nl - text) - at, &s, &why);
		if (r < 0)
			goto fail;
		at = (size_t)(nl - text) + 1;
		if (r == 0)
			continue;
		if (DRF_VEC_GROW(e.samples, &cap, e.n + 1) < 0) {
			expo_sample_free(&s);
			r = -ENOMEM;
			why = "out of memory";
			goto fail;
		}
		e.samples[e.n++] = s;
	}
	*ret = e;
	return 0;
fail:
	if (ret_line)
		*ret_line = lineno;
	if (ret_why)
		*ret_why = why;
	expo_free(&e);
	return r;
}

const char *expo_label(const struct expo_sample *s, const char *name)
{
	for (size_t i = 0; i < s->n_labels; i++)
		if (strcmp(s->labels[i].name, name) == 0)
			return s->labels[i].value;
	return NULL;
}

static bool labels_match(const struct expo_sample *s, va_list ap)
{
	const char *k, *v, *have;

	while ((k = va_arg(ap, const char *))) {
		v = va_arg(ap, const char *);
		have = expo_label(s, k);
		if (!have || strcmp(have, v) != 0)
			return false;
	}
	return true;
}

const struct expo_sample *expo_find(const struct expo *e, const char *name, ...)
{
	for (size_t i = 0; i < e->n; i++) {
		va_list ap;
		bool ok;

		if (strcmp(e->samples[i].name, name) != 0)
			continue;
		va_start(ap, name);
		ok = labels_match(&e->samples[i], ap);
		va_end(ap);
		if (ok)
			return &e->samples[i];
	}
	return NULL;
}
