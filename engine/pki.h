/* Crypto primitives for kubeadm-compatible PKI: keys, certificates, CSRs,
 * discovery pins, bootstrap-token JWS, copy-certs AES-GCM and secure random.
 * OpenSSL 3 EVP APIs only; formats as kubeadm (Go crypto/x509) writes them.
 *
 * Keys and certificates are opaque OpenSSL objects (EVP_PKEY / X509) so that
 * callers need no OpenSSL header. Every buffer returned by a function here is
 * malloc'ed; buffers that may hold secrets are freed with ma_pki_secret_free. */
#ifndef MA_PKI_H
#define MA_PKI_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

typedef struct evp_pkey_st ma_pki_key;
typedef struct x509_st ma_pki_cert;

/* ---- keys ---------------------------------------------------------------- */

/* kubeadm's encryptionAlgorithm names, NULL-terminated. */
extern const char *const ma_pki_algorithms[];

/* RSA-2048 | RSA-3072 | RSA-4096 | ECDSA-P256 | ECDSA-P384 ("" = RSA-2048). */
ma_pki_key *ma_pki_genkey(const char *alg, ma_err *e);
/* Generates n keys on nthreads threads (<= 0: one per online CPU). On failure
 * no key is returned (out[] is all NULL). */
int ma_pki_genkeys_parallel(const char *const algs[], size_t n, ma_pki_key *out[], int nthreads, ma_err *e);
void ma_pki_key_free(ma_pki_key *k); /* OpenSSL clears private key material */
/* Which generator makes RSA keys (SECURITY.md, "Key generation"): "moonadm" (engine/pki_rsa.c, to
 * FIPS 186-5's rules) or "openssl" (OpenSSL's own). ma_pki_rsa_generator_set(name, source, e) chooses
 * it for every key made after it; source says how the user gave it, for messages (a flag such as
 * "--rsa-generator", or a variable's name); name NULL: the environment's MOONADM_RSA_GENERATOR (unset
 * or empty: moonadm). In FIPS mode (the kernel's /proc/sys/crypto/fips_enabled, or OpenSSL's default
 * properties) it is openssl, and asking for moonadm is an error. Returns 0, or -1 (e says why). Until
 * one is set, the environment's holds. */
int ma_pki_rsa_generator_set(const char *name, const char *source, ma_err *e);
/* The generator in force, "moonadm" or "openssl", and *why (a phrase: "the default",
 * "MOONADM_RSA_GENERATOR=openssl", "FIPS mode: ..."); NULL (e set) when the setting is wrong. */
const char *ma_pki_rsa_generator(const char **why, ma_err *e);

/* The first private key block (PKCS#1, SEC1 or PKCS#8) of a PEM text; other
 * blocks are skipped as client-go's keyutil does. Only RSA and ECDSA. */
ma_pki_key *ma_pki_key_read(const char *pem, size_t len, ma_err *e);
/* The first PUBLIC KEY / RSA PUBLIC KEY block, or the public half of the first
 * private key block: a public-only key. */
ma_pki_key *ma_pki_pubkey_read(const char *pem, size_t len, ma_err *e);
/* PKCS#1 "RSA PRIVATE KEY" / SEC1 "EC PRIVATE KEY"; free with ma_pki_secret_free. */
char *ma_pki_key_pem(const ma_pki_key *k, size_t *len, ma_err *e);
char *ma_pki_pubkey_pem(const ma_pki_key *k, size_t *len, ma_err *e); /* PKIX "PUBLIC KEY" */
const char *ma_pki_key_type(const ma_pki_key *k);                     /* "RSA", "ECDSA", "unknown" */
int ma_pki_key_bits(const ma_pki_key *k);
int ma_pki_key_is_private(const ma_pki_key *k);
/* 1 when the public parts of a and b are the same key. */
int ma_pki_key_equal(const ma_pki_key *a, const ma_pki_key *b);
/* 1 when key (private or public) is the key of cert, 0 (e says why) when not. */
int ma_pki_key_matches_cert(const ma_pki_key *k, const ma_pki_cert *c, ma_err *e);

