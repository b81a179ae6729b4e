/* moonadm.fs: node paths under the root prefix (see engine/fs.h). Modes are integers or
 * octal strings ("0600"), since Lua has no octal literals. */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bindings.h"
#include "fs.h"

#define ROOT_KEY "moonadm.fs.root"

static const char *root(lua_State *L)
{
	lua_getfield(L, LUA_REGISTRYINDEX, ROOT_KEY); /* ... root */
	const char *r = lua_tostring(L, -1);
	lua_pop(L, 1); /* ... (the string stays alive: the registry holds it) */
	return r ? r : "/";
}

const char *ma_fs_root_of(lua_State *L)
{
	return root(L);
}

static mode_t checkmode(lua_State *L, int i, mode_t def)
{
	if (lua_isnoneornil(L, i))
		return def;
	if (lua_type(L, i) == LUA_TSTRING) {
		char *end;
		const char *s = lua_tostring(L, i);
		long m = strtol(s, &end, 8);
		if (*s == '\0' || *end != '\0' || m < 0 || m > 07777)
			luaL_argerror(L, i, "mode must be an octal string like \"0600\"");
		return (mode_t)m;
	}
	return (mode_t)luaL_checkinteger(L, i);
}

static int l_set_root(lua_State *L)
{
	const char *r = luaL_checkstring(L, 1);
	if (r[0] != '/')
		return luaL_error(L, "root must be an absolute path, got %s", r);
	lua_pushvalue(L, 1); /* path path */
	lua_setfield(L, LUA_REGISTRYINDEX, ROOT_KEY); /* path */
	return 0;
}

static int l_root(lua_State *L)
{
	lua_pushstring(L, root(L));
	return 1;
}

static int l_path(lua_State *L)
{
	char host[MA_PATH_MAX];
	ma_err e = {0};
	if (ma_fs_resolve(root(L), luaL_checkstring(L, 1), host, sizeof host, &e))
		return ma_push_err(L, &e);
	lua_pushstring(L, host);
	return 1;
}

static int l_write(lua_State *L)
{
	size_t len;
	const char *path = luaL_checkstring(L, 1);
	const char *data = luaL_checklstring(L, 2, &len);
	mode_t mode = checkmode(L, 3, 0644);
	int changed = 0;
	ma_err e = {0};
	/* a full group commits before this write, through the pre-commit hook like every commit */
	if (ma_fs_group_active() && ma_fs_group_full() && !ma_fs_group_pending(root(L), path))
		ma_commit_or_raise(L);
	if (ma_fs_write(root(L), path, data, len, mode, &changed, &e))
		return ma_push_err(L, &e);
	lua_pushboolean(L, 1); /* true */
	lua_pushboolean(L, changed); /* true changed */
	return 2;
}

static int l_read(lua_State *L)
{
	char *data;
	size_t len;
	ma_err e = {0};
	if (ma_fs_read(root(L), luaL_checkstring(L, 1), &data, &len, &e))
		return ma_push_err(L, &e);
	lua_pushlstring(L, data, len);
	free(data);
	return 1;
}

/* fs.read_regular(host_path, max) -> data | nil, err: the user's own files, under no root */
static int l_read_regular(lua_State *L)
{
	char *data;
	size_t len;
	ma_err e = {0};
	const char *path = luaL_checkstring(L, 1);
	lua_Integer max = luaL_checkinteger(L, 2);
	luaL_argcheck(L, max >= 0, 2, "the size limit must not be negative");
	if (ma_fs_read_regular(path, (size_t)max, &data, &len, &e))
		return ma_push_err(L, &e);
	lua_pushlstring(L, data, len);
	free(data);
	return 1;
}

static int l_exists(lua_State *L)
{
	ma_err e = {0};
	int rc = ma_fs_exists(root(L), luaL_checkstring(L, 1), &e);
	if (rc < 0)
		return ma_push_err(L, &e);
	lua_pushboolean(L, rc);
	return 1;
}

