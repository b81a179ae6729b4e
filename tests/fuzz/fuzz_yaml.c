/* libFuzzer: engine/yaml_doc (the decoder behind every config, kubeconfig, patch and manifest),
 * parse then emit what parsed. */
#include <stdlib.h>
#include "yaml_doc.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	ma_err e = {0};
	ma_ynode *docs = ma_yaml_parse((const char *)data, size, "fuzz.yaml", &e);
	if (!docs)
		return 0;
	char *out = NULL;
	size_t outlen = 0;
	if (ma_yaml_emit(docs, &out, &outlen, &e) == 0)
		free(out);
	ma_ynode_free(docs);
	return 0;
}
