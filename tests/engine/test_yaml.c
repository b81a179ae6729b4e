/* engine/yaml_doc: parse with lines, scalar resolution, errors, kubeadm-style emit. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "t.h"
#include "yaml_doc.h"

static const ma_ynode *get(const ma_ynode *map, const char *key)
{
	for (size_t i = 0; i + 1 < map->n; i += 2)
		if (map->kids[i]->type == MA_Y_STR && strcmp(map->kids[i]->s, key) == 0)
			return map->kids[i + 1];
	return NULL;
}

static void test_parse_types_and_lines(void)
{
	const char *src = "kind: ClusterConfiguration\n"
			  "networking:\n"
			  "  podSubnet: 10.244.0.0/16\n"
			  "  port: 6443\n"
			  "  ratio: 0.5\n"
			  "  on: true\n"
			  "  nothing: ~\n"
			  "  quoted: \"6443\"\n"
			  "list: [a, b]\n"
			  "---\n"
			  "kind: InitConfiguration\n";
	ma_err e;
	ma_ynode *docs = ma_yaml_parse(src, strlen(src), "k.yaml", &e);
	CHECK(docs != NULL, "%s", e.msg);
	if (!docs)
		return;
	CHECK(docs->n == 2, "two documents, got %zu", docs->n);
	const ma_ynode *net = get(docs->kids[0], "networking");
	CHECK(net && net->type == MA_Y_MAP && net->line == 3, "networking map at line 3");
	CHECK(get(net, "podSubnet")->type == MA_Y_STR, "cidr is a string");
	CHECK(get(net, "port")->type == MA_Y_INT && get(net, "port")->i == 6443, "int");
	CHECK(get(net, "ratio")->type == MA_Y_FLOAT, "float");
	CHECK(get(net, "on")->type == MA_Y_BOOL && get(net, "on")->b == 1, "bool");
	CHECK(get(net, "nothing")->type == MA_Y_NULL, "null");
	CHECK(get(net, "quoted")->type == MA_Y_STR, "quoted stays a string");
	CHECK(get(docs->kids[0], "list")->n == 2, "flow list");
	ma_ynode_free(docs);
}

static void test_errors(void)
{
	ma_err e;
	const char *dup = "a: 1\nb: 2\na: 3\n";
	CHECK(ma_yaml_parse(dup, strlen(dup), "dup.yaml", &e) == NULL, "duplicate key");
	CHECK_STR(e.msg, "dup.yaml:3:1: duplicate key \"a\" (first at line 1)");
	const char *bad = "a:\n  - x\n  y: 1\n";
	CHECK(ma_yaml_parse(bad, strlen(bad), "bad.yaml", &e) == NULL, "syntax error");
	CHECK(strncmp(e.msg, "bad.yaml:3:", 11) == 0, "%s", e.msg);
	const char *alias = "a: *nope\n";
	CHECK(ma_yaml_parse(alias, strlen(alias), "al.yaml", &e) == NULL, "unknown anchor");
}

/* A growing buffer for generated inputs. */
struct gen {
	char *p;
	size_t n, cap;
};

static void gen_add(struct gen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void gen_add(struct gen *g, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int w = vsnprintf(g->p ? g->p + g->n : NULL, g->p ? g->cap - g->n : 0, fmt, ap);
		va_end(ap);
		if (w >= 0 && g->p && (size_t)w < g->cap - g->n) {
			g->n += (size_t)w;
			return;
		}
		g->cap = g->cap ? g->cap * 2 : 4096;
		while (w >= 0 && g->cap - g->n <= (size_t)w)
			g->cap *= 2;
		g->p = realloc(g->p, g->cap);
		if (!g->p)
			abort();
	}
}

/* The billion laughs: 9 aliases of 9 aliases of ... (issue 18, defect 1: 432 bytes, 7 levels,
 * took 2.8 GB). */
