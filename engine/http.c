/* TLS HTTP client over libcurl (see http.h). */
#include "http.h"
#include "libcurl.h"
#include "pki.h"
#include "testhooks.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

struct ma_http {
	char *server;                 /* no trailing '/' */
	char *ca_pem, *ca_file, *cert_pem, *key_pem, *auth, *ua;
	size_t ca_pem_len, cert_pem_len, key_pem_len;
	int insecure;
	long connect_timeout_ms, timeout_ms;
	size_t max_body;              /* default cap on a buffered body */
	CURL *curl;                   /* the endpoint's handle: its connection cache is reused */
	int busy;                     /* a transfer is running on curl (reentrancy from a sink) */
};

const char *ma_http_errkind_name(int code)
{
	switch (code) {
	case MA_HTTP_ECONNECT: return "connect";
	case MA_HTTP_ETIMEOUT: return "timeout";
	case MA_HTTP_ETLS: return "tls";
	case MA_HTTP_EOPTS: return "options";
	case MA_HTTP_ETOOLARGE: return "too_large";
	default: return "other";
	}
}

static int global_init(ma_err *e)
{
	if (ma_libcurl_load(e)) {
		if (e)
			e->code = MA_HTTP_EOTHER;
		return -1;
	}
	return 0;
}

static void wipe_free(char *p, size_t n)
{
	if (p) {
		OPENSSL_cleanse(p, n);
		free(p);
	}
}

