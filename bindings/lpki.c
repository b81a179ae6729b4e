/* moonadm.pki: keys and certificates as handles, plus the stateless primitives
 * of engine/pki.h. Specs are tables {cn=, o={}, dns={}, ips={}, usages={},
 * ext_usages={}, not_before=, not_after=, is_ca=}. Misuse raises; an
 * operational failure returns nil, message, code (bindings/bindings.h); a check that does not hold
 * (key:matches, cert:covers, jws_verify) returns false, why. */
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "bindings.h"
#include "encoding.h"
#include "pki.h"

#define KEY_MT "moonadm.pki.key"
#define CERT_MT "moonadm.pki.cert"
#define BOX_MT "moonadm.pki.box"   /* engine buffers owned by the GC until copied */
#define INFO_MT "moonadm.pki.info" /* an ma_pki_info owned by the GC while it is pushed */

typedef struct { ma_pki_key *k; } LKey;
typedef struct { ma_pki_cert *c; } LCert;
typedef struct { void *p; size_t n; int secret; } Box;

/* ---- helpers ------------------------------------------------------------- */

/* A box is pushed before the engine allocates, so a Lua error cannot leak (or
 * leave unwiped) the buffer the engine returns into it. */
static Box *newbox(lua_State *L, int secret)
{
	Box *b = lua_newuserdatauv(L, sizeof *b, 0); /* ... box */
	b->p = NULL, b->n = 0, b->secret = secret;
	luaL_setmetatable(L, BOX_MT); /* ... box (empty) */
	return b;
}

static void boxfree(Box *b)
{
	if (b->secret) ma_pki_secret_free(b->p, b->n);
	else free(b->p);
	b->p = NULL;
}

static int box_gc(lua_State *L)
{
	boxfree(luaL_checkudata(L, 1, BOX_MT));
	return 0;
}

/* Replaces the box on top with its contents as a string. */
static int push_box(lua_State *L, Box *b, size_t len)
{
	lua_pushlstring(L, b->p, len); /* ... box str */
	boxfree(b);
	lua_remove(L, -2); /* ... str */
	return 1;
}

static LKey *newkey(lua_State *L)
{
	LKey *u = lua_newuserdatauv(L, sizeof *u, 0); /* ... key (empty) */
	u->k = NULL;
	luaL_setmetatable(L, KEY_MT); /* ... key (empty) */
	return u;
}

static LCert *newcert(lua_State *L)
{
	LCert *u = lua_newuserdatauv(L, sizeof *u, 0); /* ... cert (empty) */
	u->c = NULL;
	luaL_setmetatable(L, CERT_MT); /* ... cert (empty) */
	return u;
}

static ma_pki_key *checkkey(lua_State *L, int i)
{
	LKey *u = luaL_checkudata(L, i, KEY_MT);
	if (!u->k) luaL_error(L, "attempt to use a closed key");
	return u->k;
}

static ma_pki_cert *checkcert(lua_State *L, int i)
{
	LCert *u = luaL_checkudata(L, i, CERT_MT);
	if (!u->c) luaL_error(L, "attempt to use a closed certificate");
	return u->c;
}

/* spec[field] as a C array of strings; the array lives in a userdata left on
 * the stack, the strings stay alive in the spec table. */
static const char *const *strlist(lua_State *L, int t, const char *field, size_t *n)
{
	*n = 0;
	if (lua_getfield(L, t, field) == LUA_TNIL) { /* ... nil */
		lua_pop(L, 1); /* ... */
		return NULL;
	}
	if (!lua_istable(L, -1)) luaL_error(L, "spec.%s must be a list of strings", field);
	size_t len = lua_rawlen(L, -1);
	const char **v = lua_newuserdatauv(L, (len + 1) * sizeof *v, 0); /* ... list array */
	for (size_t i = 0; i < len; i++) {
		if (lua_rawgeti(L, -2, (lua_Integer)i + 1) != LUA_TSTRING) /* ... list array item */
			luaL_error(L, "spec.%s[%d] must be a string", field, (int)i + 1);
		v[i] = lua_tostring(L, -1);
		lua_pop(L, 1); /* ... list array */
	}
	lua_remove(L, -2); /* ... array */
	*n = len;
	return v;
}

