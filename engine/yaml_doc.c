#include "yaml_doc.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <yaml.h>

ma_ynode *ma_ynode_new(enum ma_ytype type)
{
	ma_ynode *n = calloc(1, sizeof *n);
	if (n)
		n->type = type;
	return n;
}

ma_ynode *ma_ynode_str(const char *s, size_t len)
{
	ma_ynode *n = ma_ynode_new(MA_Y_STR);
	if (!n)
		return NULL;
	n->s = malloc(len + 1);
	if (!n->s) {
		free(n);
		return NULL;
	}
	memcpy(n->s, s, len);
	n->s[len] = '\0';
	n->slen = len;
	return n;
}

int ma_ynode_push(ma_ynode *p, ma_ynode *c)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 8;
		ma_ynode **k = realloc(p->kids, cap * sizeof *k);
		if (!k)
			return -1;
		p->kids = k;
		p->cap = cap;
	}
	p->kids[p->n++] = c;
	return 0;
}

void ma_ynode_free(ma_ynode *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n; i++)
		ma_ynode_free(n->kids[i]);
	free(n->kids);
	free(n->s);
	free(n);
}

static ma_ynode *copy_node(const ma_ynode *n)
{
	ma_ynode *c = n->type == MA_Y_STR ? ma_ynode_str(n->s, n->slen) : ma_ynode_new(n->type);
	if (!c)
		return NULL;
	c->line = n->line, c->col = n->col, c->i = n->i, c->f = n->f, c->b = n->b;
	for (size_t i = 0; i < n->n; i++) {
		ma_ynode *k = copy_node(n->kids[i]);
		if (!k || ma_ynode_push(c, k)) {
			ma_ynode_free(k);
			ma_ynode_free(c);
			return NULL;
		}
	}
	return c;
}

/* ---- scalar resolution (YAML 1.2 core schema, for plain scalars only) ---- */

static int match_int(const char *s, long long *out)
{
	char *end;
	const char *p = s;
	int base = 10;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'o') && p[2]) {
		base = p[1] == 'x' ? 16 : 8;
		p += 2;
	} else {
		const char *q = p + (*p == '-' || *p == '+');
		if (!*q)
			return 0;
		for (; *q; q++)
			if (!isdigit((unsigned char)*q))
				return 0;
	}
	errno = 0;
	long long v = strtoll(p, &end, base);
	if (*end || errno)
		return 0;
	*out = v;
	return 1;
}

static int match_float(const char *s, double *out)
{
	const char *p = s + (*s == '-' || *s == '+');
	if (!strcmp(p, ".inf") || !strcmp(p, ".Inf") || !strcmp(p, ".INF")) {
		*out = *s == '-' ? -INFINITY : INFINITY;
		return 1;
	}
	if (!strcmp(s, ".nan") || !strcmp(s, ".NaN") || !strcmp(s, ".NAN")) {
		*out = NAN;
		return 1;
	}
	/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
	const char *q = p;
	int digits = 0;
	while (isdigit((unsigned char)*q))
		q++, digits++;
	if (*q == '.') {
		q++;
		while (isdigit((unsigned char)*q))
			q++, digits++;
	}
	if (!digits)
		return 0;
	if (*q == 'e' || *q == 'E') {
		q++;
		if (*q == '-' || *q == '+')
			q++;
		if (!isdigit((unsigned char)*q))
			return 0;
		while (isdigit((unsigned char)*q))
			q++;
	}
	if (*q)
		return 0;
	*out = strtod(s, NULL);
	return 1;
}

static int is_null(const char *s)
{
	return !*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL");
}

static int is_bool(const char *s, int *b)
{
	static const char *t[] = {"true", "True", "TRUE"}, *f[] = {"false", "False", "FALSE"};
	for (int i = 0; i < 3; i++) {
		if (!strcmp(s, t[i]))
			return *b = 1, 1;
		if (!strcmp(s, f[i]))
			return *b = 0, 1;
	}
	return 0;
}

int ma_yaml_plain_is_nonstring(const char *s)
{
	/* Also the YAML 1.1 words Go's yaml.v2 reads as booleans, so what we write reads back as a
	 * string in kubeadm too. */
	static const char *yaml11[] = {"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
				       "on", "On", "ON", "off", "Off", "OFF", "<<", NULL};
	long long i;
	double f;
	int b;
	for (int k = 0; yaml11[k]; k++)
		if (!strcmp(s, yaml11[k]))
			return 1;
	return is_null(s) || is_bool(s, &b) || match_int(s, &i) || match_float(s, &f);
}

static void resolve_plain(ma_ynode *n, const char *s, size_t len)
{
	if (strlen(s) != len) /* embedded NUL: keep as string */
		return;
	if (is_null(s)) {
		n->type = MA_Y_NULL;
	} else if (is_bool(s, &n->b)) {
		n->type = MA_Y_BOOL;
	} else if (match_int(s, &n->i)) {
		n->type = MA_Y_INT;
	} else if (match_float(s, &n->f)) {
		n->type = MA_Y_FLOAT;
	}
}

