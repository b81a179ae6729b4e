/* Error reporting for the engine: every failing call fills an ma_err with a
 * message that says what failed and where, and returns -1 (or NULL). */
#ifndef MA_ERR_H
#define MA_ERR_H

#include <stddef.h>

#define MA_ERRLEN 512

typedef struct ma_err {
	char msg[MA_ERRLEN];
	int code;         /* errno or a module-specific code; 0 when none */
	const char *kind; /* a static word naming the failure when code is not an errno ("tls", "syntax");
			   * NULL when code is an errno or there is no class */
} ma_err;

/* Formats into e (if not NULL) and returns -1, so callers can `return ma_fail(e, ...)`. */
int ma_fail(ma_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Like ma_fail, with ": strerror(errnum)" appended and e->code = errnum. */
int ma_fail_errno(ma_err *e, int errnum, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Like ma_fail, with e->kind = kind (a string literal). */
int ma_fail_kind(ma_err *e, const char *kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The failure's code as the bindings report it: e->kind, else the errno's symbolic name ("ENOENT"),
 * else "error" (the engine knew no finer class). Never NULL. */
const char *ma_err_code(const ma_err *e);

#endif
