/* RSA key generation to FIPS 186-5's rules (SECURITY.md, "Key generation"), or OpenSSL's own generator.
 *
 * moonadm's generator (the default) searches each prime as FIPS 186-5 A.1.3 asks of a probable prime:
 * nlen >= 2048, e = 65537, p > sqrt(2) 2^(nlen/2 - 1), gcd(p - 1, e) = 1, the Miller-Rabin test of B.3.1
 * on bases drawn from the DRBG with table B.1's rounds, |p - q| > 2^(nlen/2 - 100). Its candidates come
 * upwards from one random start rather than as a fresh random number per try: a sieve of the 2048 odd
 * numbers from the start (its top two bits set: above the sqrt(2) bound) by the odd primes below 2^18
 * (2^21 for primes of 1536 bits and more) and by 1 mod e, then the Miller-Rabin rounds on each survivor
 * in turn, whose first round rejects nearly every composite. That is Brandt and Damgard's incremental
 * search (CRYPTO '92; OpenSSL 1.1's and Go's before 1.24): the tests' error bounds hold for it, and it
 * prefers primes after long gaps, a loss of a few bits of each prime's entropy; a fresh candidate per
 * try measured a third slower for RSA-2048. Every exponentiation on a survivor of the sieve is OpenSSL's
 * constant-time one (BN_mod_exp_mont_consttime); the sieve (the start's residues, the marks they place)
 * and the number of candidates tried are not hidden from a local observer. The key is then derived as
 * SP 800-56B Rev. 2's rsakpg1-crt (6.3.1.3) derives it, with OpenSSL's constant-time GCD, division and
 * inverse: d = e^-1 mod LCM(p - 1, q - 1), new primes if d <= 2^(nlen/2) (FIPS 186-5 5.1 wants
 * 2^(nlen/2) < d < LCM(p - 1, q - 1)). The randomness is OpenSSL's DRBG (RAND_priv_bytes).
 *
 * OpenSSL's generator (ma_pki_rsa_generator_set "openssl", MOONADM_RSA_GENERATOR=openssl, and by itself
 * in FIPS mode) is EVP_PKEY_Q_keygen: in OpenSSL 3.0, SP 800-56B's generator with FIPS 186-4's auxiliary
 * primes, about 8.5 times slower (64 Miller-Rabin rounds and a constant-time GCD per candidate).
 *
 * Every key, from either, passes ma_pki_rsa_check (the bounds on d and SP 800-56B's pair-wise
 * consistency test) before anyone sees it. */
#include "pki_int.h"
#include "testhooks.h"

#include <gmp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
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

enum {
	RSA_E = 65537,
	MIN_BITS = 2048,          /* FIPS 186-5 5.1, A.1.1: nlen >= 2048 */
	MAX_BITS = 16384,
	SIEVE_SMALL = 1 << 18,    /* the sieve's primes for primes under 1536 bits: about 23,000 */
	SIEVE_LARGE = 1 << 21,    /* and for larger ones, whose exponentiations cost more: about 155,000 */
	WINDOW = 2048,            /* odd candidates per random start: for 1024-bit primes none is prime
	                             once in ~300 starts (2048-bit: once in ~18); then a new start */
};

/* Three primes below 2^21 multiply into one unsigned long (the sieve's one division per three). */
_Static_assert(sizeof(unsigned long) >= 8 && SIEVE_LARGE <= 1 << 21, "the sieve needs a 64-bit unsigned long");

/* The names of a key's parts, in the order every part[] array here holds them. */
static const char *const part_names[8] = {
	OSSL_PKEY_PARAM_RSA_N,         OSSL_PKEY_PARAM_RSA_E,         OSSL_PKEY_PARAM_RSA_D,
	OSSL_PKEY_PARAM_RSA_FACTOR1,   OSSL_PKEY_PARAM_RSA_FACTOR2,   OSSL_PKEY_PARAM_RSA_EXPONENT1,
	OSSL_PKEY_PARAM_RSA_EXPONENT2, OSSL_PKEY_PARAM_RSA_COEFFICIENT1};
