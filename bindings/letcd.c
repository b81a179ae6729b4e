/* moonadm.etcd: etcd member operations over the v3 JSON gateway (engine/etcd.h) as a handle.
 *   c, err = etcd.new{endpoints={"https://IP:2379", ...}, ca_pem=|ca_file=, cert_pem=, key_pem=,
 *                     dial_timeout=2, timeout=5, max_body=4194304}
 *   r, err, kind = c:member_list()                        r = {members={m...}, endpoint=, cluster_id=, member_id=}
 *   r, err, kind = c:member_add(peer_urls, {learner=true}) (also r.member: the new one)
 *   r, err, kind = c:member_promote(id) / c:member_remove(id)
 *   st, err, kind = c:status(i | url)    {endpoint=, version=, member_id=, leader=, raft_index=, raft_term=,
 *                                        raft_applied_index=, revision=, db_size=, is_learner=, errors={}}
 *   h, err, kind = c:health(i | url)     {endpoint=, healthy=, reason=, status=}
 *   c:endpoints(); c:add_endpoint(url); c:close()       (also __close / __gc)
 *   etcd.id_hex(id) -> "8e9e05c52164694d"; etcd.id_from_hex(hex) -> decimal id
 *   snap, err, kind = c:snapshot_save(i | url, path, {timeout=600, mode=0600})
 *       a consistent snapshot of one member streamed into path (a node path, under fs.set_root's
 *       root), checked after it is on disk, then renamed into place; an existing path is never
 *       replaced (kind "exists"). snap = {endpoint=, version=, storage_version=, revision=,
 *       revision_exact=, member_id=, cluster_id=, db_size=, size=, sha256= (the file's, as sha256sum),
 *       checksum= (etcd's SHA-256 of the database, hex), page_size=, txid=}
 *   f, err, kind = etcd.snapshot_check(path)  {size=, sha256=, has_checksum=, checksum_ok=, checksum=,
 *       bbolt_ok=, bbolt_error=, page_size=, txid=, pgid=}: what the file's own checks say (kind "io"
 *       only when it cannot be read)
 * A member m = {id=, id_hex=, name=, peer_urls={}, client_urls={}, is_learner=}. IDs are uint64 as
 * decimal strings (as the gateway writes them); an id argument is such a string or a non-negative
 * integer. kind: "unreachable", "tls", "protocol", "options" or etcd's gRPC code in snake case
 * ("failed_precondition", "not_found", ...). Misuse raises; operational failures return nil, err, kind.
 * An answer of the wrong shape (no "members", no header, a member without ID or peer URL, a body
 * over max_body bytes) is kind "protocol", never an empty result (engine/etcd.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bindings.h"
#include "encoding.h"
#include "etcd.h"
#include "fs.h"

#define CLIENT_MT "moonadm.etcd.client"

typedef struct {
	ma_etcd *c;
} LEtcd;

static LEtcd *checkclient(lua_State *L, int i)
{
	LEtcd *u = luaL_checkudata(L, i, CLIENT_MT);
	if (!u->c)
		luaL_error(L, "attempt to use a closed etcd client");
	return u;
}

/* nil, message, kind: the name of e->code (engine/etcd.h), bindings/bindings.h's convention */
static int push_fail(lua_State *L, ma_err *e)
{
	if (!e->msg[0])
		ma_fail(e, "etcd: unknown error");
	e->kind = ma_etcd_errkind_name(e->code);
	return ma_push_err(L, e); /* nil msg kind */
}

static void push_id(lua_State *L, uint64_t id)
{
	char b[21];
	ma_etcd_id_dec(id, b);
	lua_pushstring(L, b); /* ... id */
}

static uint64_t check_id(lua_State *L, int i)
{
	if (lua_isinteger(L, i)) {
		lua_Integer v = lua_tointeger(L, i);
		if (v < 0)
			luaL_argerror(L, i, "a member ID cannot be negative (give uint64 IDs as decimal strings)");
		return (uint64_t)v;
	}
	if (lua_type(L, i) != LUA_TSTRING)
		luaL_typeerror(L, i, "member ID (decimal string)");
	uint64_t id;
	if (ma_etcd_id_parse(lua_tostring(L, i), &id) < 0)
		luaL_argerror(L, i, lua_pushfstring(L, "\"%s\" is not a decimal uint64 member ID", lua_tostring(L, i)));
	return id;
}

