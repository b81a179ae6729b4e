/* etcd member operations over the v3 JSON gateway (engine/etcd.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "etcd.h"
#include "testhooks.h"
#include "http.h"
#include "json.h"

struct ma_etcd {
	char **eps;
	ma_http **h;
	size_t n, cap;
	char *ca_pem, *ca_file, *cert_pem, *key_pem;
	size_t ca_len, cert_len, key_len;
	long dial_ms, req_ms;
	size_t max_body;
};

static const char *const grpc_names[] = {
	"ok", "canceled", "unknown", "invalid_argument", "deadline_exceeded", "not_found", "already_exists",
	"permission_denied", "resource_exhausted", "failed_precondition", "aborted", "out_of_range",
	"unimplemented", "internal", "unavailable", "data_loss", "unauthenticated"};
static const char *const grpc_camel[] = {
	"OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound", "AlreadyExists",
	"PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange",
	"Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated"};

const char *ma_etcd_errkind_name(int code)
{
	switch (code) {
	case MA_ETCD_EUNREACHABLE: return "unreachable";
	case MA_ETCD_EPROTO: return "protocol";
	case MA_ETCD_EOPTS: return "options";
	case MA_ETCD_ETLS: return "tls";
	default: return code > 0 && code <= 16 ? grpc_names[code] : "other";
	}
}

/* ---- IDs ---- */

int ma_etcd_id_parse(const char *s, uint64_t *id)
{
	return s ? ma_u64_parse(s, strlen(s), id) : -1;
}

int ma_etcd_id_parse_hex(const char *s, uint64_t *id)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > 16)
		return -1;
	uint64_t x = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		unsigned d;
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return -1;
		x = x << 4 | d;
	}
	*id = x;
	return 0;
}

void ma_etcd_id_dec(uint64_t id, char out[21])
{
	snprintf(out, 21, "%llu", (unsigned long long)id);
}

void ma_etcd_id_hex(uint64_t id, char out[17])
{
	snprintf(out, 17, "%llx", (unsigned long long)id);
}

/* ---- the client ---- */

static char *dupmem(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

static ma_http *open_http(ma_etcd *c, const char *url, ma_err *e)
{
	ma_http_opts ho = {0};
	ho.server = url;
	ho.ca_pem = c->ca_pem;
	ho.ca_pem_len = c->ca_len;
	ho.ca_file = c->ca_file;
	ho.cert_pem = c->cert_pem;
	ho.cert_pem_len = c->cert_len;
	ho.key_pem = c->key_pem;
	ho.key_pem_len = c->key_len;
	ho.connect_timeout_ms = c->dial_ms;
	ho.timeout_ms = c->req_ms;
	ho.user_agent = "moonadm-etcd";
	ho.max_body = c->max_body;
	ma_err he = {0};
	ma_http *h = ma_http_new(&ho, &he);
	if (!h) {
		ma_fail(e, "etcd: endpoint %s: %s", url, he.msg);
		e->code = MA_ETCD_EOPTS;
	}
	return h;
}

/* an endpoint must be http(s)://host[:port] without a path */
static int check_url(const char *url, ma_err *e)
{
	ma_err he = {0};
	char *u = ma_http_url(url, "/", NULL, &he);
	if (!u) {
		ma_fail(e, "etcd: bad endpoint \"%s\": %s", url, he.msg);
		e->code = MA_ETCD_EOPTS;
		return -1;
	}
	free(u);
	const char *rest = strstr(url, "://");
	if (!rest || strchr(rest + 3, '/')) {
		ma_fail(e, "etcd: bad endpoint \"%s\": want https://HOST:PORT without a path", url);
		e->code = MA_ETCD_EOPTS;
		return -1;
	}
	return 0;
}

int ma_etcd_add_endpoint(ma_etcd *c, const char *url, ma_err *e)
{
	if (!url || !*url) {
		ma_fail(e, "etcd: an empty endpoint");
		e->code = MA_ETCD_EOPTS;
		return -1;
	}
	if (check_url(url, e) < 0)
		return -1;
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->eps[i], url) == 0)
			return 0;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 4;
		char **eps = realloc(c->eps, cap * sizeof *eps);
		if (!eps)
			return ma_fail(e, "etcd: out of memory");
		c->eps = eps;
		ma_http **h = realloc(c->h, cap * sizeof *h);
		if (!h)
			return ma_fail(e, "etcd: out of memory");
		c->h = h;
		c->cap = cap;
	}
	char *d = strdup(url);
	if (!d)
		return ma_fail(e, "etcd: out of memory");
	ma_http *h = open_http(c, url, e);
	if (!h) {
		free(d);
		return -1;
	}
	c->eps[c->n] = d;
	c->h[c->n] = h;
	c->n++;
	return 0;
}

