/* libFuzzer: engine/yaml_doc (the decoder behind every config, kubeconfig, patch and manifest),
 * parse then emit what parsed; then parse again under tight budgets, so the refusal paths (nodes,
 * alias ratio, depth, keys per mapping, scalar bytes) run on every input too. */
#include <stdlib.h>
#include "yaml_doc.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	ma_err e = {0};
	ma_yaml_stats st;
	ma_ynode *docs = ma_yaml_parse_ex((const char *)data, size, "fuzz.yaml", NULL, &st, &e);
	if (docs) {
		char *out = NULL;
		size_t outlen = 0;
		if (ma_yaml_emit(docs, &out, &outlen, &e) == 0)
			free(out);
		ma_ynode_free(docs);
	}
	if (st.alias_nodes > st.nodes || st.nodes > MA_YAML_MAX_NODES || st.max_depth > MA_YAML_MAX_DEPTH ||
	    st.scalar_bytes > MA_YAML_MAX_SCALAR_BYTES)
		abort(); /* a budget did not hold */
	ma_yaml_limits tight = {.max_bytes = 4096, .max_nodes = 64, .max_depth = 8, .max_keys = 8, .max_scalar_bytes = 256};
	docs = ma_yaml_parse_ex((const char *)data, size, "fuzz.yaml", &tight, &st, &e);
	ma_ynode_free(docs);
	if (st.nodes > 64 || st.alias_nodes > st.nodes || st.max_depth > 8 || st.scalar_bytes > 256)
		abort();
	return 0;
}