static const char *optstr(lua_State *L, int t, const char *name, size_t *len)
{
	lua_getfield(L, t, name); /* ... v */
	const char *s = NULL;
	if (!lua_isnil(L, -1)) {
		if (lua_type(L, -1) != LUA_TSTRING)
			luaL_error(L, "etcd.new: option '%s' must be a string, got %s", name, luaL_typename(L, -1));
		s = lua_tolstring(L, -1, len);
	}
	lua_pop(L, 1); /* ... (the string stays anchored by the opts table) */
	return s;
}

static long optms(lua_State *L, int t, const char *name)
{
	lua_getfield(L, t, name); /* ... v */
	long ms = 0;
	if (!lua_isnil(L, -1)) {
		if (!lua_isnumber(L, -1) || lua_tonumber(L, -1) <= 0)
			luaL_error(L, "etcd.new: option '%s' must be a positive number of seconds", name);
		ms = (long)(lua_tonumber(L, -1) * 1000.0);
		if (ms < 1)
			ms = 1;
	}
	lua_pop(L, 1); /* ... */
	return ms;
}

static size_t optbytes(lua_State *L, int t, const char *name)
{
	lua_getfield(L, t, name); /* ... v */
	size_t n = 0;
	if (!lua_isnil(L, -1)) {
		int isint = 0;
		lua_Integer v = lua_tointegerx(L, -1, &isint);
		if (!isint || v <= 0)
			luaL_error(L, "etcd.new: option '%s' must be a positive integer number of bytes", name);
		n = (size_t)v;
	}
	lua_pop(L, 1); /* ... */
	return n;
}

static int l_new(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	lua_settop(L, 1); /* opts */
	ma_etcd_opts o = {0};
	lua_getfield(L, 1, "endpoints"); /* opts url|list */
	if (lua_type(L, 2) == LUA_TSTRING) {
		lua_createtable(L, 1, 0); /* opts url list */
		lua_pushvalue(L, 2); /* opts url list url */
		lua_rawseti(L, -2, 1); /* opts url list */
		lua_replace(L, 2); /* opts list */
	}
	if (!lua_istable(L, 2))
		return luaL_error(L, "etcd.new: option 'endpoints' must be a list of URLs");
	size_t n = (size_t)lua_rawlen(L, 2);
	if (n == 0)
		return luaL_error(L, "etcd.new: option 'endpoints' is empty");
	const char **eps = lua_newuserdatauv(L, sizeof *eps * n, 0); /* opts list array */
	for (size_t i = 0; i < n; i++) {
		lua_rawgeti(L, 2, (lua_Integer)i + 1); /* opts list array url */
		if (lua_type(L, -1) != LUA_TSTRING)
			return luaL_error(L, "etcd.new: endpoints[%d] must be a string", (int)i + 1);
		eps[i] = lua_tostring(L, -1); /* anchored by the endpoints table */
		lua_pop(L, 1); /* opts list array */
	}
	o.endpoints = eps;
	o.n_endpoints = n;
	o.ca_pem = optstr(L, 1, "ca_pem", &o.ca_pem_len);
	o.ca_file = optstr(L, 1, "ca_file", NULL);
	o.cert_pem = optstr(L, 1, "cert_pem", &o.cert_pem_len);
	o.key_pem = optstr(L, 1, "key_pem", &o.key_pem_len);
	o.dial_timeout_ms = optms(L, 1, "dial_timeout");
	o.request_timeout_ms = optms(L, 1, "timeout");
	o.max_body = optbytes(L, 1, "max_body");
	LEtcd *u = lua_newuserdatauv(L, sizeof *u, 0); /* opts list array client */
	u->c = NULL;
	luaL_setmetatable(L, CLIENT_MT); /* opts list array client (closed) */
	ma_err e = {0};
	if (!(u->c = ma_etcd_new(&o, &e)))
		return push_fail(L, &e); /* opts list array client nil msg kind */
	return 1;
}

static int l_close(lua_State *L)
{
	LEtcd *u = luaL_checkudata(L, 1, CLIENT_MT);
	ma_etcd_free(u->c);
	u->c = NULL;
	return 0;
}

static int l_tostring(lua_State *L)
{
	LEtcd *u = luaL_checkudata(L, 1, CLIENT_MT);
	if (u->c)
		lua_pushfstring(L, "moonadm.etcd.client (%s%s)", ma_etcd_endpoint(u->c, 0),
				ma_etcd_endpoint_count(u->c) > 1 ? ", ..." : "");
	else
		lua_pushliteral(L, "moonadm.etcd.client (closed)");
	return 1;
}