ma_etcd *ma_etcd_new(const ma_etcd_opts *o, ma_err *e)
{
	if (!o || o->n_endpoints == 0 || !o->endpoints) {
		ma_fail(e, "etcd: no endpoints given");
		e->code = MA_ETCD_EOPTS;
		return NULL;
	}
	if (!o->cert_pem != !o->key_pem) {
		ma_fail(e, "etcd: a client certificate needs its key (and a key its certificate)");
		e->code = MA_ETCD_EOPTS;
		return NULL;
	}
	ma_etcd *c = calloc(1, sizeof *c);
	if (!c) {
		ma_fail(e, "etcd: out of memory");
		return NULL;
	}
	c->dial_ms = o->dial_timeout_ms > 0 ? o->dial_timeout_ms : 2000;
	c->req_ms = o->request_timeout_ms > 0 ? o->request_timeout_ms : 5000;
	c->max_body = o->max_body ? o->max_body : MA_ETCD_MAX_BODY_DEFAULT;
	int oom = 0;
#define COPY(dst, len, src, srclen)                                                  \
	if (src) {                                                                   \
		size_t l_ = (srclen) ? (srclen) : strlen(src);                       \
		if (!((dst) = dupmem((src), l_)))                                    \
			oom = 1;                                                     \
		len = l_;                                                            \
	}
	COPY(c->ca_pem, c->ca_len, o->ca_pem, o->ca_pem_len);
	COPY(c->cert_pem, c->cert_len, o->cert_pem, o->cert_pem_len);
	COPY(c->key_pem, c->key_len, o->key_pem, o->key_pem_len);
#undef COPY
	if (o->ca_file && !(c->ca_file = strdup(o->ca_file)))
		oom = 1;
	if (oom) {
		ma_etcd_free(c);
		ma_fail(e, "etcd: out of memory");
		return NULL;
	}
	for (size_t i = 0; i < o->n_endpoints; i++)
		if (ma_etcd_add_endpoint(c, o->endpoints[i], e) < 0) {
			ma_etcd_free(c);
			return NULL;
		}
	return c;
}

void ma_etcd_free(ma_etcd *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		ma_http_free(c->h[i]);
		free(c->eps[i]);
	}
	free(c->h);
	free(c->eps);
	if (c->key_pem) {
		OPENSSL_cleanse(c->key_pem, c->key_len);
		free(c->key_pem);
	}
	free(c->ca_pem);
	free(c->cert_pem);
	free(c->ca_file);
	free(c);
}

size_t ma_etcd_endpoint_count(const ma_etcd *c)
{
	return c->n;
}

const char *ma_etcd_endpoint(const ma_etcd *c, size_t i)
{
	return i < c->n ? c->eps[i] : NULL;
}

/* ---- transport ---- */

static const char *const json_headers[] = {"Content-Type: application/json", "Accept: application/json", NULL};

/* etcd's error answer: {"code":9,"message":"..."} (older gateways also write "error") */
static int etcd_error(const ma_json *j, const char **msg, int *code)
{
	if (!j || j->type != MA_JSON_OBJECT)
		return 0;
	const char *m = ma_json_str(ma_json_get(j, "message"));
	if (!m)
		m = ma_json_str(ma_json_get(j, "error"));
	uint64_t cd = 0;
	if (!m || ma_json_u64(ma_json_get(j, "code"), &cd) < 0)
		return 0;
	*msg = m;
	*code = cd <= 16 ? (int)cd : 2;
	return 1;
}

static void shorten(char *dst, size_t cap, const char *body, size_t len)
{
	size_t k = 0;
	for (size_t i = 0; i < len && k + 1 < cap && k < 120; i++)
		dst[k++] = (body[i] == '\n' || body[i] == '\r') ? ' ' : body[i];
	dst[k] = '\0';
	if (k > 0 && dst[k - 1] == ' ')
		dst[k - 1] = '\0';
}

