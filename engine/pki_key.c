/* Keys: generation (also in parallel), PEM read/write in kubeadm's encodings. */
#include "pki_int.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/decoder.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

const char *const ma_pki_algorithms[] = {"RSA-2048", "RSA-3072", "RSA-4096", "ECDSA-P256", "ECDSA-P384", NULL};

int ma_pki_sslfail(ma_err *e, const char *fmt, ...)
{
	unsigned long code = ERR_peek_last_error();
	const char *why = code ? ERR_reason_error_string(code) : NULL;
	if (e) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(e->msg, sizeof e->msg, fmt, ap);
		va_end(ap);
		if (why && n >= 0 && (size_t)n < sizeof e->msg)
			snprintf(e->msg + n, sizeof e->msg - (size_t)n, ": %s", why);
		e->code = 0;
		e->kind = "openssl"; /* the library refused: its reason is in the message */
	}
	ERR_clear_error();
	return -1;
}

char *ma_pki_bio_take(BIO *b, size_t *len, ma_err *e)
{
	char *data;
	long n = BIO_get_mem_data(b, &data);
	char *out = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (!out) {
		ma_fail(e, "out of memory");
		return NULL;
	}
	memcpy(out, data, (size_t)n);
	out[n] = '\0';
	if (len) *len = (size_t)n;
	return out; /* the BIO's buffer is cleansed by BUF_MEM_free when the BIO is freed */
}

void ma_pki_secret_free(void *p, size_t len)
{
	if (p) OPENSSL_clear_free(p, len);
}

/* Finds "-----BEGIN <label>-----" ... "-----END <label>-----". */
int ma_pki_pem_next(const char *s, size_t len, size_t *pos, ma_pem_block *b, ma_err *e)
{
	static const char begin[] = "-----BEGIN ";
	const char *end = s + len, *p = *pos < len ? memmem(s + *pos, len - *pos, begin, sizeof begin - 1) : NULL;
	if (!p) return 0;
	const char *lab = p + sizeof begin - 1, *dash = memmem(lab, (size_t)(end - lab), "-----", 5);
	const char *nl = memchr(lab, '\n', (size_t)(end - lab));
	if (!dash || (nl && nl < dash) || (size_t)(dash - lab) >= sizeof b->label)
		return ma_fail_kind(e, "malformed", "malformed PEM: BEGIN line at offset %zu has no label", (size_t)(p - s));
	memcpy(b->label, lab, (size_t)(dash - lab));
	b->label[dash - lab] = '\0';
	char endline[96];
	int n = snprintf(endline, sizeof endline, "-----END %s-----", b->label);
	const char *q = memmem(dash + 5, (size_t)(end - dash - 5), endline, (size_t)n);
	if (!q) return ma_fail_kind(e, "malformed", "truncated PEM: \"BEGIN %s\" has no END line", b->label);
	b->start = p;
	b->len = (size_t)(q + n - p);
	*pos = (size_t)(q + n - s);
	return 1;
}

static int nopass(char *buf, int size, int rw, void *u)
{
	(void)buf, (void)size, (void)rw, (void)u;
	return -1; /* never prompt for a passphrase */
}

/* The modulus size of an RSA algorithm name, 0 for any other. */
static unsigned rsa_bits(const char *alg)
{
	if (!alg || !*alg || !strcmp(alg, "RSA-2048")) return 2048;
	if (!strcmp(alg, "RSA-3072")) return 3072;
	if (!strcmp(alg, "RSA-4096")) return 4096;
	return 0;
}

ma_pki_key *ma_pki_genkey(const char *alg, ma_err *e)
{
	EVP_PKEY *k = NULL;
	unsigned bits = rsa_bits(alg);
	if (bits) return ma_pki_rsa_generate(bits, e);
	else if (!strcmp(alg, "ECDSA-P256")) {
		if (!(k = ma_pki_legacy_ec_generate(NID_X9_62_prime256v1))) k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	} else if (!strcmp(alg, "ECDSA-P384")) {
		if (!(k = ma_pki_legacy_ec_generate(NID_secp384r1))) k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384");
	}
	else {
		ma_fail(e, "unknown encryption algorithm \"%s\": valid are RSA-2048, RSA-3072, RSA-4096, ECDSA-P256, "
			   "ECDSA-P384", alg);
		return NULL;
	}
	if (!k) ma_pki_sslfail(e, "generating a %s key failed", alg);
	return k;
}

