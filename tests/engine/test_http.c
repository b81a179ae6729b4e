/* engine/http: URL and query building, option errors, and requests against a local plain-HTTP
 * listener that returns canned HTTP/1.1 responses (parsing, streaming, reuse, errors). The TLS
 * paths are covered against the real kube-apiserver by tests/proc/api_spec.lua. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http.h"
#include "t.h"

/* ---- a canned HTTP/1.1 server ---- */

struct srv {
	int fd, port;
	const char *resp[8];  /* answers, in order, one per request (keep-alive) */
	int hang;             /* accept, read the request, never answer */
	int endless;          /* answer resp[0] (a head), then stream 'A's (1: body, 2: short header lines,
			       * 3: header lines of 1 KiB) until
			       * the client goes away or `limit` bytes are out */
	size_t limit, sent;
	int conns, reqs;
	char last[4096];      /* the last request, headers and body */
	pthread_t th, cth[8]; /* the acceptor; one thread per connection */
	pthread_mutex_t mu;
};

struct conn {
	struct srv *s;
	int fd;
};

static int read_request(int c, char *buf, size_t cap)
{
	size_t n = 0;
	for (;;) {
		ssize_t k = read(c, buf + n, cap - 1 - n);
		if (k <= 0)
			return -1;
		n += (size_t)k;
		buf[n] = '\0';
		char *end = strstr(buf, "\r\n\r\n");
		if (end) {
			const char *cl = strcasestr(buf, "Content-Length:");
			size_t want = (size_t)(end + 4 - buf) + (cl && cl < end ? (size_t)atoi(cl + 15) : 0);
			while (n < want && n < cap - 1) {
				k = read(c, buf + n, cap - 1 - n);
				if (k <= 0)
					return -1;
				n += (size_t)k;
				buf[n] = '\0';
			}
			return (int)n;
		}
		if (n >= cap - 1)
			return -1;
	}
}

static void *serve_conn(void *ud)
{
	struct conn *cn = ud;
	struct srv *s = cn->s;
	char buf[sizeof s->last];
	while (read_request(cn->fd, buf, sizeof buf) > 0) {
		pthread_mutex_lock(&s->mu);
		memcpy(s->last, buf, sizeof buf);
		const char *r = s->resp[s->reqs < 8 ? s->reqs : 7];
		s->reqs++;
		pthread_mutex_unlock(&s->mu);
		if (s->hang) {
			usleep(600 * 1000);
			break;
		}
		if (s->endless) {
			static char chunk[65536];
			memset(chunk, 'A', sizeof chunk);
			if (s->endless == 2)
				for (size_t i = 0; i + 16 <= sizeof chunk; i += 16)
					memcpy(chunk + i, "X-Flood: AAAAA\r\n", 16);
			if (s->endless == 3)
				for (size_t i = 0; i + 1024 <= sizeof chunk; i += 1024) {
					memcpy(chunk + i, "X-Long: ", 8);
					memcpy(chunk + i + 1022, "\r\n", 2);
				}
			if (send(cn->fd, r, strlen(r), MSG_NOSIGNAL) < 0)
				break;
			while (s->sent < s->limit && send(cn->fd, chunk, sizeof chunk, MSG_NOSIGNAL) > 0)
				s->sent += sizeof chunk;
			break;
		}
		if (!r || write(cn->fd, r, strlen(r)) < 0)
			break;
	}
	close(cn->fd);
	free(cn);
	return NULL;
}

static void *serve(void *ud)
{
	struct srv *s = ud;
	for (;;) {
		int c = accept(s->fd, NULL, NULL);
		if (c < 0)
			return NULL;
		struct conn *cn = malloc(sizeof *cn);
		cn->s = s;
		cn->fd = c;
		if (s->conns < 8)
			pthread_create(&s->cth[s->conns++], NULL, serve_conn, cn);
		else
			close(c), free(cn);
	}
}

static void srv_start(struct srv *s)
{
	s->fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	bind(s->fd, (struct sockaddr *)&a, sizeof a);
	listen(s->fd, 8);
	socklen_t l = sizeof a;
	getsockname(s->fd, (struct sockaddr *)&a, &l);
	s->port = ntohs(a.sin_port);
	pthread_mutex_init(&s->mu, NULL);
	pthread_create(&s->th, NULL, serve, s);
}

