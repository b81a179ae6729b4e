/* moonadm.proc: spawn (with log file, network namespace, private mounts), signal, wait, alive,
 * and run (spawn, wait, capture output). */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bindings.h"
#include "proc.h"

/* Strings from the spec table stay valid while the table is on the stack (argument 1). */
static const char **string_list(lua_State *L, int tbl, const char *field, int required)
{
	if (lua_getfield(L, tbl, field) == LUA_TNIL) { /* ... v */
		lua_pop(L, 1); /* ... */
		if (required)
			luaL_error(L, "proc.spawn: %s is required", field);
		return NULL;
	}
	luaL_checktype(L, -1, LUA_TTABLE); /* ... list */
	lua_Integer n = (lua_Integer)lua_rawlen(L, -1);
	if (required && n == 0)
		luaL_error(L, "proc.spawn: %s is empty", field);
	/* A userdata keeps the array alive and is freed by the GC even if we raise below. */
	const char **list = lua_newuserdatauv(L, sizeof(char *) * (size_t)(n + 1), 1); /* ... list array */
	lua_pushvalue(L, -2); /* ... list array list */
	lua_setiuservalue(L, -2, 1); /* ... list array (which keeps the list and its strings alive) */
	for (lua_Integer i = 1; i <= n; i++) {
		lua_rawgeti(L, -2, i); /* ... list array s */
		list[i - 1] = luaL_checkstring(L, -1);
		lua_pop(L, 1); /* ... list array */
	}
	list[n] = NULL;
	lua_rotate(L, -2, 1); /* ... array list */
	lua_pop(L, 1); /* ... array */
	return list;
}

static const char *opt_field(lua_State *L, int tbl, const char *field)
{
	lua_getfield(L, tbl, field); /* ... v */
	const char *s = lua_tostring(L, -1);
	lua_pop(L, 1); /* ... (strings in the table stay referenced by the table) */
	return s;
}

static int bool_field(lua_State *L, int tbl, const char *field)
{
	lua_getfield(L, tbl, field); /* ... v */
	int b = lua_toboolean(L, -1);
	lua_pop(L, 1); /* ... */
	return b;
}

static int do_spawn(lua_State *L, pid_t *pid, const char *log_override, ma_err *e)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	struct ma_spawn s = {0};
	s.argv = string_list(L, 1, "argv", 1);
	s.env = string_list(L, 1, "env", 0);
	s.cwd = opt_field(L, 1, "cwd");
	s.log = log_override ? log_override : opt_field(L, 1, "log");
	s.netns = opt_field(L, 1, "netns");
	s.new_session = bool_field(L, 1, "new_session");
	s.die_with_parent = bool_field(L, 1, "die_with_parent");
	if (lua_getfield(L, 1, "mounts") == LUA_TTABLE) { /* spec ... mounts */
		int mt = lua_gettop(L);
		int n = (int)lua_rawlen(L, mt);
		struct ma_mount *m = lua_newuserdatauv(L, sizeof *m * (size_t)(n ? n : 1), 0); /* spec ... mounts array */
		for (int i = 0; i < n; i++) {
			lua_rawgeti(L, mt, i + 1); /* spec ... mounts array mount */
			int it = lua_gettop(L);
			const char *type = opt_field(L, it, "type");
			m[i].type = type && strcmp(type, "tmpfs") == 0 ? MA_MOUNT_TMPFS : MA_MOUNT_BIND;
			m[i].src = opt_field(L, it, "src");
			m[i].dst = opt_field(L, it, "dst");
			m[i].readonly = bool_field(L, it, "ro");
			m[i].file = bool_field(L, it, "file");
			if (!m[i].dst || (m[i].type == MA_MOUNT_BIND && !m[i].src))
				return luaL_error(L, "proc.spawn: mount %d needs dst (and src for a bind)", i + 1);
			lua_pop(L, 1); /* spec ... mounts array */
		}
		s.mounts = m;
		s.nmounts = n;
	}
	return ma_proc_spawn(&s, pid, e);
}

/* proc.spawn(spec) -> pid | nil, err */
static int l_spawn(lua_State *L)
{
	pid_t pid;
	ma_err e = {0};
	if (do_spawn(L, &pid, NULL, &e))
		return ma_push_err(L, &e);
	lua_pushinteger(L, pid);
	return 1;
}