static void appendf(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void appendf(char *buf, size_t cap, const char *fmt, ...)
{
	size_t l = strlen(buf);
	if (l + 1 >= cap)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + l, cap - l, fmt, ap);
	va_end(ap);
}

/* What an answer is: 1 with *out (a 2xx JSON object, parsed), 0 when etcd answered with an error
 * (e: its message and gRPC code), -1 when it is not an etcd answer (e filled). */
static int classify_answer(const char *body, size_t len, long status, const char *ep, const char *label,
			   ma_json **out, ma_err *e)
{
	ma_err je = {0};
	ma_json *j = ma_json_parse(body, len, &je);
	const char *msg;
	int code;
	if (status >= 200 && status < 300 && j && j->type == MA_JSON_OBJECT) {
		*out = j;
		return 1;
	}
	if (j && etcd_error(j, &msg, &code)) {
		ma_fail(e, "%s: %s: %s (%s)", ep, label, msg, grpc_camel[code]);
		e->code = code;
		ma_json_free(j);
		return status == 503 ? -1 : 0; /* Unavailable (no leader, ...): another member may do */
	}
	char sn[128];
	shorten(sn, sizeof sn, body, len);
	ma_fail(e, "%s: %s: HTTP %ld, not an etcd answer: %s", ep, label, status, sn[0] ? sn : "(empty body)");
	e->code = MA_ETCD_EPROTO;
	ma_json_free(j);
	return -1;
}

/* One request to one endpoint. Returns 1 with *out (2xx, parsed), 0 when etcd answered with an
 * error (e filled with its message and gRPC code), -1 when the endpoint did not answer as etcd
 * (e filled; the caller may fail over). */
static int call_one(ma_http *h, const char *ep, const char *method, const char *path, const char *body,
		    const char *label, ma_json **out, long *status, ma_err *e)
{
	ma_http_req r = {0};
	r.method = method;
	r.path = path;
	r.headers = json_headers;
	r.body = body;
	r.body_len = body ? strlen(body) : 0;
	ma_http_resp resp = {0};
	ma_err he = {0};
	if (ma_http_do(h, &r, &resp, &he) < 0) {
		ma_http_resp_free(&resp);
		ma_fail(e, "%s: %s", ep, he.msg);
		e->code = he.code == MA_HTTP_ETLS ? MA_ETCD_ETLS
			  : he.code == MA_HTTP_ETOOLARGE ? MA_ETCD_EPROTO : MA_ETCD_EUNREACHABLE;
		return -1;
	}
	*status = resp.status;
	int rc = classify_answer(resp.body, resp.body_len, resp.status, ep, label, out, e);
	ma_http_resp_free(&resp);
	return rc;
}

/* A cluster call: the endpoints in order until one answers. */
static int call(ma_etcd *c, const char *path, const char *body, const char *label, ma_json **out,
		const char **endpoint, ma_err *e)
{
	char errs[MA_ERRLEN] = "";
	int lastcode = MA_ETCD_EUNREACHABLE, all_tls = 1;
	for (size_t i = 0; i < c->n; i++) {
		ma_err one = {0};
		long st = 0;
		int rc = call_one(c->h[i], c->eps[i], "POST", path, body, label, out, &st, &one);
		if (rc == 1) {
			*endpoint = c->eps[i];
			if (strstr(path, "/member/") && !strstr(path, "/member/list"))
				MA_HOOK_MUTATION("etcd", label);
			return 0;
		}
		if (rc == 0) {
			ma_fail(e, "etcd: %s", one.msg);
			e->code = one.code;
			return -1;
		}
		if (c->n == 1) {
			ma_fail(e, "etcd: %s", one.msg);
			e->code = one.code;
			return -1;
		}
		appendf(errs, sizeof errs, "%s%s", errs[0] ? "; " : "", one.msg);
		lastcode = one.code;
		if (one.code != MA_ETCD_ETLS)
			all_tls = 0;
	}
	ma_fail(e, "etcd: %s: none of %zu endpoints could serve it: %s", label, c->n, errs);
	e->code = all_tls ? MA_ETCD_ETLS : (lastcode == MA_ETCD_EPROTO ? MA_ETCD_EPROTO : MA_ETCD_EUNREACHABLE);
	if (lastcode > 0 && lastcode <= 16)
		e->code = lastcode; /* e.g. every member says Unavailable */
	return -1;
}