static char *dupn(const char *s, size_t n)
{
	char *p = malloc(n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

static int opt_fail(ma_err *e, const char *fmt, const char *what, const char *server)
{
	ma_fail(e, fmt, what, server);
	if (e)
		e->code = MA_HTTP_EOPTS;
	return -1;
}

/* Checks that PEM bytes hold what they should, so a wrong file fails at once with a clear message
 * rather than as an opaque TLS error at the first request. kind: 0 cert(s), 1 private key. */
static int check_pem(const char *pem, size_t len, int kind)
{
	/* this process's first OpenSSL use may be here: the DRBG is chosen before OpenSSL reads its
	 * openssl.cnf (whose [random] section then still has the last word) and before a key's blinding
	 * draws a random byte */
	ma_pki_choose_drbg();
	BIO *b = BIO_new_mem_buf(pem, (int)len);
	if (!b)
		return -1;
	int ok;
	if (kind == 0) {
		X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);
		ok = x != NULL;
		X509_free(x);
	} else {
		EVP_PKEY *k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
		ok = k != NULL;
		EVP_PKEY_free(k);
	}
	BIO_free(b);
	ERR_clear_error();
	return ok ? 0 : -1;
}

static int valid_server(const char *s)
{
	const char *h = NULL;
	if (strncmp(s, "https://", 8) == 0)
		h = s + 8;
	else if (strncmp(s, "http://", 7) == 0)
		h = s + 7;
	return h && *h && *h != '/' && !strpbrk(s, " \t\r\n?#");
}

ma_http *ma_http_new(const ma_http_opts *o, ma_err *e)
{
	if (global_init(e) < 0)
		return NULL;
	const char *srv = o->server ? o->server : "";
	if (!o->server || !valid_server(o->server)) {
		opt_fail(e, "http: server %s%s: want https://HOST[:PORT]", o->server ? "" : "(none)", srv);
		return NULL;
	}
	if (o->ca_pem && o->ca_file) {
		opt_fail(e, "http: %s: both CA PEM bytes and a CA file given for %s", "options", srv);
		return NULL;
	}
	if (!o->cert_pem != !o->key_pem) {
		opt_fail(e, "http: %s for %s: a client certificate needs both the certificate and the key",
			 "options", srv);
		return NULL;
	}
	if (o->ca_pem && check_pem(o->ca_pem, o->ca_pem_len, 0) < 0) {
		opt_fail(e, "http: %s for %s is not a PEM certificate", "the CA data", srv);
		return NULL;
	}
	if (o->cert_pem && check_pem(o->cert_pem, o->cert_pem_len, 0) < 0) {
		opt_fail(e, "http: %s for %s is not a PEM certificate", "the client certificate data", srv);
		return NULL;
	}
	if (o->key_pem && check_pem(o->key_pem, o->key_pem_len, 1) < 0) {
		opt_fail(e, "http: %s for %s is not a PEM private key", "the client key data", srv);
		return NULL;
	}
	if (o->token && strpbrk(o->token, "\r\n")) {
		opt_fail(e, "http: %s for %s contains a line break", "the bearer token", srv);
		return NULL;
	}
	ma_http *h = calloc(1, sizeof *h);
	if (!h)
		goto oom;
	size_t sl = strlen(srv);
	while (sl > 0 && srv[sl - 1] == '/')
		sl--;
	if (!(h->server = dupn(srv, sl)))
		goto oom;
	if (o->ca_pem && !(h->ca_pem = dupn(o->ca_pem, h->ca_pem_len = o->ca_pem_len)))
		goto oom;
	if (o->ca_file && !(h->ca_file = strdup(o->ca_file)))
		goto oom;
	if (o->cert_pem && !(h->cert_pem = dupn(o->cert_pem, h->cert_pem_len = o->cert_pem_len)))
		goto oom;
	if (o->key_pem && !(h->key_pem = dupn(o->key_pem, h->key_pem_len = o->key_pem_len)))
		goto oom;
	if (o->token) {
		size_t n = strlen("Authorization: Bearer ") + strlen(o->token) + 1;
		if (!(h->auth = malloc(n)))
			goto oom;
		snprintf(h->auth, n, "Authorization: Bearer %s", o->token);
	}
	if (!(h->ua = strdup(o->user_agent ? o->user_agent : "moonadm")))
		goto oom;
	h->insecure = o->insecure;
	h->connect_timeout_ms = o->connect_timeout_ms > 0 ? o->connect_timeout_ms : 10000;
	h->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 0;
	h->max_body = o->max_body ? o->max_body : MA_HTTP_MAX_BODY_DEFAULT;
	if (!(h->curl = curl_easy_init()))
		goto oom;
	return h;
oom:
	ma_http_free(h);
	ma_fail(e, "http: %s: out of memory", srv);
	if (e)
		e->code = MA_HTTP_EOTHER;
	return NULL;
}

void ma_http_free(ma_http *h)
{
	if (!h)
		return;
	if (h->curl)
		curl_easy_cleanup(h->curl);
	free(h->server);
	free(h->ca_pem);
	free(h->ca_file);
	free(h->cert_pem);
	wipe_free(h->key_pem, h->key_pem_len);
	if (h->auth)
		wipe_free(h->auth, strlen(h->auth));
	free(h->ua);
	free(h);
}

const char *ma_http_server(const ma_http *h) { return h->server; }

/* ---- URLs ---- */

char *ma_http_escape(const char *s, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	char *out = malloc(len * 3 + 1), *p = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
			*p++ = (char)c;
		} else {
			*p++ = '%';
			*p++ = hex[c >> 4];
			*p++ = hex[c & 15];
		}
	}
	*p = '\0';
	return out;
}

char *ma_http_query(const char *const *kv)
{
	size_t cap = 1;
	for (size_t i = 0; kv && kv[i] && kv[i + 1]; i += 2)
		cap += 3 * (strlen(kv[i]) + strlen(kv[i + 1])) + 2;
	char *out = malloc(cap), *p = out;
	if (!out)
		return NULL;
	*p = '\0';
	for (size_t i = 0; kv && kv[i] && kv[i + 1]; i += 2) {
		char *k = ma_http_escape(kv[i], strlen(kv[i])), *v = ma_http_escape(kv[i + 1], strlen(kv[i + 1]));
		if (!k || !v) {
			free(k);
			free(v);
			free(out);
			return NULL;
		}
		p += sprintf(p, "%s%s=%s", p == out ? "" : "&", k, v);
		free(k);
		free(v);
	}
	return out;
}