static int l_mkdir(lua_State *L)
{
	ma_err e = {0};
	if (ma_fs_mkdir(root(L), luaL_checkstring(L, 1), checkmode(L, 2, 0755), &e))
		return ma_push_err(L, &e);
	lua_pushboolean(L, 1);
	return 1;
}

static int l_remove(lua_State *L)
{
	ma_err e = {0};
	if (ma_fs_remove(root(L), luaL_checkstring(L, 1), &e))
		return ma_push_err(L, &e);
	lua_pushboolean(L, 1);
	return 1;
}

static int l_remove_tree(lua_State *L)
{
	ma_err e = {0};
	if (ma_fs_remove_tree(root(L), luaL_checkstring(L, 1), lua_toboolean(L, 2), &e))
		return ma_push_err(L, &e);
	lua_pushboolean(L, 1);
	return 1;
}

static int l_copy(lua_State *L)
{
	ma_err e = {0};
	if (ma_fs_copy(root(L), luaL_checkstring(L, 1), luaL_checkstring(L, 2), &e))
		return ma_push_err(L, &e);
	lua_pushboolean(L, 1);
	return 1;
}

/* fs.rename(from, to [, exchange]) -> true | nil, err (engine/fs.h ma_fs_rename) */
static int l_rename(lua_State *L)
{
	ma_err e = {0};
	if (ma_fs_rename(root(L), luaL_checkstring(L, 1), luaL_checkstring(L, 2), lua_toboolean(L, 3), &e))
		return ma_push_err(L, &e);
	lua_pushboolean(L, 1);
	return 1;
}

/* -> sorted list of entry names (no . and ..) */
static int l_list(lua_State *L)
{
	char host[MA_PATH_MAX];
	ma_err e = {0};
	if (ma_fs_resolve(root(L), luaL_checkstring(L, 1), host, sizeof host, &e))
		return ma_push_err(L, &e);
	DIR *d = opendir(host);
	if (!d) {
		ma_fail_errno(&e, errno, "opendir %s", host);
		return ma_push_err(L, &e);
	}
	lua_newtable(L); /* list */
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		lua_pushstring(L, de->d_name); /* list name */
		lua_seti(L, -2, ++n); /* list */
	}
	closedir(d);
	/* sort in Lua: table.sort on the result keeps this function allocation-free */
	lua_getglobal(L, "table"); /* list table */
	lua_getfield(L, -1, "sort"); /* list table sort */
	lua_pushvalue(L, -3); /* list table sort list */
	lua_call(L, 1, 0); /* list table */
	lua_pop(L, 1); /* list */
	return 1;
}

static int l_stat(lua_State *L)
{
	char host[MA_PATH_MAX];
	struct stat st;
	ma_err e = {0};
	if (ma_fs_resolve(root(L), luaL_checkstring(L, 1), host, sizeof host, &e))
		return ma_push_err(L, &e);
	/* follow (2nd argument true): stat the symlink's target instead of the link */
	if ((lua_toboolean(L, 2) ? stat(host, &st) : lstat(host, &st)) != 0) {
		ma_fail_errno(&e, errno, "stat %s", host);
		return ma_push_err(L, &e);
	}
	lua_createtable(L, 0, 6); /* t */
	lua_pushinteger(L, st.st_mode & 07777);
	lua_setfield(L, -2, "mode");
	lua_pushinteger(L, (lua_Integer)st.st_size);
	lua_setfield(L, -2, "size");
	lua_pushinteger(L, (lua_Integer)st.st_mtime);
	lua_setfield(L, -2, "mtime");
	lua_pushinteger(L, (lua_Integer)st.st_uid); /* owner, for the site-scripts permission check */
	lua_setfield(L, -2, "uid");
	lua_pushinteger(L, (lua_Integer)st.st_gid);
	lua_setfield(L, -2, "gid");
	const char *type = S_ISDIR(st.st_mode) ? "directory" : S_ISREG(st.st_mode) ? "file"
			   : S_ISLNK(st.st_mode) ? "link" : "other";
	lua_pushstring(L, type);
	lua_setfield(L, -2, "type");
	return 1;
}

