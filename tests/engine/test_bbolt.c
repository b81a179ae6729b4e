/* engine/bbolt: the meta pages of synthetic databases, valid, damaged and hostile. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bbolt.h"
#include "snapfix.h"
#include "t.h"

static void test_fnv(void)
{
	CHECK(ma_fnv1a64("", 0) == 0xcbf29ce484222325ull, "empty");
	CHECK(ma_fnv1a64("a", 1) == 0xaf63dc4c8601ec8cull, "\"a\"");
	CHECK(ma_fnv1a64("foobar", 6) == 0x85944171f73967e8ull, "\"foobar\"");
}

static void test_meta_parse(void)
{
	unsigned char p[MA_BBOLT_META_BYTES];
	ma_bbolt_meta m;
	char why[128];
	fix_meta(p, 0, 4096, 10, 5);
	CHECK(ma_bbolt_meta_parse(p, sizeof p, &m, why, sizeof why) == 0, "%s", why);
	CHECK(m.page_size == 4096 && m.pgid == 10 && m.txid == 5 && m.root == 3 && m.freelist == 2, "fields");
	CHECK(ma_bbolt_meta_parse(p, sizeof p - 1, &m, why, sizeof why) < 0 && strstr(why, "only 79 bytes"), "%s", why);
	p[16] ^= 1; /* magic */
	CHECK(ma_bbolt_meta_parse(p, sizeof p, &m, why, sizeof why) < 0 && strstr(why, "magic"), "%s", why);
	fix_meta(p, 0, 4096, 10, 5);
	p[16 + 48] ^= 1; /* txid, under the checksum */
	CHECK(ma_bbolt_meta_parse(p, sizeof p, &m, why, sizeof why) < 0 && strstr(why, "checksum"), "%s", why);
	fix_meta(p, 0, 4096, 10, 5);
	fix_put32(p + 16 + 4, 1); /* version (checksum not redone: version is checked first) */
	CHECK(ma_bbolt_meta_parse(p, sizeof p, &m, why, sizeof why) < 0 && strstr(why, "version 1"), "%s", why);
	fix_meta(p, 0, 512, 10, 5);
	CHECK(ma_bbolt_meta_parse(p, sizeof p, &m, why, sizeof why) < 0 && strstr(why, "page size 512"), "%s", why);
	fix_meta(p, 0, 4096, 3, 5); /* root page 3 of 3 */
	CHECK(ma_bbolt_meta_parse(p, sizeof p, &m, why, sizeof why) < 0 && strstr(why, "root page"), "%s", why);
}

static void test_read_meta(void)
{
	size_t len;
	unsigned char *db = fix_db(4096, 8, &len);
	ma_bbolt_info in;
	ma_err e = {0};
	CHECK(ma_bbolt_read_meta_mem(db, len, &in, &e) == 0, "%s", e.msg);
	CHECK(in.page_size == 4096 && in.txid == 7 && in.active == 1 && in.pgid == 8, "txid %llu active %d",
	      (unsigned long long)in.txid, in.active);
	CHECK(in.meta_ok[0] && in.meta_ok[1], "both metas");
	/* page 1 damaged: page 0 serves */
	db[4096 + 16] ^= 0xff; /* its magic */
	CHECK(ma_bbolt_read_meta_mem(db, len, &in, &e) == 0 && in.active == 0 && in.txid == 6, "%s", e.msg);
	CHECK(!in.meta_ok[1] && strstr(in.why[1], "magic"), "%s", in.why[1]);
	/* page 0 damaged: page 1 found by bbolt's search */
	free(db);
	db = fix_db(16384, 4, &len);
	db[30] ^= 0xff;
	CHECK(ma_bbolt_read_meta_mem(db, len, &in, &e) == 0 && in.active == 1 && in.page_size == 16384, "%s", e.msg);
	/* both damaged */
	db[16384 + 20] ^= 0xff;
	CHECK(ma_bbolt_read_meta_mem(db, len, &in, &e) < 0 && e.kind && !strcmp(e.kind, "malformed"), "%s", e.msg);
	CHECK(strstr(e.msg, "both its meta pages") && strstr(e.msg, "page 0: checksum"), "%s", e.msg);
	free(db);
	/* truncated: the meta names more pages than the file holds */
	db = fix_db(4096, 8, &len);
	CHECK(ma_bbolt_read_meta_mem(db, len - 4096, &in, &e) < 0 && strstr(e.msg, "truncated"), "%s", e.msg);
	/* the metas disagree on the page size */
	fix_meta(db + 4096, 1, 8192, 4, 7);
	CHECK(ma_bbolt_read_meta_mem(db, len, &in, &e) < 0 && strstr(e.msg, "disagree"), "%s", e.msg);
	free(db);
}

/* Hostile input: short files, garbage, every length of a prefix: never a read out of bounds
 * (ASan), always a message. */
static void test_hostile(void)
{
	ma_bbolt_info in;
	ma_err e = {0};
	CHECK(ma_bbolt_read_meta_mem("", 0, &in, &e) < 0 && e.msg[0], "empty");
	unsigned char junk[3000];
	for (size_t i = 0; i < sizeof junk; i++)
		junk[i] = (unsigned char)(i * 131 + 17);
	CHECK(ma_bbolt_read_meta_mem(junk, sizeof junk, &in, &e) < 0 && strstr(e.msg, "not a bbolt"), "%s", e.msg);
	size_t len;
	unsigned char *db = fix_db(1024, 4, &len);
	for (size_t n = 0; n < len; n += 37) {
		memset(&e, 0, sizeof e);
		int rc = ma_bbolt_read_meta_mem(db, n, &in, &e);
		CHECK(rc == 0 || e.msg[0], "a failure without a message at %zu bytes", n);
	}
	/* a huge pgid must not overflow the size check */
	fix_meta(db, 0, 1024, UINT64_MAX, 9);
	CHECK(ma_bbolt_read_meta_mem(db, len, &in, &e) < 0 && strstr(e.msg, "truncated"), "%s", e.msg);
	free(db);
}

int main(void)
{
	RUN(test_fnv);
	RUN(test_meta_parse);
	RUN(test_read_meta);
	RUN(test_hostile);
	DONE();
}
