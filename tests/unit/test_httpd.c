// SPDX-License-Identifier: MIT
/*
 * [agent] metrics-listen (agent/daemon/httpd.c) over the fake drfd
 * (tests/lib/fakedrfd.h), with the real libmicrohttpd on loopback: the
 * listening socket comes from recording ops that bind 127.0.0.1 whatever the
 * config says, on a free port of this host per port of the config's (so two
 * addresses with the same port of the config collide on the real one, as
 * 127.0.0.1:9100 and 0.0.0.0:9100 would). The event loop is run by the test,
 * a turn at a time, until the client has its whole answer.
 *
 * - GET /metrics: 200, the exposition's content type, the text the
 *   metrics-file has (but for its first line), the latest tick's; HEAD: the
 *   headers alone; another method 405 with Allow; another path 404;
 * - past the per-address cap, a connection is closed unanswered, and a slot
 *   that frees up is taken again;
 * - at libmicrohttpd's cap it stops listening, and listens again as soon as
 *   the connections go; held connections past DRFD_HTTP_CONN_KEEP make room
 *   for a scraper; a request that never ends is shut at its deadline; kept-
 *   alive and pipelined requests are each answered; headers past the
 *   connection's memory get 431;
 * - at start, an address that cannot be listened on is an error that names
 *   the key and the address;
 * - a reload moves the endpoint (to a new port; to the same port on another
 *   address, closing the old one first), keeps it when the new address
 *   cannot be listened on (the reload refused, the old endpoint serving), and
 *   closes it when metrics-listen is removed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include "daemon.h"
#include "fakedrfd.h"
#include "httpd.h"
#include "metrics.h"
#include "testlib.h"

static struct fakedrfd fx;
#define d (fx.d)

#define TWO_CPU "[capacity]\ncpu = 2\nmemory = 2G\n[tenant a]\ncpu = 1\n"

/* The recording listen ops: config port -> a real free port of 127.0.0.1. */
struct fake_listen {
	uint16_t conf_port[4], real_port[4];
	unsigned n_ports;
	struct drf_listen_addr asked[16];
	unsigned calls;
	int fail;                       /* -errno: the next calls fail so */
	bool fail_only;                 /* only those for fail_at */
	struct drf_listen_addr fail_at;
};
static struct fake_listen fl;

static uint16_t free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	close(fd);
	return ntohs(sa.sin_port);
}

static uint16_t real_port(uint16_t conf)
{
	for (unsigned i = 0; i < fl.n_ports; i++)
		if (fl.conf_port[i] == conf)
			return fl.real_port[i];
	assert_true(fl.n_ports < 4);
	fl.conf_port[fl.n_ports] = conf;
	fl.real_port[fl.n_ports] = free_port();
	return fl.real_port[fl.n_ports++];
}

static int fake_listen(void *ctx, const struct drf_listen_addr *a)
{
	struct drf_listen_addr lo = { .family = AF_INET, .addr = { 127, 0, 0, 1 } };

	assert_ptr_equal(ctx, &fl);
	if (fl.calls < 16)
		fl.asked[fl.calls] = *a;
	fl.calls++;
	if (fl.fail && (!fl.fail_only || drfd_listen_addr_equal(a, &fl.fail_at)))
		return fl.fail;
	lo.port = real_port(a->port);
	return drfd_http_real_ops.listen(NULL, &lo);
}

static const struct drfd_http_ops fake_ops = { .listen = fake_listen };

static char prom[256];

static void write_conf(const char *listen)
{
	char agent[512];

	snprintf(agent, sizeof(agent), "metrics-file = %s\n%s%s%s", prom,
		 listen ? "metrics-listen = " : "", listen ? listen : "", listen ? "\n" : "");
	assert_int_equal(fakedrfd_write(&fx, agent, TWO_CPU), 0);
}

