/* engine/pki: keys, PEM, CA/leaf, CSR, checks, pins, JWS, AES-GCM, random.
 * Known answers come from the kubeadm reference (JWS vectors) and from the
 * openssl CLI (pins, key checks, chain verification). */
#define OPENSSL_SUPPRESS_DEPRECATED /* EC_KEY: a legacy public-only key, as engine/pki_legacy.c meets */
#include "encoding.h"
#include "pki.h"
#include "pki_int.h"
#include "t.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gmp.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rand.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

static char dir[] = "/tmp/test_pki.XXXXXX";

static const char *path(const char *name)
{
	static char buf[4][256];
	static int k;
	k = (k + 1) % 4;
	snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
	return buf[k];
}

static void put(const char *name, const char *data)
{
	FILE *f = fopen(path(name), "w");
	if (f) fputs(data, f), fclose(f);
}

/* Exit status of a shell command (output discarded). */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	strcat(cmd, " >/dev/null 2>&1");
	int r = system(cmd);
	return WIFEXITED(r) ? WEXITSTATUS(r) : -1;
}

/* First line of a shell command's output. */
static char *out1(const char *cmd, char *buf, size_t n)
{
	FILE *p = popen(cmd, "r");
	buf[0] = '\0';
	if (p) {
		if (fgets(buf, (int)n, p)) buf[strcspn(buf, "\n")] = '\0';
		pclose(p);
	}
	return buf;
}

/* Under valgrind keygen is ~100x slower: the big RSA sizes and the timing run are skipped. */
static int slow(void)
{
	const char *p = getenv("LD_PRELOAD");
	return p && strstr(p, "vgpreload");
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static char *key_pem(ma_pki_key *k, size_t *n)
{
	ma_err e = {0};
	char *p = ma_pki_key_pem(k, n, &e);
	CHECK(p, "%s", e.msg);
	return p;
}

static void put_cert(const char *name, ma_pki_cert *c)
{
	char *p = ma_pki_cert_pem(c, NULL, NULL);
	put(name, p ? p : "");
	free(p);
}

static const char *const ca_dns[] = {"kubernetes"};
static ma_pki_spec ca_spec(void)
{
	int64_t t = (int64_t)time(NULL);
	return (ma_pki_spec){.cn = "kubernetes", .dns = ca_dns, .n_dns = 1, .not_before = t - 300,
			     .not_after = t + 87600 * 3600LL, .is_ca = 1};
}

static const char *const api_dns[] = {"cp1", "kubernetes", "kubernetes.default", "*.apps.example.com"};
static const char *const api_ips[] = {"10.96.0.1", "192.0.2.110", "::1"};
static ma_pki_spec leaf_spec(void)
{
	int64_t t = (int64_t)time(NULL);
	return (ma_pki_spec){.cn = "kube-apiserver", .dns = api_dns, .n_dns = 4, .ips = api_ips, .n_ips = 3,
			     .ext_usages = MA_EKU_SERVER_AUTH, .not_before = t - 300, .not_after = t + 8760 * 3600LL};
}

/* A CA and a leaf signed by it, for tests that need a chain. */
static ma_pki_key *cakey, *leafkey;
static ma_pki_cert *cacert, *leaf;
static ma_pki_spec cs, ls; /* the specs they were made from */
static void setup_chain(void)
{
	ma_err e = {0};
	const char *algs[] = {"RSA-2048", "ECDSA-P256"};
	ma_pki_key *k[2];
	CHECK(ma_pki_genkeys_parallel(algs, 2, k, 0, &e) == 0, "%s", e.msg);
	cakey = k[0], leafkey = k[1];
	cs = ca_spec(), ls = leaf_spec();
	CHECK((cacert = ma_pki_ca_create(cakey, &cs, &e)), "%s", e.msg);
	CHECK((leaf = ma_pki_cert_sign(leafkey, &ls, cacert, cakey, &e)), "%s", e.msg);
	put_cert("ca.crt", cacert);
	put_cert("leaf.crt", leaf);
}

static void test_keygen_algorithms(void)
{
	static const struct { const char *alg, *type; int bits; } want[] = {
		{"RSA-2048", "RSA", 2048}, {"RSA-3072", "RSA", 3072}, {"RSA-4096", "RSA", 4096},
		{"ECDSA-P256", "ECDSA", 256}, {"ECDSA-P384", "ECDSA", 384}, {"", "RSA", 2048}};
	for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
		ma_err e = {0};
		if (slow() && (want[i].bits > 2048 || !*want[i].alg)) continue;
		double t0 = now_ms();
		ma_pki_key *k = ma_pki_genkey(want[i].alg, &e);
		CHECK(k, "%s: %s", want[i].alg, e.msg);
		if (!k) continue;
		printf("# keygen %-10s %7.1f ms\n", *want[i].alg ? want[i].alg : "(empty)", now_ms() - t0);
		CHECK_STR(ma_pki_key_type(k), want[i].type);
		CHECK(ma_pki_key_bits(k) == want[i].bits, "%s: %d bits", want[i].alg, ma_pki_key_bits(k));
		CHECK(ma_pki_key_is_private(k), "%s", want[i].alg);
		ma_pki_key_free(k);
	}
	ma_err e = {0};
	CHECK(!ma_pki_genkey("RSA-1024", &e), "RSA-1024 accepted");
	CHECK(strstr(e.msg, "RSA-1024") && strstr(e.msg, "RSA-2048, RSA-3072, RSA-4096, ECDSA-P256, ECDSA-P384"), "%s",
	      e.msg);
}

/* Every RSA key the generator makes (engine/pki_rsa.c) is one OpenSSL accepts as its own: its key
 * check (n = pq, d, the CRT values) passes, the modulus has exactly the requested bits, p != q,
 * e = 65537; p and q have half the bits each (no lopsided factors), each passes OpenSSL's own prime
 * test (64 Miller-Rabin rounds at these sizes), neither is 1 mod e, and |p - q| > 2^(bits/2 - 100). */
static void test_rsa_keys_checked(void)
{
	static const struct { const char *alg; int bits; } want[] = {
		{"RSA-2048", 2048}, {"RSA-2048", 2048}, {"RSA-2048", 2048}, {"RSA-3072", 3072}, {"RSA-4096", 4096}};
	size_t n = slow() ? 2 : sizeof want / sizeof *want;
	const char *algs[8];
	ma_pki_key *k[8] = {0};
	ma_err e = {0};
	for (size_t i = 0; i < n; i++) algs[i] = want[i].alg;
	/* the first key(s) with both primes on one thread, the rest spread prime by prime */
	size_t first = slow() ? 1 : 2;
	int one = ma_pki_genkeys_parallel(algs, first, k, 1, &e) == 0;
	CHECK(one, "one thread: %s", e.msg);
	int spread = ma_pki_genkeys_parallel(algs + first, n - first, k + first, 0, &e) == 0;
	CHECK(spread, "%s", e.msg);
	for (size_t i = 0; i < n && one && spread; i++) {
		BIGNUM *bn_n = NULL, *bn_e = NULL, *p = NULL, *q = NULL;
		EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(NULL, k[i], NULL);
		CHECK(c && EVP_PKEY_check(c) == 1, "%s #%zu: OpenSSL's key check fails", algs[i], i);
		CHECK(c && EVP_PKEY_pairwise_check(c) == 1, "%s #%zu: pairwise check fails", algs[i], i);
		EVP_PKEY_CTX_free(c);
		CHECK(EVP_PKEY_get_bn_param(k[i], OSSL_PKEY_PARAM_RSA_N, &bn_n) == 1 &&
		      EVP_PKEY_get_bn_param(k[i], OSSL_PKEY_PARAM_RSA_E, &bn_e) == 1 &&
		      EVP_PKEY_get_bn_param(k[i], OSSL_PKEY_PARAM_RSA_FACTOR1, &p) == 1 &&
		      EVP_PKEY_get_bn_param(k[i], OSSL_PKEY_PARAM_RSA_FACTOR2, &q) == 1, "%s: parameters", algs[i]);
		if (bn_n && bn_e && p && q) {
			CHECK(BN_num_bits(bn_n) == want[i].bits, "%s: modulus of %d bits", algs[i], BN_num_bits(bn_n));
			CHECK(BN_is_word(bn_e, 65537), "%s: e is not 65537", algs[i]);
			CHECK(BN_cmp(p, q) != 0, "%s: p = q", algs[i]);
			CHECK(BN_num_bits(p) == want[i].bits / 2 && BN_num_bits(q) == want[i].bits / 2, "%s: p %d, q %d bits",
			      algs[i], BN_num_bits(p), BN_num_bits(q));
			BN_CTX *bc = BN_CTX_new();
			BIGNUM *diff = BN_new();
			CHECK(BN_check_prime(p, bc, NULL) == 1 && BN_check_prime(q, bc, NULL) == 1, "%s: p or q not prime",
			      algs[i]);
			CHECK(BN_mod_word(p, 65537) != 1 && BN_mod_word(q, 65537) != 1, "%s: p or q is 1 mod e", algs[i]);
			BIGNUM *limit = BN_new(); /* |p - q| > 2^(bits/2 - 100), strictly */
			CHECK(diff && limit && BN_sub(diff, p, q) && BN_set_bit(limit, want[i].bits / 2 - 100) &&
				      BN_ucmp(diff, limit) > 0, "%s: |p - q| too small", algs[i]);
			BN_free(diff), BN_free(limit);
			BN_CTX_free(bc);
		}
		for (size_t j = 0; j < i; j++) CHECK(!ma_pki_key_equal(k[i], k[j]), "keys %zu and %zu equal", i, j);
		size_t len;
		char *pem = ma_pki_key_pem(k[i], &len, &e);
		CHECK(pem && !strncmp(pem, "-----BEGIN RSA PRIVATE KEY-----\n", 32), "%s: PKCS#1 PEM", algs[i]);
		ma_pki_secret_free(pem, len);
		BN_free(bn_n), BN_free(bn_e), BN_clear_free(p), BN_clear_free(q);
	}
	for (size_t i = 0; i < n; i++) ma_pki_key_free(k[i]);
	/* an odd size: p gets the extra bit, n exactly the bits asked for */
	EVP_PKEY *odd = ma_pki_rsa_generate(2049, &e);
	BIGNUM *on = NULL, *op = NULL, *oq = NULL;
	CHECK(odd, "RSA-2049: %s", e.msg);
	if (odd) {
		CHECK(EVP_PKEY_get_bn_param(odd, OSSL_PKEY_PARAM_RSA_N, &on) == 1 &&
			      EVP_PKEY_get_bn_param(odd, OSSL_PKEY_PARAM_RSA_FACTOR1, &op) == 1 &&
			      EVP_PKEY_get_bn_param(odd, OSSL_PKEY_PARAM_RSA_FACTOR2, &oq) == 1, "RSA-2049: parameters");
		CHECK(on && op && oq && BN_num_bits(on) == 2049 && BN_num_bits(op) == 1025 && BN_num_bits(oq) == 1024,
		      "RSA-2049: n %d, p %d, q %d bits", on ? BN_num_bits(on) : 0, op ? BN_num_bits(op) : 0,
		      oq ? BN_num_bits(oq) : 0);
		EVP_PKEY_CTX *oc = EVP_PKEY_CTX_new_from_pkey(NULL, odd, NULL);
		CHECK(oc && EVP_PKEY_check(oc) == 1, "RSA-2049: OpenSSL's key check fails");
		EVP_PKEY_CTX_free(oc);
	}
	BN_free(on), BN_clear_free(op), BN_clear_free(oq);
	EVP_PKEY_free(odd);
	/* a size outside 2048-16384 bits (FIPS 186-5's floor) is refused with a message, not an abort */
	CHECK(!ma_pki_rsa_job_new(512, &e) && strstr(e.msg, "512 bits"), "%s", e.msg);
	CHECK(!ma_pki_rsa_job_new(1024, &e) && strstr(e.msg, "1024 bits") && strstr(e.msg, "2048"), "%s", e.msg);
	CHECK(!ma_pki_rsa_generate(2047, &e) && strstr(e.msg, "2047 bits"), "%s", e.msg);
}

