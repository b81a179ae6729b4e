/* Certificates and CSRs laid out as kubeadm's pkiutil (Go crypto/x509) makes
 * them, inspection, chain and SAN checks, discovery pins. */
#include "pki_int.h"
#include "encoding.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

const char *const ma_pki_ku_names[] = {"digital_signature", "content_commitment", "key_encipherment",
				       "data_encipherment", "key_agreement", "cert_sign", "crl_sign",
				       "encipher_only", "decipher_only", NULL};
const char *const ma_pki_eku_names[] = {"server_auth", "client_auth", "code_signing", "email_protection",
					"time_stamping", "ocsp_signing", "any", NULL};
static const int eku_nids[] = {NID_server_auth, NID_client_auth, NID_code_sign, NID_email_protect,
			       NID_time_stamp, NID_OCSP_sign, NID_anyExtendedKeyUsage};

int ma_pki_usage_bit(const char *name, int ext, unsigned *bit, ma_err *e)
{
	const char *const *names = ext ? ma_pki_eku_names : ma_pki_ku_names;
	char list[256] = "";
	for (int i = 0; names[i]; i++) {
		if (!strcmp(name, names[i])) {
			*bit = 1u << i;
			return 0;
		}
		strcat(strcat(list, i ? ", " : ""), names[i]);
	}
	return ma_fail(e, "unknown %s \"%s\": valid are %s", ext ? "extended key usage" : "key usage", name, list);
}

/* "CN=name" of a certificate, for messages. */
static const char *cn_of(const X509 *c, char *buf, size_t n)
{
	int l = snprintf(buf, n, "CN=");
	if (X509_NAME_get_text_by_NID(X509_get_subject_name(c), NID_commonName, buf + l, (int)(n - (size_t)l)) < 0)
		snprintf(buf, n, "(no CN)");
	return buf;
}

static int64_t unix_of(const ASN1_TIME *t)
{
	struct tm tm;
	return ASN1_TIME_to_tm(t, &tm) ? (int64_t)timegm(&tm) : 0;
}

/* Go marshals a name value as PrintableString when it can, else UTF8String. */
static int printable(const char *s)
{
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      strchr(" '()+,-./:=?*", *s)))
			return 0;
	return 1;
}

/* Subject as Go's pkix.Name orders it: O (all values in one multi-valued RDN), then CN. */
static X509_NAME *make_name(const ma_pki_spec *s, ma_err *e)
{
	X509_NAME *n = X509_NAME_new();
	if (!n) goto fail;
	for (size_t i = 0; i <= s->n_o; i++) {
		const char *v = i < s->n_o ? s->o[i] : s->cn;
		int nid = i < s->n_o ? NID_organizationName : NID_commonName;
		if (!v || (nid == NID_commonName && !*v)) continue;
		if (!X509_NAME_add_entry_by_NID(n, nid, printable(v) ? V_ASN1_PRINTABLESTRING : MBSTRING_UTF8,
						(const unsigned char *)v, -1, -1, i > 0 && i < s->n_o ? -1 : 0)) {
			ma_pki_sslfail(e, "subject %s \"%s\" rejected", OBJ_nid2sn(nid), v);
			X509_NAME_free(n);
			return NULL;
		}
	}
	return n;
fail:
	ma_fail(e, "out of memory");
	return NULL;
}

static GENERAL_NAMES *make_sans(const ma_pki_spec *s, ma_err *e)
{
	GENERAL_NAMES *g = GENERAL_NAMES_new();
	if (!g) goto oom;
	for (size_t i = 0; i < s->n_dns + s->n_ips; i++) {
		GENERAL_NAME *gn = GENERAL_NAME_new();
		ASN1_STRING *v;
		if (i < s->n_dns) {
			const char *d = s->dns[i];
			for (const char *p = d; *p; p++)
				if ((unsigned char)*p > 126 || (unsigned char)*p < 33) {
					GENERAL_NAME_free(gn);
					ma_fail(e, "invalid DNS name \"%s\" in dns", d);
					goto fail;
				}
			if (!*d) {
				GENERAL_NAME_free(gn);
				ma_fail(e, "empty DNS name in dns");
				goto fail;
			}
			v = ASN1_IA5STRING_new();
			if (v && !ASN1_STRING_set(v, d, -1)) ASN1_STRING_free(v), v = NULL;
		} else if (!(v = a2i_IPADDRESS(s->ips[i - s->n_dns]))) {
			GENERAL_NAME_free(gn);
			ERR_clear_error();
			ma_fail(e, "invalid IP address \"%s\" in ips", s->ips[i - s->n_dns]);
			goto fail;
		}
		if (!gn || !v || !sk_GENERAL_NAME_push(g, gn)) {
			GENERAL_NAME_free(gn);
			ASN1_STRING_free(v);
			goto oom;
		}
		GENERAL_NAME_set0_value(gn, i < s->n_dns ? GEN_DNS : GEN_IPADD, v);
	}
	return g;
oom:
	ma_fail(e, "out of memory");
fail:
	GENERAL_NAMES_free(g);
	return NULL;
}