/* A symlink's target as stored (not resolved): the trust check (framework/trust.lua) walks a
 * path a component at a time, as the kernel does, and judges every link and directory it passes. */
static int l_readlink(lua_State *L)
{
	char host[MA_PATH_MAX], target[MA_PATH_MAX];
	ma_err e = {0};
	if (ma_fs_resolve(root(L), luaL_checkstring(L, 1), host, sizeof host, &e))
		return ma_push_err(L, &e);
	ssize_t n = readlink(host, target, sizeof target);
	if (n < 0) {
		ma_fail_errno(&e, errno, "readlink %s", host);
		return ma_push_err(L, &e);
	}
	if ((size_t)n >= sizeof target) {
		ma_fail_kind(&e, "too_large", "readlink %s: target too long", host);
		return ma_push_err(L, &e);
	}
	lua_pushlstring(L, target, (size_t)n);
	return 1;
}

/* The root lock: a handle that holds an flock until :release(), __close or __gc. */
#define LOCK_MT "moonadm.fs.lock"

typedef struct {
	int fd;
	char root[MA_PATH_MAX], path[MA_PATH_MAX];
} lock_handle;

static int l_lock_release(lua_State *L)
{
	lock_handle *h = luaL_checkudata(L, 1, LOCK_MT);
	if (h->fd >= 0) {
		ma_fs_unlock(h->root, h->path, h->fd); /* the file goes, then the flock with the descriptor */
		h->fd = -1;
	}
	return 0;
}

static int l_lock_held(lua_State *L)
{
	lock_handle *h = luaL_checkudata(L, 1, LOCK_MT);
	lua_pushboolean(L, h->fd >= 0);
	return 1;
}

/* fs.lock(path) -> handle | nil, message, code [, holder_pid]: code "locked" when another process
 * holds it, with its pid (0 if unknown) */
static int l_lock(lua_State *L)
{
	const char *path = luaL_checkstring(L, 1);
	lock_handle *h = lua_newuserdatauv(L, sizeof *h, 0); /* path h */
	h->fd = -1;
	luaL_setmetatable(L, LOCK_MT); /* path h (unlocked) */
	if (snprintf(h->root, sizeof h->root, "%s", root(L)) >= (int)sizeof h->root ||
	    snprintf(h->path, sizeof h->path, "%s", path) >= (int)sizeof h->path)
		return luaL_error(L, "fs.lock: path too long: %s", path);
	long holder = 0;
	ma_err e = {0};
	int rc = ma_fs_lock(root(L), path, &h->fd, &holder, &e);
	if (rc < 0)
		return ma_push_err(L, &e);
	if (rc == 1) {
		char host[MA_PATH_MAX];
		if (ma_fs_resolve(root(L), path, host, sizeof host, &e))
			snprintf(host, sizeof host, "%s", path);
		if (holder > 0)
			ma_fail_kind(&e, "locked", "%s is locked by pid %ld", host, holder);
		else
			ma_fail_kind(&e, "locked", "%s is locked by another process (its pid is not recorded yet)", host);
		ma_push_err(L, &e);         /* ... nil msg "locked" */
		lua_pushinteger(L, holder); /* ... nil msg "locked" pid */
		return 4;
	}
	return 1;
}

/* fs.clean_temps(dir [, depth]) -> number removed | nil, message */
static int l_clean_temps(lua_State *L)
{
	int removed = 0;
	ma_err e = {0};
	if (ma_fs_clean_temps(root(L), luaL_checkstring(L, 1), (int)luaL_optinteger(L, 2, 0), &removed, &e))
		return ma_push_err(L, &e);
	lua_pushinteger(L, removed);
	return 1;
}