/* A batch is a list of tasks taken by the threads as they finish the last: an EC key is one task,
 * an RSA key two (its primes, see ma_pki_rsa_job), and the thread that finds a key's second prime
 * makes the key; an RSA key from OpenSSL's generator is one task. */
struct gentask {
	size_t key;
	int part; /* -1: the whole key; 0, 1: the RSA key's p, q */
};

struct genjob {
	const char *const *algs;
	ma_pki_key **out;
	ma_pki_rsa_job **rsa; /* per key: NULL but for RSA */
	atomic_int *primes;   /* per key: primes found */
	struct gentask *tasks;
	size_t ntasks;
	atomic_size_t next; /* next task to take */
	atomic_int failed;
	ma_err err;
	pthread_mutex_t mu;
};

static void genfail(struct genjob *j, const ma_err *e)
{
	pthread_mutex_lock(&j->mu);
	if (!atomic_exchange(&j->failed, 1)) j->err = *e;
	pthread_mutex_unlock(&j->mu);
}

static void *genworker(void *arg)
{
	struct genjob *j = arg;
	for (size_t i; !atomic_load(&j->failed) && (i = atomic_fetch_add(&j->next, 1)) < j->ntasks;) {
		const struct gentask *t = &j->tasks[i];
		ma_err e;
		if (t->part < 0) {
			if (!(j->out[t->key] = ma_pki_genkey(j->algs[t->key], &e))) genfail(j, &e);
			continue;
		}
		ma_pki_rsa_job_prime(j->rsa[t->key], t->part);
		if (atomic_fetch_add(&j->primes[t->key], 1) == 1 &&
		    !(j->out[t->key] = ma_pki_rsa_job_finish(j->rsa[t->key], &e)))
			genfail(j, &e);
	}
	return NULL;
}