static unsigned usagebits(lua_State *L, int t, const char *field, int ext)
{
	size_t n;
	unsigned bits = 0, bit;
	const char *const *v = strlist(L, t, field, &n); /* ... array? */
	for (size_t i = 0; i < n; i++) {
		ma_err e = {0};
		if (ma_pki_usage_bit(v[i], ext, &bit, &e)) luaL_error(L, "spec.%s: %s", field, e.msg);
		bits |= bit;
	}
	if (v) lua_pop(L, 1); /* ... */
	return bits;
}

static int64_t opttime(lua_State *L, int t, const char *field)
{
	int isnum;
	lua_getfield(L, t, field); /* ... v */
	lua_Integer v = lua_tointegerx(L, -1, &isnum);
	if (!isnum && !lua_isnil(L, -1)) luaL_error(L, "spec.%s must be an integer (unix time)", field);
	lua_pop(L, 1); /* ... */
	return isnum ? (int64_t)v : 0;
}

/* Fills s from the spec table at t; pushes three arrays (kept until return). */
static void checkspec(lua_State *L, int t, ma_pki_spec *s)
{
	luaL_checktype(L, t, LUA_TTABLE);
	memset(s, 0, sizeof *s);
	int ty = lua_getfield(L, t, "cn"); /* ... cn */
	if (ty != LUA_TNIL && ty != LUA_TSTRING) luaL_error(L, "spec.cn must be a string");
	s->cn = lua_tostring(L, -1); /* (alive in the spec table) */
	lua_pop(L, 1); /* ... */
	s->usages = usagebits(L, t, "usages", 0);
	s->ext_usages = usagebits(L, t, "ext_usages", 1);
	s->not_before = opttime(L, t, "not_before");
	s->not_after = opttime(L, t, "not_after");
	lua_getfield(L, t, "is_ca"); /* ... is_ca */
	s->is_ca = lua_toboolean(L, -1);
	lua_pop(L, 1); /* ... */
	s->o = strlist(L, t, "o", &s->n_o); /* ... o? */
	if (!s->o) lua_pushnil(L);        /* ... o (three slots always, for simplicity) */
	s->dns = strlist(L, t, "dns", &s->n_dns);
	if (!s->dns) lua_pushnil(L); /* ... o dns */
	s->ips = strlist(L, t, "ips", &s->n_ips);
	if (!s->ips) lua_pushnil(L);      /* ... o dns ips */
}

static void setlist(lua_State *L, const char *field, char **v, size_t n)
{
	lua_createtable(L, (int)n, 0); /* ... t list */
	for (size_t i = 0; i < n; i++) {
		lua_pushstring(L, v[i]); /* ... t list s */
		lua_rawseti(L, -2, (lua_Integer)i + 1); /* ... t list */
	}
	lua_setfield(L, -2, field); /* ... t */
}

static void setusages(lua_State *L, const char *field, unsigned bits, const char *const *names)
{
	int k = 0;
	lua_newtable(L); /* ... t list */
	for (int i = 0; names[i]; i++)
		if (bits & (1u << i)) {
			lua_pushstring(L, names[i]); /* ... t list name */
			lua_rawseti(L, -2, ++k); /* ... t list */
		}
	lua_setfield(L, -2, field); /* ... t */
}

static void setname(lua_State *L, const char *field, const ma_pki_name *n)
{
	lua_createtable(L, 0, 2); /* ... t name */
	if (n->cn) {
		lua_pushstring(L, n->cn);
		lua_setfield(L, -2, "cn");
	}
	setlist(L, "o", n->o, n->n_o);
	lua_setfield(L, -2, field); /* ... t */
}

static ma_pki_info *newinfo(lua_State *L)
{
	ma_pki_info *in = lua_newuserdatauv(L, sizeof *in, 0); /* ... info */
	memset(in, 0, sizeof *in);
	luaL_setmetatable(L, INFO_MT); /* ... info */
	return in;
}

static int info_gc(lua_State *L)
{
	ma_pki_info_free(luaL_checkudata(L, 1, INFO_MT));
	return 0;
}

