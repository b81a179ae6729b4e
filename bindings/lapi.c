/* moonadm.api: the HTTP transport of the Kubernetes API client (engine/http.h) as a handle.
 *   c, err = api.new{server=, ca_pem=|ca_file=, cert_pem=, key_pem=, token=, insecure=,
 *                    connect_timeout=, timeout=, user_agent=, max_body=}
 *   resp, err, kind = c:request{method=, path=, query=, headers=, body=, timeout=, on_data=, max_body=}
 *   resp = {status=, headers={lowercase name=value}, body=, stopped=, seconds=, reused=}
 * The Kubernetes semantics (paths, status errors, retries, watch) are Lua: scripts/kube/.
 * max_body: the cap on a buffered response body in bytes (handle default 64 MiB, engine/http.h);
 * a body over it fails with kind "too_large".
 * Misuse raises; a failure returns nil, message, kind ("connect", "timeout", "tls", "options",
 * "too_large", "other": bindings/bindings.h's convention). Secrets given in opts are copied into the
 * engine handle and wiped there. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "bindings.h"
#include "http.h"

#define CLIENT_MT "moonadm.api.client"
#define RESP_MT "moonadm.api.resp" /* an ma_http_resp owned by the GC while it is pushed */

typedef struct {
	ma_http *h;
	int depth; /* requests in progress (a sink may issue more): close is refused meanwhile */
} LClient;

/* nil, message, kind: engine/http.h's class of the failure in e->code, by name */
static int push_fail(lua_State *L, ma_err *e)
{
	e->kind = ma_http_errkind_name(e->code);
	return ma_push_err(L, e); /* nil msg kind */
}

static LClient *checkclient(lua_State *L, int i)
{
	LClient *u = luaL_checkudata(L, i, CLIENT_MT);
	if (!u->h)
		luaL_error(L, "attempt to use a closed API client");
	return u;
}

/* opts.name as an optional string (raises when another type) */
static const char *optstr(lua_State *L, int t, const char *name, size_t *len)
{
	lua_getfield(L, t, name); /* ... v */
	const char *s = NULL;
	if (!lua_isnil(L, -1)) {
		if (lua_type(L, -1) != LUA_TSTRING)
			luaL_error(L, "api.new: option '%s' must be a string, got %s", name, luaL_typename(L, -1));
		s = lua_tolstring(L, -1, len);
	}
	lua_pop(L, 1); /* the string stays alive: it is referenced by the opts table */
	return s;
}

static long optms(lua_State *L, int t, const char *name)
{
	lua_getfield(L, t, name); /* ... v */
	long ms = 0;
	if (!lua_isnil(L, -1)) {
		if (!lua_isnumber(L, -1))
			luaL_error(L, "option '%s' must be a number of seconds, got %s", name, luaL_typename(L, -1));
		ms = (long)(lua_tonumber(L, -1) * 1000.0);
	}
	lua_pop(L, 1); /* ... */
	return ms;
}

/* opts.name as an optional positive byte count (0 when absent) */
static size_t optbytes(lua_State *L, int t, const char *name)
{
	lua_getfield(L, t, name); /* ... v */
	size_t n = 0;
	if (!lua_isnil(L, -1)) {
		int isint = 0;
		lua_Integer v = lua_tointegerx(L, -1, &isint);
		if (!isint || v <= 0)
			luaL_error(L, "option '%s' must be a positive integer number of bytes, got %s", name,
				   isint ? "a non-positive number" : luaL_typename(L, -1));
		n = (size_t)v;
	}
	lua_pop(L, 1); /* ... */
	return n;
}

