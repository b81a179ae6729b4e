/* engine/etcd_snapshot: the snapshot stream decoder (messages split across any chunk boundary,
 * etcd's errors mid-stream, lines over the cap, bad base64, a lost message, a wrong or missing
 * checksum) and the check of a snapshot file (etcd's trailing SHA-256, bbolt's meta pages), on
 * synthetic data. The stream of a real etcd: tests/proc/etcd_spec.lua. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "etcd.h"
#include "fs.h"
#include "snapfix.h"
#include "t.h"

static char root[256];

/* A sink collecting what it gets; fail_at > 0: fails (ENOSPC) once that many bytes came. */
struct coll {
	unsigned char *p;
	size_t n, cap, fail_at;
};

static int collect(const unsigned char *buf, size_t len, void *ud, ma_err *e)
{
	struct coll *c = ud;
	if (c->fail_at && c->n + len >= c->fail_at)
		return ma_fail_errno(e, ENOSPC, "write /snap/x.db");
	if (c->n + len > c->cap) {
		c->cap = (c->n + len) * 2;
		c->p = realloc(c->p, c->cap);
	}
	memcpy(c->p + c->n, buf, len);
	c->n += len;
	return 0;
}

/* Feeds text in chunks whose sizes come from a small LCG (seed 0: all at once). 0 / -1. */
static int feed(ma_etcd_snapdec *d, const char *text, size_t len, unsigned seed, size_t maxchunk, ma_err *e)
{
	size_t off = 0;
	while (off < len) {
		size_t k = len - off;
		if (seed) {
			seed = seed * 1103515245u + 12345u;
			size_t c = 1 + (seed >> 8) % maxchunk;
			k = c < k ? c : k;
		}
		if (ma_etcd_snapdec_feed(d, text + off, k, e) < 0)
			return -1;
		off += k;
	}
	return 0;
}

/* Decodes text (chunked by seed): rc, with the result and what the sink got. */
static int decode(const char *text, size_t len, unsigned seed, size_t maxchunk, size_t max_line, struct coll *c,
		  ma_etcd_snapshot *out, ma_err *e)
{
	memset(out, 0, sizeof *out);
	ma_etcd_snapdec *d = ma_etcd_snapdec_new("https://127.0.0.1:2379", max_line, collect, c, e);
	if (!d)
		return -1;
	int rc = feed(d, text, len, seed, maxchunk, e);
	if (rc == 0)
		rc = ma_etcd_snapdec_finish(d, out, e);
	ma_etcd_snapdec_free(d);
	return rc;
}

static void test_split_anywhere(void)
{
	size_t len;
	unsigned char *db = fix_db(4096, 5, &len);
	char *text = fix_stream(db, len, 5000, NULL);
	unsigned char sum[32];
	fix_sha(db, len, sum);
	static const size_t chunks[] = {1, 2, 3, 7, 64, 1000, 5000, 70000};
	for (size_t k = 0; k < sizeof chunks / sizeof *chunks; k++)
		for (unsigned seed = 1; seed <= 3; seed++) {
			struct coll c = {0};
			ma_etcd_snapshot out;
			ma_err e = {0};
			int rc = decode(text, strlen(text), seed, chunks[k], 0, &c, &out, &e);
			CHECK(rc == 0, "chunks of up to %zu: %s", chunks[k], e.msg);
			CHECK(c.n == len + 32 && !memcmp(c.p, db, len) && !memcmp(c.p + len, sum, 32),
			      "the sink got %zu bytes, want the database and its checksum (%zu)", c.n, len + 32);
			CHECK(out.db_size == len && out.size == len + 32 && !memcmp(out.sha256, sum, 32), "sizes");
			CHECK_STR(out.storage_version, "3.6.0");
			CHECK(!out.revision_exact && out.revision == 0, "no header: no revision from the stream");
			ma_etcd_snapshot_free(&out);
			free(c.p);
		}
	free(text);
	/* one message holding the whole database (no remaining_bytes at all, as etcd sends a small
	 * database), CRLF line ends, no newline after the last message, and a header */
	text = fix_stream(db, len, len, "{\"cluster_id\":\"11\",\"member_id\":\"22\",\"revision\":\"4242\",\"raft_term\":\"3\"}");
	CHECK(!strstr(text, "remaining_bytes"), "a single message has no remaining_bytes");
	size_t n = strlen(text);
	text[n - 1] = '\0'; /* the last newline */
	char *crlf = malloc(2 * n);
	size_t m = 0;
	for (size_t i = 0; text[i]; i++) {
		if (text[i] == '\n')
			crlf[m++] = '\r';
		crlf[m++] = text[i];
	}
	struct coll c = {0};
	ma_etcd_snapshot out;
	ma_err e = {0};
	CHECK(decode(crlf, m, 7, 300, 0, &c, &out, &e) == 0, "%s", e.msg);
	CHECK(out.revision_exact && out.revision == 4242 && out.member_id == 22 && out.cluster_id == 11, "header");
	CHECK(c.n == len + 32, "%zu bytes", c.n);
	ma_etcd_snapshot_free(&out);
	free(c.p);
	free(crlf);
	free(text);
	free(db);
}