/* ---- parsing ---- */

ma_yaml_limits ma_yaml_default_limits(void)
{
	ma_yaml_limits l = {MA_YAML_MAX_BYTES, MA_YAML_MAX_NODES, MA_YAML_MAX_DEPTH, MA_YAML_MAX_KEYS,
			    MA_YAML_MAX_SCALAR_BYTES};
	return l;
}

/* SipHash-1-3 under a random key drawn per parse: the hash sets below cannot be flooded with
 * keys crafted to collide (which would make the duplicate-key check quadratic again). */
static uint64_t rotl64(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

#define SIPROUND                                                                         \
	do {                                                                             \
		v0 += v1, v1 = rotl64(v1, 13), v1 ^= v0, v0 = rotl64(v0, 32);            \
		v2 += v3, v3 = rotl64(v3, 16), v3 ^= v2;                                 \
		v0 += v3, v3 = rotl64(v3, 21), v3 ^= v0;                                 \
		v2 += v1, v1 = rotl64(v1, 17), v1 ^= v2, v2 = rotl64(v2, 32);            \
	} while (0)

static uint64_t siphash13(const void *data, size_t len, const uint64_t k[2])
{
	const unsigned char *in = data;
	uint64_t v0 = 0x736f6d6570736575ULL ^ k[0], v1 = 0x646f72616e646f6dULL ^ k[1];
	uint64_t v2 = 0x6c7967656e657261ULL ^ k[0], v3 = 0x7465646279746573ULL ^ k[1];
	uint64_t b = (uint64_t)len << 56, m;
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		memcpy(&m, in + i, 8); /* little-endian hosts; on others the hash differs, still keyed */
		v3 ^= m;
		SIPROUND;
		v0 ^= m;
	}
	for (size_t j = 0; i + j < len; j++)
		b |= (uint64_t)in[i + j] << (8 * j);
	v3 ^= b;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

/* An open-addressing set of indices (1 + index; 0 is empty) with 32 bits of each entry's hash.
 * Used for the string keys of one mapping and for the anchors of a stream. */
struct hslot {
	uint32_t idx, h;
};

struct hset {
	struct hslot *slot;
	size_t cap, used; /* cap: 0 or a power of two, at least twice used */
};

static int hset_grow(struct hset *s)
{
	size_t cap = s->cap ? s->cap * 2 : 64;
	struct hslot *n = calloc(cap, sizeof *n);
	if (!n)
		return -1;
	for (size_t i = 0; i < s->cap; i++) {
		if (!s->slot[i].idx)
			continue;
		size_t j = s->slot[i].h & (cap - 1);
		while (n[j].idx)
			j = (j + 1) & (cap - 1);
		n[j] = s->slot[i];
	}
	free(s->slot);
	s->slot = n;
	s->cap = cap;
	return 0;
}

struct anchor {
	char *name;
	ma_ynode *node; /* borrowed: owned by the tree */
};

struct frame {
	ma_ynode *node;
	struct hset keys; /* MA_Y_MAP with KEYSET_MIN or more keys: its string keys */
};

/* Below this many keys a mapping's keys are compared one by one (most mappings are small). */
#define KEYSET_MIN 16

struct parser {
	const char *name;
	ma_err *e;
	ma_yaml_limits lim;
	ma_yaml_stats st;
	struct frame *stack; /* lim.max_depth + 1 frames; stack[0] holds the stream */
	size_t depth;
	struct anchor *anchors;
	size_t nanchors, capanchors;
	struct hset anchorset;
	uint64_t key[2];
	int keyed;
};

static uint32_t hash_bytes(struct parser *p, const void *s, size_t len)
{
	if (!p->keyed) {
		if (getentropy(p->key, sizeof p->key) != 0) { /* no entropy: still varies per run */
			p->key[0] = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
			p->key[1] = (uint64_t)(uintptr_t)p ^ (uint64_t)clock();
		}
		p->keyed = 1;
	}
	return (uint32_t)siphash13(s, len, p->key);
}

static int oom(struct parser *p)
{
	return ma_fail(p->e, "%s: out of memory decoding YAML", p->name);
}

static int remember_anchor(struct parser *p, const unsigned char *anchor, ma_ynode *n)
{
	if (!anchor)
		return 0;
	const char *name = (const char *)anchor;
	uint32_t h = hash_bytes(p, name, strlen(name));
	if ((p->anchorset.used + 1) * 2 > p->anchorset.cap && hset_grow(&p->anchorset))
		return oom(p);
	size_t mask = p->anchorset.cap - 1, j = h & mask;
	for (; p->anchorset.slot[j].idx; j = (j + 1) & mask) {
		struct anchor *a = &p->anchors[p->anchorset.slot[j].idx - 1];
		if (p->anchorset.slot[j].h == h && !strcmp(a->name, name)) {
			a->node = n; /* an anchor defined again: the alias after it means the new node */
			return 0;
		}
	}
	if (p->nanchors == p->capanchors) {
		size_t cap = p->capanchors ? p->capanchors * 2 : 8;
		struct anchor *a = realloc(p->anchors, cap * sizeof *a);
		if (!a)
			return oom(p);
		p->anchors = a;
		p->capanchors = cap;
	}
	char *copy = strdup(name);
	if (!copy)
		return oom(p);
	p->anchors[p->nanchors].name = copy;
	p->anchors[p->nanchors++].node = n;
	p->anchorset.slot[j].idx = (uint32_t)p->nanchors;
	p->anchorset.slot[j].h = h;
	p->anchorset.used++;
	return 0;
}

static ma_ynode *find_anchor(struct parser *p, const char *name)
{
	if (!p->anchorset.cap)
		return NULL;
	uint32_t h = hash_bytes(p, name, strlen(name));
	size_t mask = p->anchorset.cap - 1;
	for (size_t j = h & mask; p->anchorset.slot[j].idx; j = (j + 1) & mask) {
		struct anchor *a = &p->anchors[p->anchorset.slot[j].idx - 1];
		if (p->anchorset.slot[j].h == h && !strcmp(a->name, name))
			return a->node;
	}
	return NULL;
}

/* Go yaml.v2's allowedAliasRatio: the share of nodes that may come from aliases. */
static double allowed_alias_ratio(size_t nodes)
{
	if (nodes <= 400000)
		return 0.99;
	if (nodes >= 4000000)
		return 0.10;
	return 0.99 - 0.89 * ((double)(nodes - 400000) / (double)(4000000 - 400000));
}

/* Counts `made` new nodes, `aliased` of them copied by the alias *alias_name (NULL: parsed), holding
 * `bytes` of scalar text, against the budgets (before they are made: the stats count only what
 * was). */
static int count_nodes(struct parser *p, size_t made, size_t aliased, size_t bytes, const char *alias_name, int line,
		       int col)
{
	size_t nodes = p->st.nodes + made, alias = p->st.alias_nodes + aliased;
	if (alias > 100 && nodes > 1000 && (double)alias / (double)nodes > allowed_alias_ratio(nodes))
		return ma_fail_kind(p->e, "too_large",
			       "%s:%d:%d: document contains excessive aliasing: %zu of its %zu nodes would be copies made "
			       "by aliases (kubeadm refuses it the same way); write the values out instead of "
			       "repeating anchors of anchors",
			       p->name, line, col, alias, nodes);
	if (nodes > p->lim.max_nodes)
		return ma_fail_kind(p->e, "too_large",
			       "%s:%d:%d: more than %zu YAML nodes (aliases expanded): moonadm decodes at most %zu "
			       "nodes per stream; split the input or use fewer aliases",
			       p->name, line, col, p->lim.max_nodes, p->lim.max_nodes);
	/* st.scalar_bytes never passes the budget, so the subtraction cannot wrap */
	if (bytes > p->lim.max_scalar_bytes - p->st.scalar_bytes) {
		if (alias_name)
			return ma_fail_kind(p->e, "too_large",
				       "%s:%d:%d: document contains excessive aliasing: the alias *%s would copy %zu bytes "
				       "of text, past the %zu bytes (%zu MiB) of scalars moonadm decodes per stream, "
				       "aliases expanded; write the values out instead of repeating large anchors",
				       p->name, line, col, alias_name, bytes, p->lim.max_scalar_bytes,
				       p->lim.max_scalar_bytes >> 20);
		return ma_fail_kind(p->e, "too_large",
			       "%s:%d:%d: more than %zu bytes (%zu MiB) of scalars, aliases expanded: moonadm decodes "
			       "at most that per stream; split the input",
			       p->name, line, col, p->lim.max_scalar_bytes, p->lim.max_scalar_bytes >> 20);
	}
	p->st.nodes = nodes, p->st.alias_nodes = alias, p->st.scalar_bytes += bytes;
	return 0;
}

/* The nodes under n (n included), counting no further than cap, the bytes copy_node copies for
 * their strings, and its nesting height (a scalar: 0; a mapping or sequence of scalars: 1). */
static size_t measure(const ma_ynode *n, size_t *count, size_t *bytes, size_t cap)
{
	size_t h = 0;
	if (++*count > cap)
		return 0;
	if (n->type == MA_Y_STR)
		*bytes += n->slen; /* no wrap: each string was charged, the sum stays within the budget */
	for (size_t i = 0; i < n->n && *count <= cap; i++) {
		size_t k = measure(n->kids[i], count, bytes, cap);
		if (k > h)
			h = k;
	}
	return n->type == MA_Y_MAP || n->type == MA_Y_SEQ ? h + 1 : 0;
}

static int key_equal(const ma_ynode *a, const ma_ynode *b)
{
	return a->slen == b->slen && memcmp(a->s, b->s, a->slen) == 0;
}

static int duplicate(struct parser *p, const ma_ynode *n, const ma_ynode *first)
{
	return ma_fail_kind(p->e, "malformed", "%s:%d:%d: duplicate key \"%s\" (first at line %d)", p->name, n->line,
			    n->col, n->s, first->line);
}

/* Checks a new key n of the mapping in frame f: the keys budget, then duplicates (string keys),
 * in time linear in the mapping's size. */
static int check_key(struct parser *p, struct frame *f, const ma_ynode *n)
{
	ma_ynode *top = f->node;
	size_t nkeys = top->n / 2;
	if (nkeys >= p->lim.max_keys)
		return ma_fail_kind(p->e, "too_large",
			       "%s:%d:%d: the mapping that starts at line %d has more than %zu keys: moonadm decodes at "
			       "most %zu keys per mapping; split the data",
			       p->name, n->line, n->col, top->line, p->lim.max_keys, p->lim.max_keys);
	if (n->type != MA_Y_STR)
		return 0;
	if (nkeys + 1 < KEYSET_MIN) {
		for (size_t i = 0; i < top->n; i += 2) {
			const ma_ynode *k = top->kids[i];
			if (k->type != MA_Y_STR)
				continue;
			p->st.key_compares++;
			if (key_equal(k, n))
				return duplicate(p, n, k);
		}
		return 0;
	}
	struct hset *s = &f->keys;
	if (!s->cap) { /* the mapping grew past KEYSET_MIN keys: hash the ones it has */
		for (size_t i = 0; i < top->n; i += 2) {
			const ma_ynode *k = top->kids[i];
			if (k->type != MA_Y_STR)
				continue;
			if ((s->used + 1) * 2 > s->cap && hset_grow(s))
				return oom(p);
			uint32_t h = hash_bytes(p, k->s, k->slen);
			size_t j = h & (s->cap - 1);
			while (s->slot[j].idx)
				j = (j + 1) & (s->cap - 1);
			s->slot[j].idx = (uint32_t)(i + 1);
			s->slot[j].h = h;
			s->used++;
		}
	}
	if ((s->used + 1) * 2 > s->cap && hset_grow(s))
		return oom(p);
	uint32_t h = hash_bytes(p, n->s, n->slen);
	size_t mask = s->cap - 1, j = h & mask;
	for (; s->slot[j].idx; j = (j + 1) & mask) {
		p->st.key_compares++;
		const ma_ynode *k = top->kids[s->slot[j].idx - 1];
		if (s->slot[j].h == h && key_equal(k, n))
			return duplicate(p, n, k);
	}
	s->slot[j].idx = (uint32_t)(top->n + 1); /* where n goes */
	s->slot[j].h = h;
	s->used++;
	return 0;
}

/* Adds a finished node to the container on top of the stack. */
static int attach(struct parser *p, ma_ynode *n)
{
	struct frame *f = &p->stack[p->depth - 1];
	ma_ynode *top = f->node;
	if (top->type == MA_Y_MAP && top->n % 2 == 0) { /* n is a key */
		if (n->type == MA_Y_MAP || n->type == MA_Y_SEQ) {
			int line = n->line, col = n->col;
			ma_ynode_free(n);
			return ma_fail_kind(p->e, "malformed", "%s:%d:%d: a mapping key must be a scalar", p->name, line, col);
		}
		if (check_key(p, f, n)) {
			ma_ynode_free(n);
			return -1;
		}
	}
	if (ma_ynode_push(top, n)) {
		ma_ynode_free(n);
		return oom(p);
	}
	return 0;
}

/* The line and column (1-based, in characters, as libyaml counts them) of a byte offset. */
static void mark_of_offset(const char *text, size_t len, size_t off, size_t *line, size_t *col)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t i = 0, l = 1, c = 1;
	if (off > len)
		off = len;
	if (len >= 3 && s[0] == 0xef && s[1] == 0xbb && s[2] == 0xbf)
		i = 3; /* the BOM takes no column */
	while (i < off) {
		if (s[i] == '\n' || s[i] == '\r') {
			if (s[i] == '\r' && i + 1 < off && s[i + 1] == '\n')
				i++;
			i++, l++, c = 1;
		} else if (s[i] == 0xc2 && i + 1 < off && s[i + 1] == 0x85) { /* NEL */
			i += 2, l++, c = 1;
		} else if (s[i] == 0xe2 && i + 2 < off && s[i + 1] == 0x80 && (s[i + 2] == 0xa8 || s[i + 2] == 0xa9)) {
			i += 3, l++, c = 1; /* LS, PS */
		} else {
			i++;
			while (i < off && (s[i] & 0xc0) == 0x80) /* one character */
				i++;
			c++;
		}
	}
	*line = l, *col = c;
}