/* Replaces the info userdata on top with its table; csr = subject-only view. */
static void push_info(lua_State *L, ma_pki_info *in, int csr)
{
	lua_newtable(L); /* ... info t */
	setname(L, "subject", &in->subject);
	setlist(L, "dns", in->dns, in->n_dns);
	setlist(L, "ips", in->ips, in->n_ips);
	lua_pushstring(L, in->key_type);
	lua_setfield(L, -2, "key_type");
	lua_pushinteger(L, in->key_bits);
	lua_setfield(L, -2, "key_bits");
	if (!csr) {
		setname(L, "issuer", &in->issuer);
		setusages(L, "usages", in->usages, ma_pki_ku_names);
		setusages(L, "ext_usages", in->ext_usages, ma_pki_eku_names);
		lua_pushinteger(L, in->not_before);
		lua_setfield(L, -2, "not_before");
		lua_pushinteger(L, in->not_after);
		lua_setfield(L, -2, "not_after");
		lua_pushboolean(L, in->is_ca);
		lua_setfield(L, -2, "is_ca");
		lua_pushstring(L, in->serial);
		lua_setfield(L, -2, "serial");
		lua_pushstring(L, in->ski);
		lua_setfield(L, -2, "ski");
		lua_pushstring(L, in->aki);
		lua_setfield(L, -2, "aki");
	}
	ma_pki_info_free(in);
	lua_remove(L, -2); /* ... t */
}

/* ---- keys ---------------------------------------------------------------- */

static int l_generate_key(lua_State *L)
{
	const char *alg = luaL_optstring(L, 1, "RSA-2048");
	ma_err e = {0};
	LKey *u = newkey(L);
	if (!(u->k = ma_pki_genkey(alg, &e))) return ma_push_err(L, &e);
	return 1;
}

/* rsa_generator([name [, source]]) -> name, why | nil, message: the generator of RSA keys
 * ("moonadm" or "openssl") and why it is the one; with name, chooses it first (source: how the user
 * gave it, e.g. "--rsa-generator"). SECURITY.md, "Key generation". */
static int l_rsa_generator(lua_State *L)
{
	const char *name = luaL_optstring(L, 1, NULL), *source = luaL_optstring(L, 2, "the RSA generator");
	const char *why = NULL;
	ma_err e = {0};
	if (name && ma_pki_rsa_generator_set(name, source, &e)) return ma_push_err(L, &e);
	if (!(name = ma_pki_rsa_generator(&why, &e))) return ma_push_err(L, &e);
	lua_pushstring(L, name);
	lua_pushstring(L, why);
	return 2;
}

/* generate_keys(algs [, nthreads]): independent keys on all cores (an RSA key's two primes on two). */
static int l_generate_keys(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	int nthreads = (int)luaL_optinteger(L, 2, 0);
	size_t n = lua_rawlen(L, 1);
	const char **algs = lua_newuserdatauv(L, (n + 1) * sizeof *algs, 0);       /* t [nt] algs */
	ma_pki_key **out = lua_newuserdatauv(L, (n + 1) * sizeof *out, 0);         /* t [nt] algs out */
	lua_createtable(L, (int)n, 0);                                            /* ... algs out res */
	for (size_t i = 0; i < n; i++) {
		if (lua_rawgeti(L, 1, (lua_Integer)i + 1) != LUA_TSTRING) /* ... res alg */
			return luaL_error(L, "bad argument #1 to 'generate_keys' (item %d is not a string)", (int)i + 1);
		algs[i] = lua_tostring(L, -1);
		lua_pop(L, 1); /* ... res */
		newkey(L); /* ... res key (empty: filled below without further allocation) */
		lua_rawseti(L, -2, (lua_Integer)i + 1); /* ... res */
	}
	ma_err e = {0};
	if (ma_pki_genkeys_parallel(algs, n, out, nthreads, &e)) return ma_push_err(L, &e);
	for (size_t i = 0; i < n; i++) {
		lua_rawgeti(L, -1, (lua_Integer)i + 1); /* ... res key */
		((LKey *)lua_touserdata(L, -1))->k = out[i];
		lua_pop(L, 1); /* ... res */
	}
	return 1;
}

static int read_key(lua_State *L, int pub)
{
	size_t len;
	const char *pem = luaL_checklstring(L, 1, &len);
	ma_err e = {0};
	LKey *u = newkey(L);
	if (!(u->k = pub ? ma_pki_pubkey_read(pem, len, &e) : ma_pki_key_read(pem, len, &e)))
		return ma_push_err(L, &e);
	return 1;
}
static int l_read_key(lua_State *L) { return read_key(L, 0); }
static int l_read_public_key(lua_State *L) { return read_key(L, 1); }

