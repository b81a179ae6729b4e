/* Base64 (RFC 4648 §4, the standard alphabet) over OpenSSL's primitive, SHA-256 hex over nettle's. */
#include "encoding.h"

#include <nettle/sha2.h>
#include <openssl/evp.h>

size_t ma_base64_encoded_len(size_t n) { return 4 * ((n + 2) / 3); }

void ma_base64_encode(const void *data, size_t n, char *out)
{
	/* EVP_EncodeBlock takes an int: encode in chunks that are a multiple of 3 bytes */
	const unsigned char *p = data;
	const size_t chunk = 3 * 1024 * 1024;
	while (n > 0) {
		size_t k = n < chunk ? n : chunk;
		int w = EVP_EncodeBlock((unsigned char *)out, p, (int)k);
		out += w, p += k, n -= k;
	}
	*out = '\0';
}

static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z') return c - 'A';
	if (c >= 'a' && c <= 'z') return c - 'a' + 26;
	if (c >= '0' && c <= '9') return c - '0' + 52;
	if (c == '+') return 62;
	if (c == '/') return 63;
	return -1;
}

static int is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

int ma_base64_decode(const char *text, size_t n, unsigned char *out, size_t *out_len, ma_err *e)
{
	unsigned acc = 0;
	int bits = 0, pad = 0;
	size_t o = 0, digits = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)text[i];
		if (is_space(c)) continue;
		if (c == '=') {
			if (++pad > 2) return ma_fail_kind(e, "malformed", "base64: too much padding at offset %zu", i);
			continue;
		}
		int v = b64_value(c);
		if (v < 0 || pad) return ma_fail_kind(e, "malformed", "base64: invalid character at offset %zu", i);
		acc = (acc << 6) | (unsigned)v;
		bits += 6, digits++;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	if (digits % 4 == 1) return ma_fail_kind(e, "malformed", "base64: truncated input");
	if (pad && (digits + (size_t)pad) % 4 != 0) return ma_fail_kind(e, "malformed", "base64: wrong padding");
	*out_len = o;
	return 0;
}

void ma_hex(const void *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	const unsigned char *p = in;
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

void ma_sha256_hex(const void *data, size_t n, char out[65])
{
	/* nettle (linked statically): OpenSSL 3.0's EVP_Digest fetches SHA-256 from its provider
	 * on every call, ~150k instructions, more than hashing a journal; the journal hashes every file */
	struct sha256_ctx ctx;
	unsigned char md[SHA256_DIGEST_SIZE];
	sha256_init(&ctx);
	sha256_update(&ctx, n, data);
	sha256_digest(&ctx, sizeof md, md);
	ma_hex(md, sizeof md, out);
}

void ma_sha256_init(ma_sha256 *h)
{
	sha256_init(&h->c);
}

void ma_sha256_update(ma_sha256 *h, const void *data, size_t n)
{
	sha256_update(&h->c, n, data);
}

void ma_sha256_final(ma_sha256 *h, unsigned char out[MA_SHA256_LEN])
{
	sha256_digest(&h->c, MA_SHA256_LEN, out);
}
