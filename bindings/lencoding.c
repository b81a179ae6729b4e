/* moonadm.encoding: base64 and SHA-256 hex (engine/encoding.h), the one home of both for the scripts,
 * and the JSON rewrite kube/json.lua decodes through (engine/json.h). */
#include <lauxlib.h>
#include <lua.h>

#include "bindings.h"
#include "encoding.h"
#include "json.h"
#include <stdlib.h>

/* text = encoding.base64_encode(bytes) */
static int l_base64_encode(lua_State *L)
{
	size_t n;
	const char *s = luaL_checklstring(L, 1, &n);
	luaL_Buffer b;
	char *out = luaL_buffinitsize(L, &b, ma_base64_encoded_len(n) + 1);
	ma_base64_encode(s, n, out);
	luaL_pushresultsize(&b, ma_base64_encoded_len(n));
	return 1;
}

/* bytes | nil, err = encoding.base64_decode(text): padding optional, whitespace ignored */
static int l_base64_decode(lua_State *L)
{
	size_t n, m = 0;
	const char *s = luaL_checklstring(L, 1, &n);
	luaL_Buffer b;
	unsigned char *out = (unsigned char *)luaL_buffinitsize(L, &b, n / 4 * 3 + 3);
	ma_err e;
	if (ma_base64_decode(s, n, out, &m, &e) != 0) {
		luaL_pushresultsize(&b, 0);
		lua_pushnil(L);
		lua_pushstring(L, e.msg);
		return 2;
	}
	luaL_pushresultsize(&b, m);
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
			lua_rawgeti(L, 3, i);
			drop[i - 1] = luaL_checkstring(L, -1); /* the table keeps the string alive */
			lua_pop(L, 1);
		}
	}
	char *out;
	size_t len, marked, dropped;
	ma_err e;
	if (ma_json_rewrite(s, n, marker, drop, &out, &len, &marked, &dropped, &e) != 0) {
		lua_pushnil(L);
		lua_pushstring(L, e.msg);
		return 2;
	}
	if (marked == 0 && dropped == 0)
		lua_pushvalue(L, 1);
	else
		lua_pushlstring(L, out, len);
	free(out);
	lua_pushinteger(L, (lua_Integer)marked);
	lua_pushinteger(L, (lua_Integer)dropped);
	return 3;
}

int luaopen_moonadm_encoding(lua_State *L)
{
	static const luaL_Reg fns[] = {
		{"base64_encode", l_base64_encode}, {"base64_decode", l_base64_decode}, {"sha256_hex", l_sha256_hex}, {"json_rewrite", l_json_rewrite}, {NULL, NULL}};
	luaL_newlib(L, fns);
	return 1;
}
