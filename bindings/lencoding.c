/* moonadm.encoding: base64 and SHA-256 hex (engine/encoding.h), the one home of both for the scripts,
 * the JSON rewrite kube/json.lua decodes through (engine/json.h), and the canonical text of a Lua
 * value the journal digests. */
#include <lauxlib.h>
#include <lua.h>

#include "bindings.h"
#include "encoding.h"
#include "json.h"
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* text = encoding.base64_encode(bytes) */
static int l_base64_encode(lua_State *L)
{
	size_t n;
	const char *s = luaL_checklstring(L, 1, &n);
	luaL_Buffer b;
	char *out = luaL_buffinitsize(L, &b, ma_base64_encoded_len(n) + 1); /* bytes (buffer) */
	ma_base64_encode(s, n, out);
	luaL_pushresultsize(&b, ma_base64_encoded_len(n)); /* bytes text */
	return 1;
}

/* bytes | nil, err = encoding.base64_decode(text): padding optional, whitespace ignored */
static int l_base64_decode(lua_State *L)
{
	size_t n, m = 0;
	const char *s = luaL_checklstring(L, 1, &n);
	luaL_Buffer b;
	unsigned char *out = (unsigned char *)luaL_buffinitsize(L, &b, n / 4 * 3 + 3); /* text (buffer) */
	ma_err e = {0};
	if (ma_base64_decode(s, n, out, &m, &e) != 0) {
		luaL_pushresultsize(&b, 0); /* text "" */
		return ma_push_err(L, &e); /* text "" nil msg code */
	}
	luaL_pushresultsize(&b, m); /* text bytes */
	return 1;
}

/* hex = encoding.sha256_hex(bytes) */
static int l_sha256_hex(lua_State *L)
{
	size_t n;
	const char *s = luaL_checklstring(L, 1, &n);
	char out[65];
	ma_sha256_hex(s, n, out);
	lua_pushlstring(L, out, 64);
	return 1;
}

/* text, marked, dropped = encoding.json_rewrite(json, marker [, {names...}]): engine/json.h's
 * ma_json_rewrite (empty arrays become [marker], members named in the list are left out); the
 * text itself when nothing changed; nil, message when memory runs out */
static int l_json_rewrite(lua_State *L)
{
	size_t n;
	const char *s = luaL_checklstring(L, 1, &n);
	const char *marker = luaL_checkstring(L, 2);
	const char *drop[9] = {0};
	if (!lua_isnoneornil(L, 3)) {
		luaL_checktype(L, 3, LUA_TTABLE);
		lua_Integer k = luaL_len(L, 3);
		luaL_argcheck(L, k <= 8, 3, "at most 8 names");
		for (lua_Integer i = 1; i <= k; i++) {
			lua_rawgeti(L, 3, i); /* json marker names name */
			drop[i - 1] = luaL_checkstring(L, -1); /* the table keeps the string alive */
			lua_pop(L, 1); /* json marker names */
		}
	}
	char *out;
	size_t len, marked, dropped;
	ma_err e = {0};
	if (ma_json_rewrite(s, n, marker, drop, &out, &len, &marked, &dropped, &e) != 0)
		return ma_push_err(L, &e);
	if (marked == 0 && dropped == 0)
		lua_pushvalue(L, 1); /* json marker [names] json */
	else
		lua_pushlstring(L, out, len); /* json marker [names] text */
	free(out);
	lua_pushinteger(L, (lua_Integer)marked);
	lua_pushinteger(L, (lua_Integer)dropped); /* ... text marked dropped */
	return 3;
}

/* ---- canon(v): a canonical text of a value, so equal data gives an equal digest ----
 * Tables as {k:v,...} with keys sorted (by type name first, then by value: numbers by value,
 * strings bytewise, false before true), strings as string.format("%q") writes them, numbers,
 * booleans and nil as tostring does, functions, userdata and threads as their type name. The
 * journal digests the whole configuration before every phase, so this runs often. */
