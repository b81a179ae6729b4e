/* engine/yaml_doc: parse with lines, scalar resolution, errors, kubeadm-style emit. */
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
	RUN(test_emit_sorted_and_quoted);
	RUN(test_key_order);
	DONE();
}
