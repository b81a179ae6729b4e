/* OpenSSL 3.0's cheap paths through its legacy key structures.
 *
 * In 3.0 a provider key's public half is set into a certificate through an encoder and a decoder,
 * and a PEM private key is read through the decoders; each of these contexts enumerates every
 * implementation of every provider (about 1.5 M instructions, more than an ECDSA signature). A legacy
 * RSA or EC_KEY is encoded and decoded by the ASN.1 templates directly. 3.2 caches the decoders;
 * until Debian's libcrypto has them, these two helpers take the direct path and the callers fall
 * back to the generic one for anything else. */
#define OPENSSL_SUPPRESS_DEPRECATED /* EVP_PKEY_get1_RSA & co: deprecated in 3.0, still the fast path */
#include "pki_int.h"

#include <pthread.h>
#include <string.h>

#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

EVP_PKEY *ma_pki_legacy_copy(EVP_PKEY *k)
{
	EVP_PKEY *l = EVP_PKEY_new();
	int ok = 0;
	if (!l) return NULL;
	switch (EVP_PKEY_get_base_id(k)) {
	case EVP_PKEY_RSA: {
		RSA *r = EVP_PKEY_get1_RSA(k);
		ok = r && EVP_PKEY_assign_RSA(l, r);
		if (!ok) RSA_free(r);
		break;
	}
	case EVP_PKEY_EC: {
		EC_KEY *ec = EVP_PKEY_get1_EC_KEY(k);
		ok = ec && EVP_PKEY_assign_EC_KEY(l, ec);
		if (!ok) EC_KEY_free(ec);
		break;
	}
	}
	if (!ok) {
		EVP_PKEY_free(l);
		ERR_clear_error();
		return NULL;
	}
	return l;
}

EVP_PKEY *ma_pki_legacy_read_private(const ma_pem_block *b)
{
	int rsa = !strcmp(b->label, "RSA PRIVATE KEY"), ec = !strcmp(b->label, "EC PRIVATE KEY");
	if (!rsa && !ec) return NULL;
	BIO *bio = BIO_new_mem_buf(b->start, (int)b->len);
	char *name = NULL, *header = NULL;
	unsigned char *der = NULL;
	long len = 0;
	EVP_PKEY *k = NULL;
	/* an encrypted block (Proc-Type header) is left to the generic reader, which refuses it */
	if (bio && PEM_read_bio(bio, &name, &header, &der, &len) && !*header && (k = EVP_PKEY_new())) {
		const unsigned char *p = der;
		if (rsa) {
			RSA *r = d2i_RSAPrivateKey(NULL, &p, len);
			if (!r || p != der + len || !EVP_PKEY_assign_RSA(k, r)) {
				RSA_free(r);
				EVP_PKEY_free(k);
				k = NULL;
			}
		} else {
			EC_KEY *e = d2i_ECPrivateKey(NULL, &p, len);
			if (!e || p != der + len || !EC_KEY_get0_public_key(e) || !EVP_PKEY_assign_EC_KEY(k, e)) {
				EC_KEY_free(e);
				EVP_PKEY_free(k);
				k = NULL;
			}
		}
	}
	if (der) OPENSSL_clear_free(der, (size_t)len);
	OPENSSL_free(name);
	OPENSSL_free(header);
	BIO_free(bio);
	ERR_clear_error();
	return k;
}

/* An EC key generated as a legacy EC_KEY: the same generator (ossl_ec_key_gen, the library's
 * DRBG) without the provider fetch and key-management context EVP_PKEY_Q_keygen builds per key,
 * and a key the legacy paths above then take as it is. The curve's group is built once per
 * process (about 0.3 M instructions each time otherwise) and copied into each key; the threads of
 * ma_pki_genkeys_parallel only read it. */
static EC_GROUP *p256, *p384;
static pthread_once_t p256_once = PTHREAD_ONCE_INIT, p384_once = PTHREAD_ONCE_INIT;

static void p256_init(void)
{
	p256 = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
	ERR_clear_error();
}

static void p384_init(void)
{
	p384 = EC_GROUP_new_by_curve_name(NID_secp384r1);
	ERR_clear_error();
}

EVP_PKEY *ma_pki_legacy_ec_generate(int nid)
{
	const EC_GROUP *g = NULL;
	if (nid == NID_X9_62_prime256v1) {
		pthread_once(&p256_once, p256_init);
		g = p256;
	} else if (nid == NID_secp384r1) {
		pthread_once(&p384_once, p384_init);
		g = p384;
	}
	EC_KEY *ec = g ? EC_KEY_new() : NULL;
	EVP_PKEY *k = NULL;
	if (ec && EC_KEY_set_group(ec, g) == 1 && EC_KEY_generate_key(ec) == 1 && (k = EVP_PKEY_new()) &&
	    EVP_PKEY_assign_EC_KEY(k, ec))
		return k;
	EVP_PKEY_free(k);
	EC_KEY_free(ec);
	ERR_clear_error();
	return NULL;
}

/* Whether a legacy key holds its private half (1, 0), or -1 for a provider key: asking a provider
 * key's parameters costs an export, a legacy key has the field. */
int ma_pki_legacy_is_private(const EVP_PKEY *k)
{
	if (EVP_PKEY_get0_provider(k) != NULL) return -1;
	switch (EVP_PKEY_get_base_id(k)) {
	case EVP_PKEY_RSA: {
		const RSA *r = EVP_PKEY_get0_RSA(k);
		const BIGNUM *d = NULL;
		if (!r) return -1;
		RSA_get0_key(r, NULL, NULL, &d);
		return d != NULL;
	}
	case EVP_PKEY_EC: {
		const EC_KEY *ec = EVP_PKEY_get0_EC_KEY(k);
		return ec ? EC_KEY_get0_private_key(ec) != NULL : -1;
	}
	}
	return -1;
}
