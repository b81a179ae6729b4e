/* moonadm.yaml: decode YAML into Lua tables (with line numbers), encode tables as kubeadm does. */
#include <stdlib.h>
#include <string.h>

#include "bindings.h"
#include "yaml_doc.h"

#define POS_KEY "moonadm.yaml.pos"       /* weak-keyed: node table -> {line=, keys={...}} */
#define ARRAY_MT "moonadm.yaml.array_mt" /* marks a table as a sequence */
static char null_sentinel;               /* yaml.null is this address as a light userdata */

/* pos[tbl] = {line = line, keys = the table on top of the stack}; pops that table. */
static void set_pos(lua_State *L, int tbl, int line)
{
	tbl = lua_absindex(L, tbl);
	int keys = lua_gettop(L);
	lua_getfield(L, LUA_REGISTRYINDEX, POS_KEY); /* keys pos */
	lua_pushvalue(L, tbl); /* keys pos node */
	lua_createtable(L, 0, 2); /* keys pos node info */
	lua_pushinteger(L, line);
	lua_setfield(L, -2, "line"); /* keys pos node info */
	lua_pushvalue(L, keys);
	lua_setfield(L, -2, "keys"); /* keys pos node info */
	lua_settable(L, -3); /* keys pos */
	lua_pop(L, 2); /* ... */
}

/* A sequence's position: its line and the line of each item. */
static void record_pos(lua_State *L, int tbl, const ma_ynode *n)
{
	tbl = lua_absindex(L, tbl);
	lua_createtable(L, (int)n->n, 0); /* ... lines */
	for (size_t i = 0; i < n->n; i++) {
		lua_pushinteger(L, n->kids[i]->line); /* ... lines line */
		lua_seti(L, -2, (lua_Integer)i + 1); /* ... lines */
	}
	set_pos(L, tbl, n->line);
}

static void push_node(lua_State *L, const ma_ynode *n)
{
	luaL_checkstack(L, 6, "yaml nesting too deep");
	switch (n->type) {
	case MA_Y_NULL:
		lua_pushlightuserdata(L, &null_sentinel); /* ... null */
		break;
	case MA_Y_BOOL:
		lua_pushboolean(L, n->b);
		break;
	case MA_Y_INT:
		lua_pushinteger(L, n->i);
		break;
	case MA_Y_FLOAT:
		lua_pushnumber(L, n->f);
		break;
	case MA_Y_STR:
		lua_pushlstring(L, n->s, n->slen);
		break;
	case MA_Y_SEQ:
		lua_createtable(L, (int)n->n, 0); /* ... seq */
		for (size_t i = 0; i < n->n; i++) {
			push_node(L, n->kids[i]); /* ... seq item */
			lua_seti(L, -2, (lua_Integer)i + 1); /* ... seq */
		}
		luaL_setmetatable(L, ARRAY_MT); /* ... seq (an array) */
		record_pos(L, -1, n);
		break;
	case MA_Y_MAP:
		lua_createtable(L, 0, (int)(n->n / 2)); /* node */
		lua_createtable(L, 0, (int)(n->n / 2)); /* node keys (the line of each key) */
		for (size_t i = 0; i + 1 < n->n; i += 2) {
			const ma_ynode *k = n->kids[i];
			if (k->type == MA_Y_NULL) /* a null key has no Lua equivalent; keep its text */
				lua_pushstring(L, "null"); /* node keys k */
			else
				push_node(L, k); /* node keys k */
			/* The key's line under the same Lua value: pushing the text again would copy a long
			 * string, twice the bytes the decoder charged for it. */
			if (k->type == MA_Y_STR || k->type == MA_Y_INT) {
				lua_pushvalue(L, -1); /* node keys k k */
				lua_pushinteger(L, k->line); /* node keys k k line */
				lua_settable(L, -4); /* node keys k */
			}
			push_node(L, n->kids[i + 1]); /* node keys k v */
			lua_settable(L, -4); /* node keys */
		}
		set_pos(L, -2, n->line); /* node (pos[node].keys = keys) */
		break;
	}
}

/* Frees the tree under construction if a Lua error unwinds while building it (mpv style). */
struct tree_box {
	ma_ynode *root;
};

static int box_gc(lua_State *L)
{
	struct tree_box *b = lua_touserdata(L, 1);
	ma_ynode_free(b->root);
	b->root = NULL;
	return 0;
}

static struct tree_box *new_box(lua_State *L)
{
	struct tree_box *b = lua_newuserdatauv(L, sizeof *b, 0); /* ... box */
	b->root = NULL;
	if (luaL_newmetatable(L, "moonadm.yaml.box")) { /* ... box mt */
		lua_pushcfunction(L, box_gc);
		lua_setfield(L, -2, "__gc");
	}
	lua_setmetatable(L, -2); /* ... box */
	return b;
}

