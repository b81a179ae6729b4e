/* RSA key generation: the primes searched here (a sieve, OpenSSL's Fermat test, GMP's BPSW), the key
 * handed to OpenSSL as an EVP_PKEY.
 *
 * Why not OpenSSL's generator: OpenSSL 3.0's prime search spends most of its time in a constant-time
 * GCD (BN_consttime_swap, BN_gcd) and 64 Miller-Rabin rounds per prime. Why not nettle's
 * (nettle_random_prime, used before): its provable-prime construction makes a 1024-bit prime in about
 * 23 ms here, where a sieve and a probable-prime test take about 10 (README, "Choices"). Each
 * candidate that survives the sieve costs one modular exponentiation, and OpenSSL's (MULX/ADX
 * Montgomery code, a small base) is a quarter faster than GMP's mpz_powm on this machine; the one
 * candidate that passes it is then checked by GMP's mpz_probab_prime_p: Baillie-PSW and 4 more
 * Miller-Rabin rounds (on bases from GMP's own fixed-seed generator), more rounds than FIPS 186-5's
 * table B.1 asks for at these sizes (5, or 4 and a Lucas test); the search steps up from one random
 * start, as OpenSSL 1.1 and Go before 1.24 (crypto/rand.Prime) did, not FIPS's fresh candidate per
 * try. Like nettle's and GMP's, these tests are not constant-time (Go 1.24's are).
 * Everything after generation (PEM, signing, checks) is OpenSSL's, and the randomness is OpenSSL's
 * DRBG (RAND_priv_bytes). */
#include "pki_int.h"

#include <gmp.h>
#include <pthread.h>
#include <stdint.h>
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

/* GMP 6.2 made mpz_probab_prime_p a Baillie-PSW test plus reps-24 Miller-Rabin rounds; before, it was
 * Miller-Rabin alone and the count below would mean something weaker. */
#if __GNU_MP_RELEASE < 60200
#error "GMP 6.2 or later is needed (mpz_probab_prime_p's Baillie-PSW test)"
#endif

enum {
	RSA_E = 65537,
	PRIME_REPS = 28,          /* Baillie-PSW + 4 Miller-Rabin rounds (GMP 6.2's meaning of reps) */
	SIEVE_LIMIT = 1 << 18,    /* odd primes below this divide the candidates (about 23,000) */
	WINDOW = 2048,            /* odd candidates per random start: for 1024-bit primes none is prime
	                             once in ~300 starts (2048-bit: once in ~18); then a new start */
};

/* Three primes below 2^18 multiply into one unsigned long (the sieve's one division per three). */
_Static_assert(sizeof(unsigned long) >= 8, "the sieve needs a 64-bit unsigned long");

/* How a prime search failed: the DRBG or OpenSSL's arithmetic, with OpenSSL's error code (its
 * queue is the searching thread's, and the key may be finished on another). */
struct search_fail {
	const char *what; /* NULL: no failure */
	unsigned long why;
};