/* ---- decoding ---- */

/* A JSON string only (ma_json_str also gives a number's text: no name or URL is a number) */
static const char *jstr(const ma_json *v)
{
	return v && v->type == MA_JSON_STRING ? v->s : NULL;
}

/* A list of strings: absent is empty (the gateway omits empty lists); another type, or an
 * element that is not a string, sets *bad. */
static char **strlist(const ma_json *a, size_t *n, int *oom, int *bad)
{
	*n = 0;
	if (a && a->type != MA_JSON_ARRAY)
		*bad = 1;
	if (!a || a->type != MA_JSON_ARRAY || a->n == 0)
		return NULL;
	char **v = calloc(a->n, sizeof *v);
	if (!v) {
		*oom = 1;
		return NULL;
	}
	for (const ma_json *x = a->child; x; x = x->next) {
		const char *s = jstr(x);
		if (!s) {
			*bad = 1;
			continue;
		}
		if (!(v[*n] = strdup(s))) {
			*oom = 1;
			break;
		}
		(*n)++;
	}
	return v;
}

static void member_clear(ma_etcd_member *m)
{
	free(m->name);
	for (size_t i = 0; i < m->n_peer_urls; i++)
		free(m->peer_urls[i]);
	free(m->peer_urls);
	for (size_t i = 0; i < m->n_client_urls; i++)
		free(m->client_urls[i]);
	free(m->client_urls);
	memset(m, 0, sizeof *m);
}

static int member_decode(const ma_json *j, ma_etcd_member *m, const char *ep, ma_err *e)
{
	memset(m, 0, sizeof *m);
	if (!j || j->type != MA_JSON_OBJECT || ma_json_u64(ma_json_get(j, "ID"), &m->id) < 0) {
		ma_fail(e, "etcd: %s: a member without a valid uint64 \"ID\"", ep);
		e->code = MA_ETCD_EPROTO;
		return -1;
	}
	int oom = 0, bad = 0;
	const ma_json *jn = ma_json_get(j, "name"), *jl = ma_json_get(j, "isLearner");
	const char *name = jstr(jn);
	if (jn && !name)
		bad = 1;
	if (jl && jl->type != MA_JSON_TRUE && jl->type != MA_JSON_FALSE)
		bad = 1;
	if (!(m->name = strdup(name ? name : "")))
		oom = 1;
	m->peer_urls = strlist(ma_json_get(j, "peerURLs"), &m->n_peer_urls, &oom, &bad);
	m->client_urls = strlist(ma_json_get(j, "clientURLs"), &m->n_client_urls, &oom, &bad);
	m->is_learner = ma_json_bool(jl, 0);
	if (oom) {
		member_clear(m);
		return ma_fail(e, "etcd: out of memory");
	}
	if (bad || m->n_peer_urls == 0) { /* a member always has a peer URL: every decision is made on it */
		char hex[17];
		ma_etcd_id_hex(m->id, hex);
		member_clear(m);
		ma_fail(e, "etcd: %s: member %s: %s", ep, hex,
			bad ? "\"name\", \"peerURLs\", \"clientURLs\" or \"isLearner\" of the wrong type"
			    : "no \"peerURLs\"");
		e->code = MA_ETCD_EPROTO;
		return -1;
	}
	return 0;
}

static int proto_fail(ma_err *e, const char *fmt, const char *ep, const char *label)
{
	ma_fail(e, fmt, ep, label);
	e->code = MA_ETCD_EPROTO;
	return -1;
}

/* An answer of the wrong shape is an error, never an empty result: a 200 without "members"
 * would read as a cluster with no member, and a reset or join would act on it. */
