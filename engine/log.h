/* Engine diagnostics. Every message goes through one redaction step before any sink sees it,
 * so a bootstrap token secret or a PEM private key never reaches a log, whoever logs it. */
#ifndef MA_LOG_H
#define MA_LOG_H

#include <stddef.h>

enum ma_log_level { MA_LOG_ERROR, MA_LOG_WARN, MA_LOG_INFO, MA_LOG_DEBUG };

typedef void (*ma_log_sink)(enum ma_log_level level, const char *msg, void *data);

/* Where messages go (default: stderr, levels up to MA_LOG_INFO). */
void ma_log_set_sink(ma_log_sink sink, void *data);
void ma_log_set_level(enum ma_log_level max);
void ma_log(enum ma_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Masks secrets in text: "abcdef.0123456789abcdef" -> "abcdef.<redacted>", PEM private key
 * blocks -> "<redacted PRIVATE KEY>", "Authorization: Bearer X" -> "Authorization: Bearer <redacted>".
 * Returns a malloc'd string (NULL when out of memory). */
char *ma_redact(const char *text, size_t len);

#endif
