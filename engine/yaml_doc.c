#include "yaml_doc.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

struct anchor {
	char *name;
	ma_ynode *node; /* borrowed: owned by the tree */
};

struct parser {
	const char *name;
	ma_err *e;
	ma_ynode *stack[512];
	int depth;
	struct anchor *anchors;
	size_t nanchors, capanchors;
};

static int remember_anchor(struct parser *p, const unsigned char *anchor, ma_ynode *n)
{
	if (!anchor)
		return 0;
	if (p->nanchors == p->capanchors) {
		size_t cap = p->capanchors ? p->capanchors * 2 : 8;
		struct anchor *a = realloc(p->anchors, cap * sizeof *a);
		if (!a)
			return ma_fail(p->e, "%s: out of memory", p->name);
		p->anchors = a;
		p->capanchors = cap;
	}
	p->anchors[p->nanchors].name = strdup((const char *)anchor);
	p->anchors[p->nanchors++].node = n;
	return 0;
}

/* Adds a finished node to the container on top of the stack. */
static int attach(struct parser *p, ma_ynode *n)
{
	ma_ynode *top = p->stack[p->depth - 1];
	if (top->type == MA_Y_MAP && top->n % 2 == 0) { /* n is a key */
		if (n->type == MA_Y_MAP || n->type == MA_Y_SEQ) {
			int line = n->line, col = n->col;
			ma_ynode_free(n);
			return ma_fail(p->e, "%s:%d:%d: a mapping key must be a scalar", p->name, line, col);
		}
		for (size_t i = 0; i < top->n; i += 2) {
			ma_ynode *k = top->kids[i];
			if (k->type == MA_Y_STR && n->type == MA_Y_STR && k->slen == n->slen &&
			    memcmp(k->s, n->s, n->slen) == 0) {
				int r = ma_fail(p->e, "%s:%d:%d: duplicate key \"%s\" (first at line %d)", p->name, n->line,
						n->col, n->s, k->line);
				ma_ynode_free(n);
				return r;
			}
		}
	}
	if (ma_ynode_push(top, n)) {
		ma_ynode_free(n);
		return ma_fail(p->e, "%s: out of memory", p->name);
	}
	return 0;
}

ma_ynode *ma_yaml_parse(const char *text, size_t len, const char *name, ma_err *e)
{
	yaml_parser_t yp;
	yaml_event_t ev;
	struct parser p = {.name = name ? name : "<yaml>", .e = e};
	ma_ynode *docs = ma_ynode_new(MA_Y_SEQ);
	if (!docs || !yaml_parser_initialize(&yp)) {
		ma_ynode_free(docs);
		ma_fail(e, "%s: out of memory", p.name);
		return NULL;
	}
	yaml_parser_set_input_string(&yp, (const unsigned char *)text, len);
	p.stack[p.depth++] = docs;
	int ok = 0, done = 0;
	while (!done) {
		if (!yaml_parser_parse(&yp, &ev)) {
			ma_fail(e, "%s:%zu:%zu: %s%s%s", p.name, yp.problem_mark.line + 1, yp.problem_mark.column + 1,
				yp.problem ? yp.problem : "syntax error", yp.context ? " " : "", yp.context ? yp.context : "");
			break;
		}
		int line = (int)ev.start_mark.line + 1, col = (int)ev.start_mark.column + 1;
		int rc = 0;
		ma_ynode *n = NULL;
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = ok = 1;
			break;
		case YAML_SCALAR_EVENT: {
			const char *s = (const char *)ev.data.scalar.value;
			n = ma_ynode_str(s, ev.data.scalar.length);
			if (!n) {
				rc = ma_fail(e, "%s: out of memory", p.name);
				break;
			}
			n->line = line, n->col = col;
			int str_tag = ev.data.scalar.tag && !strcmp((const char *)ev.data.scalar.tag, YAML_STR_TAG);
			if (ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE && !str_tag)
				resolve_plain(n, s, ev.data.scalar.length);
			rc = remember_anchor(&p, ev.data.scalar.anchor, n);
			if (!rc)
				rc = attach(&p, n);
			break;
		}
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			n = ma_ynode_new(ev.type == YAML_SEQUENCE_START_EVENT ? MA_Y_SEQ : MA_Y_MAP);
			if (!n || p.depth == (int)(sizeof p.stack / sizeof *p.stack)) {
				ma_ynode_free(n);
				rc = ma_fail(e, "%s:%d:%d: nesting too deep", p.name, line, col);
				break;
			}
			n->line = line, n->col = col;
			rc = remember_anchor(&p, ev.type == YAML_SEQUENCE_START_EVENT ? ev.data.sequence_start.anchor
										     : ev.data.mapping_start.anchor,
					     n);
			if (rc) {
				ma_ynode_free(n);
				break;
			}
			p.stack[p.depth++] = n;
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			n = p.stack[--p.depth];
			rc = attach(&p, n);
			break;
		case YAML_ALIAS_EVENT: {
			const char *a = (const char *)ev.data.alias.anchor;
			ma_ynode *target = NULL;
			for (size_t i = p.nanchors; i-- > 0;)
				if (!strcmp(p.anchors[i].name, a)) {
					target = p.anchors[i].node;
					break;
				}
			if (!target) {
				rc = ma_fail(e, "%s:%d:%d: unknown anchor \"%s\"", p.name, line, col, a);
				break;
			}
			n = copy_node(target);
			if (!n) {
				rc = ma_fail(e, "%s: out of memory", p.name);
				break;
			}
			rc = attach(&p, n);
			break;
		}
		case YAML_DOCUMENT_END_EVENT:
			/* An empty document ("---" alone) is a null document. */
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
		if (rc)
			break;
	}
	/* Free containers still open after an error (they are not yet attached to anything). */
	while (p.depth > 1)
		ma_ynode_free(p.stack[--p.depth]);
	for (size_t i = 0; i < p.nanchors; i++)
		free(p.anchors[i].name);
	free(p.anchors);
	yaml_parser_delete(&yp);
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