/* A drfd with metrics-listen = listen, its endpoint set up as main() does, started. */
static void start_with(const char *listen)
{
	char err[1024];

	write_conf(listen);
	drf_declared_free(&d.decl);
	assert_int_equal(drf_declared_load(&d.decl, fx.conf, fx.env.host, err, sizeof(err)), 0);
	assert_int_equal(sd_event_new(&d.event), 0);
	fx.env.http = &fake_ops;
	fx.env.http_ctx = &fl;
	assert_int_equal(drfd_http_listen(&d, err, sizeof(err)), 0);
	assert_int_equal(fakedrfd_start(&fx), 0);
}

static int setup(void **state)
{
	(void)state;
	memset(&fl, 0, sizeof(fl));
	assert_int_equal(fakedrfd_setup(&fx, NULL, TWO_CPU), 0);
	snprintf(prom, sizeof(prom), "%s/drfd.prom", fx.dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	fakedrfd_teardown(&fx);
	return 0;
}

/* A connection to 127.0.0.1:port, non-blocking; -1 if refused. */
static int connect_to(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	assert_int_equal(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	return fd;
}

/* A connection from 127.0.0.src to 127.0.0.1:port, its connect under way (non-blocking). */
static int connect_from(int src, uint16_t port)
{
	struct sockaddr_in me = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK + (uint32_t)src - 1) };
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&me, sizeof(me)), 0);
	assert_true(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno == EINPROGRESS);
	return fd;
}

/*
 * Turns of the loop (at most turns_max, each waiting 100 ms at most for an
 * event) sending req on fd once it is connected (NULL: nothing to send) and
 * reading what the server sends until it closes: that, to free, its length
 * 0 if the server did not close within the turns.
 */
static char *exchange(int fd, const char *req, int turns_max, size_t *ret_len)
{
	char *buf = NULL, chunk[65536];
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	bool eof = false, sent = req == NULL;

	assert_non_null(m);
	for (int turn = 0; turn < turns_max && !eof; turn++) {
		ssize_t n;

		assert_true(sd_event_run(d.event, 100000) >= 0);
		if (!sent)
			sent = send(fd, req, strlen(req), MSG_NOSIGNAL) == (ssize_t)strlen(req);
		while ((n = recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT)) > 0)
			fwrite(chunk, 1, (size_t)n, m);
		eof = n == 0 || (n < 0 && errno != EAGAIN && errno != ENOTCONN);
	}
	assert_int_equal(fclose(m), 0);
	*ret_len = eof ? len : 0;
	return buf;
}

/* The status code an answer starts with; 0 for none. */
static int answer_status(const char *all, size_t len)
{
	int status;

	return len > 0 && sscanf(all, "HTTP/1.1 %d ", &status) == 1 ? status : 0;
}

/*
 * The answer to "METHOD PATH" at port, with the header line extra (NULL:
 * none): its status code, its head and body (to free).
 */
static int request_with(uint16_t port, const char *method, const char *path, const char *extra,
			char **head, char **body, size_t *body_len)
{
	char req[512], *all, *sep;
	size_t len;
	int fd = connect_from(1, port), status;

	snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: drfd\r\n%s%sConnection: close\r\n\r\n",
		 method, path, extra ? extra : "", extra ? "\r\n" : "");
	all = exchange(fd, req, 2000, &len);
	close(fd);
	status = answer_status(all, len);
	if (status == 0) {
		free(all);
		*head = NULL;
		*body = NULL;
		*body_len = 0;
		return 0;
	}
	sep = strstr(all, "\r\n\r\n");
	assert_non_null(sep);
	*body_len = len - (size_t)(sep + 4 - all);
	*body = malloc(*body_len + 1);
	assert_non_null(*body);
	memcpy(*body, sep + 4, *body_len);
	(*body)[*body_len] = '\0';
	sep[2] = '\0';
	*head = all;
	return status;
}

static int request(uint16_t port, const char *method, const char *path, char **head,
		   char **body, size_t *body_len)
{
	return request_with(port, method, path, NULL, head, body, body_len);
}

/* The status of GET /metrics at port, the loop run at most turns turns of 100 ms (0: no answer). */
static int request_within(uint16_t port, int turns_max)
{
	int fd = connect_from(1, port), status;
	char *all;
	size_t len;

	all = exchange(fd, "GET /metrics HTTP/1.1\r\nHost: drfd\r\nConnection: close\r\n\r\n",
		       turns_max, &len);
	close(fd);
	status = answer_status(all, len);
	free(all);
	return status;
}

