/* etcd member operations over etcd's v3 JSON gateway (grpc-gateway) on engine/http: a client for a
 * list of client endpoints "https://IP:2379" with the etcd CA and a client certificate (kubeadm's
 * healthcheck-client or apiserver-etcd-client). Each cluster call tries the endpoints in order until
 * one answers (a transport failure, an HTTP 503 or a non-etcd answer moves on to the next one); an
 * answer from etcd, success or error, ends the call. Member IDs are uint64 (the gateway writes them
 * as JSON strings) and are never converted through a double.
 * Errors name the endpoint(s) and etcd's own message:
 *   "etcd: https://127.0.0.1:2379: member promote 8e9e05c52164694d: etcdserver: can only promote a
 *    learner member which is in sync with leader (FailedPrecondition)"
 * ma_err.code: the gRPC code of etcd's answer (1..16), or one of MA_ETCD_E*. The policy (retries,
 * idempotence, promote loop) is Lua's: scripts/etcd/. */
#ifndef MA_ETCD_H
#define MA_ETCD_H

#include <stddef.h>
#include <stdint.h>
#include "bbolt.h"
#include "err.h"

typedef struct ma_etcd ma_etcd;

enum ma_etcd_errkind {
	MA_ETCD_EUNREACHABLE = 1000, /* no endpoint answered (transport failures on every endpoint) */
	MA_ETCD_EPROTO,              /* an answer that is not what the gateway writes */
	MA_ETCD_EOPTS,               /* bad options (no endpoint, not a PEM, bad URL) */
	MA_ETCD_ETLS,                /* TLS failure (the last endpoint tried) */
};
/* "unreachable", "protocol", "options", "tls", or the gRPC code's name in snake case
 * ("not_found", "failed_precondition", "invalid_argument", "unavailable", ...); "other" else. */
const char *ma_etcd_errkind_name(int code);

typedef struct ma_etcd_opts {
	const char *const *endpoints; /* "https://127.0.0.1:2379", ...; at least one */
	size_t n_endpoints;
	const char *ca_pem;           /* etcd CA (PEM bytes) ... */
	size_t ca_pem_len;
	const char *ca_file;          /* ... or a CA file */
	const char *cert_pem;         /* client certificate + key (PEM bytes); the key is a secret */
	size_t cert_pem_len;
	const char *key_pem;
	size_t key_pem_len;
	long dial_timeout_ms;         /* connect timeout per endpoint; 0: 2000 (kubeadm's dial timeout) */
	long request_timeout_ms;      /* whole request per endpoint; 0: 5000 */
	size_t max_body;              /* cap on one answer's body (bytes); 0: MA_ETCD_MAX_BODY_DEFAULT */
} ma_etcd_opts;

/* Member lists, status and health answers are a few KiB; a body over the cap fails the call
 * (MA_ETCD_EPROTO, naming the endpoint and the cap) without being read further. */
#define MA_ETCD_MAX_BODY_DEFAULT ((size_t)4 << 20)

typedef struct ma_etcd_member {
	uint64_t id;
	char *name;          /* "" for a member that has not started yet (a fresh learner) */
	char **peer_urls;
	size_t n_peer_urls;
	char **client_urls;
	size_t n_client_urls;
	int is_learner;
} ma_etcd_member;

/* The answer of list, add, promote and remove: the cluster's members in etcd's order. */
typedef struct ma_etcd_members {
	uint64_t cluster_id;
	uint64_t member_id;      /* the member that answered */
	uint64_t raft_term;
	char *endpoint;          /* the endpoint that answered */
	ma_etcd_member *v;
	size_t n;
	ma_etcd_member added;    /* member add: the new member (has_added) */
	int has_added;
} ma_etcd_members;

typedef struct ma_etcd_status {
	char *endpoint;
	char *version;           /* "3.6.6" */
	uint64_t member_id;      /* the answering member (header.member_id) */
	uint64_t cluster_id;     /* header.cluster_id (0 when absent) */
	uint64_t revision;       /* header.revision: the member's key-value store revision (0 when absent) */
	uint64_t leader;         /* 0: no leader */
	uint64_t raft_index, raft_term, raft_applied_index;
	uint64_t db_size, db_size_in_use;
	int is_learner;
	char **errors;           /* alarms and errors etcd reports */
	size_t n_errors;
} ma_etcd_status;

typedef struct ma_etcd_health {
	char *endpoint;
	int healthy;             /* {"health":"true"} */
	char *reason;            /* etcd's reason when unhealthy ("" when none) */
	long status;             /* HTTP status */
} ma_etcd_health;