/* ---- certificates -------------------------------------------------------- */

/* KeyUsage bits in RFC 5280 bit order; ExtKeyUsage bits. Names are the index. */
enum {
	MA_KU_DIGITAL_SIGNATURE = 1 << 0, MA_KU_CONTENT_COMMITMENT = 1 << 1, MA_KU_KEY_ENCIPHERMENT = 1 << 2,
	MA_KU_DATA_ENCIPHERMENT = 1 << 3, MA_KU_KEY_AGREEMENT = 1 << 4, MA_KU_CERT_SIGN = 1 << 5,
	MA_KU_CRL_SIGN = 1 << 6, MA_KU_ENCIPHER_ONLY = 1 << 7, MA_KU_DECIPHER_ONLY = 1 << 8,
};
enum {
	MA_EKU_SERVER_AUTH = 1 << 0, MA_EKU_CLIENT_AUTH = 1 << 1, MA_EKU_CODE_SIGNING = 1 << 2,
	MA_EKU_EMAIL_PROTECTION = 1 << 3, MA_EKU_TIME_STAMPING = 1 << 4, MA_EKU_OCSP_SIGNING = 1 << 5,
	MA_EKU_ANY = 1 << 6,
};
extern const char *const ma_pki_ku_names[];  /* NULL-terminated, "digital_signature", ... */
extern const char *const ma_pki_eku_names[]; /* NULL-terminated, "server_auth", ... */
/* Looks a usage name up in ma_pki_ku_names (ext = 0) or ma_pki_eku_names; the
 * error lists the valid names. */
int ma_pki_usage_bit(const char *name, int ext, unsigned *bit, ma_err *e);

typedef struct ma_pki_spec {
	const char *cn;
	const char *const *o;   size_t n_o;
	const char *const *dns; size_t n_dns;
	const char *const *ips; size_t n_ips;
	unsigned usages;        /* 0: kubeadm's (CA: DS|KE|certSign, leaf: DS|KE) */
	unsigned ext_usages;    /* leaves need at least one, as in kubeadm */
	int64_t not_before;     /* unix; 0: leaf = CA's NotBefore, CA = now - 5m */
	int64_t not_after;      /* unix; 0: NotBefore + 8760h (leaf) / 87600h (CA) */
	int is_ca;
} ma_pki_spec;

typedef struct ma_pki_name {
	char *cn;
	char **o; size_t n_o;
} ma_pki_name;

/* What ma_pki_cert_info and ma_pki_csr_parse report; free with ma_pki_info_free. */
typedef struct ma_pki_info {
	ma_pki_name subject, issuer;
	char **dns; size_t n_dns;
	char **ips; size_t n_ips;
	unsigned usages, ext_usages;
	int64_t not_before, not_after;
	int is_ca;
	const char *key_type; /* static string */
	int key_bits;
	char serial[41], ski[129], aki[129]; /* lowercase hex, "" when absent */
} ma_pki_info;
void ma_pki_info_free(ma_pki_info *in);

/* Self-signed CA (is_ca forced on): v3, random serial in [1, 2^63-2], KeyUsage
 * and BasicConstraints CA:TRUE critical, SKI, SAN, SHA-256 (SHA-384 for P-384). */
ma_pki_cert *ma_pki_ca_create(const ma_pki_key *key, const ma_pki_spec *s, ma_err *e);
/* A certificate for pub (private or public-only key) signed by ca/ca_key, with
 * AKI = the CA's SKI. */
ma_pki_cert *ma_pki_cert_sign(const ma_pki_key *pub, const ma_pki_spec *s, const ma_pki_cert *ca,
			      const ma_pki_key *ca_key, ma_err *e);
