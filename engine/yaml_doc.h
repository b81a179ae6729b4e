/* YAML <-> a small document tree (libyaml). Decoding keeps each node's line so config errors
 * can say file:line; encoding sorts mapping keys as Go's yaml.v2 does, which is what kubeadm's
 * sigs.k8s.io/yaml output looks like, so the same data gives the same bytes. */
#ifndef MA_YAML_H
#define MA_YAML_H

#include <stddef.h>

#include "err.h"

enum ma_ytype { MA_Y_NULL, MA_Y_BOOL, MA_Y_INT, MA_Y_FLOAT, MA_Y_STR, MA_Y_MAP, MA_Y_SEQ };

typedef struct ma_ynode {
	enum ma_ytype type;
	int line, col;           /* 1-based position of the node in the source; 0 when built */
	char *s;                 /* MA_Y_STR: the bytes (NUL-terminated); */
	size_t slen;
	long long i;             /* MA_Y_INT */
	double f;                /* MA_Y_FLOAT */
	int b;                   /* MA_Y_BOOL */
	struct ma_ynode **kids;  /* MA_Y_MAP: key, value, key, value...; MA_Y_SEQ: the items */
	size_t n, cap;
} ma_ynode;

/* Parses every document of a stream; returns a MA_Y_SEQ whose items are the documents.
 * Errors read "NAME:LINE:COL: problem". Duplicate mapping keys are errors. */
ma_ynode *ma_yaml_parse(const char *text, size_t len, const char *name, ma_err *e);

/* Emits each item of docs (a MA_Y_SEQ) as a block-style document, separated by "---\n".
 * *out is malloc'd and NUL-terminated. */
int ma_yaml_emit(const ma_ynode *docs, char **out, size_t *outlen, ma_err *e);

ma_ynode *ma_ynode_new(enum ma_ytype type);
ma_ynode *ma_ynode_str(const char *s, size_t len);
/* Appends a child (MAP: call twice, key then value). Returns -1 when out of memory. */
int ma_ynode_push(ma_ynode *parent, ma_ynode *child);
void ma_ynode_free(ma_ynode *n);

/* yaml.v2's key order: runs of digits compare as numbers, non-letters before letters. */
int ma_yaml_key_less(const char *a, const char *b);
/* Would this plain scalar read back as something other than a string (null, bool, number)? */
int ma_yaml_plain_is_nonstring(const char *s);

#endif