ma_etcd *ma_etcd_new(const ma_etcd_opts *o, ma_err *e); /* copies everything; PEMs checked now */
void ma_etcd_free(ma_etcd *c);                           /* wipes the key copy */
size_t ma_etcd_endpoint_count(const ma_etcd *c);
const char *ma_etcd_endpoint(const ma_etcd *c, size_t i);
/* Appends an endpoint (kubeadm adds the new member's client URL after member add); a duplicate is
 * ignored. 0 / -1. */
int ma_etcd_add_endpoint(ma_etcd *c, const char *url, ma_err *e);

/* Cluster calls, with endpoint failover. Fill *out (free with ma_etcd_members_free, also after a
 * failure). 0 / -1. An answer of the wrong shape is an error (MA_ETCD_EPROTO), never an empty
 * result: every answer must carry a header with a cluster_id and a non-empty "members" list (a
 * cluster always has a member), each member a uint64 "ID"; member add also the new "member". */
int ma_etcd_member_list(ma_etcd *c, int linearizable, ma_etcd_members *out, ma_err *e);
int ma_etcd_member_add(ma_etcd *c, const char *const *peer_urls, size_t n, int learner,
		       ma_etcd_members *out, ma_err *e);
int ma_etcd_member_promote(ma_etcd *c, uint64_t id, ma_etcd_members *out, ma_err *e);
int ma_etcd_member_remove(ma_etcd *c, uint64_t id, ma_etcd_members *out, ma_err *e);
void ma_etcd_members_free(ma_etcd_members *m);

/* Per-endpoint calls, no failover: endpoint i of the client (i < count), or any URL (`url`
 * non-NULL wins; a URL not in the list gets a temporary connection with the same credentials).
 * A status answer without a version or without header.member_id is MA_ETCD_EPROTO. */
int ma_etcd_endpoint_status(ma_etcd *c, size_t i, const char *url, ma_etcd_status *out, ma_err *e);
void ma_etcd_status_free(ma_etcd_status *s);
/* GET /health: an unhealthy member (HTTP 503 with {"health":"false"}) is a success with
 * healthy = 0; only a transport failure or a non-etcd answer fails. */
int ma_etcd_endpoint_health(ma_etcd *c, size_t i, const char *url, ma_etcd_health *out, ma_err *e);
void ma_etcd_health_free(ma_etcd_health *h);

/* ---- snapshots ----
 * POST /v3/maintenance/snapshot on one member (endpoint i or a URL, as ma_etcd_endpoint_status),
 * a gRPC server stream that the gateway writes as newline-delimited JSON: each message
 * {"result":{"remaining_bytes":"N","blob":"<base64>","version":"3.6.0"}} (uint64 as strings, zero
 * values left out: a single message holding the whole database has no remaining_bytes), then one
 * message whose blob is etcd's SHA-256 of the database (32 bytes); an error is
 * {"error":{"code":N,"message":...}} (grpc-gateway v2; v1 wrote "grpc_code"), in the stream or as a
 * non-2xx answer, or {"code":N,"message":...} for a request refused before the stream. "version" is
 * the member's storage version, on etcd >= 3.6 only. etcd 3.5 and 3.6 send no header in the
 * stream: the revision, member and cluster IDs and the server version come from the member's
 * status, asked just before, so the revision is a lower bound (the
 * snapshot holds at least every write up to it); a header in the stream, when a server sends one,
 * wins (revision_exact). Every byte etcd sends goes to the sink, database then checksum, as
 * etcdctl writes a snapshot file (etcdutl checks the checksum on restore); the checksum is checked
 * against the bytes before it first. Nothing of the database ever appears in an error message. */
#define MA_ETCD_SNAPSHOT_TIMEOUT_DEFAULT (10L * 60 * 1000) /* ms: the whole transfer */
#define MA_ETCD_SNAPSHOT_MAX_LINE ((size_t)1 << 20)        /* one message (etcd sends 32 KiB blobs) */

/* Receives the snapshot's bytes in order: 0, or -1 with e filled (the transfer stops). */
typedef int (*ma_etcd_snapshot_sink)(const unsigned char *buf, size_t len, void *ud, ma_err *e);

typedef struct ma_etcd_snapshot_opts {
	long timeout_ms;        /* the whole transfer; 0: MA_ETCD_SNAPSHOT_TIMEOUT_DEFAULT */
	size_t max_line;        /* cap on one message; 0: MA_ETCD_SNAPSHOT_MAX_LINE */
} ma_etcd_snapshot_opts;