static int key_pem(lua_State *L)
{
	ma_pki_key *k = checkkey(L, 1);
	ma_err e = {0};
	size_t len;
	Box *b = newbox(L, 1);
	if (!(b->p = ma_pki_key_pem(k, &len, &e))) return ma_push_err(L, &e);
	b->n = len + 1;
	return push_box(L, b, len);
}

static int key_public_pem(lua_State *L)
{
	ma_pki_key *k = checkkey(L, 1);
	ma_err e = {0};
	size_t len;
	Box *b = newbox(L, 0);
	if (!(b->p = ma_pki_pubkey_pem(k, &len, &e))) return ma_push_err(L, &e);
	return push_box(L, b, len);
}

static int key_type(lua_State *L)
{
	lua_pushstring(L, ma_pki_key_type(checkkey(L, 1)));
	return 1;
}

static int key_bits(lua_State *L)
{
	lua_pushinteger(L, ma_pki_key_bits(checkkey(L, 1)));
	return 1;
}

static int key_is_private(lua_State *L)
{
	lua_pushboolean(L, ma_pki_key_is_private(checkkey(L, 1)));
	return 1;
}

static int key_equals(lua_State *L)
{
	lua_pushboolean(L, ma_pki_key_equal(checkkey(L, 1), checkkey(L, 2)));
	return 1;
}

/* true, or false and why. */
static int push_check(lua_State *L, int r, const ma_err *e)
{
	if (r < 0) return ma_push_err(L, e);
	lua_pushboolean(L, r); /* ok */
	if (r) return 1;
	lua_pushstring(L, e->msg); /* false why */
	return 2;
}

static int key_matches(lua_State *L)
{
	ma_err e = {0};
	return push_check(L, ma_pki_key_matches_cert(checkkey(L, 1), checkcert(L, 2), &e), &e);
}

static int key_close(lua_State *L)
{
	LKey *u = luaL_checkudata(L, 1, KEY_MT);
	ma_pki_key_free(u->k); /* OpenSSL clears the private components */
	u->k = NULL;
	return 0;
}

static int key_tostring(lua_State *L)
{
	LKey *u = luaL_checkudata(L, 1, KEY_MT);
	if (!u->k) lua_pushliteral(L, "pki.key (closed)");
	else lua_pushfstring(L, "pki.key (%s %d, %s)", ma_pki_key_type(u->k), ma_pki_key_bits(u->k),
			     ma_pki_key_is_private(u->k) ? "private" : "public");
	return 1;
}

/* ---- certificates -------------------------------------------------------- */

static int l_read_cert(lua_State *L)
{
	size_t len;
	const char *pem = luaL_checklstring(L, 1, &len);
	ma_err e = {0};
	LCert *u = newcert(L);
	if (!(u->c = ma_pki_cert_read(pem, len, &e))) return ma_push_err(L, &e);
	return 1;
}

static int l_read_certs(lua_State *L)
{
	size_t len, n;
	const char *pem = luaL_checklstring(L, 1, &len);
	ma_pki_cert **v;
	ma_err e = {0};
	if (ma_pki_certs_read(pem, len, &v, &n, &e)) return ma_push_err(L, &e);
	/* hand the certs to empty handles first, then build the list: nothing leaks on a memory error */
	lua_createtable(L, (int)n, 0); /* pem res */
	for (size_t i = 0; i < n; i++) {
		LCert *u = lua_newuserdatauv(L, sizeof *u, 0); /* pem res cert */
		u->c = v[i];
		v[i] = NULL;
		luaL_setmetatable(L, CERT_MT); /* pem res cert */
		lua_rawseti(L, -2, (lua_Integer)i + 1); /* pem res */
	}
	ma_pki_certs_free(v, n);
	return 1;
}

static int l_create_ca(lua_State *L)
{
	ma_pki_key *k = checkkey(L, 1);
	ma_pki_spec s;
	ma_err e = {0};
	checkspec(L, 2, &s); /* key spec o dns ips */
	LCert *u = newcert(L);
	if (!(u->c = ma_pki_ca_create(k, &s, &e))) return ma_push_err(L, &e);
	return 1;
}