/* Whether head has header "Name: value" (the name in any case). */
static bool has_header(const char *head, const char *name, const char *value)
{
	char want[256];

	snprintf(want, sizeof(want), "\r\n%s: %s\r\n", name, value);
	return strcasestr(head, want) != NULL;
}

static char *read_file(const char *path, size_t *ret_len)
{
	char *buf = NULL, chunk[4096];
	size_t len = 0, n;
	FILE *m = open_memstream(&buf, &len), *f = fopen(path, "r");

	assert_non_null(m);
	assert_non_null(f);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, m);
	fclose(f);
	assert_int_equal(fclose(m), 0);
	*ret_len = len;
	return buf;
}

/* body, gunzip'ed into out (to free): its length, or -1 when it is no gzip. */
static long gunzip(const char *body, size_t len, char **out)
{
	z_stream z = { 0 };
	size_t cap = (1 << 20) + 1;
	long n;

	*out = malloc(cap);
	assert_non_null(*out);
	assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
	z.next_in = (Bytef *)body;
	z.avail_in = (uInt)len;
	z.next_out = (Bytef *)*out;
	z.avail_out = (uInt)(cap - 1);
	n = inflate(&z, Z_FINISH) == Z_STREAM_END && z.avail_in == 0 ? (long)z.total_out : -1;
	inflateEnd(&z);
	(*out)[n >= 0 && (size_t)n < cap ? (size_t)n : 0] = '\0'; /* a string, for strstr */
	return n;
}

/*
 * gzip for a scraper that asks (Prometheus does): the same text, gzip'ed,
 * Content-Encoding said; not for one that does not ask or refuses it (q=0).
 */
static void test_gzip(void **state)
{
	static const struct {
		const char *ae;
		bool gz;
	} cases[] = {
		{ NULL, false },
		{ "Accept-Encoding: gzip", true },
		{ "Accept-Encoding: gzip, deflate", true },
		{ "Accept-Encoding: deflate, GZIP;q=0.5", true },
		{ "Accept-Encoding: *", true },
		{ "Accept-Encoding: gzip;q=0", false },
		{ "Accept-Encoding: gzip; q=0.000, identity", false },
		{ "Accept-Encoding: identity", false },
		{ "Accept-Encoding: xgzip", false },
		/* gzip's own entry decides over *'s */
		{ "Accept-Encoding: *;q=0.5, gzip;q=0", false },
		{ "Accept-Encoding: *;q=0, gzip", true },
		{ "Accept-Encoding: gzip;q=0.001", true },
	};
	char *head, *body, *plain, *gz;
	size_t len, plen;
	uint16_t port;
	struct drfd_http_stats st;
	unsigned want_gz = 0;

	(void)state;
	start_with("127.0.0.1:9100");
	port = real_port(9100);
	assert_int_equal(request(port, "GET", "/metrics", &head, &plain, &plen), 200);
	assert_true(has_header(head, "Vary", "Accept-Encoding"));
	free(head);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		assert_int_equal(request_with(port, "GET", "/metrics", cases[k].ae, &head, &body,
					      &len), 200);
		if (cases[k].gz) {
			long n = gunzip(body, len, &gz);

			if (n != (long)plen || memcmp(gz, plain, plen) != 0)
				fail_msg("'%s': the gunzip'ed body is not the text (%ld, %zu bytes)",
					 cases[k].ae, n, plen);
			assert_true(has_header(head, "Content-Encoding", "gzip"));
			assert_true(len < plen);
			free(gz);
			want_gz++;
		} else {
			if (strcasestr(head, "Content-Encoding"))
				fail_msg("'%s': answered with a Content-Encoding", cases[k].ae);
			assert_int_equal(len, plen);
			assert_memory_equal(body, plain, plen);
		}
		free(head);
		free(body);
	}
	/* the next tick's text, gzip'ed anew */
	fakedrfd_advance(&fx, DRF_USEC_PER_SEC);
	drfd_tick(&d, 0);
	assert_int_equal(request_with(port, "GET", "/metrics", "Accept-Encoding: gzip", &head,
				      &body, &len), 200);
	assert_true(gunzip(body, len, &gz) > 0);
	assert_non_null(strstr(gz, "\ndrfd_ticks_total 2\n"));
	free(gz);
	free(head);
	free(body);
	free(plain);
	drfd_httpd_stats(d.http, &st);
	assert_int_equal(st.gzip, want_gz + 1);
}

