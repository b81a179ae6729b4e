/* moonadm.core: versions, the embedded scripts, and small host facts (clock, hostname, uid). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>

#include "bindings.h"
#include "redact.h"
#include "scripts_embed.h"
#include "version.h"

/* -> list of {name=, path=, source=} for every embedded script */
static int l_scripts(lua_State *L)
{
	lua_newtable(L); /* list */
	int i = 1;
	for (const struct ma_script *s = ma_scripts; s->name; s++, i++) {
		lua_createtable(L, 0, 3); /* list script */
		lua_pushstring(L, s->name);
		lua_setfield(L, -2, "name");
		lua_pushstring(L, s->path);
		lua_setfield(L, -2, "path");
		lua_pushlstring(L, (const char *)s->data, s->len);
		lua_setfield(L, -2, "source");
		lua_seti(L, -2, i); /* list */
	}
	return 1;
}

static int l_scripts_dir(lua_State *L)
{
	lua_getfield(L, LUA_REGISTRYINDEX, "moonadm.scripts_dir"); /* dir */
	return 1;
}

/* Monotonic clock in seconds (float): durations and timeouts never follow wall-clock jumps. */
static int l_monotonic(lua_State *L)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec / 1e9);
	return 1;
}

static int l_now(lua_State *L)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec / 1e9);
	return 1;
}

static int l_sleep(lua_State *L)
{
	lua_Number s = luaL_checknumber(L, 1);
	struct timespec ts = {(time_t)s, (long)((s - (lua_Number)(time_t)s) * 1e9)};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
	return 0;
}

static int l_hostname(lua_State *L)
{
	char buf[256];
	if (gethostname(buf, sizeof buf) != 0) {
		ma_err e = {0};
		ma_fail_errno(&e, errno, "gethostname");
		return ma_push_err(L, &e);
	}
	buf[sizeof buf - 1] = '\0';
	lua_pushstring(L, buf);
	return 1;
}

static int l_getuid(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)geteuid());
	return 1;
}

static int l_getpid(lua_State *L)
{
	lua_pushinteger(L, (lua_Integer)getpid());
	return 1;
}

static int l_isatty(lua_State *L)
{
	lua_pushboolean(L, isatty((int)luaL_checkinteger(L, 1)));
	return 1;
}

/* The CPUs this process may run on, as Go's runtime.NumCPU and nproc count them (kubeadm's NumCPU). */
static int l_ncpu(lua_State *L)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) {
		lua_pushinteger(L, CPU_COUNT(&set));
		return 1;
	}
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	lua_pushinteger(L, n > 0 ? n : 1);
	return 1;
}

/* The engine's one redaction step (tokens, bearer credentials, PEM private keys). */
static int l_redact(lua_State *L)
{
	size_t len;
	const char *s = luaL_checklstring(L, 1, &len);
	char *r = ma_redact(s, len);
	if (!r)
		return luaL_error(L, "redact: out of memory");
	lua_pushstring(L, r);
	free(r);
	return 1;
}

/* The path of this binary: the lab starts more of itself (kubelet stand-ins, exec). */
static int l_exe(lua_State *L)
{
	char buf[4096];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
	if (n < 0)
		return luaL_error(L, "readlink /proc/self/exe: %s", strerror(errno));
	/* a rebuilt binary (make during a long lab run) shows as "PATH (deleted)": the new file is there */
	static const char deleted[] = " (deleted)";
	size_t dl = sizeof deleted - 1;
	if ((size_t)n > dl && memcmp(buf + n - dl, deleted, dl) == 0)
		n -= (ssize_t)dl;
	lua_pushlstring(L, buf, (size_t)n);
	return 1;
}

extern char **environ;

/* -> list of "NAME=value" strings of this process's environment */
static int l_environ(lua_State *L)
{
	lua_newtable(L); /* list */
	for (int i = 0; environ && environ[i]; i++) {
		lua_pushstring(L, environ[i]); /* list entry */
		lua_seti(L, -2, i + 1); /* list */
	}
	return 1;
}

int luaopen_moonadm_core(lua_State *L)
{
	static const luaL_Reg fns[] = {
	    {"scripts", l_scripts}, {"scripts_dir", l_scripts_dir}, {"monotonic", l_monotonic},
	    {"now", l_now},         {"sleep", l_sleep},             {"hostname", l_hostname},
	    {"getuid", l_getuid},   {"getpid", l_getpid},           {"isatty", l_isatty},
	    {"ncpu", l_ncpu},       {"redact", l_redact},
	    {"exe", l_exe},         {"environ", l_environ},
	    {NULL, NULL}};
	luaL_newlib(L, fns); /* core */
	static const char *const waits[] = {"sleep", NULL}; /* a wait is for someone else to see our files */
	ma_guard_table(L, -1, waits, NULL);
#ifdef MA_PLAIN
	lua_pushstring(L, MA_ENGINE_VERSION "+plain"); /* `make PLAIN=1`: `moonadm version` says so */
#else
	lua_pushstring(L, MA_ENGINE_VERSION);
#endif
	lua_setfield(L, -2, "engine_version");
	lua_pushstring(L, LUA_RELEASE);
	lua_setfield(L, -2, "lua_version");
	/* the architecture this binary was built for, as Go names it (kubeadm's `version` platform) */
#if defined(__x86_64__)
	lua_pushstring(L, "amd64");
#elif defined(__aarch64__)
	lua_pushstring(L, "arm64");
#elif defined(__arm__)
	lua_pushstring(L, "arm");
#elif defined(__powerpc64__) && defined(__LITTLE_ENDIAN__)
	lua_pushstring(L, "ppc64le");
#elif defined(__s390x__)
	lua_pushstring(L, "s390x");
#elif defined(__riscv) && __riscv_xlen == 64
	lua_pushstring(L, "riscv64");
#else
	lua_pushstring(L, "unknown");
#endif
	lua_setfield(L, -2, "goarch");
	return 1;
}