/* A key's parts {n, e, d, p, q, dP, dQ, qInv}, and an RSA key made of such parts as OpenSSL takes them
 * (no check). */
static const char *const rsa_part_names[8] = {
	OSSL_PKEY_PARAM_RSA_N,         OSSL_PKEY_PARAM_RSA_E,         OSSL_PKEY_PARAM_RSA_D,
	OSSL_PKEY_PARAM_RSA_FACTOR1,   OSSL_PKEY_PARAM_RSA_FACTOR2,   OSSL_PKEY_PARAM_RSA_EXPONENT1,
	OSSL_PKEY_PARAM_RSA_EXPONENT2, OSSL_PKEY_PARAM_RSA_COEFFICIENT1};

static int rsa_parts(const EVP_PKEY *k, BIGNUM *part[8])
{
	int ok = 1;
	for (int i = 0; i < 8; i++) part[i] = NULL, ok &= EVP_PKEY_get_bn_param(k, rsa_part_names[i], &part[i]) == 1;
	return ok;
}

static void rsa_parts_free(BIGNUM *part[8])
{
	for (int i = 0; i < 8; i++) BN_clear_free(part[i]), part[i] = NULL;
}

static EVP_PKEY *rsa_of(BIGNUM *const part[8])
{
	OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
	OSSL_PARAM *params = NULL;
	EVP_PKEY_CTX *c = NULL;
	EVP_PKEY *k = NULL;
	int ok = bld != NULL;
	for (int i = 0; ok && i < 8; i++) ok = OSSL_PARAM_BLD_push_BN(bld, rsa_part_names[i], part[i]);
	if (ok && (params = OSSL_PARAM_BLD_to_param(bld)) && (c = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL)) &&
	    EVP_PKEY_fromdata_init(c) > 0 && EVP_PKEY_fromdata(c, &k, EVP_PKEY_KEYPAIR, params) <= 0)
		k = NULL;
	EVP_PKEY_CTX_free(c);
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	return k;
}

/* lcm = LCM(p - 1, q - 1) */
static int lcm_of(BIGNUM *lcm, const BIGNUM *p, const BIGNUM *q, BN_CTX *bc)
{
	BIGNUM *p1 = BN_new(), *q1 = BN_new(), *g = BN_new(), *prod = BN_new();
	int ok = prod && BN_sub(p1, p, BN_value_one()) && BN_sub(q1, q, BN_value_one()) && BN_mul(prod, p1, q1, bc) &&
		 BN_gcd(g, p1, q1, bc) && BN_div(lcm, NULL, prod, g, bc);
	BN_free(p1), BN_free(q1), BN_free(g), BN_free(prod);
	return ok;
}

/* ma_pki_rsa_check, which every RSA key made here passes before anyone sees it (engine/pki_rsa.c):
 * it refuses a key whose d is not below LCM(p - 1, q - 1), as the old generator's d = e^-1 mod
 * (p - 1)(q - 1) was in 69 % of keys (here d + LCM: the same arithmetic, which OpenSSL's default
 * provider accepts and FIPS 186-5 5.1 does not), a d not above 2^(nlen/2), and, by its pair-wise
 * consistency test, a key with any of n, d, dP, dQ, qInv corrupted. */
