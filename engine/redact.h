/* The engine's one redaction step: what the logs (Lua's framework.log, through moonadm.core.redact)
 * pass every message through, so a bootstrap token secret or a PEM private key never reaches a log. */
#ifndef MA_REDACT_H
#define MA_REDACT_H

#include <stddef.h>

/* Masks secrets in text: "abcdef.0123456789abcdef" -> "abcdef.<redacted>", PEM private key
 * blocks -> "<redacted PRIVATE KEY>", "Authorization: Bearer X" -> "Authorization: Bearer <redacted>".
 * Returns a malloc'd string (NULL when out of memory). */
char *ma_redact(const char *text, size_t len);

#endif
