/* libFuzzer: engine/json (etcd's gateway answers: member lists, status, errors), and the rewrite
 * API answers go through before lua-cjson: what parses before it parses after it. */
#include <stdint.h>
#include <stdlib.h>
#include "json.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	ma_err e = {0};
	ma_json *j = ma_json_parse((const char *)data, size, &e);
	static const char *const drop[] = {"managedFields", "a", NULL};
	char *out = NULL;
	size_t len, marked, dropped;
	if (ma_json_rewrite((const char *)data, size, "\"m\"", drop, &out, &len, &marked, &dropped, &e) != 0)
		abort();
	if (j) {
		ma_json *k = ma_json_parse(out, len, &e);
		if (!k) /* a well-formed answer must stay well-formed */
			abort();
		ma_json_free(k);
	}
	free(out);
	if (!j)
		return 0;
	/* walk what etcd.c reads from an answer */
	const ma_json *m = ma_json_get(j, "members");
	uint64_t id;
	(void)ma_json_u64(ma_json_get(j, "header") ? ma_json_get(ma_json_get(j, "header"), "member_id") : NULL, &id);
	for (const ma_json *x = m ? m->child : NULL; x; x = x->next) {
		(void)ma_json_u64(ma_json_get(x, "ID"), &id);
		(void)ma_json_str(ma_json_get(x, "name"));
		(void)ma_json_bool(ma_json_get(x, "isLearner"), 0);
	}
	ma_json_free(j);
	return 0;
}