static void test_rsa_check_refuses(void)
{
	ma_err e = {0};
	EVP_PKEY *k = ma_pki_rsa_generate(2048, &e);
	CHECK(k, "%s", e.msg);
	if (!k) return;
	CHECK(ma_pki_rsa_check(k, &e) == 0, "a fresh key refused: %s", e.msg);
	BIGNUM *part[8], *was = BN_new(), *lcm = BN_new();
	BN_CTX *bc = BN_CTX_new();
	CHECK(rsa_parts(k, part) && was && lcm && bc && lcm_of(lcm, part[3], part[4], bc), "parts");
	static const struct { int part; const char *change, *want; } cases[] = {
		{2, "d + lcm", "d is not below LCM(p - 1, q - 1) (FIPS 186-5, 5.1)"},
		{2, "3", "d is not above 2^(nlen/2) (FIPS 186-5, 5.1)"},
		{2, "bit 1", "pair-wise consistency test"},
		{0, "bit 1", "pair-wise consistency test"},
		{5, "bit 0", "pair-wise consistency test"},
		{6, "bit 0", "pair-wise consistency test"},
		{7, "bit 0", "pair-wise consistency test"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof *cases && part[7]; i++) {
		BIGNUM *v = part[cases[i].part];
		BN_copy(was, v);
		if (!strcmp(cases[i].change, "d + lcm")) BN_add(v, v, lcm);
		else if (!strcmp(cases[i].change, "3")) BN_set_word(v, 3);
		else {
			int bit = cases[i].change[4] - '0';
			if (BN_is_bit_set(v, bit)) BN_clear_bit(v, bit);
			else BN_set_bit(v, bit);
		}
		EVP_PKEY *bad = rsa_of(part);
		CHECK(bad, "case %zu: no key", i);
		if (bad && i == 0) {
			EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(NULL, bad, NULL);
			CHECK(c && EVP_PKEY_check(c) == 1, "d + LCM: the default provider's check refuses it too");
			EVP_PKEY_CTX_free(c);
		}
		e.msg[0] = 0;
		CHECK(bad && ma_pki_rsa_check(bad, &e) == -1 && strstr(e.msg, "an RSA-2048 key made here is refused: ") &&
			      strstr(e.msg, cases[i].want),
		      "part %d, %s: %s", cases[i].part, cases[i].change, e.msg);
		EVP_PKEY_free(bad);
		BN_copy(v, was);
	}
	EVP_PKEY *same = rsa_of(part);
	CHECK(same && ma_pki_rsa_check(same, &e) == 0, "the parts put back refused: %s", e.msg);
	EVP_PKEY_free(same);
	rsa_parts_free(part);
	BN_clear_free(was), BN_free(lcm), BN_CTX_free(bc);
	EVP_PKEY_free(k);
}

/* Bernstein's batch GCD: how many of n[0..count) share a factor with another (a product tree, then
 * each gcd(n_i, (P mod n_i^2) / n_i) down a remainder tree, P the product of all). */
static int shared_factors(mpz_t *n, int count)
{
	int depth = 0;
	for (int m = count; m > 1; m = (m + 1) / 2) depth++;
	mpz_t *lv[32], *rem[32];
	int len[32];
	len[0] = count;
	for (int d = 1; d <= depth; d++) len[d] = (len[d - 1] + 1) / 2;
	for (int d = 0; d <= depth; d++) {
		lv[d] = malloc(len[d] * sizeof(mpz_t));
		rem[d] = malloc(len[d] * sizeof(mpz_t));
		for (int i = 0; i < len[d]; i++) {
			mpz_inits(lv[d][i], rem[d][i], NULL);
			if (!d) mpz_set(lv[0][i], n[i]);
			else if (2 * i + 1 < len[d - 1]) mpz_mul(lv[d][i], lv[d - 1][2 * i], lv[d - 1][2 * i + 1]);
			else mpz_set(lv[d][i], lv[d - 1][2 * i]);
		}
	}
	mpz_set(rem[depth][0], lv[depth][0]);
	mpz_t sq, g;
	mpz_inits(sq, g, NULL);
	for (int d = depth - 1; d >= 0; d--)
		for (int i = 0; i < len[d]; i++) {
			mpz_mul(sq, lv[d][i], lv[d][i]);
			mpz_mod(rem[d][i], rem[d + 1][i / 2], sq);
		}
	int shared = 0;
	for (int i = 0; i < count; i++) {
		mpz_divexact(g, rem[0][i], n[i]);
		mpz_gcd(g, g, n[i]);
		shared += mpz_cmp_ui(g, 1) != 0;
	}
	mpz_clears(sq, g, NULL);
	for (int d = 0; d <= depth; d++) {
		for (int i = 0; i < len[d]; i++) mpz_clears(lv[d][i], rem[d][i], NULL);
		free(lv[d]), free(rem[d]);
	}
	return shared;
}

/* Keys from the engine's generator hold FIPS 186-5's rules: LCM(p - 1, q - 1) > d > 2^(nlen/2) (5.1);
 * p, q > sqrt(2) 2^(nlen/2 - 1) and |p - q| > 2^(nlen/2 - 100) (A.1.3); and no two of the moduli share
 * a factor. 50 RSA-2048 keys, 2,000 under make test-long (MOONADM_LONG=1). */
static void test_rsa_keys_fips(void)
{
	int n = getenv("MOONADM_LONG") ? 2000 : slow() ? 4 : 50;
	const char **algs = calloc((size_t)n, sizeof *algs);
	ma_pki_key **k = calloc((size_t)n, sizeof *k);
	mpz_t *mod = calloc((size_t)n, sizeof *mod);
	ma_err e = {0};
	CHECK(algs && k && mod, "out of memory");
	if (!algs || !k || !mod) return;
	for (int i = 0; i < n; i++) algs[i] = "RSA-2048";
	double t0 = now_ms();
	int made = ma_pki_genkeys_parallel(algs, (size_t)n, k, 0, &e) == 0;
	CHECK(made, "%s", e.msg);
	printf("# %d RSA-2048 keys in %.0f ms\n", n, now_ms() - t0);
	int bad_d = 0, bad_bound = 0, bad_gap = 0, got = 0;
	BN_CTX *bc = BN_CTX_new();
	BIGNUM *lcm = BN_new(), *t = BN_new(), *gap = BN_new();
	CHECK(bc && lcm && t && gap && BN_set_bit(gap, 1024 - 100), "bignums");
	for (int i = 0; made && i < n; i++) {
		BIGNUM *part[8];
		if (!rsa_parts(k[i], part) || !lcm_of(lcm, part[3], part[4], bc)) {
			rsa_parts_free(part);
			continue;
		}
		got++;
		bad_d += BN_cmp(part[2], lcm) >= 0 || BN_num_bits(part[2]) <= 1024;
		/* p > sqrt(2) 2^1023 <=> p^2 > 2^2047, and p^2 (odd) is never 2^2047 */
		bad_bound += !BN_sqr(t, part[3], bc) || BN_num_bits(t) < 2048 || !BN_sqr(t, part[4], bc) || BN_num_bits(t) < 2048;
		bad_gap += !BN_sub(t, part[3], part[4]) || BN_ucmp(t, gap) <= 0;
		unsigned char be[256];
		mpz_init(mod[i]);
		if (BN_bn2binpad(part[0], be, sizeof be) == sizeof be) mpz_import(mod[i], sizeof be, 1, 1, 1, 0, be);
		rsa_parts_free(part);
	}
	CHECK(got == n, "parts of %d keys of %d", got, n);
	CHECK(!bad_d, "%d of %d keys: d not in (2^1024, LCM(p - 1, q - 1))", bad_d, n);
	CHECK(!bad_bound, "%d of %d keys: p or q not above sqrt(2) 2^1023", bad_bound, n);
	CHECK(!bad_gap, "%d of %d keys: |p - q| <= 2^924", bad_gap, n);
	if (made && got == n) {
		int shared = shared_factors(mod, n);
		CHECK(!shared, "%d of %d moduli share a factor with another", shared, n);
	}
	for (int i = 0; made && i < n; i++) mpz_clear(mod[i]);
	for (int i = 0; made && i < n; i++) ma_pki_key_free(k[i]);
	BN_free(lcm), BN_free(t), BN_free(gap), BN_CTX_free(bc);
	free(algs), free(k), free(mod);
}

/* OpenSSL's generator on request: named as chosen, its keys pass OpenSSL's key check and `openssl
 * pkey -check` and ma_pki_rsa_check, in a batch one task per key, under the same 2048-bit floor; a wrong
 * setting is every RSA key's error (not ECDSA's), with the setting in it. */
static void test_rsa_openssl_generator(void)
{
	ma_err e = {0};
	const char *why = NULL;
	if (!getenv("MOONADM_RSA_GENERATOR")) {
		CHECK_STR(ma_pki_rsa_generator(&why, &e), "moonadm");
		CHECK_STR(why, "the default");
	}
	CHECK(ma_pki_rsa_generator_set("openssl", "--rsa-generator", &e) == 0, "%s", e.msg);
	CHECK_STR(ma_pki_rsa_generator(&why, &e), "openssl");
	CHECK_STR(why, "--rsa-generator openssl");
	const char *algs[] = {"RSA-2048", "ECDSA-P256", "RSA-3072"};
	size_t n = slow() ? 2 : 3;
	ma_pki_key *k[3] = {0};
	CHECK(ma_pki_genkeys_parallel(algs, n, k, 0, &e) == 0, "%s", e.msg);
	for (size_t i = 0; i < n; i++) {
		if (!k[i] || strncmp(algs[i], "RSA", 3)) continue;
		EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(NULL, k[i], NULL);
		CHECK(c && EVP_PKEY_check(c) == 1, "%s: OpenSSL's key check fails", algs[i]);
		EVP_PKEY_CTX_free(c);
		CHECK(ma_pki_rsa_check(k[i], &e) == 0, "%s: %s", algs[i], e.msg);
		CHECK(ma_pki_key_bits(k[i]) == (i ? 3072 : 2048), "%s: %d bits", algs[i], ma_pki_key_bits(k[i]));
		size_t len;
		char *pem = key_pem(k[i], &len);
		put("ossl.key", pem ? pem : "");
		ma_pki_secret_free(pem, len);
		CHECK(sh("openssl pkey -check -noout -in %s", path("ossl.key")) == 0, "%s: openssl pkey -check", algs[i]);
	}
	for (size_t i = 0; i < n; i++) ma_pki_key_free(k[i]);
	CHECK(!ma_pki_rsa_generate(1024, &e) && strstr(e.msg, "1024 bits"), "%s", e.msg);
	CHECK(ma_pki_rsa_generator_set("bogus", "MOONADM_RSA_GENERATOR", &e) == -1 &&
		      !strcmp(e.msg, "MOONADM_RSA_GENERATOR=bogus: the RSA key generator is moonadm or openssl"),
	      "%s", e.msg);
	CHECK(!ma_pki_rsa_generator(&why, &e) && strstr(e.msg, "MOONADM_RSA_GENERATOR=bogus"), "%s", e.msg);
	ma_pki_key *ec = ma_pki_genkey("ECDSA-P256", &e);
	CHECK(ec, "ECDSA refused for a wrong RSA setting: %s", e.msg);
	ma_pki_key_free(ec);
	const char *one[] = {"RSA-2048"};
	CHECK(ma_pki_genkeys_parallel(one, 1, k, 0, &e) == -1 && !k[0] && strstr(e.msg, "MOONADM_RSA_GENERATOR=bogus"),
	      "%s", e.msg);
	CHECK(ma_pki_rsa_generator_set("moonadm", "--rsa-generator", &e) == 0, "%s", e.msg);
	CHECK_STR(ma_pki_rsa_generator(&why, &e), "moonadm");
}

/* The prime search's sieve marks exactly the candidates a trial division rejects: those with an odd
 * prime factor below 2^18, and those that are 1 mod 65537 (e would divide p - 1). The start is chosen
 * so that both kinds come first: start = 1 (mod 65537), start + 2 = 0 (mod 3). */
static void test_rsa_sieve(void)
{
	enum { WINDOW = 96, LIMIT = 1 << 18 };
	BIGNUM *start = BN_new(), *c = BN_new();
	BN_CTX *bc = BN_CTX_new();
	unsigned char be[128], mark[WINDOW];
	CHECK(start && c && bc && BN_rand(start, 1024, BN_RAND_TOP_TWO, BN_RAND_BOTTOM_ODD), "random start");
	/* a multiple of 2*3*65537, plus 1: odd, 1 mod 65537, and start + 2 = 0 (mod 3) */
	BN_sub_word(start, BN_mod_word(start, 2 * 3 * 65537));
	BN_add_word(start, 1);
	CHECK(BN_is_odd(start) && BN_mod_word(start, 65537) == 1 && BN_mod_word(start, 3) == 1, "start prepared");
	CHECK(BN_bn2binpad(start, be, sizeof be) == sizeof be, "start bytes");
	CHECK(ma_pki_rsa_sieve(be, sizeof be, mark, WINDOW) == 0, "sieve refused an odd start");
	int marked = 0;
	for (int k = 0; k < WINDOW; k++) {
		BN_copy(c, start);
		BN_add_word(c, 2 * (BN_ULONG)k);
		int reject = BN_mod_word(c, 65537) == 1;
		for (BN_ULONG q = 3; q < LIMIT && !reject; q += 2) reject = BN_mod_word(c, q) == 0;
		CHECK(mark[k] == reject, "candidate start + %d: sieve says %d, trial division %d", 2 * k, mark[k], reject);
		marked += mark[k];
	}
	CHECK(mark[0] && mark[1] && marked > 0 && marked < WINDOW, "marked %d of %d", marked, WINDOW);
	be[sizeof be - 1] &= 0xfe;
	CHECK(ma_pki_rsa_sieve(be, sizeof be, mark, WINDOW) == -1, "an even start accepted");
	BN_free(start), BN_free(c), BN_CTX_free(bc);
}

/* Every ECDSA key (legacy EC_KEYs on a group built once, engine/pki_legacy.c): OpenSSL's key check
 * and pairwise check pass, on the curve asked for, no two alike, SEC1 PEM, and the private half is
 * seen where it is and not where it is not (a public key read back from its PEM). */
static void test_ec_keys_checked(void)
{
	static const struct { const char *alg; const char *curve; } want[] = {
		{"ECDSA-P256", "prime256v1"}, {"ECDSA-P256", "prime256v1"}, {"ECDSA-P384", "secp384r1"},
		{"ECDSA-P256", "prime256v1"}, {"ECDSA-P384", "secp384r1"}};
	enum { N = sizeof want / sizeof *want };
	const char *algs[N];
	ma_pki_key *k[N];
	ma_err e = {0};
	for (size_t i = 0; i < N; i++) algs[i] = want[i].alg;
	CHECK(ma_pki_genkeys_parallel(algs, N, k, 0, &e) == 0, "%s", e.msg);
	for (size_t i = 0; i < N && k[0]; i++) {
		EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(NULL, k[i], NULL);
		CHECK(c && EVP_PKEY_check(c) == 1, "%s #%zu: OpenSSL's key check fails", algs[i], i);
		CHECK(c && EVP_PKEY_pairwise_check(c) == 1, "%s #%zu: pairwise check fails", algs[i], i);
		EVP_PKEY_CTX_free(c);
		char curve[64] = "";
		CHECK(EVP_PKEY_get_utf8_string_param(k[i], OSSL_PKEY_PARAM_GROUP_NAME, curve, sizeof curve, NULL) == 1 &&
			      !strcmp(curve, want[i].curve), "%s: curve %s", algs[i], curve);
		CHECK(ma_pki_key_is_private(k[i]), "%s: private half not seen", algs[i]);
		CHECK(EVP_PKEY_get0_provider(k[i]) == NULL, "%s: not a legacy EC_KEY (the generic fallback ran)", algs[i]);
		for (size_t j = 0; j < i; j++) CHECK(!ma_pki_key_equal(k[i], k[j]), "keys %zu and %zu equal", i, j);
		size_t len, plen;
		char *pem = ma_pki_key_pem(k[i], &len, &e);
		CHECK(pem && !strncmp(pem, "-----BEGIN EC PRIVATE KEY-----\n", 31), "%s: SEC1 PEM", algs[i]);
		char *pub = ma_pki_pubkey_pem(k[i], &plen, &e);
		ma_pki_key *back = pub ? ma_pki_pubkey_read(pub, plen, &e) : NULL;
		CHECK(back && !ma_pki_key_is_private(back), "%s: a public key seen as private", algs[i]);
		ma_pki_key_free(back);
		free(pub);
		/* the same, as a legacy EC_KEY without its private half */
		EC_KEY *ec = EC_KEY_dup(EVP_PKEY_get0_EC_KEY(k[i]));
		EVP_PKEY *lpub = EVP_PKEY_new();
		if (ec) EC_KEY_set_private_key(ec, NULL); /* clears it, and says 0 by design */
		int assigned = ec && lpub && !EC_KEY_get0_private_key(ec) && EVP_PKEY_assign_EC_KEY(lpub, ec) == 1;
		CHECK(assigned, "%s: legacy public copy", algs[i]);
		if (!assigned) EC_KEY_free(ec);
		CHECK(!ma_pki_key_is_private(lpub), "%s: a legacy public key seen as private", algs[i]);
		EVP_PKEY_free(lpub);
		ma_pki_secret_free(pem, len);
	}
	for (size_t i = 0; i < N && k[0]; i++) ma_pki_key_free(k[i]);
}

static void test_keygen_parallel(void)
{
	enum { MAXN = 8 };
	int N = slow() ? 3 : MAXN;
	const char *algs[MAXN];
	ma_pki_key *k[MAXN];
	ma_err e = {0};
	for (int i = 0; i < N; i++) algs[i] = i == 2 ? "ECDSA-P384" : slow() && i ? "ECDSA-P256" : "RSA-2048";
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	if (!slow()) {
		double t0 = now_ms();
		CHECK(ma_pki_genkeys_parallel(algs, N, k, 1, &e) == 0, "%s", e.msg);
		double serial = now_ms() - t0;
		for (int i = 0; i < N; i++) ma_pki_key_free(k[i]);
		t0 = now_ms();
		clock_t c0 = clock();
		CHECK(ma_pki_genkeys_parallel(algs, N, k, 0, &e) == 0, "%s", e.msg);
		double par = now_ms() - t0, cpu = (double)(clock() - c0) * 1e3 / CLOCKS_PER_SEC;
		/* cpu/wall shows the parallelism reached even when other jobs share the machine */
		printf("# %d keys: 1 thread %.0f ms, %ld threads %.0f ms (speedup %.2f, cpu/wall %.2f)\n", N, serial,
		       cpus, par, serial / par, cpu / par);
	} else {
		CHECK(ma_pki_genkeys_parallel(algs, N, k, 0, &e) == 0, "%s", e.msg);
	}
	for (int i = 0; i < N; i++) {
		CHECK(k[i] && ma_pki_key_bits(k[i]) == (i == 2 ? 384 : slow() && i ? 256 : 2048), "key %d", i);
		for (int j = 0; j < i; j++) CHECK(k[i] && k[j] && !ma_pki_key_equal(k[i], k[j]), "keys %d and %d equal", i, j);
	}
	for (int i = 0; i < N; i++) ma_pki_key_free(k[i]);
	/* a bad name anywhere fails the batch before any work, and nothing leaks */
	const char *bad[] = {"ECDSA-P256", "ECDSA-P521"};
	CHECK(ma_pki_genkeys_parallel(bad, 2, k, 2, &e) == -1 && !k[0] && !k[1], "bad batch accepted");
	CHECK(strstr(e.msg, "ECDSA-P521"), "%s", e.msg);
}

/* The direct paths of engine/pki_legacy.c give OpenSSL's generic bytes: the PEM a provider key
 * encodes to, the SubjectPublicKeyInfo its encoder writes, a key read back equal and signing. */
static char *generic_pem(EVP_PKEY *k)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *p = NULL, *out = NULL;
	long n = b && PEM_write_bio_PrivateKey_traditional(b, k, NULL, NULL, 0, NULL, NULL) ? BIO_get_mem_data(b, &p) : 0;
	if (n > 0 && (out = malloc((size_t)n + 1))) memcpy(out, p, (size_t)n), out[n] = 0;
	BIO_free(b);
	return out;
}