static int l_endpoints(lua_State *L)
{
	LEtcd *u = checkclient(L, 1);
	size_t n = ma_etcd_endpoint_count(u->c);
	lua_createtable(L, (int)n, 0); /* list */
	for (size_t i = 0; i < n; i++) {
		lua_pushstring(L, ma_etcd_endpoint(u->c, i)); /* list url */
		lua_rawseti(L, -2, (lua_Integer)i + 1); /* list */
	}
	return 1;
}

static int l_add_endpoint(lua_State *L)
{
	LEtcd *u = checkclient(L, 1);
	const char *url = luaL_checkstring(L, 2);
	ma_err e = {0};
	if (ma_etcd_add_endpoint(u->c, url, &e) < 0)
		return push_fail(L, &e);
	lua_pushboolean(L, 1);
	return 1;
}

static void push_strs(lua_State *L, char **v, size_t n)
{
	lua_createtable(L, (int)n, 0); /* ... list */
	for (size_t i = 0; i < n; i++) {
		lua_pushstring(L, v[i]); /* ... list s */
		lua_rawseti(L, -2, (lua_Integer)i + 1); /* ... list */
	}
}

static void push_member(lua_State *L, const ma_etcd_member *m)
{
	char hex[17];
	lua_createtable(L, 0, 6); /* ... m */
	push_id(L, m->id);
	lua_setfield(L, -2, "id"); /* ... m */
	ma_etcd_id_hex(m->id, hex);
	lua_pushstring(L, hex);
	lua_setfield(L, -2, "id_hex");
	lua_pushstring(L, m->name ? m->name : "");
	lua_setfield(L, -2, "name");
	push_strs(L, m->peer_urls, m->n_peer_urls); /* ... m list */
	lua_setfield(L, -2, "peer_urls");
	push_strs(L, m->client_urls, m->n_client_urls); /* ... m list */
	lua_setfield(L, -2, "client_urls");
	lua_pushboolean(L, m->is_learner);
	lua_setfield(L, -2, "is_learner");
}

/* pushes the result table and frees m */
static int push_members(lua_State *L, ma_etcd_members *m)
{
	lua_createtable(L, 0, 5); /* ... r */
	lua_createtable(L, (int)m->n, 0); /* ... r members */
	for (size_t i = 0; i < m->n; i++) {
		push_member(L, &m->v[i]); /* ... r members m */
		lua_rawseti(L, -2, (lua_Integer)i + 1); /* ... r members */
	}
	lua_setfield(L, -2, "members"); /* ... r */
	if (m->has_added) {
		push_member(L, &m->added); /* ... r m */
		lua_setfield(L, -2, "member"); /* ... r */
	}
	lua_pushstring(L, m->endpoint);
	lua_setfield(L, -2, "endpoint");
	push_id(L, m->cluster_id);
	lua_setfield(L, -2, "cluster_id");
	push_id(L, m->member_id);
	lua_setfield(L, -2, "member_id");
	ma_etcd_members_free(m);
	return 1;
}

static int l_member_list(lua_State *L)
{
	LEtcd *u = checkclient(L, 1);
	int lin = lua_isnoneornil(L, 2) ? 1 : lua_toboolean(L, 2);
	ma_etcd_members m;
	ma_err e = {0};
	if (ma_etcd_member_list(u->c, lin, &m, &e) < 0) {
		ma_etcd_members_free(&m);
		return push_fail(L, &e);
	}
	return push_members(L, &m);
}

static int l_member_add(lua_State *L)
{
	LEtcd *u = checkclient(L, 1);
	lua_settop(L, 3); /* client urls opts */
	if (lua_type(L, 2) == LUA_TSTRING) {
		lua_createtable(L, 1, 0); /* client url opts list */
		lua_pushvalue(L, 2); /* client url opts list url */
		lua_rawseti(L, -2, 1); /* client url opts list */
		lua_replace(L, 2); /* client list opts */
	}
	luaL_checktype(L, 2, LUA_TTABLE);
	int learner = 1;
	if (!lua_isnil(L, 3)) {
		luaL_checktype(L, 3, LUA_TTABLE);
		lua_getfield(L, 3, "learner"); /* client list opts learner */
		if (!lua_isnil(L, -1))
			learner = lua_toboolean(L, -1);
		lua_pop(L, 1); /* client list opts */
	}
	size_t n = (size_t)lua_rawlen(L, 2);
	if (n == 0)
		return luaL_argerror(L, 2, "no peer URL");
	const char **urls = lua_newuserdatauv(L, sizeof *urls * n, 0); /* client list opts array */
	for (size_t i = 0; i < n; i++) {
		lua_rawgeti(L, 2, (lua_Integer)i + 1); /* client list opts array url */
		if (lua_type(L, -1) != LUA_TSTRING)
			return luaL_argerror(L, 2, "peer URLs must be strings");
		urls[i] = lua_tostring(L, -1);
		lua_pop(L, 1); /* client list opts array */
	}
	ma_etcd_members m;
	ma_err e = {0};
	if (ma_etcd_member_add(u->c, urls, n, learner, &m, &e) < 0) {
		ma_etcd_members_free(&m);
		return push_fail(L, &e);
	}
	return push_members(L, &m);
}

