// SPDX-License-Identifier: MIT
/* JSON output of drfd and drfctl over json-c (see json.h). */
#include "json.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/linkhash.h>
#include <json-c/printbuf.h>

#include "text.h"

/* One line, no spaces; '/' as it is (no string of ours reaches json-c's escaping but keys). */
#define PRINT_FLAGS (JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

/*
 * The marks on a container that lost a part while it was built (its userdata,
 * which json-c leaves to us on objects and arrays): the error drf_json_print()
 * returns for the document.
 */
static int lost_nomem = -ENOMEM, lost_key = -EINVAL;

char *drf_format_double(double v, char *buf, size_t len)
{
	/* a whole number in full (5000111180, not 5.00011118e+09), while it is exact */
	if (v == floor(v) && fabs(v) < 1e15) {
		snprintf(buf, len, "%.0f", v);
		return buf;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	return buf;
}

/* Appends n bytes to pb (pb NULL: counts them) and adds n to *total; -1 if pb cannot grow. */
static int put(struct printbuf *pb, const char *s, size_t n, size_t *total)
{
	*total += n;
	if (!pb || n == 0)
		return 0;
	return printbuf_memappend(pb, s, (int)n) < 0 ? -1 : 0;
}

/*
 * s as a JSON string, valid and safe on a terminal: every control character
 * (C0, DEL, C1) as \uXXXX, and a byte that is not UTF-8 (a task's words may be
 * any bytes) as \ufffd, the replacement character. To pb, or only counted when
 * pb is NULL. Returns its length, or -1 when pb could not grow.
 */
static long put_string(struct printbuf *pb, const char *s)
{
	const char *run = s; /* the bytes from here on pass as they are */
	size_t total = 0;

	if (put(pb, "\"", 1, &total) < 0)
		return -1;
	while (*s) {
		char esc[8];
		unsigned int cp;
		size_t n = drf_utf8_next(s, &cp);

		if (n && cp != '"' && cp != '\\' && !drf_is_control(cp)) {
			s += n;
			continue;
		}
		if (put(pb, run, (size_t)(s - run), &total) < 0)
			return -1;
		if (n == 0) {
			snprintf(esc, sizeof(esc), "\\ufffd");
			n = 1;
		} else if (cp == '"' || cp == '\\') {
			snprintf(esc, sizeof(esc), "\\%c", (char)cp);
		} else {
			snprintf(esc, sizeof(esc), "\\u%04x", cp);
		}
		if (put(pb, esc, strlen(esc), &total) < 0)
			return -1;
		s += n;
		run = s;
	}
	if (put(pb, run, (size_t)(s - run), &total) < 0 || put(pb, "\"", 1, &total) < 0)
		return -1;
	return (long)total;
}

/* The serializer of every string drf_json makes (json_object_set_serializer). */
static int string_to_json(json_object *jso, struct printbuf *pb, int level, int flags)
{
	(void)level;
	(void)flags;
	return put_string(pb, json_object_get_string(jso)) < 0 ? -1 : 0;
}

/* Whether json-c writes key as drfd would: nothing in it is DEL, C1 or not UTF-8. */
static bool key_ok(const char *key)
{
	while (*key) {
		unsigned int cp;
		size_t n = drf_utf8_next(key, &cp);

		if (n == 0 || (cp >= 0x7f && cp <= 0x9f))
			return false;
		key += n;
	}
	return true;
}

static void mark(json_object *c, int *why)
{
	/* A first mark stays: it is the one that says what went wrong first. */
	if (c && !json_object_get_userdata(c))
		json_object_set_userdata(c, why, NULL);
}

/*
 * Adds v (taken; NULL when it could not be made, or a JSON null if is_null)
 * under key of obj. A NULL obj takes nothing: v goes, and obj's parent has the
 * mark. append() is the same for an array.
 */
static int add(json_object *obj, const char *key, json_object *v, bool is_null)
{
	if (!obj) {
		json_object_put(v);
		return -ENOMEM;
	}
	if (!key_ok(key)) {
		json_object_put(v);
		mark(obj, &lost_key);
		return -EINVAL;
	}
	if ((!v && !is_null) || json_object_object_add(obj, key, v) < 0) {
		json_object_put(v);
		mark(obj, &lost_nomem);
		return -ENOMEM;
	}
	return 0;
}

static int append(json_object *arr, json_object *v, bool is_null)
{
	if (!arr) {
		json_object_put(v);
		return -ENOMEM;
	}
	if ((!v && !is_null) || json_object_array_add(arr, v) < 0) {
		json_object_put(v);
		mark(arr, &lost_nomem);
		return -ENOMEM;
	}
	return 0;
}

static json_object *new_string(const char *s)
{
	json_object *v = json_object_new_string(s);

	if (v)
		json_object_set_serializer(v, string_to_json, NULL, NULL);
	return v;
}

/* A number printed as text: "null" for one that is not finite, a JSON null all the same. */
static json_object *new_number_text(double v, const char *text)
{
	return json_object_new_double_s(v, isfinite(v) ? text : "null");
}

json_object *drf_json_object(void)
{
	return json_object_new_object();
}

json_object *drf_json_set_object(json_object *obj, const char *key)
{
	json_object *v = json_object_new_object();

	return add(obj, key, v, false) == 0 ? v : NULL;
}

json_object *drf_json_set_array(json_object *obj, const char *key)
{
	json_object *v = json_object_new_array();

	return add(obj, key, v, false) == 0 ? v : NULL;
}

json_object *drf_json_append_object(json_object *arr)
{
	json_object *v = json_object_new_object();

	return append(arr, v, false) == 0 ? v : NULL;
}

int drf_json_set_str(json_object *obj, const char *key, const char *s)
{
	return add(obj, key, s ? new_string(s) : NULL, !s);
}

int drf_json_set_num(json_object *obj, const char *key, double v)
{
	char b[32];

	return add(obj, key, new_number_text(v, drf_format_double(v, b, sizeof(b))), false);
}

int drf_json_set_fixed(json_object *obj, const char *key, double v, int decimals)
{
	char b[352]; /* DBL_MAX in "%.0f" is 309 digits, and 40 decimals */

	snprintf(b, sizeof(b), "%.*f", decimals < 0 ? 0 : decimals > 40 ? 40 : decimals, v);
	return add(obj, key, new_number_text(v, b), false);
}

int drf_json_set_u64(json_object *obj, const char *key, uint64_t v)
{
	return add(obj, key, json_object_new_uint64(v), false);
}

int drf_json_set_int(json_object *obj, const char *key, int64_t v)
{
	return add(obj, key, json_object_new_int64(v), false);
}

int drf_json_set_bool(json_object *obj, const char *key, bool v)
{
	return add(obj, key, json_object_new_boolean(v), false);
}

int drf_json_set_null(json_object *obj, const char *key)
{
	return add(obj, key, NULL, true);
}

int drf_json_append_str(json_object *arr, const char *s)
{
	return append(arr, s ? new_string(s) : NULL, !s);
}

int drf_json_append_u64(json_object *arr, uint64_t v)
{
	return append(arr, json_object_new_uint64(v), false);
}

/* Adds b to *n, false past the most a printbuf holds (an int). */
static bool grow(size_t *n, size_t b)
{
	*n += b;
	return *n < INT_MAX / 2;
}

/*
 * The most bytes json-c can write for o with PRINT_FLAGS, generously, into
 * *ret; or the mark of a container in it that lost a part (-ENOMEM, -EINVAL),
 * or -EFBIG past what a printbuf holds.
 */
static int bound(json_object *o, size_t *ret)
{
	size_t n = 0;
	int r;

	switch (json_object_get_type(o)) {
	case json_type_null:
	case json_type_boolean:
		*ret = 5;
		return 0;
	case json_type_int:
		*ret = 20; /* "-9223372036854775808", "18446744073709551615" */
		return 0;
	case json_type_double:
		/* Ours are all printed as the text they were made with. */
		*ret = json_object_get_userdata(o) ? strlen(json_object_get_userdata(o)) : 32;
		return 0;
	case json_type_string:
		/* Ours: escaped at most as long as json-c's escaping would be. */
		*ret = (size_t)put_string(NULL, json_object_get_string(o));
		return 0;
	case json_type_object:
		if (json_object_get_userdata(o))
			return *(int *)json_object_get_userdata(o);
		n = 4;
		json_object_object_foreach(o, key, val) {
			size_t b;

			r = bound(val, &b);
			if (r < 0)
				return r;
			/* json-c writes a key's C0 controls as \u00XX: 6 bytes a byte */
			if (!grow(&n, 6 * strlen(key) + 8) || !grow(&n, b))
				return -EFBIG;
		}
		*ret = n;
		return 0;
	case json_type_array:
		if (json_object_get_userdata(o))
			return *(int *)json_object_get_userdata(o);
		n = 4;
		for (size_t i = 0; i < json_object_array_length(o); i++) {
			size_t b;

			r = bound(json_object_array_get_idx(o, i), &b);
			if (r < 0)
				return r;
			if (!grow(&n, b + 4))
				return -EFBIG;
		}
		*ret = n;
		return 0;
	}
	return -EINVAL;
}

/* The root's serializer for a moment: grows its buffer to *userdata bytes, writes nothing. */
static int reserve(json_object *jso, struct printbuf *pb, int level, int flags)
{
	const size_t *n = json_object_get_userdata(jso);

	(void)level;
	(void)flags;
	if (printbuf_memset(pb, 0, 0, (int)*n) < 0)
		return -1;
	printbuf_reset(pb);
	return 0;
}

/*
 * json-c (0.16, and up to 0.18) writes a container's brackets, commas and keys
 * without checking each append: when its buffer cannot grow, an append is
 * dropped and the next, smaller one may fit, which would print a document
 * that is wrong, not absent. So the root's buffer is first grown to more than
 * the text can take (bound()), by a serializer of ours that writes nothing;
 * then, with json-c's own serializer back, no append needs memory, and a text
 * no longer than the bound was written whole. The buffer stays with the root.
 */
/* o's whole text (json-c's, kept with o) into *text and *len: 0, or drf_json_print()'s errors. */
static int text_of(json_object *o, const char **text, size_t *len)
{
	size_t n;
	int r;

	if (!o)
		return -ENOMEM;
	if (!json_object_is_type(o, json_type_object) && !json_object_is_type(o, json_type_array))
		return -EINVAL;
	r = bound(o, &n);
	if (r < 0)
		return r;
	n += 2; /* printbuf_memappend() wants room for its NUL past the end */
	json_object_set_serializer(o, reserve, &n, NULL);
	*text = json_object_to_json_string_length(o, PRINT_FLAGS, NULL);
	json_object_set_serializer(o, NULL, NULL, NULL);
	if (!*text)
		return -ENOMEM;
	*text = json_object_to_json_string_length(o, PRINT_FLAGS, len);
	if (!*text)
		return -ENOMEM;
	/* Longer would mean the bound is wrong: the buffer grew, and an append may be missing. */
	if (*len + 2 > n)
		return -EOVERFLOW;
	return 0;
}

int drf_json_print(FILE *f, json_object *o)
{
	const char *text;
	size_t len;
	int r = text_of(o, &text, &len);

	if (r < 0)
		return r;
	if (fwrite(text, 1, len, f) != len || fputc('\n', f) == EOF)
		return -EIO;
	return 0;
}

/*
 * What comes before the next member of the document: its opening brace for
 * the first one, a comma after that.
 */
static const char *member_sep(struct drf_json_stream *s)
{
	const char *sep = s->members ? "," : s->open ? "" : "{";

	s->open = true;
	s->members = true;
	return sep;
}

int drf_json_stream_members(struct drf_json_stream *s, FILE *f, json_object *o)
{
	const char *text;
	size_t len;
	int r;

	if (s->in_array || s->closed)
		return -EINVAL;
	if (!json_object_is_type(o, json_type_object))
		return o ? -EINVAL : -ENOMEM;
	r = text_of(o, &text, &len);
	if (r < 0)
		return r;
	/* "{}": nothing to add (not even the document's brace, which the end writes then). */
	if (len <= 2)
		return 0;
	/* Its members are the text between its braces. */
	if (fputs(member_sep(s), f) == EOF || fwrite(text + 1, 1, len - 2, f) != len - 2)
		return -EIO;
	return 0;
}

/* Whether key needs no escaping in JSON: the stream writes it as it is. */
static bool plain_key(const char *key)
{
	if (!*key)
		return false;
	for (; *key; key++)
		if (!isalnum((unsigned char)*key) && *key != '_' && *key != '-')
			return false;
	return true;
}

int drf_json_stream_array(struct drf_json_stream *s, FILE *f, const char *key)
{
	if (s->in_array || s->closed || !plain_key(key))
		return -EINVAL;
	if (fprintf(f, "%s\"%s\":[", member_sep(s), key) < 0)
		return -EIO;
	s->in_array = true;
	s->elements = false;
	return 0;
}

int drf_json_stream_element(struct drf_json_stream *s, FILE *f, json_object *o)
{
	const char *text;
	size_t len;
	int r;

	if (!s->in_array)
		return -EINVAL;
	r = text_of(o, &text, &len);
	if (r < 0)
		return r;
	if ((s->elements && fputc(',', f) == EOF) || fwrite(text, 1, len, f) != len)
		return -EIO;
	s->elements = true;
	return 0;
}

int drf_json_stream_array_end(struct drf_json_stream *s, FILE *f)
{
	if (!s->in_array)
		return -EINVAL;
	if (fputc(']', f) == EOF)
		return -EIO;
	s->in_array = false;
	return 0;
}

int drf_json_stream_end(struct drf_json_stream *s, FILE *f)
{
	if (s->in_array || s->closed)
		return -EINVAL;
	if (fputs(s->open ? "}\n" : "{}\n", f) == EOF)
		return -EIO;
	s->closed = true;
	return 0;
}
