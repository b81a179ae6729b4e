#include "redact.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

static int tokchar(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static int wordchar(int c)
{
	return isalnum(c) || c == '_';
}

char *ma_redact(const char *s, size_t len)
{
	char *out = malloc(len + 1); /* redaction never makes text longer than... see below */
	size_t cap = len + 1, n = 0;
	if (!out)
		return NULL;
#define PUT(str, l)                                                \
	do {                                                       \
		size_t l_ = (l);                                   \
		if (n + l_ + 1 > cap) {                            \
			cap = (n + l_ + 1) * 2;                    \
			char *o_ = realloc(out, cap);              \
			if (!o_) {                                 \
				free(out);                         \
				return NULL;                       \
			}                                          \
			out = o_;                                  \
		}                                                  \
		memcpy(out + n, (str), l_);                        \
		n += l_;                                           \
	} while (0)
	static const char bearer[] = "Bearer ";
	static const char pem_begin[] = "-----BEGIN ", pem_end[] = "-----END ";
	for (size_t i = 0; i < len;) {
		/* bootstrap token: [a-z0-9]{6}.[a-z0-9]{16} as a whole word */
		if (i + 23 <= len && (i == 0 || !wordchar((unsigned char)s[i - 1])) && s[i + 6] == '.' &&
		    (i + 23 == len || !wordchar((unsigned char)s[i + 23]))) {
			int ok = 1;
			for (size_t k = 0; k < 23 && ok; k++)
				ok = k == 6 || tokchar((unsigned char)s[i + k]);
			if (ok) {
				PUT(s + i, 7);
				PUT("<redacted>", 10);
				i += 23;
				continue;
			}
		}
		if (len - i >= sizeof bearer - 1 && memcmp(s + i, bearer, sizeof bearer - 1) == 0) {
			PUT(bearer, sizeof bearer - 1);
			PUT("<redacted>", 10);
			i += sizeof bearer - 1;
			while (i < len && !isspace((unsigned char)s[i]) && s[i] != '"')
				i++;
			continue;
		}
		if (len - i >= sizeof pem_begin - 1 && memcmp(s + i, pem_begin, sizeof pem_begin - 1) == 0) {
			const char *line_end = memchr(s + i, '\n', len - i);
			size_t hl = line_end ? (size_t)(line_end - (s + i)) : len - i;
			if (memmem(s + i, hl, "PRIVATE KEY-----", 16)) {
				const char *end = memmem(s + i, len - i, pem_end, sizeof pem_end - 1);
				const char *stop = end ? memmem(end, len - (size_t)(end - s), "-----", 5) : NULL;
				if (stop) /* the dashes closing "-----END ... KEY" */
					stop = memmem(stop + 5, len - (size_t)(stop + 5 - s), "-----", 5);
				PUT("<redacted PRIVATE KEY>", 22);
				i = stop ? (size_t)(stop - s) + 5 : len;
				continue;
			}
		}
		PUT(s + i, 1);
		i++;
	}
#undef PUT
	out[n] = '\0';
	return out;
}
