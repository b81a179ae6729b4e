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

/* bindings/commit.c: commit pending file writes (fs.h's group) first. ma_guard_table wraps the C
 * functions of the table at idx (only those in `only` when not NULL, none in `except`). */
void ma_commit_or_raise(lua_State *L);
/* Runs the pre-commit hook (fs.on_commit) when files are pending: 0, or -1 with its error pushed. */
#define MA_PRECOMMIT_KEY "moonadm.precommit"
int ma_precommit(lua_State *L);
/* Ends the group (engine/fs.h): the hook, then the commit; a failing hook drops every pending file.
 * 0, or -1 with e set. */
int ma_group_end(lua_State *L, ma_err *e);
void ma_guard_table(lua_State *L, int idx, const char *const *only, const char *const *except);
void ma_guard_stdlib(lua_State *L);
/* A Lua state on moonadm's allocator (bindings/lalloc.c), NULL when out of memory. ma_lua_exit runs
 * its finalizers and ends the process with status; outside AddressSanitizer builds it leaves the
 * state's memory to the kernel. */
lua_State *ma_lua_newstate(void);
_Noreturn void ma_lua_exit(lua_State *L, int status);

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