static const EVP_MD *md_for(const EVP_PKEY *k)
{
	if (EVP_PKEY_get_base_id(k) == EVP_PKEY_EC) { /* Go: hash size follows the curve */
		int bits = EVP_PKEY_get_bits(k);
		if (bits > 384) return EVP_sha512();
		if (bits > 256) return EVP_sha384();
	}
	return EVP_sha256();
}

static int add_ext(X509 *x, int nid, void *val, int crit, ma_err *e)
{
	if (X509_add1_ext_i2d(x, nid, val, crit, X509V3_ADD_DEFAULT) == 1) return 0;
	return ma_pki_sslfail(e, "adding the %s extension failed", OBJ_nid2ln(nid));
}

/* Extensions in Go's order: KeyUsage, ExtKeyUsage, BasicConstraints, SKI, AKI, SAN. */
static int add_exts(X509 *x, const ma_pki_spec *s, const X509 *ca, ma_err *e)
{
	int rc = -1;
	unsigned ku = s->usages ? s->usages
			        : MA_KU_DIGITAL_SIGNATURE | MA_KU_KEY_ENCIPHERMENT | (s->is_ca ? MA_KU_CERT_SIGN : 0);
	ASN1_BIT_STRING *kus = ASN1_BIT_STRING_new();
	EXTENDED_KEY_USAGE *ekus = sk_ASN1_OBJECT_new_null();
	BASIC_CONSTRAINTS *bc = BASIC_CONSTRAINTS_new();
	ASN1_OCTET_STRING *ski = ASN1_OCTET_STRING_new();
	AUTHORITY_KEYID *aki = AUTHORITY_KEYID_new();
	GENERAL_NAMES *sans = NULL;
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen;
	if (!kus || !ekus || !bc || !ski || !aki) {
		ma_fail(e, "out of memory");
		goto out;
	}
	for (int i = 0; i < 9; i++)
		if (ku & (1u << i) && !ASN1_BIT_STRING_set_bit(kus, i, 1)) goto ssl;
	if (add_ext(x, NID_key_usage, kus, 1, e)) goto out;
	for (int i = 0; i < 7; i++)
		if (s->ext_usages & (1u << i) && !sk_ASN1_OBJECT_push(ekus, OBJ_nid2obj(eku_nids[i]))) goto ssl;
	if (s->ext_usages && add_ext(x, NID_ext_key_usage, ekus, 0, e)) goto out;
	bc->ca = s->is_ca ? 0xFF : 0;
	if (add_ext(x, NID_basic_constraints, bc, 1, e)) goto out;
	/* SKI = SHA-1 of the subjectPublicKey bits (RFC 5280 method 1, as Go < 1.25); Go generates
	 * it only for CA templates, so kubeadm's leaves carry none. */
	if (s->is_ca) {
		if (!X509_pubkey_digest(x, EVP_sha1(), md, &mdlen) || !ASN1_OCTET_STRING_set(ski, md, (int)mdlen))
			goto ssl;
		if (add_ext(x, NID_subject_key_identifier, ski, 0, e)) goto out;
	}
	if (ca) { /* Go: AKI = parent's SKI, only when issuer != subject */
		const ASN1_OCTET_STRING *cask = X509_get0_subject_key_id((X509 *)ca);
		if (cask) aki->keyid = ASN1_OCTET_STRING_dup(cask);
		else if (X509_pubkey_digest(ca, EVP_sha1(), md, &mdlen) && (aki->keyid = ASN1_OCTET_STRING_new()))
			ASN1_OCTET_STRING_set(aki->keyid, md, (int)mdlen);
		if (!aki->keyid) goto ssl;
		if (add_ext(x, NID_authority_key_identifier, aki, 0, e)) goto out;
	}
	if (s->n_dns + s->n_ips) {
		if (!(sans = make_sans(s, e)) || add_ext(x, NID_subject_alt_name, sans, 0, e)) goto out;
	}
	rc = 0;
	goto out;
ssl:
	ma_pki_sslfail(e, "building certificate extensions failed");
out:
	ASN1_BIT_STRING_free(kus);
	sk_ASN1_OBJECT_free(ekus); /* OBJ_nid2obj objects are static */
	BASIC_CONSTRAINTS_free(bc);
	ASN1_OCTET_STRING_free(ski);
	AUTHORITY_KEYID_free(aki);
	GENERAL_NAMES_free(sans);
	return rc;
}