static int members_decode(const ma_json *j, const char *ep, const char *label, ma_etcd_members *out, ma_err *e)
{
	if (!(out->endpoint = strdup(ep)))
		return ma_fail(e, "etcd: out of memory");
	const ma_json *ms = ma_json_get(j, "members");
	if (!ms)
		return proto_fail(e, "etcd: %s: %s: the answer has no \"members\" (a cluster always has one)", ep, label);
	if (ms->type != MA_JSON_ARRAY)
		return proto_fail(e, "etcd: %s: %s: \"members\" is not a list", ep, label);
	if (ms->n == 0)
		return proto_fail(e, "etcd: %s: %s: \"members\" is empty (a cluster always has one)", ep, label);
	if (!(out->v = calloc(ms->n, sizeof *out->v)))
		return ma_fail(e, "etcd: out of memory");
	for (const ma_json *x = ms->child; x; x = x->next) {
		if (member_decode(x, &out->v[out->n], ep, e) < 0)
			return -1;
		out->n++;
	}
	const ma_json *hd = ma_json_get(j, "header");
	if (!hd || hd->type != MA_JSON_OBJECT || ma_json_u64(ma_json_get(hd, "cluster_id"), &out->cluster_id) < 0)
		return proto_fail(e, "etcd: %s: %s: the answer has no header with a cluster_id: not an etcd answer",
				  ep, label);
	ma_json_u64(ma_json_get(hd, "member_id"), &out->member_id);
	ma_json_u64(ma_json_get(hd, "raft_term"), &out->raft_term);
	const ma_json *added = ma_json_get(j, "member");
	if (added) {
		if (member_decode(added, &out->added, ep, e) < 0)
			return -1;
		out->has_added = 1;
	}
	return 0;
}

void ma_etcd_members_free(ma_etcd_members *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++)
		member_clear(&m->v[i]);
	free(m->v);
	member_clear(&m->added);
	free(m->endpoint);
	memset(m, 0, sizeof *m);
}

static int members_call(ma_etcd *c, const char *path, const char *body, const char *label, ma_etcd_members *out,
			ma_err *e)
{
	memset(out, 0, sizeof *out);
	ma_json *j = NULL;
	const char *ep = NULL;
	if (call(c, path, body, label, &j, &ep, e) < 0)
		return -1;
	int rc = members_decode(j, ep, label, out, e);
	ma_json_free(j);
	return rc;
}

int ma_etcd_member_list(ma_etcd *c, int linearizable, ma_etcd_members *out, ma_err *e)
{
	return members_call(c, "/v3/cluster/member/list", linearizable ? "{\"linearizable\":true}" : "{}",
			    "member list", out, e);
}

int ma_etcd_member_add(ma_etcd *c, const char *const *peer_urls, size_t n, int learner, ma_etcd_members *out,
		       ma_err *e)
{
	memset(out, 0, sizeof *out);
	if (n == 0 || !peer_urls) {
		ma_fail(e, "etcd: member add: no peer URL given");
		e->code = MA_ETCD_EOPTS;
		return -1;
	}
	size_t cap = 64;
	for (size_t i = 0; i < n; i++) {
		if (!peer_urls[i] || !*peer_urls[i]) {
			ma_fail(e, "etcd: member add: an empty peer URL");
			e->code = MA_ETCD_EOPTS;
			return -1;
		}
		cap += 6 * strlen(peer_urls[i]) + 4;
	}
	char *body = malloc(cap);
	if (!body)
		return ma_fail(e, "etcd: out of memory");
	size_t at = (size_t)snprintf(body, cap, "{\"peerURLs\":[");
	for (size_t i = 0; i < n; i++) {
		if (i)
			body[at++] = ',';
		at = ma_json_quote(body, cap, at, peer_urls[i]);
	}
	snprintf(body + at, cap - at, "],\"isLearner\":%s}", learner ? "true" : "false");
	char label[MA_ERRLEN / 2];
	snprintf(label, sizeof label, "member add%s %s%s", learner ? " (learner)" : "", peer_urls[0],
		 n > 1 ? ",..." : "");
	int rc = members_call(c, "/v3/cluster/member/add", body, label, out, e);
	free(body);
	if (rc == 0 && !out->has_added) {
		ma_fail(e, "etcd: %s: %s: the answer has no \"member\"", out->endpoint, label);
		e->code = MA_ETCD_EPROTO;
		return -1;
	}
	return rc;
}

static int id_call(ma_etcd *c, const char *path, const char *what, uint64_t id, ma_etcd_members *out, ma_err *e)
{
	char body[64], label[64], hex[17];
	snprintf(body, sizeof body, "{\"ID\":\"%llu\"}", (unsigned long long)id);
	ma_etcd_id_hex(id, hex);
	snprintf(label, sizeof label, "member %s %s", what, hex);
	return members_call(c, path, body, label, out, e);
}

