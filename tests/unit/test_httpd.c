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

/* Turns of the loop until fd has its answer whole (the server closed); the answer, to free. */
static char *drain(int fd, size_t *ret_len)
{
	char *buf = NULL, chunk[65536];
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	bool eof = false;

	assert_non_null(m);
	/* A bound on the turns, not on time: each turn waits at most 100 ms for an event. */
	for (int turn = 0; turn < 2000 && !eof; turn++) {
		ssize_t n;

		assert_true(sd_event_run(d.event, 100000) >= 0);
		while ((n = recv(fd, chunk, sizeof(chunk), 0)) > 0)
			fwrite(chunk, 1, (size_t)n, m);
		eof = n == 0 || (n < 0 && errno != EAGAIN);
	}
	assert_true(eof);
	assert_int_equal(fclose(m), 0);
	close(fd);
	*ret_len = len;
	return buf;
}

/* The answer to "METHOD PATH" at port: its status code, its head and body (to free). */
static int request(uint16_t port, const char *method, const char *path, char **head,
		   char **body, size_t *body_len)
{
	char req[256], *all, *sep;
	size_t len;
	int fd = connect_to(port), status = 0;

	assert_true(fd >= 0);
	snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: drfd\r\nConnection: close\r\n\r\n",
		 method, path);
	assert_int_equal(send(fd, req, strlen(req), 0), (ssize_t)strlen(req));
	all = drain(fd, &len);
	if (len == 0) {
		free(all);
		*head = NULL;
		*body = NULL;
		*body_len = 0;
		return 0;
	}
	assert_int_equal(sscanf(all, "HTTP/1.1 %d ", &status), 1);
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
	assert_non_null(strstr(body, "\ndrfd_allocation{tenant=\"a\",resource=\"cpu\"} 1\n"));
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
		cmocka_unit_test_setup_teardown(test_per_address_cap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_start_fails, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reload, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
