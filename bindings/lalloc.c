/* The Lua state's allocator: objects up to SMALL_MAX bytes come from size classes 8 bytes apart,
 * carved from 64 KiB blocks, with a free list per class; larger ones from malloc.
 * Why: a command makes some 12,000 small objects (strings, tables, closures, prototypes) while it
 * loads its modules; glibc's malloc spent 16% of `phases init`'s instructions on them and rounded
 * each up to a 16-byte multiple with an 8-byte header. Lua passes every block's size back when it
 * frees or resizes it, so a class needs no header. A freed block serves its class again.
 * When the state closes at exit, its finalizers run and the process ends: its objects are neither
 * walked nor freed one by one (a tenth of a short command's instructions, for memory the kernel
 * takes back anyway).
 * `make PLAIN=1` (MA_PLAIN) and AddressSanitizer builds have neither: luaL_newstate's state on
 * malloc alone, closed fully by lua_close, so a bug can be told from these two tricks and ASan sees
 * each object (its leak check stays meaningful). */
#include <lauxlib.h>
#include <lua.h>
#include <stdlib.h>
#include <string.h>

#include "bindings.h"

#if defined(__SANITIZE_ADDRESS__)
#define MA_PLAIN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MA_PLAIN 1
#endif
#endif

#ifdef MA_PLAIN
lua_State *ma_lua_newstate(void)
{
	return luaL_newstate();
}

_Noreturn void ma_lua_exit(lua_State *L, int status)
{
	lua_close(L);
	exit(status);
}
#else
#define SMALL_MAX 256
#define GRAIN 8 /* Lua asks no more alignment of its blocks than 8 (LUAI_MAXALIGN) */
#define BLOCK_SIZE (64 * 1024)

struct free_block {
	struct free_block *next;
};

struct heap {
	struct free_block *free[SMALL_MAX / GRAIN + 1]; /* by class: size rounded up to GRAIN, / GRAIN */
	char *bump, *end;                               /* the rest of the newest block */
	void *blocks;                                   /* every block, chained through its first word */
};

static size_t class_of(size_t size)
{
	return (size + GRAIN - 1) / GRAIN;
}

/* A new block for the small classes; NULL when out of memory. */
static __attribute__((noinline)) void *small_refill(struct heap *h, size_t n)
{
	char *block = malloc(BLOCK_SIZE);
	if (!block) return NULL;
	*(void **)block = h->blocks; /* the chain, in the block's first GRAIN bytes */
	h->blocks = block;
	h->bump = block + GRAIN + n;
	h->end = block + BLOCK_SIZE;
	return block + GRAIN;
}

static inline void *small_alloc(struct heap *h, size_t size)
{
	size_t c = class_of(size);
	struct free_block *f = h->free[c];
	if (f) {
		h->free[c] = f->next;
		return f;
	}
	size_t n = c * GRAIN;
	if ((size_t)(h->end - h->bump) < n) return small_refill(h, n);
	void *p = h->bump;
	h->bump += n;
	return p;
}

static inline void small_free(struct heap *h, void *p, size_t size)
{
	struct free_block *f = p;
	size_t c = class_of(size);
	f->next = h->free[c];
	h->free[c] = f;
}

/* A resize of a live block (ptr, osize > 0, nsize > 0), the uncommon call: out of line, so the
 * common ones (a new small object, a free) save no registers. */
static __attribute__((noinline)) void *heap_resize(struct heap *h, void *ptr, size_t osize, size_t nsize)
{
	int small_old = osize <= SMALL_MAX, small_new = nsize <= SMALL_MAX;
	if (!small_old && !small_new) return realloc(ptr, nsize);
	if (small_old && small_new && class_of(osize) == class_of(nsize)) return ptr;
	void *p = small_new ? small_alloc(h, nsize) : malloc(nsize);
	if (!p) /* a shrink never fails: the old block serves (and later joins the smaller class) */
		return nsize <= osize ? ptr : NULL;
	memcpy(p, ptr, osize < nsize ? osize : nsize);
	if (small_old) small_free(h, ptr, osize);
	else free(ptr);
	return p;
}

/* lua_Alloc: osize is the block's size when ptr is a block, else the kind of object wanted. */
static void *lua_heap_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct heap *h = ud;
	if (!ptr) { /* a new object */
		if (nsize && nsize <= SMALL_MAX) return small_alloc(h, nsize);
		return nsize ? malloc(nsize) : NULL;
	}
	if (nsize == 0) {
		if (osize <= SMALL_MAX) small_free(h, ptr, osize);
		else free(ptr);
		return NULL;
	}
	return heap_resize(h, ptr, osize, nsize);
}

static int exit_armed, exit_status; /* set by ma_lua_exit (os.exit(code, true) closes as Lua does) */

/* The __gc of the state's first finalizable object, so lua_close calls it after every other
 * finalizer (it calls them newest first): the root lock is released, keys are wiped, files are
 * flushed; the process then ends here, before lua_close walks its objects one by one to free
 * memory the kernel takes back anyway (6% of a short command's instructions). */
static int end_process(lua_State *L)
{
	(void)L;
	if (exit_armed) exit(exit_status);
	return 0;
}

static int make_sentinel(lua_State *L)
{
	lua_newuserdatauv(L, 0, 0); /* ud */
	lua_createtable(L, 0, 1); /* ud mt */
	lua_pushcfunction(L, end_process);
	lua_setfield(L, -2, "__gc"); /* ud mt */
	lua_setmetatable(L, -2); /* ud */
	lua_setfield(L, LUA_REGISTRYINDEX, "moonadm.end_process"); /* registry[...] = ud */
	return 0;
}

lua_State *ma_lua_newstate(void)
{
	struct heap *h = calloc(1, sizeof *h);
	if (!h) return NULL;
	/* luaL_newstate's state (its panic and warning functions), then this allocator: the blocks made
	 * so far came from realloc, and this allocator takes them back as they are (a small one joins a
	 * free list, a large one goes to free or realloc) */
	lua_State *L = luaL_newstate();
	if (!L) {
		free(h);
		return NULL;
	}
	lua_setallocf(L, lua_heap_alloc, h);
	lua_pushcfunction(L, make_sentinel); /* make_sentinel */
	if (lua_pcall(L, 0, 0, 0) != LUA_OK) { /* out of memory */
		lua_close(L);
		return NULL;
	}
	return L;
}

_Noreturn void ma_lua_exit(lua_State *L, int status)
{
	exit_status = status, exit_armed = 1; /* end_process ends it: the objects are never walked */
	lua_close(L);
	exit(status);
}
#endif
