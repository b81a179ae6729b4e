/* libFuzzer: response header lookup (Retry-After, Content-Type, Warning) and the header iterator
 * moonadm.api builds its headers table with, over a raw header block as the API server, a proxy
 * in front of it, or anyone answering the anonymous cluster-info fetch sends it. */
#include <stdlib.h>
#include <string.h>
#include "http.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	ma_http_resp r = {0};
	r.headers = malloc(size + 1);
	if (!r.headers)
		return 0;
	memcpy(r.headers, data, size);
	r.headers[size] = '\0';
	r.headers_len = size;
	char out[256];
	(void)ma_http_header(&r, "Retry-After", out, sizeof out);
	(void)ma_http_header(&r, "content-type", out, sizeof out);
	(void)ma_http_header(&r, "Warning", out, 1);
	size_t pos = 0, nl, vl, n = 0, last = 0;
	const char *name, *v;
	while (ma_http_header_next(&r, &pos, &name, &nl, &v, &vl)) {
		if (pos <= last || pos > size || name < r.headers || v + vl > r.headers + size || nl == 0)
			abort(); /* the iterator advances and stays inside the block */
		last = pos;
		n++;
	}
	(void)n;
	free(r.headers);
	return 0;
}