/* sign_cert(key, spec, ca_cert, ca_key): key may be public-only (from a CSR). */
static int l_sign_cert(lua_State *L)
{
	ma_pki_key *k = checkkey(L, 1), *cakey = checkkey(L, 4);
	ma_pki_cert *ca = checkcert(L, 3);
	ma_pki_spec s;
	ma_err e = {0};
	checkspec(L, 2, &s);
	LCert *u = newcert(L);
	if (!(u->c = ma_pki_cert_sign(k, &s, ca, cakey, &e))) return ma_push_err(L, &e);
	return 1;
}

static int cert_pem(lua_State *L)
{
	ma_pki_cert *c = checkcert(L, 1);
	ma_err e = {0};
	size_t len;
	Box *b = newbox(L, 0);
	if (!(b->p = ma_pki_cert_pem(c, &len, &e))) return ma_push_err(L, &e);
	return push_box(L, b, len);
}

static int cert_info(lua_State *L)
{
	ma_pki_cert *c = checkcert(L, 1);
	ma_err e = {0};
	ma_pki_info *in = newinfo(L);
	if (ma_pki_cert_info(c, in, &e)) return ma_push_err(L, &e);
	push_info(L, in, 0);
	return 1;
}

/* cert:verify(ca [, {check_time=true, at=unix, intermediates={cert...}}]) */
static int cert_verify(lua_State *L)
{
	ma_pki_cert *c = checkcert(L, 1), *ca = checkcert(L, 2), **inter = NULL;
	int check_time = 1;
	lua_Integer at = 0;
	size_t n = 0;
	ma_err e = {0};
	if (!lua_isnoneornil(L, 3)) {
		luaL_checktype(L, 3, LUA_TTABLE);
		if (lua_getfield(L, 3, "check_time") != LUA_TNIL) check_time = lua_toboolean(L, -1); /* ... opts ct */
		lua_getfield(L, 3, "at"); /* ... opts ct at */
		at = luaL_optinteger(L, -1, 0);
		if (lua_getfield(L, 3, "intermediates") != LUA_TNIL) { /* opts ct at list */
			luaL_checktype(L, -1, LUA_TTABLE);
			n = lua_rawlen(L, -1);
			inter = lua_newuserdatauv(L, (n + 1) * sizeof *inter, 0); /* ... list array */
			for (size_t i = 0; i < n; i++) {
				lua_rawgeti(L, -2, (lua_Integer)i + 1); /* ... list array cert */
				inter[i] = checkcert(L, lua_gettop(L));
				lua_pop(L, 1); /* ... list array */
			}
		}
	}
	if (ma_pki_cert_verify(c, ca, inter, n, check_time, (int64_t)at, &e)) return ma_push_err(L, &e);
	lua_pushboolean(L, 1);
	return 1;
}

static int cert_covers(lua_State *L)
{
	ma_err e = {0};
	ma_pki_cert *c = checkcert(L, 1);
	return push_check(L, ma_pki_cert_covers(c, luaL_checkstring(L, 2), &e), &e);
}

static int cert_matches(lua_State *L)
{
	ma_err e = {0};
	return push_check(L, ma_pki_key_matches_cert(checkkey(L, 2), checkcert(L, 1), &e), &e);
}

static int cert_pin(lua_State *L)
{
	char pin[72];
	ma_err e = {0};
	if (ma_pki_cert_pin(checkcert(L, 1), pin, &e)) return ma_push_err(L, &e);
	lua_pushstring(L, pin);
	return 1;
}

static int cert_close(lua_State *L)
{
	LCert *u = luaL_checkudata(L, 1, CERT_MT);
	ma_pki_cert_free(u->c);
	u->c = NULL;
	return 0;
}

static int cert_tostring(lua_State *L)
{
	LCert *u = luaL_checkudata(L, 1, CERT_MT);
	ma_pki_info in;
	if (!u->c || ma_pki_cert_info(u->c, &in, NULL)) {
		lua_pushliteral(L, "pki.cert (closed)");
		return 1;
	}
	char buf[256];
	snprintf(buf, sizeof buf, "pki.cert (CN=%s%s)", in.subject.cn ? in.subject.cn : "", in.is_ca ? ", CA" : "");
	ma_pki_info_free(&in);
	lua_pushstring(L, buf);
	return 1;
}

/* ---- CSRs ---------------------------------------------------------------- */

static int l_create_csr(lua_State *L)
{
	ma_pki_key *k = checkkey(L, 1);
	ma_pki_spec s;
	ma_err e = {0};
	size_t len;
	checkspec(L, 2, &s);
	Box *b = newbox(L, 0);
	if (!(b->p = ma_pki_csr_create(k, &s, &len, &e))) return ma_push_err(L, &e);
	return push_box(L, b, len);
}

