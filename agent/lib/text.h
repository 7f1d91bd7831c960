/* SPDX-License-Identifier: MIT */
/*
 * Text that drfd shows to people (its log, the journal, drfctl's errors) may
 * carry bytes from a config or a request: a tenant name with an ESC in it must
 * not reach a terminal as an escape sequence. Pure: no I/O.
 */
#ifndef DRF_TEXT_H
#define DRF_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The UTF-8 character at s: its length (1 to 4) with its code point, or 0 when
 * the bytes there are not UTF-8 (overlong, a surrogate, past U+10FFFF, cut).
 */
size_t drf_utf8_next(const char *s, unsigned int *ret_cp);

/* A control character: C0 (U+0000..U+001F), DEL, or C1 (U+0080..U+009F). */
bool drf_is_control(unsigned int cp);

/*
 * Copies in to out (len bytes, NUL-terminated, truncated at a whole character)
 * with every control character written as \xHH: the C0 controls (newline
 * included), DEL, the C1 controls U+0080..U+009F, and bytes that are not UTF-8.
 * Other UTF-8 and printable ASCII pass as they are. Returns out.
 */
char *drf_escape_controls(const char *in, char *out, size_t len);

/* The same, but newlines pass: for text of many lines. */
char *drf_escape_text(const char *in, char *out, size_t len);

/* The size of out that holds all of in escaped (4 bytes a byte, and the NUL). */
#define DRF_ESCAPED_SIZE(n) (4 * (n) + 1)

#endif
