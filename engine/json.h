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

#endif
