/* libFuzzer: what a peer sends as a snapshot (the gateway's stream of POST /v3/maintenance/snapshot,
 * engine/etcd_snapshot.c) and what a snapshot file holds (bbolt's meta pages, engine/bbolt.c). Input:
 * one byte choosing the reader, one byte the chunk size the stream is fed in, then the bytes. A
 * stream that decodes has passed its checksum: the bytes the sink got are the database and then
 * its SHA-256. Every failure carries a message. */
#include <stdlib.h>
#include <string.h>
#include "bbolt.h"
#include "encoding.h"
#include "etcd.h"

struct got {
	unsigned char *buf; /* every byte the sink got (inputs are small) */
	size_t n, cap;
};

static int sink(const unsigned char *buf, size_t len, void *ud, ma_err *e)
{
	struct got *g = ud;
	if (g->n + len > g->cap) {
		size_t cap = (g->n + len) * 2;
		unsigned char *b = realloc(g->buf, cap);
		if (!b)
			return ma_fail(e, "out of memory");
		g->buf = b;
		g->cap = cap;
	}
	memcpy(g->buf + g->n, buf, len);
	g->n += len;
	return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	if (size < 2)
		return 0;
	int which = data[0] % 2;
	size_t chunk = (size_t)data[1] + 1;
	data += 2;
	size -= 2;
	ma_err e = {0};
	if (which == 1) {
		ma_bbolt_info info;
		if (ma_bbolt_read_meta_mem(data, size, &info, &e) == 0) {
			if (info.page_size < MA_BBOLT_MIN_PAGE || (uint64_t)info.pgid * info.page_size > size)
				abort();
		} else if (!e.msg[0]) {
			abort();
		}
		return 0;
	}
	struct got g = {0};
	ma_etcd_snapdec *d = ma_etcd_snapdec_new("https://127.0.0.1:2379", 4096, sink, &g, &e);
	if (!d)
		abort();
	int rc = 0;
	for (size_t off = 0; off < size && rc == 0; off += chunk)
		rc = ma_etcd_snapdec_feed(d, (const char *)data + off, size - off < chunk ? size - off : chunk, &e);
	ma_etcd_snapshot out = {0};
	if (rc == 0)
		rc = ma_etcd_snapdec_finish(d, &out, &e);
	if (rc == 0) {
		if (out.size != g.n || out.db_size + 32 != out.size)
			abort();
		/* the database, then its SHA-256: what the decoder checked and reports */
		ma_sha256 h;
		unsigned char sum[32];
		ma_sha256_init(&h);
		ma_sha256_update(&h, g.buf, (size_t)out.db_size);
		ma_sha256_final(&h, sum);
		if (memcmp(sum, out.sha256, 32) != 0 || memcmp(sum, g.buf + out.db_size, 32) != 0)
			abort();
	} else if (!e.msg[0]) {
		abort();
	}
	ma_etcd_snapshot_free(&out);
	ma_etcd_snapdec_free(d);
	free(g.buf);
	return 0;
}
