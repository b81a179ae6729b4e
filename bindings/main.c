/* moonadm's host: argv -> a Lua state with the engine bindings and the embedded
 * scripts -> scripts/framework/cli.lua. `moonadm lua FILE ARGS...` runs any Lua file in the
 * same environment (the busted specs run that way, against the real bindings). */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bindings.h"
#include "fs.h"
#include "scripts_embed.h"
#include "version.h"

static const char *scripts_dir; /* --scripts DIR / MOONADM_SCRIPTS: wins over the embedded copy */
static int insecure_scripts;    /* --insecure-scripts: a scripts dir others could change only warns */

static int script_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct ma_script *)elem)->name);
}

static const struct ma_script *find_embedded(const char *name)
{
	return bsearch(name, ma_scripts, ma_scripts_count, sizeof *ma_scripts, script_cmp);
}

/* package.searchers entry: DIR/a/b.lua or DIR/a/b/init.lua, then the embedded copy. */
static int searcher(lua_State *L)
{
	const char *name = luaL_checkstring(L, 1);
	if (scripts_dir) {
		lua_pushstring(L, name); /* name name */
		luaL_gsub(L, lua_tostring(L, -1), ".", "/"); /* name name rel */
		const char *rel = lua_tostring(L, -1);
		const char *tries[] = {"%s/%s.lua", "%s/%s/init.lua"};
		for (int i = 0; i < 2; i++) {
			const char *path = lua_pushfstring(L, tries[i], scripts_dir, rel); /* name name rel path */
			FILE *f = fopen(path, "r");
			if (f) {
				fclose(f);
				if (luaL_loadfilex(L, path, "t") != LUA_OK)
					return luaL_error(L, "error loading module '%s' from '%s':\n\t%s", name, path,
							  lua_tostring(L, -1));
				lua_pushstring(L, path); /* name name rel path chunk path */
				return 2;
			}
			lua_pop(L, 1); /* name name rel */
		}
		lua_pop(L, 2); /* name */
	}
	const struct ma_script *s = find_embedded(name);
	if (!s) {
		lua_pushfstring(L, "no embedded script '%s'", name); /* name msg */
		return 1;
	}
	/* compiled at build time by tools/embed.c (the chunk knows its name, @scripts/<path>) */
	if (luaL_loadbufferx(L, (const char *)s->code, s->code_len, s->chunk, "b") != LUA_OK) /* name chunk */
		return luaL_error(L, "error loading embedded module '%s':\n\t%s", name, lua_tostring(L, -1));
	lua_pushstring(L, s->chunk + 1); /* name chunk data (the loader data: scripts/<path>) */
	return 2;
}

/* Keeps only the absolute templates of package.path or package.cpath: Lua's defaults end in ./?.lua
 * and ./?.so, so a module not embedded (lua-cjson, luv) would be loaded from whatever directory root
 * runs moonadm in — a cjson.so planted in /tmp would run as root. */
static void absolute_paths(lua_State *L, const char *field)
{
	lua_getglobal(L, "package"); /* package */
	lua_getfield(L, -1, field); /* package templates */
	const char *p = lua_tostring(L, -1);
	int n = 0;
	while (p && *p) {
		size_t len = strcspn(p, ";");
		if (p[0] == '/') {
			if (n++)
				lua_pushliteral(L, ";"); /* package templates ... ";" */
			lua_pushlstring(L, p, len); /* package templates ... template */
		}
		p += len + (p[len] == ';');
	}
	lua_concat(L, n ? 2 * n - 1 : 0); /* package templates absolute */
	lua_setfield(L, -3, field); /* package templates */
	lua_pop(L, 2); /* ... */
}

static void preload(lua_State *L, const char *name, lua_CFunction open)
{
	luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE); /* preload */
	lua_pushcfunction(L, open); /* preload open */
	lua_setfield(L, -2, name); /* preload */
	lua_pop(L, 1); /* ... */
}

/* Every moonadm.* binding, requireable (the host and the fuzz targets share this list). */
static void preload_bindings(lua_State *L)
{
	preload(L, "moonadm.core", luaopen_moonadm_core);
	preload(L, "moonadm.fs", luaopen_moonadm_fs);
	preload(L, "moonadm.yaml", luaopen_moonadm_yaml);
	preload(L, "moonadm.encoding", luaopen_moonadm_encoding);
	preload(L, "moonadm.pki", luaopen_moonadm_pki);
	preload(L, "moonadm.api", luaopen_moonadm_api);
	preload(L, "moonadm.etcd", luaopen_moonadm_etcd);
	preload(L, "moonadm.proc", luaopen_moonadm_proc);
	preload(L, "moonadm.net", luaopen_moonadm_net);
}