/* libyaml's error, at its own marks: reader errors carry a byte offset, scanner and parser errors
 * a problem mark and often a context mark (where the construct it was reading began). */
static void libyaml_error(struct parser *p, const yaml_parser_t *yp, const char *text, size_t len)
{
	const char *problem = yp->problem ? yp->problem : "syntax error";
	switch (yp->error) {
	case YAML_MEMORY_ERROR:
		oom(p);
		return;
	case YAML_READER_ERROR: {
		int utf16 = len >= 2 && (((unsigned char)text[0] == 0xff && (unsigned char)text[1] == 0xfe) ||
					 ((unsigned char)text[0] == 0xfe && (unsigned char)text[1] == 0xff));
		char value[32] = "";
		if (yp->problem_value >= 0)
			snprintf(value, sizeof value, " 0x%02x", (unsigned)yp->problem_value);
		if (utf16) {
			ma_fail_kind(p->e, "malformed", "%s: byte %zu: %s%s: the file is not valid UTF-16; write YAML as UTF-8", p->name,
				yp->problem_offset, problem, value);
			return;
		}
		size_t line, col;
		mark_of_offset(text, len, yp->problem_offset, &line, &col);
		ma_fail_kind(p->e, "malformed", "%s:%zu:%zu: %s%s (byte %zu): YAML must be UTF-8 text without control characters",
			p->name, line, col, problem, value, yp->problem_offset);
		return;
	}
	case YAML_SCANNER_ERROR:
	case YAML_PARSER_ERROR:
		if (yp->context && (yp->context_mark.line != yp->problem_mark.line ||
				    yp->context_mark.column != yp->problem_mark.column))
			ma_fail_kind(p->e, "malformed", "%s:%zu:%zu: %s %s that starts at %zu:%zu", p->name, yp->problem_mark.line + 1,
				yp->problem_mark.column + 1, problem, yp->context, yp->context_mark.line + 1,
				yp->context_mark.column + 1);
		else
			ma_fail_kind(p->e, "malformed", "%s:%zu:%zu: %s%s%s", p->name, yp->problem_mark.line + 1,
				yp->problem_mark.column + 1, problem, yp->context ? " " : "", yp->context ? yp->context : "");
		return;
	default:
		ma_fail_kind(p->e, "malformed", "%s:%zu:%zu: %s", p->name, yp->problem_mark.line + 1,
			     yp->problem_mark.column + 1, problem);
		return;
	}
}