static int checksig(lua_State *L, int i)
{
	if (lua_type(L, i) == LUA_TNUMBER)
		return (int)lua_tointeger(L, i);
	static const struct {
		const char *name;
		int sig;
	} sigs[] = {{"TERM", SIGTERM}, {"KILL", SIGKILL}, {"INT", SIGINT}, {"HUP", SIGHUP}, {"STOP", SIGSTOP},
		    {"CONT", SIGCONT}, {"USR1", SIGUSR1}, {"0", 0}};
	const char *name = luaL_optstring(L, i, "TERM");
	for (size_t k = 0; k < sizeof sigs / sizeof *sigs; k++)
		if (strcmp(sigs[k].name, name) == 0)
			return sigs[k].sig;
	return luaL_error(L, "unknown signal %s", name);
}

static int l_signal(lua_State *L)
{
	ma_err e = {0};
	if (ma_proc_signal((pid_t)luaL_checkinteger(L, 1), checksig(L, 2), &e))
		return ma_push_err(L, &e);
	lua_pushboolean(L, 1);
	return 1;
}

/* proc.wait(pid [, nohang]) -> true, code (ended) | false (running) | nil, err */
static int l_wait(lua_State *L)
{
	int code = 0;
	ma_err e = {0};
	int r = ma_proc_wait((pid_t)luaL_checkinteger(L, 1), lua_toboolean(L, 2), &code, NULL, &e);
	if (r < 0)
		return ma_push_err(L, &e);
	lua_pushboolean(L, r);
	if (!r)
		return 1;
	lua_pushinteger(L, code);
	return 2;
}

/* proc.wait_any([nohang]) -> pid, code | false: reaps any one exited child (a PID 1's duty). */
static int l_wait_any(lua_State *L)
{
	pid_t pid = 0;
	int code = 0;
	ma_err e = {0};
	int r = ma_proc_wait_any(lua_toboolean(L, 1), &pid, &code, &e);
	if (r < 0)
		return ma_push_err(L, &e);
	if (!r) {
		lua_pushboolean(L, 0);
		return 1;
	}
	lua_pushinteger(L, pid);
	lua_pushinteger(L, code);
	return 2;
}

static int l_alive(lua_State *L)
{
	lua_pushboolean(L, ma_proc_alive((pid_t)luaL_checkinteger(L, 1)));
	return 1;
}

/* proc.run(spec) -> code, output | nil, err: spawn, wait, return everything it printed. With
 * spec.cpu_time, a third result: the CPU seconds it used (user + system, with the descendants it
 * waited for), as wait4 reports them. */
static int l_run(lua_State *L)
{
	char tmpl[] = "/tmp/moonadm-run-XXXXXX";
	ma_err e = {0};
	int fd = mkstemp(tmpl);
	if (fd < 0) {
		ma_fail_errno(&e, errno, "proc.run: cannot create a temp file in /tmp");
		return ma_push_err(L, &e);
	}
	close(fd);
	pid_t pid;
	if (do_spawn(L, &pid, tmpl, &e)) {
		unlink(tmpl);
		return ma_push_err(L, &e);
	}
	int code = 0;
	double cpu_s = 0;
	if (ma_proc_wait(pid, 0, &code, &cpu_s, &e) < 0) {
		unlink(tmpl);
		return ma_push_err(L, &e);
	}
	FILE *f = fopen(tmpl, "rb");
	luaL_Buffer b;
	luaL_buffinit(L, &b); /* spec ... (buffer) */
	if (f) {
		char buf[4096];
		size_t n;
		while ((n = fread(buf, 1, sizeof buf, f)) > 0)
			luaL_addlstring(&b, buf, n);
		fclose(f);
	}
	unlink(tmpl);
	luaL_pushresult(&b); /* spec ... output */
	lua_pushinteger(L, code); /* spec ... output code */
	lua_rotate(L, -2, 1); /* spec ... code output */
	if (!bool_field(L, 1, "cpu_time"))
		return 2;
	lua_pushnumber(L, cpu_s);
	return 3;
}

int luaopen_moonadm_proc(lua_State *L)
{
	static const luaL_Reg fns[] = {{"spawn", l_spawn}, {"signal", l_signal}, {"wait", l_wait}, {"wait_any", l_wait_any},
				       {"alive", l_alive}, {"run", l_run},       {NULL, NULL}};
	luaL_newlib(L, fns); /* proc */
	ma_guard_table(L, -1, NULL, NULL); /* a child process sees this run's pending writes */
	return 1;
}
