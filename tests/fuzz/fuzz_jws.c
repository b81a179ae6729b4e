/* libFuzzer: the bootstrap-token JWS of cluster-info (kubeadm's detached HS256 signature).
 * Input: content, a 0 byte, the JWS. The token is fixed: abcdef.0123456789abcdef. */
#include <string.h>
#include "pki.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	const char *p = (const char *)data;
	const char *z = memchr(p, 0, size);
	size_t clen = z ? (size_t)(z - p) : size;
	const char *jws = z ? z + 1 : "";
	size_t jlen = z ? size - clen - 1 : 0;
	ma_err e = {0};
	(void)ma_pki_jws_verify(p, clen, "abcdef", "0123456789abcdef", jws, jlen, &e);
	return 0;
}
