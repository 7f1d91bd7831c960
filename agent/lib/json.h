/* SPDX-License-Identifier: MIT */
/*
 * JSON output shared by drfd and drfctl, built with json-c (Debian's
 * libjson-c-dev), and the shortest text of a double.
 *
 * Why json-c and not jansson: both are well kept in Debian, but drfd's numbers
 * have the fewest digits that read back as the same double (drf_format_double:
 * 0.1, 3, 2e+02), and json-c can print a number as the text given
 * (json_object_new_double_s), where jansson prints every real of a dump with
 * one precision, 17 digits unless JSON_REAL_PRECISION says fewer for all (0.1
 * as 0.10000000000000001). json-c also lets one value have its own serializer
 * (json_object_set_serializer), which is how strings keep drfd's escaping.
 *
 * What json-c does not do, and this file does:
 * - Strings: json-c escapes only U+0000..U+001F. drfd's strings hold what a
 *   config, a cgroup file or a task's words hold, so each is written by its
 *   own serializer: every control character (C0, DEL, C1 U+0080..U+009F) as
 *   \uXXXX and each byte that is not UTF-8 as \ufffd. The output is valid
 *   JSON and safe on a terminal whatever the bytes.
 * - Keys are written by json-c; one it would not write safely (DEL, C1, not
 *   UTF-8) is refused. drfd's keys are fixed names and tenant names, which the
 *   config holds to [A-Za-z0-9_.-].
 * - Out of memory: json-c returns NULL, which is also its JSON null. A setter
 *   whose value or entry cannot be made marks the container it was adding to,
 *   and drf_json_print() refuses a document with such a mark (-ENOMEM): output
 *   is whole or absent, never a silent null. Setters on a NULL container (one
 *   that could not be made) do nothing; its parent holds the mark. json-c's
 *   own serializer does not check each append to its buffer, so
 *   drf_json_print() sizes the buffer beforehand (see there).
 *
 * The output is one line without spaces, then a newline; numbers and strings
 * as above, null for a number that is not finite.
 */
#ifndef DRF_JSON_H
#define DRF_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json_object.h>

/* Shortest "%.*g" of v that strtod() reads back exactly. */
char *drf_format_double(double v, char *buf, size_t len);

/* A new, empty document (an object): the caller's, to free with json_object_put(). */
json_object *drf_json_object(void);

/*
 * A new object or array under key in obj (to the end of arr), returned for the
 * caller to fill: obj holds it, so it goes with obj. NULL when it could not be
 * made or obj is NULL; the fill then does nothing and obj is marked.
 */
json_object *drf_json_set_object(json_object *obj, const char *key);
json_object *drf_json_set_array(json_object *obj, const char *key);
json_object *drf_json_append_object(json_object *arr);

/*
 * A value under key in obj. A key already there is replaced. Each returns 0,
 * or -ENOMEM (-EINVAL for a key refused) with obj marked: a caller may leave
 * the result unchecked, drf_json_print() says it.
 */
/* s as a string (escaped as above); NULL s is null. */
int drf_json_set_str(json_object *obj, const char *key, const char *s);
/* v in drf_format_double()'s text; null when v is not finite. */
int drf_json_set_num(json_object *obj, const char *key, double v);
/*
 * v with that many decimals ("%.*f", at most 40), for a time to the
 * millisecond; null when v is not finite.
 */
int drf_json_set_fixed(json_object *obj, const char *key, double v, int decimals);
int drf_json_set_u64(json_object *obj, const char *key, uint64_t v);
int drf_json_set_int(json_object *obj, const char *key, int64_t v);
int drf_json_set_bool(json_object *obj, const char *key, bool v);
int drf_json_set_null(json_object *obj, const char *key);

/* The same to the end of an array. */
int drf_json_append_str(json_object *arr, const char *s);
int drf_json_append_u64(json_object *arr, uint64_t v);

/*
 * Writes o (an object or array) to f on one line, and a newline. Returns 0;
 * -ENOMEM when a part of o could not be made, o is NULL, or the text cannot;
 * -EINVAL for a key refused or an o of another type; -EIO when f fails
 * (-EFBIG past 1 GiB, -EOVERFLOW if json.c's bound of the text were wrong). On
 * any error but -EIO, nothing is written.
 */
int drf_json_print(FILE *f, json_object *o);

/*
 * A document (an object) written in parts, for one too large to hold whole as
 * a tree: its members a few at a time (drf_json_stream_members(): those of an
 * object built for the purpose, then freed), and an array member one element
 * at a time (drf_json_stream_array(), then _element() for each, then
 * _array_end()); drf_json_stream_end() closes the document with its newline.
 * The text is the one drf_json_print() would write of the whole, member for
 * member in the order written. f may differ from one call to the next (each
 * part to its own buffer); the state is in s, zeroed to begin. Each returns 0,
 * drf_json_print()'s errors for the part given (nothing of it written, but
 * with -EIO), or -EINVAL for a call out of order or an array key that would
 * need escaping (keys of arrays are written as given: letters, digits, '_',
 * '-').
 */
struct drf_json_stream {
	bool open;      /* the document's '{' is written */
	bool members;   /* a member is: the next follows a comma */
	bool in_array;  /* an array member is open */
	bool elements;  /* ... and holds an element */
	bool closed;
};
int drf_json_stream_members(struct drf_json_stream *s, FILE *f, json_object *o);
int drf_json_stream_array(struct drf_json_stream *s, FILE *f, const char *key);
int drf_json_stream_element(struct drf_json_stream *s, FILE *f, json_object *o);
int drf_json_stream_array_end(struct drf_json_stream *s, FILE *f);
int drf_json_stream_end(struct drf_json_stream *s, FILE *f);

#endif