static void test_legacy_paths_same_bytes(void)
{
	const char *algs[] = {"RSA-2048", "ECDSA-P256", "ECDSA-P384"};
	for (int i = 0; i < 3; i++) {
		ma_err e = {0};
		ma_pki_key *k = i ? ma_pki_genkey(algs[i], &e) : cakey, *r = NULL;
		size_t n = 0;
		char *pem = k ? ma_pki_key_pem(k, &n, &e) : NULL, *gen = k ? generic_pem(k) : NULL;
		CHECK(pem && gen && !strcmp(pem, gen), "%s: the PEM differs from OpenSSL's generic encoding", algs[i]);
		CHECK(pem && (r = ma_pki_key_read(pem, n, &e)), "%s: %s", algs[i], e.msg);
		if (r) {
			char *again = ma_pki_key_pem(r, NULL, &e);
			CHECK(again && !strcmp(again, pem), "%s: a key read back encodes differently", algs[i]);
			CHECK(ma_pki_key_equal(k, r), "%s: the key read back differs", algs[i]);
			free(again);
			const char *o[] = {"system:masters"};
			ma_pki_spec s = {.cn = "legacy", .o = o, .n_o = 1, .ext_usages = MA_EKU_CLIENT_AUTH};
			/* a CA whose key was read back signs, as a tree's leaves are signed */
			ma_pki_cert *self = ma_pki_ca_create(r, &(ma_pki_spec){.cn = "legacy-ca", .is_ca = 1}, &e);
			ma_pki_cert *c = self ? ma_pki_cert_sign(k, &s, self, r, &e) : NULL;
			CHECK(c && self, "%s: %s", algs[i], e.msg);
			CHECK(c && X509_verify((X509 *)c, (EVP_PKEY *)k) == 1, "%s: the leaf does not verify", algs[i]);
			unsigned char *a = NULL, *b = NULL;
			int na = c ? i2d_X509_PUBKEY(X509_get_X509_PUBKEY((X509 *)c), &a) : -1;
			int nb = i2d_PUBKEY((EVP_PKEY *)k, &b); /* OpenSSL's encoder of the provider key */
			CHECK(na > 0 && na == nb && !memcmp(a, b, (size_t)na), "%s: SubjectPublicKeyInfo differs", algs[i]);
			CHECK(c && ma_pki_key_matches_cert(r, c, &e) == 1, "%s: %s", algs[i], e.msg);
			CHECK(self && X509_verify((X509 *)self, (EVP_PKEY *)k) == 1, "%s: signed by a key read back", algs[i]);
			OPENSSL_free(a), OPENSSL_free(b);
			ma_pki_cert_free(c), ma_pki_cert_free(self);
			ma_pki_key_free(r);
		}
		/* the public PEM (sa.pub) is the generic encoder's, byte for byte */
		BIO *gb = BIO_new(BIO_s_mem());
		char *gp = NULL, *pub = ma_pki_pubkey_pem(k, NULL, &e);
		long gn = gb && PEM_write_bio_PUBKEY(gb, (EVP_PKEY *)k) ? BIO_get_mem_data(gb, &gp) : 0;
		CHECK(pub && gn > 0 && strlen(pub) == (size_t)gn && !memcmp(pub, gp, (size_t)gn),
		      "%s: the public key PEM differs from OpenSSL's generic encoding", algs[i]);
		BIO_free(gb);
		free(pub);
		if (pem) ma_pki_secret_free(pem, n);
		free(gen);
		if (i) ma_pki_key_free(k);
	}
}