char *ma_http_url(const char *server, const char *path, const char *query, ma_err *e)
{
	if (!server || !valid_server(server)) {
		ma_fail(e, "http: server %s: want https://HOST[:PORT]", server ? server : "(none)");
		if (e)
			e->code = MA_HTTP_EOPTS;
		return NULL;
	}
	if (!path || path[0] != '/' || strpbrk(path, " \t\r\n?#")) {
		ma_fail(e, "http: %s: path \"%s\" must start with '/' and hold no spaces, '?' or '#'", server,
			path ? path : "(none)");
		if (e)
			e->code = MA_HTTP_EOPTS;
		return NULL;
	}
	size_t sl = strlen(server);
	while (sl > 0 && server[sl - 1] == '/')
		sl--;
	size_t n = sl + strlen(path) + (query ? strlen(query) + 1 : 0) + 1;
	char *u = malloc(n);
	if (!u) {
		ma_fail(e, "http: %s: out of memory", server);
		if (e)
			e->code = MA_HTTP_EOTHER;
		return NULL;
	}
	snprintf(u, n, "%.*s%s%s%s", (int)sl, server, path, query && *query ? "?" : "", query ? query : "");
	return u;
}

/* ---- requests ---- */

struct xfer {
	CURL *c;
	ma_http_resp *resp;
	size_t hcap, bcap;
	const ma_http_req *req;
	int oom;
	size_t max_body;        /* cap on the buffered body */
	size_t hdr_bytes;       /* header bytes and lines of the whole transfer (1xx included) */
	unsigned hdr_lines;
	int body_over;          /* the body passed max_body: 1 while streaming, 2 announced */
	int hdr_over;           /* the headers passed their cap */
	curl_off_t announced;   /* Content-Length of a body over the cap */
};

static int append(char **buf, size_t *len, size_t *cap, const char *p, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t nc = *cap ? *cap : 1024;
		while (nc < *len + n + 1)
			nc *= 2;
		char *nb = realloc(*buf, nc);
		if (!nb)
			return -1;
		*buf = nb;
		*cap = nc;
	}
	memcpy(*buf + *len, p, n);
	*len += n;
	(*buf)[*len] = '\0';
	return 0;
}

static size_t on_header(char *p, size_t sz, size_t n, void *ud)
{
	struct xfer *x = ud;
	size_t len = sz * n;
	x->hdr_bytes += len;
	if (++x->hdr_lines > MA_HTTP_MAX_HEADER_LINES || x->hdr_bytes > MA_HTTP_MAX_HEADER_BYTES) {
		x->hdr_over = 1;
		return 0; /* CURLE_WRITE_ERROR: stop reading now */
	}
	if (len >= 5 && strncmp(p, "HTTP/", 5) == 0) /* a new response (after 100 Continue, ...) */
		x->resp->headers_len = 0;
	if (append(&x->resp->headers, &x->resp->headers_len, &x->hcap, p, len) < 0) {
		x->oom = 1;
		return 0;
	}
	return len;
}

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
	struct xfer *x = ud;
	size_t len = sz * n;
	if (x->req->sink) {
		long st = 0;
		curl_easy_getinfo(x->c, CURLINFO_RESPONSE_CODE, &st);
		if (st >= 200 && st < 300) {
			if (x->req->sink(p, len, x->req->sink_ud)) {
				x->resp->stopped = 1;
				return 0; /* CURLE_WRITE_ERROR: the transfer stops here */
			}
			return len;
		}
	}
	if (x->resp->body_len == 0) { /* first chunk: a Content-Length over the cap stops here */
		curl_off_t cl = -1;
		if (curl_easy_getinfo(x->c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &cl) == CURLE_OK && cl >= 0 &&
		    (uint64_t)cl > (uint64_t)x->max_body) {
			x->body_over = 2;
			x->announced = cl;
			return 0;
		}
	}
	if (len > x->max_body - x->resp->body_len) { /* body_len <= max_body always holds */
		x->body_over = 1;
		return 0; /* CURLE_WRITE_ERROR: the transfer is aborted, nothing past the cap is kept */
	}
	if (append(&x->resp->body, &x->resp->body_len, &x->bcap, p, len) < 0) {
		x->oom = 1;
		return 0;
	}
	return len;
}

static int classify(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
		return MA_HTTP_ECONNECT;
	case CURLE_OPERATION_TIMEDOUT:
		return MA_HTTP_ETIMEOUT;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_ENGINE_NOTFOUND:
	case CURLE_SSL_ENGINE_SETFAILED:
	case CURLE_SSL_ENGINE_INITFAILED:
	case CURLE_SSL_SHUTDOWN_FAILED:
	case CURLE_USE_SSL_FAILED:
		return MA_HTTP_ETLS;
	default:
		return MA_HTTP_EOTHER;
	}
}