static int id_op(lua_State *L, int (*fn)(ma_etcd *, uint64_t, ma_etcd_members *, ma_err *))
{
	LEtcd *u = checkclient(L, 1);
	uint64_t id = check_id(L, 2);
	ma_etcd_members m;
	ma_err e = {0};
	if (fn(u->c, id, &m, &e) < 0) {
		ma_etcd_members_free(&m);
		return push_fail(L, &e);
	}
	return push_members(L, &m);
}

static int l_member_promote(lua_State *L)
{
	return id_op(L, ma_etcd_member_promote);
}

static int l_member_remove(lua_State *L)
{
	return id_op(L, ma_etcd_member_remove);
}

/* endpoint argument: a 1-based index or a URL */
static void check_target(lua_State *L, LEtcd *u, int i, size_t *idx, const char **url)
{
	*idx = 0;
	*url = NULL;
	if (lua_isinteger(L, i)) {
		lua_Integer k = lua_tointeger(L, i);
		if (k < 1 || (size_t)k > ma_etcd_endpoint_count(u->c))
			luaL_argerror(L, i, "no such endpoint index");
		*idx = (size_t)k - 1;
	} else if (lua_type(L, i) == LUA_TSTRING) {
		*url = lua_tostring(L, i);
	} else if (lua_isnoneornil(L, i)) {
		*idx = 0;
	} else {
		luaL_typeerror(L, i, "endpoint index or URL");
	}
}

static void push_u64_int(lua_State *L, uint64_t v)
{
	if (v <= (uint64_t)LUA_MAXINTEGER)
		lua_pushinteger(L, (lua_Integer)v);
	else
		push_id(L, v);
}

static int l_status(lua_State *L)
{
	LEtcd *u = checkclient(L, 1);
	size_t idx;
	const char *url;
	check_target(L, u, 2, &idx, &url);
	ma_etcd_status s;
	ma_err e = {0};
	if (ma_etcd_endpoint_status(u->c, idx, url, &s, &e) < 0) {
		ma_etcd_status_free(&s);
		return push_fail(L, &e);
	}
	lua_createtable(L, 0, 13); /* client target s */
	lua_pushstring(L, s.endpoint);
	lua_setfield(L, -2, "endpoint");
	lua_pushstring(L, s.version);
	lua_setfield(L, -2, "version");
	push_id(L, s.member_id);
	lua_setfield(L, -2, "member_id");
	push_id(L, s.leader);
	lua_setfield(L, -2, "leader");
	push_u64_int(L, s.raft_index);
	lua_setfield(L, -2, "raft_index");
	push_u64_int(L, s.raft_term);
	lua_setfield(L, -2, "raft_term");
	push_u64_int(L, s.raft_applied_index);
	lua_setfield(L, -2, "raft_applied_index");
	push_u64_int(L, s.revision); /* the key-value store's revision (what a snapshot is compared by) */
	lua_setfield(L, -2, "revision");
	push_u64_int(L, s.db_size);
	lua_setfield(L, -2, "db_size");
	push_u64_int(L, s.db_size_in_use);
	lua_setfield(L, -2, "db_size_in_use");
	lua_pushboolean(L, s.is_learner);
	lua_setfield(L, -2, "is_learner");
	push_strs(L, s.errors, s.n_errors);
	lua_setfield(L, -2, "errors");
	ma_etcd_status_free(&s);
	return 1;
}