/* yaml.decode(text [, name]) -> list of documents | nil, err */
static int l_decode(lua_State *L)
{
	size_t len;
	const char *text = luaL_checklstring(L, 1, &len);
	const char *name = luaL_optstring(L, 2, "<yaml>");
	ma_err e = {0};
	struct tree_box *b = new_box(L);
	b->root = ma_yaml_parse(text, len, name, &e);
	if (!b->root)
		return ma_push_err(L, &e); /* text [name] box nil msg code */
	lua_createtable(L, (int)b->root->n, 0); /* text [name] box docs */
	for (size_t i = 0; i < b->root->n; i++) {
		push_node(L, b->root->kids[i]); /* text [name] box docs doc */
		lua_seti(L, -2, (lua_Integer)i + 1); /* text [name] box docs */
	}
	record_pos(L, -1, b->root); /* yaml.pos(list): the line of each document */
	ma_ynode_free(b->root);
	b->root = NULL;
	return 1;
}

/* yaml.pos(node) -> line, {key -> line} (nil when the table did not come from decode) */
static int l_pos(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	lua_getfield(L, LUA_REGISTRYINDEX, POS_KEY); /* node pos */
	lua_pushvalue(L, 1); /* node pos node */
	if (lua_gettable(L, -2) != LUA_TTABLE) /* node pos info */
		return 0;
	lua_getfield(L, -1, "line"); /* node pos info line */
	lua_getfield(L, -2, "keys"); /* node pos info line keys */
	return 2;
}

static int is_sequence(lua_State *L, int idx)
{
	if (lua_getmetatable(L, idx)) { /* ... mt */
		luaL_getmetatable(L, ARRAY_MT); /* ... mt array_mt */
		int eq = lua_rawequal(L, -1, -2);
		lua_pop(L, 2); /* ... */
		if (eq)
			return 1;
	}
	lua_Integer n = (lua_Integer)lua_rawlen(L, idx);
	if (n == 0)
		return 0;
	lua_Integer count = 0;
	lua_pushnil(L); /* ... nil */
	while (lua_next(L, idx)) { /* ... k v */
		lua_pop(L, 1); /* ... k */
		if (!lua_isinteger(L, -1) || lua_tointeger(L, -1) < 1 || lua_tointeger(L, -1) > n) {
			lua_pop(L, 1); /* ... */
			return 0;
		}
		count++;
	}
	return count == n;
}

static ma_ynode *build(lua_State *L, int idx, int depth, const char *where);

static ma_ynode *build_checked(lua_State *L, ma_ynode *parent, int idx, int depth, const char *where)
{
	ma_ynode *c = build(L, idx, depth, where);
	if (ma_ynode_push(parent, c)) {
		ma_ynode_free(c);
		luaL_error(L, "yaml.encode: out of memory");
	}
	return c;
}

/* Converts the Lua value at idx into a tree appended to nothing; raises on values YAML can't hold.
 * The caller keeps the partial tree reachable from a box, so raising leaks nothing. */
static ma_ynode *build(lua_State *L, int idx, int depth, const char *where)
{
	idx = lua_absindex(L, idx);
	if (depth > 100)
		luaL_error(L, "yaml.encode: nesting deeper than 100 (a cycle?) at %s", where);
	ma_ynode *n = NULL;
	switch (lua_type(L, idx)) {
	case LUA_TNIL:
		n = ma_ynode_new(MA_Y_NULL);
		break;
	case LUA_TLIGHTUSERDATA:
		if (lua_touserdata(L, idx) != &null_sentinel)
			luaL_error(L, "yaml.encode: cannot encode a light userdata at %s", where);
		n = ma_ynode_new(MA_Y_NULL);
		break;
	case LUA_TBOOLEAN:
		if ((n = ma_ynode_new(MA_Y_BOOL)))
			n->b = lua_toboolean(L, idx);
		break;
	case LUA_TNUMBER:
		if (lua_isinteger(L, idx)) {
			if ((n = ma_ynode_new(MA_Y_INT)))
				n->i = lua_tointeger(L, idx);
		} else if ((n = ma_ynode_new(MA_Y_FLOAT))) {
			n->f = lua_tonumber(L, idx);
		}
		break;
	case LUA_TSTRING: {
		size_t len;
		const char *s = lua_tolstring(L, idx, &len);
		n = ma_ynode_str(s, len);
		break;
	}
	case LUA_TTABLE: {
		int seq = is_sequence(L, idx);
		n = ma_ynode_new(seq ? MA_Y_SEQ : MA_Y_MAP);
		if (!n)
			break;
		/* Park n in the box chain so a raise below frees it: push a box holding n. */
		struct tree_box *b = new_box(L);
		b->root = n;
		if (seq) {
			lua_Integer len = (lua_Integer)lua_rawlen(L, idx);
			for (lua_Integer i = 1; i <= len; i++) {
				lua_rawgeti(L, idx, i); /* ... box item */
				build_checked(L, n, -1, depth + 1, where);
				lua_pop(L, 1); /* ... box */
			}
		} else {
			lua_pushnil(L); /* ... box nil */
			while (lua_next(L, idx)) { /* ... box k v */
				int kt = lua_type(L, -2);
				if (kt != LUA_TSTRING && kt != LUA_TNUMBER)
					luaL_error(L, "yaml.encode: mapping key of type %s at %s", lua_typename(L, kt), where);
				lua_pushvalue(L, -2); /* ... box k v k */
				size_t klen;
				const char *k = lua_tolstring(L, -1, &klen); /* a copy: tolstring on a number key converts it */
				ma_ynode *kn = ma_ynode_str(k, klen);
				if (!kn || ma_ynode_push(n, kn)) {
					ma_ynode_free(kn);
					luaL_error(L, "yaml.encode: out of memory");
				}
				lua_pop(L, 1); /* ... box k v */
				build_checked(L, n, -1, depth + 1, k);
				lua_pop(L, 1); /* ... box k */
			}
		}
		b->root = NULL; /* ownership moves to the caller */
		lua_pop(L, 1); /* ... */
		break;
	}
	default:
		luaL_error(L, "yaml.encode: cannot encode a %s at %s", luaL_typename(L, idx), where);
	}
	if (!n)
		luaL_error(L, "yaml.encode: out of memory");
	return n;
}

