/* Test-only fault injection: see testhooks.h. Empty unless built with -DMA_TEST_HOOKS. */
#include "testhooks.h"

#ifdef MA_TEST_HOOKS
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char crash_kind[16];
static long crash_n = -1;
static char log_path[4096];
static long counts[3]; /* write, api, etcd */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char rsa_fault[8];
static int fips;

__attribute__((constructor)) static void hooks_init(void)
{
	const char *c = getenv("MOONADM_CRASH_AFTER");
	if (c && *c) {
		const char *colon = strchr(c, ':');
		if (colon && (size_t)(colon - c) < sizeof crash_kind) {
			memcpy(crash_kind, c, (size_t)(colon - c));
			crash_n = strtol(colon + 1, NULL, 10);
		}
		unsetenv("MOONADM_CRASH_AFTER");
	}
	const char *l = getenv("MOONADM_HOOK_LOG");
	if (l && *l) {
		snprintf(log_path, sizeof log_path, "%s", l);
		unsetenv("MOONADM_HOOK_LOG");
	}
	const char *f = getenv("MOONADM_RSA_FAULT");
	if (f && *f) {
		snprintf(rsa_fault, sizeof rsa_fault, "%s", f);
		unsetenv("MOONADM_RSA_FAULT");
	}
	const char *x = getenv("MOONADM_HOOK_FIPS");
	if (x && *x) {
		fips = !strcmp(x, "1");
		unsetenv("MOONADM_HOOK_FIPS");
	}
}

const char *ma_hook_rsa_fault(void)
{
	return rsa_fault[0] ? rsa_fault : NULL;
}

int ma_hook_fips(void)
{
	return fips;
}

/* One line "KIND N WHAT", appended with one write(2) so concurrent writers do not interleave. */
static void log_line(const char *kind, const char *n, const char *what)
{
	if (!log_path[0])
		return;
	int fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	char line[4608];
	int len = snprintf(line, sizeof line, "%s %s %s\n", kind, n, what ? what : "");
	if (len > 0)
		(void)!write(fd, line, (size_t)len < sizeof line ? (size_t)len : sizeof line - 1);
	close(fd);
}

void ma_hook_mutation(const char *kind, const char *what)
{
	int k = strcmp(kind, "write") == 0 ? 0 : strcmp(kind, "api") == 0 ? 1 : 2;
	pthread_mutex_lock(&mu);
	long n = ++counts[k];
	char num[24];
	snprintf(num, sizeof num, "%ld", n);
	log_line(kind, num, what);
	int die = crash_n > 0 && strcmp(kind, crash_kind) == 0 && n == crash_n;
	pthread_mutex_unlock(&mu);
	if (die) {
		log_line("killed", num, kind);
		raise(SIGKILL);
	}
}

void ma_hook_first_byte(int fd, const char *path)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return;
	char mode[16];
	snprintf(mode, sizeof mode, "%04o", (unsigned)(st.st_mode & 07777));
	log_line("mode", mode, path);
}
#else
typedef int ma_testhooks_empty; /* ISO C wants a translation unit to declare something */
#endif