static void test_pem_roundtrip(void)
{
	const char *algs[] = {"RSA-2048", "ECDSA-P256", "ECDSA-P384"};
	for (int i = 0; i < 3; i++) {
		ma_err e = {0};
		ma_pki_key *k = i ? ma_pki_genkey(algs[i], &e) : cakey, *r, *pub;
		size_t n;
		char *pem = k ? key_pem(k, &n) : NULL;
		int rsa = i == 0;
		if (!pem) continue;
		CHECK(strncmp(pem, rsa ? "-----BEGIN RSA PRIVATE KEY-----\n" : "-----BEGIN EC PRIVATE KEY-----\n",
			      rsa ? 32 : 31) == 0, "%s header: %.40s", algs[i], pem);
		CHECK(n == strlen(pem), "length");
		put("k.pem", pem);
		CHECK(sh(rsa ? "openssl rsa -check -noout -in %s" : "openssl ec -check -noout -in %s", path("k.pem")) == 0,
		      "openssl rejects %s", algs[i]);
		CHECK((r = ma_pki_key_read(pem, n, &e)), "%s", e.msg);
		CHECK(r && ma_pki_key_equal(k, r), "%s re-read differs", algs[i]);
		ma_pki_key_free(r);
		/* PKCS#8 from the openssl CLI reads too */
		char cmd[512], *p8 = NULL;
		snprintf(cmd, sizeof cmd, "openssl pkcs8 -topk8 -nocrypt -in %s", path("k.pem"));
		FILE *f = popen(cmd, "r");
		size_t cap = 0;
		ssize_t got = f ? getdelim(&p8, &cap, '\0', f) : -1;
		if (f) pclose(f);
		CHECK(got > 0 && strstr(p8, "BEGIN PRIVATE KEY"), "pkcs8 conversion");
		CHECK(got > 0 && (r = ma_pki_key_read(p8, (size_t)got, &e)) && ma_pki_key_equal(k, r), "%s", e.msg);
		ma_pki_key_free(got > 0 ? r : NULL);
		free(p8);
		/* public key: PKIX PEM, public-only handle */
		char *pp = ma_pki_pubkey_pem(k, &n, &e);
		CHECK(pp && !strncmp(pp, "-----BEGIN PUBLIC KEY-----\n", 27), "%s", pp ? pp : e.msg);
		CHECK(pp && (pub = ma_pki_pubkey_read(pp, n, &e)), "%s", e.msg);
		if (pp && pub) {
			CHECK(!ma_pki_key_is_private(pub), "public key claims a private part");
			CHECK(!ma_pki_key_pem(pub, NULL, &e) && strstr(e.msg, "no private part"), "%s", e.msg);
			CHECK(ma_pki_key_equal(k, pub), "public half differs");
			ma_pki_key_free(pub);
		}
		CHECK(!ma_pki_key_read(pp, n, &e) && strstr(e.msg, "no private key found") &&
			      strstr(e.msg, "PUBLIC KEY"), "%s", e.msg);
		/* the public half of a private key PEM */
		CHECK((pub = ma_pki_pubkey_read(pem, strlen(pem), &e)) && !ma_pki_key_is_private(pub), "%s", e.msg);
		ma_pki_key_free(pub);
		free(pp);
		ma_pki_secret_free(pem, strlen(pem));
		if (k != cakey) ma_pki_key_free(k);
	}
	/* PKCS#1 "RSA PUBLIC KEY" */
	ma_err e = {0};
	CHECK(sh("openssl genrsa -out %s 2048 && openssl rsa -in %s -RSAPublicKey_out -out %s", path("r.pem"),
		 path("r.pem"), path("rpub.pem")) == 0, "openssl genrsa");
	char buf[4096];
	FILE *f = fopen(path("rpub.pem"), "r");
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	if (f) fclose(f);
	buf[n] = '\0';
	ma_pki_key *pub = ma_pki_pubkey_read(buf, n, &e);
	CHECK(pub && !strcmp(ma_pki_key_type(pub), "RSA") && ma_pki_key_bits(pub) == 2048, "%s", e.msg);
	ma_pki_key_free(pub);
}

static void test_pem_errors(void)
{
	ma_err e = {0};
	ma_pki_key *k = cakey;
	size_t n;
	char *pem = key_pem(k, &n);
	CHECK(!ma_pki_key_read(pem, n / 2, &e) && strstr(e.msg, "truncated PEM"), "%s", e.msg);
	CHECK(!ma_pki_key_read("", 0, &e) && strstr(e.msg, "no PEM data"), "%s", e.msg);
	CHECK(!ma_pki_key_read("hello", 5, &e) && strstr(e.msg, "no PEM data"), "%s", e.msg);
	/* damage the base64 body, keep the frame */
	char *bad = strdup(pem);
	memset(bad + 40, '!', 20);
	CHECK(!ma_pki_key_read(bad, n, &e) && strstr(e.msg, "malformed RSA PRIVATE KEY"), "%s", e.msg);
	free(bad);
	/* a truncated body with its END line */
	char cut[4096];
	int m = snprintf(cut, sizeof cut, "%.200s\n-----END RSA PRIVATE KEY-----\n", pem);
	CHECK(!ma_pki_key_read(cut, (size_t)m, &e) && strstr(e.msg, "malformed"), "%s", e.msg);
	/* a certificate is not a key, and a key is not a certificate */
	char *cert = ma_pki_cert_pem(cacert, &n, &e);
	CHECK(!ma_pki_key_read(cert, n, &e) && strstr(e.msg, "no private key found in PEM data (found CERTIFICATE)"),
	      "%s", e.msg);
	CHECK(!ma_pki_cert_read(pem, strlen(pem), &e) &&
		      strstr(e.msg, "no certificate found in PEM data (found RSA PRIVATE KEY)"), "%s", e.msg);
	CHECK(!ma_pki_cert_read(cert, n - 30, &e) && strstr(e.msg, "truncated PEM"), "%s", e.msg);
	free(cert);
	/* Ed25519 is neither RSA nor ECDSA */
	char ed[1024];
	FILE *f = popen("openssl genpkey -algorithm ed25519", "r");
	size_t got = f ? fread(ed, 1, sizeof ed - 1, f) : 0;
	if (f) pclose(f);
	ed[got] = '\0';
	CHECK(!ma_pki_key_read(ed, got, &e) && strstr(e.msg, "neither in RSA nor ECDSA"), "%s", e.msg);
	/* a key followed by other blocks: the key is found after a certificate too */
	char both[8192];
	char *c2 = ma_pki_cert_pem(cacert, NULL, NULL);
	m = snprintf(both, sizeof both, "%s%s", c2, pem);
	ma_pki_key *r = ma_pki_key_read(both, (size_t)m, &e);
	CHECK(r && ma_pki_key_equal(k, r), "%s", e.msg);
	ma_pki_key_free(r);
	free(c2);
	ma_pki_secret_free(pem, strlen(pem));
}