static void test_serves_metrics(void **state)
{
	char *head, *body, *file;
	size_t len, flen, mark = strlen(DRFD_METRICS_MARK);
	uint16_t port;
	struct drfd_http_stats st;

	(void)state;
	start_with("127.0.0.1:9100");
	assert_int_equal(fl.calls, 1);
	assert_int_equal(fl.asked[0].family, AF_INET);
	assert_int_equal(fl.asked[0].port, 9100);
	port = real_port(9100);

	/* the first tick's text, the metrics-file's but for its first line */
	assert_int_equal(request(port, "GET", "/metrics", &head, &body, &len), 200);
	assert_true(has_header(head, "Content-Type", "text/plain; version=0.0.4; charset=utf-8"));
	file = read_file(prom, &flen);
	assert_true(flen > mark && strncmp(file, DRFD_METRICS_MARK, mark) == 0);
	assert_int_equal(len, flen - mark);
	assert_memory_equal(body, file + mark, len);
	assert_non_null(strstr(body, "\ndrfd_allocation_cores{tenant=\"a\",resource=\"cpu\"} 1\n"));
	free(head);
	free(body);
	free(file);

	/* each tick's: the file and the endpoint agree again after more ticks */
	fakedrfd_advance(&fx, DRF_USEC_PER_SEC);
	drfd_tick(&d, 0);
	fakedrfd_advance(&fx, DRF_USEC_PER_SEC);
	drfd_tick(&d, 0);
	assert_int_equal(request(port, "GET", "/metrics", &head, &body, &len), 200);
	file = read_file(prom, &flen);
	assert_int_equal(len, flen - mark);
	assert_memory_equal(body, file + mark, len);
	assert_non_null(strstr(body, "\ndrfd_ticks_total 3\n"));
	free(head);
	free(body);
	free(file);

	/* HEAD: the same headers, no body */
	assert_int_equal(request(port, "HEAD", "/metrics", &head, &body, &len), 200);
	assert_true(has_header(head, "Content-Type", "text/plain; version=0.0.4; charset=utf-8"));
	assert_int_equal(len, 0);
	free(head);
	free(body);

	assert_int_equal(request(port, "POST", "/metrics", &head, &body, &len), 405);
	assert_true(has_header(head, "Allow", "GET, HEAD"));
	free(head);
	free(body);
	assert_int_equal(request(port, "DELETE", "/metrics", &head, &body, &len), 405);
	free(head);
	free(body);
	assert_int_equal(request(port, "GET", "/", &head, &body, &len), 404);
	free(head);
	free(body);
	assert_int_equal(request(port, "GET", "/metrics/x", &head, &body, &len), 404);
	free(head);
	free(body);

	drfd_httpd_stats(d.http, &st);
	assert_int_equal(st.ok, 3);
	assert_int_equal(st.not_allowed, 2);
	assert_int_equal(st.not_found, 2);
	assert_int_equal(st.unavailable, 0);
}

