/* engine/etcd and engine/json without a server: the JSON reader, uint64 IDs, option errors, and
 * canned plain-HTTP gateways (answers, etcd's errors, 503 and non-etcd answers, endpoint failover,
 * the request bodies sent). The TLS paths and real etcd behaviour: tests/proc/etcd_spec.lua. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "etcd.h"
#include "json.h"
#include "snapfix.h"
#include "t.h"

/* ---- a canned gateway: every request gets the same status and body ---- */

struct srv {
	int fd, port;
	int status;
	const char *body;
	int snap_status;       /* POST /v3/maintenance/snapshot gets these when snap_body is set */
	const char *snap_body;
	int reqs;
	int cur; /* the connection being served, -1 */
	char last[4096]; /* the last request */
	pthread_t th;
	pthread_mutex_t mu;
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
				if ((k = read(c, buf + n, cap - 1 - n)) <= 0)
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

/* one connection at a time, keep-alive */
static void *serve(void *ud)
{
	struct srv *s = ud;
	char buf[sizeof s->last], out[8192];
	for (;;) {
		int c = accept(s->fd, NULL, NULL);
		if (c < 0)
			return NULL;
		pthread_mutex_lock(&s->mu);
		s->cur = c;
		pthread_mutex_unlock(&s->mu);
		while (read_request(c, buf, sizeof buf) > 0) {
			pthread_mutex_lock(&s->mu);
			memcpy(s->last, buf, sizeof buf);
			s->reqs++;
			pthread_mutex_unlock(&s->mu);
			int snap = s->snap_body && strstr(buf, "/v3/maintenance/snapshot");
			const char *body = snap ? s->snap_body : s->body;
			int n = snprintf(out, sizeof out, "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
					 snap ? s->snap_status : s->status, strlen(body));
			if (write(c, out, (size_t)n) < 0 || write(c, body, strlen(body)) < 0)
				break;
		}
		pthread_mutex_lock(&s->mu);
		s->cur = -1;
		pthread_mutex_unlock(&s->mu);
		close(c);
	}
}

static void srv_start(struct srv *s, int status, const char *body)
{
	s->status = status;
	s->body = body;
	s->cur = -1;
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
	pthread_mutex_lock(&s->mu);
	if (s->cur >= 0)
		shutdown(s->cur, SHUT_RDWR); /* a client may still hold its keep-alive connection */
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->th, NULL);
	close(s->fd);
	pthread_mutex_destroy(&s->mu);
}

/* a port nothing listens on */
static int dead_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	bind(fd, (struct sockaddr *)&a, sizeof a);
	socklen_t l = sizeof a;
	getsockname(fd, (struct sockaddr *)&a, &l);
	close(fd);
	return ntohs(a.sin_port);
}

static ma_etcd *client(int n, const int *ports)
{
	char urls[4][64];
	const char *eps[4];
	for (int i = 0; i < n; i++) {
		snprintf(urls[i], sizeof urls[i], "http://127.0.0.1:%d", ports[i]);
		eps[i] = urls[i];
	}
	ma_etcd_opts o = {.endpoints = eps, .n_endpoints = (size_t)n, .request_timeout_ms = 2000};
	ma_err e = {0};
	ma_etcd *c = ma_etcd_new(&o, &e);
	CHECK(c, "%s", e.msg);
	return c;
}

static const char list_body[] =
    "{\"header\":{\"cluster_id\":\"11860171626263644314\",\"member_id\":\"956257101772846903\",\"raft_term\":\"2\"},"
    "\"members\":[{\"ID\":\"956257101772846903\",\"name\":\"etcd0\",\"peerURLs\":[\"https://127.0.0.1:2380\"],"
    "\"clientURLs\":[\"https://127.0.0.1:2379\"]},"
    "{\"ID\":\"18446744073709551615\",\"peerURLs\":[\"https://192.0.2.132:2380\"],\"isLearner\":true}]}";

/* ---- tests ---- */

