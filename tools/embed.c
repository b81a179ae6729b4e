/* Build tool: writes a C file that embeds the stock Lua scripts in the binary, each as its source
 * (for `scripts export`) and as Lua bytecode compiled here with its line numbers but without most
 * variable names (what `require` loads: undumping is several times cheaper than parsing, and
 * start-up is mostly that).
 * usage: embed [--order FILE] PREFIX FILE... ; a file PREFIX/a/b.lua becomes module "a.b",
 * PREFIX/a/init.lua becomes modules "a.init" and "a". --order names modules one per line (# starts
 * a comment; tools/layout-modules.txt, written by tools/layout.lua): their arrays come first, in that
 * order, and the rest after in the order given; compiled with -fno-toplevel-reorder, the bytecode
 * `require` reads for a command then sits together in the binary. */
#include <lauxlib.h>
#include <lua.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Module name of a path; with as_package, "a/init.lua" gives "a" (0 when it is no init.lua). */
static int module_name(const char *rel, char *out, size_t n, int as_package)
{
	snprintf(out, n, "%s", rel);
	size_t len = strlen(out);
	if (len > 4 && strcmp(out + len - 4, ".lua") == 0)
		out[len -= 4] = '\0';
	if (as_package) {
		if (len <= 5 || strcmp(out + len - 5, "/init") != 0)
			return 0;
		out[len -= 5] = '\0';
	}
	for (char *p = out; *p; p++)
		if (*p == '/')
			*p = '.';
	return 1;
}

struct buf {
	unsigned char *p;
	size_t n, cap;
};

static int put(struct buf *b, unsigned char c)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 4096;
		unsigned char *p = realloc(b->p, cap);
		if (!p) {
			fprintf(stderr, "embed: out of memory\n");
			return -1;
		}
		b->p = p, b->cap = cap;
	}
	b->p[b->n++] = c;
	return 0;
}

static int writer(lua_State *L, const void *p, size_t n, void *ud)
{
	(void)L;
	for (size_t i = 0; i < n; i++)
		if (put(ud, ((const unsigned char *)p)[i])) return 1;
	return 0;
}

/* Lua 5.4's bytecode with the local variables' names and the upvalues' names but _ENV left out: each
 * is a string the undump interns at every start-up (most of the debug information's cost), while the
 * line numbers, which every traceback and error position uses, are kept, and _ENV, by which an error
 * says "global 'x'". What goes: an error's "(local 'x')", its "upvalue 'x'" (now '?'), and a
 * traceback's "in local 'f'"; `scripts export` and `--scripts DIR` load the text with everything.
 * A reader of the format lua_dump writes (ldump.c, Lua 5.4): any surprise fails the build. */
struct rd {
	const unsigned char *p, *end;
	int bad;
};

static const unsigned char *take(struct rd *r, size_t n)
{
	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = 1;
		return NULL;
	}
	const unsigned char *at = r->p;
	r->p += n;
	return at;
}

/* Copies n bytes; a short input (or no memory) marks the reader bad. */
static void copy(struct rd *r, struct buf *o, size_t n)
{
	const unsigned char *at = take(r, n);
	for (size_t i = 0; at && i < n; i++)
		if (put(o, at[i])) {
			r->bad = 1;
			return;
		}
}

static int put_size(struct buf *o, size_t x)
{
	unsigned char tmp[16];
	int n = 0;
	do
		tmp[n++] = x & 0x7f;
	while ((x >>= 7) != 0 && n < 16);
	tmp[0] |= 0x80; /* the last byte written carries the mark */
	while (n > 0)
		if (put(o, tmp[--n])) return -1;
	return 0;
}

/* A size (7 bits a byte, most significant first, the last byte marked 0x80); copied when o. */
static size_t get_size(struct rd *r, struct buf *o)
{
	size_t x = 0;
	for (;;) {
		const unsigned char *b = take(r, 1);
		if (!b || x > (SIZE_MAX >> 7)) {
			r->bad = 1;
			return 0;
		}
		x = (x << 7) | (*b & 0x7f);
		if (*b & 0x80) break;
	}
	if (o && put_size(o, x)) r->bad = 1;
	return x;
}

static void get_string(struct rd *r, struct buf *o)
{
	size_t n = get_size(r, o);
	if (n > 0) {
		if (o) copy(r, o, n - 1);
		else take(r, n - 1);
	}
}