/* Connections of one address past DRFD_HTTP_CONN_PER_IP are closed unanswered. */
static void test_per_address_cap(void **state)
{
	int idle[DRFD_HTTP_CONN_PER_IP];
	char *head, *body;
	size_t len;
	uint16_t port;

	(void)state;
	start_with("127.0.0.1:9100");
	port = real_port(9100);
	for (int i = 0; i < DRFD_HTTP_CONN_PER_IP; i++) {
		idle[i] = connect_to(port);
		assert_true(idle[i] >= 0);
	}
	/* accepted, and held open while they send nothing */
	for (int turn = 0; turn < 5; turn++)
		assert_true(sd_event_run(d.event, 10000) >= 0);
	assert_int_equal(request(port, "GET", "/metrics", &head, &body, &len), 0);
	assert_null(head);
	/* one slot free again: served */
	close(idle[0]);
	for (int turn = 0; turn < 5; turn++)
		assert_true(sd_event_run(d.event, 10000) >= 0);
	assert_int_equal(request(port, "GET", "/metrics", &head, &body, &len), 200);
	free(head);
	free(body);
	for (int i = 1; i < DRFD_HTTP_CONN_PER_IP; i++)
		close(idle[i]);
}

static void turns(int n, uint64_t usec)
{
	for (int i = 0; i < n; i++)
		assert_true(sd_event_run(d.event, usec) >= 0);
}

/* Whether the server has shut fd (its end read, or reset); what it sent before is read and dropped. */
static bool shut_by_server(int fd)
{
	char buf[65536];
	ssize_t n;

	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		;
	return n == 0 || (n < 0 && errno != EAGAIN);
}

/*
 * libmicrohttpd at its cap (DRFD_HTTP_CONN_MAX held connections from many
 * addresses, none over the per-address cap, and none shut for a new one
 * here) stops listening: one more is not taken in. Once they all go, it
 * listens again at once. Before, nothing woke it to listen again, and the
 * endpoint stayed deaf until a restart.
 */
