/* moonadm.encoding: base64 and SHA-256 hex (engine/encoding.h), the one home of both for the scripts. */
#include <lauxlib.h>
#include <lua.h>

#include "bindings.h"
#include "encoding.h"

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

int luaopen_moonadm_encoding(lua_State *L)
{
	static const luaL_Reg fns[] = {
		{"base64_encode", l_base64_encode}, {"base64_decode", l_base64_decode}, {"sha256_hex", l_sha256_hex}, {NULL, NULL}};
	luaL_newlib(L, fns);
	return 1;
}