static char *alias_bomb(int levels)
{
	struct gen g = {0};
	gen_add(&g, "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\na0: &a0 [x, x, x, x, x, x, x, x, x]\n");
	for (int i = 1; i < levels; i++) {
		gen_add(&g, "a%d: &a%d [*a%d", i, i, i - 1);
		for (int j = 1; j < 9; j++)
			gen_add(&g, ", *a%d", i - 1);
		gen_add(&g, "]\n");
	}
	return g.p;
}

static void test_alias_bomb(void)
{
	ma_err e;
	ma_yaml_stats st;
	for (int levels = 7; levels <= 12; levels += 5) {
		char *src = alias_bomb(levels);
		ma_ynode *docs = ma_yaml_parse_ex(src, strlen(src), "bomb.yaml", NULL, &st, &e);
		CHECK(docs == NULL, "an alias bomb of %d levels is refused", levels);
		ma_ynode_free(docs);
		CHECK(strncmp(e.msg, "bomb.yaml:6:15: document contains excessive aliasing", 52) == 0, "%s", e.msg);
		/* refused before it grows: a few thousand nodes made, not 9^levels */
		CHECK(st.nodes < 5000 && st.alias_nodes < 5000, "nodes %zu, from aliases %zu", st.nodes, st.alias_nodes);
		free(src);
	}
	/* 3 levels: 90 + 819 copies, 929 nodes in all, under yaml.v2's floor of 1000: decoded */
	char *small = alias_bomb(3);
	ma_ynode *docs = ma_yaml_parse_ex(small, strlen(small), "small.yaml", NULL, &st, &e);
	CHECK(docs != NULL, "%s", e.msg);
	CHECK(st.alias_nodes == 909 && st.nodes == 929, "nodes %zu, from aliases %zu", st.nodes, st.alias_nodes);
	ma_ynode_free(docs);
	free(small);
	/* real use: one anchor reused a few times, in a big document (yaml.v2 allows 99% from aliases) */
	struct gen g = {0};
	gen_add(&g, "base: &b {image: registry.k8s.io/pause:3.10, pullPolicy: IfNotPresent}\nitems:\n");
	for (int i = 0; i < 2000; i++)
		gen_add(&g, "- {name: c%d, spec: *b}\n", i);
	docs = ma_yaml_parse_ex(g.p, g.n, "reuse.yaml", NULL, &st, &e);
	CHECK(docs != NULL, "%s", e.msg);
	CHECK(st.alias_nodes == 2000 * 5, "alias nodes %zu", st.alias_nodes);
	ma_ynode_free(docs);
	free(g.p);
}

static void test_budgets(void)
{
	ma_err e;
	ma_yaml_stats st;
	ma_yaml_limits lim = ma_yaml_default_limits();
	CHECK(lim.max_bytes == MA_YAML_MAX_BYTES && lim.max_nodes == MA_YAML_MAX_NODES && lim.max_depth == MA_YAML_MAX_DEPTH &&
		      lim.max_keys == MA_YAML_MAX_KEYS && lim.max_scalar_bytes == MA_YAML_MAX_SCALAR_BYTES,
	      "defaults");
	/* size: refused before parsing */
	ma_yaml_limits small = {.max_bytes = 10};
	CHECK(ma_yaml_parse_ex("a: 1\nb: 2\nc: 3\n", 15, "big.yaml", &small, &st, &e) == NULL, "too big");
	CHECK(strstr(e.msg, "big.yaml: 15 bytes of YAML, more than the 10 moonadm decodes") == e.msg, "%s", e.msg);
	CHECK(st.nodes == 0, "nothing parsed");
	/* depth: 600 nested flow sequences */
	struct gen g = {0};
	for (int i = 0; i < 600; i++)
		gen_add(&g, "[");
	for (int i = 0; i < 600; i++)
		gen_add(&g, "]");
	CHECK(ma_yaml_parse_ex(g.p, g.n, "deep.yaml", NULL, &st, &e) == NULL, "too deep");
	CHECK_STR(e.msg, "deep.yaml:1:513: mappings and sequences nested more than 512 deep: moonadm decodes at most 512 "
			 "levels; flatten the document");
	free(g.p);
	/* depth through aliases: 300 deep, aliased 300 deep (each alone is fine) */
	g = (struct gen){0};
	gen_add(&g, "a: &d ");
	for (int i = 0; i < 300; i++)
		gen_add(&g, "[");
	for (int i = 0; i < 300; i++)
		gen_add(&g, "]");
	gen_add(&g, "\nb: ");
	for (int i = 0; i < 300; i++)
		gen_add(&g, "[");
	gen_add(&g, "*d");
	for (int i = 0; i < 300; i++)
		gen_add(&g, "]");
	gen_add(&g, "\n");
	CHECK(ma_yaml_parse_ex(g.p, g.n, "deep.yaml", NULL, &st, &e) == NULL, "too deep through an alias");
	CHECK(strstr(e.msg, "deep.yaml:2:304: the alias *d nests mappings and sequences more than 512 deep") == e.msg, "%s",
	      e.msg);
	free(g.p);
	/* nodes */
	ma_yaml_limits few = {.max_nodes = 100};
	g = (struct gen){0};
	gen_add(&g, "[");
	for (int i = 0; i < 200; i++)
		gen_add(&g, "%d, ", i);
	gen_add(&g, "]\n");
	CHECK(ma_yaml_parse_ex(g.p, g.n, "n.yaml", &few, &st, &e) == NULL, "too many nodes");
	CHECK(strstr(e.msg, "n.yaml:1:") == e.msg && strstr(e.msg, "more than 100 YAML nodes"), "%s", e.msg);
	CHECK(st.nodes == 100, "stopped at the budget: %zu", st.nodes);
	free(g.p);
}

