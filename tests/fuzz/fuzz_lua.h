/* libFuzzer over a Lua target: the moonadm host (bindings/main.c, its main renamed) with every
 * binding and embedded script, and tests/fuzz/lua/<FUZZ_LUA>.lua, which returns a function of the
 * input. That function returns normally or raises a string error (a clean refusal); a Lua runtime
 * error inside the scripts ("attempt to index a nil value", "bad argument") is a finding: abort. */
#define main moonadm_main
#include "../../bindings/main.c"
#undef main

#ifndef FUZZ_LUA_DIR
#define FUZZ_LUA_DIR "tests/fuzz/lua"
#endif

static lua_State *FL;
static int target_ref = LUA_NOREF;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	FL = luaL_newstate();
	luaL_openlibs(FL);
	preload_bindings(FL);
	install_searcher(FL);
	if (luaL_dofile(FL, FUZZ_LUA_DIR "/" FUZZ_LUA ".lua") != LUA_OK) {
		fprintf(stderr, "fuzz: %s\n", lua_tostring(FL, -1));
		abort();
	}
	target_ref = luaL_ref(FL, LUA_REGISTRYINDEX);
	return 0;
}

/* A runtime error raised by Lua itself carries the position of the faulting line: "FILE.lua:N: attempt
 * to ...". A clean refusal is raised without a position (error(msg, 0)) and may quote the input,
 * which may itself contain "attempt to": only the text right after a position counts. */
static int is_runtime_error(const char *msg)
{
	static const char *const bugs[] = {"attempt to ", "bad argument", "stack overflow", "C stack overflow",
					   "invalid option", "table index is", NULL};
	const char *nl = strchr(msg, '\n');
	size_t first = nl ? (size_t)(nl - msg) : strlen(msg);
	for (const char *p = msg; (p = strstr(p, ".lua:")) && (size_t)(p - msg) < first; p++) {
		const char *q = p + 5;
		if (*q < '0' || *q > '9')
			continue;
		while (*q >= '0' && *q <= '9')
			q++;
		if (q[0] != ':' || q[1] != ' ')
			continue;
		for (int i = 0; bugs[i]; i++)
			if (strncmp(q + 2, bugs[i], strlen(bugs[i])) == 0)
				return 1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	lua_settop(FL, 0);
	lua_pushcfunction(FL, traceback);
	lua_rawgeti(FL, LUA_REGISTRYINDEX, target_ref);
	lua_pushlstring(FL, (const char *)data, size); /* traceback, target, input */
	if (lua_pcall(FL, 1, 0, 1) != LUA_OK) {
		const char *msg = lua_tostring(FL, -1);
		if (!msg || is_runtime_error(msg)) {
			fprintf(stderr, "fuzz: a Lua runtime error in the scripts:\n%s\n", msg ? msg : "(not a string)");
			abort();
		}
	}
	lua_settop(FL, 0);
	lua_gc(FL, LUA_GCSTEP, 0);
	return 0;
}