static size_t or_default(size_t v, size_t def)
{
	return v ? v : def;
}

ma_ynode *ma_yaml_parse(const char *text, size_t len, const char *name, ma_err *e)
{
	return ma_yaml_parse_ex(text, len, name, NULL, NULL, e);
}

/* One event of the stream, at line:col: the node it makes is checked against the budgets and attached
 * to the open container (or opens one). 0, or -1 with p->e set. */
static int on_scalar(struct parser *p, const yaml_event_t *ev, int line, int col)
{
	const char *s = (const char *)ev->data.scalar.value;
	if (count_nodes(p, 1, 0, ev->data.scalar.length, NULL, line, col))
		return -1;
	ma_ynode *n = ma_ynode_str(s, ev->data.scalar.length);
	if (!n)
		return oom(p);
	n->line = line, n->col = col;
	int str_tag = ev->data.scalar.tag && !strcmp((const char *)ev->data.scalar.tag, YAML_STR_TAG);
	if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !str_tag)
		resolve_plain(n, s, ev->data.scalar.length);
	if (remember_anchor(p, ev->data.scalar.anchor, n)) {
		ma_ynode_free(n);
		return -1;
	}
	return attach(p, n);
}

static int on_open(struct parser *p, const yaml_event_t *ev, int line, int col)
{
	int seq = ev->type == YAML_SEQUENCE_START_EVENT;
	if (p->depth > p->lim.max_depth)
		return ma_fail_kind(p->e, "too_large",
				    "%s:%d:%d: mappings and sequences nested more than %zu deep: moonadm decodes at "
				    "most %zu levels; flatten the document",
				    p->name, line, col, p->lim.max_depth, p->lim.max_depth);
	if (count_nodes(p, 1, 0, 0, NULL, line, col))
		return -1;
	ma_ynode *n = ma_ynode_new(seq ? MA_Y_SEQ : MA_Y_MAP);
	if (!n)
		return oom(p);
	n->line = line, n->col = col;
	if (remember_anchor(p, seq ? ev->data.sequence_start.anchor : ev->data.mapping_start.anchor, n)) {
		ma_ynode_free(n);
		return -1;
	}
	p->stack[p->depth].node = n;
	memset(&p->stack[p->depth].keys, 0, sizeof p->stack[p->depth].keys);
	p->depth++;
	if (p->depth - 1 > p->st.max_depth)
		p->st.max_depth = p->depth - 1;
	return 0;
}