static void srv_stop(struct srv *s)
{
	shutdown(s->fd, SHUT_RDWR);
	close(s->fd);
	pthread_join(s->th, NULL);
	for (int i = 0; i < s->conns; i++)
		pthread_join(s->cth[i], NULL);
	pthread_mutex_destroy(&s->mu);
}

static ma_http *client(struct srv *s, const char *token)
{
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/", s->port);
	ma_http_opts o = {.server = url, .token = token, .timeout_ms = 2000};
	ma_err e = {0};
	ma_http *h = ma_http_new(&o, &e);
	CHECK(h, "%s", e.msg);
	return h;
}

/* ---- tests ---- */

static void test_escape_query_url(void)
{
	char *s = ma_http_escape("a b/c=d&é~", strlen("a b/c=d&é~"));
	CHECK_STR(s, "a%20b%2Fc%3Dd%26%C3%A9~");
	free(s);
	const char *kv[] = {"labelSelector", "app in (a,b)", "limit", "100", "continue", "x+y=", NULL};
	s = ma_http_query(kv);
	CHECK_STR(s, "labelSelector=app%20in%20%28a%2Cb%29&limit=100&continue=x%2By%3D");
	free(s);
	s = ma_http_query(NULL);
	CHECK_STR(s, "");
	free(s);
	ma_err e = {0};
	s = ma_http_url("https://192.0.2.131:6443/", "/api/v1", "limit=1", &e);
	CHECK_STR(s, "https://192.0.2.131:6443/api/v1?limit=1");
	free(s);
	s = ma_http_url("https://h/prefix", "/apis/apps/v1", "", &e);
	CHECK_STR(s, "https://h/prefix/apis/apps/v1");
	free(s);
	CHECK(!ma_http_url("ftp://h", "/x", NULL, &e), "ftp accepted");
	CHECK(strstr(e.msg, "ftp://h") && e.code == MA_HTTP_EOPTS, "%s", e.msg);
	CHECK(!ma_http_url("https://h", "api", NULL, &e), "relative path accepted");
	CHECK(strstr(e.msg, "must start with '/'"), "%s", e.msg);
	CHECK(!ma_http_url("https://h", "/a?b", NULL, &e), "'?' in path accepted");
}

static const char key_pem[] = "-----BEGIN PRIVATE KEY-----\nMIIsecretsecretsecret\n-----END PRIVATE KEY-----\n";

static void test_option_errors(void)
{
	ma_err e = {0};
	ma_http_opts o = {0};
	CHECK(!ma_http_new(&o, &e), "no server accepted");
	CHECK(strstr(e.msg, "(none)") && e.code == MA_HTTP_EOPTS, "%s", e.msg);
	o.server = "https://";
	CHECK(!ma_http_new(&o, &e), "empty host accepted");
	o.server = "https://127.0.0.1:6443";
	o.ca_pem = "junk";
	o.ca_pem_len = 4;
	CHECK(!ma_http_new(&o, &e), "junk CA accepted");
	CHECK(strstr(e.msg, "CA data for https://127.0.0.1:6443 is not a PEM certificate"), "%s", e.msg);
	o.ca_pem = NULL;
	o.key_pem = key_pem;
	o.key_pem_len = sizeof key_pem - 1;
	CHECK(!ma_http_new(&o, &e), "key without cert accepted");
	CHECK(strstr(e.msg, "needs both"), "%s", e.msg);
	o.cert_pem = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
	o.cert_pem_len = strlen(o.cert_pem);
	CHECK(!ma_http_new(&o, &e), "bad cert accepted");
	CHECK(!strstr(e.msg, "secret"), "the key leaked into: %s", e.msg);
	o.cert_pem = NULL;
	o.key_pem = NULL;
	o.token = "abc\r\nX-Evil: 1";
	CHECK(!ma_http_new(&o, &e), "token with CRLF accepted");
	CHECK(!strstr(e.msg, "abc") && !strstr(e.msg, "Evil"), "the token leaked into: %s", e.msg);
	CHECK_STR(ma_http_errkind_name(MA_HTTP_ECONNECT), "connect");
	CHECK_STR(ma_http_errkind_name(MA_HTTP_ETIMEOUT), "timeout");
	CHECK_STR(ma_http_errkind_name(0), "other");
}