struct canon_key {
	int type;
	const char *s; /* a string key: alive as the table's key while the table is walked */
	size_t len;
	int isint;
	lua_Integer i;
	lua_Number n;
	int b;
	int slot; /* where the key itself sits on the Lua stack, to push it again */
};

static int canon_key_cmp(const void *pa, const void *pb)
{
	const struct canon_key *a = pa, *b = pb;
	if (a->type != b->type) return a->type < b->type ? -1 : 1; /* type *names* order: see canon_rank */
	switch (a->type) {
	case 1: /* boolean */ return a->b - b->b;
	case 2: /* number */
		if (a->isint && b->isint) return a->i < b->i ? -1 : a->i > b->i;
		{
			lua_Number x = a->isint ? (lua_Number)a->i : a->n, y = b->isint ? (lua_Number)b->i : b->n;
			return x < y ? -1 : x > y;
		}
	default: { /* string */
		size_t n = a->len < b->len ? a->len : b->len;
		int c = memcmp(a->s, b->s, n);
		return c ? c : (a->len < b->len ? -1 : a->len > b->len);
	}
	}
}

/* The rank of a key type, in the alphabetical order of the type names (boolean, number, string). */
static int canon_rank(int t)
{
	return t == LUA_TBOOLEAN ? 1 : t == LUA_TNUMBER ? 2 : t == LUA_TSTRING ? 3 : 0;
}

/* The text grows in a userdata at a fixed stack slot (a luaL_Buffer wants the stack balanced
 * between its calls; the walk keeps keys on the stack). The keys of the tables being walked share
 * one stack in another userdata: each table's keys above its parent's, dropped when it is done, so a
 * digest of a configuration leaves no garbage per table. */
struct canon_buf {
	int slot;
	char *p;
	size_t len, cap;
	int keys_slot, nkeys, keys_cap;
	struct canon_key *keys;
};

static void canon_add(lua_State *L, struct canon_buf *b, const char *s, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap * 2 > b->len + n ? b->cap * 2 : b->len + n;
		char *grown = lua_newuserdatauv(L, cap, 0); /* ... grown */
		memcpy(grown, b->p, b->len);
		lua_replace(L, b->slot); /* ... (grown in b->slot) */
		b->p = grown;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
}

static void canon_quoted(lua_State *L, struct canon_buf *b, const char *s, size_t len)
{
	canon_add(L, b, "\"", 1);
	size_t run = 0; /* bytes copied as they are, added in one go */
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[8];
		int n = 0;
		if (c == '"' || c == '\\' || c == '\n') {
			esc[0] = '\\';
			esc[1] = (char)c;
			n = 2;
		} else if (iscntrl(c)) {
			int digit_next = i + 1 < len && isdigit((unsigned char)s[i + 1]);
			n = snprintf(esc, sizeof esc, digit_next ? "\\%03d" : "\\%d", c);
		}
		if (!n) {
			run++;
			continue;
		}
		canon_add(L, b, s + i - run, run);
		run = 0;
		canon_add(L, b, esc, (size_t)n);
	}
	canon_add(L, b, s + len - run, run);
	canon_add(L, b, "\"", 1);
}