static int on_close(struct parser *p)
{
	p->depth--;
	ma_ynode *n = p->stack[p->depth].node;
	free(p->stack[p->depth].keys.slot);
	p->stack[p->depth].keys.slot = NULL;
	return attach(p, n);
}

static int on_alias(struct parser *p, const yaml_event_t *ev, int line, int col)
{
	const char *a = (const char *)ev->data.alias.anchor;
	ma_ynode *target = find_anchor(p, a);
	if (!target)
		return ma_fail_kind(p->e, "malformed",
				    "%s:%d:%d: unknown anchor \"%s\": define it (&%s) before its alias *%s", p->name, line,
				    col, a, a, a);
	/* Refuse before copying: the copy's size and depth are known from the target. */
	size_t size = 0, bytes = 0, room = p->lim.max_nodes - p->st.nodes;
	size_t height = measure(target, &size, &bytes, room < ((size_t)-1) ? room + 1 : room);
	if (p->depth - 1 + height > p->lim.max_depth)
		return ma_fail_kind(p->e, "too_large",
				    "%s:%d:%d: the alias *%s nests mappings and sequences more than %zu deep: "
				    "moonadm decodes at most %zu levels; flatten the document",
				    p->name, line, col, a, p->lim.max_depth, p->lim.max_depth);
	if (count_nodes(p, size, size, bytes, a, line, col))
		return -1;
	ma_ynode *n = copy_node(target);
	if (!n)
		return oom(p);
	if (p->depth - 1 + height > p->st.max_depth)
		p->st.max_depth = p->depth - 1 + height;
	return attach(p, n);
}

