/* Pending writes (engine/fs.h's group commit) are made durable and visible before anything
 * another process, or a later file operation, could observe: every function of a guarded module
 * table first commits the group, and so do the Lua library calls that start processes or touch
 * files by path (os.execute, io.popen, io.open, os.remove, os.rename, os.exit). */
#include "bindings.h"
#include "fs.h"

#include <string.h>

/* The pre-commit hook (fs.on_commit): a Lua function that writes what must land with the group,
 * ahead of its renames (the journal: see framework/journal.lua). Not re-entered: its own writes join
 * the group, and a commit it causes is the one already under way. Returns 0, or -1 with the
 * message on the stack. */
static int in_hook;

int ma_precommit(lua_State *L)
{
	if (in_hook || !ma_fs_group_size())
		return 0;
	if (lua_getfield(L, LUA_REGISTRYINDEX, MA_PRECOMMIT_KEY) != LUA_TFUNCTION) { /* ... hook */
		lua_pop(L, 1); /* ... (no hook) */
		return 0;
	}
	in_hook = 1;
	int rc = lua_pcall(L, 0, 0, 0); /* ... (ok) | ... err */
	in_hook = 0;
	return rc == LUA_OK ? 0 : -1;
}

int ma_group_end(lua_State *L, ma_err *e)
{
	if (ma_precommit(L)) { /* what must land first could not be written: nothing lands */
		const char *msg = lua_tostring(L, -1);
		ma_fail(e, "%s", msg ? msg : "the pre-commit hook failed (its error is not a string)");
		lua_pop(L, 1); /* ... */
		ma_fs_group_abort();
		return -1;
	}
	return ma_fs_group_end(e);
}

void ma_commit_or_raise(lua_State *L)
{
	if (ma_precommit(L)) /* the files stay pending: the group's end tries again, or drops them */
		luaL_error(L, "making this run's file writes durable failed: %s", luaL_tolstring(L, -1, NULL));
	ma_err e = {0};
	if (ma_fs_group_commit(&e))
		luaL_error(L, "making this run's file writes durable failed: %s", e.msg);
}

static int guarded(lua_State *L)
{
	ma_commit_or_raise(L);
	lua_pushvalue(L, lua_upvalueindex(1)); /* args... fn */
	lua_insert(L, 1); /* fn args... */
	lua_call(L, lua_gettop(L) - 1, LUA_MULTRET); /* results... */
	return lua_gettop(L);
}

static int listed(const char *name, const char *const *names)
{
	for (; names && *names; names++)
		if (!strcmp(name, *names))
			return 1;
	return 0;
}

void ma_guard_table(lua_State *L, int idx, const char *const *only, const char *const *except)
{
	idx = lua_absindex(L, idx);
	lua_pushnil(L); /* ... nil (the first key) */
	while (lua_next(L, idx)) { /* key, value */
		if (lua_type(L, -2) == LUA_TSTRING && lua_iscfunction(L, -1)) {
			const char *k = lua_tostring(L, -2);
			if ((!only || listed(k, only)) && !listed(k, except)) {
				lua_pushcclosure(L, guarded, 1); /* key, guarded(value) */
				lua_pushvalue(L, -2); /* ... key guarded key */
				lua_insert(L, -2); /* ... key key guarded */
				lua_rawset(L, idx); /* replacing an existing key's value during lua_next is allowed */
				continue;
			}
		}
		lua_pop(L, 1); /* ... key */
	}
}

void ma_guard_stdlib(lua_State *L)
{
	static const char *const os_fns[] = {"execute", "remove", "rename", "exit", NULL};
	static const char *const io_fns[] = {"popen", "open", "lines", "input", "output", NULL};
	static const char *const base_fns[] = {"loadfile", "dofile", NULL};
	lua_getglobal(L, "os"); /* ... os */
	ma_guard_table(L, -1, os_fns, NULL);
	lua_getglobal(L, "io"); /* ... os io */
	ma_guard_table(L, -1, io_fns, NULL);
	lua_pushglobaltable(L); /* ... os io _G */
	ma_guard_table(L, -1, base_fns, NULL);
	lua_pop(L, 3); /* ... */
}