static void search_failed(struct search_fail *f, const char *what)
{
	f->what = what;
	f->why = ERR_peek_last_error();
	ERR_clear_error();
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

/* Bit i set: 2i+1 is composite (or 1). Made once per process, 16 KiB. */
static uint64_t odd_composite[SIEVE_LIMIT / 128];

static void small_primes_make(void)
{
	odd_composite[0] |= 1; /* 1 */
	for (unsigned i = 1; (2 * i + 1) * (2 * i + 1) < SIEVE_LIMIT; i++) {
		if (odd_composite[i / 64] >> (i % 64) & 1) continue;
		unsigned q = 2 * i + 1;
		for (unsigned m = (q * q) / 2; m < SIEVE_LIMIT / 2; m += q) odd_composite[m / 64] |= (uint64_t)1 << (m % 64);
	}
}

/* Marks, for each prime q in primes[0..n), the k < WINDOW with start + 2k divisible by q, given
 * rem = start mod (the product of the n primes). */
static void mark_multiples(uint8_t *mark, size_t window, const unsigned *primes, int n, unsigned long rem)
{
	for (int i = 0; i < n; i++) {
		unsigned long q = primes[i], r = rem % q;
		/* start + 2k = 0 (mod q): k = -r / 2 = (q - r) * (q + 1) / 2 (mod q) */
		unsigned long k = r == 0 ? 0 : (q - r) % 2 == 0 ? (q - r) / 2 : (2 * q - r) / 2;
		for (; k < window; k += q) mark[k] = 1;
	}
}

/* mark[k] = 1 where start + 2k (start odd) has an odd prime factor below SIEVE_LIMIT or is 1 mod e
 * (then e would divide p - 1 and have no inverse). Three primes of under 19 bits share one division
 * of the big number. */
static void sieve(mpz_srcptr start, uint8_t *mark, size_t window)
{
	memset(mark, 0, window);
	unsigned group[3];
	int n = 0;
	for (unsigned w = 0; w < SIEVE_LIMIT / 128; w++)
		for (uint64_t free_bits = ~odd_composite[w]; free_bits; free_bits &= free_bits - 1) {
			group[n++] = 2 * (w * 64 + (unsigned)__builtin_ctzll(free_bits)) + 1;
			if (n < 3) continue;
			mark_multiples(mark, window, group, 3,
				       mpz_fdiv_ui(start, (unsigned long)group[0] * group[1] * group[2]));
			n = 0;
		}
	unsigned long prod = 1;
	for (int i = 0; i < n; i++) prod *= group[i];
	if (n) mark_multiples(mark, window, group, n, mpz_fdiv_ui(start, prod));
	unsigned long r = mpz_fdiv_ui(start, RSA_E), want = (1 + RSA_E - r) % RSA_E; /* start + 2k = 1 */
	for (unsigned long k = want % 2 == 0 ? want / 2 : (want + RSA_E) / 2; k < window; k += RSA_E) mark[k] = 1;
}

/* Once per process, before the first search: GMP's wiping heap and the small primes. */
static pthread_once_t setup_once = PTHREAD_ONCE_INIT;

static void setup(void)
{
	mp_set_memory_functions(gmp_alloc, gmp_realloc, gmp_free);
	small_primes_make();
}

int ma_pki_rsa_sieve(const unsigned char *start, size_t len, unsigned char *mark, size_t window)
{
	pthread_once(&setup_once, setup);
	mpz_t s;
	mpz_init(s);
	mpz_import(s, len, 1, 1, 1, 0, start);
	int odd = mpz_odd_p(s);
	if (odd) sieve(s, mark, window);
	mpz_clear(s);
	return odd ? 0 : -1;
}

/* A random prime of `bits` bits with its two top bits set (so the product of two has exactly the
 * bits of both) and p mod e != 1 (so gcd(p - 1, e) = 1): a random odd start, the sieve over the next
 * WINDOW odd numbers, a Fermat test to base 2 on each survivor in turn, GMP's test on the first that
 * passes. Returns 0, or -1 with f set. */
static int search_prime(mpz_t p, unsigned bits, struct search_fail *f)
{
	size_t len = (bits + 7) / 8;
	unsigned char *buf = OPENSSL_secure_malloc(len);
	uint8_t mark[WINDOW];
	mpz_t start;
	mpz_init(start);
	BN_CTX *ctx = BN_CTX_secure_new();
	BIGNUM *cand = BN_secure_new(), *less1 = BN_secure_new(), *r = BN_secure_new();
	int rc = -1;
	ERR_clear_error(); /* so a failure's reason is this search's, not an older one's on the thread */
	if (!buf || !ctx || !cand || !less1 || !r) {
		search_failed(f, "out of memory");
		goto out;
	}
	for (;;) {
		if (RAND_priv_bytes(buf, (int)len) != 1) {
			search_failed(f, "the random generator failed");
			goto out;
		}
		mpz_import(start, len, 1, 1, 1, 0, buf);
		mpz_fdiv_r_2exp(start, start, bits);
		mpz_setbit(start, bits - 1);
		mpz_setbit(start, bits - 2);
		mpz_setbit(start, 0);
		sieve(start, mark, WINDOW);
		size_t n;
		mpz_export(buf, &n, 1, 1, 1, 0, start);
		if (!BN_bin2bn(buf, (int)n, cand)) goto bnfail;
		unsigned at = 0; /* cand = start + 2 at */
		for (unsigned k = 0; k < WINDOW; k++) {
			if (mark[k]) continue;
			if (!BN_add_word(cand, 2 * (BN_ULONG)(k - at))) goto bnfail;
			at = k;
			if ((unsigned)BN_num_bits(cand) != bits) break; /* ran past 2^bits: a new start */
			if (!BN_copy(less1, cand) || !BN_sub_word(less1, 1) ||
			    !BN_mod_exp_mont_word(r, 2, less1, cand, ctx, NULL))
				goto bnfail;
			if (!BN_is_one(r)) continue;
			mpz_add_ui(p, start, 2 * (unsigned long)k);
			if (mpz_probab_prime_p(p, PRIME_REPS)) {
				rc = 0;
				goto out;
			}
		}
	}
bnfail:
	search_failed(f, "OpenSSL's big-number arithmetic failed");
out:
	OPENSSL_cleanse(mark, sizeof mark); /* the start's residues: they tell about the prime */
	if (buf) OPENSSL_secure_clear_free(buf, len);
	BN_clear_free(cand);
	BN_clear_free(less1);
	BN_clear_free(r);
	BN_CTX_free(ctx);
	mpz_clear(start);
	return rc;
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

/* One key as two independent prime searches, so a batch spreads over the cores by prime, not by
 * key: 5 keys on 2 cores are 10 searches of about equal cost, not 3 keys on one core and 2 on the
 * other, and a batch of one key waits for the slower search only (about 3/4 of both).
 * d = e^-1 mod (p-1)(q-1), as nettle's rsa_generate_keypair makes it. */
struct ma_pki_rsa_job {
	unsigned bits;
	mpz_t prime[2]; /* p, q */
	struct search_fail fail[2];
};

ma_pki_rsa_job *ma_pki_rsa_job_new(unsigned bits, ma_err *e)
{
	pthread_once(&setup_once, setup);
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
	search_prime(j->prime[which], which ? j->bits / 2 : (j->bits + 1) / 2, &j->fail[which]);
}

void ma_pki_rsa_job_free(ma_pki_rsa_job *j)
{
	if (!j) return;
	mpz_clear(j->prime[0]); /* wiped: gmp_free */
	mpz_clear(j->prime[1]);
	free(j);
}

/* FIPS 186-5 A.1.3's |p - q| > 2^(bits/2 - 100): p and q not so close that n falls to Fermat's
 * factoring (one chance in about 2^100 for independent primes; p = q is its extreme). */
static int too_close(mpz_srcptr p, mpz_srcptr q, unsigned bits)
{
	mpz_t diff, limit;
	mpz_inits(diff, limit, NULL);
	mpz_sub(diff, p, q);
	mpz_abs(diff, diff);
	mpz_setbit(limit, bits / 2 - 100);
	int close = mpz_cmp(diff, limit) <= 0;
	mpz_clears(diff, limit, NULL);
	return close;
}

/* The key of a job whose two primes are found. */
EVP_PKEY *ma_pki_rsa_job_finish(ma_pki_rsa_job *j, ma_err *e)
{
	unsigned bits = j->bits;
	while (!j->fail[0].what && !j->fail[1].what && too_close(j->prime[0], j->prime[1], bits))
		ma_pki_rsa_job_prime(j, 1);
	if (j->fail[0].what || j->fail[1].what) {
		const struct search_fail *f = j->fail[0].what ? &j->fail[0] : &j->fail[1];
		const char *reason = f->why ? ERR_reason_error_string(f->why) : NULL;
		ma_fail(e, "generating an RSA-%u key failed: %s%s%s", bits, f->what, reason ? ": " : "", reason ? reason : "");
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
	/* each holds for distinct primes with p, q != 1 (mod e) and their top bits set */
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
