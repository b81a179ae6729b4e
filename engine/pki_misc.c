/* Bootstrap-token JWS, copy-certs AES-GCM, secure random, hex and SHA-256. */
#include "pki_int.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include "encoding.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

static int nibble(char c)
{
	if (c >= '0' && c <= '9') return c - '0';
	if (c >= 'a' && c <= 'f') return c - 'a' + 10;
	if (c >= 'A' && c <= 'F') return c - 'A' + 10;
	return -1;
}

int ma_pki_unhex(const char *hex, unsigned char *out, size_t cap, size_t *n, ma_err *e)
{
	size_t len = strlen(hex);
	if (len % 2) return ma_fail_kind(e, "malformed", "invalid hex: odd length %zu", len);
	if (len / 2 > cap) return ma_fail_kind(e, "malformed", "invalid hex: %zu bytes, at most %zu expected", len / 2, cap);
	for (size_t i = 0; i < len / 2; i++) {
		int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return ma_fail_kind(e, "malformed", "invalid hex: bad digit at offset %zu", 2 * i + (hi < 0 ? 0 : 1));
		out[i] = (unsigned char)(hi << 4 | lo);
	}
	*n = len / 2;
	return 0;
}

int ma_pki_random(void *buf, size_t n, ma_err *e)
{
	if (n > INT_MAX) return ma_fail(e, "random: %zu bytes is too many", n);
	return RAND_bytes(buf, (int)n) == 1 ? 0 : ma_pki_sslfail(e, "the random generator failed");
}

/* The process's DRBG: Hash_DRBG over SHA-256 (NIST SP 800-90A, 256-bit strength, as OpenSSL's
 * default CTR_DRBG over AES-256), chosen before the first random byte. Instantiating the default
 * fetches AES-256-CTR, and in OpenSSL 3.0 the first cipher fetch builds the methods of every cipher
 * the provider has: 2.8 M instructions, a fifth of `certs all` with ECDSA keys. A [random] section of
 * openssl.cnf, read at OpenSSL's first use, still has the last word. Not a constructor: setting it
 * initialises OpenSSL's library context, which a command that makes no key never needs. */
static void choose_drbg(void)
{
	if (!RAND_set_DRBG_type(NULL, "HASH-DRBG", NULL, NULL, "SHA256")) {
		/* out of memory part-way (the name set, the digest not): back to OpenSSL's default whole;
		 * unsetting allocates nothing, so this cannot fail */
		RAND_set_DRBG_type(NULL, NULL, NULL, NULL, NULL);
		ERR_clear_error();
	}
}

void ma_pki_choose_drbg(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, choose_drbg);
}

/* cluster-bootstrap's randBytes: bytes >= 252 are dropped so that mod 36 is uniform. */
int ma_pki_token_chars(char *out, size_t n, ma_err *e)
{
	static const char alphabet[] = "0123456789abcdefghijklmnopqrstuvwxyz";
	unsigned char buf[64];
	size_t got = 0;
	while (got < n) {
		if (ma_pki_random(buf, sizeof buf, e)) return -1;
		for (size_t i = 0; i < sizeof buf && got < n; i++)
			if (buf[i] < 252) out[got++] = alphabet[buf[i] % 36];
	}
	out[n] = '\0';
	OPENSSL_cleanse(buf, sizeof buf);
	return 0;
}

int ma_pki_certificate_key(char out[65], ma_err *e)
{
	unsigned char k[32];
	if (ma_pki_random(k, sizeof k, e)) return -1;
	ma_hex(k, sizeof k, out);
	OPENSSL_cleanse(k, sizeof k);
	return 0;
}

/* ---- JWS ------------------------------------------------------------------ */

/* Unpadded base64url of n bytes into out (capacity 4*ceil(n/3)+1); returns the length. */
static size_t b64url(const unsigned char *in, size_t n, char *out)
{
	size_t len = (size_t)EVP_EncodeBlock((unsigned char *)out, in, (int)n);
	while (len && out[len - 1] == '=') len--;
	out[len] = '\0';
	for (size_t i = 0; i < len; i++) out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
	return len;
}

/* {"alg":"HS256","kid":"<kid>"} with kid escaped as Go's encoding/json does. */
static size_t jws_header(const char *kid, char *out)
{
	size_t n = (size_t)sprintf(out, "{\"alg\":\"HS256\",\"kid\":\"");
	for (const unsigned char *p = (const unsigned char *)kid; *p; p++) {
		if (*p == '"' || *p == '\\') n += (size_t)sprintf(out + n, "\\%c", *p);
		else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&') n += (size_t)sprintf(out + n, "\\u%04x", *p);
		else out[n++] = (char)*p;
	}
	return n + (size_t)sprintf(out + n, "\"}");
}

