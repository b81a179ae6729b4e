/* engine/proc: exit codes, signals, log files, private mounts. */
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include "proc.h"
#include "t.h"

static char dir[256];

static void test_exit_code_and_log(void)
{
	char log[300];
	snprintf(log, sizeof log, "%s/out.log", dir);
	const char *argv[] = {"sh", "-c", "echo to-log; echo err >&2; exit 7", NULL};
	struct ma_spawn s = {.argv = argv, .log = log};
	pid_t pid;
	ma_err e;
	CHECK(ma_proc_spawn(&s, &pid, &e) == 0, "%s", e.msg);
	int code = -1;
	CHECK(ma_proc_wait(pid, 0, &code, NULL, &e) == 1 && code == 7, "exit code %d", code);
	FILE *f = fopen(log, "r");
	char buf[64] = {0};
	CHECK(f && fread(buf, 1, sizeof buf - 1, f) > 0, "log readable");
	if (f)
		fclose(f);
	CHECK_STR(buf, "to-log\nerr\n");
}

static double children_cpu(void)
{
	struct rusage ru;
	getrusage(RUSAGE_CHILDREN, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* The CPU time wait4 reports for a child (with its own child, which it waited for): what the kernel
 * adds to this process's reaped-children total for it, to the microsecond. */
static void test_cpu_time(void)
{
	const char *argv[] = {"sh", "-c", "sh -c 'i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done'", NULL};
	struct ma_spawn s = {.argv = argv};
	pid_t pid;
	ma_err e;
	double before = children_cpu();
	CHECK(ma_proc_spawn(&s, &pid, &e) == 0, "%s", e.msg);
	int code = -1;
	double cpu = -1;
	CHECK(ma_proc_wait(pid, 0, &code, &cpu, &e) == 1 && code == 0, "exit code %d", code);
	double added = children_cpu() - before;
	/* each of the four timevals is cut to the microsecond: a few of them apart at most */
	CHECK(cpu >= 0 && cpu > added - 1e-5 && cpu < added + 1e-5, "wait4 said %f s, the children's total grew by %f s",
	      cpu, added);
}

static void test_signal_and_alive(void)
{
	const char *argv[] = {"sleep", "30", NULL};
	struct ma_spawn s = {.argv = argv};
	pid_t pid;
	ma_err e;
	int code = -1;
	CHECK(ma_proc_spawn(&s, &pid, &e) == 0, "%s", e.msg);
	CHECK(ma_proc_alive(pid) == 1, "alive");
	CHECK(ma_proc_wait(pid, 1, &code, NULL, &e) == 0, "still running");
	/* Signal `sleep`, not the child between fork and exec: under valgrind that window is long and
	 * a TERM there ends the emulated child with status 0. */
	char comm_path[64], comm[32] = "";
	snprintf(comm_path, sizeof comm_path, "/proc/%d/comm", (int)pid);
	for (int i = 0; i < 500 && strncmp(comm, "sleep", 5) != 0; i++) {
		FILE *cf = fopen(comm_path, "r");
		if (cf) {
			if (!fgets(comm, sizeof comm, cf))
				comm[0] = '\0';
			fclose(cf);
		}
		if (strncmp(comm, "sleep", 5) != 0)
			usleep(10000);
	}
	CHECK(ma_proc_signal(pid, SIGTERM, &e) == 0, "%s", e.msg);
	CHECK(ma_proc_wait(pid, 0, &code, NULL, &e) == 1 && code == 128 + SIGTERM, "killed by TERM: %d", code);
	CHECK(ma_proc_alive(pid) == 0, "gone");
}

/* A PID 1 reaps children it did not start by pid: wait_any says which one ended and how. */
static void test_wait_any(void)
{
	pid_t pid, got = 0;
	int code = -1;
	ma_err e;
	CHECK(ma_proc_wait_any(1, &got, &code, &e) == 0, "no children: nothing to reap");
	const char *argv[] = {"sh", "-c", "exit 3", NULL};
	struct ma_spawn s = {.argv = argv};
	CHECK(ma_proc_spawn(&s, &pid, &e) == 0, "%s", e.msg);
	CHECK(ma_proc_wait_any(0, &got, &code, &e) == 1, "reaped");
	CHECK(got == pid && code == 3, "pid %d code %d", (int)got, code);
	CHECK(ma_proc_wait_any(1, &got, &code, &e) == 0, "nothing left");
}

static void test_exec_failure(void)
{
	char log[300];
	snprintf(log, sizeof log, "%s/fail.log", dir);
	const char *argv[] = {"/nonexistent/binary", NULL};
	struct ma_spawn s = {.argv = argv, .log = log};
	pid_t pid;
	ma_err e;
	int code = 0;
	CHECK(ma_proc_spawn(&s, &pid, &e) == 0, "%s", e.msg);
	CHECK(ma_proc_wait(pid, 0, &code, NULL, &e) == 1 && code == 127, "exec failure exits 127: %d", code);
	struct ma_spawn bad = {.argv = argv, .log = "/nonexistent/dir/log"};
	CHECK(ma_proc_spawn(&bad, &pid, &e) == -1 && strstr(e.msg, "open log"), "%s", e.msg);
}

static void test_private_mounts(void)
{
	if (geteuid() != 0) {
		printf("# skipped: mount namespaces need root\n");
		return;
	}
	char src[300], dst[300], cmd[700];
	snprintf(src, sizeof src, "%s/src", dir);
	snprintf(dst, sizeof dst, "%s/dst", dir);
	snprintf(cmd, sizeof cmd, "mkdir -p %s && echo node-file > %s/f", src, src);
	CHECK(system(cmd) == 0, "prepare");
	struct ma_mount m[] = {{.type = MA_MOUNT_TMPFS, .dst = dst},
			       {.type = MA_MOUNT_BIND, .src = src, .dst = dst, .readonly = 1}};
	char script[700];
	snprintf(script, sizeof script, "test \"$(cat %s/f)\" = node-file && ! touch %s/g 2>/dev/null", dst, dst);
	const char *argv[] = {"sh", "-c", script, NULL};
	struct ma_spawn s = {.argv = argv, .mounts = m, .nmounts = 2};
	pid_t pid;
	ma_err e;
	int code = -1;
	CHECK(ma_proc_spawn(&s, &pid, &e) == 0, "%s", e.msg);
	CHECK(ma_proc_wait(pid, 0, &code, NULL, &e) == 1 && code == 0, "bind visible and read-only inside: %d", code);
	snprintf(cmd, sizeof cmd, "test ! -e %s/f", dst);
	CHECK(system(cmd) == 0, "nothing visible outside the namespace");
}

int main(void)
{
	snprintf(dir, sizeof dir, "%s/moonadm-test-proc-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir))
		return 1;
	RUN(test_exit_code_and_log);
	RUN(test_cpu_time);
	RUN(test_signal_and_alive);
	RUN(test_wait_any);
	RUN(test_exec_failure);
	RUN(test_private_mounts);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		return 1;
	DONE();
}