int ma_etcd_member_promote(ma_etcd *c, uint64_t id, ma_etcd_members *out, ma_err *e)
{
	return id_call(c, "/v3/cluster/member/promote", "promote", id, out, e);
}

int ma_etcd_member_remove(ma_etcd *c, uint64_t id, ma_etcd_members *out, ma_err *e)
{
	return id_call(c, "/v3/cluster/member/remove", "remove", id, out, e);
}

/* ---- per endpoint ---- */

/* the handle for endpoint i or url; *tmp is set when it is temporary */
static ma_http *pick(ma_etcd *c, size_t i, const char *url, const char **ep, ma_http **tmp, ma_err *e)
{
	*tmp = NULL;
	if (url) {
		for (size_t k = 0; k < c->n; k++)
			if (strcmp(c->eps[k], url) == 0) {
				*ep = c->eps[k];
				return c->h[k];
			}
		if (check_url(url, e) < 0)
			return NULL;
		*ep = url;
		return *tmp = open_http(c, url, e);
	}
	if (i >= c->n) {
		ma_fail(e, "etcd: no endpoint %zu (the client has %zu)", i, c->n);
		e->code = MA_ETCD_EOPTS;
		return NULL;
	}
	*ep = c->eps[i];
	return c->h[i];
}

/* Reads a status answer (takes j). */
static int status_decode(ma_json *j, const char *ep, ma_etcd_status *out, ma_err *e)
{
	int oom = 0, bad = 0;
	const ma_json *hd = ma_json_get(j, "header");
	const char *v = ma_json_str(ma_json_get(j, "version"));
	if (!v || !*v || ma_json_u64(ma_json_get(hd, "member_id"), &out->member_id) < 0) {
		ma_fail(e, "etcd: %s: status: the answer has no %s: not an etcd status", ep,
			!v || !*v ? "\"version\"" : "header.member_id");
		e->code = MA_ETCD_EPROTO;
		ma_json_free(j);
		return -1;
	}
	ma_json_u64(ma_json_get(hd, "cluster_id"), &out->cluster_id);
	ma_json_u64(ma_json_get(hd, "revision"), &out->revision);
	ma_json_u64(ma_json_get(j, "leader"), &out->leader);
	ma_json_u64(ma_json_get(j, "raftIndex"), &out->raft_index);
	ma_json_u64(ma_json_get(j, "raftTerm"), &out->raft_term);
	ma_json_u64(ma_json_get(j, "raftAppliedIndex"), &out->raft_applied_index);
	ma_json_u64(ma_json_get(j, "dbSize"), &out->db_size);
	ma_json_u64(ma_json_get(j, "dbSizeInUse"), &out->db_size_in_use);
	out->is_learner = ma_json_bool(ma_json_get(j, "isLearner"), 0);
	if (!(out->version = strdup(v)) || !(out->endpoint = strdup(ep)))
		oom = 1;
	out->errors = strlist(ma_json_get(j, "errors"), &out->n_errors, &oom, &bad);
	ma_json_free(j);
	if (oom) {
		ma_etcd_status_free(out);
		return ma_fail(e, "etcd: out of memory");
	}
	if (bad) {
		ma_etcd_status_free(out);
		ma_fail(e, "etcd: %s: status: \"errors\" is not a list of strings", ep);
		e->code = MA_ETCD_EPROTO;
		return -1;
	}
	return 0;
}

int ma_etcd_endpoint_status(ma_etcd *c, size_t i, const char *url, ma_etcd_status *out, ma_err *e)
{
	memset(out, 0, sizeof *out);
	const char *ep;
	ma_http *tmp, *h = pick(c, i, url, &ep, &tmp, e);
	if (!h)
		return -1;
	ma_json *j = NULL;
	long st = 0;
	ma_err one = {0};
	int rc = call_one(h, ep, "POST", "/v3/maintenance/status", "{}", "status", &j, &st, &one);
	ma_http_free(tmp);
	if (rc != 1) {
		ma_fail(e, "etcd: %s", one.msg);
		e->code = one.code;
		return -1;
	}
	return status_decode(j, ep, out, e);
}