static int l_new(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	ma_http_opts o = {0};
	o.server = optstr(L, 1, "server", NULL);
	if (!o.server)
		return luaL_error(L, "api.new: option 'server' is required");
	o.ca_pem = optstr(L, 1, "ca_pem", &o.ca_pem_len);
	o.ca_file = optstr(L, 1, "ca_file", NULL);
	o.cert_pem = optstr(L, 1, "cert_pem", &o.cert_pem_len);
	o.key_pem = optstr(L, 1, "key_pem", &o.key_pem_len);
	o.token = optstr(L, 1, "token", NULL);
	o.user_agent = optstr(L, 1, "user_agent", NULL);
	lua_getfield(L, 1, "insecure"); /* opts insecure */
	o.insecure = lua_toboolean(L, -1);
	lua_pop(L, 1); /* opts */
	o.connect_timeout_ms = optms(L, 1, "connect_timeout");
	o.timeout_ms = optms(L, 1, "timeout");
	o.max_body = optbytes(L, 1, "max_body");
	LClient *u = lua_newuserdatauv(L, sizeof *u, 0); /* opts client (empty) */
	u->h = NULL;
	u->depth = 0;
	luaL_setmetatable(L, CLIENT_MT); /* opts client (closed until the engine handle is made) */
	ma_err e = {0};
	if (!(u->h = ma_http_new(&o, &e)))
		return push_fail(L, &e); /* opts client nil msg kind */
	return 1;
}

static int l_close(lua_State *L)
{
	LClient *u = luaL_checkudata(L, 1, CLIENT_MT);
	if (u->depth > 0)
		return luaL_error(L, "cannot close an API client while one of its requests runs");
	ma_http_free(u->h);
	u->h = NULL;
	return 0;
}

static int l_gc(lua_State *L)
{
	LClient *u = luaL_checkudata(L, 1, CLIENT_MT);
	if (u->depth == 0) {
		ma_http_free(u->h);
		u->h = NULL;
	}
	return 0;
}

static int l_tostring(lua_State *L)
{
	LClient *u = luaL_checkudata(L, 1, CLIENT_MT);
	if (u->h)
		lua_pushfstring(L, "moonadm.api.client (%s)", ma_http_server(u->h)); /* client s */
	else
		lua_pushliteral(L, "moonadm.api.client (closed)"); /* client s */
	return 1;
}

static int l_server(lua_State *L)
{
	lua_pushstring(L, ma_http_server(checkclient(L, 1)->h)); /* client server */
	return 1;
}

/* ---- query strings ---- */

static void push_escaped(lua_State *L, const char *s, size_t n)
{
	char *x = ma_http_escape(s, n);
	if (!x)
		luaL_error(L, "out of memory");
	lua_pushstring(L, x); /* ... s */
	free(x);
}