static void test_json(void)
{
	ma_err e = {0};
	const char *t = " {\"a\": [1, -2.5e3, \"x\\n\\u00e9\\ud83d\\ude00\", true, false, null, {}], \"b\": {\"c\": \"18446744073709551615\"},"
			"\"n\": 18446744073709551615, \"a\": \"last\"} ";
	ma_json *j = ma_json_parse(t, strlen(t), &e);
	CHECK(j, "%s", e.msg);
	if (!j)
		return;
	CHECK(j->type == MA_JSON_OBJECT && j->n == 4, "type %d n %zu", j->type, j->n);
	CHECK_STR(ma_json_str(ma_json_get(j, "a")), "last"); /* the last duplicate wins */
	const ma_json *arr = j->child;
	CHECK(arr->type == MA_JSON_ARRAY && arr->n == 7, "array n %zu", arr->n);
	CHECK_STR(arr->child->next->s, "-2.5e3");
	CHECK_STR(arr->child->next->next->s, "x\n\xc3\xa9\xf0\x9f\x98\x80");
	CHECK(arr->child->next->next->next->type == MA_JSON_TRUE, "true");
	CHECK(ma_json_bool(arr->child->next->next->next->next, 1) == 0, "false");
	uint64_t u = 0;
	CHECK(ma_json_u64(ma_json_get(ma_json_get(j, "b"), "c"), &u) == 0 && u == UINT64_MAX, "u64 string");
	u = 0;
	CHECK(ma_json_u64(ma_json_get(j, "n"), &u) == 0 && u == UINT64_MAX, "u64 number is exact");
	CHECK(ma_json_u64(arr->child->next, &u) < 0, "a float is not a u64");
	CHECK(ma_json_u64(ma_json_get(j, "zz"), &u) < 0, "absent");
	ma_json_free(j);

	static const char *const bad[] = {"", "{", "[1,]", "{\"a\" 1}", "\"abc", "01", "1.", "tru", "{} x",
					  "\"a\x01\"", "\"\\q\"", "-", "[1 2]", "{1:2}"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		ma_json *x = ma_json_parse(bad[i], strlen(bad[i]), &e);
		CHECK(!x, "accepted bad JSON '%s'", bad[i]);
		CHECK(strncmp(e.msg, "json: offset ", 13) == 0, "%s", e.msg);
		ma_json_free(x);
	}
	char deep[200];
	memset(deep, '[', 100);
	memset(deep + 100, ']', 100);
	CHECK(!ma_json_parse(deep, 200, &e) && strstr(e.msg, "too deep"), "%s", e.msg);
	CHECK(ma_u64_parse("18446744073709551616", 20, &u) < 0, "2^64 accepted");
	CHECK(ma_u64_parse("", 0, &u) < 0, "empty accepted");

	char buf[64];
	size_t n = ma_json_quote(buf, sizeof buf, 0, "a\"b\\c\n");
	CHECK_STR(buf, "\"a\\\"b\\\\c\\u000a\"");
	CHECK(n == strlen(buf), "length %zu", n);
	CHECK(ma_json_quote(buf, 4, 0, "abcdef") == (size_t)-1, "overflow not reported");
}

static void test_ids(void)
{
	char d[21], h[17];
	uint64_t id = 0;
	ma_etcd_id_dec(UINT64_MAX, d);
	CHECK_STR(d, "18446744073709551615");
	ma_etcd_id_hex(12392039015117178624ULL, h);
	CHECK_STR(h, "abf95dd412d74700");
	ma_etcd_id_hex(0x0d454ec4811d7737ULL, h);
	CHECK_STR(h, "d454ec4811d7737"); /* no leading zero, as Go's FormatUint(id, 16) */
	CHECK(ma_etcd_id_parse("12392039015117178624", &id) == 0 && id == 12392039015117178624ULL, "dec");
	CHECK(ma_etcd_id_parse("-1", &id) < 0 && ma_etcd_id_parse("1e3", &id) < 0, "bad dec accepted");
	CHECK(ma_etcd_id_parse_hex("ABF95dd412d74700", &id) == 0 && id == 12392039015117178624ULL, "hex");
	CHECK(ma_etcd_id_parse_hex("1ffffffffffffffff", &id) < 0, "17 hex digits accepted");
	CHECK(ma_etcd_id_parse_hex("0x1", &id) < 0, "0x accepted");
	CHECK_STR(ma_etcd_errkind_name(9), "failed_precondition");
	CHECK_STR(ma_etcd_errkind_name(MA_ETCD_EUNREACHABLE), "unreachable");
	CHECK_STR(ma_etcd_errkind_name(99), "other");
}