static void test_ca_and_leaf(void)
{
	ma_err e = {0};
	ma_pki_info ci, li;
	CHECK(ma_pki_cert_info(cacert, &ci, &e) == 0, "%s", e.msg);
	CHECK(ma_pki_cert_info(leaf, &li, &e) == 0, "%s", e.msg);
	CHECK_STR(ci.subject.cn, "kubernetes");
	CHECK_STR(ci.issuer.cn, "kubernetes");
	CHECK(ci.is_ca && !li.is_ca, "is_ca %d %d", ci.is_ca, li.is_ca);
	CHECK(ci.usages == (MA_KU_DIGITAL_SIGNATURE | MA_KU_KEY_ENCIPHERMENT | MA_KU_CERT_SIGN), "CA usages %x", ci.usages);
	CHECK(li.usages == (MA_KU_DIGITAL_SIGNATURE | MA_KU_KEY_ENCIPHERMENT), "leaf usages %x", li.usages);
	CHECK(ci.ext_usages == 0 && li.ext_usages == MA_EKU_SERVER_AUTH, "eku %x %x", ci.ext_usages, li.ext_usages);
	CHECK(ci.n_dns == 1 && !strcmp(ci.dns[0], "kubernetes") && ci.n_ips == 0, "CA SANs");
	CHECK(ci.not_before == cs.not_before && ci.not_after == cs.not_after, "CA times");
	CHECK(li.not_before == ls.not_before && li.not_after == ls.not_after, "leaf times");
	CHECK_STR(li.subject.cn, "kube-apiserver");
	CHECK_STR(li.issuer.cn, "kubernetes");
	CHECK(li.n_dns == 4 && !strcmp(li.dns[3], "*.apps.example.com"), "leaf DNS");
	CHECK(li.n_ips == 3 && !strcmp(li.ips[0], "10.96.0.1") && !strcmp(li.ips[2], "::1"), "leaf IPs");
	CHECK(strlen(ci.ski) == 40 && !li.ski[0] && !ci.aki[0], "ski %s / leaf ski %s (Go: none), CA aki %s", ci.ski, li.ski,
	      ci.aki);
	CHECK(!strcmp(li.aki, ci.ski), "leaf aki %s != CA ski %s", li.aki, ci.ski);
	CHECK(ci.serial[0] && strlen(ci.serial) <= 16 && strcmp(ci.serial, li.serial), "serials %s %s", ci.serial,
	      li.serial);
	CHECK_STR(ci.key_type, "RSA");
	CHECK_STR(li.key_type, "ECDSA");
	CHECK(ci.key_bits == 2048 && li.key_bits == 256, "bits");
	ma_pki_info_free(&ci);
	ma_pki_info_free(&li);
	/* what openssl sees: v3, critical KU/BC, SHA-256, and the chain verifies */
	char line[512], cmd[512];
	snprintf(cmd, sizeof cmd, "openssl x509 -in %s -noout -text | grep -A1 'Key Usage: critical' | tail -1 | xargs",
		 path("ca.crt"));
	CHECK_STR(out1(cmd, line, sizeof line), "Digital Signature, Key Encipherment, Certificate Sign");
	snprintf(cmd, sizeof cmd, "openssl x509 -in %s -noout -text | grep -A1 'Basic Constraints: critical' | tail -1 | xargs",
		 path("ca.crt"));
	CHECK_STR(out1(cmd, line, sizeof line), "CA:TRUE");
	snprintf(cmd, sizeof cmd, "openssl x509 -in %s -noout -text | grep -A1 'Basic Constraints: critical' | tail -1 | xargs",
		 path("leaf.crt"));
	CHECK_STR(out1(cmd, line, sizeof line), "CA:FALSE");
	snprintf(cmd, sizeof cmd, "openssl x509 -in %s -noout -text | grep -m1 'Version' | xargs", path("leaf.crt"));
	CHECK_STR(out1(cmd, line, sizeof line), "Version: 3 (0x2)");
	snprintf(cmd, sizeof cmd, "openssl x509 -in %s -noout -text | grep -m1 'Signature Algorithm' | xargs",
		 path("leaf.crt"));
	CHECK_STR(out1(cmd, line, sizeof line), "Signature Algorithm: sha256WithRSAEncryption");
	snprintf(cmd, sizeof cmd, "openssl x509 -in %s -noout -ext subjectAltName | tail -1 | xargs", path("leaf.crt"));
	CHECK_STR(out1(cmd, line, sizeof line),
		  "DNS:cp1, DNS:kubernetes, DNS:kubernetes.default, DNS:*.apps.example.com, IP Address:10.96.0.1, "
		  "IP Address:192.0.2.110, IP Address:0:0:0:0:0:0:0:1");
	CHECK(sh("openssl verify -CAfile %s %s", path("ca.crt"), path("leaf.crt")) == 0, "openssl verify rejects");
}

static void test_ecdsa_p384_and_subject(void)
{
	ma_err e = {0};
	ma_pki_key *k = ma_pki_genkey("ECDSA-P384", &e);
	const char *o[] = {"kubeadm:cluster-admins", "system:masters", "Ünïcode"};
	ma_pki_spec s = ca_spec();
	s.cn = "etcd-ca";
	ma_pki_cert *ca = ma_pki_ca_create(k, &s, &e);
	CHECK(ca, "%s", e.msg);
	ma_pki_spec l = {.cn = "kube-apiserver-kubelet-client", .o = o, .n_o = 3, .ext_usages = MA_EKU_CLIENT_AUTH};
	ma_pki_cert *c = ma_pki_cert_sign(leafkey, &l, ca, k, &e);
	CHECK(c, "%s", e.msg);
	if (!ca || !c) return;
	put_cert("p384.crt", ca);
	put_cert("client.crt", c);
	char line[512], cmd[512];
	snprintf(cmd, sizeof cmd, "openssl x509 -in %s -noout -text | grep -m1 'Signature Algorithm' | xargs",
		 path("client.crt"));
	CHECK_STR(out1(cmd, line, sizeof line), "Signature Algorithm: ecdsa-with-SHA384");
	/* all O values in one multi-valued RDN before CN, as Go's pkix.Name marshals them (RFC 2253
	 * prints the RDNs last first; the values inside the RDN are in DER SET OF order) */
	snprintf(cmd, sizeof cmd, "openssl x509 -in %s -noout -subject -nameopt RFC2253,-esc_msb", path("client.crt"));
	out1(cmd, line, sizeof line);
	CHECK(!strncmp(line, "subject=CN=kube-apiserver-kubelet-client,O=", 43) && strstr(line, "+O=system:masters") &&
		      strstr(line, "Ünïcode") && strstr(line, "kubeadm:cluster-admins") && !strchr(line + 43, ','),
	      "%s", line);
	snprintf(cmd, sizeof cmd, "openssl asn1parse -in %s | grep -A1 organizationName | grep -o '[A-Z0-9]*STRING *:.*' | sort | xargs",
		 path("client.crt"));
	CHECK_STR(out1(cmd, line, sizeof line),
		  "PRINTABLESTRING :kubeadm:cluster-admins PRINTABLESTRING :system:masters UTF8STRING :Ünïcode");
	CHECK(sh("openssl verify -CAfile %s %s", path("p384.crt"), path("client.crt")) == 0, "openssl verify rejects");
	ma_pki_info in;
	CHECK(ma_pki_cert_info(c, &in, &e) == 0, "%s", e.msg);
	CHECK(in.subject.n_o == 3, "%zu O values", in.subject.n_o);
	for (size_t i = 0; i < in.subject.n_o && i < 3; i++) {
		int found = 0;
		for (int j = 0; j < 3; j++) found |= !strcmp(in.subject.o[i], o[j]);
		CHECK(found, "O %s", in.subject.o[i]);
	}
	CHECK(in.n_dns == 0 && in.ext_usages == MA_EKU_CLIENT_AUTH && in.not_before == s.not_before &&
		      in.not_after == in.not_before + 8760 * 3600LL, "defaults from the CA");
	ma_pki_info_free(&in);
	/* bad specs */
	ma_pki_spec nou = {.cn = "x"};
	CHECK(!ma_pki_cert_sign(leafkey, &nou, ca, k, &e) && strstr(e.msg, "at least one extended key usage"), "%s",
	      e.msg);
	const char *badip[] = {"192.0.2.300"};
	ma_pki_spec bi = {.cn = "x", .ext_usages = MA_EKU_SERVER_AUTH, .ips = badip, .n_ips = 1};
	CHECK(!ma_pki_cert_sign(leafkey, &bi, ca, k, &e) && strstr(e.msg, "invalid IP address \"192.0.2.300\""), "%s",
	      e.msg);
	ma_pki_spec past = {.cn = "x", .ext_usages = MA_EKU_SERVER_AUTH, .not_before = 100, .not_after = 50};
	CHECK(!ma_pki_cert_sign(leafkey, &past, ca, k, &e) && strstr(e.msg, "not_after"), "%s", e.msg);
	/* usage names */
	unsigned bit;
	CHECK(ma_pki_usage_bit("cert_sign", 0, &bit, &e) == 0 && bit == MA_KU_CERT_SIGN, "cert_sign");
	CHECK(ma_pki_usage_bit("client_auth", 1, &bit, &e) == 0 && bit == MA_EKU_CLIENT_AUTH, "client_auth");
	CHECK(ma_pki_usage_bit("serverAuth", 1, &bit, &e) == -1 && strstr(e.msg, "server_auth, client_auth"), "%s",
	      e.msg);
	ma_pki_cert_free(c);
	ma_pki_cert_free(ca);
	ma_pki_key_free(k);
}