static int cmpkeys(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Pushes the encoded query for the table at t: keys sorted, list values repeated, booleans as
 * "true"/"false", integral numbers as integers. */
static void push_query(lua_State *L, int t)
{
	t = lua_absindex(L, t);
	int n = 0;
	lua_pushnil(L); /* ... nil */
	while (lua_next(L, t)) { /* ... k v */
		if (lua_type(L, -2) != LUA_TSTRING)
			luaL_error(L, "query keys must be strings");
		n++;
		lua_pop(L, 1); /* ... k */
	}
	const char **keys = lua_newuserdatauv(L, sizeof *keys * (size_t)(n + 1), 0); /* ... keys */
	int i = 0;
	lua_pushnil(L); /* ... keys nil */
	while (lua_next(L, t)) { /* ... keys k v */
		keys[i++] = lua_tostring(L, -2); /* (anchored by the table) */
		lua_pop(L, 1); /* ... keys k */
	}
	qsort(keys, (size_t)n, sizeof *keys, cmpkeys);
	lua_pushliteral(L, ""); /* ... keys acc */
	int acc = lua_gettop(L);
	for (i = 0; i < n; i++) {
		lua_getfield(L, t, keys[i]); /* ... keys acc v */
		int islist = lua_type(L, -1) == LUA_TTABLE;
		lua_Integer m = islist ? (lua_Integer)lua_rawlen(L, -1) : 1;
		for (lua_Integer j = 1; j <= m; j++) {
			if (islist)
				lua_rawgeti(L, -1, j); /* ... v vj */
			else
				lua_pushvalue(L, -1); /* ... v v */
			int ty = lua_type(L, -1);
			if (ty == LUA_TBOOLEAN) {
				const char *bs = lua_toboolean(L, -1) ? "true" : "false";
				lua_pop(L, 1); /* ... v */
				lua_pushstring(L, bs); /* ... v "true"|"false" */
			} else if (ty == LUA_TNUMBER && !lua_isinteger(L, -1)) {
				lua_Number x = lua_tonumber(L, -1);
				if (x == (lua_Number)(lua_Integer)x) {
					lua_pop(L, 1); /* ... v */
					lua_pushinteger(L, (lua_Integer)x); /* ... v i */
				}
			} else if (ty != LUA_TSTRING && ty != LUA_TNUMBER) {
				luaL_error(L, "query value for '%s' must be a string, number, boolean or list", keys[i]);
			}
			size_t vl;
			const char *vs = lua_tolstring(L, -1, &vl); /* ... v s */
			lua_pushvalue(L, acc); /* ... v s acc */
			if (lua_rawlen(L, acc) > 0)
				lua_pushliteral(L, "&"); /* ... v s acc "&" */
			else
				lua_pushliteral(L, ""); /* ... v s acc "" */
			push_escaped(L, keys[i], strlen(keys[i])); /* ... v s acc sep key */
			lua_pushliteral(L, "="); /* ... v s acc sep key "=" */
			push_escaped(L, vs, vl); /* ... v s acc sep key "=" value */
			lua_concat(L, 5);       /* ... v s acc' */
			lua_replace(L, acc);    /* ... v s */
			lua_pop(L, 1);          /* ... v */
		}
		lua_pop(L, 1); /* ... keys acc */
	}
	lua_remove(L, -2); /* ... query */
}

static int l_query(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	push_query(L, 1); /* t query */
	return 1;
}

static int l_escape(lua_State *L)
{
	size_t n;
	const char *s = luaL_checklstring(L, 1, &n);
	push_escaped(L, s, n); /* s escaped */
	return 1;
}

static int l_url(lua_State *L)
{
	const char *server = luaL_checkstring(L, 1), *path = luaL_checkstring(L, 2);
	const char *q = NULL;
	if (lua_type(L, 3) == LUA_TTABLE) {
		push_query(L, 3); /* server path t query */
		q = lua_tostring(L, -1);
	} else {
		q = luaL_optstring(L, 3, NULL);
	}
	ma_err e = {0};
	char *u = ma_http_url(server, path, q, &e);
	if (!u)
		return push_fail(L, &e);
	lua_pushstring(L, u); /* server path [q] url */
	free(u);
	return 1;
}

/* ---- requests ---- */

struct sink {
	lua_State *L;
	int fn;     /* stack index of the on_data function */
	int failed; /* the function raised: its error is on the stack top */
};

/* Calls on_data(chunk) in protected mode (a long-jump must not cross curl); false stops. */
static int sink_call(const char *buf, size_t len, void *ud)
{
	struct sink *s = ud;
	lua_State *L = s->L;
	lua_pushvalue(L, s->fn);      /* ... fn */
	lua_pushlstring(L, buf, len); /* ... fn chunk */
	if (lua_pcall(L, 1, 1, 0) != LUA_OK) { /* ... err */
		s->failed = 1;
		return 1;
	}
	int stop = lua_type(L, -1) == LUA_TBOOLEAN && !lua_toboolean(L, -1);
	lua_pop(L, 1); /* ... */
	return stop;
}

static int resp_gc(lua_State *L)
{
	ma_http_resp_free(luaL_checkudata(L, 1, RESP_MT));
	return 0;
}

/* Pushes a table of the response headers: lowercase names; repeated names joined with ", "
 * (engine/http.c's iterator reads the lines; at most MA_HTTP_MAX_HEADER_LINES of them). */
static void push_headers(lua_State *L, const ma_http_resp *r)
{
	lua_newtable(L); /* ... headers */
	size_t pos = 0, nl, vl;
	const char *name, *v;
	while (ma_http_header_next(r, &pos, &name, &nl, &v, &vl)) {
		luaL_Buffer b;
		luaL_buffinit(L, &b); /* ... headers (buffer) */
		for (size_t i = 0; i < nl; i++)
			luaL_addchar(&b, (char)tolower((unsigned char)name[i]));
		luaL_pushresult(&b); /* ... headers name */
		lua_pushvalue(L, -1); /* ... headers name name */
		lua_rawget(L, -3); /* ... headers name old */
		if (lua_isstring(L, -1)) {
			lua_pushliteral(L, ", "); /* ... headers name old ", " */
			lua_pushlstring(L, v, vl); /* ... headers name old ", " v */
			lua_concat(L, 3); /* ... headers name old..", "..v */
		} else {
			lua_pop(L, 1); /* ... headers name */
			lua_pushlstring(L, v, vl); /* ... headers name v */
		}
		lua_rawset(L, -3); /* ... headers */
	}
}

/* Reads opts (stack index 2) into r: pushes 3: method, 4: path, 5: query (a table encoded), 6: body,
 * which keep r's strings alive. */
static void read_request(lua_State *L, ma_http_req *r)
{
	lua_getfield(L, 2, "method"); /* opts method */
	r->method = luaL_optstring(L, 3, "GET");
	lua_getfield(L, 2, "path"); /* opts method path */
	if (lua_type(L, 4) != LUA_TSTRING)
		luaL_error(L, "request: 'path' must be a string");
	r->path = lua_tostring(L, 4);
	lua_getfield(L, 2, "query"); /* opts method path query */
	if (lua_type(L, 5) == LUA_TTABLE) {
		push_query(L, 5);   /* ... query encoded */
		lua_replace(L, 5); /* ... encoded */
	} else if (!lua_isnil(L, 5) && lua_type(L, 5) != LUA_TSTRING) {
		luaL_error(L, "request: 'query' must be a table or a string");
	}
	r->query = lua_tostring(L, 5);
	lua_getfield(L, 2, "body"); /* opts method path query body */
	if (!lua_isnil(L, 6)) {
		if (lua_type(L, 6) != LUA_TSTRING)
			luaL_error(L, "request: 'body' must be a string");
		r->body = lua_tolstring(L, 6, &r->body_len);
	}
}

/* The header at the top of a lua_next walk (... k v) as "Name: value", pushed: ... k v line */
static const char *push_header_line(lua_State *L)
{
	if (lua_type(L, -2) == LUA_TSTRING) {
		if (lua_type(L, -1) != LUA_TSTRING)
			luaL_error(L, "request: header '%s' must be a string", lua_tostring(L, -2));
		lua_pushfstring(L, "%s: %s", lua_tostring(L, -2), lua_tostring(L, -1));
	} else if (lua_type(L, -1) == LUA_TSTRING) {
		lua_pushvalue(L, -1); /* ... k v v */
	} else {
		luaL_error(L, "request: headers must be {name=value} or a list of \"Name: value\"");
	}
	const char *line = lua_tostring(L, -1);
	if (strpbrk(line, "\r\n"))
		luaL_error(L, "request: a header contains a line break");
	return line;
}

/* opts.headers into r->headers: pushes 7: headers, 8: a GC-owned array of "Name: value" strings,
 * 9: the table that anchors those strings. */
static void read_headers(lua_State *L, ma_http_req *r)
{
	lua_getfield(L, 2, "headers"); /* ... headers */
	if (!lua_isnil(L, 7) && lua_type(L, 7) != LUA_TTABLE)
		luaL_error(L, "request: 'headers' must be a table");
	int nh = 0;
	if (lua_istable(L, 7)) {
		lua_pushnil(L); /* ... headers nil */
		while (lua_next(L, 7)) { /* ... headers k v */
			nh++;
			lua_pop(L, 1);   /* ... headers k */
		}
	}
	const char **hv = lua_newuserdatauv(L, sizeof *hv * (size_t)(nh + 1), 0); /* ... headers array */
	lua_newtable(L);                                                           /* ... headers array lines */
	int i = 0;
	if (lua_istable(L, 7)) {
		lua_pushnil(L); /* ... lines nil */
		while (lua_next(L, 7)) {           /* ... lines k v */
			hv[i] = push_header_line(L); /* ... lines k v line */
			lua_rawseti(L, 9, ++i);     /* ... lines k v */
			lua_pop(L, 1);              /* ... lines k */
		}
	}
	hv[i] = NULL;
	r->headers = hv;
}

/* Replaces the response box on the top with the response table: ... resp -> ... t */
static void push_response(lua_State *L, ma_http_resp *resp)
{
	lua_createtable(L, 0, 6); /* ... resp t */
	lua_pushinteger(L, resp->status);
	lua_setfield(L, -2, "status");
	lua_pushlstring(L, resp->body, resp->body_len);
	lua_setfield(L, -2, "body");
	push_headers(L, resp); /* ... resp t headers */
	lua_setfield(L, -2, "headers");
	lua_pushboolean(L, resp->stopped);
	lua_setfield(L, -2, "stopped");
	lua_pushnumber(L, resp->seconds);
	lua_setfield(L, -2, "seconds");
	lua_pushboolean(L, resp->reused);
	lua_setfield(L, -2, "reused");
	ma_http_resp_free(resp);
	lua_remove(L, -2); /* ... t */
}

static int l_request(lua_State *L)
{
	LClient *u = checkclient(L, 1);
	luaL_checktype(L, 2, LUA_TTABLE);
	lua_settop(L, 2); /* client opts */
	ma_http_req r = {0};
	read_request(L, &r); /* client opts method path query body */
	read_headers(L, &r); /* ... headers array lines */
	r.timeout_ms = optms(L, 2, "timeout");
	r.max_body = optbytes(L, 2, "max_body");
	lua_getfield(L, 2, "on_data"); /* 10: on_data */
	struct sink s = {L, 10, 0};
	if (!lua_isnil(L, 10)) {
		luaL_checktype(L, 10, LUA_TFUNCTION);
		r.sink = sink_call;
		r.sink_ud = &s;
	}
	ma_http_resp *resp = lua_newuserdatauv(L, sizeof *resp, 0); /* 11: resp box */
	memset(resp, 0, sizeof *resp);
	luaL_setmetatable(L, RESP_MT); /* ... resp (empty) */
	ma_err e = {0};
	u->depth++;
	int rc = ma_http_do(u->h, &r, resp, &e);
	u->depth--;
	if (s.failed) { /* ... resp err */
		ma_http_resp_free(resp);
		return lua_error(L); /* ... err */
	}
	if (rc < 0) {
		ma_http_resp_free(resp);
		return push_fail(L, &e); /* ... resp nil msg kind */
	}
	push_response(L, resp); /* ... t */
	return 1;
}

int luaopen_moonadm_api(lua_State *L)
{
	static const luaL_Reg meta[] = {{"__gc", l_gc}, {"__close", l_close}, {"__tostring", l_tostring}, {NULL, NULL}};
	static const luaL_Reg methods[] = {{"request", l_request}, {"server", l_server}, {"close", l_close}, {NULL, NULL}};
	static const luaL_Reg fns[] = {{"new", l_new},           {"escape", l_escape},       {"query", l_query},
				       {"url", l_url},           {NULL, NULL}};
	luaL_newmetatable(L, CLIENT_MT); /* mt */
	luaL_setfuncs(L, meta, 0); /* mt */
	luaL_newlib(L, methods); /* mt methods */
	ma_guard_table(L, -1, NULL, NULL); /* a server may read what this run wrote (kubelet manifests) */
	lua_setfield(L, -2, "__index"); /* mt */
	lua_pop(L, 1); /* ... */
	luaL_newmetatable(L, RESP_MT); /* mt */
	lua_pushcfunction(L, resp_gc); /* mt gc */
	lua_setfield(L, -2, "__gc"); /* mt */
	lua_pop(L, 1); /* ... */
	luaL_newlib(L, fns); /* api */
	ma_guard_table(L, -1, NULL, NULL);
	return 1;
}