/* X509_set_pubkey through a legacy copy of the key where there is one (engine/pki_legacy.c): the same
 * SubjectPublicKeyInfo bytes, and the certificate keeps the key as its parsed public key. */
static int set_pubkey(X509 *x, EVP_PKEY *pub)
{
	EVP_PKEY *l = ma_pki_legacy_copy(pub);
	int ok = X509_set_pubkey(x, l ? l : pub);
	EVP_PKEY_free(l);
	return ok;
}

/* Random serial in [1, 2^63-2], as kubeadm's rand.Int(MaxInt64-1)+1. */
static int set_serial(X509 *x, ma_err *e)
{
	uint64_t v;
	do {
		if (RAND_bytes((unsigned char *)&v, sizeof v) != 1) return ma_pki_sslfail(e, "random serial failed");
		v &= (uint64_t)INT64_MAX;
	} while (v > (uint64_t)INT64_MAX - 2);
	v += 1;
	unsigned char be[8];
	for (int i = 0; i < 8; i++) be[i] = (unsigned char)(v >> (56 - 8 * i));
	BIGNUM *bn = BN_bin2bn(be, 8, NULL);
	ASN1_INTEGER *ai = bn ? BN_to_ASN1_INTEGER(bn, NULL) : NULL;
	int ok = ai && X509_set_serialNumber(x, ai);
	ASN1_INTEGER_free(ai);
	BN_free(bn);
	return ok ? 0 : ma_pki_sslfail(e, "setting the serial number failed");
}

static X509 *build(const ma_pki_spec *s, const EVP_PKEY *pub, const X509 *ca, const EVP_PKEY *signer, ma_err *e)
{
	const char *cn = s->cn ? s->cn : "";
	if (!ma_pki_key_is_private(signer)) {
		ma_fail(e, "certificate \"%s\": the signing key has no private part", cn);
		return NULL;
	}
	if (!s->is_ca && !s->ext_usages) {
		ma_fail(e, "certificate \"%s\": must specify at least one extended key usage", cn);
		return NULL;
	}
	int64_t nb = s->not_before, na = s->not_after;
	if (!nb) nb = ca ? unix_of(X509_get0_notBefore(ca)) : (int64_t)time(NULL) - 300;
	if (!na) na = nb + (s->is_ca ? 87600 : 8760) * 3600LL;
	if (na <= nb) {
		ma_fail(e, "certificate \"%s\": not_after must be later than not_before", cn);
		return NULL;
	}
	X509 *x = X509_new();
	X509_NAME *name = NULL;
	if (!x) {
		ma_fail(e, "out of memory");
		return NULL;
	}
	if (!X509_set_version(x, X509_VERSION_3) || set_serial(x, e)) goto fail;
	if (!(name = make_name(s, e))) goto fail;
	if (!X509_set_subject_name(x, name) || !X509_set_issuer_name(x, ca ? X509_get_subject_name(ca) : name) ||
	    !ASN1_TIME_set(X509_getm_notBefore(x), (time_t)nb) || !ASN1_TIME_set(X509_getm_notAfter(x), (time_t)na) ||
	    !set_pubkey(x, (EVP_PKEY *)pub)) {
		ma_pki_sslfail(e, "certificate \"%s\": setting fields failed", cn);
		goto fail;
	}
	if (add_exts(x, s, ca, e)) goto fail;
	if (X509_sign(x, (EVP_PKEY *)signer, md_for(signer)) <= 0) {
		ma_pki_sslfail(e, "certificate \"%s\": signing failed", cn);
		goto fail;
	}
	X509_NAME_free(name);
	return x;
fail:
	X509_NAME_free(name);
	X509_free(x);
	return NULL;
}