/* The endpoint's options (TLS, auth, timeouts): set again after each curl_easy_reset, which keeps
 * the live connections. Blobs are not copied (CURL_BLOB_NOCOPY): they live in h until it is freed,
 * so the only copy of the key is the one we wipe. */
static CURLcode setup_common(ma_http *h, CURL *c)
{
	CURLcode rc = CURLE_OK;
#define SET(opt, val) if (rc == CURLE_OK) rc = curl_easy_setopt(c, opt, val)
	SET(CURLOPT_NOSIGNAL, 1L);
	SET(CURLOPT_PROTOCOLS_STR, "http,https");
	SET(CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
	SET(CURLOPT_TCP_KEEPALIVE, 1L);
	SET(CURLOPT_CONNECTTIMEOUT_MS, h->connect_timeout_ms);
	SET(CURLOPT_USERAGENT, h->ua);
	if (h->insecure) {
		SET(CURLOPT_SSL_VERIFYPEER, 0L);
		SET(CURLOPT_SSL_VERIFYHOST, 0L);
	} else {
		SET(CURLOPT_SSL_VERIFYPEER, 1L);
		SET(CURLOPT_SSL_VERIFYHOST, 2L);
	}
	if (h->ca_pem) {
		struct curl_blob b = {h->ca_pem, h->ca_pem_len, CURL_BLOB_NOCOPY};
		SET(CURLOPT_CAINFO_BLOB, &b);
	} else if (h->ca_file) {
		SET(CURLOPT_CAINFO, h->ca_file);
	}
	if (h->cert_pem) {
		struct curl_blob cb = {h->cert_pem, h->cert_pem_len, CURL_BLOB_NOCOPY};
		struct curl_blob kb = {h->key_pem, h->key_pem_len, CURL_BLOB_NOCOPY};
		SET(CURLOPT_SSLCERTTYPE, "PEM");
		SET(CURLOPT_SSLCERT_BLOB, &cb);
		SET(CURLOPT_SSLKEYTYPE, "PEM");
		SET(CURLOPT_SSLKEY_BLOB, &kb);
	}
#undef SET
	return rc;
}

/* Wipes then frees a header list (it may hold the Authorization header). */
static void slist_wipe_free(struct curl_slist *l)
{
	for (struct curl_slist *p = l; p; p = p->next)
		if (p->data)
			OPENSSL_cleanse(p->data, strlen(p->data));
	curl_slist_free_all(l);
}

static struct curl_slist *slist_add(struct curl_slist *l, const char *s, int *oom)
{
	struct curl_slist *n = curl_slist_append(l, s);
	if (!n)
		*oom = 1;
	return n ? n : l;
}

/* The request's header list: "Expect:" (no 100-continue round trip), the credential, the caller's. */
static struct curl_slist *request_headers(const ma_http *h, const ma_http_req *r, int *oom)
{
	struct curl_slist *hdrs = slist_add(NULL, "Expect:", oom);
	if (h->auth)
		hdrs = slist_add(hdrs, h->auth, oom);
	for (size_t i = 0; r->headers && r->headers[i]; i++)
		hdrs = slist_add(hdrs, r->headers[i], oom);
	return hdrs;
}

/* Sets the options of one request on c (its URL, timeout, headers, sinks, method and body). */
static CURLcode setup_request(ma_http *h, CURL *c, const ma_http_req *r, const char *method, const char *url,
			      struct curl_slist *hdrs, struct xfer *x)
{
	CURLcode rc = setup_common(h, c);
	long tmo = r->timeout_ms > 0 ? r->timeout_ms : r->timeout_ms < 0 ? 0 : h->timeout_ms;
#define SET(opt, val) if (rc == CURLE_OK) rc = curl_easy_setopt(c, opt, val)
	SET(CURLOPT_URL, url);
	SET(CURLOPT_TIMEOUT_MS, tmo);
	SET(CURLOPT_HTTPHEADER, hdrs);
	SET(CURLOPT_HEADERFUNCTION, on_header);
	SET(CURLOPT_HEADERDATA, x);
	SET(CURLOPT_WRITEFUNCTION, on_body);
	SET(CURLOPT_WRITEDATA, x);
	if (strcmp(method, "HEAD") == 0) {
		SET(CURLOPT_NOBODY, 1L);
	} else if (r->body) {
		SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
		SET(CURLOPT_POSTFIELDS, r->body);
		SET(CURLOPT_CUSTOMREQUEST, method);
	} else if (strcmp(method, "GET") == 0) {
		SET(CURLOPT_HTTPGET, 1L);
	} else {
		SET(CURLOPT_CUSTOMREQUEST, method);
	}
#undef SET
	return rc;
}

/* Fills e for a transfer that ended with rc (not CURLE_OK) or ran out of memory: a cap passed, memory,
 * or curl's own reason (errbuf adds its detail), each with its class in e->code. Returns -1. */
static int transfer_failed(ma_err *e, const struct xfer *x, CURLcode rc, const char *method, const char *url,
			   const char *errbuf)
{
	if (x->hdr_over) {
		ma_fail(e, "http: %s %s: the response headers exceed the limit of %zu bytes or %d lines: "
			   "stopped reading", method, url, (size_t)MA_HTTP_MAX_HEADER_BYTES, MA_HTTP_MAX_HEADER_LINES);
		e->code = MA_HTTP_ETOOLARGE;
	} else if (x->body_over) {
		char ann[64] = "";
		if (x->body_over == 2)
			snprintf(ann, sizeof ann, " (Content-Length %lld)", (long long)x->announced);
		ma_fail(e, "http: %s %s: the response body is larger than the limit of %zu bytes%s: stopped reading "
			   "(HTTP %ld)", method, url, x->max_body, ann, x->resp->status);
		e->code = MA_HTTP_ETOOLARGE;
	} else if (x->oom) {
		ma_fail(e, "http: %s %s: out of memory", method, url);
		e->code = MA_HTTP_EOTHER;
	} else {
		ma_fail(e, "http: %s %s: %s%s%s%s", method, url, curl_easy_strerror(rc), errbuf[0] ? " (" : "",
			errbuf, errbuf[0] ? ")" : "");
		e->code = classify(rc);
	}
	return -1;
}

#ifdef MA_TEST_HOOKS
/* A mutating API call the server accepted (etcd's gateway calls count in etcd.c); a review
 * (SelfSubjectAccessReview, TokenReview, ...) stores nothing, and a poll makes a variable
 * number of them: not a mutation, so crash points stay the same from run to run. */
static void hook_mutation(const ma_http_req *r, const char *method, const ma_http_resp *resp)
{
	if (resp->status < 400 && strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0 &&
	    !(r->path && strncmp(r->path, "/v3/", 4) == 0) &&
	    !(r->path && strcmp(method, "POST") == 0 && strlen(r->path) >= 7 &&
	      strcmp(r->path + strlen(r->path) - 7, "reviews") == 0)) {
		char what[512];
		snprintf(what, sizeof what, "%s %s %ld", method, r->path ? r->path : "/", resp->status);
		MA_HOOK_MUTATION("api", what);
	}
}
#endif

/* The URL of r on h's server, after checking r's method (upper-case letters): NULL with e set. */
static char *request_url(const ma_http *h, const ma_http_req *r, const char *method, ma_err *e)
{
	char *url = ma_http_url(h->server, r->path, r->query, e);
	if (!url)
		return NULL; /* e names the server and path */
	for (const char *m = method; *m; m++)
		if (!isupper((unsigned char)*m)) {
			ma_fail(e, "http: %s %s: bad method", method, url);
			e->code = MA_HTTP_EOPTS;
			free(url);
			return NULL;
		}
	return url;
}

/* Runs the set-up transfer on c and reads its status, time and connection reuse into resp. */
static CURLcode perform(ma_http *h, CURL *c, int temp, ma_http_resp *resp)
{
	if (!temp)
		h->busy = 1;
	CURLcode rc = curl_easy_perform(c);
	if (!temp)
		h->busy = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp->status);
	curl_easy_getinfo(c, CURLINFO_TOTAL_TIME, &resp->seconds);
	long nconn = -1;
	curl_easy_getinfo(c, CURLINFO_NUM_CONNECTS, &nconn);
	resp->reused = nconn == 0;
	return rc;
}