/* parse_csr(pem) -> {subject=, dns=, ips=, key_type=, key_bits=}, public key */
static int l_parse_csr(lua_State *L)
{
	size_t len;
	const char *pem = luaL_checklstring(L, 1, &len);
	ma_err e = {0};
	LKey *u = newkey(L);         /* pem key */
	ma_pki_info *in = newinfo(L); /* pem key info */
	if (ma_pki_csr_parse(pem, len, in, &u->k, &e)) return ma_push_err(L, &e);
	push_info(L, in, 1); /* pem key t */
	lua_insert(L, -2);   /* pem t key */
	return 2;
}

/* ---- JWS, AEAD, random, hashes -------------------------------------------- */

static int l_jws_sign(lua_State *L)
{
	size_t len, n;
	const char *content = luaL_checklstring(L, 1, &len);
	const char *kid = luaL_checkstring(L, 2), *secret = luaL_checkstring(L, 3);
	ma_err e = {0};
	Box *b = newbox(L, 0);
	if (!(b->p = ma_pki_jws_sign(content, len, kid, secret, &n, &e))) return ma_push_err(L, &e);
	return push_box(L, b, n);
}

static int l_jws_verify(lua_State *L)
{
	size_t len, jlen;
	const char *content = luaL_checklstring(L, 1, &len);
	const char *kid = luaL_checkstring(L, 2), *secret = luaL_checkstring(L, 3);
	const char *jws = luaL_checklstring(L, 4, &jlen);
	ma_err e = {0};
	return push_check(L, ma_pki_jws_verify(content, len, kid, secret, jws, jlen, &e), &e);
}

/* The certificate key (hex) as AES key bytes; -1 with e set when malformed. */
static int certkey(lua_State *L, int i, unsigned char key[32], size_t *n, ma_err *e)
{
	if (ma_pki_unhex(luaL_checkstring(L, i), key, 32, n, e)) {
		char why[MA_ERRLEN];
		snprintf(why, sizeof why, "%s", e->msg);
		return ma_fail_kind(e, e->kind, "certificate key: %s", why);
	}
	return 0;
}

static int l_seal(lua_State *L)
{
	unsigned char key[32];
	size_t klen, len, n;
	const char *pt = luaL_checklstring(L, 2, &len);
	ma_err e = {0};
	Box *b = newbox(L, 0);
	unsigned char *out = NULL;
	int r = certkey(L, 1, key, &klen, &e) ? -1 : ma_pki_seal(key, klen, pt, len, &out, &n, &e);
	OPENSSL_cleanse(key, sizeof key);
	if (r) return ma_push_err(L, &e);
	b->p = out;
	return push_box(L, b, n);
}

static int l_open(lua_State *L)
{
	unsigned char key[32];
	size_t klen, len, n;
	const char *ct = luaL_checklstring(L, 2, &len);
	ma_err e = {0};
	Box *b = newbox(L, 1);
	unsigned char *out = NULL;
	int r = certkey(L, 1, key, &klen, &e) ? -1 : ma_pki_open(key, klen, ct, len, &out, &n, &e);
	OPENSSL_cleanse(key, sizeof key);
	if (r) return ma_push_err(L, &e);
	b->p = out, b->n = n + 1;
	return push_box(L, b, n);
}

static int random_bytes(lua_State *L, int hex)
{
	lua_Integer n = luaL_checkinteger(L, 1);
	luaL_argcheck(L, n >= 0 && n <= 1 << 20, 1, "must be between 0 and 1048576");
	ma_err e = {0};
	luaL_Buffer buf;
	unsigned char *p = (unsigned char *)luaL_buffinitsize(L, &buf, (size_t)n * (hex ? 3 : 1) + 1); /* n (buffer) */
	if (ma_pki_random(p, (size_t)n, &e)) return ma_push_err(L, &e);
	if (hex) { /* encode from the tail of the buffer so that input and output do not overlap */
		memmove(p + 2 * n + 1, p, (size_t)n);
		ma_hex(p + 2 * n + 1, (size_t)n, (char *)p);
	}
	luaL_pushresultsize(&buf, (size_t)n * (hex ? 2 : 1)); /* ... bytes */
	return 1;
}
static int l_random_bytes(lua_State *L) { return random_bytes(L, 0); }
static int l_random_hex(lua_State *L) { return random_bytes(L, 1); }

