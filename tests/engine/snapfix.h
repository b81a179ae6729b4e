/* Synthetic bbolt databases and etcd snapshot streams for the unit tests of engine/bbolt.c and
 * engine/etcd_snapshot.c: nothing here comes from a real etcd (tests/proc/etcd_spec.lua has that). */
#ifndef MA_SNAPFIX_H
#define MA_SNAPFIX_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bbolt.h"
#include "encoding.h"

static inline void fix_put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline void fix_put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* A meta page at p: page header (id, flags 0x04) and meta, its checksum right. */
static inline void fix_meta(unsigned char *p, uint64_t id, uint32_t page_size, uint64_t pgid, uint64_t txid)
{
	memset(p, 0, MA_BBOLT_META_BYTES);
	fix_put64(p, id);
	p[8] = 0x04; /* MetaPageFlag */
	unsigned char *q = p + 16;
	fix_put32(q, MA_BBOLT_MAGIC);
	fix_put32(q + 4, MA_BBOLT_VERSION);
	fix_put32(q + 8, page_size);
	fix_put64(q + 16, 3);            /* root bucket page */
	fix_put64(q + 32, 2);            /* freelist page */
	fix_put64(q + 40, pgid);
	fix_put64(q + 48, txid);
	fix_put64(q + 56, ma_fnv1a64(q, 56));
}

/* A database of `pages` pages of page_size bytes (both metas valid, txid 6 on page 0 and 7 on page
 * 1), the other pages filled with a pattern. malloc'd, *len = pages * page_size. */
static inline unsigned char *fix_db(uint32_t page_size, uint64_t pages, size_t *len)
{
	*len = (size_t)(page_size * pages);
	unsigned char *db = malloc(*len);
	for (size_t i = 0; i < *len; i++)
		db[i] = (unsigned char)(i * 7 + (i >> 9));
	fix_meta(db, 0, page_size, pages, 6);
	fix_meta(db + page_size, 1, page_size, pages, 7);
	return db;
}

/* The SHA-256 of n bytes. */
static inline void fix_sha(const void *p, size_t n, unsigned char out[32])
{
	ma_sha256 h;
	ma_sha256_init(&h);
	ma_sha256_update(&h, p, n);
	ma_sha256_final(&h, out);
}

/* One message of the gateway's stream, appended at s + *at. */
static inline void fix_msg(char *s, size_t cap, size_t *at, const unsigned char *p, size_t n, size_t rem,
			   const char *header)
{
	*at += (size_t)snprintf(s + *at, cap - *at, "{\"result\":{");
	if (header)
		*at += (size_t)snprintf(s + *at, cap - *at, "\"header\":%s,", header);
	if (rem)
		*at += (size_t)snprintf(s + *at, cap - *at, "\"remaining_bytes\":\"%zu\",", rem);
	*at += (size_t)snprintf(s + *at, cap - *at, "\"blob\":\"");
	ma_base64_encode(p, n, s + *at);
	*at += strlen(s + *at);
	*at += (size_t)snprintf(s + *at, cap - *at, "\",\"version\":\"3.6.0\"}}\n");
}

/* The gateway's stream of a database: blobs of `blob` bytes with remaining_bytes (left out when 0,
 * as protojson does), version "3.6.0", a header in the first message (when not NULL: its JSON),
 * then the checksum message. malloc'd NUL-terminated text. */
static inline char *fix_stream(const unsigned char *db, size_t len, size_t blob, const char *header)
{
	size_t cap = len * 2 + 4096, at = 0;
	char *s = malloc(cap);
	unsigned char sum[32];
	for (size_t off = 0; off < len;) {
		size_t n = len - off < blob ? len - off : blob;
		fix_msg(s, cap, &at, db + off, n, len - off - n, off == 0 ? header : NULL);
		off += n;
	}
	fix_sha(db, len, sum);
	fix_msg(s, cap, &at, sum, 32, 0, NULL);
	return s;
}

#endif