int ma_http_do(ma_http *h, const ma_http_req *r, ma_http_resp *resp, ma_err *e)
{
	ma_err scratch;
	if (!e)
		e = &scratch;
	memset(resp, 0, sizeof *resp);
	const char *method = r->method && *r->method ? r->method : "GET";
	char *url = request_url(h, r, method, e);
	if (!url)
		return -1;

	CURL *c = h->curl;
	int temp = 0;
	if (h->busy) { /* called from a sink: a second handle, its own connection */
		if (!(c = curl_easy_init())) {
			ma_fail(e, "http: %s %s: out of memory", method, url);
			e->code = MA_HTTP_EOTHER;
			free(url);
			return -1;
		}
		temp = 1;
	} else {
		curl_easy_reset(c);
	}

	struct xfer x = {.c = c, .resp = resp, .req = r, .max_body = r->max_body ? r->max_body : h->max_body};
	int oom = 0;
	struct curl_slist *hdrs = request_headers(h, r, &oom);
	CURLcode rc = setup_request(h, c, r, method, url, hdrs, &x);
	char errbuf[CURL_ERROR_SIZE] = "";
	if (rc == CURLE_OK)
		rc = curl_easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
	int ret = 0;
	if (oom || rc != CURLE_OK) {
		ma_fail(e, "http: %s %s: setting up the request: %s", method, url,
			oom ? "out of memory" : curl_easy_strerror(rc));
		e->code = MA_HTTP_EOTHER;
		ret = -1;
		goto out;
	}
	rc = perform(h, c, temp, resp);
	if (rc == CURLE_WRITE_ERROR && resp->stopped && !x.oom)
		rc = CURLE_OK; /* the sink said stop: a normal end */
	if (rc != CURLE_OK || x.oom)
		ret = transfer_failed(e, &x, rc, method, url, errbuf);
	if (!resp->body && ret == 0) { /* always a NUL-terminated body */
		resp->body = calloc(1, 1);
		if (!resp->body) {
			ma_fail(e, "http: %s %s: out of memory", method, url);
			e->code = MA_HTTP_EOTHER;
			ret = -1;
		}
	}
out:
#ifdef MA_TEST_HOOKS
	if (ret == 0)
		hook_mutation(r, method, resp);
#endif
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
	if (temp)
		curl_easy_cleanup(c);
	slist_wipe_free(hdrs);
	free(url);
	return ret;
}

