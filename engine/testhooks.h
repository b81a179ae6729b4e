/* Test-only fault injection, compiled in only with -DMA_TEST_HOOKS (bin/moonadm-hooks, `make
 * test-hooks`), as Lua's ltests.c: a release build has no hook and no environment lookup.
 *
 *   MOONADM_CRASH_AFTER=write:N|api:N|etcd:N   SIGKILL the process right after the Nth completed
 *                                               mutation of that kind (file write, mutating API
 *                                               call, etcd member add/promote/remove)
 *   MOONADM_HOOK_LOG=FILE                       append one line per mutation: "KIND N WHAT", and for
 *                                               each file write "mode MODE PATH" with the temp file's
 *                                               mode as it is before its first byte is written
 *
 * Both variables are read once at start and removed from the environment, so child processes
 * (static pods, kubectl, a kubelet stand-in) never inherit them. */
#ifndef MA_TESTHOOKS_H
#define MA_TESTHOOKS_H

#ifdef MA_TEST_HOOKS
/* A mutation of `kind` ("write", "api", "etcd") completed: log it, and die if it is the Nth. */
void ma_hook_mutation(const char *kind, const char *what);
/* The temp file fd about to receive the first byte of `path`: log its mode. */
void ma_hook_first_byte(int fd, const char *path);
#define MA_HOOK_MUTATION(kind, what) ma_hook_mutation(kind, what)
#define MA_HOOK_FIRST_BYTE(fd, path) ma_hook_first_byte(fd, path)
#else
#define MA_HOOK_MUTATION(kind, what) ((void)0)
#define MA_HOOK_FIRST_BYTE(fd, path) ((void)0)
#endif

#endif