static void test_options(void)
{
	ma_err e = {0};
	ma_etcd_opts o = {0};
	CHECK(!ma_etcd_new(&o, &e) && e.code == MA_ETCD_EOPTS, "no endpoints accepted: %s", e.msg);
	const char *eps[] = {"https://127.0.0.1:2379", "ftp://x"};
	o.endpoints = eps;
	o.n_endpoints = 2;
	CHECK(!ma_etcd_new(&o, &e) && strstr(e.msg, "ftp://x"), "%s", e.msg);
	eps[1] = "https://127.0.0.1:2379/v3";
	CHECK(!ma_etcd_new(&o, &e) && strstr(e.msg, "without a path"), "%s", e.msg);
	o.n_endpoints = 1;
	o.key_pem = "-----BEGIN PRIVATE KEY-----\nMIIsecret\n-----END PRIVATE KEY-----\n";
	CHECK(!ma_etcd_new(&o, &e) && strstr(e.msg, "needs its key"), "%s", e.msg);
	o.cert_pem = "junk";
	CHECK(!ma_etcd_new(&o, &e) && e.code == MA_ETCD_EOPTS, "junk cert accepted: %s", e.msg);
	CHECK(!strstr(e.msg, "secret"), "the key leaked: %s", e.msg);
	o.cert_pem = o.key_pem = NULL;
	ma_etcd *c = ma_etcd_new(&o, &e);
	CHECK(c, "%s", e.msg);
	if (!c)
		return;
	CHECK(ma_etcd_add_endpoint(c, "https://127.0.0.1:2379", &e) == 0 && ma_etcd_endpoint_count(c) == 1, "dup added");
	CHECK(ma_etcd_add_endpoint(c, "https://127.0.0.2:2379", &e) == 0 && ma_etcd_endpoint_count(c) == 2, "not added");
	CHECK_STR(ma_etcd_endpoint(c, 1), "https://127.0.0.2:2379");
	CHECK(ma_etcd_endpoint(c, 2) == NULL, "out of range");
	ma_etcd_status st;
	CHECK(ma_etcd_endpoint_status(c, 5, NULL, &st, &e) < 0 && strstr(e.msg, "no endpoint 5"), "%s", e.msg);
	ma_etcd_free(c);
}

static void test_list_and_failover(void)
{
	struct srv s = {0};
	srv_start(&s, 200, list_body);
	int ports[] = {dead_port(), s.port};
	ma_etcd *c = client(2, ports);
	ma_etcd_members m;
	ma_err e = {0};
	int rc = ma_etcd_member_list(c, 1, &m, &e);
	CHECK(rc == 0, "%s", e.msg);
	if (rc == 0) {
		char want[64];
		snprintf(want, sizeof want, "http://127.0.0.1:%d", s.port);
		CHECK_STR(m.endpoint, want);
		CHECK(m.n == 2 && m.cluster_id == 11860171626263644314ULL && m.member_id == 956257101772846903ULL, "n %zu", m.n);
		CHECK_STR(m.v[0].name, "etcd0");
		CHECK(m.v[0].n_peer_urls == 1 && m.v[0].n_client_urls == 1 && !m.v[0].is_learner, "member 0");
		CHECK_STR(m.v[0].peer_urls[0], "https://127.0.0.1:2380");
		CHECK(m.v[1].id == UINT64_MAX && m.v[1].is_learner && m.v[1].name[0] == '\0' && m.v[1].n_client_urls == 0,
		      "member 1");
		CHECK(!m.has_added, "added");
	}
	ma_etcd_members_free(&m);
	CHECK(strstr(s.last, "POST /v3/cluster/member/list HTTP/1.1") && strstr(s.last, "{\"linearizable\":true}"),
	      "%s", s.last);
	CHECK(strcasestr(s.last, "Content-Type: application/json"), "%s", s.last);
	ma_etcd_free(c);

	/* every endpoint dead: each is named */
	int dead[] = {dead_port(), dead_port()};
	c = client(2, dead);
	CHECK(ma_etcd_member_list(c, 1, &m, &e) < 0 && e.code == MA_ETCD_EUNREACHABLE, "%s", e.msg);
	char a[32], b[32];
	snprintf(a, sizeof a, ":%d", dead[0]);
	snprintf(b, sizeof b, ":%d", dead[1]);
	CHECK(strstr(e.msg, "member list: none of 2 endpoints could serve it") && strstr(e.msg, a) && strstr(e.msg, b),
	      "%s", e.msg);
	ma_etcd_members_free(&m);
	ma_etcd_free(c);
	srv_stop(&s);
}

