/* libcurl, loaded on the first request (dlopen) rather than at start-up: it brings 32 shared
 * libraries that only the commands talking to a server need, and the dynamic loader's time for
 * them was most of `moonadm version`'s. http.c calls curl_* as usual; the names below are the
 * loaded library's. */
#ifndef MA_LIBCURL_H
#define MA_LIBCURL_H

#define CURL_DISABLE_TYPECHECK /* curl_easy_setopt/getinfo as plain functions, not macros */
#include <curl/curl.h>

#include "err.h"

struct ma_libcurl {
	CURLcode (*global_init)(long flags);
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *c);
	void (*easy_reset)(CURL *c);
	CURLcode (*easy_setopt)(CURL *c, CURLoption opt, ...);
	CURLcode (*easy_getinfo)(CURL *c, CURLINFO info, ...);
	CURLcode (*easy_perform)(CURL *c);
	const char *(*easy_strerror)(CURLcode rc);
	struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
	void (*slist_free_all)(struct curl_slist *l);
};
extern struct ma_libcurl ma_libcurl;

/* Loads libcurl.so.4 and curl_global_init()s it once; -1 with a message saying what to install. */
int ma_libcurl_load(ma_err *e);

/* curl.h makes these two function-like macros that check the argument count: ours replace them */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#define curl_global_init ma_libcurl.global_init
#define curl_easy_init ma_libcurl.easy_init
#define curl_easy_cleanup ma_libcurl.easy_cleanup
#define curl_easy_reset ma_libcurl.easy_reset
#define curl_easy_setopt ma_libcurl.easy_setopt
#define curl_easy_getinfo ma_libcurl.easy_getinfo
#define curl_easy_perform ma_libcurl.easy_perform
#define curl_easy_strerror ma_libcurl.easy_strerror
#define curl_slist_append ma_libcurl.slist_append
#define curl_slist_free_all ma_libcurl.slist_free_all

#endif
