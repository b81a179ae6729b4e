/* libcurl by dlopen, on first use (see libcurl.h). */
#include "libcurl.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

struct ma_libcurl ma_libcurl;

static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;
static int loaded;

int ma_libcurl_load(ma_err *e)
{
	static const char so[] = "libcurl.so.4"; /* the ABI http.c is compiled against */
	pthread_mutex_lock(&load_mu);
	if (loaded) {
		pthread_mutex_unlock(&load_mu);
		return 0;
	}
	/* libcurl's own libraries (GnuTLS' nettle/GMP among them) never bind to moonadm's static copies:
	 * the executable exports none of their symbols (no -rdynamic); RTLD_LOCAL keeps libcurl's to itself */
	void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	const char *missing = NULL;
	if (!h) {
		ma_fail(e, "http: cannot load %s (%s): install Debian's libcurl4 package", so, dlerror());
		goto fail;
	}
	struct {
		const char *name;
		void **slot;
	} syms[] = {
#define SYM(f) {"curl_" #f, (void **)&ma_libcurl.f}
		SYM(global_init), SYM(easy_init), SYM(easy_cleanup), SYM(easy_reset), SYM(easy_setopt),
		SYM(easy_getinfo), SYM(easy_perform), SYM(easy_strerror), SYM(slist_append), SYM(slist_free_all),
#undef SYM
	};
	for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
		/* POSIX: a function pointer travels through void * (dlsym's contract) */
		void *p = dlsym(h, syms[i].name);
		if (!p && !missing) missing = syms[i].name;
		memcpy(syms[i].slot, &p, sizeof p);
	}
	if (missing) {
		ma_fail(e, "http: %s has no %s: install Debian's libcurl4 (7.85 or newer)", so, missing);
		goto fail;
	}
	if (ma_libcurl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		ma_fail(e, "http: curl_global_init failed");
		goto fail;
	}
	loaded = 1;
	pthread_mutex_unlock(&load_mu);
	return 0;
fail:
	if (h) dlclose(h);
	memset(&ma_libcurl, 0, sizeof ma_libcurl);
	pthread_mutex_unlock(&load_mu);
	return -1;
}