void ma_pki_cert_free(ma_pki_cert *c);
ma_pki_cert *ma_pki_cert_read(const char *pem, size_t len, ma_err *e); /* first CERTIFICATE */
/* Every CERTIFICATE block (a chain, leaf first); *out is freed with ma_pki_certs_free. */
int ma_pki_certs_read(const char *pem, size_t len, ma_pki_cert ***out, size_t *n, ma_err *e);
void ma_pki_certs_free(ma_pki_cert **v, size_t n);
char *ma_pki_cert_pem(const ma_pki_cert *c, size_t *len, ma_err *e);
int ma_pki_cert_info(const ma_pki_cert *c, ma_pki_info *out, ma_err *e);
/* Does c chain to ca (a trust anchor, need not be self-signed) through the
 * untrusted intermediates? Any EKU is accepted (as kubeadm's Go Verify call).
 * check_time: 0 = ignore validity periods, else check at `at` (0 = now). */
int ma_pki_cert_verify(const ma_pki_cert *c, const ma_pki_cert *ca, ma_pki_cert *const *inter, size_t n_inter,
		       int check_time, int64_t at, ma_err *e);
/* 1 when c's SANs cover the DNS name (wildcards as Go) or IP address, else 0;
 * the subject CN is never used. */
int ma_pki_cert_covers(const ma_pki_cert *c, const char *name, ma_err *e);
/* "sha256:<64 hex>" of the DER SubjectPublicKeyInfo (discovery-token-ca-cert-hash). */
int ma_pki_cert_pin(const ma_pki_cert *c, char out[72], ma_err *e);

/* PKCS#10 "CERTIFICATE REQUEST" PEM with the subject (CN, O) and SANs of s. */
char *ma_pki_csr_create(const ma_pki_key *key, const ma_pki_spec *s, size_t *len, ma_err *e);
/* Checks the CSR's signature; fills subject, dns, ips, key_type/bits and, if
 * pub is not NULL, returns its public key. */
int ma_pki_csr_parse(const char *pem, size_t len, ma_pki_info *out, ma_pki_key **pub, ma_err *e);

/* ---- bootstrap-token JWS, copy-certs AEAD, random, hashes ----------------- */

/* kubeadm's detached JWS: B64URL({"alg":"HS256","kid":"<kid>"}) + ".." + B64URL(HMAC-SHA256). */
char *ma_pki_jws_sign(const char *content, size_t len, const char *kid, const char *secret, size_t *outlen,
		      ma_err *e);
/* 1 valid, 0 not (constant-time compare of the whole string), -1 error. */
int ma_pki_jws_verify(const char *content, size_t len, const char *kid, const char *secret, const char *jws,
		      size_t jwslen, ma_err *e);

/* AES-GCM as Go's gcm.Seal(nonce, nonce, pt, nil): nonce(12) || ciphertext || tag(16).
 * keylen 32 (kubeadm's certificate key; 16 and 24 are accepted as Go does). */
int ma_pki_seal(const unsigned char *key, size_t keylen, const void *pt, size_t n, unsigned char **out,
		size_t *outlen, ma_err *e);
/* The plaintext (free with ma_pki_secret_free); tampering or a wrong key fail. */
int ma_pki_open(const unsigned char *key, size_t keylen, const void *in, size_t n, unsigned char **out,
		size_t *outlen, ma_err *e);

int ma_pki_random(void *buf, size_t n, ma_err *e);
/* Sets OpenSSL's DRBG to Hash_DRBG over SHA-256 (engine/pki_misc.c says why), once; call it before
 * OpenSSL's first use (bindings/lpki.c does as the module opens, engine/http.c before it reads a PEM). */
void ma_pki_choose_drbg(void);
/* n characters of [a-z0-9] as cluster-bootstrap makes them, NUL-terminated:
 * n = 6 for a token id, 16 for a token secret. */
int ma_pki_token_chars(char *out, size_t n, ma_err *e);
int ma_pki_certificate_key(char out[65], ma_err *e); /* 32 random bytes, hex */

/* Decodes exactly 2*n hex digits into out (capacity cap); *n gets the length. */
int ma_pki_unhex(const char *hex, unsigned char *out, size_t cap, size_t *n, ma_err *e);
void ma_pki_secret_free(void *p, size_t len); /* OPENSSL_cleanse + free */

#endif