/* Issue 46, defect 3: the budgets counted nodes, not bytes: one 2 MiB scalar aliased 5 000 times
 * (a 2.1 MB file, 5 000 nodes) took ~10 GB. The bytes of every scalar made are charged now, an
 * alias's before it is copied. */
static void test_alias_bytes(void)
{
	ma_err e;
	ma_yaml_stats st;
	/* the file */
	char x[1025];
	memset(x, 'x', 1024);
	x[1024] = '\0';
	struct gen g = {0};
	gen_add(&g, "apiVersion: kubeadm.k8s.io/v1beta4\nkind: ClusterConfiguration\nc: [1");
	for (int i = 1; i < 200; i++)
		gen_add(&g, ",1");
	gen_add(&g, "]\na: &a ");
	for (int i = 0; i < 2 * 1024; i++)
		gen_add(&g, "%s", x);
	gen_add(&g, "\nb: [*a");
	for (int i = 1; i < 5000; i++)
		gen_add(&g, ",*a");
	gen_add(&g, "]\n");
	ma_ynode *docs = ma_yaml_parse_ex(g.p, g.n, "b.yaml", NULL, &st, &e);
	CHECK(docs == NULL, "refused");
	ma_ynode_free(docs);
	/* at the 63rd alias: the anchor and 62 copies are 63 * 2 MiB, the next would pass 128 MiB */
	CHECK(strstr(e.msg, "b.yaml:5:191: document contains excessive aliasing: the alias *a would copy 2097152 bytes of "
			    "text, past the 134217728 bytes (128 MiB) of scalars moonadm decodes per stream") == e.msg,
	      "%s", e.msg);
	CHECK(st.alias_nodes == 62 && st.scalar_bytes <= MA_YAML_MAX_SCALAR_BYTES, "copies %zu, bytes %zu", st.alias_nodes,
	      st.scalar_bytes);
	free(g.p);

	/* every scalar made counts, parsed or copied: 1 + 3 + 1 parsed, 2 * 3 copied */
	const char *two = "a: &a xyz\nb: [*a, *a]\n";
	docs = ma_yaml_parse_ex(two, strlen(two), "s.yaml", NULL, &st, &e);
	CHECK(docs && st.scalar_bytes == 11 && st.alias_nodes == 2, "%zu bytes", st.scalar_bytes);
	ma_ynode_free(docs);
	ma_yaml_limits lim = {.max_scalar_bytes = 11}; /* the budget itself is allowed */
	docs = ma_yaml_parse_ex(two, strlen(two), "s.yaml", &lim, &st, &e);
	CHECK(docs && st.scalar_bytes == 11, "%s", docs ? "" : e.msg);
	ma_ynode_free(docs);
	lim.max_scalar_bytes = 10;
	CHECK(ma_yaml_parse_ex(two, strlen(two), "s.yaml", &lim, &st, &e) == NULL, "one byte over");
	CHECK_STR(e.msg, "s.yaml:2:9: document contains excessive aliasing: the alias *a would copy 3 bytes of text, past "
			 "the 10 bytes (0 MiB) of scalars moonadm decodes per stream, aliases expanded; write the values out "
			 "instead of repeating large anchors");
	CHECK(st.scalar_bytes == 8 && st.alias_nodes == 1, "charged only what was made: %zu", st.scalar_bytes);
	lim.max_scalar_bytes = 4; /* parsed text alone */
	CHECK(ma_yaml_parse_ex(two, strlen(two), "s.yaml", &lim, &st, &e) == NULL, "parsed text over");
	CHECK_STR(e.msg, "s.yaml:2:1: more than 4 bytes (0 MiB) of scalars, aliases expanded: moonadm decodes at most that "
			 "per stream; split the input");

	/* a mapping aliased: m, its 15 bytes of text, n; each copy 14, as a number's text is not copied */
	const char *map = "m: &m {image: pause, port: 1}\nn: [*m, *m]\n";
	docs = ma_yaml_parse_ex(map, strlen(map), "m.yaml", NULL, &st, &e);
	CHECK(docs && st.scalar_bytes == 1 + 15 + 1 + 2 * 14, "%zu bytes", st.scalar_bytes);
	CHECK(docs && strcmp(get(docs->kids[0], "n")->kids[1]->kids[1]->s, "pause") == 0, "the copy is the anchor's value");
	ma_ynode_free(docs);

	/* a long key aliased into 100 mappings: charged at every copy, exactly up to the budget */
	g = (struct gen){0};
	gen_add(&g, "k: &k %.200s\nl:\n", x);
	for (int i = 0; i < 100; i++)
		gen_add(&g, "- {*k : %d}\n", i);
	lim.max_scalar_bytes = 1 + 200 + 1 + 100 * 200 + 190; /* "0".."99" charged as parsed */
	docs = ma_yaml_parse_ex(g.p, g.n, "k.yaml", &lim, &st, &e);
	CHECK(docs && st.scalar_bytes == lim.max_scalar_bytes, "%s", docs ? "" : e.msg);
	ma_ynode_free(docs);
	lim.max_scalar_bytes -= 3; /* short of the last copy, not only of the "99" after it */
	CHECK(ma_yaml_parse_ex(g.p, g.n, "k.yaml", &lim, &st, &e) == NULL, "three bytes short");
	CHECK(strstr(e.msg, "k.yaml:102:4: document contains excessive aliasing: the alias *k would copy 200 bytes") == e.msg,
	      "%s", e.msg);
	free(g.p);
}