void ma_etcd_status_free(ma_etcd_status *s)
{
	if (!s)
		return;
	free(s->endpoint);
	free(s->version);
	for (size_t i = 0; i < s->n_errors; i++)
		free(s->errors[i]);
	free(s->errors);
	memset(s, 0, sizeof *s);
}

/* Reads a /health answer: {"health":"true"|"false","reason":...} at any status. */
static int health_decode(const char *body, size_t len, long status, const char *ep, ma_etcd_health *out, ma_err *e)
{
	ma_err je = {0};
	ma_json *j = ma_json_parse(body, len, &je);
	const char *hs = ma_json_str(ma_json_get(j, "health"));
	if (!hs) {
		char sn[128];
		shorten(sn, sizeof sn, body, len);
		ma_fail(e, "etcd: %s: health: HTTP %ld, not an etcd answer: %s", ep, status,
			sn[0] ? sn : "(empty body)");
		e->code = MA_ETCD_EPROTO;
		ma_json_free(j);
		return -1;
	}
	out->healthy = strcmp(hs, "true") == 0;
	out->status = status;
	const char *reason = ma_json_str(ma_json_get(j, "reason"));
	out->reason = strdup(reason ? reason : "");
	out->endpoint = strdup(ep);
	ma_json_free(j);
	if (!out->reason || !out->endpoint) {
		ma_etcd_health_free(out);
		return ma_fail(e, "etcd: out of memory");
	}
	return 0;
}

int ma_etcd_endpoint_health(ma_etcd *c, size_t i, const char *url, ma_etcd_health *out, ma_err *e)
{
	memset(out, 0, sizeof *out);
	const char *ep;
	ma_http *tmp, *h = pick(c, i, url, &ep, &tmp, e);
	if (!h)
		return -1;
	ma_http_req r = {0};
	r.method = "GET";
	r.path = "/health";
	ma_http_resp resp = {0};
	ma_err he = {0};
	int rc = ma_http_do(h, &r, &resp, &he);
	ma_http_free(tmp);
	if (rc < 0) {
		ma_http_resp_free(&resp);
		ma_fail(e, "etcd: %s: %s", ep, he.msg);
		e->code = he.code == MA_HTTP_ETLS ? MA_ETCD_ETLS
			  : he.code == MA_HTTP_ETOOLARGE ? MA_ETCD_EPROTO : MA_ETCD_EUNREACHABLE;
		return -1;
	}
	rc = health_decode(resp.body, resp.body_len, resp.status, ep, out, e);
	ma_http_resp_free(&resp);
	return rc;
}

void ma_etcd_health_free(ma_etcd_health *h)
{
	if (!h)
		return;
	free(h->endpoint);
	free(h->reason);
	memset(h, 0, sizeof *h);
}

/* ---- snapshots (the decoder and the file check: engine/etcd_snapshot.c) ---- */

struct snap_x {
	ma_etcd_snapdec *d;
	ma_err err;
};

static int snap_sink(const char *buf, size_t len, void *ud)
{
	struct snap_x *x = ud;
	return ma_etcd_snapdec_feed(x->d, buf, len, &x->err) < 0; /* nonzero: the transfer stops */
}

/* The answer of a stream that did not run to its end as a 2xx: etcd's error, else what it is. */
static int snap_refused(struct snap_x *x, const ma_http_resp *resp, const char *ep, ma_err *e)
{
	ma_err de = {0};
	ma_etcd_snapshot none = {0};
	int bad = ma_etcd_snapdec_feed(x->d, resp->body, resp->body_len, &de) < 0 ||
		  ma_etcd_snapdec_finish(x->d, &none, &de) < 0; /* (a body without its last newline) */
	ma_etcd_snapshot_free(&none);
	if (bad && de.code >= 1 && de.code <= 16) {
		*e = de; /* etcd's own error */
		return -1;
	}
	char sn[128];
	shorten(sn, sizeof sn, resp->body, resp->body_len); /* an error page, never snapshot data */
	ma_fail(e, "etcd: %s: snapshot: HTTP %ld, not an etcd answer: %s", ep, resp->status, sn[0] ? sn : "(empty body)");
	e->code = MA_ETCD_EPROTO;
	return -1;
}