static void test_etcd_errors(void)
{
	/* etcd's answer ends the call: the second endpoint is not asked */
	struct srv s1 = {0}, s2 = {0};
	srv_start(&s1, 400, "{\"code\":9,\"message\":\"etcdserver: can only promote a learner member which is in sync with leader\"}");
	srv_start(&s2, 200, list_body);
	int ports[] = {s1.port, s2.port};
	ma_etcd *c = client(2, ports);
	ma_etcd_members m;
	ma_err e = {0};
	CHECK(ma_etcd_member_promote(c, 12392039015117178624ULL, &m, &e) < 0, "promote succeeded");
	char want[256];
	snprintf(want, sizeof want, "etcd: http://127.0.0.1:%d: member promote abf95dd412d74700: etcdserver: can only "
		 "promote a learner member which is in sync with leader (FailedPrecondition)", s1.port);
	CHECK_STR(e.msg, want);
	CHECK(e.code == 9, "code %d", e.code);
	CHECK(strstr(s1.last, "{\"ID\":\"12392039015117178624\"}"), "the ID as a decimal string: %s", s1.last);
	CHECK(s2.reqs == 0, "failed over after etcd's answer");
	ma_etcd_members_free(&m);
	srv_stop(&s1);

	/* 503 (no leader): the next endpoint serves it */
	struct srv s3 = {0};
	srv_start(&s3, 503, "{\"code\":14,\"message\":\"etcdserver: no leader\"}");
	ma_etcd_free(c);
	int p2[] = {s3.port, s2.port};
	c = client(2, p2);
	CHECK(ma_etcd_member_remove(c, 42, &m, &e) == 0 && m.n == 2, "%s", e.msg);
	CHECK(s3.reqs == 1 && s2.reqs == 1, "reqs %d %d", s3.reqs, s2.reqs);
	CHECK(strstr(s2.last, "POST /v3/cluster/member/remove") && strstr(s2.last, "{\"ID\":\"42\"}"), "%s", s2.last);
	ma_etcd_members_free(&m);
	ma_etcd_free(c);
	/* only 503s: the kind is etcd's */
	int p3[] = {s3.port};
	c = client(1, p3);
	CHECK(ma_etcd_member_list(c, 0, &m, &e) < 0 && e.code == 14 && strstr(e.msg, "etcdserver: no leader (Unavailable)"),
	      "%s", e.msg);
	ma_etcd_members_free(&m);
	ma_etcd_free(c);
	srv_stop(&s3);

	/* not a gateway: named as such, and failed over */
	struct srv s4 = {0};
	srv_start(&s4, 404, "404 page not found\n");
	int p4[] = {s4.port, s2.port};
	c = client(2, p4);
	const char *urls[] = {"https://192.0.2.133:2380", "https://x\"y:2380"};
	CHECK(ma_etcd_member_add(c, urls, 2, 1, &m, &e) < 0, "add without a member accepted");
	CHECK(strstr(e.msg, "the answer has no \"member\""), "%s", e.msg);
	CHECK(strstr(s2.last, "{\"peerURLs\":[\"https://192.0.2.133:2380\",\"https://x\\\"y:2380\"],\"isLearner\":true}"),
	      "%s", s2.last);
	ma_etcd_members_free(&m);
	ma_etcd_free(c);
	int p5[] = {s4.port};
	c = client(1, p5);
	CHECK(ma_etcd_member_list(c, 1, &m, &e) < 0 && e.code == MA_ETCD_EPROTO &&
		  strstr(e.msg, "HTTP 404, not an etcd answer: 404 page not found"), "%s", e.msg);
	ma_etcd_members_free(&m);
	ma_etcd_health h;
	CHECK(ma_etcd_endpoint_health(c, 0, NULL, &h, &e) < 0 && e.code == MA_ETCD_EPROTO, "%s", e.msg);
	ma_etcd_health_free(&h);
	ma_etcd_free(c);
	srv_stop(&s4);
	srv_stop(&s2);
}