static int token_chars(lua_State *L, size_t n)
{
	char buf[17];
	ma_err e = {0};
	if (ma_pki_token_chars(buf, n, &e)) return ma_push_err(L, &e);
	lua_pushstring(L, buf);
	return 1;
}
static int l_token_id(lua_State *L) { return token_chars(L, 6); }
static int l_token_secret(lua_State *L) { return token_chars(L, 16); }

static int l_certificate_key(lua_State *L)
{
	char hex[65];
	ma_err e = {0};
	if (ma_pki_certificate_key(hex, &e)) return ma_push_err(L, &e);
	lua_pushstring(L, hex);
	OPENSSL_cleanse(hex, sizeof hex);
	return 1;
}

/* ---- module -------------------------------------------------------------- */

static const luaL_Reg key_methods[] = {
	{"pem", key_pem}, {"public_pem", key_public_pem}, {"type", key_type}, {"bits", key_bits},
	{"is_private", key_is_private}, {"equals", key_equals}, {"matches", key_matches}, {"close", key_close},
	{NULL, NULL}};
static const luaL_Reg key_meta[] = {
	{"__gc", key_close}, {"__close", key_close}, {"__tostring", key_tostring}, {"__index", NULL}, {NULL, NULL}};

static const luaL_Reg cert_methods[] = {
	{"pem", cert_pem}, {"info", cert_info}, {"verify", cert_verify}, {"covers", cert_covers},
	{"matches", cert_matches}, {"pin", cert_pin}, {"close", cert_close}, {NULL, NULL}};
static const luaL_Reg cert_meta[] = {
	{"__gc", cert_close}, {"__close", cert_close}, {"__tostring", cert_tostring}, {"__index", NULL}, {NULL, NULL}};

static const luaL_Reg fns[] = {
	{"generate_key", l_generate_key}, {"generate_keys", l_generate_keys}, {"rsa_generator", l_rsa_generator},
	{"read_key", l_read_key}, {"read_public_key", l_read_public_key}, {"read_cert", l_read_cert},
	{"read_certs", l_read_certs},
	{"create_ca", l_create_ca}, {"sign_cert", l_sign_cert}, {"create_csr", l_create_csr},
	{"parse_csr", l_parse_csr}, {"jws_sign", l_jws_sign}, {"jws_verify", l_jws_verify}, {"seal", l_seal},
	{"open", l_open}, {"random_bytes", l_random_bytes}, {"random_hex", l_random_hex}, {"token_id", l_token_id},
	{"token_secret", l_token_secret}, {"certificate_key", l_certificate_key},
	{NULL, NULL}};

static void handle_type(lua_State *L, const char *name, const luaL_Reg *meta, const luaL_Reg *methods)
{
	luaL_newmetatable(L, name); /* mt */
	luaL_setfuncs(L, meta, 0);
	lua_newtable(L); /* mt methods */
	luaL_setfuncs(L, methods, 0);
	lua_setfield(L, -2, "__index"); /* mt */
	lua_pop(L, 1); /* ... */
}

int luaopen_moonadm_pki(lua_State *L)
{
	ma_pki_choose_drbg(); /* before the first random byte: every key, signature and seal goes through here */
	handle_type(L, KEY_MT, key_meta, key_methods);
	handle_type(L, CERT_MT, cert_meta, cert_methods);
	luaL_newmetatable(L, BOX_MT); /* box_mt */
	lua_pushcfunction(L, box_gc);
	lua_setfield(L, -2, "__gc"); /* box_mt */
	luaL_newmetatable(L, INFO_MT); /* box_mt info_mt */
	lua_pushcfunction(L, info_gc);
	lua_setfield(L, -2, "__gc"); /* box_mt info_mt */
	lua_pop(L, 2); /* ... */
	luaL_newlib(L, fns); /* pki */
	lua_newtable(L);     /* pki algorithms */
	for (int i = 0; ma_pki_algorithms[i]; i++) {
		lua_pushstring(L, ma_pki_algorithms[i]); /* pki algorithms name */
		lua_rawseti(L, -2, i + 1); /* pki algorithms */
	}
	lua_setfield(L, -2, "algorithms"); /* pki */
	return 1;
}
