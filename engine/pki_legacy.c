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