static void test_status_health(void)
{
	struct srv s = {0};
	srv_start(&s, 200, "{\"header\":{\"member_id\":\"956257101772846903\"},\"version\":\"3.6.6\",\"dbSize\":\"20480\","
			    "\"leader\":\"956257101772846903\",\"raftIndex\":\"4\",\"raftTerm\":\"2\",\"raftAppliedIndex\":\"4\","
			    "\"isLearner\":true,\"errors\":[\"memberID:1 alarm:NOSPACE\"]}");
	struct srv u = {0};
	srv_start(&u, 503, "{\"health\":\"false\",\"reason\":\"RAFT NO LEADER\"}");
	int ports[] = {s.port};
	ma_etcd *c = client(1, ports);
	ma_etcd_status st;
	ma_err e = {0};
	CHECK(ma_etcd_endpoint_status(c, 0, NULL, &st, &e) == 0, "%s", e.msg);
	CHECK(st.member_id == 956257101772846903ULL && st.leader == st.member_id && st.raft_index == 4 &&
		  st.raft_term == 2 && st.db_size == 20480 && st.is_learner && st.n_errors == 1, "status fields");
	CHECK_STR(st.version, "3.6.6");
	ma_etcd_status_free(&st);
	/* any URL: a temporary connection */
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", u.port);
	ma_etcd_health h;
	CHECK(ma_etcd_endpoint_health(c, 0, url, &h, &e) == 0, "%s", e.msg);
	CHECK(!h.healthy && h.status == 503, "healthy %d status %ld", h.healthy, h.status);
	CHECK_STR(h.reason, "RAFT NO LEADER");
	CHECK_STR(h.endpoint, url);
	ma_etcd_health_free(&h);
	CHECK(ma_etcd_endpoint_count(c) == 1, "the URL was added");
	ma_etcd_free(c);
	srv_stop(&u);
	srv_stop(&s);
}

/* A snapshot through the gateway: the member's status first (revision, IDs, version), then the
 * stream; etcd's refusal as a non-2xx answer; an answer that is not etcd's. */
struct coll {
	size_t n;
	unsigned char last[32];
};

static int collect(const unsigned char *buf, size_t len, void *ud, ma_err *e)
{
	(void)e;
	struct coll *c = ud;
	for (size_t i = 0; i < len; i++)
		c->last[(c->n + i) % 32] = buf[i];
	c->n += len;
	return 0;
}

static void test_snapshot(void)
{
	size_t len;
	unsigned char *db = fix_db(4096, 4, &len);
	char *text = fix_stream(db, len, 6000, NULL);
	struct srv s = {0};
	s.snap_status = 200;
	s.snap_body = text;
	srv_start(&s, 200, "{\"header\":{\"cluster_id\":\"77\",\"member_id\":\"956257101772846903\",\"revision\":\"1234\"},"
			    "\"version\":\"3.6.6\"}");
	int ports[] = {s.port};
	ma_etcd *c = client(1, ports);
	ma_etcd_snapshot out;
	struct coll col = {0};
	ma_err e = {0};
	CHECK(ma_etcd_snapshot_save(c, 0, NULL, NULL, collect, &col, &out, &e) == 0, "%s", e.msg);
	CHECK(out.revision == 1234 && !out.revision_exact && out.cluster_id == 77 && out.member_id == 956257101772846903ULL,
	      "revision %llu", (unsigned long long)out.revision);
	CHECK_STR(out.version, "3.6.6");
	CHECK_STR(out.storage_version, "3.6.0");
	CHECK(out.db_size == len && col.n == len + 32, "%zu bytes", col.n);
	CHECK(strstr(s.last, "POST /v3/maintenance/snapshot ") && strstr(s.last, "\r\n\r\n{}"), "request: %.200s", s.last);
	ma_etcd_snapshot_free(&out);
	/* etcd refuses it: its error and code */
	s.snap_status = 403;
	s.snap_body = "{\"error\":{\"code\":7,\"message\":\"etcdserver: permission denied\",\"details\":[]}}\n";
	CHECK(ma_etcd_snapshot_save(c, 0, NULL, NULL, collect, &col, &out, &e) < 0 && e.code == 7, "%d %s", e.code, e.msg);
	CHECK(strstr(e.msg, "permission denied (PermissionDenied)"), "%s", e.msg);
	ma_etcd_snapshot_free(&out);
	/* not etcd: a proxy's page */
	s.snap_status = 502;
	s.snap_body = "<html>Bad Gateway</html>";
	CHECK(ma_etcd_snapshot_save(c, 0, NULL, NULL, collect, &col, &out, &e) < 0 && e.code == MA_ETCD_EPROTO, "%s", e.msg);
	CHECK(strstr(e.msg, "HTTP 502, not an etcd answer: <html>Bad Gateway</html>"), "%s", e.msg);
	ma_etcd_snapshot_free(&out);
	/* a 200 that stops short */
	s.snap_status = 200;
	s.snap_body = text;
	*(strchr(text, '\n') + 1) = '\0';
	CHECK(ma_etcd_snapshot_save(c, 0, NULL, NULL, collect, &col, &out, &e) < 0 && e.code == MA_ETCD_EPROTO, "%s", e.msg);
	CHECK(strstr(e.msg, "bytes short"), "%s", e.msg);
	ma_etcd_snapshot_free(&out);
	ma_etcd_free(c);
	/* nobody there */
	int dead[] = {dead_port()};
	c = client(1, dead);
	CHECK(ma_etcd_snapshot_save(c, 0, NULL, NULL, collect, &col, &out, &e) < 0 && e.code == MA_ETCD_EUNREACHABLE,
	      "%d %s", e.code, e.msg);
	ma_etcd_snapshot_free(&out);
	ma_etcd_free(c);
	srv_stop(&s);
	free(text);
	free(db);
}

