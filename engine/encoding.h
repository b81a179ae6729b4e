/* Encodings every layer needs: standard base64 (kubeconfig *-data fields, Secret data, CSRs)
 * and SHA-256 in hex (journal digests, content hashes, component-config signatures). */
#ifndef MA_ENCODING_H
#define MA_ENCODING_H

#include <stddef.h>

#include <nettle/sha2.h>

#include "err.h"

/* The encoded length of n bytes (padded), without the terminating NUL. */
size_t ma_base64_encoded_len(size_t n);
/* Writes ma_base64_encoded_len(n) characters and a NUL into out. */
void ma_base64_encode(const void *data, size_t n, char *out);
/* Decodes the standard alphabet; padding optional, ASCII whitespace ignored. out must hold
 * n / 4 * 3 + 3 bytes; *out_len is the decoded length. Returns 0, or -1 with e saying what
 * and where (the offset of the first bad character). */
int ma_base64_decode(const char *text, size_t n, unsigned char *out, size_t *out_len, ma_err *e);
/* n bytes as 2n lowercase hex digits and a NUL. */
void ma_hex(const void *in, size_t n, char *out);
/* The SHA-256 of data, as 64 lowercase hex digits and a NUL. */
void ma_sha256_hex(const void *data, size_t n, char out[65]);
/* SHA-256 over data that comes in pieces (a snapshot stream, a file read in blocks). */
typedef struct ma_sha256 {
	struct sha256_ctx c;
} ma_sha256;
#define MA_SHA256_LEN 32
void ma_sha256_init(ma_sha256 *h);
void ma_sha256_update(ma_sha256 *h, const void *data, size_t n);
/* The digest; h starts over (as after ma_sha256_init). */
void ma_sha256_final(ma_sha256 *h, unsigned char out[MA_SHA256_LEN]);

#endif