static void test_verify(void)
{
	ma_err e = {0};
	CHECK(ma_pki_cert_verify(leaf, cacert, NULL, 0, 1, 0, &e) == 0, "%s", e.msg);
	CHECK(ma_pki_cert_verify(cacert, cacert, NULL, 0, 1, 0, &e) == 0, "%s", e.msg);
	/* expired in 2 years; ignored without the time check */
	int64_t later = (int64_t)time(NULL) + 2 * 8760 * 3600LL;
	CHECK(ma_pki_cert_verify(leaf, cacert, NULL, 0, 1, later, &e) == -1 && strstr(e.msg, "expired"), "%s", e.msg);
	CHECK(ma_pki_cert_verify(leaf, cacert, NULL, 0, 0, later, &e) == 0, "%s", e.msg);
	/* another CA with the same name does not verify */
	ma_pki_key *k2 = ma_pki_genkey("ECDSA-P256", &e);
	ma_pki_spec s = ca_spec();
	ma_pki_cert *ca2 = ma_pki_ca_create(k2, &s, &e);
	CHECK(ma_pki_cert_verify(leaf, ca2, NULL, 0, 1, 0, &e) == -1 &&
		      strstr(e.msg, "certificate CN=kube-apiserver does not verify against CA CN=kubernetes"), "%s", e.msg);
	/* a CA key that does not belong to the CA, a leaf used as CA */
	ma_pki_spec l = leaf_spec();
	CHECK(!ma_pki_cert_sign(leafkey, &l, cacert, k2, &e) && strstr(e.msg, "CA key does not match"), "%s", e.msg);
	CHECK(!ma_pki_cert_sign(k2, &l, leaf, leafkey, &e) && strstr(e.msg, "certificate CN=kube-apiserver is not a CA"),
	      "%s", e.msg);
	CHECK(ma_pki_cert_verify(ca2, leaf, NULL, 0, 1, 0, &e) == -1 && strstr(e.msg, "is not a CA"), "%s", e.msg);
	/* an intermediate: root -> inter -> leaf2, untrusted intermediate passed along */
	ma_pki_spec is = ca_spec();
	is.cn = "intermediate";
	ma_pki_cert *inter = ma_pki_cert_sign(k2, &is, cacert, cakey, &e);
	CHECK(inter, "%s", e.msg);
	ma_pki_cert *leaf2 = inter ? ma_pki_cert_sign(leafkey, &l, inter, k2, &e) : NULL;
	CHECK(leaf2, "%s", e.msg);
	CHECK(ma_pki_cert_verify(leaf2, cacert, &inter, 1, 1, 0, &e) == 0, "%s", e.msg);
	CHECK(ma_pki_cert_verify(leaf2, cacert, NULL, 0, 1, 0, &e) == -1, "verified without intermediate");
	CHECK(ma_pki_cert_verify(leaf2, inter, NULL, 0, 1, 0, &e) == 0, "intermediate as anchor: %s", e.msg);
	ma_pki_cert_free(leaf2);
	ma_pki_cert_free(inter);
	/* key/cert matching */
	CHECK(ma_pki_key_matches_cert(leafkey, leaf, &e) == 1, "%s", e.msg);
	CHECK(ma_pki_key_matches_cert(cakey, cacert, &e) == 1, "%s", e.msg);
	CHECK(ma_pki_key_matches_cert(k2, leaf, &e) == 0 && strstr(e.msg, "does not match"), "%s", e.msg);
	CHECK(ma_pki_key_matches_cert(cakey, leaf, &e) == 0, "RSA key matches EC cert");
	ma_pki_cert_free(ca2);
	ma_pki_key_free(k2);
}

static void test_covers(void)
{
	ma_err e = {0};
	static const struct { const char *name; int want; } cases[] = {
		{"cp1", 1}, {"KUBERNETES.default", 1}, {"kubernetes.default.svc", 0}, {"x.apps.example.com", 1},
		{"a.b.apps.example.com", 0}, {"apps.example.com", 0}, {"10.96.0.1", 1}, {"192.0.2.110", 1},
		{"10.96.0.2", 0}, {"::1", 1}, {"0:0:0:0:0:0:0:1", 1}, {"::2", 0}, {"kube-apiserver", 0}};
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		int r = ma_pki_cert_covers(leaf, cases[i].name, &e);
		CHECK(r == cases[i].want, "%s: got %d", cases[i].name, r);
		if (!r) CHECK(strstr(e.msg, "is not valid for"), "%s", e.msg);
	}
}

static void test_pin(void)
{
	ma_err e = {0};
	char pin[72], cmd[512], want[256];
	CHECK(ma_pki_cert_pin(cacert, pin, &e) == 0, "%s", e.msg);
	snprintf(cmd, sizeof cmd,
		 "openssl x509 -pubkey -noout -in %s | openssl pkey -pubin -outform der | openssl dgst -sha256 -hex "
		 "| sed 's/^.* //'", path("ca.crt"));
	out1(cmd, want, sizeof want);
	CHECK(strlen(want) == 64 && !strncmp(pin, "sha256:", 7) && !strcmp(pin + 7, want), "%s vs %s", pin, want);
	CHECK(ma_pki_cert_pin(leaf, pin, &e) == 0, "%s", e.msg);
	snprintf(cmd, sizeof cmd,
		 "openssl x509 -pubkey -noout -in %s | openssl pkey -pubin -outform der | openssl dgst -sha256 -hex "
		 "| sed 's/^.* //'", path("leaf.crt"));
	CHECK(!strcmp(pin + 7, out1(cmd, want, sizeof want)), "%s vs %s", pin, want);
}

static void test_csr(void)
{
	ma_err e = {0};
	const char *o[] = {"system:nodes"};
	const char *dns[] = {"node1"}, *ips[] = {"192.0.2.135"};
	ma_pki_spec s = {.cn = "system:node:node1", .o = o, .n_o = 1, .dns = dns, .n_dns = 1, .ips = ips, .n_ips = 1};
	size_t n;
	char *pem = ma_pki_csr_create(leafkey, &s, &n, &e);
	CHECK(pem && !strncmp(pem, "-----BEGIN CERTIFICATE REQUEST-----\n", 36), "%s", pem ? pem : e.msg);
	if (!pem) return;
	put("n.csr", pem);
	CHECK(sh("openssl req -verify -noout -in %s", path("n.csr")) == 0, "openssl req -verify rejects");
	ma_pki_info in;
	ma_pki_key *pub;
	CHECK(ma_pki_csr_parse(pem, n, &in, &pub, &e) == 0, "%s", e.msg);
	CHECK_STR(in.subject.cn, "system:node:node1");
	CHECK(in.subject.n_o == 1 && !strcmp(in.subject.o[0], "system:nodes"), "O");
	CHECK(in.n_dns == 1 && !strcmp(in.dns[0], "node1") && in.n_ips == 1 && !strcmp(in.ips[0], "192.0.2.135"), "SANs");
	CHECK(!strcmp(in.key_type, "ECDSA") && in.key_bits == 256, "key %s", in.key_type);
	CHECK(pub && !ma_pki_key_is_private(pub) && ma_pki_key_equal(pub, leafkey), "CSR public key");
	/* sign the CSR's public key with the CA (external CA / CSR flow) */
	ma_pki_spec ls = {.cn = in.subject.cn, .o = (const char *const *)in.subject.o, .n_o = in.subject.n_o,
			  .dns = (const char *const *)in.dns, .n_dns = in.n_dns, .ext_usages = MA_EKU_CLIENT_AUTH};
	ma_pki_cert *c = ma_pki_cert_sign(pub, &ls, cacert, cakey, &e);
	CHECK(c && ma_pki_key_matches_cert(leafkey, c, &e) == 1, "%s", e.msg);
	ma_pki_cert_free(c);
	ma_pki_key_free(pub);
	ma_pki_info_free(&in);
	/* a tampered CSR: one base64 digit of the signed part changed (6 whole bits, no padding) */
	char *bad = strdup(pem);
	bad[36 + 40] = bad[36 + 40] == 'A' ? 'B' : 'A';
	int r = ma_pki_csr_parse(bad, n, &in, NULL, &e);
	CHECK(r == -1 && (strstr(e.msg, "signature") || strstr(e.msg, "malformed")), "%s", e.msg);
	if (!r) ma_pki_info_free(&in);
	CHECK(ma_pki_csr_parse("x", 1, &in, NULL, &e) == -1 && strstr(e.msg, "no CERTIFICATE REQUEST"), "%s", e.msg);
	free(bad);
	free(pem);
}

static void test_certs_chain(void)
{
	ma_err e = {0};
	char *a = ma_pki_cert_pem(leaf, NULL, &e), *b = ma_pki_cert_pem(cacert, NULL, &e);
	char *both = malloc(strlen(a) + strlen(b) + 1);
	strcat(strcpy(both, a), b);
	ma_pki_cert **v;
	size_t n;
	CHECK(ma_pki_certs_read(both, strlen(both), &v, &n, &e) == 0 && n == 2, "%s", e.msg);
	if (n == 2) CHECK(ma_pki_cert_verify(v[0], v[1], NULL, 0, 1, 0, &e) == 0, "%s", e.msg);
	ma_pki_certs_free(v, n);
	free(a), free(b), free(both);
}