enum { N, E, D, P, Q, DP, DQ, QINV };

/* ---- which generator ------------------------------------------------------------------------------ */

static pthread_mutex_t gen_mu = PTHREAD_MUTEX_INITIALIZER;
static int gen_state;           /* 0: not chosen yet; 1: moonadm's; 2: OpenSSL's; -1: gen_err says why not */
static char gen_why[160];
static ma_err gen_err;

/* FIPS mode, by the kernel (fips=1 on its command line) or by OpenSSL's configuration (default
 * properties fips=yes, openssl.cnf): then the keys are OpenSSL's (its FIPS provider's, when configured). */
static int fips_mode(char *why, size_t n)
{
	FILE *f = fopen("/proc/sys/crypto/fips_enabled", "re");
	int c = f ? fgetc(f) : EOF;
	if (f) fclose(f);
	if (c == '1' || MA_HOOK_FIPS()) {
		snprintf(why, n, "FIPS mode: /proc/sys/crypto/fips_enabled is 1");
		return 1;
	}
	if (EVP_default_properties_is_fips_enabled(NULL)) {
		snprintf(why, n, "FIPS mode: OpenSSL's default properties ask for fips=yes");
		return 1;
	}
	return 0;
}

/* Called with gen_mu held. source: "--rsa-generator" (a flag: "--rsa-generator openssl" in messages) or
 * an environment variable's name ("MOONADM_RSA_GENERATOR=openssl"). */
static int choose(const char *name, const char *source, ma_err *e)
{
	char fips[96];
	const char *sep = source[0] == '-' ? " " : "=";
	int own;
	if (!name || !*name) {
		own = -1; /* not asked */
	} else if (!strcmp(name, "moonadm")) {
		own = 1;
	} else if (!strcmp(name, "openssl")) {
		own = 0;
	} else {
		ma_fail(&gen_err, "%s%s%s: the RSA key generator is moonadm or openssl", source, sep, name);
		gen_state = -1;
		if (e) *e = gen_err;
		return -1;
	}
	if (fips_mode(fips, sizeof fips)) {
		if (own == 1) {
			ma_fail(&gen_err, "%s%s%s: %s, where RSA keys come from OpenSSL's generator (give openssl, or "
				"nothing)", source, sep, name, fips);
			gen_state = -1;
			if (e) *e = gen_err;
			return -1;
		}
		gen_state = 2;
		snprintf(gen_why, sizeof gen_why, "%s", fips);
		return 0;
	}
	gen_state = own == 0 ? 2 : 1;
	if (own < 0) snprintf(gen_why, sizeof gen_why, "the default");
	else snprintf(gen_why, sizeof gen_why, "%s%s%s", source, sep, name);
	return 0;
}

int ma_pki_rsa_generator_set(const char *name, const char *source, ma_err *e)
{
	pthread_mutex_lock(&gen_mu);
	if (!name) name = getenv("MOONADM_RSA_GENERATOR"), source = "MOONADM_RSA_GENERATOR";
	int rc = choose(name, source && *source ? source : "the RSA generator", e);
	pthread_mutex_unlock(&gen_mu);
	return rc;
}

/* 1: moonadm's, 2: OpenSSL's, -1 (e set): the setting is wrong. */
static int generator(const char **name, const char **why, ma_err *e)
{
	pthread_mutex_lock(&gen_mu);
	if (!gen_state) {
		const char *env = getenv("MOONADM_RSA_GENERATOR");
		choose(env, "MOONADM_RSA_GENERATOR", NULL);
	}
	int s = gen_state;
	if (s < 0 && e) *e = gen_err;
	if (name) *name = s == 1 ? "moonadm" : s == 2 ? "openssl" : NULL;
	if (why) *why = s > 0 ? gen_why : NULL;
	pthread_mutex_unlock(&gen_mu);
	return s;
}

const char *ma_pki_rsa_generator(const char **why, ma_err *e)
{
	const char *name;
	generator(&name, why, e);
	return name;
}

int ma_pki_rsa_own_generator(ma_err *e)
{
	int s = generator(NULL, NULL, e);
	return s < 0 ? -1 : s == 1;
}