/* The limits of a parse: lim's non-zero fields over the defaults, the depth capped for the C stack. */
static ma_yaml_limits parse_limits(const ma_yaml_limits *lim)
{
	ma_yaml_limits l = ma_yaml_default_limits();
	if (lim) {
		l.max_bytes = or_default(lim->max_bytes, l.max_bytes);
		l.max_nodes = or_default(lim->max_nodes, l.max_nodes);
		l.max_depth = or_default(lim->max_depth, l.max_depth);
		l.max_keys = or_default(lim->max_keys, l.max_keys);
		l.max_scalar_bytes = or_default(lim->max_scalar_bytes, l.max_scalar_bytes);
	}
	if (l.max_depth > ((size_t)1 << 20))
		l.max_depth = (size_t)1 << 20; /* the C recursion over a tree must fit the stack */
	return l;
}

/* Reads the stream's events into the open containers of p until its end: 1, or 0 with p->e set. */
static int parse_events(struct parser *p, yaml_parser_t *yp, const char *text, size_t len)
{
	for (;;) {
		yaml_event_t ev;
		if (!yaml_parser_parse(yp, &ev)) {
			libyaml_error(p, yp, text, len);
			return 0;
		}
		int line = (int)ev.start_mark.line + 1, col = (int)ev.start_mark.column + 1;
		int rc = 0, done = 0;
		switch (ev.type) {
		case YAML_STREAM_END_EVENT: done = 1; break;
		case YAML_SCALAR_EVENT: rc = on_scalar(p, &ev, line, col); break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT: rc = on_open(p, &ev, line, col); break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT: rc = on_close(p); break;
		case YAML_ALIAS_EVENT: rc = on_alias(p, &ev, line, col); break;
		default: break; /* an empty document ("---" alone) is a null document */
		}
		yaml_event_delete(&ev);
		if (rc)
			return 0;
		if (done)
			return 1;
	}
}

/* Frees what the parser holds: containers still open after an error (attached to nothing yet), the
 * stack and the anchors. */
static void parser_free(struct parser *p)
{
	while (p->depth > 1) {
		p->depth--;
		free(p->stack[p->depth].keys.slot);
		ma_ynode_free(p->stack[p->depth].node);
	}
	free(p->stack);
	for (size_t i = 0; i < p->nanchors; i++)
		free(p->anchors[i].name);
	free(p->anchors);
	free(p->anchorset.slot);
}

ma_ynode *ma_yaml_parse_ex(const char *text, size_t len, const char *name, const ma_yaml_limits *lim,
			   ma_yaml_stats *st, ma_err *e)
{
	yaml_parser_t yp;
	struct parser p = {.name = name ? name : "<yaml>", .e = e, .lim = parse_limits(lim)};
	if (st)
		memset(st, 0, sizeof *st);
	if (len > p.lim.max_bytes) {
		ma_fail_kind(e, "too_large",
			     "%s: %zu bytes of YAML, more than the %zu moonadm decodes (%zu MiB); is it the right file?",
			     p.name, len, p.lim.max_bytes, p.lim.max_bytes >> 20);
		return NULL;
	}
	ma_ynode *docs = ma_ynode_new(MA_Y_SEQ);
	p.stack = calloc(p.lim.max_depth + 1, sizeof *p.stack);
	if (!docs || !p.stack || !yaml_parser_initialize(&yp)) {
		ma_ynode_free(docs);
		free(p.stack);
		ma_fail(e, "%s: out of memory decoding YAML", p.name);
		return NULL;
	}
	docs->line = docs->col = 1;
	yaml_parser_set_input_string(&yp, (const unsigned char *)text, len);
	p.stack[p.depth++].node = docs;
	int ok = parse_events(&p, &yp, text, len);
	parser_free(&p);
	yaml_parser_delete(&yp);
	if (st)
		*st = p.st;
	if (!ok) {
		ma_ynode_free(docs);
		return NULL;
	}
	return docs;
}

