/* Helpers shared by the engine/pki_*.c files; not part of the engine API. */
#ifndef MA_PKI_INT_H
#define MA_PKI_INT_H

#include <openssl/bio.h>
#include <openssl/evp.h>

#include "pki.h"

/* ma_fail with ": <OpenSSL reason>" appended; clears OpenSSL's error queue. */
int ma_pki_sslfail(ma_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One PEM block found by ma_pki_pem_next. */
typedef struct ma_pem_block {
	char label[64];
	const char *start; /* "-----BEGIN" */
	size_t len;        /* up to and including the END line */
} ma_pem_block;
/* Next block at or after *pos: 1 found, 0 none left, -1 malformed/truncated (e set). */
int ma_pki_pem_next(const char *s, size_t len, size_t *pos, ma_pem_block *b, ma_err *e);

/* Copies a memory BIO's contents into a NUL-terminated malloc'ed buffer. */
char *ma_pki_bio_take(BIO *b, size_t *len, ma_err *e);

/* A new RSA key of exactly `bits` bits (2048 to 16384), e = 65537, from the generator in force
 * (ma_pki_rsa_generator): engine/pki_rsa.c's own to FIPS 186-5's rules, or OpenSSL's. */
EVP_PKEY *ma_pki_rsa_generate(unsigned bits, ma_err *e);
/* 1 when RSA keys come from the engine's own generator (the jobs below), 0 from OpenSSL's (only
 * ma_pki_rsa_generate then), -1 (e set) when the setting is wrong. */
int ma_pki_rsa_own_generator(ma_err *e);
/* The checks every RSA key made here passes before anyone sees it, whichever generator made it:
 * 2^(nlen/2) < d < LCM(p - 1, q - 1) (FIPS 186-5 5.1) and the pair-wise consistency test (SP 800-56B
 * 6.3.1.3 step 6) on the CRT values, checked against d. 0, or -1 with e saying what is wrong. */
int ma_pki_rsa_check(const EVP_PKEY *k, ma_err *e);
/* A key from the engine's generator in three steps, so its two primes can be searched on two threads
 * at once: job_prime(j, 0) and job_prime(j, 1) may run concurrently; job_finish after both. */
typedef struct ma_pki_rsa_job ma_pki_rsa_job;
ma_pki_rsa_job *ma_pki_rsa_job_new(unsigned bits, ma_err *e);
void ma_pki_rsa_job_prime(ma_pki_rsa_job *j, int which);
EVP_PKEY *ma_pki_rsa_job_finish(ma_pki_rsa_job *j, ma_err *e);
void ma_pki_rsa_job_free(ma_pki_rsa_job *j);
/* For tests: the prime search's sieve over the `window` odd numbers from `start` (big-endian, odd):
 * mark[k] = 1 where start + 2k has an odd prime factor below 2^18 or is 1 mod 65537. -1 if even. */
int ma_pki_rsa_sieve(const unsigned char *start, size_t len, unsigned char *mark, size_t window);

/* engine/pki_legacy.c: OpenSSL 3.0's direct (legacy-structure) paths, NULL where they do not apply
 * and the caller takes the generic one. A legacy copy of an RSA or EC key (its public half is set
 * into a certificate without an encoder and a decoder), and a PKCS#1 or SEC1 private key block
 * read without the decoders. */
EVP_PKEY *ma_pki_legacy_copy(EVP_PKEY *k);
EVP_PKEY *ma_pki_legacy_read_private(const ma_pem_block *b);
EVP_PKEY *ma_pki_legacy_ec_generate(int nid);
int ma_pki_legacy_is_private(const EVP_PKEY *k);

#endif
