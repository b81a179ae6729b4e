/* A minimal JSON reader for the engine (etcd's v3 gateway answers): a small tree, numbers kept as
 * their text so 64-bit integers are exact (never converted through a double). Input must be UTF-8;
 * \u escapes are decoded (surrogate pairs included). Nesting is limited to 64 levels. */
#ifndef MA_JSON_H
#define MA_JSON_H

#include <stddef.h>
#include <stdint.h>
#include "err.h"

typedef enum { MA_JSON_NULL, MA_JSON_FALSE, MA_JSON_TRUE, MA_JSON_NUMBER, MA_JSON_STRING,
	       MA_JSON_ARRAY, MA_JSON_OBJECT } ma_json_type;

typedef struct ma_json ma_json;
struct ma_json {
	ma_json_type type;
	char *key;      /* member name inside an object, else NULL */
	char *s;        /* STRING: decoded value; NUMBER: the literal text (NUL-terminated) */
	size_t len;     /* length of s */
	ma_json *child; /* ARRAY / OBJECT: first element */
	ma_json *next;  /* next sibling */
	size_t n;       /* ARRAY / OBJECT: number of elements */
};

/* Parses one JSON value (surrounding whitespace allowed, nothing else). NULL + e on a syntax error
 * ("json: offset N: message"). */
ma_json *ma_json_parse(const char *text, size_t len, ma_err *e);
void ma_json_free(ma_json *v);

/* The member `key` of an object (the last one when repeated); NULL when v is not an object or
 * has no such member. */
const ma_json *ma_json_get(const ma_json *v, const char *key);
/* The string of a STRING, or the text of a NUMBER; NULL otherwise. */
const char *ma_json_str(const ma_json *v);
/* An unsigned 64-bit integer from a STRING or NUMBER holding decimal digits only (as the gateway
 * writes uint64 fields). 0 on success, -1 when absent, not decimal or out of range. */
int ma_json_u64(const ma_json *v, uint64_t *out);
/* true / false (absent: dflt). */
int ma_json_bool(const ma_json *v, int dflt);

/* Parses decimal digits into a uint64 without overflow. 0 / -1. */
int ma_u64_parse(const char *s, size_t len, uint64_t *out);

/* Appends s as a JSON string literal (quoted, escaped) to buf (of capacity cap, NUL-terminated).
 * Returns the new length, or (size_t)-1 when it does not fit. */
size_t ma_json_quote(char *buf, size_t cap, size_t at, const char *s);

/* Rewrites JSON text for a decoder that cannot tell `[]` from `{}` and builds every member it reads
 * (lua-cjson 2.1): every empty array outside strings becomes `[marker]` (marker: JSON text, e.g. a
 * string literal the caller recognises), and every object member whose name is one of drop (a
 * NULL-terminated list, or NULL; names compared as written, escapes are not decoded) is left out
 * with its value. The text is not validated: when it is not well-formed (an unterminated string,
 * unbalanced brackets, deeper than 1000 levels) the result is a copy of it, for the decoder to
 * report. Returns 0 with *out (malloc'd, *out_len bytes, NUL-terminated) and *marked / *dropped the
 * counts (both 0: *out is a copy), or -1 with e (out of memory). */
int ma_json_rewrite(const char *s, size_t n, const char *marker, const char *const *drop, char **out,
		    size_t *out_len, size_t *marked, size_t *dropped, ma_err *e);

#endif