static void test_cap_then_recovers(void **state)
{
	static const char req[] = "GET /metrics HTTP/1.1\r\nHost: drfd\r\nConnection: close\r\n\r\n";
	static const struct drfd_http_limits lim = { .keep = DRFD_HTTP_CONN_MAX };
	int held[DRFD_HTTP_CONN_MAX], late;
	struct drfd_http_stats st;
	char *all;
	size_t len;
	uint16_t port;

	(void)state;
	fx.env.http_limits = &lim;
	start_with("127.0.0.1:9100");
	drfd_tick(&d, 0);
	port = real_port(9100);
	for (int i = 0; i < DRFD_HTTP_CONN_MAX; i++)
		held[i] = connect_from(2 + i / DRFD_HTTP_CONN_PER_IP, port);
	for (int t = 0; t < 200 && (drfd_httpd_stats(d.http, &st), st.connections) < DRFD_HTTP_CONN_MAX; t++)
		turns(1, 10000);
	assert_int_equal(st.connections, DRFD_HTTP_CONN_MAX);
	/* One more, from another address, with its request: not answered while they stay. */
	late = connect_from(2 + DRFD_HTTP_CONN_MAX / DRFD_HTTP_CONN_PER_IP, port);
	turns(2, 10000);
	assert_int_equal(send(late, req, sizeof(req) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(req) - 1);
	turns(10, 10000);
	assert_false(shut_by_server(late));
	drfd_httpd_stats(d.http, &st);
	assert_int_equal(st.ok, 0);
	for (int i = 0; i < DRFD_HTTP_CONN_MAX; i++)
		close(held[i]);
	/* A few turns: the one waiting is answered, and a new scrape too. */
	all = exchange(late, NULL, 10, &len);
	close(late);
	assert_int_equal(answer_status(all, len), 200);
	free(all);
	assert_int_equal(request_within(port, 20), 200);
	drfd_httpd_stats(d.http, &st);
	assert_int_equal(st.evicted, 0);
}

/*
 * A slowloris: a request that never ends, a header line every 50 ms at most
 * (never idle). At the exchange's deadline (1 s here), not before, the
 * connection is shut; a scrape meanwhile, and after, is served.
 */
static void test_slow_request_shut(void **state)
{
	static const struct drfd_http_limits lim = { .deadline_usec = DRF_USEC_PER_SEC };
	struct drfd_http_stats st;
	char *head, *body, line[64];
	size_t len;
	uint16_t port;
	uint64_t t0, shut_at = 0;
	int slow, sent = 0;
	bool scraped = false;

	(void)state;
	fx.env.http_limits = &lim;
	start_with("127.0.0.1:9100");
	drfd_tick(&d, 0);
	port = real_port(9100);
	t0 = drf_mono_usec(&drf_clock_system);
	slow = connect_from(2, port);
	turns(2, 10000);
	assert_int_equal(send(slow, "GET /metrics HTTP/1.1\r\n", 23, MSG_NOSIGNAL), 23);
	while (!shut_at && drf_mono_usec(&drf_clock_system) - t0 < 10 * DRF_USEC_PER_SEC) {
		snprintf(line, sizeof(line), "X-Slow-%d: yes\r\n", sent++);
		if (send(slow, line, strlen(line), MSG_NOSIGNAL) < 0 || (turns(5, 10000), shut_by_server(slow)))
			shut_at = drf_mono_usec(&drf_clock_system);
		/* Meanwhile, a scrape is served. */
		if (!scraped && drf_mono_usec(&drf_clock_system) - t0 > 300000) {
			assert_int_equal(request(port, "GET", "/metrics", &head, &body, &len), 200);
			free(head);
			free(body);
			scraped = true;
		}
	}
	close(slow);
	assert_true(scraped);
	assert_true(shut_at > 0);
	/* Not before its deadline: the connection started after t0. */
	assert_true(shut_at - t0 >= DRF_USEC_PER_SEC);
	drfd_httpd_stats(d.http, &st);
	assert_int_equal(st.past_deadline, 1);
	assert_int_equal(request(port, "GET", "/metrics", &head, &body, &len), 200);
	free(head);
	free(body);
	/* Counted where an operator sees it: the metrics and the status. */
	{
		struct drf_view v;
		char *text = NULL;
		size_t tlen = 0;
		FILE *m = open_memstream(&text, &tlen);

		assert_non_null(m);
		drfd_view(&d, &v);
		assert_true(v.http.on);
		assert_int_equal(v.http.past_deadline, 1);
		drf_metrics_render(&v, DRF_METRICS_FULL, m);
		assert_int_equal(fclose(m), 0);
		assert_non_null(strstr(text, "drfd_http_connections_shut_total{reason=\"deadline\"} 1\n"));
		assert_non_null(strstr(text, "drfd_http_responses_total{code=\"200\"} "));
		free(text);
	}
}

/*
 * Twice libmicrohttpd's cap in held connections (from many addresses, none
 * over the per-address cap, each sending nothing): a scrape from another
 * address is served all the same, before any times out, the oldest held ones
 * shut past DRFD_HTTP_CONN_KEEP. Without that, they would fill the cap and
 * keep every scraper out until their idle timeout.
 */
static void test_held_connections_yield(void **state)
{
	enum { N = 2 * DRFD_HTTP_CONN_MAX };
	int held[N], gone = 0;
	struct drfd_http_stats st;
	uint16_t port;

	(void)state;
	start_with("127.0.0.1:9100");
	drfd_tick(&d, 0);
	port = real_port(9100);
	for (int i = 0; i < N; i++)
		held[i] = connect_from(2 + i / DRFD_HTTP_CONN_PER_IP, port);
	turns(20, 10000);
	/* Turns, not seconds: each serves what is there (a turn accepts 10 at most). */
	assert_int_equal(request_within(port, 100), 200);
	drfd_httpd_stats(d.http, &st);
	assert_true(st.evicted > 0);
	/* The first ones are the ones shut. */
	assert_true(shut_by_server(held[0]));
	for (int i = 0; i < N; i++) {
		gone += shut_by_server(held[i]);
		close(held[i]);
	}
	assert_true(gone >= N - DRFD_HTTP_CONN_MAX);
}

/*
 * Requests one after another on a kept-alive connection, and pipelined ones,
 * each get their answer, in order (before, the first got "Connection: close"
 * and the rest nothing); a request whose headers pass the connection's memory
 * gets 431 at once, and the connection is closed.
 */
static void test_keepalive_pipelining_and_large(void **state)
{
	static const char one[] = "GET /metrics HTTP/1.1\r\nHost: drfd\r\n\r\n";
	static const char two[] = "GET /metrics HTTP/1.1\r\nHost: drfd\r\n\r\n"
				  "GET /nothing HTTP/1.1\r\nHost: drfd\r\nConnection: close\r\n\r\n";
	char *all, *second, *first_end, big[3 * DRFD_HTTP_CONN_MEMORY / 2];
	size_t len;
	uint16_t port;
	int fd, n;

	(void)state;
	start_with("127.0.0.1:9100");
	drfd_tick(&d, 0);
	port = real_port(9100);
	fd = connect_from(1, port);
	turns(2, 10000);
	assert_int_equal(send(fd, one, sizeof(one) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(one) - 1);
	turns(5, 10000);
	/* Still open after its answer: then two pipelined, answered in order. */
	assert_int_equal(send(fd, two, sizeof(two) - 1, MSG_NOSIGNAL), (ssize_t)sizeof(two) - 1);
	all = exchange(fd, NULL, 20, &len);
	close(fd);
	assert_int_equal(answer_status(all, len), 200);
	/* The first answer's head keeps the connection. */
	first_end = strstr(all, "\r\n\r\n");
	assert_non_null(first_end);
	*first_end = '\0';
	assert_null(strcasestr(all, "\r\nConnection: close"));
	*first_end = '\r';
	second = strstr(all + 1, "HTTP/1.1 200 ");
	assert_non_null(second);
	second = strstr(second + 1, "HTTP/1.1 ");
	assert_non_null(second);
	assert_int_equal(answer_status(second, strlen(second)), 404);
	free(all);

	n = snprintf(big, sizeof(big), "GET /metrics HTTP/1.1\r\nHost: drfd\r\n");
	while (n < (int)sizeof(big) - 64)
		n += snprintf(big + n, sizeof(big) - (size_t)n, "X-Pad-%05d: 0123456789abcdef\r\n", n);
	n += snprintf(big + n, sizeof(big) - (size_t)n, "\r\n");
	fd = connect_from(1, port);
	turns(2, 10000);
	assert_int_equal(send(fd, big, (size_t)n, MSG_NOSIGNAL), n);
	all = exchange(fd, NULL, 5, &len);
	close(fd);
	assert_int_equal(answer_status(all, len), 431);
	free(all);
}

/* At start: an address that cannot be listened on fails, naming the key and the address. */
static void test_start_fails(void **state)
{
	char err[1024];

	(void)state;
	write_conf("[::1]:9100");
	drf_declared_free(&d.decl);
	assert_int_equal(drf_declared_load(&d.decl, fx.conf, fx.env.host, err, sizeof(err)), 0);
	assert_int_equal(sd_event_new(&d.event), 0);
	fx.env.http = &fake_ops;
	fx.env.http_ctx = &fl;
	fl.fail = -EADDRINUSE;
	err[0] = '\0';
	assert_int_equal(drfd_http_listen(&d, err, sizeof(err)), -EADDRINUSE);
	assert_null(d.http);
	assert_int_equal(fl.calls, 1);
	assert_int_equal(fl.asked[0].family, AF_INET6);
	assert_non_null(strstr(err, "metrics-listen"));
	assert_non_null(strstr(err, "[::1]:9100"));
	/* without metrics-listen, nothing is listened on */
	fl.fail = 0;
	write_conf(NULL);
	drf_declared_free(&d.decl);
	assert_int_equal(drf_declared_load(&d.decl, fx.conf, fx.env.host, err, sizeof(err)), 0);
	assert_int_equal(drfd_http_listen(&d, err, sizeof(err)), 0);
	assert_null(d.http);
	assert_int_equal(fl.calls, 1);
}

/* Whether the endpoint answers at port (a GET /metrics with 200). */
static bool serves(uint16_t port)
{
	char *head, *body;
	size_t len;
	int fd = connect_to(port), status;

	if (fd < 0)
		return false;
	close(fd);
	status = request(port, "GET", "/metrics", &head, &body, &len);
	free(head);
	free(body);
	return status == 200;
}

static void test_reload(void **state)
{
	struct drf_listen_addr a127 = { .family = AF_INET, .addr = { 127, 0, 0, 1 }, .port = 9100 };
	struct drf_listen_addr a2 = { .family = AF_INET, .addr = { 127, 0, 0, 2 }, .port = 9100 };
	struct drf_listen_addr b = { .family = AF_INET, .addr = { 127, 0, 0, 1 }, .port = 9200 };
	uint16_t p9100, p9200;

	(void)state;
	start_with("127.0.0.1:9100");
	p9100 = real_port(9100);
	p9200 = real_port(9200);
	assert_true(serves(p9100));

	/* the same address: nothing is bound again */
	write_conf("localhost:9100");
	assert_int_equal(drfd_reload(&d), 0);
	assert_int_equal(fl.calls, 1);
	assert_true(serves(p9100));

	/* another port: the new one bound, the old one closed */
	write_conf("127.0.0.1:9200");
	assert_int_equal(drfd_reload(&d), 0);
	assert_int_equal(fl.calls, 2);
	assert_true(drfd_listen_addr_equal(&d.http_addr, &b));
	assert_true(serves(p9200));
	assert_false(serves(p9100));

	/* cannot be listened on: refused, the endpoint in force serves on */
	fl.fail = -EADDRNOTAVAIL;
	write_conf("127.0.0.1:9100");
	assert_true(drfd_reload(&d) < 0);
	assert_int_equal(d.reloads_refused, 1);
	assert_non_null(strstr(d.reload_error, "metrics-listen"));
	assert_non_null(strstr(d.reload_error, "127.0.0.1:9100"));
	assert_true(drfd_listen_addr_equal(&d.http_addr, &b));
	assert_true(serves(p9200));
	fl.fail = 0;

	/* back to 9100, then to the same port on another address: the fake binds both on
	 * 127.0.0.1:p9100, so the old one must be closed first */
	write_conf("127.0.0.1:9100");
	assert_int_equal(drfd_reload(&d), 0);
	assert_true(drfd_listen_addr_equal(&d.http_addr, &a127));
	fl.calls = 0;
	write_conf("127.0.0.2:9100");
	assert_int_equal(drfd_reload(&d), 0);
	assert_int_equal(fl.calls, 2); /* in use, then again once the old one is closed */
	assert_true(drfd_listen_addr_equal(&fl.asked[1], &a2));
	assert_true(drfd_listen_addr_equal(&d.http_addr, &a2));
	assert_true(serves(p9100));

	/* a refused reload of the same port: the old endpoint is bound again */
	fl.calls = 0;
	fl.fail = -EADDRINUSE;
	fl.fail_only = true;
	fl.fail_at = (struct drf_listen_addr){ .family = AF_INET, .addr = { 127, 0, 0, 3 },
					       .port = 9100 };
	write_conf("127.0.0.3:9100");
	assert_true(drfd_reload(&d) < 0);
	assert_int_equal(fl.calls, 3); /* the new one, again, the old one again */
	fl.fail = 0;
	assert_non_null(d.http);
	assert_true(drfd_listen_addr_equal(&d.http_addr, &a2));
	assert_true(serves(p9100));

	/* a reload refused for another reason leaves the endpoint as it was */
	fx.env.check_cgroup = NULL;
	assert_int_equal(fakedrfd_write(&fx, "metrics-listen = 127.0.0.1:9200\n",
					TWO_CPU "[tenant b]\ncpu = x\n"), 0);
	assert_true(drfd_reload(&d) < 0);
	assert_true(drfd_listen_addr_equal(&d.http_addr, &a2));
	assert_true(serves(p9100));
	assert_false(serves(p9200));

	/* removed: closed */
	write_conf(NULL);
	assert_int_equal(drfd_reload(&d), 0);
	assert_null(d.http);
	assert_false(serves(p9100));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_serves_metrics, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gzip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_per_address_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cap_then_recovers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slow_request_shut, setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_connections_yield, setup, teardown),
		cmocka_unit_test_setup_teardown(test_keepalive_pipelining_and_large, setup, teardown),
		cmocka_unit_test_setup_teardown(test_start_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