static void install_searcher(lua_State *L)
{
	lua_getglobal(L, "package"); /* package */
	lua_getfield(L, -1, "searchers"); /* package searchers */
	lua_Integer n = luaL_len(L, -1);
	for (lua_Integer i = n; i >= 2; i--) { /* shift to make room at index 2, after preload */
		lua_geti(L, -1, i); /* package searchers s[i] */
		lua_seti(L, -2, i + 1); /* package searchers */
	}
	lua_pushcfunction(L, searcher); /* package searchers searcher */
	lua_seti(L, -2, 2); /* package searchers */
	lua_pop(L, 2); /* ... */
}

/* A message that says where it came from ("file:line: ...") is a bug: show the traceback. A
 * message without one is a user-facing error (raised with level 0): print it as it is. */
static int traceback(lua_State *L)
{
	const char *msg = lua_tostring(L, 1);
	if (!msg)
		msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1)); /* err msg */
	const char *colon = strchr(msg, ':');
	int located = colon && colon > msg && colon[1] >= '0' && colon[1] <= '9';
	if (!located && !getenv("MOONADM_TRACEBACK"))
		return 1;
	luaL_traceback(L, L, msg, 1); /* err [msg] traceback */
	return 1;
}

/* Checks that the scripts were written for this engine (major.minor must match). */
static int check_versions(lua_State *L)
{
	lua_getglobal(L, "require"); /* require */
	lua_pushstring(L, "framework.version"); /* require name */
	lua_call(L, 1, 1); /* version */
	lua_getfield(L, -1, "engine"); /* version engine */
	const char *want = lua_tostring(L, -1);
	if (!want)
		return luaL_error(L, "scripts/framework/version.lua does not declare the engine version it needs");
	size_t k = strlen(want);
	const char *have = MA_ENGINE_VERSION;
	if (strncmp(have, want, k) != 0 || (have[k] != '.' && have[k] != '\0'))
		return luaL_error(L,
				  "the Lua scripts%s%s need engine %s, but this binary's engine is %s: re-export the "
				  "scripts with `moonadm scripts export DIR` from this binary, or drop --scripts/MOONADM_SCRIPTS",
				  scripts_dir ? " in " : "", scripts_dir ? scripts_dir : "", want, have);
	lua_pop(L, 2); /* ... */
	return 0;
}

/* Site scripts run as root: before anything is loaded from a scripts dir, the embedded
 * site.trust refuses one that others could have changed. Modules loaded for the check are
 * forgotten afterwards, so the dir's own copies win from then on. */
static void check_scripts_dir(lua_State *L)
{
	if (!scripts_dir)
		return;
	const char *dir = scripts_dir;
	scripts_dir = NULL; /* the check itself comes from the embedded scripts only */
	luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE); /* loaded */
	lua_newtable(L); /* loaded before (the modules already loaded) */
	lua_pushnil(L); /* loaded before nil */
	while (lua_next(L, -3)) { /* loaded before k v */
		lua_pop(L, 1); /* loaded before k */
		lua_pushvalue(L, -1); /* loaded before k k */
		lua_pushboolean(L, 1); /* loaded before k k true */
		lua_settable(L, -4); /* loaded before k */
	}
	lua_getglobal(L, "require"); /* loaded before require */
	lua_pushstring(L, "framework.trust"); /* loaded before require name */
	lua_call(L, 1, 1); /* loaded before trust */
	lua_getfield(L, -1, "check"); /* loaded before trust check */
	lua_createtable(L, 1, 0); /* loaded before trust check list */
	lua_createtable(L, 0, 2); /* loaded before trust check list item */
	lua_pushstring(L, "scripts dir");
	lua_setfield(L, -2, "what"); /* loaded before trust check list item */
	lua_pushstring(L, dir);
	lua_setfield(L, -2, "path"); /* loaded before trust check list item */
	lua_seti(L, -2, 1); /* loaded before trust check list */
	lua_pushboolean(L, insecure_scripts); /* loaded before trust check list insecure */
	lua_call(L, 2, 0); /* loaded before trust (it raises with the reason) */
	lua_pop(L, 1);     /* loaded before */
	lua_pushnil(L);    /* loaded before nil (forget what the check loaded) */
	while (lua_next(L, -3)) { /* loaded before k v */
		lua_pop(L, 1); /* loaded before k */
		lua_pushvalue(L, -1); /* loaded before k k */
		if (lua_gettable(L, -3) == LUA_TNIL) { /* loaded before k before[k] */
			lua_pop(L, 1); /* loaded before k */
			lua_pushvalue(L, -1); /* loaded before k k */
			lua_pushnil(L); /* loaded before k k nil */
			lua_settable(L, -5); /* loaded before k */
		} else {
			lua_pop(L, 1); /* loaded before k */
		}
	}
	lua_pop(L, 2); /* ... */
	scripts_dir = dir;
}