static int is_ca(const X509 *c)
{
	return (X509_get_extension_flags((X509 *)c) & EXFLAG_CA) != 0;
}

ma_pki_cert *ma_pki_ca_create(const ma_pki_key *key, const ma_pki_spec *s, ma_err *e)
{
	ma_pki_spec ca = *s;
	ca.is_ca = 1;
	return build(&ca, key, NULL, key, e);
}

ma_pki_cert *ma_pki_cert_sign(const ma_pki_key *pub, const ma_pki_spec *s, const ma_pki_cert *ca,
			      const ma_pki_key *ca_key, ma_err *e)
{
	char buf[256];
	if (!is_ca(ca)) {
		ma_fail(e, "certificate %s is not a CA", cn_of(ca, buf, sizeof buf));
		return NULL;
	}
	if (ma_pki_key_matches_cert(ca_key, ca, NULL) != 1) {
		ma_fail(e, "the CA key does not match the CA certificate %s", cn_of(ca, buf, sizeof buf));
		return NULL;
	}
	return build(s, pub, ca, ca_key, e);
}

void ma_pki_cert_free(ma_pki_cert *c)
{
	X509_free(c);
}

void ma_pki_certs_free(ma_pki_cert **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) X509_free(v[i]);
	free(v);
}

int ma_pki_certs_read(const char *pem, size_t len, ma_pki_cert ***out, size_t *n, ma_err *e)
{
	ma_pem_block b;
	size_t pos = 0;
	int r, blocks = 0;
	char seen[128] = "";
	*out = NULL;
	*n = 0;
	while ((r = ma_pki_pem_next(pem, len, &pos, &b, e)) == 1) {
		blocks++;
		if (strcmp(b.label, "CERTIFICATE")) {
			if (strlen(seen) + strlen(b.label) + 3 < sizeof seen) strcat(strcat(seen, *seen ? ", " : ""), b.label);
			continue;
		}
		BIO *bio = BIO_new_mem_buf(b.start, (int)b.len);
		X509 *x = bio ? PEM_read_bio_X509(bio, NULL, NULL, NULL) : NULL;
		BIO_free(bio);
		X509 **v = x ? realloc(*out, (*n + 1) * sizeof *v) : NULL;
		if (!v) {
			if (x) ma_fail(e, "out of memory");
			else ma_pki_sslfail(e, "malformed CERTIFICATE PEM block %zu", *n + 1);
			X509_free(x);
			r = -1;
			break;
		}
		v[(*n)++] = x;
		*out = v;
	}
	if (r == 0 && !*n) {
		if (!blocks) ma_fail_kind(e, "malformed", "no PEM data found (expected a certificate)");
		else ma_fail_kind(e, "malformed", "no certificate found in PEM data (found %s)", seen);
		r = -1;
	}
	if (r < 0) {
		ma_pki_certs_free(*out, *n);
		*out = NULL;
		*n = 0;
		return -1;
	}
	return 0;
}

ma_pki_cert *ma_pki_cert_read(const char *pem, size_t len, ma_err *e)
{
	ma_pki_cert **v, *c;
	size_t n;
	if (ma_pki_certs_read(pem, len, &v, &n, e)) return NULL;
	c = v[0];
	v[0] = NULL;
	ma_pki_certs_free(v, n);
	return c;
}

char *ma_pki_cert_pem(const ma_pki_cert *c, size_t *len, ma_err *e)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *out = NULL;
	if (!b || !PEM_write_bio_X509(b, (X509 *)c)) ma_pki_sslfail(e, "encoding the certificate failed");
	else out = ma_pki_bio_take(b, len, e);
	BIO_free(b);
	return out;
}

/* ---- inspection ---------------------------------------------------------- */

static int push_str(char ***v, size_t *n, const char *s, size_t len)
{
	char **nv = realloc(*v, (*n + 1) * sizeof *nv), *d = nv ? strndup(s, len) : NULL;
	if (nv) *v = nv;
	if (!d) return -1;
	nv[(*n)++] = d;
	return 0;
}

