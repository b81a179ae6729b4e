/* bbolt's meta pages (engine/bbolt.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "bbolt.h"

#define PAGE_HEADER 16
#define META_SUMMED 56 /* the meta's bytes before its checksum */
#define NO_FREELIST UINT64_MAX

uint64_t ma_fnv1a64(const void *data, size_t n)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

int ma_bbolt_meta_parse(const unsigned char *p, size_t len, ma_bbolt_meta *m, char *why, size_t whylen)
{
	memset(m, 0, sizeof *m);
	if (len < MA_BBOLT_META_BYTES) {
		snprintf(why, whylen, "only %zu bytes, a meta page needs %d", len, MA_BBOLT_META_BYTES);
		return -1;
	}
	const unsigned char *q = p + PAGE_HEADER;
	m->magic = le32(q);
	m->version = le32(q + 4);
	m->page_size = le32(q + 8);
	m->flags = le32(q + 12);
	m->root = le64(q + 16);
	m->sequence = le64(q + 24);
	m->freelist = le64(q + 32);
	m->pgid = le64(q + 40);
	m->txid = le64(q + 48);
	m->checksum = le64(q + 56);
	if (m->magic != MA_BBOLT_MAGIC)
		snprintf(why, whylen, "magic 0x%08" PRIx32 ", not bbolt's 0x%08x", m->magic, MA_BBOLT_MAGIC);
	else if (m->version != MA_BBOLT_VERSION)
		snprintf(why, whylen, "format version %" PRIu32 ", not %u", m->version, MA_BBOLT_VERSION);
	else if (m->checksum != ma_fnv1a64(q, META_SUMMED))
		snprintf(why, whylen, "checksum mismatch (stored %016" PRIx64 ", computed %016" PRIx64 ")", m->checksum,
			 ma_fnv1a64(q, META_SUMMED));
	else if (m->page_size < MA_BBOLT_MIN_PAGE || m->page_size > MA_BBOLT_MAX_PAGE)
		snprintf(why, whylen, "page size %" PRIu32 " out of range", m->page_size);
	else if (m->root >= m->pgid)
		snprintf(why, whylen, "root page %" PRIu64 " at or above the high-water mark %" PRIu64, m->root, m->pgid);
	else if (m->freelist != NO_FREELIST && m->freelist >= m->pgid)
		snprintf(why, whylen, "freelist page %" PRIu64 " at or above the high-water mark %" PRIu64, m->freelist,
			 m->pgid);
	else {
		why[0] = '\0';
		return 0;
	}
	return -1;
}

/* Meta page k at off: parsed into m, its verdict in out. */
static int meta_at(ma_bbolt_reader rd, void *ud, uint64_t size, uint64_t off, int k, ma_bbolt_meta *m,
		   ma_bbolt_info *out, ma_err *e)
{
	unsigned char buf[MA_BBOLT_META_BYTES];
	if (off >= size) {
		snprintf(out->why[k], sizeof out->why[k], "beyond the end of the file (offset %" PRIu64 ")", off);
		return 0;
	}
	long n = rd(ud, off, buf, sizeof buf, e);
	if (n < 0)
		return -1;
	out->meta_ok[k] = ma_bbolt_meta_parse(buf, (size_t)n, m, out->why[k], sizeof out->why[k]) == 0;
	return 0;
}

/* Page 1 when page 0 told no page size: bbolt's search, at 1 KiB << i up to 16 MiB. */
static int search_second(ma_bbolt_reader rd, void *ud, uint64_t size, ma_bbolt_meta *m, ma_bbolt_info *out,
			 ma_err *e)
{
	char first[128] = "";
	for (int i = 0; i <= 14; i++) {
		uint64_t pos = (uint64_t)1024 << i;
		if (size < 1024 || pos >= size - 1024)
			break;
		if (meta_at(rd, ud, size, pos, 1, m, out, e) < 0)
			return -1;
		if (out->meta_ok[1])
			return 0;
		if (!first[0])
			memcpy(first, out->why[1], sizeof first);
	}
	snprintf(out->why[1], sizeof out->why[1], "%s", first[0] ? first : "not found (the file is too short)");
	return 0;
}

int ma_bbolt_read_meta(ma_bbolt_reader rd, void *ud, uint64_t size, ma_bbolt_info *out, ma_err *e)
{
	memset(out, 0, sizeof *out);
	ma_bbolt_meta m[2];
	memset(m, 0, sizeof m);
	if (meta_at(rd, ud, size, 0, 0, &m[0], out, e) < 0)
		return -1;
	int rc = out->meta_ok[0] ? meta_at(rd, ud, size, m[0].page_size, 1, &m[1], out, e)
				 : search_second(rd, ud, size, &m[1], out, e);
	if (rc < 0)
		return -1;
	if (!out->meta_ok[0] && !out->meta_ok[1])
		return ma_fail_kind(e, "malformed", "not a bbolt database, or both its meta pages are damaged: page 0: %s; "
				    "page 1: %s", out->why[0], out->why[1]);
	if (out->meta_ok[0] && out->meta_ok[1] && m[0].page_size != m[1].page_size)
		return ma_fail_kind(e, "malformed", "the meta pages disagree on the page size (%" PRIu32 " and %" PRIu32 ")",
				    m[0].page_size, m[1].page_size);
	int a = !out->meta_ok[0] || (out->meta_ok[1] && m[1].txid > m[0].txid);
	out->active = a;
	out->page_size = m[a].page_size;
	out->txid = m[a].txid;
	out->pgid = m[a].pgid;
	out->root = m[a].root;
	out->freelist = m[a].freelist;
	if (out->pgid > size / out->page_size)
		return ma_fail_kind(e, "malformed", "truncated: the meta in use (txid %" PRIu64 ") names %" PRIu64 " pages of %"
				    PRIu32 " bytes, the file holds %" PRIu64 " bytes", out->txid, out->pgid, out->page_size,
				    size);
	return 0;
}

struct mem {
	const unsigned char *p;
	size_t n;
};

static long mem_read(void *ud, uint64_t off, void *buf, size_t n, ma_err *e)
{
	(void)e;
	const struct mem *m = ud;
	if (off >= m->n)
		return 0;
	size_t k = m->n - (size_t)off < n ? m->n - (size_t)off : n;
	memcpy(buf, m->p + off, k);
	return (long)k;
}

int ma_bbolt_read_meta_mem(const void *buf, size_t len, ma_bbolt_info *out, ma_err *e)
{
	struct mem m = {buf, len};
	return ma_bbolt_read_meta(mem_read, &m, len, out, e);
}