/* Issue 18, defect 3: the duplicate-key check compared each key with every earlier one (100 000
 * keys: 52 s). It is now a hash set per mapping: about one comparison per key. */
static void test_many_keys(void)
{
	ma_err e;
	ma_yaml_stats st;
	struct gen g = {0};
	const size_t n = 200000;
	for (size_t i = 0; i < n; i++)
		gen_add(&g, "k%06zu: %zu\n", i, i);
	ma_ynode *docs = ma_yaml_parse_ex(g.p, g.n, "keys.yaml", NULL, &st, &e);
	CHECK(docs != NULL, "%s", e.msg);
	CHECK(docs && docs->kids[0]->n == 2 * n, "every key");
	/* linear: the quadratic check made n*(n-1)/2 = 2e10 comparisons */
	CHECK(st.key_compares < 2 * n, "%zu key comparisons for %zu keys", st.key_compares, n);
	ma_ynode_free(docs);
	/* a duplicate at the end: the same message and position as ever */
	gen_add(&g, "k000005: again\n");
	CHECK(ma_yaml_parse_ex(g.p, g.n, "keys.yaml", NULL, &st, &e) == NULL, "duplicate");
	CHECK_STR(e.msg, "keys.yaml:200001:1: duplicate key \"k000005\" (first at line 6)");
	CHECK(st.key_compares < 2 * n, "%zu key comparisons", st.key_compares);
	/* and in a small mapping, and a key equal but for its length */
	const char *dup = "m:\n  a: 1\n  ab: 2\n  a\\0: 3\nn: {x: 1, y: 2, x: 3}\n";
	CHECK(ma_yaml_parse(dup, strlen(dup), "d.yaml", &e) == NULL, "small duplicate");
	CHECK_STR(e.msg, "d.yaml:5:17: duplicate key \"x\" (first at line 5)");
	/* the keys budget */
	ma_yaml_limits lim = {.max_keys = 100000};
	CHECK(ma_yaml_parse_ex(g.p, g.n, "keys.yaml", &lim, &st, &e) == NULL, "too many keys");
	CHECK_STR(e.msg, "keys.yaml:100001:1: the mapping that starts at line 1 has more than 100000 keys: moonadm "
			 "decodes at most 100000 keys per mapping; split the data");
	free(g.p);
	/* anchors are looked up in a hash too: 50 000 anchors, each aliased once */
	g = (struct gen){0};
	for (int i = 0; i < 50000; i++)
		gen_add(&g, "- &a%d v%d\n- *a%d\n", i, i, i);
	docs = ma_yaml_parse_ex(g.p, g.n, "anchors.yaml", NULL, &st, &e);
	CHECK(docs && docs->kids[0]->n == 100000, "%s", e.msg);
	CHECK(docs && strcmp(docs->kids[0]->kids[99999]->s, "v49999") == 0, "the alias is its anchor's value");
	ma_ynode_free(docs);
	free(g.p);
	/* an anchor defined again: an alias means the latest */
	const char *re = "- &a one\n- &a two\n- *a\n";
	docs = ma_yaml_parse(re, strlen(re), "re.yaml", &e);
	CHECK(docs && strcmp(docs->kids[0]->kids[2]->s, "two") == 0, "latest anchor");
	ma_ynode_free(docs);
}