static void strip_function(struct rd *r, struct buf *o, int depth)
{
	if (depth > 200) r->bad = 1;
	get_string(r, o);               /* source */
	get_size(r, o), get_size(r, o); /* linedefined, lastlinedefined */
	copy(r, o, 3);                  /* numparams, is_vararg, maxstacksize */
	size_t n = get_size(r, o);      /* code: 4-byte instructions */
	if (n > (size_t)(r->end - r->p) / 4) r->bad = 1;
	copy(r, o, n * 4);
	n = get_size(r, o); /* constants, by type tag (lobject.h's variants) */
	for (size_t i = 0; i < n && !r->bad; i++) {
		const unsigned char *tt = take(r, 1);
		if (!tt || put(o, *tt)) {
			r->bad = 1;
			break;
		}
		switch (*tt) {
		case 0x00: case 0x01: case 0x11: break;    /* nil, false, true */
		case 0x03: case 0x13: copy(r, o, 8); break; /* integer, float */
		case 0x04: case 0x14: get_string(r, o); break; /* short, long string */
		default: r->bad = 1;
		}
	}
	n = get_size(r, o); /* upvalues: instack, idx, kind */
	if (n > (size_t)(r->end - r->p) / 3) r->bad = 1;
	copy(r, o, n * 3);
	n = get_size(r, o);
	for (size_t i = 0; i < n && !r->bad; i++) strip_function(r, o, depth + 1);
	n = get_size(r, o); /* line info: kept */
	copy(r, o, n);
	n = get_size(r, o); /* absolute line info: kept */
	for (size_t i = 0; i < n && !r->bad; i++) get_size(r, o), get_size(r, o);
	n = get_size(r, NULL); /* local variables: dropped */
	for (size_t i = 0; i < n && !r->bad; i++) get_string(r, NULL), get_size(r, NULL), get_size(r, NULL);
	if (put_size(o, 0)) r->bad = 1;
	n = get_size(r, o); /* upvalue names: _ENV kept (it makes "global 'x'" of an error), the others empty */
	for (size_t i = 0; i < n && !r->bad; i++) {
		size_t len = get_size(r, NULL);
		const unsigned char *name = len > 0 ? take(r, len - 1) : NULL;
		int env = name && len - 1 == 4 && !memcmp(name, "_ENV", 4);
		if (put_size(o, env ? len : 0)) r->bad = 1;
		for (size_t k = 0; env && k < 4; k++)
			if (put(o, name[k])) r->bad = 1;
	}
}

static int strip_names(const struct buf *in, struct buf *o)
{
	/* "\x1bLua", version 5.4, format 0, LUAC_DATA, sizes of Instruction, lua_Integer, lua_Number */
	static const unsigned char head[] = {0x1b, 'L', 'u', 'a', 0x54, 0, 0x19, 0x93, '\r', '\n', 0x1a, '\n', 4, 8, 8};
	struct rd r = {in->p, in->p + in->n, 0};
	if (in->n < sizeof head + 16 || memcmp(in->p, head, sizeof head)) return -1;
	copy(&r, o, sizeof head + 16 + 1); /* + LUAC_INT, LUAC_NUM, the main function's upvalue count */
	strip_function(&r, o, 0);
	return r.bad || r.p != r.end ? -1 : 0;
}

/* One array, NUL-terminated (the source is a C string too). The bytecode arrays share one section
 * and the sources another: what `require` reads sits together in the binary, and the sources (read
 * only by `scripts export`) are not paged in around it (the kernel maps file pages 64 KiB at a time:
 * interleaved, a run paged in most of both). */
static void print_bytes(const char *tag, int i, const struct buf *b)
{
	printf("static const unsigned char %s%d[] __attribute__((section(\".rodata.moonadm_%s\"))) = {", tag, i,
	       *tag == 'b' ? "code" : "src");
	for (size_t k = 0; k < b->n; k++)
		printf("%s%d,", (k % 24) ? "" : "\n", b->p[k]);
	printf("0};\n");
}

static int by_name(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b); /* the name is each entry's first member */
}

