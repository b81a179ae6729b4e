/* bbolt (go.etcd.io/bbolt), the file format of etcd's backend and of its snapshots: the two meta
 * pages that open a file, as bbolt itself opens one (db.go getPageSize, DB.meta; meta.go Validate).
 * Page 0 and page 1 each start with a page header (id u64, flags u16, count u16, overflow u32: 16
 * bytes) and then the meta: magic u32 (0xED0CDAED), version u32 (2), pageSize u32, flags u32, the
 * root bucket (root pgid u64, sequence u64), freelist pgid u64, high-water mark pgid u64, txid u64,
 * checksum u64 = FNV-1a 64 of the 56 bytes before it; little-endian (the amd64 and arm64 layout). The
 * meta in use is the valid one with the higher txid. The input may be hostile: every read is bounded
 * by the file's size, no offset is computed from a value before it was checked. */
#ifndef MA_BBOLT_H
#define MA_BBOLT_H

#include <stddef.h>
#include <stdint.h>
#include "err.h"

#define MA_BBOLT_MAGIC 0xED0CDAEDu
#define MA_BBOLT_VERSION 2u
#define MA_BBOLT_META_BYTES 80 /* page header and meta */
#define MA_BBOLT_MIN_PAGE 1024u
#define MA_BBOLT_MAX_PAGE (16u << 20) /* bbolt's own search for the second meta page stops there */

typedef struct ma_bbolt_meta {
	uint32_t magic, version, page_size, flags;
	uint64_t root, sequence, freelist, pgid, txid, checksum;
} ma_bbolt_meta;

typedef struct ma_bbolt_info {
	uint32_t page_size;  /* of the meta in use */
	uint64_t txid;       /* the last committed transaction */
	uint64_t pgid;       /* the high-water mark: the file holds at least pgid pages */
	uint64_t root, freelist;
	int active;          /* the meta page in use: 0 or 1 */
	int meta_ok[2];      /* each meta page's check held */
	char why[2][128];    /* why a meta page failed ("" when it held) */
} ma_bbolt_info;

/* Reads n bytes at off into buf: the count read (short only at the end of the file), or -1 with
 * e filled. */
typedef long (*ma_bbolt_reader)(void *ud, uint64_t off, void *buf, size_t n, ma_err *e);

/* One meta page (its first len bytes): 0 when it holds (magic, version, checksum, a page size in
 * [MA_BBOLT_MIN_PAGE, MA_BBOLT_MAX_PAGE], root and freelist below the high-water mark), else -1 with
 * why (a short sentence, no file content). */
int ma_bbolt_meta_parse(const unsigned char *p, size_t len, ma_bbolt_meta *m, char *why, size_t whylen);

/* The meta pages of a file of `size` bytes: 0 with *out (at least one meta page holds, both agree on
 * the page size, and the file holds the pgid pages the meta in use names), or -1 with e (kind
 * "malformed" for the file's content, else the reader's error). */
int ma_bbolt_read_meta(ma_bbolt_reader rd, void *ud, uint64_t size, ma_bbolt_info *out, ma_err *e);

/* The same over a file's bytes in memory (what the fuzz target and the unit tests feed). */
int ma_bbolt_read_meta_mem(const void *buf, size_t len, ma_bbolt_info *out, ma_err *e);

/* FNV-1a 64 (the meta checksum). */
uint64_t ma_fnv1a64(const void *data, size_t n);

#endif
