// SPDX-License-Identifier: MIT
/* Parsing and printing of quantities: bytes (K M G T = 1024^k), bits/s (kbit mbit
 * gbit = 1000^k, as tc), cores and durations. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "res.h"
#include "text.h"
#include "testlib.h"

static void ok(const char *s, enum drf_unit u, double want)
{
	double v = -1;
	int r = drf_parse_quantity(s, u, &v, NULL);

	if (r != 0) {
		print_error("'%s' was refused (%d)\n", s, r);
		fail();
	}
	assert_close(v, want, 0, s);
}

static void bad(const char *s, enum drf_unit u, int want_err)
{
	const char *why = NULL;
	double v = 12345;

	assert_int_equal(drf_parse_quantity(s, u, &v, &why), want_err);
	assert_non_null(why);
	assert_true(v == 12345); /* left alone on failure */
}

static void test_bytes(void **state)
{
	(void)state;
	ok("0", DRF_UNIT_BYTES, 0);
	ok("4096", DRF_UNIT_BYTES, 4096);
	ok("1K", DRF_UNIT_BYTES, 1024);
	ok("1.5M", DRF_UNIT_BYTES, 1.5 * 1048576);
	ok("18G", DRF_UNIT_BYTES, 18.0 * 1073741824);
	ok("2T", DRF_UNIT_BYTES, 2.0 * 1099511627776);
	ok(".5G", DRF_UNIT_BYTES, 536870912);
	bad("1KB", DRF_UNIT_BYTES, -ENOENT);
	bad("1k", DRF_UNIT_BYTES, -ENOENT);
	bad("1mbit", DRF_UNIT_BYTES, -ENOENT);
	bad("-1G", DRF_UNIT_BYTES, -ERANGE);
	bad("G", DRF_UNIT_BYTES, -EINVAL);
	bad("", DRF_UNIT_BYTES, -EINVAL);
	bad("1.", DRF_UNIT_BYTES, -EINVAL);
	bad(" 1", DRF_UNIT_BYTES, -EINVAL);
	bad("+1", DRF_UNIT_BYTES, -EINVAL);
	bad("0x10", DRF_UNIT_BYTES, -ENOENT);
	bad("inf", DRF_UNIT_BYTES, -EINVAL);
	bad("nan", DRF_UNIT_BYTES, -EINVAL);
	bad("1e3", DRF_UNIT_BYTES, -ENOENT);
	bad("1 G", DRF_UNIT_BYTES, -ENOENT);
	bad("2000000T", DRF_UNIT_BYTES, -ERANGE);
}

static void test_bits(void **state)
{
	(void)state;
	ok("1000", DRF_UNIT_BITS, 1000);
	ok("1000bit", DRF_UNIT_BITS, 1000);
	ok("64kbit", DRF_UNIT_BITS, 64e3);
	ok("100mbit", DRF_UNIT_BITS, 1e8);
	ok("2.5gbit", DRF_UNIT_BITS, 2.5e9);
	bad("100mbps", DRF_UNIT_BITS, -ENOENT); /* tc: megabytes per second */
	bad("1G", DRF_UNIT_BITS, -ENOENT);
	bad("1Mbit", DRF_UNIT_BITS, -ENOENT);
}

static void test_cores(void **state)
{
	(void)state;
	ok("2", DRF_UNIT_CORES, 2);
	ok("0.25", DRF_UNIT_CORES, 0.25);
	ok("0.3", DRF_UNIT_CORES, 0.3); /* correctly rounded, not 0.30000000000000004 */
	bad("2c", DRF_UNIT_CORES, -ENOENT);
	bad("2K", DRF_UNIT_CORES, -ENOENT);
	bad("two", DRF_UNIT_CORES, -EINVAL);
}

static void test_durations(void **state)
{
	double ms = -1;
	const char *why = NULL;

	(void)state;
	assert_int_equal(drf_parse_duration_ms("1s", &ms, NULL), 0);
	assert_close(ms, 1000, 0, "1s");
	assert_int_equal(drf_parse_duration_ms("250ms", &ms, NULL), 0);
	assert_close(ms, 250, 0, "250ms");
	assert_int_equal(drf_parse_duration_ms("2", &ms, NULL), 0);
	assert_close(ms, 2000, 0, "plain seconds");
	assert_int_equal(drf_parse_duration_ms("1m", &ms, &why), -ENOENT);
	assert_int_equal(drf_parse_duration_ms("-1s", &ms, &why), -ERANGE);
	assert_int_equal(drf_parse_duration_ms("s", &ms, &why), -EINVAL);
}

static void test_format(void **state)
{
	char b[32];

	(void)state;
	assert_string_equal(drf_format_quantity(3, DRF_UNIT_CORES, b, sizeof(b)), "3");
	assert_string_equal(drf_format_quantity(7.0 / 3, DRF_UNIT_CORES, b, sizeof(b)), "2.333");
	assert_string_equal(drf_format_quantity(12.0 * 1073741824, DRF_UNIT_BYTES, b, sizeof(b)),
			    "12G");
	assert_string_equal(drf_format_quantity(1536, DRF_UNIT_BYTES, b, sizeof(b)), "1.500K");
	assert_string_equal(drf_format_quantity(512, DRF_UNIT_BYTES, b, sizeof(b)), "512");
	assert_string_equal(drf_format_quantity(1e8, DRF_UNIT_BITS, b, sizeof(b)), "100mbit");
	assert_string_equal(drf_format_quantity(INFINITY, DRF_UNIT_BITS, b, sizeof(b)), "unlimited");
	/* what reads as whole is written whole, as the exact value is */
	assert_string_equal(drf_format_quantity(3.9999996, DRF_UNIT_CORES, b, sizeof(b)), "4");
	assert_string_equal(drf_format_quantity(12.000001 * 1073741824, DRF_UNIT_BYTES, b, sizeof(b)),
			    "12G");
	assert_string_equal(drf_format_quantity(12.8, DRF_UNIT_CORES, b, sizeof(b)), "12.80");
	assert_string_equal(drf_format_quantity(-0.0000001, DRF_UNIT_CORES, b, sizeof(b)), "0");
}

