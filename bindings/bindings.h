/* Helpers shared by the Lua bindings.
 *
 * The error convention of every moonadm.* module (as liolib's):
 *  - misuse (a wrong argument type, a handle used after close) raises;
 *  - an operational failure returns three values, `nil, message, code`: code is a non-empty string,
 *    the errno's symbolic name ("ENOENT", "EACCES", "EEXIST") when a system call failed, else the
 *    engine's kind word (ma_err.kind: "malformed", "too_large", "openssl"; the api module's "connect",
 *    "timeout", "tls", ...; the etcd module's "unreachable", "protocol", gRPC codes, ...), else "error".
 *    A module may add values after the code (fs.lock: the holder's pid).
 * ma_push_err is the one place that pushes it. */
#ifndef MA_BINDINGS_H
#define MA_BINDINGS_H
#include <lua.h>
#include <lauxlib.h>
#include "err.h"

/* Pushes nil, the engine's message and its code (ma_err_code); returns 3. */
static inline int ma_push_err(lua_State *L, const ma_err *e)
{
	lua_pushnil(L);                                            /* nil */
	lua_pushstring(L, e->msg[0] ? e->msg : "unknown error"); /* nil msg */
	lua_pushstring(L, ma_err_code(e));                         /* nil msg code */
	return 3;
}

/* The root prefix of fs.set_root (bindings/lfs.c): a binding that writes or reads a node path
 * resolves it under this, as moonadm.fs does. */
const char *ma_fs_root_of(lua_State *L);

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
