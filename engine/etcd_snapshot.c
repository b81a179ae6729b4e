/* etcd snapshots (engine/etcd.h): the stream decoder of POST /v3/maintenance/snapshot and the check
 * of a snapshot file. The transport is engine/etcd.c's. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "encoding.h"
#include "etcd.h"
#include "fs.h"
#include "json.h"

#define DIGEST MA_SHA256_LEN

enum { SD_DATA, SD_DIGEST, SD_DONE };

struct ma_etcd_snapdec {
	char *ep;
	ma_etcd_snapshot_sink sink;
	void *ud;
	size_t max_line;
	char *line;             /* a message split across chunks: max_line bytes */
	size_t len;
	unsigned char *bin;     /* a decoded blob */
	size_t bincap;
	ma_sha256 h;            /* of the database bytes */
	unsigned char sum[DIGEST]; /* ... and its value, once etcd's checksum matched it */
	int state, started, has_header, failed;
	uint64_t msgs, data, total, remaining;
	uint64_t revision, member_id, cluster_id;
	char version[65];
	ma_err err;             /* the first failure, repeated by every later call */
};

static void wipe_free(void *p, size_t n)
{
	if (p) {
		OPENSSL_cleanse(p, n);
		free(p);
	}
}

void ma_etcd_snapdec_free(ma_etcd_snapdec *d)
{
	if (!d)
		return;
	wipe_free(d->line, d->max_line); /* snapshot data: Secrets, keys */
	wipe_free(d->bin, d->bincap);
	free(d->ep);
	free(d);
}

ma_etcd_snapdec *ma_etcd_snapdec_new(const char *ep, size_t max_line, ma_etcd_snapshot_sink sink, void *ud,
				     ma_err *e)
{
	ma_etcd_snapdec *d = calloc(1, sizeof *d);
	if (!d) {
		ma_fail(e, "etcd: out of memory");
		return NULL;
	}
	d->max_line = max_line ? max_line : MA_ETCD_SNAPSHOT_MAX_LINE;
	d->bincap = d->max_line / 4 * 3 + 3;
	d->ep = strdup(ep ? ep : "?");
	d->line = malloc(d->max_line);
	d->bin = malloc(d->bincap);
	if (!d->ep || !d->line || !d->bin) {
		ma_etcd_snapdec_free(d);
		ma_fail(e, "etcd: out of memory");
		return NULL;
	}
	d->sink = sink;
	d->ud = ud;
	ma_sha256_init(&d->h);
	return d;
}

/* Records the decoder's failure (the first one sticks) and copies it into e: -1. */
static int stick(ma_etcd_snapdec *d, ma_err *e)
{
	d->failed = 1;
	if (e && e != &d->err)
		*e = d->err;
	return -1;
}