static void test_request_and_reuse(void)
{
	struct srv s = {.resp = {"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nX-Multi: a\r\n"
				 "Content-Length: 11\r\n\r\n{\"ok\":true}",
				 "HTTP/1.1 404 Not Found\r\nContent-Length: 5\r\n\r\nnope!",
				 "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"}};
	srv_start(&s);
	ma_http *h = client(&s, "sekrit-token");
	ma_err e = {0};
	ma_http_resp r;
	const char *hdrs[] = {"Content-Type: application/json", "Accept: application/json", NULL};
	ma_http_req q = {.method = "POST", .path = "/api/v1/namespaces/x/configmaps", .query = "dryRun=All",
			 .headers = hdrs, .body = "{\"a\":1}", .body_len = 7};
	int rc = ma_http_do(h, &q, &r, &e);
	CHECK(rc == 0, "%s", e.msg);
	CHECK(r.status == 201, "status %ld", r.status);
	CHECK_STR(r.body, "{\"ok\":true}");
	char v[64];
	CHECK(ma_http_header(&r, "content-type", v, sizeof v) == 16, "content-type");
	CHECK_STR(v, "application/json");
	CHECK(ma_http_header(&r, "x-missing", v, sizeof v) == -1, "missing header found");
	CHECK(strncmp(s.last, "POST /api/v1/namespaces/x/configmaps?dryRun=All HTTP/1.1\r\n", 58) == 0, "%.60s", s.last);
	CHECK(strstr(s.last, "Authorization: Bearer sekrit-token\r\n"), "no bearer header");
	CHECK(strstr(s.last, "\r\n\r\n{\"a\":1}"), "body not sent");
	CHECK(!strstr(s.last, "Expect:"), "Expect header sent");
	ma_http_resp_free(&r);

	ma_http_req g = {.path = "/missing"};
	CHECK(ma_http_do(h, &g, &r, &e) == 0, "%s", e.msg);
	CHECK(r.status == 404 && strcmp(r.body, "nope!") == 0, "%ld %s", r.status, r.body);
	CHECK(r.reused, "the connection was not reused");
	ma_http_resp_free(&r);
	ma_http_req d = {.method = "DELETE", .path = "/x"};
	CHECK(ma_http_do(h, &d, &r, &e) == 0, "%s", e.msg);
	CHECK(r.status == 200 && r.body && r.body_len == 0, "empty body");
	CHECK(strncmp(s.last, "DELETE /x HTTP/1.1", 18) == 0, "%.20s", s.last);
	ma_http_resp_free(&r);
	CHECK(s.conns == 1, "%d connections for 3 requests", s.conns);
	ma_http_free(h);
	srv_stop(&s);
}

struct lines {
	int n;
	char got[256];
	int stop_after;
	ma_http *h;
	int inner_status;
};

static int collect(const char *buf, size_t len, void *ud)
{
	struct lines *l = ud;
	size_t have = strlen(l->got);
	if (have + len < sizeof l->got) {
		memcpy(l->got + have, buf, len);
		l->got[have + len] = '\0';
	}
	l->n++;
	return l->stop_after && l->n >= l->stop_after;
}

static void test_streaming(void)
{
	struct srv s = {.resp = {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
				 "6\r\nline1\n\r\n6\r\nline2\n\r\n6\r\nline3\n\r\n0\r\n\r\n",
				 "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
				 "6\r\nline1\n\r\n6\r\nline2\n\r\n0\r\n\r\n",
				 "HTTP/1.1 410 Gone\r\nContent-Length: 4\r\n\r\ngone"}};
	srv_start(&s);
	ma_http *h = client(&s, NULL);
	ma_err e = {0};
	ma_http_resp r;
	struct lines l = {0};
	ma_http_req q = {.path = "/watch", .sink = collect, .sink_ud = &l};
	CHECK(ma_http_do(h, &q, &r, &e) == 0, "%s", e.msg);
	CHECK_STR(l.got, "line1\nline2\nline3\n");
	CHECK(r.body_len == 0 && !r.stopped, "body %zu stopped %d", r.body_len, r.stopped);
	CHECK(!strstr(s.last, "Authorization"), "an Authorization header without a token");
	ma_http_resp_free(&r);

	struct lines l2 = {.stop_after = 1};
	q.sink_ud = &l2;
	CHECK(ma_http_do(h, &q, &r, &e) == 0, "stopping is not an error: %s", e.msg);
	CHECK(r.stopped, "not marked stopped");
	CHECK(l2.n == 1, "sink called %d times after stop", l2.n);
	ma_http_resp_free(&r);

	struct lines l3 = {0};
	q.sink_ud = &l3;
	CHECK(ma_http_do(h, &q, &r, &e) == 0, "%s", e.msg);
	CHECK(r.status == 410 && strcmp(r.body, "gone") == 0 && l3.n == 0, "a non-2xx body went to the sink");
	ma_http_resp_free(&r);
	ma_http_free(h);
	srv_stop(&s);
}