static int l_health(lua_State *L)
{
	LEtcd *u = checkclient(L, 1);
	size_t idx;
	const char *url;
	check_target(L, u, 2, &idx, &url);
	ma_etcd_health h;
	ma_err e = {0};
	if (ma_etcd_endpoint_health(u->c, idx, url, &h, &e) < 0) {
		ma_etcd_health_free(&h);
		return push_fail(L, &e);
	}
	lua_createtable(L, 0, 4); /* client target h */
	lua_pushstring(L, h.endpoint);
	lua_setfield(L, -2, "endpoint");
	lua_pushboolean(L, h.healthy);
	lua_setfield(L, -2, "healthy");
	lua_pushstring(L, h.reason);
	lua_setfield(L, -2, "reason");
	lua_pushinteger(L, h.status);
	lua_setfield(L, -2, "status");
	ma_etcd_health_free(&h);
	return 1;
}

/* ---- snapshots ---- */

/* nil, message, kind for a failure of the file (errno in e->code): "exists" or "io" */
static int push_file_fail(lua_State *L, ma_err *e)
{
	e->kind = e->code == EEXIST ? "exists" : "io";
	return ma_push_err(L, e); /* nil msg kind */
}

static void push_file_fields(lua_State *L, const ma_etcd_snapshot_file *f)
{
	push_u64_int(L, f->size); /* ... t size */
	lua_setfield(L, -2, "size");
	lua_pushstring(L, f->sha256);
	lua_setfield(L, -2, "sha256");
	lua_pushboolean(L, f->has_checksum);
	lua_setfield(L, -2, "has_checksum");
	lua_pushboolean(L, f->checksum_ok);
	lua_setfield(L, -2, "checksum_ok");
	lua_pushstring(L, f->checksum);
	lua_setfield(L, -2, "checksum");
	lua_pushboolean(L, f->bbolt_ok);
	lua_setfield(L, -2, "bbolt_ok");
	if (!f->bbolt_ok) {
		lua_pushstring(L, f->bbolt_error);
		lua_setfield(L, -2, "bbolt_error");
		return;
	}
	lua_pushinteger(L, f->bbolt.page_size);
	lua_setfield(L, -2, "page_size");
	push_u64_int(L, f->bbolt.txid);
	lua_setfield(L, -2, "txid");
	push_u64_int(L, f->bbolt.pgid);
	lua_setfield(L, -2, "pgid");
}

struct save_target {
	ma_fs_stream *s;
	int failed; /* the file failed (its errno in the error), not etcd */
};

static int save_sink(const unsigned char *buf, size_t len, void *ud, ma_err *e)
{
	struct save_target *t = ud;
	if (ma_fs_stream_write(t->s, buf, len, e) == 0)
		return 0;
	t->failed = 1;
	return -1;
}

/* The file as it is on disk holds what etcd sent: 0, or -1 with e (kind "protocol": etcd's bytes
 * and the file's disagree; the file is not kept). */
static int verify_written(ma_fs_stream *s, const ma_etcd_snapshot *snap, ma_etcd_snapshot_file *f, ma_err *e)
{
	if (ma_fs_stream_sync(s, e) < 0 || ma_etcd_snapshot_check_fd(ma_fs_stream_fd(s), ma_fs_stream_host(s), f, e) < 0)
		return -1;
	char want[65];
	ma_hex(snap->sha256, sizeof snap->sha256, want);
	const char *why = f->size != snap->size ? "its size is not what etcd sent"
			  : !f->has_checksum || !f->checksum_ok ? "its last 32 bytes are not the SHA-256 of the database"
			  : strcmp(f->checksum, want) != 0 ? "its checksum is not etcd's"
			  : !f->bbolt_ok ? f->bbolt_error : NULL;
	if (!why)
		return 0;
	ma_fail_kind(e, "protocol", "snapshot %s read back after writing: %s: not kept", ma_fs_stream_host(s), why);
	e->code = MA_ETCD_EPROTO;
	return -1;
}