/* A stream with `mid` inserted after its first message. */
static char *with_mid(const char *text, const char *mid)
{
	const char *nl = strchr(text, '\n') + 1;
	char *s = malloc(strlen(text) + strlen(mid) + 1);
	size_t a = (size_t)(nl - text);
	memcpy(s, text, a);
	strcpy(s + a, mid);
	strcat(s, nl);
	return s;
}

static void expect_fail(const char *what, const char *text, size_t max_line, int code, const char *needle)
{
	for (unsigned seed = 0; seed <= 2; seed++) {
		struct coll c = {0};
		ma_etcd_snapshot out;
		ma_err e = {0};
		int rc = decode(text, strlen(text), seed, 97, max_line, &c, &out, &e);
		CHECK(rc < 0, "%s: accepted", what);
		CHECK(e.code == code, "%s: code %d, want %d (%s)", what, e.code, code, e.msg);
		CHECK(strstr(e.msg, needle) != NULL, "%s: \"%s\" lacks \"%s\"", what, e.msg, needle);
		CHECK(strstr(e.msg, "https://127.0.0.1:2379") != NULL, "%s: no endpoint in \"%s\"", what, e.msg);
		CHECK(!strstr(e.msg, "AAAA") && !strstr(e.msg, "SECRET"), "%s: stream content in \"%s\"", what, e.msg);
		ma_etcd_snapshot_free(&out);
		free(c.p);
	}
}