/* ---- emitting ---- */

int ma_yaml_key_less(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	for (size_t i = 0; i < la && i < lb; i++) {
		unsigned char ca = (unsigned char)a[i], cb = (unsigned char)b[i];
		if (ca == cb)
			continue;
		int al = isalpha(ca) || ca >= 0x80, bl = isalpha(cb) || cb >= 0x80;
		if (al && bl)
			return ca < cb;
		if (al || bl)
			return bl;
		/* Go's int arithmetic wraps (yaml.v2 keyLess); in C only unsigned arithmetic may: wrap
		 * there, compare as Go's signed ints. */
		unsigned long long an = 0, bn = 0;
		size_t ai, bi;
		if (ca == '0' || cb == '0') {
			for (size_t j = i; j-- > 0 && isdigit((unsigned char)a[j]);)
				if (a[j] != '0') {
					an = bn = 1;
					break;
				}
		}
		for (ai = i; ai < la && isdigit((unsigned char)a[ai]); ai++)
			an = an * 10 + (unsigned)(a[ai] - '0');
		for (bi = i; bi < lb && isdigit((unsigned char)b[bi]); bi++)
			bn = bn * 10 + (unsigned)(b[bi] - '0');
		if (an != bn)
			return (long long)an < (long long)bn;
		if (ai != bi)
			return ai < bi;
		return ca < cb;
	}
	return la < lb;
}

struct outbuf {
	char *p;
	size_t n, cap;
	int oom;
};

static int out_write(void *data, unsigned char *buf, size_t size)
{
	struct outbuf *o = data;
	if (o->n + size + 1 > o->cap) {
		size_t cap = (o->cap ? o->cap : 1024);
		while (cap < o->n + size + 1)
			cap *= 2;
		char *np = realloc(o->p, cap);
		if (!np) {
			o->oom = 1;
			return 0;
		}
		o->p = np;
		o->cap = cap;
	}
	memcpy(o->p + o->n, buf, size);
	o->n += size;
	o->p[o->n] = '\0';
	return 1;
}

static void fmt_float(double f, char *buf, size_t n)
{
	if (isnan(f)) {
		snprintf(buf, n, ".nan");
		return;
	}
	if (isinf(f)) {
		snprintf(buf, n, f < 0 ? "-.inf" : ".inf");
		return;
	}
	for (int prec = 1; prec <= 17; prec++) { /* shortest text that reads back exactly, like Go's 'g', -1 */
		snprintf(buf, n, "%.*g", prec, f);
		if (strtod(buf, NULL) == f)
			return;
	}
}

static int emit_scalar(yaml_emitter_t *em, const char *s, size_t len, yaml_scalar_style_t style)
{
	yaml_event_t ev;
	/* Untagged (both implicit flags), as yaml.v2 emits: libyaml then never writes a "!" tag. */
	if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)len, 1, 1, style))
		return 0;
	return yaml_emitter_emit(em, &ev);
}

struct keyref {
	const ma_ynode *k, *v;
};

static int keyref_cmp(const void *a, const void *b)
{
	const char *ka = ((const struct keyref *)a)->k->s, *kb = ((const struct keyref *)b)->k->s;
	if (ma_yaml_key_less(ka, kb))
		return -1;
	return ma_yaml_key_less(kb, ka) ? 1 : 0;
}