/* The files in emitting order: those whose module --order names first, in its order. */
static int *emit_order(const char *order_file, const char *prefix, int first, int argc, char **argv)
{
	size_t plen = strlen(prefix);
	int *files = calloc((size_t)argc, sizeof *files), n = 0;
	char *taken = calloc((size_t)argc, 1);
	if (!files || !taken) {
		fprintf(stderr, "embed: out of memory\n");
		exit(1);
	}
	FILE *f = order_file ? fopen(order_file, "r") : NULL;
	if (order_file && !f) {
		perror(order_file);
		exit(1);
	}
	char line[512], name[512];
	while (f && fgets(line, sizeof line, f)) {
		line[strcspn(line, "\r\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		for (int i = first; i < argc; i++) {
			const char *rel = argv[i];
			if (strncmp(rel, prefix, plen) == 0 && rel[plen] == '/')
				rel += plen + 1;
			int hit = 0;
			for (int pkg = 0; pkg < 2 && !hit; pkg++)
				hit = module_name(rel, name, sizeof name, pkg) && !strcmp(name, line);
			if (hit && !taken[i]) {
				taken[i] = 1;
				files[n++] = i;
			}
		}
	}
	if (f)
		fclose(f);
	for (int i = first; i < argc; i++)
		if (!taken[i])
			files[n++] = i;
	free(taken);
	return files;
}

int main(int argc, char **argv)
{
	const char *order_file = NULL;
	int first = 1;
	if (argc > 2 && !strcmp(argv[1], "--order"))
		order_file = argv[2], first = 3;
	if (argc < first + 1) {
		fprintf(stderr, "usage: embed [--order FILE] PREFIX FILE...\n");
		return 2;
	}
	const char *prefix = argv[first++];
	size_t plen = strlen(prefix);
	lua_State *L = luaL_newstate();
	if (!L) {
		fprintf(stderr, "embed: out of memory\n");
		return 1;
	}
	printf("/* generated by tools/embed.c: do not edit */\n#include <stddef.h>\n#include \"scripts_embed.h\"\n");
	int *files = emit_order(order_file, prefix, first, argc, argv);
	for (int k = 0; k < argc - first; k++) {
		int i = files[k];
		FILE *f = fopen(argv[i], "rb");
		if (!f) {
			perror(argv[i]);
			return 1;
		}
		struct buf src = {0};
		int c;
		while ((c = fgetc(f)) != EOF)
			if (put(&src, (unsigned char)c)) return 1;
		fclose(f);
		const char *rel = argv[i];
		if (strncmp(rel, prefix, plen) == 0 && rel[plen] == '/')
			rel += plen + 1;
		char chunk[600];
		snprintf(chunk, sizeof chunk, "@scripts/%s", rel); /* the name errors and tracebacks show */
		struct buf code = {0};
		if (luaL_loadbufferx(L, (const char *)src.p, src.n, chunk, "t") != LUA_OK) {
			fprintf(stderr, "embed: %s\n", lua_tostring(L, -1));
			return 1;
		}
		struct buf full = {0};
		if (lua_dump(L, writer, &full, 0) != 0 || strip_names(&full, &code) != 0) {
			fprintf(stderr, "embed: %s: cannot dump the compiled chunk (not Lua 5.4's format?)\n", argv[i]);
			return 1;
		}
		lua_pop(L, 1);
		if (luaL_loadbufferx(L, (const char *)code.p, code.n, chunk, "b") != LUA_OK) {
			fprintf(stderr, "embed: %s: the stripped chunk does not load: %s\n", argv[i], lua_tostring(L, -1));
			return 1;
		}
		lua_pop(L, 1);
		free(full.p);
		print_bytes("s", i, &src);
		print_bytes("b", i, &code);
		free(src.p), free(code.p);
	}
	lua_close(L);
	free(files);
	/* sorted by module name: the host finds a module by binary search (bindings/main.c) */
	struct entry { char name[512]; const char *rel; int i; } *ents = calloc((size_t)argc * 2, sizeof *ents);
	size_t n = 0;
	if (!ents) {
		fprintf(stderr, "embed: out of memory\n");
		return 1;
	}
	for (int i = first; i < argc; i++) {
		const char *rel = argv[i];
		if (strncmp(rel, prefix, plen) == 0 && rel[plen] == '/')
			rel += plen + 1;
		/* a/init.lua is both module "a.init" and package "a", as with Lua's own path search */
		for (int pkg = 0; pkg < 2; pkg++)
			if (module_name(rel, ents[n].name, sizeof ents[n].name, pkg)) {
				ents[n].rel = rel;
				ents[n].i = i;
				n++;
			}
	}
	qsort(ents, n, sizeof *ents, by_name);
	for (size_t k = 1; k < n; k++)
		if (!strcmp(ents[k - 1].name, ents[k].name)) {
			fprintf(stderr, "embed: module %s is both %s and %s\n", ents[k].name, ents[k - 1].rel, ents[k].rel);
			return 1;
		}
	printf("const struct ma_script ma_scripts[] = {\n");
	for (size_t k = 0; k < n; k++)
		printf("\t{\"%s\", \"%s\", \"@scripts/%s\", s%d, sizeof s%d - 1, b%d, sizeof b%d - 1},\n", ents[k].name,
		       ents[k].rel, ents[k].rel, ents[k].i, ents[k].i, ents[k].i, ents[k].i);
	free(ents);
	printf("\t{NULL, NULL, NULL, NULL, 0, NULL, 0}\n};\nconst size_t ma_scripts_count = %zu;\n", n);
	return 0;
}