/* ---- the prime search ----------------------------------------------------------------------------- */

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

/* GMP's heap (the search's random start and the temporaries it allocates; small ones live on the stack
 * and are not wiped) is wiped when freed or moved: this process's GMP is moonadm's own (linked
 * statically, and the executable exports no GMP symbol), so nothing else sees these functions. */
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

/* The sieve's bound for primes of `bits` bits, near where one more division of the start by three
 * small primes costs what the exponentiations it spares cost (README, "Choices"). */
static unsigned sieve_limit(unsigned bits)
{
	return bits < 1536 ? SIEVE_SMALL : SIEVE_LARGE;
}

/* Bit i set: 2i+1 is composite (or 1). Made up to SIEVE_SMALL once per process (16 KiB), the rest up
 * to SIEVE_LARGE (112 KiB more) before the first search for a prime that needs it. */
static uint64_t odd_composite[SIEVE_LARGE / 128];

/* Marks the odd composites in [from, to); the primes below sqrt(to) must be known (from = 0, or
 * sqrt(to) < from). */
static void small_primes_mark(unsigned from, unsigned to)
{
	if (!from) odd_composite[0] |= 1; /* 1 */
	for (unsigned i = 1; (2 * i + 1) * (2 * i + 1) < to; i++) {
		if (odd_composite[i / 64] >> (i % 64) & 1) continue;
		unsigned q = 2 * i + 1, first = q * q < from ? (from + q - 1) / q * q : q * q;
		if (first % 2 == 0) first += q;
		for (unsigned m = first / 2; m < to / 2; m += q) odd_composite[m / 64] |= (uint64_t)1 << (m % 64);
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

/* mark[k] = 1 where start + 2k (start odd) has an odd prime factor below limit or is 1 mod e
 * (then e would divide p - 1: FIPS 186-5 A.1.3 step 4.4 wants gcd(p - 1, e) = 1, and e is prime).
 * Three primes of under 21 bits share one division of the big number. */
static void sieve(mpz_srcptr start, uint8_t *mark, size_t window, unsigned limit)
{
	memset(mark, 0, window);
	unsigned group[3];
	int n = 0;
	for (unsigned w = 0; w < limit / 128; w++)
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

/* Once per process, before the first search: GMP's wiping heap and the small primes; the larger
 * ones before the first search of a prime of 1536 bits or more. */
static pthread_once_t setup_once = PTHREAD_ONCE_INIT, large_once = PTHREAD_ONCE_INIT;

static void setup(void)
{
	mp_set_memory_functions(gmp_alloc, gmp_realloc, gmp_free);
	small_primes_mark(0, SIEVE_SMALL);
}

static void setup_large(void)
{
	small_primes_mark(SIEVE_SMALL, SIEVE_LARGE);
}

int ma_pki_rsa_sieve(const unsigned char *start, size_t len, unsigned char *mark, size_t window)
{
	pthread_once(&setup_once, setup);
	mpz_t s;
	mpz_init(s);
	mpz_import(s, len, 1, 1, 1, 0, start);
	int odd = mpz_odd_p(s);
	if (odd) sieve(s, mark, window, SIEVE_SMALL);
	mpz_clear(s);
	return odd ? 0 : -1;
}

/* FIPS 186-5 table B.1, Miller-Rabin tests only, the right-hand column (an error probability of at most
 * 2^-112 for 1024-bit primes, 2^-128 for 1536 and 2^-144 for 2048): 5, 4, 4 rounds. Larger primes
 * need fewer; 4 stays. */
static int mr_rounds(int bits)
{
	return bits < 1536 ? 5 : 4;
}

/* FIPS 186-5 B.3.1, the Miller-Rabin test: `rounds` rounds on w (odd, > 3), each on a base b drawn from
 * the DRBG (steps 4.1-4.2: uniform on [2, w - 2]). b^m mod w (step 4.3) is OpenSSL's constant-time
 * exponentiation, the squarings (step 4.5) Montgomery multiplications. Returns 1 (probably prime),
 * 0 (composite), -1 (OpenSSL or the DRBG failed). */
static int miller_rabin(const BIGNUM *w, int rounds, BN_CTX *ctx)
{
	int rc = -1;
	BN_MONT_CTX *mont = BN_MONT_CTX_new();
	BN_CTX_start(ctx);
	BIGNUM *w1 = BN_CTX_get(ctx), *range = BN_CTX_get(ctx), *m = BN_CTX_get(ctx), *b = BN_CTX_get(ctx),
	       *z = BN_CTX_get(ctx), *one = BN_CTX_get(ctx), *minus1 = BN_CTX_get(ctx);
	if (!mont || !minus1) goto out;
	/* steps 1-2: w - 1 = 2^a m, m odd */
	if (!BN_sub(w1, w, BN_value_one())) goto out;
	int a = 1;
	while (!BN_is_bit_set(w1, a)) a++;
	if (!BN_rshift(m, w1, a) || !BN_copy(range, w) || !BN_sub_word(range, 3) || !BN_MONT_CTX_set(mont, w, ctx) ||
	    !BN_to_montgomery(one, BN_value_one(), mont, ctx) || !BN_to_montgomery(minus1, w1, mont, ctx))
		goto out;
	rc = 1;
	for (int i = 0; i < rounds && rc == 1; i++) {
		if (!BN_priv_rand_range(b, range) || !BN_add_word(b, 2) ||     /* 4.1, 4.2 */
		    !BN_mod_exp_mont_consttime(z, b, m, w, ctx, mont) ||    /* 4.3 */
		    !BN_to_montgomery(z, z, mont, ctx)) {
			rc = -1;
			break;
		}
		if (!BN_cmp(z, one) || !BN_cmp(z, minus1)) continue;        /* 4.4 */
		rc = 0;                                                      /* 4.6 unless 4.5 finds w - 1 */
		for (int j = 1; j < a && rc == 0; j++) {                     /* 4.5 */
			if (!BN_mod_mul_montgomery(z, z, z, mont, ctx)) rc = -1;
			else if (!BN_cmp(z, minus1)) rc = 1;                 /* 4.5.2 */
			else if (!BN_cmp(z, one)) break;                     /* 4.5.3 */
		}
	}
out:
	BN_CTX_end(ctx);
	BN_MONT_CTX_free(mont);
	return rc;
}

/* A random prime p of `bits` bits (FIPS 186-5 A.1.3 step 4, the candidates searched upwards from a
 * random start as the comment at the top says): its two top bits set (so p > sqrt(2) 2^(bits - 1),
 * step 4.3, and a product of two has exactly the bits of both), p mod e != 1 (step 4.4), Miller-Rabin
 * rounds per table B.1 (step 4.5). Returns 0, or -1 with f set. */
static int search_prime(BIGNUM *p, unsigned bits, struct search_fail *f)
{
	size_t len = (bits + 7) / 8;
	unsigned char *buf = OPENSSL_secure_malloc(len);
	uint8_t mark[WINDOW];
	mpz_t start;
	mpz_init(start);
	BN_CTX *ctx = BN_CTX_secure_new();
	int rc = -1, rounds = mr_rounds((int)bits);
	unsigned limit = sieve_limit(bits);
	if (limit > SIEVE_SMALL) pthread_once(&large_once, setup_large);
	ERR_clear_error(); /* so a failure's reason is this search's, not an older one's on the thread */
	if (!buf || !ctx) {
		search_failed(f, "out of memory");
		goto out;
	}
	BN_set_flags(p, BN_FLG_CONSTTIME);
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
		sieve(start, mark, WINDOW, limit);
		size_t n;
		mpz_export(buf, &n, 1, 1, 1, 0, start);
		if (!BN_bin2bn(buf, (int)n, p)) goto bnfail;
		unsigned at = 0; /* p = start + 2 at */
		for (unsigned k = 0; k < WINDOW; k++) {
			if (mark[k]) continue;
			if (!BN_add_word(p, 2 * (BN_ULONG)(k - at))) goto bnfail;
			at = k;
			if ((unsigned)BN_num_bits(p) != bits) break; /* ran past 2^bits: a new start */
			int r = miller_rabin(p, rounds, ctx);
			if (r < 0) goto bnfail;
			if (r) {
				rc = 0;
				goto out;
			}
		}
	}
bnfail:
	search_failed(f, "OpenSSL's big-number arithmetic or the random generator failed");
out:
	OPENSSL_cleanse(mark, sizeof mark); /* the start's residues: they tell about the prime */
	if (buf) OPENSSL_secure_clear_free(buf, len);
	BN_CTX_free(ctx);
	mpz_clear(start);
	return rc;
}

/* ---- the key -------------------------------------------------------------------------------------- */

/* lcm = LCM(p - 1, q - 1), with p1 = p - 1, q1 = q - 1 (OpenSSL's constant-time GCD and, as every value
 * here carries BN_FLG_CONSTTIME, division). 1, or 0 when OpenSSL failed. */
static int lcm_of(BIGNUM *lcm, BIGNUM *p1, BIGNUM *q1, const BIGNUM *p, const BIGNUM *q, BN_CTX *ctx)
{
	BN_CTX_start(ctx);
	BIGNUM *g = BN_CTX_get(ctx), *prod = BN_CTX_get(ctx);
	int ok = prod != NULL;
	if (ok) {
		BN_set_flags(g, BN_FLG_CONSTTIME);
		BN_set_flags(prod, BN_FLG_CONSTTIME);
		ok = BN_sub(p1, p, BN_value_one()) && BN_sub(q1, q, BN_value_one()) && BN_mul(prod, p1, q1, ctx) &&
		     BN_gcd(g, p1, q1, ctx) && BN_div(lcm, NULL, prod, g, ctx);
	}
	BN_CTX_end(ctx);
	return ok;
}

/* Fresh BIGNUMs for a key's parts, the private ones in the secure heap and constant-time. */
static int parts_new(BIGNUM *part[8])
{
	for (int i = 0; i < 8; i++) {
		if (!(part[i] = i >= D ? BN_secure_new() : BN_new())) return 0;
		if (i >= D) BN_set_flags(part[i], BN_FLG_CONSTTIME);
	}
	return 1;
}

static void parts_free(BIGNUM *part[8])
{
	for (int i = 0; i < 8; i++) BN_clear_free(part[i]), part[i] = NULL;
}

/* SP 800-56B Rev. 2, 6.3.1.3 (rsakpg1-crt) steps 3-5 on p and q, as OpenSSL's own FIPS provider derives
 * them: d = e^-1 mod LCM(p - 1, q - 1), dP = d mod (p - 1), dQ = d mod (q - 1), qInv = q^-1 mod p.
 * Returns 1; 0 when d <= 2^(nlen/2) (step 3: new primes; FIPS 186-5 5.1 wants 2^(nlen/2) < d); -1 when
 * OpenSSL failed. */
static int derive(BIGNUM *part[8], const BIGNUM *p, const BIGNUM *q, unsigned bits, BN_CTX *ctx)
{
	int rc = -1;
	BN_CTX_start(ctx);
	BIGNUM *p1 = BN_CTX_get(ctx), *q1 = BN_CTX_get(ctx), *lcm = BN_CTX_get(ctx);
	if (!lcm) goto out;
	BN_set_flags(p1, BN_FLG_CONSTTIME);
	BN_set_flags(q1, BN_FLG_CONSTTIME);
	BN_set_flags(lcm, BN_FLG_CONSTTIME);
	if (!BN_mul(part[N], p, q, ctx) || !BN_set_word(part[E], RSA_E) || !BN_copy(part[P], p) || !BN_copy(part[Q], q) ||
	    !lcm_of(lcm, p1, q1, p, q, ctx) || !BN_mod_inverse(part[D], part[E], lcm, ctx))
		goto out;
	rc = 0;
	if (BN_num_bits(part[D]) <= (int)bits / 2) goto out; /* d odd, so d != 2^(nlen/2) */
	rc = -1;
	if (!BN_mod(part[DP], part[D], p1, ctx) || !BN_mod(part[DQ], part[D], q1, ctx) ||
	    !BN_mod_inverse(part[QINV], part[Q], part[P], ctx))
		goto out;
	rc = 1;
out:
	BN_CTX_end(ctx);
	return rc;
}

/* SP 800-56B Rev. 2, 6.3.1.3 step 6, the pair-wise consistency test: k = (k^e)^d mod n for a random
 * 1 < k < n - 1, the private half computed as OpenSSL and Go compute a private operation, by the CRT
 * values (constant-time exponentiations mod p and mod q, Garner's recombination with qInv), which are
 * checked against d (dP = d mod (p - 1), dQ = d mod (q - 1)): then k^(ed) = k mod p and mod q, hence mod
 * n = pq, which is checked too. So a fault in any part fails it. 1 passed, 0 failed, -1 OpenSSL failed. */
static int pairwise(BIGNUM *const part[8], const BIGNUM *p1, const BIGNUM *q1, BN_CTX *ctx)
{
	int rc = -1;
	BN_CTX_start(ctx);
	BIGNUM *t = BN_CTX_get(ctx), *k = BN_CTX_get(ctx), *c = BN_CTX_get(ctx), *mp = BN_CTX_get(ctx),
	       *mq = BN_CTX_get(ctx);
	if (!mq) goto out;
	BN_set_flags(t, BN_FLG_CONSTTIME);
	BN_set_flags(mp, BN_FLG_CONSTTIME);
	BN_set_flags(mq, BN_FLG_CONSTTIME);
	if (!BN_mul(t, part[P], part[Q], ctx)) goto out;
	rc = 0;
	if (BN_cmp(t, part[N])) goto out;
	rc = -1;
	if (!BN_mod(t, part[D], p1, ctx)) goto out;
	rc = 0;
	if (BN_cmp(t, part[DP])) goto out;
	rc = -1;
	if (!BN_mod(t, part[D], q1, ctx)) goto out;
	rc = 0;
	if (BN_cmp(t, part[DQ])) goto out;
	rc = -1;
	if (!BN_copy(t, part[N]) || !BN_sub_word(t, 3) || !BN_priv_rand_range(k, t) || !BN_add_word(k, 2) ||
	    !BN_mod_exp_mont(c, k, part[E], part[N], ctx, NULL) ||
	    !BN_mod(t, c, part[P], ctx) || !BN_mod_exp_mont_consttime(mp, t, part[DP], part[P], ctx, NULL) ||
	    !BN_mod(t, c, part[Q], ctx) || !BN_mod_exp_mont_consttime(mq, t, part[DQ], part[Q], ctx, NULL) ||
	    !BN_mod_sub(t, mp, mq, part[P], ctx) || !BN_mod_mul(t, t, part[QINV], part[P], ctx) ||
	    !BN_mul(t, t, part[Q], ctx) || !BN_add(t, t, mq))
		goto out;
	rc = BN_cmp(t, k) == 0;
out:
	BN_CTX_end(ctx);
	return rc;
}

/* Flips the lowest bit of the part MOONADM_RSA_FAULT names, in a hooked build (engine/testhooks.h). */
static void fault(BIGNUM *part[8])
{
	const char *which = MA_HOOK_RSA_FAULT();
	static const char *const names[8] = {"n", "e", "d", "p", "q", "dp", "dq", "qinv"};
	for (int i = 0; which && i < 8; i++)
		if (!strcmp(which, names[i])) {
			if (BN_is_bit_set(part[i], 0)) BN_clear_bit(part[i], 0);
			else BN_set_bit(part[i], 0);
		}
}

int ma_pki_rsa_check(const EVP_PKEY *k, ma_err *e)
{
	BIGNUM *part[8] = {0};
	BN_CTX *ctx = BN_CTX_secure_new();
	int bits = EVP_PKEY_get_bits(k), rc = -1;
	const char *bad = NULL;
	if (!ctx) {
		ma_fail(e, "out of memory");
		goto out;
	}
	if (!parts_new(part)) goto sslfail;
	for (int i = 0; i < 8; i++)
		if (EVP_PKEY_get_bn_param(k, part_names[i], &part[i]) != 1) {
			ma_pki_sslfail(e, "checking an RSA-%d key: it has no %s", bits, part_names[i]);
			goto out;
		}
	fault(part);
	BN_CTX_start(ctx);
	BIGNUM *p1 = BN_CTX_get(ctx), *q1 = BN_CTX_get(ctx), *lcm = BN_CTX_get(ctx);
	int r = -1;
	if (lcm) {
		BN_set_flags(p1, BN_FLG_CONSTTIME);
		BN_set_flags(q1, BN_FLG_CONSTTIME);
		BN_set_flags(lcm, BN_FLG_CONSTTIME);
		if (lcm_of(lcm, p1, q1, part[P], part[Q], ctx)) {
			/* FIPS 186-5 5.1 and A.1.1 (SP 800-56B 6.2.1): 2^(nlen/2) < d < LCM(p - 1, q - 1) */
			if (BN_cmp(part[D], lcm) >= 0) bad = "d is not below LCM(p - 1, q - 1) (FIPS 186-5, 5.1)", r = 0;
			else if (BN_num_bits(part[D]) <= bits / 2) bad = "d is not above 2^(nlen/2) (FIPS 186-5, 5.1)", r = 0;
			else if (!(r = pairwise(part, p1, q1, ctx)))
				bad = "it fails the pair-wise consistency test (SP 800-56B, 6.3.1.3 step 6)";
		}
	}
	BN_CTX_end(ctx);
	if (r < 0) goto sslfail;
	if (bad) {
		ma_fail(e, "an RSA-%d key made here is refused: %s", bits, bad);
		goto out;
	}
	rc = 0;
	goto out;
sslfail:
	ma_pki_sslfail(e, "checking an RSA-%d key failed", bits);
out:
	parts_free(part);
	BN_CTX_free(ctx);
	return rc;
}

/* One key as two independent prime searches, so a batch spreads over the cores by prime, not by
 * key: 5 keys on 2 cores are 10 searches of about equal cost, not 3 keys on one core and 2 on the
 * other, and a batch of one key waits for the slower search only (about 3/4 of both). */
struct ma_pki_rsa_job {
	unsigned bits;
	BIGNUM *prime[2]; /* p, q */
	struct search_fail fail[2];
};

/* FIPS 186-5 5.1, A.1.1: nlen of 2048 bits or more (this C floor holds whatever a caller asks). */
static int size_ok(unsigned bits, ma_err *e)
{
	if (bits >= MIN_BITS && bits <= MAX_BITS) return 1;
	ma_fail(e, "an RSA key of %u bits: moonadm makes %d to %d (FIPS 186-5 wants at least 2048)", bits, MIN_BITS,
		MAX_BITS);
	return 0;
}

ma_pki_rsa_job *ma_pki_rsa_job_new(unsigned bits, ma_err *e)
{
	pthread_once(&setup_once, setup);
	if (!size_ok(bits, e)) return NULL;
	ma_pki_rsa_job *j = calloc(1, sizeof *j);
	if (!j || !(j->prime[0] = BN_secure_new()) || !(j->prime[1] = BN_secure_new())) {
		ma_pki_rsa_job_free(j);
		ma_fail(e, "out of memory");
		return NULL;
	}
	j->bits = bits;
	return j;
}

void ma_pki_rsa_job_prime(ma_pki_rsa_job *j, int which)
{
	search_prime(j->prime[which], which ? j->bits / 2 : (j->bits + 1) / 2, &j->fail[which]);
}

void ma_pki_rsa_job_free(ma_pki_rsa_job *j)
{
	if (!j) return;
	BN_clear_free(j->prime[0]);
	BN_clear_free(j->prime[1]);
	free(j);
}

/* FIPS 186-5 A.1.3 step 5.4: |p - q| > 2^(nlen/2 - 100), p and q not so close that n falls to Fermat's
 * factoring (one chance in about 2^100 for independent primes; p = q is its extreme). 1 too close,
 * 0 not, -1 OpenSSL failed. */
static int too_close(const BIGNUM *p, const BIGNUM *q, unsigned bits, BN_CTX *ctx)
{
	BN_CTX_start(ctx);
	BIGNUM *diff = BN_CTX_get(ctx), *limit = BN_CTX_get(ctx);
	int r = limit && BN_sub(diff, p, q) && BN_set_word(limit, 0) && BN_set_bit(limit, (int)bits / 2 - 100)
			? BN_ucmp(diff, limit) <= 0 : -1;
	BN_CTX_end(ctx);
	return r;
}

/* The key of a job whose two primes are found. */
EVP_PKEY *ma_pki_rsa_job_finish(ma_pki_rsa_job *j, ma_err *e)
{
	unsigned bits = j->bits;
	BN_CTX *ctx = BN_CTX_secure_new();
	BIGNUM *part[8] = {0};
	EVP_PKEY *k = NULL;
	OSSL_PARAM_BLD *bld = NULL;
	OSSL_PARAM *params = NULL;
	EVP_PKEY_CTX *pctx = NULL;
	if (!ctx || !parts_new(part)) goto sslfail;
	for (;;) {
		if (j->fail[0].what || j->fail[1].what) {
			const struct search_fail *f = j->fail[0].what ? &j->fail[0] : &j->fail[1];
			const char *reason = f->why ? ERR_reason_error_string(f->why) : NULL;
			ma_fail(e, "generating an RSA-%u key failed: %s%s%s", bits, f->what, reason ? ": " : "",
				reason ? reason : "");
			goto out;
		}
		int r = too_close(j->prime[0], j->prime[1], bits, ctx);
		if (r < 0) goto sslfail;
		if (r) { /* step 5.4: another q */
			ma_pki_rsa_job_prime(j, 1);
			continue;
		}
		if ((r = derive(part, j->prime[0], j->prime[1], bits, ctx)) < 0) goto sslfail;
		if (r) break;
		ma_pki_rsa_job_prime(j, 0); /* SP 800-56B 6.3.1.3 step 3: d too small, new primes */
		ma_pki_rsa_job_prime(j, 1);
	}
	if (!(bld = OSSL_PARAM_BLD_new())) goto sslfail;
	for (int i = 0; i < 8; i++)
		if (!OSSL_PARAM_BLD_push_BN(bld, part_names[i], part[i])) goto sslfail;
	if (!(params = OSSL_PARAM_BLD_to_param(bld))) goto sslfail;
	if (!(pctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL)) || EVP_PKEY_fromdata_init(pctx) <= 0 ||
	    EVP_PKEY_fromdata(pctx, &k, EVP_PKEY_KEYPAIR, params) <= 0) {
		k = NULL;
		goto sslfail;
	}
	if (ma_pki_rsa_check(k, e)) EVP_PKEY_free(k), k = NULL;
	goto out;
sslfail:
	ma_pki_sslfail(e, "generating an RSA-%u key failed in OpenSSL", bits);
out:
	EVP_PKEY_CTX_free(pctx);
	OSSL_PARAM_free(params); /* the secret parts sit in the secure heap, cleared on free */
	OSSL_PARAM_BLD_free(bld);
	parts_free(part);
	BN_CTX_free(ctx);
	return k;
}

EVP_PKEY *ma_pki_rsa_generate(unsigned bits, ma_err *e)
{
	int own = ma_pki_rsa_own_generator(e);
	if (own < 0) return NULL;
	if (!own) {
		if (!size_ok(bits, e)) return NULL;
		EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)bits);
		if (!k) ma_pki_sslfail(e, "generating an RSA-%u key with OpenSSL's generator failed", bits);
		else if (ma_pki_rsa_check(k, e)) EVP_PKEY_free(k), k = NULL;
		return k;
	}
	ma_pki_rsa_job *j = ma_pki_rsa_job_new(bits, e);
	if (!j) return NULL;
	ma_pki_rsa_job_prime(j, 0);
	ma_pki_rsa_job_prime(j, 1);
	EVP_PKEY *k = ma_pki_rsa_job_finish(j, e);
	ma_pki_rsa_job_free(j);
	return k;
}