static int reenter(const char *buf, size_t len, void *ud)
{
	(void)buf, (void)len;
	struct lines *l = ud;
	ma_err e = {0};
	ma_http_resp r;
	ma_http_req q = {.path = "/inner"};
	if (ma_http_do(l->h, &q, &r, &e) == 0)
		l->inner_status = (int)r.status;
	ma_http_resp_free(&r);
	return 1;
}

static void test_reentrant(void)
{
	struct srv s = {.resp = {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nline1\n\r\n",
				 "HTTP/1.1 204 No Content\r\n\r\n"}};
	srv_start(&s);
	ma_http *h = client(&s, NULL);
	struct lines l = {.h = h};
	ma_err e = {0};
	ma_http_resp r;
	ma_http_req q = {.path = "/watch", .sink = reenter, .sink_ud = &l};
	CHECK(ma_http_do(h, &q, &r, &e) == 0, "%s", e.msg);
	CHECK(l.inner_status == 204, "inner request: %d", l.inner_status);
	ma_http_resp_free(&r);
	ma_http_free(h);
	srv_stop(&s);
}

static void test_transport_errors(void)
{
	struct srv s = {.hang = 1};
	srv_start(&s);
	ma_http *h = client(&s, "tok-should-not-leak");
	ma_err e = {0};
	ma_http_resp r;
	ma_http_req q = {.path = "/slow", .timeout_ms = 150};
	CHECK(ma_http_do(h, &q, &r, &e) < 0, "no timeout");
	CHECK(e.code == MA_HTTP_ETIMEOUT, "code %d: %s", e.code, e.msg);
	CHECK(strstr(e.msg, "GET http://127.0.0.1:") && strstr(e.msg, "/slow"), "%s", e.msg);
	CHECK(!strstr(e.msg, "tok-should-not-leak"), "token in %s", e.msg);
	ma_http_resp_free(&r);
	ma_http_free(h);
	int port = s.port;
	srv_stop(&s);

	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", port); /* closed now */
	ma_http_opts o = {.server = url};
	h = ma_http_new(&o, &e);
	ma_http_req g = {.method = "PUT", .path = "/api", .body = "{}", .body_len = 2};
	CHECK(ma_http_do(h, &g, &r, &e) < 0, "connected to a closed port");
	CHECK(e.code == MA_HTTP_ECONNECT, "code %d: %s", e.code, e.msg);
	CHECK(strstr(e.msg, "PUT ") && strstr(e.msg, url), "%s", e.msg);
	ma_http_resp_free(&r);
	ma_http_req bad = {.method = "get", .path = "/x"};
	CHECK(ma_http_do(h, &bad, &r, NULL) < 0, "lowercase method accepted");
	ma_http_req nopath = {.path = "x"};
	CHECK(ma_http_do(h, &nopath, &r, &e) < 0 && e.code == MA_HTTP_EOPTS, "%s", e.msg);
	ma_http_free(h);
	ma_http_free(NULL);
}

