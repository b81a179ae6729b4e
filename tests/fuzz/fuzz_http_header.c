/* libFuzzer: response header lookup (Retry-After, Content-Type, Warning) over a raw header block
 * as the API server or a proxy in front of it sends it. */
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
	free(r.headers);
	return 0;
}
