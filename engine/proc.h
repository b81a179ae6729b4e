/* Processes: spawn with argv/env/cwd and a log file, optionally inside a network namespace
 * and a private mount namespace prepared with tmpfs and bind mounts (the lab runs each static
 * pod this way); signal, wait, liveness. */
#ifndef MA_PROC_H
#define MA_PROC_H

#include <sys/types.h>

#include "err.h"

enum ma_mount_type { MA_MOUNT_TMPFS, MA_MOUNT_BIND };

struct ma_mount {
	enum ma_mount_type type;
	const char *src;   /* bind: host path */
	const char *dst;   /* where it appears */
	int readonly;
	int file;          /* bind of a file: the mount point is created as an empty file */
};

struct ma_spawn {
	const char *const *argv;   /* argv[0] is looked up in PATH */
	const char *const *env;    /* NULL: inherit */
	const char *cwd;           /* NULL: inherit */
	const char *log;           /* stdout+stderr appended here; NULL: inherit */
	const char *netns;         /* /run/netns/NAME to join; NULL: stay */
	const struct ma_mount *mounts; /* non-NULL: a private mount namespace with these, in order */
	int nmounts;
	int new_session;           /* setsid(): not killed by the caller's terminal */
	int die_with_parent;       /* PR_SET_PDEATHSIG SIGKILL */
};

/* Starts the process; the child's set-up errors (mount, setns, exec) go to its log and it
 * exits 127. */
int ma_proc_spawn(const struct ma_spawn *s, pid_t *pid, ma_err *e);
int ma_proc_signal(pid_t pid, int sig, ma_err *e);
/* Non-blocking when nohang: returns 1 and the exit status when the child ended, 0 when still
 * running. *code is the exit code, or 128+signal; *cpu_s (when not NULL) the CPU seconds (user +
 * system) the child and the descendants it waited for used. */
int ma_proc_wait(pid_t pid, int nohang, int *code, double *cpu_s, ma_err *e);
/* Reaps any one exited child: 1 with *pid and *code set, 0 when none has exited (or there are no
 * children at all: a PID 1 polls this), -1 on error. */
int ma_proc_wait_any(int nohang, pid_t *pid, int *code, ma_err *e);
/* 1 when a process with this PID exists (and is not a zombie). */
int ma_proc_alive(pid_t pid);

#endif
