/* RSA key generation through nettle/hogweed on GMP, handed to OpenSSL as an EVP_PKEY.
 *
 * Why not OpenSSL: OpenSSL 3.0's prime search spends most of its time in a constant-time GCD
 * (BN_consttime_swap, BN_gcd); nettle's provable-prime generator on GMP finds an RSA-2048 key's primes
 * in about a fifth of the CPU time on the same machine (bench/: "limit: one RSA-2048 key, 1 core").
 * Everything after generation (PEM, signing, checks) stays OpenSSL's, and the randomness is
 * OpenSSL's DRBG (RAND_priv_bytes), so the keys come from the same source as before. */
#include "pki_int.h"

#include <gmp.h>
#include <pthread.h>
#include <nettle/bignum.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/param_build.h>
#include <openssl/rand.h>

enum { RSA_E = 65537 };

struct rng {
	int failed;
	unsigned long why; /* OpenSSL's error code of the failure (its queue is the searching thread's) */
	uint32_t filler;
};

/* nettle's random callback cannot fail: a DRBG failure is recorded and the key thrown away. */
static void drbg(void *ctx, size_t len, uint8_t *dst)
{
	struct rng *r = ctx;
	while (len > 0) {
		int n = len > (1 << 20) ? (1 << 20) : (int)len;
		if (r->failed || RAND_priv_bytes(dst, n) != 1) {
			if (!r->failed) {
				r->why = ERR_peek_last_error();
				ERR_clear_error(); /* this thread's queue: the key may be finished on another */
			}
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

/* One key as two independent prime searches, so a batch spreads over the cores by prime, not by
 * key: 5 keys on 2 cores are 10 searches of about equal cost, not 3 keys on one core and 2 on the
 * other, and a batch of one key waits for the slower search only (about 3/4 of both). The primes are chosen as nettle's
 * rsa_generate_keypair chooses them: nettle_random_prime with the two top bits set (so p*q has
 * exactly `bits` bits), gcd(p-1, e) = 1, p != q; d = e^-1 mod (p-1)(q-1). */
struct ma_pki_rsa_job {
	unsigned bits;
	mpz_t prime[2]; /* p, q */
	struct rng rng[2];
};

ma_pki_rsa_job *ma_pki_rsa_job_new(unsigned bits, ma_err *e)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, gmp_wiping);
	if (bits < 1024 || bits > 16384) {
		ma_fail(e, "an RSA key of %u bits: moonadm makes 1024 to 16384", bits);
		return NULL;
	}
	ma_pki_rsa_job *j = calloc(1, sizeof *j);
	if (!j) {
		ma_fail(e, "out of memory");
		return NULL;
	}
	j->bits = bits;
	mpz_init(j->prime[0]);
	mpz_init(j->prime[1]);
	return j;
}

void ma_pki_rsa_job_prime(ma_pki_rsa_job *j, int which)
{
	unsigned size = which ? j->bits / 2 : (j->bits + 1) / 2;
	mpz_t less1;
	mpz_init(less1);
	do {
		nettle_random_prime(j->prime[which], size, 1, &j->rng[which], drbg, NULL, NULL);
		mpz_sub_ui(less1, j->prime[which], 1);
	} while (!j->rng[which].failed && mpz_gcd_ui(NULL, less1, RSA_E) != 1);
	mpz_clear(less1);
}

void ma_pki_rsa_job_free(ma_pki_rsa_job *j)
{
	if (!j) return;
	mpz_clear(j->prime[0]); /* wiped: gmp_free */
	mpz_clear(j->prime[1]);
	free(j);
}

/* The key of a job whose two primes are found. */
EVP_PKEY *ma_pki_rsa_job_finish(ma_pki_rsa_job *j, ma_err *e)
{
	unsigned bits = j->bits;
	/* equal primes: one chance in about 2^1000, yet a key with p = q would be worthless */
	while (!j->rng[0].failed && !j->rng[1].failed && !mpz_cmp(j->prime[0], j->prime[1])) ma_pki_rsa_job_prime(j, 1);
	if (j->rng[0].failed || j->rng[1].failed) {
		unsigned long why = j->rng[0].failed ? j->rng[0].why : j->rng[1].why;
		const char *reason = why ? ERR_reason_error_string(why) : NULL;
		ma_fail(e, "generating an RSA-%u key failed: the random generator failed%s%s", bits, reason ? ": " : "",
			reason ? reason : "");
		return NULL;
	}
	mpz_t n, ee, d, p1, q1, phi, a, b, c;
	mpz_inits(n, ee, d, p1, q1, phi, a, b, c, NULL);
	mpz_srcptr p = j->prime[0], q = j->prime[1];
	mpz_set_ui(ee, RSA_E);
	mpz_mul(n, p, q);
	mpz_sub_ui(p1, p, 1);
	mpz_sub_ui(q1, q, 1);
	mpz_mul(phi, p1, q1);
	EVP_PKEY *k = NULL;
	BIGNUM *bn[8] = {0};
	OSSL_PARAM_BLD *bld = NULL;
	OSSL_PARAM *params = NULL;
	EVP_PKEY_CTX *ctx = NULL;
	/* each holds for distinct primes with gcd(p-1, e) = gcd(q-1, e) = 1 and their top bits set */
	if (mpz_sizeinbase(n, 2) != bits || !mpz_invert(c, q, p) || !mpz_invert(d, ee, phi)) {
		ma_fail(e, "generating an RSA-%u key failed: the primes found do not make a key", bits);
		goto out;
	}
	mpz_fdiv_r(a, d, p1);
	mpz_fdiv_r(b, d, q1);
	/* PKCS#1's exponent1 = d mod (p-1), exponent2 = d mod (q-1), coefficient = q^-1 mod p */
	const mpz_srcptr parts[8] = {n, ee, d, p, q, a, b, c};
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
	mpz_clears(n, ee, d, p1, q1, phi, a, b, c, NULL);
	return k;
}

EVP_PKEY *ma_pki_rsa_generate(unsigned bits, ma_err *e)
{
	ma_pki_rsa_job *j = ma_pki_rsa_job_new(bits, e);
	if (!j) return NULL;
	ma_pki_rsa_job_prime(j, 0);
	ma_pki_rsa_job_prime(j, 1);
	EVP_PKEY *k = ma_pki_rsa_job_finish(j, e);
	ma_pki_rsa_job_free(j);
	return k;
}