/* Runs in protected mode: argv -> check the scripts dir and versions -> cli.main(argv) or `lua FILE`. */
static int run(lua_State *L)
{
	int argc = (int)lua_tointeger(L, 1);
	char **argv = lua_touserdata(L, 2);
	check_scripts_dir(L);
	check_versions(L);
	if (argc >= 3 && strcmp(argv[1], "lua") == 0) {
		lua_createtable(L, argc, 1); /* argc argv arg (as lua.c builds it: arg[0] = script) */
		for (int i = 0; i < argc; i++) {
			lua_pushstring(L, argv[i]); /* argc argv arg s */
			lua_seti(L, -2, i - 2); /* argc argv arg */
		}
		lua_setglobal(L, "arg"); /* argc argv */
		if (luaL_loadfile(L, argv[2]) != LUA_OK)
			return lua_error(L); /* argc argv err */
		luaL_checkstack(L, argc - 3, "too many arguments for the script");
		for (int i = 3; i < argc; i++)
			lua_pushstring(L, argv[i]); /* argc argv chunk args... */
		lua_call(L, argc - 3, 0); /* argc argv */
		lua_pushinteger(L, 0); /* argc argv 0 */
		return 1;
	}
	lua_getglobal(L, "require"); /* argc argv require */
	lua_pushstring(L, "framework.cli"); /* argc argv require name */
	lua_call(L, 1, 1); /* argc argv cli */
	lua_getfield(L, -1, "main"); /* argc argv cli main */
	lua_createtable(L, argc, 1); /* argc argv cli main args */
	for (int i = 0; i < argc; i++) { /* args[0]: the name moonadm was run by (framework/progname.lua) */
		lua_pushstring(L, argv[i]); /* argc argv cli main args s */
		lua_seti(L, -2, i); /* argc argv cli main args */
	}
	lua_call(L, 1, 1); /* argc argv cli status */
	return 1;
}

int main(int argc, char **argv)
{
	scripts_dir = getenv("MOONADM_SCRIPTS");
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--scripts") == 0 && i + 1 < argc)
			scripts_dir = argv[i + 1];
		else if (strncmp(argv[i], "--scripts=", 10) == 0)
			scripts_dir = argv[i] + 10;
		else if (strcmp(argv[i], "--insecure-scripts") == 0)
			insecure_scripts = 1;
	}
	if (scripts_dir && !*scripts_dir)
		scripts_dir = NULL;

	lua_State *L = ma_lua_newstate();
	if (!L) {
		fprintf(stderr, "moonadm: cannot create the Lua state (out of memory)\n");
		return 1;
	}
	luaL_openlibs(L);
	absolute_paths(L, "path");
	absolute_paths(L, "cpath");
	ma_guard_stdlib(L);
	preload_bindings(L);
	install_searcher(L);
	if (scripts_dir) {
		lua_pushstring(L, scripts_dir); /* dir */
		lua_setfield(L, LUA_REGISTRYINDEX, "moonadm.scripts_dir"); /* (empty) */
	}

	lua_pushcfunction(L, traceback); /* traceback */
	lua_pushcfunction(L, run); /* traceback run */
	lua_pushinteger(L, argc); /* traceback run argc */
	lua_pushlightuserdata(L, argv); /* traceback run argc argv */
	int rc;
	if (lua_pcall(L, 2, 1, 1) != LUA_OK) { /* traceback status | traceback err */
		fprintf(stderr, "moonadm: %s\n", lua_tostring(L, -1));
		rc = 1;
	} else {
		rc = lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : 0;
	}
	ma_err e = {0};
	if (ma_group_end(L, &e)) { /* a run's last pending writes (the runner ends its group itself) */
		fprintf(stderr, "moonadm: making this run's file writes durable failed: %s\n", e.msg);
		rc = 1;
	}
	/* every finalizer runs (the root lock's clean-up, keys wiped, handles closed); the memory is
	 * left to the kernel (bindings/lalloc.c) */
	ma_lua_exit(L, rc);
}
