/* libFuzzer: opening the kubeadm-certs Secret's values (AES-256-GCM, Go's nonce||ct||tag) under a
 * fixed certificate key; whatever opens is wiped and freed. */
#include "pki.h"

static const unsigned char key[32] = "0123456789abcdef0123456789abcde";

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	ma_err e = {0};
	unsigned char *out = NULL;
	size_t outlen = 0;
	if (ma_pki_open(key, sizeof key, data, size, &out, &outlen, &e) == 0)
		ma_pki_secret_free(out, outlen);
	return 0;
}
