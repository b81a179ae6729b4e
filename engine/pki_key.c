/* Keys: generation (also in parallel), PEM read/write in kubeadm's encodings. */
#include "pki_int.h"

#include <pthread.h>
#include <stdarg.h>
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
		return ma_fail(e, "malformed PEM: BEGIN line at offset %zu has no label", (size_t)(p - s));
	memcpy(b->label, lab, (size_t)(dash - lab));
	b->label[dash - lab] = '\0';
	char endline[96];
	int n = snprintf(endline, sizeof endline, "-----END %s-----", b->label);
	const char *q = memmem(dash + 5, (size_t)(end - dash - 5), endline, (size_t)n);
	if (!q) return ma_fail(e, "truncated PEM: \"BEGIN %s\" has no END line", b->label);
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

ma_pki_key *ma_pki_genkey(const char *alg, ma_err *e)
{
	EVP_PKEY *k = NULL;
	if (!alg || !*alg || !strcmp(alg, "RSA-2048")) return ma_pki_rsa_generate(2048, e);
	else if (!strcmp(alg, "RSA-3072")) return ma_pki_rsa_generate(3072, e);
	else if (!strcmp(alg, "RSA-4096")) return ma_pki_rsa_generate(4096, e);
	else if (!strcmp(alg, "ECDSA-P256")) k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	else if (!strcmp(alg, "ECDSA-P384")) k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384");
	else {
		ma_fail(e, "unknown encryption algorithm \"%s\": valid are RSA-2048, RSA-3072, RSA-4096, ECDSA-P256, "
			   "ECDSA-P384", alg);
		return NULL;
	}
	if (!k) ma_pki_sslfail(e, "generating a %s key failed", alg);
	return k;
}

struct ma_pki_keygen {
	pthread_mutex_t mu;
	pthread_cond_t cv;   /* a key finished, or the generation failed */
	char **algs;         /* owned copies, one per queued key */
	ma_pki_key **out;    /* out[i]: key i once made, until taken */
	size_t cap, n, next; /* n queued; next: the first not started */
	size_t taken;        /* keys [0, taken) were handed over */
	pthread_t *tids;     /* every thread started (joined by ma_pki_keygen_free) */
	int ntids, running, max_workers, stop, failed;
	ma_err err;
};

/* Live generators, stopped and joined at exit: a worker still making a key when exit() runs
 * OpenSSL's cleanup would then call into a torn-down library (os.exit skips the Lua state's close). */
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static ma_pki_keygen *live[16];

static void join_workers(ma_pki_keygen *g)
{
	pthread_mutex_lock(&g->mu);
	g->stop = 1;
	int ntids = g->ntids;
	g->ntids = 0;
	pthread_mutex_unlock(&g->mu);
	for (int t = 0; t < ntids; t++) pthread_join(g->tids[t], NULL);
}

static void stop_live_at_exit(void)
{
	pthread_mutex_lock(&live_mu);
	for (size_t i = 0; i < sizeof live / sizeof *live; i++)
		if (live[i]) join_workers(live[i]);
	pthread_mutex_unlock(&live_mu);
}

static void register_live(ma_pki_keygen *g, int on)
{
	static int registered;
	pthread_mutex_lock(&live_mu);
	if (on && !registered) registered = !atexit(stop_live_at_exit);
	for (size_t i = 0; i < sizeof live / sizeof *live; i++)
		if (on ? !live[i] : live[i] == g) {
			live[i] = on ? g : NULL;
			break;
		}
	pthread_mutex_unlock(&live_mu);
}

/* Makes key i with the lock released; called with g->mu held, returns with it held. */
static void make_one(ma_pki_keygen *g, size_t i)
{
	char alg[16];
	snprintf(alg, sizeof alg, "%s", g->algs[i]); /* algs may be reallocated meanwhile, not its strings */
	pthread_mutex_unlock(&g->mu);
	ma_err e = {0};
	ma_pki_key *k = ma_pki_genkey(alg, &e);
	pthread_mutex_lock(&g->mu);
	if (k) g->out[i] = k;
	else if (!g->failed) g->failed = 1, g->err = e;
	pthread_cond_broadcast(&g->cv);
}

static void *keygen_worker(void *arg)
{
	ma_pki_keygen *g = arg;
	pthread_mutex_lock(&g->mu);
	while (!g->stop && !g->failed && g->next < g->n) make_one(g, g->next++);
	g->running--;
	pthread_mutex_unlock(&g->mu);
	return NULL;
}

ma_pki_keygen *ma_pki_keygen_new(int workers, ma_err *e)
{
	ma_pki_keygen *g = calloc(1, sizeof *g);
	if (!g) {
		ma_fail(e, "out of memory");
		return NULL;
	}
	if (workers < 0) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		workers = cpus > 1 ? (int)cpus : 0;
	}
	g->max_workers = workers > 64 ? 64 : workers;
	pthread_mutex_init(&g->mu, NULL);
	pthread_cond_init(&g->cv, NULL);
	register_live(g, 1); /* beyond 16 live ones (never, in a flow), a generator is not joined at exit */
	return g;
}

