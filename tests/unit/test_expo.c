// SPDX-License-Identifier: MIT
/*
 * The Prometheus text exposition parser of drfctl top (agent/cli/expo.c):
 * names, labels and their escapes, values with NaN and infinities, timestamps,
 * comments, and the malformed lines it must refuse rather than guess at.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "expo.h"

/* Parses line as one sample, which must be accepted. */
static struct expo_sample one(const char *line)
{
	struct expo_sample s = { 0 };
	const char *why = NULL;
	int r = expo_parse_line(line, strlen(line), &s, &why);

	if (r != 1) {
		print_error("'%s': expected a sample, got %d (%s)\n", line, r, why ? why : "-");
		fail();
	}
	return s;
}

/* line must be refused as malformed, with a reason. */
static void bad(const char *line)
{
	struct expo_sample s = { 0 };
	const char *why = NULL;
	int r = expo_parse_line(line, strlen(line), &s, &why);

	if (r != -EINVAL) {
		print_error("'%s': expected -EINVAL, got %d\n", line, r);
		if (r == 1)
			expo_sample_free(&s);
		fail();
	}
	assert_non_null(why);
	assert_null(s.name); /* nothing handed out */
}

static void test_plain(void **state)
{
	struct expo_sample s;

	(void)state;
	s = one("drfd_up 1");
	assert_string_equal(s.name, "drfd_up");
	assert_int_equal(s.n_labels, 0);
	assert_true(s.value == 1);
	assert_false(s.has_timestamp);
	expo_sample_free(&s);

	s = one("a:b_c:9 -2.5e-3 1700000000123");
	assert_string_equal(s.name, "a:b_c:9");
	assert_true(s.value == -2.5e-3);
	assert_true(s.has_timestamp);
	assert_true(s.timestamp_ms == 1700000000123);
	expo_sample_free(&s);

	s = one("_x\t \t.5\t");
	assert_string_equal(s.name, "_x");
	assert_true(s.value == 0.5);
	expo_sample_free(&s);

	s = one("  x 1. -42");
	assert_true(s.value == 1);
	assert_true(s.timestamp_ms == -42);
	expo_sample_free(&s);

	s = one("x +7E+2");
	assert_true(s.value == 700);
	expo_sample_free(&s);

	s = one("x 1e-400"); /* underflows to zero: a number all the same */
	assert_true(s.value == 0);
	expo_sample_free(&s);
}

static void test_special_values(void **state)
{
	struct expo_sample s;

	(void)state;
	s = one("x +Inf");
	assert_true(isinf(s.value) && s.value > 0);
	expo_sample_free(&s);
	s = one("x Inf");
	assert_true(isinf(s.value) && s.value > 0);
	expo_sample_free(&s);
	s = one("x -Inf");
	assert_true(isinf(s.value) && s.value < 0);
	expo_sample_free(&s);
	s = one("x NaN");
	assert_true(isnan(s.value));
	expo_sample_free(&s);
	s = one("x nan");
	assert_true(isnan(s.value));
	expo_sample_free(&s);
	s = one("drfd_limit{tenant=\"A\",resource=\"cpu\"} +Inf");
	assert_true(isinf(s.value));
	assert_string_equal(expo_label(&s, "resource"), "cpu");
	expo_sample_free(&s);
}

static void test_labels(void **state)
{
	struct expo_sample s;

	(void)state;
	s = one("drfd_use{tenant=\"web\",resource=\"io-read\",window=\"tick\"} 4194304");
	assert_string_equal(s.name, "drfd_use");
	assert_int_equal(s.n_labels, 3);
	assert_string_equal(s.labels[0].name, "tenant");
	assert_string_equal(s.labels[0].value, "web");
	assert_string_equal(expo_label(&s, "window"), "tick");
	assert_null(expo_label(&s, "of"));
	assert_true(s.value == 4194304);
	expo_sample_free(&s);

	/* Blanks around the tokens, a trailing comma, an empty set, an empty value. */
	s = one("m { a = \"1\" , b=\"\", } 2");
	assert_int_equal(s.n_labels, 2);
	assert_string_equal(expo_label(&s, "a"), "1");
	assert_string_equal(expo_label(&s, "b"), "");
	expo_sample_free(&s);
	s = one("m{} 3");
	assert_int_equal(s.n_labels, 0);
	assert_true(s.value == 3);
	expo_sample_free(&s);
	s = one("m{le=\"0.5\"}7");
	assert_string_equal(expo_label(&s, "le"), "0.5");
	assert_true(s.value == 7);
	expo_sample_free(&s);
}

