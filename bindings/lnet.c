/* moonadm.net: host network facts (see engine/net.h).
 *   net.port_free(ip, port) -> true | false (in use) | nil, message
 *   net.listen(ip, port)    -> listener (userdata: :port(), :close()) | nil, message
 *   net.interfaces()        -> {{name, ip, family = 4|6, up, loopback}, ...} | nil, message
 *   net.default_ip()        -> ip | nil, message */
#include <unistd.h>

#include "bindings.h"
#include "net.h"

#define LISTENER_MT "moonadm.net.listener"

typedef struct {
	int fd, port;
} listener;

static int l_port_free(lua_State *L)
{
	ma_err e = {0};
	int r = ma_net_port_free(luaL_checkstring(L, 1), (int)luaL_checkinteger(L, 2), &e);
	if (r < 0)
		return ma_push_err(L, &e);
	lua_pushboolean(L, r);
	return 1;
}

static int l_listen(lua_State *L)
{
	ma_err e = {0};
	const char *ip = luaL_checkstring(L, 1);
	int port = (int)luaL_optinteger(L, 2, 0);
	listener *l = lua_newuserdatauv(L, sizeof *l, 0); /* ... listener */
	l->fd = -1;
	luaL_setmetatable(L, LISTENER_MT); /* ... listener (closed until it listens) */
	l->fd = ma_net_listen(ip, port, &l->port, &e);
	if (l->fd < 0)
		return ma_push_err(L, &e); /* ... listener nil msg code */
	return 1;
}

static int l_listener_port(lua_State *L)
{
	listener *l = luaL_checkudata(L, 1, LISTENER_MT);
	if (l->fd < 0)
		return luaL_error(L, "listener is closed");
	lua_pushinteger(L, l->port);
	return 1;
}

static int l_listener_close(lua_State *L)
{
	listener *l = luaL_checkudata(L, 1, LISTENER_MT);
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	return 0;
}

static int l_interfaces(lua_State *L)
{
	ma_err e = {0};
	ma_net_addr addrs[128];
	int n = ma_net_interfaces(addrs, 128, &e);
	if (n < 0)
		return ma_push_err(L, &e);
	lua_createtable(L, n, 0); /* list */
	for (int i = 0; i < n; i++) {
		lua_createtable(L, 0, 5); /* list addr */
		lua_pushstring(L, addrs[i].ifname);
		lua_setfield(L, -2, "name");
		lua_pushstring(L, addrs[i].ip);
		lua_setfield(L, -2, "ip");
		lua_pushinteger(L, addrs[i].family);
		lua_setfield(L, -2, "family");
		lua_pushboolean(L, addrs[i].up);
		lua_setfield(L, -2, "up");
		lua_pushboolean(L, addrs[i].loopback);
		lua_setfield(L, -2, "loopback");
		lua_rawseti(L, -2, i + 1); /* list */
	}
	return 1;
}

static int l_default_ip(lua_State *L)
{
	ma_err e = {0};
	char ip[64];
	if (ma_net_default_ip(ip, sizeof ip, &e))
		return ma_push_err(L, &e);
	lua_pushstring(L, ip);
	return 1;
}

int luaopen_moonadm_net(lua_State *L)
{
	static const luaL_Reg lm[] = {{"port", l_listener_port}, {"close", l_listener_close},
				      {"__gc", l_listener_close}, {"__close", l_listener_close}, {NULL, NULL}};
	luaL_newmetatable(L, LISTENER_MT); /* mt */
	luaL_setfuncs(L, lm, 0); /* mt */
	lua_pushvalue(L, -1); /* mt mt */
	lua_setfield(L, -2, "__index"); /* mt (mt.__index = mt) */
	lua_pop(L, 1); /* (empty) */
	static const luaL_Reg fns[] = {{"port_free", l_port_free}, {"listen", l_listen},
				       {"interfaces", l_interfaces}, {"default_ip", l_default_ip}, {NULL, NULL}};
	luaL_newlib(L, fns); /* net */
	ma_guard_table(L, -1, NULL, NULL);
	return 1;
}
