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

/* Budgets on decoding, so a hostile document (an alias bomb, a huge or deep stream, a mapping of
 * millions of keys) is refused in milliseconds with bounded memory instead of exhausting the
 * machine. The defaults are generous for real inputs: a large kubeadm config with patches, a
 * kubeconfig, a Secret or ConfigMap of ~1 MiB. */
typedef struct ma_yaml_limits {
	size_t max_bytes; /* the whole stream */
	size_t max_nodes; /* every node made: parsed, or copied by an alias */
	size_t max_depth; /* mappings and sequences nested in each other, aliases expanded */
	size_t max_keys;  /* keys of one mapping */
	size_t max_scalar_bytes; /* the text of every scalar made: parsed, or copied by an alias */
} ma_yaml_limits;

#define MA_YAML_MAX_BYTES ((size_t)8 << 20) /* 8 MiB: kube-apiserver takes 3 MiB requests, etcd 1.5 MiB values */
#define MA_YAML_MAX_NODES ((size_t)1 << 20) /* 1 Mi nodes: 4x a dense 1 MiB object, ~180 MB decoded */
#define MA_YAML_MAX_DEPTH ((size_t)512)     /* Kubernetes objects nest ~20 deep */
#define MA_YAML_MAX_KEYS ((size_t)1 << 18)  /* 256 Ki keys per mapping */
/* 128 MiB: 16x the largest text. Nodes alone do not bound memory: one 2 MiB scalar aliased 5 000
 * times is 5 000 nodes and 10 GB. Every byte charged is also one byte of the Lua strings decode
 * makes, so a decode holds at most twice this in scalars. */
#define MA_YAML_MAX_SCALAR_BYTES ((size_t)128 << 20)

/* Besides max_nodes, aliases are held to Go yaml.v2's ratio (what kubeadm decodes with): once
 * more than 100 of more than 1000 nodes came from aliases, at most 99% of the nodes may (up to
 * 400 000 nodes), scaling down to 10% at 4 000 000; beyond that the stream is refused with
 * yaml.v2's words, "document contains excessive aliasing". */

/* What a parse did (for tests and benchmarks). */
typedef struct ma_yaml_stats {
	size_t nodes;        /* nodes made, aliases included */
	size_t alias_nodes;  /* of which copied by aliases */
	size_t scalar_bytes; /* scalar text made, aliases included */
	size_t max_depth;    /* deepest nesting seen */
	size_t key_compares; /* key comparisons made by the duplicate-key check */
} ma_yaml_stats;

/* The defaults above. */
ma_yaml_limits ma_yaml_default_limits(void);

/* Parses every document of a stream; returns a MA_Y_SEQ (line 1) whose items are the documents.
 * Errors read "NAME:LINE:COL: problem" (the position of libyaml's own marks for syntax and
 * encoding errors). Duplicate mapping keys are errors. Uses the default limits. */
ma_ynode *ma_yaml_parse(const char *text, size_t len, const char *name, ma_err *e);
/* The same with explicit limits (NULL: the defaults; a 0 field: its default) and, if st is not
 * NULL, what the parse did (also when it fails). */
ma_ynode *ma_yaml_parse_ex(const char *text, size_t len, const char *name, const ma_yaml_limits *lim,
			   ma_yaml_stats *st, ma_err *e);

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