/* Appends the canon of the value at idx. */
static void canon_into(lua_State *L, struct canon_buf *b, int idx, int depth)
{
	idx = lua_absindex(L, idx);
	int t = lua_type(L, idx);
	if (t == LUA_TSTRING) {
		size_t len;
		const char *s = lua_tolstring(L, idx, &len);
		canon_quoted(L, b, s, len);
		return;
	}
	if (t != LUA_TTABLE) {
		const char *s;
		size_t len;
		if (t == LUA_TFUNCTION || t == LUA_TUSERDATA || t == LUA_TLIGHTUSERDATA || t == LUA_TTHREAD) {
			s = t == LUA_TLIGHTUSERDATA ? "userdata" : lua_typename(L, t);
			canon_add(L, b, s, strlen(s));
		} else {
			s = luaL_tolstring(L, idx, &len); /* ... s */
			canon_add(L, b, s, len);
			lua_pop(L, 1); /* ... */
		}
		return;
	}
	if (depth > 200) luaL_error(L, "canon: a table nested deeper than 200 levels (a cycle?)");
	/* the keys go on the Lua stack (they stay alive and can be pushed again), their order in b->keys */
	int base = lua_gettop(L), first = b->nkeys;
	luaL_checkstack(L, 8, "canon: too deep");
	lua_pushnil(L); /* ... keys... nil */
	while (lua_next(L, idx)) { /* ... keys... k v */
		lua_pop(L, 1); /* ... keys... k */
		int kt = lua_type(L, -1), rank = canon_rank(kt);
		if (!rank) luaL_error(L, "canon: a table key of type %s cannot be ordered", lua_typename(L, kt));
		if (b->nkeys == b->keys_cap) {
			int cap = b->keys_cap * 2;
			struct canon_key *grown = lua_newuserdatauv(L, (size_t)cap * sizeof *grown, 0); /* ... keys... k grown */
			memcpy(grown, b->keys, (size_t)b->nkeys * sizeof *grown);
			lua_replace(L, b->keys_slot); /* ... keys... k (grown in b->keys_slot) */
			b->keys = grown;
			b->keys_cap = cap;
		}
		luaL_checkstack(L, 3, "canon: too many keys");
		lua_pushvalue(L, -1); /* ... keys... k k */
		lua_insert(L, -2); /* ... keys... k k (the copy stays below the key lua_next continues from) */
		struct canon_key *k = &b->keys[b->nkeys++];
		memset(k, 0, sizeof *k);
		k->type = rank;
		k->slot = lua_gettop(L) - 1;
		if (kt == LUA_TSTRING) k->s = lua_tolstring(L, k->slot, &k->len);
		else if (kt == LUA_TBOOLEAN) k->b = lua_toboolean(L, k->slot);
		else if ((k->isint = lua_isinteger(L, k->slot))) k->i = lua_tointeger(L, k->slot);
		else k->n = lua_tonumber(L, k->slot);
	}
	int n = b->nkeys - first;
	qsort(b->keys + first, (size_t)n, sizeof *b->keys, canon_key_cmp);
	canon_add(L, b, "{", 1);
	for (int i = 0; i < n; i++) {
		if (i) canon_add(L, b, ",", 1);
		int slot = b->keys[first + i].slot; /* b->keys again: a nested table may have grown it */
		canon_into(L, b, slot, depth + 1);
		canon_add(L, b, ":", 1);
		lua_pushvalue(L, slot); /* ... keys... k */
		lua_rawget(L, idx); /* ... keys... v */
		canon_into(L, b, -1, depth + 1);
		lua_pop(L, 1); /* ... keys... */
	}
	b->nkeys = first;
	canon_add(L, b, "}", 1);
	lua_settop(L, base); /* ... */
}

/* text = encoding.canon(value) */
static int l_canon(lua_State *L)
{
	luaL_checkany(L, 1);
	lua_settop(L, 1); /* value */
	struct canon_buf b = {.slot = 2, .cap = 1024, .keys_slot = 3, .keys_cap = 64};
	b.p = lua_newuserdatauv(L, b.cap, 0); /* value text */
	b.keys = lua_newuserdatauv(L, (size_t)b.keys_cap * sizeof *b.keys, 0); /* value text keys */
	canon_into(L, &b, 1, 0);
	lua_pushlstring(L, b.p, b.len); /* value text keys canon */
	return 1;
}

int luaopen_moonadm_encoding(lua_State *L)
{
	static const luaL_Reg fns[] = {
		{"base64_encode", l_base64_encode}, {"base64_decode", l_base64_decode}, {"sha256_hex", l_sha256_hex},
		{"json_rewrite", l_json_rewrite},   {"canon", l_canon},                 {NULL, NULL}};
	luaL_newlib(L, fns); /* encoding */
	return 1;
}
