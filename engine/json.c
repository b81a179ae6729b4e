/* The minimal JSON reader (engine/json.h). */
#include <stdlib.h>
#include <string.h>

#include "json.h"

#define MAX_DEPTH 64

struct p {
	const char *s;
	size_t i, n;
	ma_err *e;
	int failed;
};

static void *fail(struct p *p, const char *what)
{
	if (!p->failed)
		ma_fail_kind(p->e, "malformed", "json: offset %zu: %s", p->i, what);
	p->failed = 1;
	return NULL;
}

static void ws(struct p *p)
{
	while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r'))
		p->i++;
}

static int hex4(struct p *p, unsigned *out)
{
	if (p->n - p->i < 4)
		return -1;
	unsigned v = 0;
	for (int k = 0; k < 4; k++) {
		char c = p->s[p->i++];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xC0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xE0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
		o[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	o[0] = (char)(0xF0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
	o[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/* at the opening quote; returns a malloc'd decoded string */
static char *string(struct p *p, size_t *outlen)
{
	p->i++; /* " */
	size_t start = p->i, end = start;
	while (end < p->n && p->s[end] != '"') {
		if (p->s[end] == '\\')
			end++;
		end++;
	}
	if (end >= p->n)
		return fail(p, "unterminated string");
	char *o = malloc(end - start + 1), *w = o; /* decoding never grows the text */
	if (!o)
		return fail(p, "out of memory");
	while (p->i < end) {
		unsigned char c = (unsigned char)p->s[p->i];
		if (c < 0x20) {
			free(o);
			return fail(p, "control character in a string");
		}
		if (c != '\\') {
			*w++ = (char)c;
			p->i++;
			continue;
		}
		p->i++;
		char x = p->s[p->i++];
		switch (x) {
		case '"': *w++ = '"'; break;
		case '\\': *w++ = '\\'; break;
		case '/': *w++ = '/'; break;
		case 'b': *w++ = '\b'; break;
		case 'f': *w++ = '\f'; break;
		case 'n': *w++ = '\n'; break;
		case 'r': *w++ = '\r'; break;
		case 't': *w++ = '\t'; break;
		case 'u': {
			unsigned cp, lo;
			if (hex4(p, &cp) < 0) {
				free(o);
				return fail(p, "bad \\u escape");
			}
			if (cp >= 0xD800 && cp < 0xDC00 && p->i + 6 <= end && p->s[p->i] == '\\' && p->s[p->i + 1] == 'u') {
				size_t save = p->i;
				p->i += 2;
				if (hex4(p, &lo) == 0 && lo >= 0xDC00 && lo < 0xE000)
					cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
				else
					p->i = save;
			}
			if (cp >= 0xD800 && cp < 0xE000)
				cp = 0xFFFD; /* a lone surrogate */
			w += put_utf8(w, cp);
			break;
		}
		default:
			free(o);
			return fail(p, "bad escape in a string");
		}
	}
	p->i = end + 1;
	*w = '\0';
	*outlen = (size_t)(w - o);
	return o;
}

static ma_json *value(struct p *p, int depth);

static ma_json *node(struct p *p, ma_json_type t)
{
	ma_json *v = calloc(1, sizeof *v);
	if (!v)
		return fail(p, "out of memory");
	v->type = t;
	return v;
}

static int lit(struct p *p, const char *w)
{
	size_t k = strlen(w);
	if (p->n - p->i < k || memcmp(p->s + p->i, w, k) != 0)
		return -1;
	p->i += k;
	return 0;
}

static ma_json *container(struct p *p, int depth, int obj)
{
	if (depth >= MAX_DEPTH)
		return fail(p, "nesting too deep");
	ma_json *v = node(p, obj ? MA_JSON_OBJECT : MA_JSON_ARRAY), **tail;
	if (!v)
		return NULL;
	tail = &v->child;
	p->i++;
	ws(p);
	char close = obj ? '}' : ']';
	if (p->i < p->n && p->s[p->i] == close) {
		p->i++;
		return v;
	}
	for (;;) {
		char *key = NULL;
		size_t kl;
		ws(p);
		if (obj) {
			if (p->i >= p->n || p->s[p->i] != '"') {
				ma_json_free(v);
				return fail(p, "expected a member name");
			}
			if (!(key = string(p, &kl))) {
				ma_json_free(v);
				return NULL;
			}
			ws(p);
			if (p->i >= p->n || p->s[p->i] != ':') {
				free(key);
				ma_json_free(v);
				return fail(p, "expected ':'");
			}
			p->i++;
		}
		ma_json *c = value(p, depth + 1);
		if (!c) {
			free(key);
			ma_json_free(v);
			return NULL;
		}
		c->key = key;
		*tail = c;
		tail = &c->next;
		v->n++;
		ws(p);
		if (p->i < p->n && p->s[p->i] == ',') {
			p->i++;
			continue;
		}
		if (p->i < p->n && p->s[p->i] == close) {
			p->i++;
			return v;
		}
		ma_json_free(v);
		return fail(p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
	}
}

static ma_json *value(struct p *p, int depth)
{
	ws(p);
	if (p->i >= p->n)
		return fail(p, "unexpected end of input");
	char c = p->s[p->i];
	ma_json *v;
	if (c == '{' || c == '[')
		return container(p, depth, c == '{');
	if (c == '"') {
		size_t l;
		char *s = string(p, &l);
		if (!s)
			return NULL;
		if (!(v = node(p, MA_JSON_STRING))) {
			free(s);
			return NULL;
		}
		v->s = s;
		v->len = l;
		return v;
	}
	if (lit(p, "null") == 0)
		return node(p, MA_JSON_NULL);
	if (lit(p, "true") == 0)
		return node(p, MA_JSON_TRUE);
	if (lit(p, "false") == 0)
		return node(p, MA_JSON_FALSE);
	if (c == '-' || (c >= '0' && c <= '9')) {
		size_t st = p->i;
		if (p->s[p->i] == '-')
			p->i++;
		size_t d0 = p->i;
		while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9')
			p->i++;
		if (p->i == d0 || (p->s[d0] == '0' && p->i - d0 > 1))
			return fail(p, "bad number");
		if (p->i < p->n && p->s[p->i] == '.') {
			size_t f0 = ++p->i;
			while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9')
				p->i++;
			if (p->i == f0)
				return fail(p, "bad number");
		}
		if (p->i < p->n && (p->s[p->i] == 'e' || p->s[p->i] == 'E')) {
			p->i++;
			if (p->i < p->n && (p->s[p->i] == '+' || p->s[p->i] == '-'))
				p->i++;
			size_t e0 = p->i;
			while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9')
				p->i++;
			if (p->i == e0)
				return fail(p, "bad number");
		}
		if (!(v = node(p, MA_JSON_NUMBER)))
			return NULL;
		v->len = p->i - st;
		if (!(v->s = malloc(v->len + 1))) {
			free(v);
			return fail(p, "out of memory");
		}
		memcpy(v->s, p->s + st, v->len);
		v->s[v->len] = '\0';
		return v;
	}
	return fail(p, "unexpected character");
}

ma_json *ma_json_parse(const char *text, size_t len, ma_err *e)
{
	struct p p = {text, 0, len, e, 0};
	if (!text)
		return fail(&p, "no input");
	ma_json *v = value(&p, 0);
	if (!v)
		return NULL;
	ws(&p);
	if (p.i != p.n) {
		ma_json_free(v);
		return fail(&p, "trailing data after the value");
	}
	return v;
}

void ma_json_free(ma_json *v)
{
	while (v) {
		ma_json *next = v->next;
		ma_json_free(v->child);
		free(v->key);
		free(v->s);
		free(v);
		v = next;
	}
}

const ma_json *ma_json_get(const ma_json *v, const char *key)
{
	if (!v || v->type != MA_JSON_OBJECT)
		return NULL;
	const ma_json *found = NULL;
	for (const ma_json *c = v->child; c; c = c->next)
		if (strcmp(c->key, key) == 0)
			found = c;
	return found;
}

const char *ma_json_str(const ma_json *v)
{
	return v && (v->type == MA_JSON_STRING || v->type == MA_JSON_NUMBER) ? v->s : NULL;
}

int ma_u64_parse(const char *s, size_t len, uint64_t *out)
{
	if (!s || len == 0 || len > 20)
		return -1;
	uint64_t x = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		unsigned d = (unsigned)(s[i] - '0');
		if (x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*out = x;
	return 0;
}

int ma_json_u64(const ma_json *v, uint64_t *out)
{
	const char *s = ma_json_str(v);
	return s ? ma_u64_parse(s, v->len, out) : -1;
}

int ma_json_bool(const ma_json *v, int dflt)
{
	if (v && v->type == MA_JSON_TRUE)
		return 1;
	if (v && v->type == MA_JSON_FALSE)
		return 0;
	return dflt;
}

size_t ma_json_quote(char *buf, size_t cap, size_t at, const char *s)
{
	static const char hexd[] = "0123456789abcdef";
	size_t o = at;
#define PUT(ch) do { if (o + 1 >= cap) return (size_t)-1; buf[o++] = (ch); } while (0)
	PUT('"');
	for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
		unsigned char c = *q;
		if (c == '"' || c == '\\') {
			PUT('\\');
			PUT((char)c);
		} else if (c < 0x20) {
			PUT('\\');
			PUT('u');
			PUT('0');
			PUT('0');
			PUT(hexd[c >> 4]);
			PUT(hexd[c & 15]);
		} else {
			PUT((char)c);
		}
	}
	PUT('"');
#undef PUT
	buf[o] = '\0';
	return o;
}

/* ---- ma_json_rewrite ------------------------------------------------------------------------ */

#define REWRITE_MAX_DEPTH 1000 /* lua-cjson's own decode limit */

struct rw {
	char *b;
	size_t len, cap;
	int oom;
};

static void rw_put(struct rw *w, const char *s, size_t n)
{
	if (w->oom)
		return;
	if (w->cap - w->len < n + 1) {
		size_t cap = w->cap ? w->cap : 64;
		while (cap - w->len < n + 1)
			cap *= 2;
		char *b = realloc(w->b, cap);
		if (!b) {
			w->oom = 1;
			return;
		}
		w->b = b, w->cap = cap;
	}
	memcpy(w->b + w->len, s, n);
	w->len += n;
	w->b[w->len] = 0;
}

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static size_t skip_ws(const char *s, size_t n, size_t i)
{
	while (i < n && is_ws(s[i]))
		i++;
	return i;
}

/* i at a '"': the index after its closing quote, or 0 when it is not closed */
static size_t string_end(const char *s, size_t n, size_t i)
{
	for (i++; i < n; i++) {
		if (s[i] == '\\')
			i++;
		else if (s[i] == '"')
			return i + 1;
	}
	return 0;
}

/* i at a value: the index after it, or 0 when the text ends inside it */
static size_t value_end(const char *s, size_t n, size_t i)
{
	if (i >= n)
		return 0;
	if (s[i] == '"')
		return string_end(s, n, i);
	if (s[i] == '{' || s[i] == '[') {
		size_t depth = 0;
		while (i < n) {
			char c = s[i];
			if (c == '"') {
				i = string_end(s, n, i);
				if (!i)
					return 0;
				continue;
			}
			if (c == '{' || c == '[')
				depth++;
			else if ((c == '}' || c == ']') && --depth == 0)
				return i + 1;
			i++;
		}
		return 0;
	}
	while (i < n && s[i] != ',' && s[i] != '}' && s[i] != ']' && !is_ws(s[i]))
		i++;
	return i;
}

static int is_dropped(const char *const *drop, const char *name, size_t len)
{
	for (; drop && *drop; drop++)
		if (strlen(*drop) == len && memcmp(*drop, name, len) == 0)
			return 1;
	return 0;
}

/* 1: rewritten into w; 0: the text is not well-formed (w is to be discarded) */
static int rewrite(const char *s, size_t n, const char *marker, const char *const *drop, struct rw *w,
		   size_t *marked, size_t *dropped)
{
	char kind[REWRITE_MAX_DEPTH];
	size_t depth = 0, i = 0, comma_at = SIZE_MAX;
	int expect_key = 0;
	size_t mlen = strlen(marker);
	while (i < n) {
		char c = s[i];
		if (c == '"') {
			size_t j = string_end(s, n, i);
			if (!j)
				return 0;
			if (expect_key && is_dropped(drop, s + i + 1, j - i - 2)) {
				size_t k = skip_ws(s, n, j);
				if (k < n && s[k] == ':') {
					size_t v = value_end(s, n, skip_ws(s, n, k + 1));
					if (!v)
						return 0;
					v = skip_ws(s, n, v);
					(*dropped)++;
					if (v < n && s[v] == ',') { /* drop it with its comma: what precedes stays */
						i = v + 1;
						continue;
					}
					if (comma_at != SIZE_MAX && !w->oom) { /* the last member: drop the comma before it */
						w->len = comma_at;
						w->b[w->len] = 0;
					}
					expect_key = 0;
					i = v;
					continue;
				}
			}
			rw_put(w, s + i, j - i);
			expect_key = 0;
			i = j;
			continue;
		}
		if (c == '[') {
			size_t k = skip_ws(s, n, i + 1);
			if (k < n && s[k] == ']') {
				rw_put(w, "[", 1);
				rw_put(w, marker, mlen);
				rw_put(w, "]", 1);
				(*marked)++;
				expect_key = 0;
				i = k + 1;
				continue;
			}
		}
		if (c == '{' || c == '[') {
			if (depth == REWRITE_MAX_DEPTH)
				return 0;
			kind[depth++] = c;
			expect_key = c == '{';
			comma_at = SIZE_MAX;
		} else if (c == '}' || c == ']') {
			if (depth == 0 || kind[depth - 1] != (c == '}' ? '{' : '['))
				return 0;
			depth--;
			expect_key = 0;
		} else if (c == ',') {
			expect_key = depth > 0 && kind[depth - 1] == '{';
			comma_at = w->len;
		}
		rw_put(w, s + i, 1);
		i++;
	}
	return depth == 0;
}

int ma_json_rewrite(const char *s, size_t n, const char *marker, const char *const *drop, char **out,
		    size_t *out_len, size_t *marked, size_t *dropped, ma_err *e)
{
	struct rw w = {0};
	*marked = *dropped = 0;
	w.cap = n + 64; /* most answers shrink or grow by a few markers */
	w.b = malloc(w.cap);
	w.oom = w.b == NULL;
	if (!w.oom && !rewrite(s, n, marker, drop, &w, marked, dropped)) {
		*marked = *dropped = 0; /* not well-formed: the decoder gets the text as it came */
		w.len = 0;
		rw_put(&w, s, n);
	} else if (!w.oom && w.len == 0) {
		w.b[0] = 0;
	}
	if (w.oom) {
		free(w.b);
		return ma_fail(e, "json: out of memory rewriting %zu bytes", n);
	}
	*out = w.b, *out_len = w.len;
	return 0;
}