int ma_pki_genkeys_parallel(const char *const algs[], size_t n, ma_pki_key *out[], int nthreads, ma_err *e)
{
	memset(out, 0, n * sizeof *out);
	for (size_t i = 0; i < n; i++) { /* validate names before spending seconds on keys */
		const char *a = algs[i];
		int ok = !a || !*a;
		for (int k = 0; !ok && ma_pki_algorithms[k]; k++) ok = !strcmp(a, ma_pki_algorithms[k]);
		if (!ok) {
			ma_pki_genkey(a, e);
			return -1;
		}
	}
	int own = 0; /* RSA keys from the engine's generator (two tasks each) or OpenSSL's (one) */
	for (size_t i = 0; i < n; i++)
		if (rsa_bits(algs[i])) {
			if ((own = ma_pki_rsa_own_generator(e)) < 0) return -1;
			break;
		}
	struct genjob j = {.algs = algs, .out = out};
	j.rsa = calloc(n ? n : 1, sizeof *j.rsa);
	j.primes = calloc(n ? n : 1, sizeof *j.primes);
	j.tasks = calloc(2 * n + 1, sizeof *j.tasks);
	int rc = -1;
	if (!j.rsa || !j.primes || !j.tasks) {
		ma_fail(e, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		unsigned bits = rsa_bits(algs[i]);
		atomic_init(&j.primes[i], 0);
		if (!bits || !own) {
			j.tasks[j.ntasks++] = (struct gentask){i, -1};
			continue;
		}
		if (!(j.rsa[i] = ma_pki_rsa_job_new(bits, e))) goto out;
		j.tasks[j.ntasks++] = (struct gentask){i, 0};
		j.tasks[j.ntasks++] = (struct gentask){i, 1};
	}
	if (nthreads <= 0) nthreads = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (nthreads < 1) nthreads = 1;
	if ((size_t)nthreads > j.ntasks) nthreads = (int)j.ntasks;
	if (nthreads > 64) nthreads = 64;
	atomic_init(&j.next, 0);
	atomic_init(&j.failed, 0);
	pthread_mutex_init(&j.mu, NULL);
	pthread_t tid[64];
	int started = 0;
	for (; started < nthreads - 1; started++)
		if (pthread_create(&tid[started], NULL, genworker, &j)) break;
	genworker(&j); /* the calling thread works too */
	for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
	pthread_mutex_destroy(&j.mu);
	if (atomic_load(&j.failed)) {
		if (e) *e = j.err;
		goto out;
	}
	rc = 0;
out:
	for (size_t i = 0; j.rsa && i < n; i++) ma_pki_rsa_job_free(j.rsa[i]);
	if (rc) for (size_t i = 0; i < n; i++) ma_pki_key_free(out[i]), out[i] = NULL;
	free(j.rsa);
	free(j.primes);
	free(j.tasks);
	return rc;
}

void ma_pki_key_free(ma_pki_key *k)
{
	EVP_PKEY_free(k);
}

const char *ma_pki_key_type(const ma_pki_key *k)
{
	switch (EVP_PKEY_get_base_id(k)) {
	case EVP_PKEY_RSA: return "RSA";
	case EVP_PKEY_EC: return "ECDSA";
	default: return "unknown";
	}
}

int ma_pki_key_bits(const ma_pki_key *k)
{
	return EVP_PKEY_get_bits(k);
}

int ma_pki_key_is_private(const ma_pki_key *k)
{
	int legacy = ma_pki_legacy_is_private(k);
	if (legacy >= 0) return legacy;
	BIGNUM *d = NULL;
	const char *name = EVP_PKEY_get_base_id(k) == EVP_PKEY_RSA ? OSSL_PKEY_PARAM_RSA_D : OSSL_PKEY_PARAM_PRIV_KEY;
	int ok = EVP_PKEY_get_bn_param(k, name, &d) == 1;
	BN_clear_free(d);
	ERR_clear_error();
	return ok;
}

static int rsa_or_ec(EVP_PKEY *k, const char *what, ma_err *e)
{
	int id = EVP_PKEY_get_base_id(k);
	if (id == EVP_PKEY_RSA || id == EVP_PKEY_EC) return 0;
	return ma_fail_kind(e, "unsupported", "%s is neither in RSA nor ECDSA format (%s)", what, OBJ_nid2sn(id));
}

static int is_private_label(const char *l)
{
	return !strcmp(l, "RSA PRIVATE KEY") || !strcmp(l, "EC PRIVATE KEY") || !strcmp(l, "PRIVATE KEY");
}

/* Walks the PEM blocks for the first key; want_pub also takes public key blocks. */
static EVP_PKEY *read_key(const char *pem, size_t len, int want_pub, ma_err *e)
{
	ma_pem_block b;
	size_t pos = 0;
	int r, blocks = 0;
	char seen[128] = "";
	while ((r = ma_pki_pem_next(pem, len, &pos, &b, e)) == 1) {
		blocks++;
		int priv = is_private_label(b.label);
		int pub = want_pub && (!strcmp(b.label, "PUBLIC KEY") || !strcmp(b.label, "RSA PUBLIC KEY"));
		if (!strcmp(b.label, "ENCRYPTED PRIVATE KEY")) {
			ma_fail_kind(e, "unsupported", "encrypted private keys are not supported");
			return NULL;
		}
		if (!priv && !pub) {
			if (strlen(seen) + strlen(b.label) + 3 < sizeof seen)
				strcat(strcat(seen, *seen ? ", " : ""), b.label);
			continue;
		}
		BIO *bio = BIO_new_mem_buf(b.start, (int)b.len);
		EVP_PKEY *k = NULL;
		if (bio && priv) {
			if (!(k = ma_pki_legacy_read_private(&b))) k = PEM_read_bio_PrivateKey(bio, NULL, nopass, NULL);
		} else if (bio) { /* PKIX or PKCS#1 public key: the decoders know both structures */
			OSSL_DECODER_CTX *d = OSSL_DECODER_CTX_new_for_pkey(&k, "PEM", NULL, NULL, EVP_PKEY_PUBLIC_KEY,
									   NULL, NULL);
			if (!d || !OSSL_DECODER_from_bio(d, bio)) k = NULL;
			OSSL_DECODER_CTX_free(d);
		}
		BIO_free(bio);
		if (!k) {
			ma_pki_sslfail(e, "malformed %s PEM block", b.label);
			return NULL;
		}
		if (rsa_or_ec(k, b.label, e)) {
			EVP_PKEY_free(k);
			return NULL;
		}
		if (want_pub && priv) { /* keep only the public half */
			unsigned char *der = NULL;
			int n = i2d_PUBKEY(k, &der);
			const unsigned char *p = der;
			EVP_PKEY *pk = n > 0 ? d2i_PUBKEY(NULL, &p, n) : NULL;
			OPENSSL_free(der);
			EVP_PKEY_free(k);
			if (!pk) ma_pki_sslfail(e, "extracting the public key failed");
			return pk;
		}
		return k;
	}
	if (r == 0) {
		if (!blocks) ma_fail_kind(e, "malformed", "no PEM data found (expected a %s key)", want_pub ? "public" : "private");
		else ma_fail_kind(e, "malformed", "no %s key found in PEM data (found %s)", want_pub ? "public" : "private", seen);
	}
	return NULL;
}

ma_pki_key *ma_pki_key_read(const char *pem, size_t len, ma_err *e)
{
	return read_key(pem, len, 0, e);
}

ma_pki_key *ma_pki_pubkey_read(const char *pem, size_t len, ma_err *e)
{
	return read_key(pem, len, 1, e);
}

char *ma_pki_key_pem(const ma_pki_key *k, size_t *len, ma_err *e)
{
	if (!ma_pki_key_is_private(k)) {
		ma_fail(e, "key has no private part");
		return NULL;
	}
	/* "traditional" = the type-specific structure: PKCS#1 for RSA, SEC1 for EC */
	BIO *b = BIO_new(BIO_s_secmem());
	EVP_PKEY *l = ma_pki_legacy_copy((EVP_PKEY *)k); /* the same bytes, without an encoder */
	char *out = NULL;
	if (!b || !PEM_write_bio_PrivateKey_traditional(b, l ? l : (EVP_PKEY *)k, NULL, NULL, 0, NULL, NULL))
		ma_pki_sslfail(e, "encoding the private key failed");
	else
		out = ma_pki_bio_take(b, len, e);
	EVP_PKEY_free(l);
	BIO_free(b);
	return out;
}

char *ma_pki_pubkey_pem(const ma_pki_key *k, size_t *len, ma_err *e)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *out = NULL;
	/* A legacy copy's SubjectPublicKeyInfo comes from the ASN.1 templates (engine/pki_legacy.c):
	 * the same DER without the encoder context a provider key costs (~3.5 M instructions). */
	EVP_PKEY *l = ma_pki_legacy_copy((EVP_PKEY *)k);
	unsigned char *der = NULL;
	int n = l ? i2d_PUBKEY(l, &der) : 0;
	int ok = b && (n > 0 ? PEM_write_bio(b, "PUBLIC KEY", "", der, n) > 0 : PEM_write_bio_PUBKEY(b, (EVP_PKEY *)k));
	OPENSSL_free(der);
	EVP_PKEY_free(l);
	if (!ok)
		ma_pki_sslfail(e, "encoding the public key failed");
	else
		out = ma_pki_bio_take(b, len, e);
	BIO_free(b);
	return out;
}

int ma_pki_key_equal(const ma_pki_key *a, const ma_pki_key *b)
{
	int r = EVP_PKEY_eq(a, b);
	ERR_clear_error();
	return r == 1;
}

int ma_pki_key_matches_cert(const ma_pki_key *k, const ma_pki_cert *c, ma_err *e)
{
	EVP_PKEY *pub = X509_get0_pubkey(c);
	if (!pub) return ma_pki_sslfail(e, "certificate has no usable public key");
	int r = EVP_PKEY_eq(k, pub);
	ERR_clear_error();
	if (r == 1) return 1;
	ma_fail(e, "private key does not match the certificate's public key");
	return 0;
}