static void test_escapes(void **state)
{
	struct expo_sample s;

	(void)state;
	s = one("m{t=\"a\\\\b\\\"c\\nd\"} 1");
	assert_string_equal(expo_label(&s, "t"), "a\\b\"c\nd");
	expo_sample_free(&s);
	/* Commas, braces, '=' and '#' inside a value are the value's. */
	s = one("m{t=\"x,y}=#z\",u=\"\\\\\"} 1");
	assert_string_equal(expo_label(&s, "t"), "x,y}=#z");
	assert_string_equal(expo_label(&s, "u"), "\\");
	expo_sample_free(&s);
	/* UTF-8 stays as it is. */
	s = one("m{t=\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"} 1");
	assert_string_equal(expo_label(&s, "t"), "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	expo_sample_free(&s);
}

static void test_comments_and_blank(void **state)
{
	struct expo_sample s = { 0 };

	(void)state;
	assert_int_equal(expo_parse_line("# HELP drfd_up Whether drfd runs.", 33, &s, NULL), 0);
	assert_int_equal(expo_parse_line("# TYPE drfd_up gauge", 20, &s, NULL), 0);
	assert_int_equal(expo_parse_line("   # anything { at all", 22, &s, NULL), 0);
	assert_int_equal(expo_parse_line("", 0, &s, NULL), 0);
	assert_int_equal(expo_parse_line(" \t ", 3, &s, NULL), 0);
	assert_null(s.name);
	/* The length counts, not a NUL: "x 12" read as "x 1". */
	assert_int_equal(expo_parse_line("x 12", 3, &s, NULL), 1);
	assert_true(s.value == 1);
	expo_sample_free(&s);
}

static void test_malformed(void **state)
{
	(void)state;
	bad("drfd_up");                       /* no value */
	bad("drfd_up ");
	bad("9x 1");                          /* name starts with a digit */
	bad("dr-fd 1");                       /* '-' in a name */
	bad("drfd.up 1");
	bad("x 1 2 3");                       /* something after the timestamp */
	bad("x one");
	bad("x 1,5");
	bad("x 0x10");                        /* hex float */
	bad("x 1e");
	bad("x .");
	bad("x +");
	bad("x Infinity");
	bad("x 1e999");                       /* out of range */
	bad("x 1 1.5");                       /* timestamp not whole */
	bad("x 1 99999999999999999999");      /* timestamp out of range */
	bad("x 1 -");
	bad("m{a=\"1\" 1");                   /* not closed */
	bad("m{a=\"1} 1");                    /* value not closed */
	bad("m{a=1} 1");                      /* value not quoted */
	bad("m{a='1'} 1");
	bad("m{a} 1");                        /* no '=' */
	bad("m{=\"1\"} 1");                   /* no name */
	bad("m{1a=\"1\"} 1");
	bad("m{a:b=\"1\"} 1");                /* ':' is for metric names only */
	bad("m{a=\"1\" b=\"2\"} 1");          /* no ',' */
	bad("m{a=\"1\",,b=\"2\"} 1");
	bad("m{a=\"1\",a=\"2\"} 1");          /* a label twice */
	bad("m{a=\"\\t\"} 1");                /* an escape other than \\ \" \n */
	bad("m{a=\"\\\"} 1");                 /* the quote escaped: not closed */
	bad("m{a=\"\xc3\"} 1");               /* cut UTF-8 */
	bad("m{a=\"\xc0\xaf\"} 1");           /* overlong */
	bad("m{a=\"\xed\xa0\x80\"} 1");       /* a surrogate */
	bad("m{a=\"\xff\"} 1");
	bad("m{a=\"1\"}");                    /* labels but no value */
	bad("{a=\"1\"} 1");                   /* no name */
	bad("m\r 1");                         /* CR is not a blank */
	bad("x 1\r");
}

static void test_document(void **state)
{
	static const char text[] =
		"drfd-ignored-by-caller\n";
	static const char doc[] =
		"# HELP drfd_up Whether drfd runs (1).\n"
		"# TYPE drfd_up gauge\n"
		"drfd_up 1\n"
		"\n"
		"# TYPE drfd_allocation gauge\n"
		"drfd_allocation{tenant=\"A\",resource=\"cpu\"} 1.5\n"
		"drfd_allocation{tenant=\"B\",resource=\"cpu\"} 0.5\n"
		"drfd_allocation{tenant=\"A\",resource=\"memory\"} 1073741824\n"
		"drfd_dominant_share_ratio{tenant=\"A\",of=\"use\"} NaN\n"
		"drfd_dominant_share_ratio{tenant=\"A\",of=\"allocation\"} 0.75\n";
	const struct expo_sample *s;
	struct expo e = { 0 };
	size_t line = 0;
	const char *why = NULL;

	(void)state;
	assert_int_equal(expo_parse(doc, strlen(doc), &e, &line, &why), 0);
	assert_int_equal(e.n, 6);
	s = expo_find(&e, "drfd_allocation", "resource", "cpu", "tenant", "B", NULL);
	assert_non_null(s);
	assert_true(s->value == 0.5);
	s = expo_find(&e, "drfd_allocation", "tenant", "A", NULL);
	assert_non_null(s); /* the first of A's */
	assert_true(s->value == 1.5);
	s = expo_find(&e, "drfd_dominant_share_ratio", "tenant", "A", "of", "allocation", NULL);
	assert_non_null(s);
	assert_true(s->value == 0.75);
	assert_null(expo_find(&e, "drfd_allocation", "tenant", "C", NULL));
	assert_null(expo_find(&e, "drfd_use", NULL));
	assert_non_null(expo_find(&e, "drfd_up", NULL));
	expo_free(&e);

	/* Empty text is an empty exposition. */
	assert_int_equal(expo_parse("", 0, &e, NULL, NULL), 0);
	assert_int_equal(e.n, 0);
	expo_free(&e);

	/* A malformed line names its number, and nothing is kept. */
	e = (struct expo){ 0 };
	assert_int_equal(expo_parse(text, strlen(text), &e, &line, &why), -EINVAL);
	assert_int_equal(line, 1);
	assert_non_null(why);
	assert_null(e.samples);
	{
		static const char third[] = "# c\nx 1\ny{a=\"1\"} z\nw 2\n";

		assert_int_equal(expo_parse(third, strlen(third), &e, &line, &why), -EINVAL);
		assert_int_equal(line, 3);
	}

	/* A last line without its newline is an answer cut short. */
	assert_int_equal(expo_parse("x 1\ny 2", 7, &e, &line, &why), -EINVAL);
	assert_int_equal(line, 2);
	assert_int_equal(expo_parse("x 1\ny 2\n", 8, &e, NULL, NULL), 0);
	assert_int_equal(e.n, 2);
	expo_free(&e);

	/* A NUL byte inside the text is refused, not read as the end. */
	assert_int_equal(expo_parse("x 1\ny\0 2\n", 9, &e, &line, &why), -EINVAL);
	assert_int_equal(line, 2);
}

/*
 * Many samples and many labels (their arrays grown past the first allocation):
 * every one kept, in order; a label given twice among many is still refused.
 */
static void test_many(void **state)
{
	static char doc[65536], line[1024];
	struct expo e = { 0 };
	struct expo_sample s;
	size_t at = 0, n;

	(void)state;
	for (int k = 0; k < 500; k++)
		at += (size_t)snprintf(doc + at, sizeof(doc) - at, "m{k=\"%d\"} %d\n", k, k);
	assert_true(at < sizeof(doc));
	assert_int_equal(expo_parse(doc, at, &e, NULL, NULL), 0);
	assert_int_equal(e.n, 500);
	for (int k = 0; k < 500; k++) {
		char v[8];

		snprintf(v, sizeof(v), "%d", k);
		assert_string_equal(expo_label(&e.samples[k], "k"), v);
		assert_true(e.samples[k].value == k);
	}
	expo_free(&e);

	n = (size_t)snprintf(line, sizeof(line), "m{");
	for (int k = 0; k < 40; k++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, "%sl%d=\"v%d\"", k ? "," : "",
				      k, k);
	snprintf(line + n, sizeof(line) - n, "} 1");
	s = one(line);
	assert_int_equal(s.n_labels, 40);
	assert_string_equal(s.labels[0].name, "l0");
	assert_string_equal(expo_label(&s, "l39"), "v39");
	expo_sample_free(&s);
	snprintf(line + n, sizeof(line) - n, ",l17=\"again\"} 1");
	bad(line);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),        cmocka_unit_test(test_special_values),
		cmocka_unit_test(test_labels),       cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_comments_and_blank), cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_document),
		cmocka_unit_test(test_many),
	};

	return cmocka_run_group_tests_name("expo", tests, NULL, NULL);
}