static int emit_node(yaml_emitter_t *em, const ma_ynode *n, ma_err *e)
{
	yaml_event_t ev;
	char num[64];
	switch (n->type) {
	case MA_Y_NULL:
		return emit_scalar(em, "null", 4, YAML_PLAIN_SCALAR_STYLE) ? 0 : ma_fail(e, "yaml: emit failed");
	case MA_Y_BOOL:
		return emit_scalar(em, n->b ? "true" : "false", n->b ? 4 : 5, YAML_PLAIN_SCALAR_STYLE)
			   ? 0
			   : ma_fail(e, "yaml: emit failed");
	case MA_Y_INT:
		snprintf(num, sizeof num, "%lld", n->i);
		return emit_scalar(em, num, strlen(num), YAML_PLAIN_SCALAR_STYLE) ? 0 : ma_fail(e, "yaml: emit failed");
	case MA_Y_FLOAT:
		fmt_float(n->f, num, sizeof num);
		return emit_scalar(em, num, strlen(num), YAML_PLAIN_SCALAR_STYLE) ? 0 : ma_fail(e, "yaml: emit failed");
	case MA_Y_STR: {
		/* yaml.v2's choice: literal block for multi-line text, double quotes for text that would read
		 * back as another type, plain otherwise (libyaml falls back to quotes where plain can't be). */
		yaml_scalar_style_t st = YAML_PLAIN_SCALAR_STYLE;
		if (memchr(n->s, '\n', n->slen))
			st = YAML_LITERAL_SCALAR_STYLE;
		else if (ma_yaml_plain_is_nonstring(n->s))
			st = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
		return emit_scalar(em, n->s, n->slen, st) ? 0 : ma_fail(e, "yaml: cannot emit string \"%.40s\"", n->s);
	}
	case MA_Y_SEQ:
		if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
							  n->n ? YAML_BLOCK_SEQUENCE_STYLE : YAML_FLOW_SEQUENCE_STYLE) ||
		    !yaml_emitter_emit(em, &ev))
			return ma_fail(e, "yaml: emit failed");
		for (size_t i = 0; i < n->n; i++)
			if (emit_node(em, n->kids[i], e))
				return -1;
		if (!yaml_sequence_end_event_initialize(&ev) || !yaml_emitter_emit(em, &ev))
			return ma_fail(e, "yaml: emit failed");
		return 0;
	case MA_Y_MAP: {
		size_t np = n->n / 2;
		struct keyref *refs = malloc((np ? np : 1) * sizeof *refs);
		if (!refs)
			return ma_fail(e, "yaml: out of memory");
		for (size_t i = 0; i < np; i++) {
			refs[i].k = n->kids[2 * i];
			refs[i].v = n->kids[2 * i + 1];
			if (refs[i].k->type != MA_Y_STR) {
				free(refs);
				return ma_fail(e, "yaml: mapping keys must be strings");
			}
		}
		qsort(refs, np, sizeof *refs, keyref_cmp);
		int rc = 0;
		if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
							 np ? YAML_BLOCK_MAPPING_STYLE : YAML_FLOW_MAPPING_STYLE) ||
		    !yaml_emitter_emit(em, &ev))
			rc = ma_fail(e, "yaml: emit failed");
		for (size_t i = 0; !rc && i < np; i++)
			rc = emit_node(em, refs[i].k, e) || emit_node(em, refs[i].v, e) ? -1 : 0;
		free(refs);
		if (!rc && (!yaml_mapping_end_event_initialize(&ev) || !yaml_emitter_emit(em, &ev)))
			rc = ma_fail(e, "yaml: emit failed");
		return rc;
	}
	}
	return ma_fail(e, "yaml: bad node type");
}

static int emit_doc(const ma_ynode *doc, struct outbuf *o, ma_err *e)
{
	yaml_emitter_t em;
	yaml_event_t ev;
	if (!yaml_emitter_initialize(&em))
		return ma_fail(e, "yaml: out of memory");
	yaml_emitter_set_output(&em, out_write, o);
	yaml_emitter_set_unicode(&em, 1);
	yaml_emitter_set_width(&em, -1); /* never fold long lines: certificate data stays on one line */
	yaml_emitter_set_indent(&em, 2);
	int rc = 0;
	if (!yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) || !yaml_emitter_emit(&em, &ev) ||
	    !yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) || !yaml_emitter_emit(&em, &ev))
		rc = ma_fail(e, "yaml: emit failed: %s", em.problem ? em.problem : "?");
	if (!rc)
		rc = emit_node(&em, doc, e);
	if (!rc && (!yaml_document_end_event_initialize(&ev, 1) || !yaml_emitter_emit(&em, &ev) ||
		    !yaml_stream_end_event_initialize(&ev) || !yaml_emitter_emit(&em, &ev)))
		rc = ma_fail(e, "yaml: emit failed: %s", em.problem ? em.problem : "?");
	if (!rc && o->oom)
		rc = ma_fail(e, "yaml: out of memory");
	yaml_emitter_delete(&em);
	return rc;
}

int ma_yaml_emit(const ma_ynode *docs, char **out, size_t *outlen, ma_err *e)
{
	struct outbuf o = {0};
	for (size_t i = 0; i < docs->n; i++) {
		if (i > 0 && !out_write(&o, (unsigned char *)"---\n", 4)) {
			free(o.p);
			return ma_fail(e, "yaml: out of memory");
		}
		if (emit_doc(docs->kids[i], &o, e)) {
			free(o.p);
			return -1;
		}
	}
	if (!o.p && !out_write(&o, (unsigned char *)"", 0)) {
		free(o.p);
		return ma_fail(e, "yaml: out of memory");
	}
	*out = o.p;
	if (outlen)
		*outlen = o.n;
	return 0;
}