char *ma_pki_jws_sign(const char *content, size_t len, const char *kid, const char *secret, size_t *outlen,
		      ma_err *e)
{
	size_t kidlen = strlen(kid), seclen = strlen(secret);
	if (kidlen > 256) {
		ma_fail(e, "JWS: key id is too long");
		return NULL;
	}
	if (len > INT_MAX / 2) {
		ma_fail(e, "JWS: content is too large");
		return NULL;
	}
	char hdr[32 + 6 * 256], hb64[sizeof hdr * 4 / 3 + 4];
	size_t hlen = b64url((unsigned char *)hdr, jws_header(kid, hdr), hb64);
	/* signing input: B64URL(header) "." B64URL(payload) */
	size_t cap = hlen + 1 + (len + 2) / 3 * 4 + 1;
	char *in = malloc(cap), *out = malloc(hlen + 2 + 44 + 1);
	/* go-jose pads the HMAC key with zeros to 32 bytes; HMAC's own zero-padding makes that a no-op */
	unsigned char key[32] = {0}, md[32];
	unsigned mdlen = 0;
	if (!in || !out) {
		free(in);
		free(out);
		ma_fail(e, "out of memory");
		return NULL;
	}
	memcpy(in, hb64, hlen);
	in[hlen] = '.';
	size_t inlen = hlen + 1 + b64url((const unsigned char *)content, len, in + hlen + 1);
	if (seclen < sizeof key) memcpy(key, secret, seclen);
	if (!HMAC(EVP_sha256(), seclen < sizeof key ? key : (const unsigned char *)secret,
		  (int)(seclen < sizeof key ? sizeof key : seclen), (unsigned char *)in, inlen, md, &mdlen)) {
		ma_pki_sslfail(e, "JWS: HMAC-SHA256 failed");
		free(out);
		out = NULL;
	} else {
		memcpy(out, hb64, hlen);
		memcpy(out + hlen, "..", 2);
		size_t n = hlen + 2 + b64url(md, mdlen, out + hlen + 2);
		if (outlen) *outlen = n;
	}
	OPENSSL_cleanse(key, sizeof key);
	free(in);
	return out;
}

int ma_pki_jws_verify(const char *content, size_t len, const char *kid, const char *secret, const char *jws,
		      size_t jwslen, ma_err *e)
{
	size_t n;
	char *want = ma_pki_jws_sign(content, len, kid, secret, &n, e);
	if (!want) return -1;
	int ok = n == jwslen && CRYPTO_memcmp(want, jws, n) == 0;
	free(want);
	if (!ok) ma_fail(e, "JWS signature does not match (token id \"%s\")", kid);
	return ok;
}

/* ---- AES-GCM ------------------------------------------------------------- */

enum { NONCE = 12, TAG = 16 };

static const EVP_CIPHER *gcm_for(size_t keylen, ma_err *e)
{
	switch (keylen) { /* Go's aes.NewCipher picks AES-128/192/256 by key size */
	case 16: return EVP_aes_128_gcm();
	case 24: return EVP_aes_192_gcm();
	case 32: return EVP_aes_256_gcm();
	}
	ma_fail(e, "AES-GCM: key is %zu bytes, want 32", keylen);
	return NULL;
}

int ma_pki_seal(const unsigned char *key, size_t keylen, const void *pt, size_t n, unsigned char **out,
		size_t *outlen, ma_err *e)
{
	const EVP_CIPHER *c = gcm_for(keylen, e);
	if (!c) return -1;
	if (n > INT_MAX - 64) return ma_fail(e, "AES-GCM: plaintext is too large");
	unsigned char *buf = malloc(NONCE + n + TAG);
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	int l1 = 0, l2 = 0, rc = -1;
	if (!buf || !ctx) {
		ma_fail(e, "out of memory");
		goto out;
	}
	if (ma_pki_random(buf, NONCE, e)) goto out;
	if (!EVP_EncryptInit_ex(ctx, c, NULL, key, buf) ||
	    !EVP_EncryptUpdate(ctx, buf + NONCE, &l1, pt, (int)n) || !EVP_EncryptFinal_ex(ctx, buf + NONCE + l1, &l2) ||
	    !EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG, buf + NONCE + l1 + l2)) {
		ma_pki_sslfail(e, "AES-GCM: encryption failed");
		goto out;
	}
	*out = buf;
	*outlen = NONCE + (size_t)(l1 + l2) + TAG;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	EVP_CIPHER_CTX_free(ctx);
	return rc;
}

int ma_pki_open(const unsigned char *key, size_t keylen, const void *in, size_t n, unsigned char **out,
		size_t *outlen, ma_err *e)
{
	const EVP_CIPHER *c = gcm_for(keylen, e);
	const unsigned char *p = in;
	if (!c) return -1;
	if (n < NONCE + TAG) return ma_fail(e, "AES-GCM: ciphertext too short (%zu bytes)", n);
	if (n > INT_MAX) return ma_fail(e, "AES-GCM: ciphertext is too large");
	size_t ctlen = n - NONCE - TAG;
	unsigned char *buf = malloc(ctlen + 1), tag[TAG];
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
	int l1 = 0, l2 = 0, rc = -1;
	memcpy(tag, p + n - TAG, TAG);
	if (!buf || !ctx) {
		ma_fail(e, "out of memory");
		goto out;
	}
	if (!EVP_DecryptInit_ex(ctx, c, NULL, key, p) || !EVP_DecryptUpdate(ctx, buf, &l1, p + NONCE, (int)ctlen) ||
	    !EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG, tag)) {
		ma_pki_sslfail(e, "AES-GCM: decryption failed");
		goto out;
	}
	if (EVP_DecryptFinal_ex(ctx, buf + l1, &l2) != 1) {
		ERR_clear_error();
		ma_fail(e, "AES-GCM: message authentication failed (wrong key or tampered data)");
		goto out;
	}
	*out = buf;
	*outlen = (size_t)(l1 + l2);
	buf = NULL;
	rc = 0;
out:
	ma_pki_secret_free(buf, ctlen + 1); /* unauthenticated plaintext never leaves */
	EVP_CIPHER_CTX_free(ctx);
	return rc;
}