static void test_jws(void)
{
	static const char *content = "Hello from the other side. I must have called a thousand times.";
	static const struct { const char *content, *secret, *want; } v[] = {
		{"Hello from the other side. I must have called a thousand times.", "my voice is my passcode",
		 "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..VShe2taLd-YTrmWuRkcL_8QTNDHYxQIEBsAYYiIj1_8"},
		{"", "my voice is my passcode",
		 "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..7Ui1ALizW4jXphVUB7xUqC9vLYLL9RZeOFfVLoB7Tgk"},
		{"Hello from the other side. I must have called a thousand times.", "",
		 "eyJhbGciOiJIUzI1NiIsImtpZCI6Impvc2h1YSJ9..UfkqvDGiIFxrMnFseDj9LYJOLNrvjW8aHhF71mvvAs8"}};
	ma_err e = {0};
	for (int i = 0; i < 3; i++) {
		size_t n;
		char *got = ma_pki_jws_sign(v[i].content, strlen(v[i].content), "joshua", v[i].secret, &n, &e);
		CHECK_STR(got, v[i].want);
		CHECK(got && n == strlen(v[i].want), "length");
		CHECK(ma_pki_jws_verify(v[i].content, strlen(v[i].content), "joshua", v[i].secret, v[i].want,
					strlen(v[i].want), &e) == 1, "vector %d does not verify", i);
		free(got);
	}
	char *h = ma_pki_jws_sign("x", 1, "abcdef", "0123456789abcdef", NULL, &e);
	CHECK(h && !strncmp(h, "eyJhbGciOiJIUzI1NiIsImtpZCI6ImFiY2RlZiJ9..", 42), "%s", h);
	free(h);
	const char *good = v[0].want;
	char bad[128];
	strcpy(bad, good);
	bad[strlen(bad) - 1] ^= 1;
	CHECK(ma_pki_jws_verify(content, strlen(content), "joshua", "my voice is my passcode", bad, strlen(bad), &e) == 0 &&
		      strstr(e.msg, "does not match"), "tampered signature accepted");
	CHECK(ma_pki_jws_verify(content, strlen(content) - 1, "joshua", "my voice is my passcode", good, strlen(good),
				&e) == 0, "changed content accepted");
	CHECK(ma_pki_jws_verify(content, strlen(content), "joshub", "my voice is my passcode", good, strlen(good), &e) ==
		      0, "other kid accepted");
	CHECK(ma_pki_jws_verify(content, strlen(content), "joshua", "my voice is my passcode", good, strlen(good) - 1,
				&e) == 0, "prefix accepted");
}

static void test_aead(void)
{
	ma_err e = {0};
	char hex[65];
	unsigned char key[32], key2[32], *ct, *pt;
	size_t klen, n, m;
	const char *msg = "-----BEGIN RSA PRIVATE KEY-----\nsecret\n-----END RSA PRIVATE KEY-----\n";
	CHECK(ma_pki_certificate_key(hex, &e) == 0 && strlen(hex) == 64, "%s", e.msg);
	CHECK(ma_pki_unhex(hex, key, sizeof key, &klen, &e) == 0 && klen == 32, "%s", e.msg);
	CHECK(ma_pki_seal(key, 32, msg, strlen(msg), &ct, &n, &e) == 0 && n == 12 + strlen(msg) + 16, "%s", e.msg);
	CHECK(ma_pki_open(key, 32, ct, n, &pt, &m, &e) == 0 && m == strlen(msg) && !memcmp(pt, msg, m), "%s", e.msg);
	ma_pki_secret_free(pt, m);
	/* two seals differ (random nonce) */
	unsigned char *ct2;
	size_t n2;
	CHECK(ma_pki_seal(key, 32, msg, strlen(msg), &ct2, &n2, &e) == 0 && memcmp(ct, ct2, n), "nonce reuse");
	free(ct2);
	/* any flipped byte in nonce, ciphertext or tag is rejected */
	size_t spots[] = {0, 11, 12, n / 2, n - 17, n - 16, n - 1};
	for (size_t i = 0; i < sizeof spots / sizeof *spots; i++) {
		ct[spots[i]] ^= 0x01;
		CHECK(ma_pki_open(key, 32, ct, n, &pt, &m, &e) == -1 && strstr(e.msg, "authentication failed"),
		      "flip at %zu accepted", spots[i]);
		ct[spots[i]] ^= 0x01;
	}
	memcpy(key2, key, 32);
	key2[5] ^= 0x80;
	CHECK(ma_pki_open(key2, 32, ct, n, &pt, &m, &e) == -1, "wrong key accepted");
	CHECK(ma_pki_open(key, 32, ct, 27, &pt, &m, &e) == -1 && strstr(e.msg, "too short"), "%s", e.msg);
	CHECK(ma_pki_open(key, 32, ct, n - 1, &pt, &m, &e) == -1, "truncated accepted");
	CHECK(ma_pki_seal(key, 20, "x", 1, &ct2, &n2, &e) == -1 && strstr(e.msg, "want 32"), "%s", e.msg);
	free(ct);
	/* empty plaintext: nonce and tag only */
	CHECK(ma_pki_seal(key, 32, "", 0, &ct, &n, &e) == 0 && n == 28, "%s", e.msg);
	CHECK(ma_pki_open(key, 32, ct, n, &pt, &m, &e) == 0 && m == 0, "%s", e.msg);
	ma_pki_secret_free(pt, 1);
	free(ct);
	/* hex */
	CHECK(ma_pki_unhex("abc", key, 32, &klen, &e) == -1 && strstr(e.msg, "odd"), "%s", e.msg);
	CHECK(ma_pki_unhex("zz", key, 32, &klen, &e) == -1 && strstr(e.msg, "bad digit"), "%s", e.msg);
	CHECK(ma_pki_unhex("0A0b", key, 32, &klen, &e) == 0 && klen == 2 && key[0] == 10 && key[1] == 11, "%s", e.msg);
}

static void test_random_and_hash(void)
{
	ma_err e = {0};
	/* the engine's DRBG (engine/pki_misc.c): Hash_DRBG over SHA-256 at 256-bit strength */
	EVP_RAND_CTX *drbg = RAND_get0_private(NULL);
	CHECK(drbg && !strcmp(EVP_RAND_get0_name(EVP_RAND_CTX_get0_rand(drbg)), "HASH-DRBG") &&
		      EVP_RAND_get_strength(drbg) == 256, "the private DRBG is %s",
	      drbg ? EVP_RAND_get0_name(EVP_RAND_CTX_get0_rand(drbg)) : "missing");
	char id[7], secret[17], id2[7];
	CHECK(ma_pki_token_chars(id, 6, &e) == 0 && ma_pki_token_chars(secret, 16, &e) == 0, "%s", e.msg);
	CHECK(strlen(id) == 6 && strlen(secret) == 16, "lengths");
	CHECK(strspn(id, "0123456789abcdefghijklmnopqrstuvwxyz") == 6 &&
		      strspn(secret, "0123456789abcdefghijklmnopqrstuvwxyz") == 16, "%s.%s", id, secret);
	ma_pki_token_chars(id2, 6, &e);
	CHECK(strcmp(id, id2), "two ids equal: %s", id);
	/* every character of the alphabet shows up over many draws */
	char many[3601];
	ma_pki_token_chars(many, 3600, &e);
	for (const char *a = "0123456789abcdefghijklmnopqrstuvwxyz"; *a; a++) CHECK(strchr(many, *a), "missing %c", *a);
	unsigned char r1[16], r2[16];
	CHECK(ma_pki_random(r1, 16, &e) == 0 && ma_pki_random(r2, 16, &e) == 0 && memcmp(r1, r2, 16), "random");
	char h[65];
	ma_sha256_hex("abc", 3, h);
	CHECK_STR(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	ma_sha256_hex("", 0, h);
	CHECK_STR(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

int main(void)
{
	if (!mkdtemp(dir)) return 2;
	ma_pki_choose_drbg(); /* as bindings/lpki.c does when the module opens */
	setup_chain();
	RUN(test_keygen_algorithms);
	RUN(test_ec_keys_checked);
	RUN(test_keygen_parallel);
	RUN(test_rsa_keys_checked);
	RUN(test_rsa_sieve);
	RUN(test_rsa_check_refuses);
	RUN(test_rsa_keys_fips);
	RUN(test_rsa_openssl_generator);
	RUN(test_pem_roundtrip);
	RUN(test_legacy_paths_same_bytes);
	RUN(test_pem_errors);
	RUN(test_ca_and_leaf);
	RUN(test_ecdsa_p384_and_subject);
	RUN(test_verify);
	RUN(test_covers);
	RUN(test_pin);
	RUN(test_csr);
	RUN(test_certs_chain);
	RUN(test_jws);
	RUN(test_aead);
	RUN(test_random_and_hash);
	ma_pki_cert_free(leaf);
	ma_pki_cert_free(cacert);
	ma_pki_key_free(leafkey);
	ma_pki_key_free(cakey);
	sh("rm -rf %s", dir);
	DONE();
}