static int proto(ma_etcd_snapdec *d, ma_err *e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int proto(ma_etcd_snapdec *d, ma_err *e, const char *fmt, ...)
{
	char what[MA_ERRLEN / 2];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	ma_fail(&d->err, "etcd: %s: snapshot: message %" PRIu64 " (after %" PRIu64 " bytes): %s", d->ep, d->msgs,
		d->data, what);
	d->err.code = MA_ETCD_EPROTO;
	return stick(d, e);
}

static const char *const grpc_camel[] = {
	"OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound", "AlreadyExists",
	"PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted", "OutOfRange",
	"Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated"};

/* etcd's error: {"error":{"code"|"grpc_code":N,"message":...}} or {"code":N,"message":...}. 1 when
 * j is one (d->err filled), 0 when not. */
static int etcd_error(ma_etcd_snapdec *d, const ma_json *j)
{
	const ma_json *x = ma_json_get(j, "error");
	if (!x || x->type != MA_JSON_OBJECT)
		x = j;
	const ma_json *m = ma_json_get(x, "message");
	const ma_json *c = ma_json_get(x, "code");
	if (!c)
		c = ma_json_get(x, "grpc_code");
	uint64_t code = 0;
	if (!m || m->type != MA_JSON_STRING || ma_json_u64(c, &code) < 0)
		return 0;
	int k = code >= 1 && code <= 16 ? (int)code : 2;
	ma_fail(&d->err, "etcd: %s: snapshot: %.300s (%s)", d->ep, m->s, grpc_camel[k]);
	d->err.code = k;
	return 1;
}

/* The header's fields, from the first message that has one. */
static int take_header(ma_etcd_snapdec *d, const ma_json *hd, ma_err *e)
{
	if (!hd || d->has_header)
		return 0;
	if (hd->type != MA_JSON_OBJECT)
		return proto(d, e, "\"header\" is not an object");
	const char *names[] = {"revision", "member_id", "cluster_id"};
	uint64_t *dst[] = {&d->revision, &d->member_id, &d->cluster_id};
	for (int i = 0; i < 3; i++) {
		const ma_json *v = ma_json_get(hd, names[i]);
		if (v && ma_json_u64(v, dst[i]) < 0)
			return proto(d, e, "header.%s is not a uint64", names[i]);
	}
	d->has_header = 1;
	return 0;
}

static int take_version(ma_etcd_snapdec *d, const ma_json *v, ma_err *e)
{
	if (!v)
		return 0;
	if (v->type != MA_JSON_STRING || v->len >= sizeof d->version)
		return proto(d, e, "\"version\" is not a short string");
	for (size_t i = 0; i < v->len; i++)
		if (v->s[i] < 0x21 || v->s[i] > 0x7e)
			return proto(d, e, "\"version\" holds a character outside printable ASCII");
	if (!d->version[0])
		memcpy(d->version, v->s, v->len + 1);
	return 0;
}

/* The blob's bytes for the state machine: the database until remaining_bytes reaches 0, then the
 * checksum, then nothing. */
static int take_blob(ma_etcd_snapdec *d, const unsigned char *b, size_t n, uint64_t remaining, ma_err *e)
{
	if (d->state == SD_DONE)
		return proto(d, e, "a message after etcd's checksum");
	if (d->state == SD_DIGEST) {
		if (n != DIGEST || remaining != 0)
			return proto(d, e, "the message after the database should be etcd's %d-byte SHA-256 checksum: "
				     "it has %zu bytes", DIGEST, n);
		ma_sha256_final(&d->h, d->sum);
		if (memcmp(d->sum, b, DIGEST) != 0)
			return proto(d, e, "the database's SHA-256 is not the checksum etcd sent: the snapshot was damaged "
				     "on its way");
		d->state = SD_DONE;
	} else {
		if (!d->started) {
			if (remaining > UINT64_MAX - n)
				return proto(d, e, "remaining_bytes %" PRIu64 " out of range", remaining);
			d->started = 1;
			d->total = remaining + n;
		} else if (n > d->remaining || d->remaining - n != remaining) {
			return proto(d, e, "remaining_bytes %" PRIu64 " after a %zu-byte blob, %" PRIu64 " were announced: a "
				     "message was lost", remaining, n, d->remaining);
		}
		ma_sha256_update(&d->h, b, n);
		d->data += n;
		d->remaining = remaining;
		if (remaining == 0)
			d->state = SD_DIGEST;
	}
	if (n && d->sink && d->sink(b, n, d->ud, &d->err) < 0) {
		if (!d->err.msg[0])
			ma_fail(&d->err, "etcd: %s: snapshot: the snapshot's bytes could not be kept", d->ep);
		return stick(d, e);
	}
	return 0;
}

static int take_result(ma_etcd_snapdec *d, const ma_json *r, ma_err *e)
{
	if (r->type != MA_JSON_OBJECT)
		return proto(d, e, "\"result\" is not an object");
	if (take_header(d, ma_json_get(r, "header"), e) < 0 || take_version(d, ma_json_get(r, "version"), e) < 0)
		return -1;
	uint64_t remaining = 0;
	const ma_json *rb = ma_json_get(r, "remaining_bytes");
	if (rb && ma_json_u64(rb, &remaining) < 0)
		return proto(d, e, "remaining_bytes is not a uint64");
	const ma_json *blob = ma_json_get(r, "blob");
	size_t n = 0;
	if (blob) {
		if (blob->type != MA_JSON_STRING)
			return proto(d, e, "\"blob\" is not a string");
		ma_err be = {0};
		if (blob->len / 4 * 3 + 3 > d->bincap || ma_base64_decode(blob->s, blob->len, d->bin, &n, &be) < 0)
			return proto(d, e, "\"blob\" is not base64 (%s)", be.msg[0] ? be.msg : "too long");
	}
	return take_blob(d, d->bin, n, remaining, e);
}

/* One line of the stream (one message). */
static int take_line(ma_etcd_snapdec *d, const char *s, size_t n, ma_err *e)
{
	while (n > 0 && (s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (n == 0)
		return 0;
	d->msgs++;
	ma_err je = {0};
	ma_json *j = ma_json_parse(s, n, &je);
	int rc;
	if (!j || j->type != MA_JSON_OBJECT)
		rc = proto(d, e, "not a JSON object (%s)", j ? "another JSON value" : je.msg);
	else if (ma_json_get(j, "result"))
		rc = take_result(d, ma_json_get(j, "result"), e);
	else if (etcd_error(d, j))
		rc = stick(d, e);
	else
		rc = proto(d, e, "neither \"result\" nor an etcd error");
	ma_json_free(j); /* (its strings held a blob's base64: a copy of what the sink got) */
	return rc;
}

int ma_etcd_snapdec_feed(ma_etcd_snapdec *d, const char *buf, size_t len, ma_err *e)
{
	if (d->failed)
		return stick(d, e);
	while (len > 0) {
		const char *nl = memchr(buf, '\n', len);
		size_t k = nl ? (size_t)(nl - buf) : len;
		if (k > d->max_line - d->len)
			return proto(d, e, "a message longer than %zu bytes: not what etcd sends", d->max_line);
		if (nl && d->len == 0) {
			if (take_line(d, buf, k, e) < 0)
				return -1;
		} else {
			memcpy(d->line + d->len, buf, k);
			d->len += k;
			if (nl) {
				size_t l = d->len;
				d->len = 0;
				if (take_line(d, d->line, l, e) < 0)
					return -1;
			}
		}
		if (!nl)
			break;
		buf += k + 1;
		len -= k + 1;
	}
	return 0;
}

int ma_etcd_snapdec_finish(ma_etcd_snapdec *d, ma_etcd_snapshot *out, ma_err *e)
{
	if (d->failed)
		return stick(d, e);
	if (d->len > 0) { /* the last message without its newline */
		size_t l = d->len;
		d->len = 0;
		if (take_line(d, d->line, l, e) < 0)
			return -1;
	}
	if (d->state != SD_DONE) {
		if (!d->started)
			return proto(d, e, "the answer ended without a snapshot message");
		if (d->state == SD_DATA)
			return proto(d, e, "the stream ended %" PRIu64 " bytes short of the %" PRIu64 " announced",
				     d->total - d->data, d->total);
		return proto(d, e, "the stream ended before etcd's SHA-256 checksum");
	}
	free(out->storage_version);
	if (!(out->storage_version = strdup(d->version)))
		return ma_fail(e, "etcd: out of memory");
	out->db_size = d->data;
	memcpy(out->sha256, d->sum, DIGEST);
	out->size = d->data + DIGEST;
	if (d->has_header) {
		out->revision = d->revision;
		out->member_id = d->member_id;
		out->cluster_id = d->cluster_id;
		out->revision_exact = 1;
	}
	return 0;
}

/* ---- snapshot files ---- */

static long fd_read(void *ud, uint64_t off, void *buf, size_t n, ma_err *e)
{
	int fd = *(int *)ud;
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return ma_fail_errno(e, errno, "read");
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (long)got;
}

/* The last DIGEST bytes of the file, copied as the chunk at off (k bytes) passes them. */
static void keep_tail(unsigned char *tail, uint64_t size, uint64_t off, const unsigned char *p, size_t k)
{
	uint64_t from = size - DIGEST;
	for (size_t i = 0; i < k; i++)
		if (off + i >= from)
			tail[off + i - from] = p[i];
}

/* One pass over the file: the whole file's hash and the hash of all but its last 32 bytes. */
static int hash_pass(int fd, const char *name, ma_etcd_snapshot_file *out, unsigned char tail[DIGEST],
		     unsigned char data_sum[DIGEST], ma_err *e)
{
	enum { CHUNK = 1 << 20 };
	unsigned char *buf = malloc(CHUNK), sum[DIGEST];
	if (!buf)
		return ma_fail(e, "out of memory reading %s", name);
	ma_sha256 whole, data;
	ma_sha256_init(&whole);
	ma_sha256_init(&data);
	uint64_t off = 0, size = out->size, cut = size >= DIGEST ? size - DIGEST : 0;
	while (off < size) {
		size_t want = size - off < CHUNK ? (size_t)(size - off) : CHUNK;
		ma_err re = {0};
		long k = fd_read(&fd, off, buf, want, &re);
		if (k < 0 || (size_t)k != want) {
			free(buf);
			if (k < 0)
				return ma_fail_errno(e, re.code, "read %s", name);
			return ma_fail(e, "%s changed while it was read (%" PRIu64 " bytes expected)", name, size);
		}
		ma_sha256_update(&whole, buf, want);
		if (off < cut)
			ma_sha256_update(&data, buf, cut - off < want ? (size_t)(cut - off) : want);
		if (size >= DIGEST)
			keep_tail(tail, size, off, buf, want);
		off += want;
	}
	free(buf);
	ma_sha256_final(&whole, sum);
	ma_hex(sum, DIGEST, out->sha256);
	ma_sha256_final(&data, data_sum);
	return 0;
}

static int not_regular(const char *name, mode_t m, ma_err *e)
{
	ma_fail(e, "%s is %s, not a regular file", name, S_ISDIR(m) ? "a directory" : "a special file");
	if (e)
		e->code = S_ISDIR(m) ? EISDIR : EINVAL;
	return -1;
}

int ma_etcd_snapshot_check_fd(int fd, const char *name, ma_etcd_snapshot_file *out, ma_err *e)
{
	memset(out, 0, sizeof *out);
	struct stat st;
	if (fstat(fd, &st) != 0)
		return ma_fail_errno(e, errno, "stat %s", name);
	if (!S_ISREG(st.st_mode))
		return not_regular(name, st.st_mode, e);
	out->size = (uint64_t)st.st_size;
	unsigned char tail[DIGEST] = {0}, data_sum[DIGEST];
	if (hash_pass(fd, name, out, tail, data_sum, e) < 0)
		return -1;
	out->has_checksum = out->size % 512 == DIGEST;
	if (out->has_checksum) {
		ma_hex(tail, DIGEST, out->checksum);
		out->checksum_ok = memcmp(tail, data_sum, DIGEST) == 0;
	}
	ma_err be = {0};
	uint64_t db = out->has_checksum ? out->size - DIGEST : out->size;
	out->bbolt_ok = ma_bbolt_read_meta(fd_read, &fd, db, &out->bbolt, &be) == 0;
	if (!out->bbolt_ok) {
		if (!be.kind) /* a read error, not the content */
			return ma_fail_errno(e, be.code, "read %s", name);
		snprintf(out->bbolt_error, sizeof out->bbolt_error, "%s", be.msg);
	}
	return 0;
}

int ma_etcd_snapshot_check(const char *root, const char *path, ma_etcd_snapshot_file *out, ma_err *e)
{
	char host[MA_PATH_MAX];
	struct stat st;
	memset(out, 0, sizeof *out);
	if (ma_fs_resolve(root, path, host, sizeof host, e))
		return -1;
	if (stat(host, &st) != 0) /* before open: a FIFO or a device is never opened */
		return ma_fail_errno(e, errno, "open %s", host);
	if (!S_ISREG(st.st_mode))
		return not_regular(host, st.st_mode, e);
	int fd = open(host, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return ma_fail_errno(e, errno, "open %s", host);
	int rc = ma_etcd_snapshot_check_fd(fd, host, out, e);
	close(fd);
	return rc;
}
