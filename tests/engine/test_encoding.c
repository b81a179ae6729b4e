/* engine/encoding.c: base64 both ways (RFC 4648 §10 vectors, whitespace, optional padding, errors
 * with their offset) and SHA-256 hex. */
#include "encoding.h"
#include "t.h"

static void round_trip(const char *plain, const char *b64)
{
	char enc[64];
	ma_base64_encode(plain, strlen(plain), enc);
	CHECK_STR(enc, b64);
	unsigned char dec[64];
	size_t n = 0;
	ma_err e;
	CHECK(ma_base64_decode(b64, strlen(b64), dec, &n, &e) == 0, "%s", e.msg);
	dec[n] = '\0';
	CHECK_STR((char *)dec, plain);
}

static void test_rfc4648(void)
{
	round_trip("", "");
	round_trip("f", "Zg==");
	round_trip("fo", "Zm8=");
	round_trip("foo", "Zm9v");
	round_trip("foob", "Zm9vYg==");
	round_trip("fooba", "Zm9vYmE=");
	round_trip("foobar", "Zm9vYmFy");
}

static void test_lenient_input(void)
{
	unsigned char dec[64];
	size_t n = 0;
	ma_err e;
	const char *wrapped = "Zm9v\nYmFy\r\n";
	CHECK(ma_base64_decode(wrapped, strlen(wrapped), dec, &n, &e) == 0 && n == 6 && memcmp(dec, "foobar", 6) == 0, "wrapped");
	CHECK(ma_base64_decode("Zm8", 3, dec, &n, &e) == 0 && n == 2 && memcmp(dec, "fo", 2) == 0, "unpadded");
}

static void test_bad_input(void)
{
	unsigned char dec[64];
	size_t n = 0;
	ma_err e;
	CHECK(ma_base64_decode("Zm9v*mFy", 8, dec, &n, &e) == -1, "bad char accepted");
	CHECK_STR(e.msg, "base64: invalid character at offset 4");
	CHECK(ma_base64_decode("Zm9vY", 5, dec, &n, &e) == -1, "truncated accepted");
	CHECK_STR(e.msg, "base64: truncated input");
	CHECK(ma_base64_decode("Zg=x", 4, dec, &n, &e) == -1, "data after padding accepted");
	CHECK(ma_base64_decode("Zm9=", 4, dec, &n, &e) == 0 && n == 2, "one pad");
	CHECK(ma_base64_decode("Zg=", 3, dec, &n, &e) == -1, "short padding accepted");
}

static void test_sha256(void)
{
	char h[65];
	ma_sha256_hex("abc", 3, h);
	CHECK_STR(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	ma_sha256_hex("", 0, h);
	CHECK_STR(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

int main(void)
{
	RUN(test_rfc4648);
	RUN(test_lenient_input);
	RUN(test_bad_input);
	RUN(test_sha256);
	DONE();
}