static void test_errors(void)
{
	size_t len;
	unsigned char *db = fix_db(4096, 5, &len);
	memcpy(db + 3 * 4096, "SECRET", 6);
	char *text = fix_stream(db, len, 5000, NULL), *s;
	/* etcd's errors, in each shape the gateway writes */
	s = with_mid(text, "{\"error\":{\"code\":14,\"message\":\"etcdserver: no leader\",\"details\":[]}}\n");
	expect_fail("error mid-stream", s, 0, 14, "snapshot: etcdserver: no leader (Unavailable)");
	free(s);
	s = with_mid(text, "{\"error\":{\"grpc_code\":7,\"http_code\":403,\"message\":\"permission denied\"}}\n");
	expect_fail("gateway v1 error", s, 0, 7, "permission denied (PermissionDenied)");
	free(s);
	expect_fail("refused before the stream", "{\"code\":3,\"message\":\"unexpected EOF\"}", 0, 3,
		    "unexpected EOF (InvalidArgument)");
	/* the stream's shape */
	expect_fail("line over the cap", text, 1024, MA_ETCD_EPROTO, "longer than 1024 bytes");
	s = with_mid(text, "{\"result\":{\"remaining_bytes\":\"1\",\"blob\":\"@@@@\"}}\n");
	expect_fail("bad base64", s, 0, MA_ETCD_EPROTO, "not base64");
	free(s);
	s = with_mid(text, "SECRET garbage\n");
	expect_fail("not JSON", s, 0, MA_ETCD_EPROTO, "not a JSON object");
	free(s);
	s = with_mid(text, "[1,2]\n");
	expect_fail("not an object", s, 0, MA_ETCD_EPROTO, "not a JSON object");
	free(s);
	s = with_mid(text, "{\"x\":1}\n");
	expect_fail("neither", s, 0, MA_ETCD_EPROTO, "neither");
	free(s);
	s = with_mid(text, "{\"result\":{\"remaining_bytes\":\"-1\"}}\n");
	expect_fail("remaining_bytes", s, 0, MA_ETCD_EPROTO, "remaining_bytes is not a uint64");
	free(s);
	s = with_mid(text, "{\"result\":{\"version\":\"3.6\\n\"}}\n");
	expect_fail("version", s, 0, MA_ETCD_EPROTO, "printable");
	free(s);
	/* a lost message: the second of five removed */
	char *second = strchr(text, '\n') + 1, *third = strchr(second, '\n') + 1;
	s = strdup(text);
	memmove(s + (second - text), third, strlen(third) + 1);
	expect_fail("lost message", s, 0, MA_ETCD_EPROTO, "a message was lost");
	free(s);
	/* the checksum: damaged, missing, short, followed by more */
	s = strdup(text);
	char *lastmsg = s + strlen(s) - 1;
	while (lastmsg > s && lastmsg[-1] != '\n')
		lastmsg--;
	char *b = strstr(lastmsg, "\"blob\":\"") + 8;
	*b = *b == 'A' ? 'B' : 'A';
	expect_fail("wrong checksum", s, 0, MA_ETCD_EPROTO, "not the checksum etcd sent");
	*lastmsg = '\0';
	expect_fail("no checksum", s, 0, MA_ETCD_EPROTO, "ended before etcd's SHA-256 checksum");
	free(s);
	s = malloc(strlen(text) + 200);
	sprintf(s, "%s{\"result\":{\"blob\":\"AAAA\"}}\n", text);
	expect_fail("after the checksum", s, 0, MA_ETCD_EPROTO, "a message after etcd's checksum");
	free(s);
	s = strdup(text);
	*(strchr(s, '\n') + 1) = '\0'; /* the first message alone: 20480 - 5000 bytes missing */
	expect_fail("truncated", s, 0, MA_ETCD_EPROTO, "15480 bytes short of the 20480 announced");
	free(s);
	expect_fail("empty", "", 0, MA_ETCD_EPROTO, "without a snapshot message");
	free(text);
	free(db);
}

/* The sink's own failure (a full disk) stops the stream with its message and errno; every later
 * call repeats it. */
static void test_sink_error(void)
{
	size_t len;
	unsigned char *db = fix_db(4096, 5, &len);
	char *text = fix_stream(db, len, 5000, NULL);
	struct coll c = {.fail_at = 9000};
	ma_err e = {0};
	ma_etcd_snapdec *d = ma_etcd_snapdec_new("https://127.0.0.1:2379", 0, collect, &c, &e);
	CHECK(ma_etcd_snapdec_feed(d, text, strlen(text), &e) < 0, "accepted");
	CHECK(e.code == ENOSPC && strstr(e.msg, "write /snap/x.db"), "%d %s", e.code, e.msg);
	ma_err e2 = {0};
	ma_etcd_snapshot out = {0};
	CHECK(ma_etcd_snapdec_feed(d, "\n", 1, &e2) < 0 && e2.code == ENOSPC, "not sticky: %s", e2.msg);
	CHECK(ma_etcd_snapdec_finish(d, &out, &e2) < 0 && e2.code == ENOSPC, "not sticky: %s", e2.msg);
	ma_etcd_snapdec_free(d);
	ma_etcd_snapshot_free(&out);
	free(c.p);
	free(text);
	free(db);
}

static void write_file(const char *path, const void *p, size_t n)
{
	ma_err e = {0};
	CHECK(ma_fs_write(root, path, p, n, 0600, NULL, &e) == 0, "%s", e.msg);
}

