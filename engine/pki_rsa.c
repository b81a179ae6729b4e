/* RSA key generation through nettle/hogweed on GMP, handed to OpenSSL as an EVP_PKEY.
 *
 * Why not OpenSSL: OpenSSL 3.0's prime search spends most of its time in a constant-time GCD
 * (BN_consttime_swap, BN_gcd); nettle's provable-prime generator on GMP makes an RSA-2048 key
 * in about a fifth of the CPU time on the same machine (bench/: "key generation, one key").
 * Everything after generation (PEM, signing, checks) stays OpenSSL's, and the randomness is
 * OpenSSL's DRBG (RAND_priv_bytes), so the keys come from the same source as before. */
#include "pki_int.h"

#include <gmp.h>
#include <pthread.h>
#include <nettle/rsa.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/param_build.h>
#include <openssl/rand.h>

struct rng {
	int failed;
	uint32_t filler;
};

/* nettle's random callback cannot fail: a DRBG failure is recorded and the key thrown away. */
static void drbg(void *ctx, size_t len, uint8_t *dst)
{
	struct rng *r = ctx;
	while (len > 0) {
		int n = len > (1 << 20) ? (1 << 20) : (int)len;
		if (r->failed || RAND_priv_bytes(dst, n) != 1) {
			/* never the same bytes twice, so the prime search ends; the key is thrown away */
			r->failed = 1;
			for (size_t i = 0; i < len; i++) {
				r->filler++;
				dst[i] = (uint8_t)(r->filler * 167u + (r->filler >> 8));
			}
			return;
		}
		dst += n, len -= (size_t)n;
	}
}

/* mpz -> BIGNUM (secure heap for the private parts, via BN_secure_new). */
static BIGNUM *bn_of(const mpz_t z, int secret)
{
	size_t len = (mpz_sizeinbase(z, 2) + 7) / 8;
	unsigned char *buf = OPENSSL_secure_malloc(len ? len : 1);
	if (!buf) return NULL;
	size_t got = 0;
	mpz_export(buf, &got, 1, 1, 1, 0, z);
	BIGNUM *bn = secret ? BN_secure_new() : BN_new();
	if (bn && !BN_bin2bn(buf, (int)got, bn)) BN_free(bn), bn = NULL;
	OPENSSL_secure_clear_free(buf, len ? len : 1);
	return bn;
}

/* GMP's heap (limbs of p, q, d and the temporaries it allocates; small ones live on the stack and are
 * not wiped) is wiped when freed or moved: this process's GMP is moonadm's own (linked statically, and
 * the executable exports no GMP symbol), so nothing else sees these functions. */
static void *gmp_alloc(size_t n)
{
	void *p = malloc(n);
	if (!p) abort(); /* GMP has no way to report it; its own default aborts too */
	return p;
}

static void gmp_free(void *p, size_t n)
{
	if (p) OPENSSL_cleanse(p, n);
	free(p);
}

static void *gmp_realloc(void *p, size_t old, size_t n)
{
	void *q = gmp_alloc(n);
	memcpy(q, p, old < n ? old : n);
	gmp_free(p, old);
	return q;
}

static void gmp_wiping(void)
{
	mp_set_memory_functions(gmp_alloc, gmp_realloc, gmp_free);
}

EVP_PKEY *ma_pki_rsa_generate(unsigned bits, ma_err *e)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, gmp_wiping);
	struct rsa_public_key pub;
	struct rsa_private_key priv;
	struct rng r = {0};
	rsa_public_key_init(&pub);
	rsa_private_key_init(&priv);
	mpz_set_ui(pub.e, 65537); /* e_size 0: nettle keeps the given exponent */
	EVP_PKEY *k = NULL;
	BIGNUM *bn[8] = {0};
	OSSL_PARAM_BLD *bld = NULL;
	OSSL_PARAM *params = NULL;
	EVP_PKEY_CTX *ctx = NULL;
	if (!rsa_generate_keypair(&pub, &priv, &r, drbg, NULL, NULL, bits, 0) || r.failed) {
		if (r.failed) ma_pki_sslfail(e, "generating an RSA-%u key failed: the random generator failed", bits);
		else ma_fail(e, "generating an RSA-%u key failed (nettle refused the parameters)", bits);
		goto out;
	}
	/* nettle: a = d mod (p-1), b = d mod (q-1), c = q^-1 mod p: PKCS#1's exponent1/2, coefficient */
	const mpz_srcptr parts[8] = {pub.n, pub.e, priv.d, priv.p, priv.q, priv.a, priv.b, priv.c};
	static const char *const names[8] = {
		OSSL_PKEY_PARAM_RSA_N,         OSSL_PKEY_PARAM_RSA_E,         OSSL_PKEY_PARAM_RSA_D,
		OSSL_PKEY_PARAM_RSA_FACTOR1,   OSSL_PKEY_PARAM_RSA_FACTOR2,   OSSL_PKEY_PARAM_RSA_EXPONENT1,
		OSSL_PKEY_PARAM_RSA_EXPONENT2, OSSL_PKEY_PARAM_RSA_COEFFICIENT1};
	if (!(bld = OSSL_PARAM_BLD_new())) goto sslfail;
	for (int i = 0; i < 8; i++)
		if (!(bn[i] = bn_of(parts[i], i >= 2)) || !OSSL_PARAM_BLD_push_BN(bld, names[i], bn[i])) goto sslfail;
	if (!(params = OSSL_PARAM_BLD_to_param(bld))) goto sslfail;
	if (!(ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL)) || EVP_PKEY_fromdata_init(ctx) <= 0 ||
	    EVP_PKEY_fromdata(ctx, &k, EVP_PKEY_KEYPAIR, params) <= 0) {
		k = NULL;
		goto sslfail;
	}
	goto out;
sslfail:
	ma_pki_sslfail(e, "handing a generated RSA-%u key to OpenSSL failed", bits);
out:
	EVP_PKEY_CTX_free(ctx);
	OSSL_PARAM_free(params); /* the secret parts sit in the secure heap, cleared on free */
	OSSL_PARAM_BLD_free(bld);
	for (int i = 0; i < 8; i++) BN_clear_free(bn[i]);
	rsa_private_key_clear(&priv);
	rsa_public_key_clear(&pub);
	return k;
}
