/* Test-only fault injection, compiled in only with -DMA_TEST_HOOKS (bin/moonadm-hooks, `make
 * test-hooks`), as Lua's ltests.c: a release build has no hook and no environment lookup.
 *
 *   MOONADM_CRASH_AFTER=write:N|api:N|etcd:N   SIGKILL the process right after the Nth completed
 *                                               mutation of that kind (file write, mutating API
 *                                               call, etcd member add/promote/remove)
 *   MOONADM_HOOK_LOG=FILE                       append one line per mutation: "KIND N WHAT", and for
 *                                               each file write "mode MODE PATH" with the temp file's
 *                                               mode as it is before its first byte is written
 *   MOONADM_RSA_FAULT=n|e|d|p|q|dp|dq|qinv      flip the lowest bit of that part of every RSA key
 *                                               as its check reads it (engine/pki_rsa.c
 *                                               ma_pki_rsa_check must refuse it)
 *   MOONADM_HOOK_FIPS=1                         FIPS mode, as if /proc/sys/crypto/fips_enabled said 1
 *
 * All are read once at start and removed from the environment, so child processes (static pods,
 * kubectl, a kubelet stand-in) never inherit them. */
#ifndef MA_TESTHOOKS_H
#define MA_TESTHOOKS_H

#ifdef MA_TEST_HOOKS
/* A mutation of `kind` ("write", "api", "etcd") completed: log it, and die if it is the Nth. */
void ma_hook_mutation(const char *kind, const char *what);
/* The temp file fd about to receive the first byte of `path`: log its mode. */
void ma_hook_first_byte(int fd, const char *path);
/* MOONADM_RSA_FAULT's part name, or NULL; MOONADM_HOOK_FIPS=1. */
const char *ma_hook_rsa_fault(void);
int ma_hook_fips(void);
#define MA_HOOK_MUTATION(kind, what) ma_hook_mutation(kind, what)
#define MA_HOOK_FIRST_BYTE(fd, path) ma_hook_first_byte(fd, path)
#define MA_HOOK_RSA_FAULT() ma_hook_rsa_fault()
#define MA_HOOK_FIPS() ma_hook_fips()
#else
#define MA_HOOK_MUTATION(kind, what) ((void)0)
#define MA_HOOK_FIRST_BYTE(fd, path) ((void)0)
#define MA_HOOK_RSA_FAULT() ((const char *)NULL)
#define MA_HOOK_FIPS() 0
#endif

#endif
