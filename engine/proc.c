#include "proc.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* In the child: report and die. Only async-signal-safe calls from here on. */
static void child_fail(const char *what, const char *arg)
{
	const char *err = strerror(errno);
	const char *parts[] = {"moonadm: ", what, " ", arg ? arg : "", ": ", err, "\n"};
	for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
		if (write(2, parts[i], strlen(parts[i])) < 0)
			break;
	_exit(127);
}

static void mkdir_p(const char *path)
{
	char buf[4096];
	size_t n = strlen(path);
	if (n >= sizeof buf)
		return;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(buf, 0755);
			*p = '/';
		}
	mkdir(buf, 0755);
}

static void setup_mounts(const struct ma_spawn *s)
{
	if (unshare(CLONE_NEWNS) != 0)
		child_fail("unshare", "mount namespace");
	/* Nothing we mount may propagate back to the host. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		child_fail("make private", "/");
	for (int i = 0; i < s->nmounts; i++) {
		const struct ma_mount *m = &s->mounts[i];
		if (m->type == MA_MOUNT_TMPFS) {
			mkdir_p(m->dst);
			if (mount("tmpfs", m->dst, "tmpfs", 0, "mode=0755") != 0)
				child_fail("mount tmpfs on", m->dst);
			continue;
		}
		if (m->file) {
			char parent[4096];
			snprintf(parent, sizeof parent, "%s", m->dst);
			char *slash = strrchr(parent, '/');
			if (slash && slash != parent) {
				*slash = '\0';
				mkdir_p(parent);
			}
			int fd = open(m->dst, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
			if (fd >= 0)
				close(fd);
		} else {
			mkdir_p(m->dst);
		}
		if (mount(m->src, m->dst, NULL, MS_BIND | MS_REC, NULL) != 0)
			child_fail("bind mount", m->src);
		if (m->readonly &&
		    mount(NULL, m->dst, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_REC, NULL) != 0)
			child_fail("remount read-only", m->dst);
	}
}

int ma_proc_spawn(const struct ma_spawn *s, pid_t *pid, ma_err *e)
{
	if (!s->argv || !s->argv[0])
		return ma_fail(e, "spawn: empty argv");
	int logfd = -1;
	if (s->log) {
		logfd = open(s->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (logfd < 0)
			return ma_fail_errno(e, errno, "spawn %s: open log %s", s->argv[0], s->log);
	}
	int nsfd = -1;
	if (s->netns) {
		nsfd = open(s->netns, O_RDONLY | O_CLOEXEC);
		if (nsfd < 0) {
			int err = errno;
			if (logfd >= 0)
				close(logfd);
			return ma_fail_errno(e, err, "spawn %s: open network namespace %s", s->argv[0], s->netns);
		}
	}
	pid_t parent = getpid();
	pid_t child = fork();
	if (child < 0) {
		int err = errno;
		if (logfd >= 0)
			close(logfd);
		if (nsfd >= 0)
			close(nsfd);
		return ma_fail_errno(e, err, "spawn %s: fork", s->argv[0]);
	}
	if (child == 0) {
		if (s->die_with_parent) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (getppid() != parent)
				_exit(127);
		}
		if (s->new_session)
			setsid();
		/* Signals the parent ignores or blocks must not leak into the child. */
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		for (int sig = 1; sig < 32; sig++)
			if (sig != SIGKILL && sig != SIGSTOP)
				signal(sig, SIG_DFL);
		if (logfd >= 0) { /* a logged process is a daemon: no terminal input */
			dup2(logfd, 1);
			dup2(logfd, 2);
			int devnull = open("/dev/null", O_RDONLY);
			if (devnull >= 0)
				dup2(devnull, 0);
		}
		if (nsfd >= 0 && setns(nsfd, CLONE_NEWNET) != 0)
			child_fail("setns", s->netns);
		if (s->mounts)
			setup_mounts(s);
		if (s->cwd && chdir(s->cwd) != 0)
			child_fail("chdir", s->cwd);
		if (s->env)
			environ = (char **)s->env;
		execvp(s->argv[0], (char *const *)s->argv);
		child_fail("exec", s->argv[0]);
	}
	if (logfd >= 0)
		close(logfd);
	if (nsfd >= 0)
		close(nsfd);
	*pid = child;
	return 0;
}

int ma_proc_signal(pid_t pid, int sig, ma_err *e)
{
	if (pid <= 0)
		return ma_fail(e, "signal: bad pid %d", (int)pid);
	if (kill(pid, sig) != 0 && errno != ESRCH)
		return ma_fail_errno(e, errno, "kill %d", (int)pid);
	return 0;
}

int ma_proc_wait(pid_t pid, int nohang, int *code, double *cpu_s, ma_err *e)
{
	int status;
	pid_t r;
	struct rusage ru;
	do
		r = wait4(pid, &status, nohang ? WNOHANG : 0, &ru);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return ma_fail_errno(e, errno, "wait %d", (int)pid);
	if (r == 0)
		return 0;
	if (code)
		*code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (cpu_s)
		*cpu_s = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
			 (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	return 1;
}

int ma_proc_wait_any(int nohang, pid_t *pid, int *code, ma_err *e)
{
	int status;
	pid_t r;
	do
		r = waitpid(-1, &status, nohang ? WNOHANG : 0);
	while (r < 0 && errno == EINTR);
	if (r < 0 && errno == ECHILD)
		return 0;
	if (r < 0)
		return ma_fail_errno(e, errno, "wait for any child");
	if (r == 0)
		return 0;
	*pid = r;
	*code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return 1;
}

int ma_proc_alive(pid_t pid)
{
	if (pid <= 0 || kill(pid, 0) != 0)
		return 0;
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *rp = strrchr(buf, ')'); /* state follows the command name */
	return !(rp && rp[1] == ' ' && rp[2] == 'Z');
}
