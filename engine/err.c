#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int ma_fail(ma_err *e, const char *fmt, ...)
{
	if (e) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(e->msg, sizeof e->msg, fmt, ap);
		va_end(ap);
		e->code = 0;
	}
	return -1;
}

int ma_fail_errno(ma_err *e, int errnum, const char *fmt, ...)
{
	if (e) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(e->msg, sizeof e->msg, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < sizeof e->msg)
			snprintf(e->msg + n, sizeof e->msg - (size_t)n, ": %s", strerror(errnum));
		e->code = errnum;
	}
	return -1;
}