static int check_alg(const char *a, ma_err *e)
{
	if (!a || !*a) return 0;
	for (int k = 0; ma_pki_algorithms[k]; k++)
		if (!strcmp(a, ma_pki_algorithms[k])) return 0;
	ma_pki_genkey(a, e); /* says which names are valid */
	return -1;
}

int ma_pki_keygen_add(ma_pki_keygen *g, const char *const algs[], size_t n, ma_err *e)
{
	for (size_t i = 0; i < n; i++) /* before spending seconds on keys */
		if (check_alg(algs[i], e)) return -1;
	pthread_mutex_lock(&g->mu);
	int rc = 0;
	if (g->n + n > g->cap) {
		size_t cap = g->cap ? g->cap : 16;
		while (cap < g->n + n) cap *= 2;
		char **na = realloc(g->algs, cap * sizeof *na);
		if (na) g->algs = na;
		ma_pki_key **no = na ? realloc(g->out, cap * sizeof *no) : NULL;
		if (no) g->out = no, g->cap = cap;
		else rc = ma_fail(e, "out of memory queueing %zu keys", n);
	}
	for (size_t i = 0; !rc && i < n; i++) {
		if (!(g->algs[g->n] = strdup(algs[i] && *algs[i] ? algs[i] : "RSA-2048"))) {
			rc = ma_fail(e, "out of memory queueing %zu keys", n);
			break;
		}
		g->out[g->n++] = NULL;
	}
	/* a thread per key not started, up to the limit; none started is not an error: take() makes them */
	while (!rc && g->running < g->max_workers && (size_t)g->running < g->n - g->next) {
		if (g->ntids % 8 == 0) {
			pthread_t *nt = realloc(g->tids, (size_t)(g->ntids + 8) * sizeof *nt);
			if (!nt) break;
			g->tids = nt;
		}
		if (pthread_create(&g->tids[g->ntids], NULL, keygen_worker, g)) break;
		g->ntids++, g->running++;
	}
	pthread_mutex_unlock(&g->mu);
	return rc;
}

int ma_pki_keygen_take(ma_pki_keygen *g, size_t n, ma_pki_key *out[], ma_err *e)
{
	pthread_mutex_lock(&g->mu);
	if (n > g->n - g->taken) {
		size_t left = g->n - g->taken;
		pthread_mutex_unlock(&g->mu);
		return ma_fail(e, "%zu keys asked for, %zu queued", n, left);
	}
	size_t end = g->taken + n;
	for (size_t i = g->taken; i < end && !g->failed;) {
		if (g->out[i]) i++;
		else if (g->next < end) make_one(g, g->next++); /* help rather than wait idle */
		else pthread_cond_wait(&g->cv, &g->mu);
	}
	int rc = 0;
	if (g->failed) {
		if (e) *e = g->err;
		rc = -1;
	} else {
		memcpy(out, g->out + g->taken, n * sizeof *out);
		memset(g->out + g->taken, 0, n * sizeof *out);
		g->taken = end;
	}
	pthread_mutex_unlock(&g->mu);
	return rc;
}

size_t ma_pki_keygen_left(const ma_pki_keygen *g)
{
	pthread_mutex_lock((pthread_mutex_t *)&g->mu);
	size_t left = g->n - g->taken;
	pthread_mutex_unlock((pthread_mutex_t *)&g->mu);
	return left;
}

void ma_pki_keygen_free(ma_pki_keygen *g)
{
	if (!g) return;
	register_live(g, 0);
	join_workers(g);
	for (size_t i = 0; i < g->n; i++) {
		ma_pki_key_free(g->out[i]);
		free(g->algs[i]);
	}
	free(g->out);
	free(g->algs);
	free(g->tids);
	pthread_cond_destroy(&g->cv);
	pthread_mutex_destroy(&g->mu);
	free(g);
}

int ma_pki_genkeys_parallel(const char *const algs[], size_t n, ma_pki_key *out[], int nthreads, ma_err *e)
{
	memset(out, 0, n * sizeof *out);
	if (nthreads <= 0) nthreads = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if ((size_t)nthreads > n) nthreads = (int)n;
	/* nthreads - 1 workers: the calling thread works too, in take() */
	ma_pki_keygen *g = ma_pki_keygen_new(nthreads > 1 ? nthreads - 1 : 0, e);
	if (!g) return -1;
	int rc = ma_pki_keygen_add(g, algs, n, e) ? -1 : ma_pki_keygen_take(g, n, out, e);
	ma_pki_keygen_free(g);
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
	return ma_fail(e, "%s is neither in RSA nor ECDSA format (%s)", what, OBJ_nid2sn(id));
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
			ma_fail(e, "encrypted private keys are not supported");
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
		if (!blocks) ma_fail(e, "no PEM data found (expected a %s key)", want_pub ? "public" : "private");
		else ma_fail(e, "no %s key found in PEM data (found %s)", want_pub ? "public" : "private", seen);
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
	if (!b || !PEM_write_bio_PUBKEY(b, (EVP_PKEY *)k))
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