void ma_http_resp_free(ma_http_resp *r)
{
	if (!r)
		return;
	free(r->headers);
	free(r->body);
	r->headers = r->body = NULL;
	r->headers_len = r->body_len = 0;
}

long ma_http_header(const ma_http_resp *r, const char *name, char *out, size_t outlen)
{
	if (!r->headers)
		return -1;
	size_t nl = strlen(name);
	const char *p = r->headers, *end = r->headers + r->headers_len;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		if ((size_t)(eol - p) > nl && strncasecmp(p, name, nl) == 0 && p[nl] == ':') {
			const char *v = p + nl + 1, *ve = eol;
			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
				ve--;
			size_t n = (size_t)(ve - v);
			if (out && outlen) {
				size_t k = n < outlen - 1 ? n : outlen - 1;
				memcpy(out, v, k);
				out[k] = '\0';
			}
			return (long)n;
		}
		p = eol + 1;
	}
	return -1;
}

int ma_http_header_next(const ma_http_resp *r, size_t *pos, const char **name, size_t *name_len, const char **value,
			size_t *value_len)
{
	if (!r->headers)
		return 0;
	const char *end = r->headers + r->headers_len;
	while (*pos < r->headers_len) {
		const char *p = r->headers + *pos;
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		if (!eol)
			eol = end;
		*pos = (size_t)(eol - r->headers) + (eol < end ? 1 : 0);
		const char *colon = memchr(p, ':', (size_t)(eol - p));
		if (!colon || colon == p || ((size_t)(eol - p) >= 5 && strncmp(p, "HTTP/", 5) == 0))
			continue;
		const char *v = colon + 1, *ve = eol;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == '\r' || ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		*name = p;
		*name_len = (size_t)(colon - p);
		*value = v;
		*value_len = (size_t)(ve - v);
		return 1;
	}
	return 0;
}