static int l_snapshot_save(lua_State *L)
{
	LEtcd *u = checkclient(L, 1);
	size_t idx;
	const char *url;
	check_target(L, u, 2, &idx, &url);
	const char *path = luaL_checkstring(L, 3);
	ma_etcd_snapshot_opts o = {0};
	mode_t mode = 0600;
	if (!lua_isnoneornil(L, 4)) {
		luaL_checktype(L, 4, LUA_TTABLE);
		o.timeout_ms = optms(L, 4, "timeout");
		lua_getfield(L, 4, "mode"); /* c target path opts mode */
		if (!lua_isnil(L, -1)) {
			lua_Integer m = luaL_checkinteger(L, -1);
			luaL_argcheck(L, m > 0 && m <= 0777, 4, "mode must be a permission mode such as 0600");
			mode = (mode_t)m;
		}
		lua_pop(L, 1); /* c target path opts */
	}
	ma_err e = {0};
	ma_fs_stream *s = ma_fs_stream_open(ma_fs_root_of(L), path, mode, &e);
	if (!s)
		return push_file_fail(L, &e);
	struct save_target t = {s, 0};
	ma_etcd_snapshot snap;
	ma_etcd_snapshot_file f;
	if (ma_etcd_snapshot_save(u->c, idx, url, &o, save_sink, &t, &snap, &e) < 0) {
		ma_fs_stream_abort(s);
		ma_etcd_snapshot_free(&snap);
		return t.failed ? push_file_fail(L, &e) : push_fail(L, &e);
	}
	if (verify_written(s, &snap, &f, &e) < 0) {
		ma_fs_stream_abort(s);
		ma_etcd_snapshot_free(&snap);
		return e.kind ? ma_push_err(L, &e) : push_file_fail(L, &e);
	}
	if (ma_fs_stream_commit(s, &e) < 0) {
		ma_etcd_snapshot_free(&snap);
		return push_file_fail(L, &e);
	}
	lua_createtable(L, 0, 20); /* c target path opts snap */
	lua_pushstring(L, snap.endpoint);
	lua_setfield(L, -2, "endpoint");
	lua_pushstring(L, snap.version);
	lua_setfield(L, -2, "version");
	lua_pushstring(L, snap.storage_version ? snap.storage_version : "");
	lua_setfield(L, -2, "storage_version");
	push_u64_int(L, snap.revision);
	lua_setfield(L, -2, "revision");
	lua_pushboolean(L, snap.revision_exact);
	lua_setfield(L, -2, "revision_exact");
	push_id(L, snap.member_id);
	lua_setfield(L, -2, "member_id");
	push_id(L, snap.cluster_id);
	lua_setfield(L, -2, "cluster_id");
	push_u64_int(L, snap.db_size);
	lua_setfield(L, -2, "db_size");
	push_file_fields(L, &f);
	ma_etcd_snapshot_free(&snap);
	return 1;
}

static int l_snapshot_check(lua_State *L)
{
	ma_etcd_snapshot_file f;
	ma_err e = {0};
	if (ma_etcd_snapshot_check(ma_fs_root_of(L), luaL_checkstring(L, 1), &f, &e) < 0)
		return push_file_fail(L, &e);
	lua_createtable(L, 0, 10); /* path f */
	push_file_fields(L, &f);
	return 1;
}

static int l_id_hex(lua_State *L)
{
	char hex[17];
	ma_etcd_id_hex(check_id(L, 1), hex);
	lua_pushstring(L, hex); /* id hex */
	return 1;
}

static int l_id_from_hex(lua_State *L)
{
	const char *s = luaL_checkstring(L, 1);
	uint64_t id;
	if (ma_etcd_id_parse_hex(s, &id) < 0) {
		ma_err e = {0};
		ma_fail_kind(&e, "malformed", "\"%.64s\" is not a hex member ID", s);
		return ma_push_err(L, &e); /* s nil msg kind */
	}
	push_id(L, id); /* s id */
	return 1;
}

int luaopen_moonadm_etcd(lua_State *L)
{
	static const luaL_Reg meta[] = {{"__gc", l_close}, {"__close", l_close}, {"__tostring", l_tostring}, {NULL, NULL}};
	static const luaL_Reg methods[] = {
	    {"member_list", l_member_list},
	    {"member_add", l_member_add},
	    {"member_promote", l_member_promote},
	    {"member_remove", l_member_remove},
	    {"status", l_status},
	    {"health", l_health},
	    {"snapshot_save", l_snapshot_save},
	    {"endpoints", l_endpoints},
	    {"add_endpoint", l_add_endpoint},
	    {"close", l_close},
	    {NULL, NULL}};
	static const luaL_Reg fns[] = {{"new", l_new}, {"id_hex", l_id_hex}, {"id_from_hex", l_id_from_hex},
					   {"snapshot_check", l_snapshot_check}, {NULL, NULL}};
	luaL_newmetatable(L, CLIENT_MT); /* mt */
	luaL_setfuncs(L, meta, 0); /* mt */
	luaL_newlib(L, methods); /* mt methods */
	ma_guard_table(L, -1, NULL, NULL);
	lua_setfield(L, -2, "__index"); /* mt */
	lua_pop(L, 1); /* ... */
	luaL_newlib(L, fns); /* etcd */
	ma_guard_table(L, -1, NULL, NULL);
	return 1;
}
