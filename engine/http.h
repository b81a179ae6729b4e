/* A TLS HTTP client for the Kubernetes API over libcurl. One ma_http per endpoint keeps one curl
 * handle, so consecutive requests reuse the connection (and the TLS session). Credentials (client
 * key PEM, bearer token) are copied into the handle and wiped with OPENSSL_cleanse when it is freed;
 * no error message ever carries them: errors name the method and the URL only. */
#ifndef MA_HTTP_H
#define MA_HTTP_H

#include <stddef.h>
#include "err.h"

/* Size caps on what a server sends back (a hostile or broken server must not make us buffer
 * without bound): the body of one response (per handle and per request; a request may lower or
 * raise it), and the header block of one transfer (bytes and lines, 1xx responses included). A
 * body over its cap aborts the transfer at the first byte past it (or at once when Content-Length
 * announces more): ma_http_do fails with MA_HTTP_ETOOLARGE and a message naming the URL and the cap. */
#define MA_HTTP_MAX_BODY_DEFAULT ((size_t)64 << 20) /* 64 MiB: a page of a large list */
#define MA_HTTP_MAX_HEADER_BYTES ((size_t)256 << 10) /* 256 KiB of header lines per transfer */
#define MA_HTTP_MAX_HEADER_LINES 512                 /* header lines per transfer */

typedef struct ma_http ma_http;

typedef struct ma_http_opts {
	const char *server;        /* "https://127.0.0.1:6443" (a path prefix is kept); required */
	const char *ca_pem;        /* trust: CA PEM bytes ... */
	size_t ca_pem_len;
	const char *ca_file;       /* ... or a CA file (neither: the system store) */
	const char *cert_pem;      /* client certificate PEM bytes (with key_pem) */
	size_t cert_pem_len;
	const char *key_pem;       /* client private key PEM bytes: a secret */
	size_t key_pem_len;
	const char *token;         /* bearer token: a secret */
	int insecure;              /* skip server verification: only when explicitly asked */
	long connect_timeout_ms;   /* 0: 10 s */
	long timeout_ms;           /* default whole-request timeout; 0: none */
	const char *user_agent;    /* 0: "moonadm" */
	size_t max_body;           /* cap on a buffered response body, bytes; 0: MA_HTTP_MAX_BODY_DEFAULT */
} ma_http_opts;

/* Streaming body sink: called with each chunk of a 2xx body; return nonzero to stop the transfer
 * (ma_http_do then returns 0 with resp->stopped set). Non-2xx bodies are buffered as usual (and
 * capped). A streamed body is not capped as a whole (a watch is endless by design): the sink
 * bounds what it keeps (kube.client's watch caps one event at the request's max_body). */
typedef int (*ma_http_sink)(const char *buf, size_t len, void *ud);

typedef struct ma_http_req {
	const char *method;        /* "GET", "POST", "PUT", "PATCH", "DELETE", ...; 0: GET */
	const char *path;          /* "/api/v1/namespaces" */
	const char *query;         /* already encoded, without '?' (see ma_http_query); may be 0 */
	const char *const *headers;/* "Name: value" strings, NULL-terminated; may be 0 */
	const char *body;          /* may be 0 */
	size_t body_len;
	long timeout_ms;           /* 0: the handle's default; <0: none */
	ma_http_sink sink;         /* 0: buffer the body in resp->body */
	void *sink_ud;
	size_t max_body;           /* cap on the buffered body, bytes; 0: the handle's */
} ma_http_req;

typedef struct ma_http_resp {
	long status;
	char *headers;             /* the last response's header lines, "\r\n"-separated, NUL-terminated */
	size_t headers_len;
	char *body;                /* NUL-terminated (body_len excludes the NUL) */
	size_t body_len;
	int stopped;               /* the sink asked to stop */
	double seconds;            /* total time of the transfer */
	int reused;                /* the connection was reused (no new connect) */
} ma_http_resp;

/* Transport failure classes, in ma_err.code after a failed ma_http_do. */
enum ma_http_errkind {
	MA_HTTP_EOTHER = 1,  /* not retryable: bad URL, out of memory, ... */
	MA_HTTP_ECONNECT,    /* could not connect / connection dropped: retryable */
	MA_HTTP_ETIMEOUT,    /* timed out: retryable for idempotent requests */
	MA_HTTP_ETLS,        /* TLS handshake or verification: not retryable */
	MA_HTTP_EOPTS,       /* bad option (not a PEM, missing server) */
	MA_HTTP_ETOOLARGE,   /* the body or the headers passed their cap: not retryable */
};
/* "connect", "timeout", "tls", "options", "too_large", "other" */
const char *ma_http_errkind_name(int code);

ma_http *ma_http_new(const ma_http_opts *o, ma_err *e);
void ma_http_free(ma_http *h);
const char *ma_http_server(const ma_http *h);

/* Performs one request. Returns 0 and fills resp for any HTTP status (the caller owns resp: free
 * with ma_http_resp_free, also after a failure), -1 on a transport failure. Reentrant calls (a sink
 * that issues a request on the same handle) use a second, temporary curl handle. */
int ma_http_do(ma_http *h, const ma_http_req *r, ma_http_resp *resp, ma_err *e);
void ma_http_resp_free(ma_http_resp *r);

/* Finds a response header (case-insensitive name); copies its value (trimmed) into out.
 * Returns the value's length, or -1 when absent. */
long ma_http_header(const ma_http_resp *r, const char *name, char *out, size_t outlen);

/* Iterates the header lines of r: from *pos (start at 0), the next "Name: value" line (status lines
 * and lines without a colon or with an empty name are skipped); name/value point into r->headers,
 * the value trimmed. Returns 1 and advances *pos, 0 at the end. */
int ma_http_header_next(const ma_http_resp *r, size_t *pos, const char **name, size_t *name_len, const char **value,
			size_t *value_len);

/* Percent-encodes s (RFC 3986 unreserved characters kept). malloc'd, NULL when out of memory. */
char *ma_http_escape(const char *s, size_t len);
/* Builds "k1=v1&k2=v2" from a NULL-terminated list of key, value pairs (both encoded).
 * malloc'd ("" for no pairs), NULL when out of memory. */
char *ma_http_query(const char *const *kv);
/* server + path + ("?" query): "https://h:1/prefix" + "/api/v1" -> "https://h:1/prefix/api/v1".
 * Fails when the server is not http(s)://host or the path does not start with '/'. */
char *ma_http_url(const char *server, const char *path, const char *query, ma_err *e);

#endif