/* The stream itself, on handle h. */
static int snap_stream(ma_http *h, const char *ep, const ma_etcd_snapshot_opts *o, ma_etcd_snapshot_sink sink,
		       void *ud, ma_etcd_snapshot *out, ma_err *e)
{
	struct snap_x x = {0};
	if (!(x.d = ma_etcd_snapdec_new(ep, o ? o->max_line : 0, sink, ud, e)))
		return -1;
	ma_http_req r = {0};
	r.method = "POST";
	r.path = "/v3/maintenance/snapshot";
	r.headers = json_headers;
	r.body = "{}";
	r.body_len = 2;
	r.timeout_ms = o && o->timeout_ms > 0 ? o->timeout_ms : MA_ETCD_SNAPSHOT_TIMEOUT_DEFAULT;
	r.sink = snap_sink;
	r.sink_ud = &x;
	ma_http_resp resp = {0};
	ma_err he = {0};
	int rc = ma_http_do(h, &r, &resp, &he);
	if (rc < 0 && !x.err.msg[0]) {
		ma_fail(e, "etcd: %s: snapshot: %s", ep, he.msg);
		e->code = he.code == MA_HTTP_ETLS ? MA_ETCD_ETLS
			  : he.code == MA_HTTP_ETOOLARGE ? MA_ETCD_EPROTO : MA_ETCD_EUNREACHABLE;
	} else if (x.err.msg[0]) { /* the decoder or the sink stopped it */
		*e = x.err;
		rc = -1;
	} else if (resp.status < 200 || resp.status >= 300) {
		rc = snap_refused(&x, &resp, ep, e);
	} else {
		rc = ma_etcd_snapdec_finish(x.d, out, e);
	}
	ma_http_resp_free(&resp);
	ma_etcd_snapdec_free(x.d);
	return rc;
}

int ma_etcd_snapshot_save(ma_etcd *c, size_t i, const char *url, const ma_etcd_snapshot_opts *o,
			  ma_etcd_snapshot_sink sink, void *ud, ma_etcd_snapshot *out, ma_err *e)
{
	memset(out, 0, sizeof *out);
	ma_etcd_status st;
	if (ma_etcd_endpoint_status(c, i, url, &st, e) < 0) { /* who answers, and the revision before */
		ma_etcd_status_free(&st);
		return -1;
	}
	out->endpoint = st.endpoint;
	out->version = st.version;
	st.endpoint = st.version = NULL;
	out->member_id = st.member_id;
	out->cluster_id = st.cluster_id;
	out->revision = st.revision;
	ma_etcd_status_free(&st);
	const char *ep;
	ma_http *tmp, *h = pick(c, i, url, &ep, &tmp, e);
	if (!h)
		return -1;
	int rc = snap_stream(h, ep, o, sink, ud, out, e);
	ma_http_free(tmp);
	return rc;
}

void ma_etcd_snapshot_free(ma_etcd_snapshot *s)
{
	if (!s)
		return;
	free(s->endpoint);
	free(s->version);
	free(s->storage_version);
	memset(s, 0, sizeof *s);
}

/* ---- answers without a transport (engine/etcd.h: the fuzz targets' entry points) ---- */

int ma_etcd_members_parse(const char *body, size_t len, long status, const char *ep, ma_etcd_members *out, ma_err *e)
{
	memset(out, 0, sizeof *out);
	ma_json *j = NULL;
	ma_err one = {0};
	if (classify_answer(body, len, status, ep, "member list", &j, &one) != 1) {
		ma_fail(e, "etcd: %s", one.msg);
		e->code = one.code;
		return -1;
	}
	int rc = members_decode(j, ep, "member list", out, e);
	ma_json_free(j);
	return rc;
}

int ma_etcd_status_parse(const char *body, size_t len, long status, const char *ep, ma_etcd_status *out, ma_err *e)
{
	memset(out, 0, sizeof *out);
	ma_json *j = NULL;
	ma_err one = {0};
	if (classify_answer(body, len, status, ep, "status", &j, &one) != 1) {
		ma_fail(e, "etcd: %s", one.msg);
		e->code = one.code;
		return -1;
	}
	return status_decode(j, ep, out, e);
}

int ma_etcd_health_parse(const char *body, size_t len, long status, const char *ep, ma_etcd_health *out, ma_err *e)
{
	memset(out, 0, sizeof *out);
	return health_decode(body, len, status, ep, out, e);
}