/* group_begin(): later writes wait for commit() / group_end() (engine/fs.h's group commit). */
static int l_group_begin(lua_State *L)
{
	ma_fs_group_begin();
	lua_pushboolean(L, 1);
	return 1;
}

/* pending(path): is this file written by the group and not yet committed? */
static int l_pending(lua_State *L)
{
	lua_pushboolean(L, ma_fs_group_pending(root(L), luaL_checkstring(L, 1)));
	return 1;
}

/* on_commit(fn | nil [, first]): fn runs before every commit of a non-empty group
 * (bindings/commit.c); the file `first` is renamed ahead of the others (engine/fs.h's lead). */
static int l_on_commit(lua_State *L)
{
	if (!lua_isnoneornil(L, 1))
		luaL_checktype(L, 1, LUA_TFUNCTION);
	const char *first = luaL_optstring(L, 2, NULL);
	ma_err e = {0};
	if (ma_fs_group_lead(root(L), first, &e))
		return ma_push_err(L, &e);
	lua_settop(L, 1); /* fn */
	lua_setfield(L, LUA_REGISTRYINDEX, MA_PRECOMMIT_KEY); /* (empty) */
	lua_pushboolean(L, 1);
	return 1;
}

/* The pre-commit hook's error (on the top) as nil, message, "hook". */
static int precommit_err(lua_State *L)
{
	const char *msg = lua_tostring(L, -1); /* ... err */
	ma_err e = {0};
	ma_fail_kind(&e, "hook", "%s", msg ? msg : "the pre-commit hook failed (its error is not a string)");
	lua_pop(L, 1); /* ... */
	return ma_push_err(L, &e); /* nil msg "hook" */
}

static int l_commit(lua_State *L)
{
	if (ma_precommit(L)) return precommit_err(L);
	ma_err e = {0};
	if (ma_fs_group_commit(&e)) return ma_push_err(L, &e);
	lua_pushboolean(L, 1);
	return 1;
}

static int l_group_end(lua_State *L)
{
	ma_err e = {0};
	if (ma_group_end(L, &e)) return ma_push_err(L, &e);
	lua_pushboolean(L, 1);
	return 1;
}

static void lock_metatable(lua_State *L)
{
	static const luaL_Reg methods[] = {{"release", l_lock_release}, {"held", l_lock_held}, {NULL, NULL}};
	if (luaL_newmetatable(L, LOCK_MT)) { /* mt */
		luaL_newlib(L, methods); /* mt methods */
		lua_setfield(L, -2, "__index"); /* mt */
		lua_pushcfunction(L, l_lock_release);
		lua_setfield(L, -2, "__gc");
		lua_pushcfunction(L, l_lock_release);
		lua_setfield(L, -2, "__close");
	}
	lua_pop(L, 1); /* ... */
}

int luaopen_moonadm_fs(lua_State *L)
{
	lock_metatable(L);
	static const luaL_Reg fns[] = {{"set_root", l_set_root}, {"root", l_root},     {"path", l_path},
				       {"write", l_write},       {"read", l_read},     {"read_regular", l_read_regular},
				       {"exists", l_exists},
				       {"mkdir", l_mkdir},       {"remove", l_remove}, {"remove_tree", l_remove_tree},
				       {"copy", l_copy},         {"rename", l_rename},     {"list", l_list},     {"stat", l_stat},
				       {"readlink", l_readlink},
				       {"lock", l_lock},         {"clean_temps", l_clean_temps},
				       {"group_begin", l_group_begin}, {"commit", l_commit}, {"group_end", l_group_end},
				       {"pending", l_pending},   {"on_commit", l_on_commit},
				       {NULL, NULL}};
	luaL_newlib(L, fns); /* fs */
	/* the operations that see pending writes themselves; every other one commits the group first */
	static const char *const sees_pending[] = {"root", "path", "write", "read", "exists", "mkdir",
						   "group_begin", "commit", "group_end", "pending", "on_commit", NULL};
	ma_guard_table(L, -1, NULL, sees_pending); /* fs (guarded) */
	return 1;
}
