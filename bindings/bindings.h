/* Helpers shared by the Lua bindings. */
#ifndef MA_BINDINGS_H
#define MA_BINDINGS_H
#include <lua.h>
#include <lauxlib.h>
#include "err.h"

/* Pushes nil and the engine's message; returns 2 (the `nil, err` convention). */
static inline int ma_push_err(lua_State *L, const ma_err *e)
{
	lua_pushnil(L);
	lua_pushstring(L, e->msg[0] ? e->msg : "unknown error");
	return 2;
}

int luaopen_moonadm_core(lua_State *L);
int luaopen_moonadm_fs(lua_State *L);
int luaopen_moonadm_yaml(lua_State *L);
int luaopen_moonadm_encoding(lua_State *L);
int luaopen_moonadm_pki(lua_State *L);
int luaopen_moonadm_api(lua_State *L);
int luaopen_moonadm_etcd(lua_State *L);
int luaopen_moonadm_proc(lua_State *L);
int luaopen_moonadm_net(lua_State *L);

#endif