/* An answer of the wrong shape is an error, never an empty result (issue 18: a 200 without
 * "members" read as a cluster with no member). */
static void test_wrong_shapes(void)
{
	static const char *const lists[] = {
	    "{}",
	    "{\"header\":{\"cluster_id\":\"1\"}}",                               /* no members */
	    "{\"header\":{\"cluster_id\":\"1\"},\"members\":[]}",                /* none */
	    "{\"header\":{\"cluster_id\":\"1\"},\"members\":{}}",                /* not a list */
	    "{\"members\":[{\"ID\":\"1\",\"peerURLs\":[\"https://a:2380\"]}]}", /* no header */
	    "{\"header\":{\"cluster_id\":\"1\"},\"members\":[{\"peerURLs\":[\"https://a:2380\"]}]}",       /* no ID */
	    "{\"header\":{\"cluster_id\":\"1\"},\"members\":[{\"ID\":\"1\"}]}",                            /* no peer URL */
	    "{\"header\":{\"cluster_id\":\"1\"},\"members\":[{\"ID\":\"1\",\"peerURLs\":\"https://a\"}]}", /* a string */
	    "{\"header\":{\"cluster_id\":\"1\"},\"members\":[{\"ID\":\"1\",\"peerURLs\":[7]}]}",
	    "{\"header\":{\"cluster_id\":\"1\"},\"members\":[{\"ID\":\"1\",\"peerURLs\":[\"https://a:2380\"],\"name\":5}]}",
	    "{\"header\":{\"cluster_id\":\"1\"},\"members\":[{\"ID\":\"1\",\"peerURLs\":[\"https://a:2380\"],\"isLearner\":\"no\"}]}",
	    NULL};
	for (int i = 0; lists[i]; i++) {
		struct srv s = {0};
		srv_start(&s, 200, lists[i]);
		int ports[] = {s.port};
		ma_etcd *c = client(1, ports);
		ma_etcd_members m;
		ma_err e = {0};
		CHECK(ma_etcd_member_list(c, 0, &m, &e) < 0, "answer %d read as %zu members: %s", i, m.n, lists[i]);
		CHECK(e.code == MA_ETCD_EPROTO && strstr(e.msg, "http://127.0.0.1:"), "answer %d: code %d %s", i, e.code, e.msg);
		ma_etcd_members_free(&m);
		CHECK(ma_etcd_member_remove(c, 1, &m, &e) < 0 && e.code == MA_ETCD_EPROTO, "remove, answer %d: %s", i, e.msg);
		ma_etcd_members_free(&m);
		ma_etcd_free(c);
		srv_stop(&s);
	}
	static const char *const statuses[] = {
	    "{}", "{\"header\":{\"member_id\":\"1\"}}", "{\"version\":\"3.6.6\"}",
	    "{\"header\":{\"member_id\":\"1\"},\"version\":\"3.6.6\",\"errors\":\"x\"}", NULL};
	for (int i = 0; statuses[i]; i++) {
		struct srv s = {0};
		srv_start(&s, 200, statuses[i]);
		int ports[] = {s.port};
		ma_etcd *c = client(1, ports);
		ma_etcd_status st;
		ma_err e = {0};
		CHECK(ma_etcd_endpoint_status(c, 0, NULL, &st, &e) < 0 && e.code == MA_ETCD_EPROTO, "status %d: %s", i, e.msg);
		ma_etcd_status_free(&st);
		ma_etcd_free(c);
		srv_stop(&s);
	}
	/* a body over the client's cap: refused, named, not an unreachable endpoint */
	struct srv s = {0};
	srv_start(&s, 200, list_body);
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", s.port);
	const char *eps[] = {url};
	ma_etcd_opts o = {.endpoints = eps, .n_endpoints = 1, .max_body = 64};
	ma_err e = {0};
	ma_etcd *c = ma_etcd_new(&o, &e);
	ma_etcd_members m;
	CHECK(ma_etcd_member_list(c, 0, &m, &e) < 0 && e.code == MA_ETCD_EPROTO, "%d %s", e.code, e.msg);
	CHECK(strstr(e.msg, "larger than the limit of 64 bytes") && strstr(e.msg, url), "%s", e.msg);
	ma_etcd_members_free(&m);
	ma_etcd_free(c);
	srv_stop(&s);
}