static void test_names(void **state)
{
	(void)state;
	for (int r = 0; r < DRF_NRES; r++)
		assert_int_equal(drf_res_from_name(drf_res_name(r)), r);
	assert_int_equal(drf_res_from_name("gpu"), -1);
	assert_string_equal(drf_res_name(DRF_RES_NET), "net-rate");
}

/* Control characters written as \xHH, UTF-8 kept, cut at a whole character. */
static void test_escape_controls(void **state)
{
	char b[64];

	(void)state;
	assert_string_equal(drf_escape_controls("web-1", b, sizeof(b)), "web-1");
	assert_string_equal(drf_escape_controls("a\x1b[2Jb", b, sizeof(b)), "a\\x1b[2Jb");
	assert_string_equal(drf_escape_controls("l1\nl2\r\t\x7f", b, sizeof(b)),
			    "l1\\x0al2\\x0d\\x09\\x7f");
	/* UTF-8 passes; C1 controls (U+009B is CSI), stray bytes and overlongs do not */
	assert_string_equal(drf_escape_controls("caf\xc3\xa9 \xe2\x82\xac", b, sizeof(b)),
			    "caf\xc3\xa9 \xe2\x82\xac");
	assert_string_equal(drf_escape_controls("\xc2\x9b" "1m", b, sizeof(b)), "\\xc2\\x9b1m");
	assert_string_equal(drf_escape_controls("\x9b\xff\xc0\xaf", b, sizeof(b)),
			    "\\x9b\\xff\\xc0\\xaf");
	assert_string_equal(drf_escape_controls("\xed\xa0\x80", b, sizeof(b)),
			    "\\xed\\xa0\\x80");
	/* truncated whole: never half an escape or half a character */
	assert_string_equal(drf_escape_controls("ab\x1b", b, 6), "ab");
	assert_string_equal(drf_escape_controls("ab\xc3\xa9", b, 4), "ab");
	assert_string_equal(drf_escape_controls("abc", b, 1), "");
	/* text of many lines keeps its newlines, nothing else */
	assert_string_equal(drf_escape_text("a\nb\x1b\r\n", b, sizeof(b)), "a\nb\\x1b\\x0d\n");
}

/* A refused quantity's hint names a value the parser takes, and it is WANT. */
static void hinted(const char *s, enum drf_unit u, double want)
{
	char buf[128], val[32];
	const char *h, *q = NULL;
	double v = -1;

	assert_int_equal(drf_parse_quantity(s, u, &v, NULL), -ENOENT);
	h = drf_quantity_hint(s, u, buf, sizeof(buf));
	if (!h || !(q = strchr(h, '\''))) {
		print_error("'%s': no hint\n", s);
		fail();
	}
	snprintf(val, sizeof(val), "%.*s", (int)strcspn(q + 1, "'"), q + 1);
	ok(val, u, want);
}

static void test_hints(void **state)
{
	char buf[128];

	(void)state;
	hinted("8GB", DRF_UNIT_BYTES, 8.0 * 1073741824);
	hinted("512MiB", DRF_UNIT_BYTES, 512.0 * 1048576);
	hinted("1g", DRF_UNIT_BYTES, 1073741824);
	hinted("2 KB", DRF_UNIT_BYTES, 2048);
	hinted("150%", DRF_UNIT_CORES, 1.5);
	hinted("500m", DRF_UNIT_CORES, 0.5);
	hinted("2cores", DRF_UNIT_CORES, 2);
	hinted("100M", DRF_UNIT_BITS, 100e6);
	hinted("10kbits", DRF_UNIT_BITS, 10e3);
	hinted("100Mbit", DRF_UNIT_BITS, 100e6);
	hinted("1 GBIT", DRF_UNIT_BITS, 1e9);
	/* nothing near: no hint */
	assert_null(drf_quantity_hint("8XB", DRF_UNIT_BYTES, buf, sizeof(buf)));
	assert_null(drf_quantity_hint("abc", DRF_UNIT_BYTES, buf, sizeof(buf)));
	assert_null(drf_quantity_hint("8Gbit", DRF_UNIT_BYTES, buf, sizeof(buf)));
	/* a rate in bytes (GB) is not guessed into bits */
	assert_null(drf_quantity_hint("1GB", DRF_UNIT_BITS, buf, sizeof(buf)));
	assert_null(drf_quantity_hint("2x", DRF_UNIT_CORES, buf, sizeof(buf)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bytes),     cmocka_unit_test(test_bits),
		cmocka_unit_test(test_cores),     cmocka_unit_test(test_durations),
		cmocka_unit_test(test_format),    cmocka_unit_test(test_names),
		cmocka_unit_test(test_escape_controls), cmocka_unit_test(test_hints),
	};

	return cmocka_run_group_tests_name("units", tests, NULL, NULL);
}