static long maxrss_kb(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* A server that streams an endless body: the transfer stops at the cap (per request or the
 * handle's), the error names the URL and the cap, and memory stays bounded. Regression (issue 18
 * #2): bodies were buffered whatever their size (a 2 GB cluster-info answer: 2.1 GB RSS). */
static void test_body_cap(void)
{
	struct srv s = {.resp = {"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"data\":\""}, .endless = 1,
			.limit = (size_t)2 << 30};
	srv_start(&s);
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", s.port);
	ma_http_opts o = {.server = url, .timeout_ms = 20000};
	ma_err e = {0};
	ma_http *h = ma_http_new(&o, &e);
	ma_http_resp r;
	long rss0 = maxrss_kb();
	ma_http_req q = {.path = "/api/v1/namespaces/kube-public/configmaps/cluster-info", .max_body = 1 << 20};
	CHECK(ma_http_do(h, &q, &r, &e) < 0, "an endless body was read to its end");
	CHECK(e.code == MA_HTTP_ETOOLARGE, "code %d: %s", e.code, e.msg);
	CHECK(strstr(e.msg, "GET http://127.0.0.1:") && strstr(e.msg, "/configmaps/cluster-info") &&
		      strstr(e.msg, "larger than the limit of 1048576 bytes"), "%s", e.msg);
	CHECK(strcmp(ma_http_errkind_name(e.code), "too_large") == 0, "%s", ma_http_errkind_name(e.code));
	CHECK(r.body_len <= (size_t)1 << 20, "kept %zu bytes", r.body_len);
	long grown = maxrss_kb() - rss0;
	CHECK(grown < 16 * 1024, "RSS grew by %ld KiB for a 1 MiB cap", grown);
	CHECK(s.sent < (size_t)64 << 20, "the server could send %zu bytes before the client stopped", s.sent);
	ma_http_resp_free(&r);
	ma_http_free(h);
	srv_stop(&s);

	/* the handle's cap applies when the request sets none; a body at the cap exactly is fine */
	struct srv s2 = {.resp = {"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n12345678",
				  "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n123456789",
				  "HTTP/1.1 500 Oops\r\nContent-Length: 2147483648\r\n\r\n{"}};
	srv_start(&s2);
	snprintf(url, sizeof url, "http://127.0.0.1:%d", s2.port);
	ma_http_opts o2 = {.server = url, .timeout_ms = 5000, .max_body = 8};
	h = ma_http_new(&o2, &e);
	ma_http_req g = {.path = "/a"};
	CHECK(ma_http_do(h, &g, &r, &e) == 0 && r.body_len == 8, "%s", e.msg);
	ma_http_resp_free(&r);
	CHECK(ma_http_do(h, &g, &r, &e) < 0 && e.code == MA_HTTP_ETOOLARGE, "9 bytes over a cap of 8: %s", e.msg);
	ma_http_resp_free(&r);
	/* an error body announcing 2 GB: refused before reading it */
	ma_http_req big = {.path = "/b", .max_body = 4096};
	CHECK(ma_http_do(h, &big, &r, &e) < 0 && e.code == MA_HTTP_ETOOLARGE, "%s", e.msg);
	CHECK(strstr(e.msg, "(Content-Length 2147483648)") && strstr(e.msg, "limit of 4096 bytes"), "%s", e.msg);
	ma_http_resp_free(&r);
	ma_http_free(h);
	srv_stop(&s2);
}

/* Endless header lines: stopped at the header cap, with its own message: short lines at 512 lines,
 * lines of 1 KiB at 256 KiB (within 512 lines). */
static void test_header_cap(void)
{
	for (int mode = 2; mode <= 3; mode++) {
		struct srv s = {.resp = {"HTTP/1.1 200 OK\r\n"}, .endless = mode, .limit = (size_t)1 << 30};
		srv_start(&s);
		char url[64];
		snprintf(url, sizeof url, "http://127.0.0.1:%d", s.port);
		ma_http_opts o = {.server = url, .timeout_ms = 20000};
		ma_err e = {0};
		ma_http *h = ma_http_new(&o, &e);
		ma_http_resp r;
		long rss0 = maxrss_kb();
		ma_http_req q = {.path = "/h"};
		CHECK(ma_http_do(h, &q, &r, &e) < 0, "endless headers were read (mode %d)", mode);
		CHECK(e.code == MA_HTTP_ETOOLARGE && strstr(e.msg, "the response headers exceed") && strstr(e.msg, "/h"),
		      "mode %d: %d %s", mode, e.code, e.msg);
		CHECK(r.headers_len <= MA_HTTP_MAX_HEADER_BYTES, "mode %d: kept %zu header bytes", mode, r.headers_len);
		if (mode == 2)
			CHECK(r.headers_len < 16 * MA_HTTP_MAX_HEADER_LINES + 64, "stopped after %zu bytes, not at the line cap",
			      r.headers_len);
		else
			CHECK(r.headers_len > MA_HTTP_MAX_HEADER_BYTES - 2048, "stopped after %zu bytes, not at the byte cap",
			      r.headers_len);
		CHECK(maxrss_kb() - rss0 < 16 * 1024, "RSS grew by %ld KiB", maxrss_kb() - rss0);
		ma_http_resp_free(&r);
		ma_http_free(h);
		srv_stop(&s);
	}
}

int main(void)
{
	RUN(test_escape_query_url);
	RUN(test_option_errors);
	RUN(test_request_and_reuse);
	RUN(test_streaming);
	RUN(test_reentrant);
	RUN(test_transport_errors);
	RUN(test_body_cap);
	RUN(test_header_cap);
	DONE();
}