static void test_file_check(void)
{
	size_t len;
	unsigned char *db = fix_db(4096, 6, &len), sum[32];
	fix_sha(db, len, sum);
	unsigned char *f = malloc(len + 32);
	memcpy(f, db, len);
	memcpy(f + len, sum, 32);
	write_file("/s/ok.db", f, len + 32);
	ma_etcd_snapshot_file sf;
	ma_err e = {0};
	CHECK(ma_etcd_snapshot_check(root, "/s/ok.db", &sf, &e) == 0, "%s", e.msg);
	char hex[65];
	ma_sha256_hex(f, len + 32, hex);
	CHECK(sf.size == len + 32 && sf.has_checksum && sf.checksum_ok, "size %llu", (unsigned long long)sf.size);
	CHECK_STR(sf.sha256, hex);
	CHECK(sf.bbolt_ok && sf.bbolt.page_size == 4096 && sf.bbolt.txid == 7, "%s", sf.bbolt_error);
	/* a flipped byte in the data: the checksum fails, bbolt's meta still holds */
	f[3 * 4096 + 5] ^= 1;
	write_file("/s/flip.db", f, len + 32);
	CHECK(ma_etcd_snapshot_check(root, "/s/flip.db", &sf, &e) == 0, "%s", e.msg);
	CHECK(sf.has_checksum && !sf.checksum_ok && sf.bbolt_ok, "flip: checksum_ok %d", sf.checksum_ok);
	f[3 * 4096 + 5] ^= 1;
	/* both meta pages damaged, the checksum redone: the checksum holds, bbolt's meta does not */
	f[16] ^= 1;
	f[4096 + 16] ^= 1;
	fix_sha(f, len, f + len);
	write_file("/s/meta.db", f, len + 32);
	CHECK(ma_etcd_snapshot_check(root, "/s/meta.db", &sf, &e) == 0, "%s", e.msg);
	CHECK(sf.checksum_ok && !sf.bbolt_ok && strstr(sf.bbolt_error, "both its meta pages"), "%s", sf.bbolt_error);
	/* no checksum at all (a copy of a member's db file) */
	write_file("/s/plain.db", db, len);
	CHECK(ma_etcd_snapshot_check(root, "/s/plain.db", &sf, &e) == 0, "%s", e.msg);
	CHECK(!sf.has_checksum && !sf.checksum_ok && sf.bbolt_ok && !sf.checksum[0], "plain");
	/* truncated by a page, its checksum redone: etcd's sum holds, bbolt's meta says pages are missing */
	fix_sha(db, len - 4096, f + len - 4096);
	memcpy(f, db, len - 4096);
	write_file("/s/short.db", f, len - 4096 + 32);
	CHECK(ma_etcd_snapshot_check(root, "/s/short.db", &sf, &e) == 0, "%s", e.msg);
	CHECK(sf.checksum_ok && !sf.bbolt_ok && strstr(sf.bbolt_error, "truncated"), "%s", sf.bbolt_error);
	/* empty; missing; a directory; a FIFO is never opened */
	write_file("/s/empty.db", "", 0);
	CHECK(ma_etcd_snapshot_check(root, "/s/empty.db", &sf, &e) == 0 && !sf.bbolt_ok && !sf.has_checksum, "empty");
	CHECK(ma_etcd_snapshot_check(root, "/s/none.db", &sf, &e) < 0 && e.code == ENOENT, "%s", e.msg);
	CHECK(ma_etcd_snapshot_check(root, "/s", &sf, &e) < 0 && e.code == EISDIR, "%s", e.msg);
	char fifo[MA_PATH_MAX];
	ma_fs_resolve(root, "/s/fifo", fifo, sizeof fifo, &e);
	CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
	CHECK(ma_etcd_snapshot_check(root, "/s/fifo", &sf, &e) < 0 && e.code == EINVAL, "%s", e.msg);
	free(f);
	free(db);
}

int main(void)
{
	snprintf(root, sizeof root, "%s/moonadm-test-snap-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(root))
		return 1;
	RUN(test_split_anywhere);
	RUN(test_errors);
	RUN(test_sink_error);
	RUN(test_file_check);
	ma_err e;
	ma_fs_remove_tree(root, "/", 0, &e);
	rmdir(root);
	DONE();
}