/* Issue 18, defect 10: libyaml's reader errors said 1:1 wherever the bad byte was. */
static void test_error_positions(void)
{
	ma_err e;
	const char *utf = "a: 1\nb: 2\nc: \xff\xfe bad\n";
	CHECK(ma_yaml_parse(utf, strlen(utf), "u.yaml", &e) == NULL, "bad UTF-8");
	CHECK_STR(e.msg, "u.yaml:3:4: invalid leading UTF-8 octet 0xff (byte 13): YAML must be UTF-8 text without "
			 "control characters");
	const char *ctl = "a: 1\nb:\n  c: \"\xc3\xa9\x01\"\n"; /* columns count characters, as libyaml's */
	CHECK(ma_yaml_parse(ctl, strlen(ctl), "c.yaml", &e) == NULL, "control character");
	CHECK_STR(e.msg, "c.yaml:3:8: control characters are not allowed 0x01 (byte 16): YAML must be UTF-8 text "
			 "without control characters");
	const char *crlf = "a: 1\r\nb: 2\r\n\r\nc: \x80\n";
	CHECK(ma_yaml_parse(crlf, strlen(crlf), "w.yaml", &e) == NULL, "CRLF");
	CHECK(strncmp(e.msg, "w.yaml:4:4: ", 12) == 0, "%s", e.msg);
	const char *bom = "\xef\xbb\xbf" "a: \xff\n";
	CHECK(ma_yaml_parse(bom, strlen(bom), "b.yaml", &e) == NULL, "BOM");
	CHECK(strncmp(e.msg, "b.yaml:1:4: ", 12) == 0, "%s", e.msg);
	/* scanner errors: the problem's mark, and where the construct began */
	const char *q = "a: 1\nb: 2\nc: \"unterminated\n";
	CHECK(ma_yaml_parse(q, strlen(q), "q.yaml", &e) == NULL, "unterminated");
	CHECK_STR(e.msg, "q.yaml:4:1: found unexpected end of stream while scanning a quoted scalar that starts at 3:4");
	const char *f = "a: 1\nb: [1, 2\nc: 3\n";
	CHECK(ma_yaml_parse(f, strlen(f), "f.yaml", &e) == NULL, "flow");
	CHECK_STR(e.msg, "f.yaml:3:2: did not find expected ',' or ']' while parsing a flow sequence that starts at 2:4");
	const char *at = "a: 1\nb: 2\nc: @x\n";
	CHECK(ma_yaml_parse(at, strlen(at), "at.yaml", &e) == NULL, "reserved");
	CHECK_STR(e.msg, "at.yaml:3:4: found character that cannot start any token while scanning for the next token");
	const char *alias = "a: 1\nb: *nope\n";
	CHECK(ma_yaml_parse(alias, strlen(alias), "al.yaml", &e) == NULL, "unknown anchor");
	CHECK_STR(e.msg, "al.yaml:2:4: unknown anchor \"nope\": define it (&nope) before its alias *nope");
	/* each document's line */
	const char *docs2 = "a: 1\n---\n- x\n---\nplain\n";
	ma_ynode *d = ma_yaml_parse(docs2, strlen(docs2), "d.yaml", &e);
	CHECK(d && d->n == 3 && d->line == 1 && d->kids[0]->line == 1 && d->kids[1]->line == 3 && d->kids[2]->line == 5,
	      "document lines");
	ma_ynode_free(d);
}