static int name_info(const X509_NAME *n, ma_pki_name *o)
{
	for (int i = 0; i < X509_NAME_entry_count(n); i++) {
		const X509_NAME_ENTRY *ent = X509_NAME_get_entry(n, i);
		int nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(ent));
		if (nid != NID_commonName && nid != NID_organizationName) continue;
		unsigned char *u;
		int l = ASN1_STRING_to_UTF8(&u, X509_NAME_ENTRY_get_data(ent)), bad = l < 0;
		if (!bad && nid == NID_commonName) {
			free(o->cn);
			bad = !(o->cn = strndup((char *)u, (size_t)l));
		} else if (!bad) {
			bad = push_str(&o->o, &o->n_o, (char *)u, (size_t)l);
		}
		if (l >= 0) OPENSSL_free(u);
		if (bad) return -1;
	}
	return 0;
}

static int sans_info(const GENERAL_NAMES *g, ma_pki_info *in)
{
	for (int i = 0; i < sk_GENERAL_NAME_num(g); i++) {
		const GENERAL_NAME *gn = sk_GENERAL_NAME_value(g, i);
		if (gn->type == GEN_DNS) {
			if (push_str(&in->dns, &in->n_dns, (const char *)ASN1_STRING_get0_data(gn->d.dNSName),
				     (size_t)ASN1_STRING_length(gn->d.dNSName)))
				return -1;
		} else if (gn->type == GEN_IPADD) {
			char buf[INET6_ADDRSTRLEN];
			int l = ASN1_STRING_length(gn->d.iPAddress);
			if ((l != 4 && l != 16) ||
			    !inet_ntop(l == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(gn->d.iPAddress), buf, sizeof buf))
				continue;
			if (push_str(&in->ips, &in->n_ips, buf, strlen(buf))) return -1;
		}
	}
	return 0;
}

static void key_info(const EVP_PKEY *k, ma_pki_info *in)
{
	in->key_type = k ? ma_pki_key_type(k) : "unknown";
	in->key_bits = k ? EVP_PKEY_get_bits(k) : 0;
}

static void hex_of(const ASN1_OCTET_STRING *s, char *out, size_t cap)
{
	size_t n = s ? (size_t)ASN1_STRING_length(s) : 0;
	if (n > (cap - 1) / 2) n = (cap - 1) / 2;
	ma_hex(s ? ASN1_STRING_get0_data(s) : (const unsigned char *)"", n, out);
}

void ma_pki_info_free(ma_pki_info *in)
{
	if (!in) return;
	ma_pki_name *names[] = {&in->subject, &in->issuer};
	for (int k = 0; k < 2; k++) {
		free(names[k]->cn);
		for (size_t i = 0; i < names[k]->n_o; i++) free(names[k]->o[i]);
		free(names[k]->o);
	}
	for (size_t i = 0; i < in->n_dns; i++) free(in->dns[i]);
	for (size_t i = 0; i < in->n_ips; i++) free(in->ips[i]);
	free(in->dns);
	free(in->ips);
	memset(in, 0, sizeof *in);
}

int ma_pki_cert_info(const ma_pki_cert *c, ma_pki_info *in, ma_err *e)
{
	memset(in, 0, sizeof *in);
	GENERAL_NAMES *g = X509_get_ext_d2i(c, NID_subject_alt_name, NULL, NULL);
	ASN1_BIT_STRING *ku = X509_get_ext_d2i(c, NID_key_usage, NULL, NULL);
	EXTENDED_KEY_USAGE *eku = X509_get_ext_d2i(c, NID_ext_key_usage, NULL, NULL);
	int bad = name_info(X509_get_subject_name(c), &in->subject) || name_info(X509_get_issuer_name(c), &in->issuer) ||
		  (g && sans_info(g, in));
	for (int i = 0; ku && i < 9; i++)
		if (ASN1_BIT_STRING_get_bit(ku, i)) in->usages |= 1u << i;
	for (int i = 0; eku && i < sk_ASN1_OBJECT_num(eku); i++)
		for (int k = 0; k < 7; k++)
			if (OBJ_obj2nid(sk_ASN1_OBJECT_value(eku, i)) == eku_nids[k]) in->ext_usages |= 1u << k;
	in->not_before = unix_of(X509_get0_notBefore(c));
	in->not_after = unix_of(X509_get0_notAfter(c));
	in->is_ca = is_ca(c);
	key_info(X509_get0_pubkey(c), in);
	BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(c), NULL);
	char *h = bn ? BN_bn2hex(bn) : NULL;
	for (size_t i = 0; h && h[i] && i < sizeof in->serial - 1; i++)
		in->serial[i] = (char)(h[i] >= 'A' && h[i] <= 'F' ? h[i] + 32 : h[i]);
	OPENSSL_free(h);
	BN_free(bn);
	hex_of(X509_get0_subject_key_id((X509 *)c), in->ski, sizeof in->ski);
	hex_of(X509_get0_authority_key_id((X509 *)c), in->aki, sizeof in->aki);
	GENERAL_NAMES_free(g);
	ASN1_BIT_STRING_free(ku);
	sk_ASN1_OBJECT_pop_free(eku, ASN1_OBJECT_free);
	ERR_clear_error();
	if (bad) {
		ma_pki_info_free(in);
		return ma_fail(e, "out of memory");
	}
	return 0;
}