/* the rewrite kube/json.lua decodes API answers through: [] marked, managedFields left out */
static void test_json_rewrite(void)
{
	static const char *const drop[] = {"managedFields", NULL};
	static const struct {
		const char *in, *want;
		size_t marked, dropped;
	} cases[] = {
		{"{\"a\":[],\"b\":[ ],\"c\":\"[]\"}", "{\"a\":[M],\"b\":[M],\"c\":\"[]\"}", 2, 0},
		/* first, middle, last and only member; the comma before a last one goes with it */
		{"{\"managedFields\":[{\"x\":[]}],\"a\":1}", "{\"a\":1}", 0, 1},
		{"{\"a\":1, \"managedFields\" : {\"f:x\":{\"}\":1}}, \"b\":2}", "{\"a\":1,  \"b\":2}", 0, 1},
		{"{\"a\":{\"b\":1},\"managedFields\":[\"]\"] }", "{\"a\":{\"b\":1}}", 0, 1},
		{"{\"managedFields\":null}", "{}", 0, 1},
		/* at any depth, only as a member name: a string value of that text stays */
		{"{\"items\":[{\"metadata\":{\"name\":\"managedFields\",\"managedFields\":[1]},\"data\":{}}]}",
		 "{\"items\":[{\"metadata\":{\"name\":\"managedFields\"},\"data\":{}}]}", 0, 1},
		{"[\"managedFields\",[]]", "[\"managedFields\",[M]]", 1, 0},
		{"{\"s\":\"a\\\"managedFields\\\":[]\"}", "{\"s\":\"a\\\"managedFields\\\":[]\"}", 0, 0},
		/* not well-formed: handed on as it came, for the decoder to report */
		{"{\"a\":[],\"managedFields\":[", "{\"a\":[],\"managedFields\":[", 0, 0},
		{"{\"a\":[]]", "{\"a\":[]]", 0, 0},
		{"\"abc", "\"abc", 0, 0},
		{"", "", 0, 0},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		char *out = NULL;
		size_t len = 0, marked = 9, dropped = 9;
		ma_err e = {0};
		int rc = ma_json_rewrite(cases[i].in, strlen(cases[i].in), "M", drop, &out, &len, &marked, &dropped, &e);
		CHECK(rc == 0, "%s", e.msg);
		if (rc != 0)
			continue;
		CHECK(len == strlen(out), "case %zu: length %zu of \"%s\"", i, len, out);
		CHECK_STR(out, cases[i].want);
		CHECK(marked == cases[i].marked && dropped == cases[i].dropped, "case %zu: marked %zu dropped %zu", i,
		      marked, dropped);
		free(out);
	}
	/* deeper than lua-cjson decodes: a copy, nothing marked */
	char deep[2402];
	memset(deep, '[', 1200);
	deep[1200] = ' ';
	memset(deep + 1201, ']', 1200);
	deep[2401] = 0;
	char *out = NULL;
	size_t len, marked, dropped;
	ma_err e = {0};
	CHECK(ma_json_rewrite(deep, 2401, "M", NULL, &out, &len, &marked, &dropped, &e) == 0, "%s", e.msg);
	CHECK(out && len == 2401 && memcmp(out, deep, len) == 0 && marked == 0, "deep: marked %zu", marked);
	free(out);
}

int main(void)
{
	RUN(test_json);
	RUN(test_json_rewrite);
	RUN(test_ids);
	RUN(test_options);
	RUN(test_list_and_failover);
	RUN(test_etcd_errors);
	RUN(test_status_health);
	RUN(test_wrong_shapes);
	RUN(test_snapshot);
	DONE();
}