static void test_emit_sorted_and_quoted(void)
{
	const char *src = "spec:\n  containers:\n  - name: x\n    command: [kube-apiserver, --a=b]\n"
			  "b10: 1\nb9: 2\nkind: Pod\napiVersion: v1\nflag: \"true\"\nempty: \"\"\nnum: \"10\"\n"
			  "text: \"line1\\nline2\\n\"\nnone: {}\nzero: []\n";
	ma_err e;
	ma_ynode *docs = ma_yaml_parse(src, strlen(src), "x", &e);
	CHECK(docs != NULL, "%s", e.msg);
	if (!docs)
		return;
	char *out;
	CHECK(ma_yaml_emit(docs, &out, NULL, &e) == 0, "%s", e.msg);
	CHECK_STR(out, "apiVersion: v1\n"
		       "b9: 2\n"
		       "b10: 1\n"
		       "empty: \"\"\n"
		       "flag: \"true\"\n"
		       "kind: Pod\n"
		       "none: {}\n"
		       "num: \"10\"\n"
		       "spec:\n"
		       "  containers:\n"
		       "  - command:\n"
		       "    - kube-apiserver\n"
		       "    - --a=b\n"
		       "    name: x\n"
		       "text: |\n"
		       "  line1\n"
		       "  line2\n"
		       "zero: []\n");
	free(out);
	ma_ynode_free(docs);
}

static void test_key_order(void)
{
	CHECK(ma_yaml_key_less("a2", "a10"), "numbers compare as numbers");
	CHECK(ma_yaml_key_less("apiVersion", "kind"), "letters");
	CHECK(!ma_yaml_key_less("kind", "apiVersion"), "letters, reversed");
	CHECK(ma_yaml_key_less("a", "ab"), "prefix first");
	CHECK(ma_yaml_plain_is_nonstring("yes") && ma_yaml_plain_is_nonstring("0x1F") && !ma_yaml_plain_is_nonstring("v1.35.4"),
	      "YAML 1.1 words and numbers need quotes, versions don't");
}

int main(void)
{
	RUN(test_parse_types_and_lines);
	RUN(test_errors);
	RUN(test_alias_bomb);
	RUN(test_budgets);
	RUN(test_alias_bytes);
	RUN(test_many_keys);
	RUN(test_error_positions);
	RUN(test_emit_sorted_and_quoted);
	RUN(test_key_order);
	DONE();
}