/* ---- checks -------------------------------------------------------------- */

int ma_pki_cert_verify(const ma_pki_cert *c, const ma_pki_cert *ca, ma_pki_cert *const *inter, size_t n_inter,
		       int check_time, int64_t at, ma_err *e)
{
	char a[256], b[256];
	if (!is_ca(ca)) return ma_fail(e, "certificate %s is not a CA", cn_of(ca, a, sizeof a));
	X509_STORE *st = X509_STORE_new();
	X509_STORE_CTX *ctx = X509_STORE_CTX_new();
	STACK_OF(X509) *un = sk_X509_new_null();
	int rc = -1;
	for (size_t i = 0; un && i < n_inter; i++)
		if (!sk_X509_push(un, inter[i])) goto oom;
	if (!st || !ctx || !un || !X509_STORE_add_cert(st, (X509 *)ca) || !X509_STORE_CTX_init(ctx, st, (X509 *)c, un))
		goto oom;
	X509_VERIFY_PARAM *p = X509_STORE_CTX_get0_param(ctx);
	/* the CA is a trust anchor even when it is not self-signed, as in Go's root pool */
	X509_VERIFY_PARAM_set_flags(p, X509_V_FLAG_PARTIAL_CHAIN | (check_time ? 0 : X509_V_FLAG_NO_CHECK_TIME));
	if (check_time && at) X509_VERIFY_PARAM_set_time(p, (time_t)at);
	if (X509_verify_cert(ctx) == 1) {
		rc = 0;
	} else {
		int err = X509_STORE_CTX_get_error(ctx);
		ma_fail(e, "certificate %s does not verify against CA %s: %s", cn_of(c, a, sizeof a),
			cn_of(ca, b, sizeof b), X509_verify_cert_error_string(err));
	}
	goto out;
oom:
	ma_pki_sslfail(e, "setting up certificate verification failed");
out:
	ERR_clear_error();
	sk_X509_free(un);
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(st);
	return rc;
}

int ma_pki_cert_covers(const ma_pki_cert *c, const char *name, ma_err *e)
{
	unsigned char ip[16];
	int r;
	char buf[256];
	if (inet_pton(AF_INET, name, ip) == 1) r = X509_check_ip((X509 *)c, ip, 4, 0);
	else if (inet_pton(AF_INET6, name, ip) == 1) r = X509_check_ip((X509 *)c, ip, 16, 0);
	else r = X509_check_host((X509 *)c, name, strlen(name),
				 X509_CHECK_FLAG_NEVER_CHECK_SUBJECT | X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS, NULL);
	if (r < 0) return ma_pki_sslfail(e, "checking whether %s covers \"%s\" failed", cn_of(c, buf, sizeof buf), name);
	if (!r) ma_fail(e, "certificate %s is not valid for \"%s\"", cn_of(c, buf, sizeof buf), name);
	return r;
}

int ma_pki_cert_pin(const ma_pki_cert *c, char out[72], ma_err *e)
{
	unsigned char *der = NULL;
	int n = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(c), &der);
	if (n <= 0) return ma_pki_sslfail(e, "encoding the certificate's public key failed");
	memcpy(out, "sha256:", 7);
	ma_sha256_hex(der, (size_t)n, out + 7);
	OPENSSL_free(der);
	return 0;
}