typedef struct ma_etcd_snapshot {
	char *endpoint;
	char *version;          /* the member's etcd version ("3.6.6", from its status) */
	char *storage_version;  /* the stream's "version" ("3.6.0"); "" before etcd 3.6 */
	uint64_t revision;      /* see above */
	int revision_exact;     /* 1: from a header in the stream; 0: the status's, a lower bound */
	uint64_t member_id, cluster_id;
	uint64_t db_size;       /* bytes of the database */
	uint64_t size;          /* bytes handed to the sink: db_size + 32 */
	unsigned char sha256[32]; /* etcd's checksum of the database, checked */
} ma_etcd_snapshot;

/* 0 with *out (free with ma_etcd_snapshot_free, also after a failure), or -1: ma_err.code is a
 * gRPC code for etcd's own error, MA_ETCD_E* for the transport or an answer of the wrong shape,
 * or what the sink set (its error wins). */
int ma_etcd_snapshot_save(ma_etcd *c, size_t i, const char *url, const ma_etcd_snapshot_opts *o,
			  ma_etcd_snapshot_sink sink, void *ud, ma_etcd_snapshot *out, ma_err *e);
void ma_etcd_snapshot_free(ma_etcd_snapshot *s);

/* The stream decoder without a transport (what the save feeds, the unit tests and the fuzz target
 * drive): bytes in chunks of any size, split anywhere. A line over max_line bytes, a line that is
 * not a JSON object, a message of the wrong shape (a blob that is not base64, remaining_bytes that
 * do not count down by the blob's size, no checksum, a wrong checksum, a message after it) is
 * MA_ETCD_EPROTO; an error object is etcd's error (its gRPC code). After a failure every call fails
 * with the same error. ep names the endpoint in messages. */
typedef struct ma_etcd_snapdec ma_etcd_snapdec;
ma_etcd_snapdec *ma_etcd_snapdec_new(const char *ep, size_t max_line, ma_etcd_snapshot_sink sink, void *ud,
				     ma_err *e);
int ma_etcd_snapdec_feed(ma_etcd_snapdec *d, const char *buf, size_t len, ma_err *e);
/* The end of the stream: 0 with out's stream fields (storage_version, db_size, size, sha256, and
 * revision/member_id/cluster_id when a header came), or -1 (truncated, no checksum, ...). */
int ma_etcd_snapdec_finish(ma_etcd_snapdec *d, ma_etcd_snapshot *out, ma_err *e);
void ma_etcd_snapdec_free(ma_etcd_snapdec *d);

/* A snapshot file as etcdctl and ma_etcd_snapshot_save write it: the database, then etcd's SHA-256
 * of it. */
typedef struct ma_etcd_snapshot_file {
	uint64_t size;          /* bytes in the file */
	char sha256[65];        /* of the whole file, as sha256sum prints it */
	int has_checksum;       /* size % 512 == 32 (etcdutl's test): the last 32 bytes are a checksum */
	int checksum_ok;        /* ... and they are the SHA-256 of the bytes before them */
	char checksum[65];      /* those 32 bytes in hex ("" without has_checksum) */
	int bbolt_ok;           /* the database's meta pages hold (ma_bbolt_read_meta) */
	char bbolt_error[MA_ERRLEN];
	ma_bbolt_info bbolt;
} ma_etcd_snapshot_file;

/* Reads the whole file (a regular file: a FIFO or device is refused before it is opened) once:
 * 0 with *out whatever its checks say, -1 only when it cannot be read (e: errno). */
int ma_etcd_snapshot_check(const char *root, const char *path, ma_etcd_snapshot_file *out, ma_err *e);
int ma_etcd_snapshot_check_fd(int fd, const char *name, ma_etcd_snapshot_file *out, ma_err *e);

/* The decoders of the calls above without a transport: an answer body with its HTTP status, as
 * endpoint ep sent it (what the fuzz targets feed). Same results and errors as the calls. */
int ma_etcd_members_parse(const char *body, size_t len, long status, const char *ep, ma_etcd_members *out, ma_err *e);
int ma_etcd_status_parse(const char *body, size_t len, long status, const char *ep, ma_etcd_status *out, ma_err *e);
int ma_etcd_health_parse(const char *body, size_t len, long status, const char *ep, ma_etcd_health *out, ma_err *e);

/* Member IDs: decimal (the gateway's form) and hex (etcdctl's and kubeadm's %x form). */
int ma_etcd_id_parse(const char *s, uint64_t *id);          /* decimal digits only; 0 / -1 */
int ma_etcd_id_parse_hex(const char *s, uint64_t *id);      /* hex digits only (1..16); 0 / -1 */
void ma_etcd_id_dec(uint64_t id, char out[21]);
void ma_etcd_id_hex(uint64_t id, char out[17]);            /* lowercase, no leading zeros */

#endif
