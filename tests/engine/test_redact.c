/* engine/redact.c: every secret shape is masked. */
#include <stdlib.h>

#include "redact.h"
#include "t.h"

static void check_redact(const char *in, const char *want)
{
	char *got = ma_redact(in, strlen(in));
	CHECK_STR(got, want);
	free(got);
}

static void test_tokens(void)
{
	check_redact("token abcdef.0123456789abcdef used", "token abcdef.<redacted> used");
	check_redact("--token=abcdef.0123456789abcdef", "--token=abcdef.<redacted>");
	check_redact("abcdef.0123456789abcdef", "abcdef.<redacted>");
	check_redact("config.yaml and kubeadm.k8s.io/v1beta4", "config.yaml and kubeadm.k8s.io/v1beta4");
	check_redact("xabcdef.0123456789abcdefx", "xabcdef.0123456789abcdefx");
}

static void test_bearer_and_pem(void)
{
	check_redact("Authorization: Bearer s3cr3t-value\nnext", "Authorization: Bearer <redacted>\nnext");
	check_redact("key:\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabc\n-----END RSA PRIVATE KEY-----\ncert",
		     "key:\n<redacted PRIVATE KEY>\ncert");
	check_redact("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
		     "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----");
	check_redact("-----BEGIN EC PRIVATE KEY-----\ntruncated", "<redacted PRIVATE KEY>");
}

int main(void)
{
	RUN(test_tokens);
	RUN(test_bearer_and_pem);
	DONE();
}
