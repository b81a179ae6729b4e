/* libFuzzer: PEM certificates (CA bundles from cluster-info and kubeconfigs, certificates on disk),
 * private and public keys, and CSRs (what a node sends, what the CSR API returns). */
#include <stdlib.h>
#include "pki.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	const char *pem = (const char *)data;
	ma_err e = {0};
	ma_pki_cert **certs = NULL;
	size_t n = 0;
	if (ma_pki_certs_read(pem, size, &certs, &n, &e) == 0) {
		for (size_t i = 0; i < n; i++) {
			ma_pki_info in = {0};
			if (ma_pki_cert_info(certs[i], &in, &e) == 0)
				ma_pki_info_free(&in);
			char pin[72];
			(void)ma_pki_cert_pin(certs[i], pin, &e);
			(void)ma_pki_cert_covers(certs[i], "kubernetes.default", &e);
		}
		ma_pki_certs_free(certs, n);
	}
	ma_pki_key *k = ma_pki_key_read(pem, size, &e);
	if (k) {
		(void)ma_pki_key_bits(k);
		ma_pki_key_free(k);
	}
	k = ma_pki_pubkey_read(pem, size, &e);
	if (k)
		ma_pki_key_free(k);
	ma_pki_info in = {0};
	ma_pki_key *pub = NULL;
	if (ma_pki_csr_parse(pem, size, &in, &pub, &e) == 0) {
		ma_pki_info_free(&in);
		ma_pki_key_free(pub);
	}
	return 0;
}