static int encode_docs(lua_State *L, int list)
{
	struct tree_box *b = new_box(L);
	b->root = ma_ynode_new(MA_Y_SEQ);
	if (!b->root)
		return luaL_error(L, "yaml.encode: out of memory");
	if (list) {
		luaL_checktype(L, 1, LUA_TTABLE);
		lua_Integer n = (lua_Integer)lua_rawlen(L, 1);
		for (lua_Integer i = 1; i <= n; i++) {
			lua_rawgeti(L, 1, i); /* list box doc */
			build_checked(L, b->root, -1, 0, "document");
			lua_pop(L, 1); /* list box */
		}
	} else {
		build_checked(L, b->root, 1, 0, "document");
	}
	char *out;
	size_t len;
	ma_err e = {0};
	if (ma_yaml_emit(b->root, &out, &len, &e))
		return ma_push_err(L, &e); /* ... box nil msg code */
	lua_pushlstring(L, out, len); /* ... box text */
	free(out);
	return 1;
}

static int l_encode(lua_State *L)
{
	luaL_checkany(L, 1);
	return encode_docs(L, 0);
}

static int l_encode_all(lua_State *L)
{
	return encode_docs(L, 1);
}

static int l_array(lua_State *L)
{
	if (lua_isnoneornil(L, 1))
		lua_newtable(L); /* {} */
	luaL_checktype(L, 1, LUA_TTABLE);
	lua_settop(L, 1); /* t */
	luaL_setmetatable(L, ARRAY_MT); /* t (an array) */
	return 1;
}

int luaopen_moonadm_yaml(lua_State *L)
{
	static const luaL_Reg fns[] = {{"decode", l_decode},         {"encode", l_encode}, {"encode_all", l_encode_all},
				       {"pos", l_pos},               {"array", l_array},   {NULL, NULL}};
	luaL_newmetatable(L, ARRAY_MT); /* mt */
	lua_pushstring(L, "array");
	lua_setfield(L, -2, "__name"); /* mt */
	lua_pop(L, 1); /* ... */
	lua_newtable(L); /* pos (weak-keyed) */
	lua_createtable(L, 0, 1); /* pos mt */
	lua_pushstring(L, "k");
	lua_setfield(L, -2, "__mode"); /* pos mt */
	lua_setmetatable(L, -2); /* pos */
	lua_setfield(L, LUA_REGISTRYINDEX, POS_KEY); /* ... */

	luaL_newlib(L, fns); /* yaml */
	lua_pushlightuserdata(L, &null_sentinel);
	lua_setfield(L, -2, "null"); /* yaml */
	luaL_getmetatable(L, ARRAY_MT);
	lua_setfield(L, -2, "array_mt"); /* yaml */
	ma_yaml_limits lim = ma_yaml_default_limits(); /* what decode refuses beyond */
	lua_createtable(L, 0, 5); /* yaml limits */
	lua_pushinteger(L, (lua_Integer)lim.max_bytes);
	lua_setfield(L, -2, "max_bytes");
	lua_pushinteger(L, (lua_Integer)lim.max_nodes);
	lua_setfield(L, -2, "max_nodes");
	lua_pushinteger(L, (lua_Integer)lim.max_depth);
	lua_setfield(L, -2, "max_depth");
	lua_pushinteger(L, (lua_Integer)lim.max_keys);
	lua_setfield(L, -2, "max_keys");
	lua_pushinteger(L, (lua_Integer)lim.max_scalar_bytes);
	lua_setfield(L, -2, "max_scalar_bytes");
	lua_setfield(L, -2, "limits"); /* yaml */
	return 1;
}