/* ---- CSRs ---------------------------------------------------------------- */

char *ma_pki_csr_create(const ma_pki_key *key, const ma_pki_spec *s, size_t *len, ma_err *e)
{
	X509_REQ *r = X509_REQ_new();
	X509_NAME *name = NULL;
	GENERAL_NAMES *sans = NULL;
	STACK_OF(X509_EXTENSION) *exts = NULL;
	BIO *b = NULL;
	char *out = NULL;
	if (!ma_pki_key_is_private(key)) {
		ma_fail(e, "CSR \"%s\": the key has no private part", s->cn ? s->cn : "");
		goto out;
	}
	if (!r || !(name = make_name(s, e))) goto out;
	if (!X509_REQ_set_version(r, X509_REQ_VERSION_1) || !X509_REQ_set_subject_name(r, name) ||
	    !X509_REQ_set_pubkey(r, (EVP_PKEY *)key))
		goto ssl;
	if (s->n_dns + s->n_ips) {
		X509_EXTENSION *ex;
		if (!(sans = make_sans(s, e))) goto out;
		if (!(exts = sk_X509_EXTENSION_new_null()) || !(ex = X509V3_EXT_i2d(NID_subject_alt_name, 0, sans)))
			goto ssl;
		if (!sk_X509_EXTENSION_push(exts, ex)) {
			X509_EXTENSION_free(ex);
			goto ssl;
		}
		if (!X509_REQ_add_extensions(r, exts)) goto ssl;
	}
	if (X509_REQ_sign(r, (EVP_PKEY *)key, md_for(key)) <= 0 || !(b = BIO_new(BIO_s_mem())) ||
	    !PEM_write_bio_X509_REQ(b, r))
		goto ssl;
	out = ma_pki_bio_take(b, len, e);
	goto out;
ssl:
	ma_pki_sslfail(e, "creating the CSR failed");
out:
	BIO_free(b);
	sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
	GENERAL_NAMES_free(sans);
	X509_NAME_free(name);
	X509_REQ_free(r);
	return out;
}

int ma_pki_csr_parse(const char *pem, size_t len, ma_pki_info *in, ma_pki_key **pub, ma_err *e)
{
	ma_pem_block b;
	size_t pos = 0;
	int r;
	memset(in, 0, sizeof *in);
	if (pub) *pub = NULL;
	while ((r = ma_pki_pem_next(pem, len, &pos, &b, e)) == 1)
		if (!strcmp(b.label, "CERTIFICATE REQUEST") || !strcmp(b.label, "NEW CERTIFICATE REQUEST")) break;
	if (r < 0) return -1;
	if (r == 0) return ma_fail_kind(e, "malformed", "no CERTIFICATE REQUEST found in PEM data");
	BIO *bio = BIO_new_mem_buf(b.start, (int)b.len);
	X509_REQ *req = bio ? PEM_read_bio_X509_REQ(bio, NULL, NULL, NULL) : NULL;
	BIO_free(bio);
	if (!req) return ma_pki_sslfail(e, "malformed CERTIFICATE REQUEST PEM block");
	EVP_PKEY *k = X509_REQ_get0_pubkey(req);
	int rc = -1;
	if (!k || X509_REQ_verify(req, k) != 1) {
		ma_pki_sslfail(e, "the CSR's signature is invalid");
		goto out;
	}
	STACK_OF(X509_EXTENSION) *exts = X509_REQ_get_extensions(req);
	GENERAL_NAMES *g = exts ? X509V3_get_d2i(exts, NID_subject_alt_name, NULL, NULL) : NULL;
	int bad = name_info(X509_REQ_get_subject_name(req), &in->subject) || (g && sans_info(g, in));
	GENERAL_NAMES_free(g);
	sk_X509_EXTENSION_pop_free(exts, X509_EXTENSION_free);
	key_info(k, in);
	if (bad) {
		ma_fail(e, "out of memory");
		goto out;
	}
	if (pub && !(*pub = EVP_PKEY_dup(k))) {
		ma_pki_sslfail(e, "copying the CSR's public key failed");
		goto out;
	}
	rc = 0;
out:
	ERR_clear_error();
	if (rc) ma_pki_info_free(in);
	X509_REQ_free(req);
	return rc;
}
