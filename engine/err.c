#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#if !defined(__GLIBC__) || __GLIBC__ < 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ < 32)
#error "moonadm needs glibc 2.32 or newer (strerrorname_np)"
#endif

static void vfill(ma_err *e, const char *fmt, va_list ap)
{
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	e->code = 0;
	e->kind = NULL;
}

int ma_fail(ma_err *e, const char *fmt, ...)
{
	if (e) {
		va_list ap;
		va_start(ap, fmt);
		vfill(e, fmt, ap);
		va_end(ap);
	}
	return -1;
}

int ma_fail_kind(ma_err *e, const char *kind, const char *fmt, ...)
{
	if (e) {
		va_list ap;
		va_start(ap, fmt);
		vfill(e, fmt, ap);
		va_end(ap);
		e->kind = kind;
	}
	return -1;
}

int ma_fail_errno(ma_err *e, int errnum, const char *fmt, ...)
{
	if (e) {
		va_list ap;
		va_start(ap, fmt);
		vfill(e, fmt, ap);
		va_end(ap);
		size_t n = strlen(e->msg);
		snprintf(e->msg + n, sizeof e->msg - n, ": %s", strerror(errnum));
		e->code = errnum;
	}
	return -1;
}

const char *ma_err_code(const ma_err *e)
{
	if (e->kind)
		return e->kind;
	const char *name = e->code > 0 ? strerrorname_np(e->code) : NULL;
	return name ? name : "error";
}
