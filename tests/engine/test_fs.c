/* engine/fs: paths under a root, atomic writes with final modes, reads, removal. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#include "fs.h"
#include "t.h"

static char root[256];

static void test_resolve(void)
{
	char out[MA_PATH_MAX];
	ma_err e;
	CHECK(ma_fs_resolve("/r", "/etc/kubernetes/pki", out, sizeof out, &e) == 0, "%s", e.msg);
	CHECK_STR(out, "/r/etc/kubernetes/pki");
	CHECK(ma_fs_resolve("/r/", "//etc/./kubernetes/../kubernetes//x", out, sizeof out, &e) == 0, "%s", e.msg);
	CHECK_STR(out, "/r/etc/kubernetes/x");
	CHECK(ma_fs_resolve("/", "/etc", out, sizeof out, &e) == 0, "%s", e.msg);
	CHECK_STR(out, "/etc");
	CHECK(ma_fs_resolve("/r", "/../../etc/passwd", out, sizeof out, &e) == -1, "escape must fail");
	CHECK(strstr(e.msg, "climbs out of the root") != NULL, "%s", e.msg);
	CHECK(ma_fs_resolve("/r", "", out, sizeof out, &e) == -1, "empty path must fail");
}

static void test_write_modes(void)
{
	ma_err e;
	int changed = -1;
	CHECK(ma_fs_write(root, "/etc/kubernetes/pki/ca.key", "secret", 6, 0600, &changed, &e) == 0, "%s", e.msg);
	CHECK(changed == 1, "first write changes");
	char host[MA_PATH_MAX];
	ma_fs_resolve(root, "/etc/kubernetes/pki/ca.key", host, sizeof host, &e);
	struct stat st;
	CHECK(stat(host, &st) == 0 && (st.st_mode & 07777) == 0600, "mode %o", st.st_mode & 07777);
	CHECK(ma_fs_write(root, "/etc/kubernetes/pki/ca.key", "secret", 6, 0600, &changed, &e) == 0, "%s", e.msg);
	CHECK(changed == 0, "same bytes and mode: unchanged");
	CHECK(ma_fs_write(root, "/etc/kubernetes/pki/ca.key", "secret", 6, 0640, &changed, &e) == 0, "%s", e.msg);
	CHECK(changed == 1, "mode change counts as a change");
	char *data;
	size_t len;
	CHECK(ma_fs_read(root, "/etc/kubernetes/pki/ca.key", &data, &len, &e) == 0, "%s", e.msg);
	CHECK(len == 6 && strcmp(data, "secret") == 0, "content");
	free(data);
	/* no temp files left behind */
	char dir[MA_PATH_MAX], cmd[MA_PATH_MAX + 64];
	ma_fs_resolve(root, "/etc/kubernetes/pki", dir, sizeof dir, &e);
	snprintf(cmd, sizeof cmd, "test $(ls -A %s | wc -l) -eq 1", dir);
	CHECK(system(cmd) == 0, "only the file itself in %s", dir);
}

/* Group commit: pending files are invisible at their paths (the old bytes stay) but read and
 * exist for this process, carry their final mode from the start, and land together at the commit,
 * in first-write order, with no temp file left; a rewrite keeps one pending entry. */
static void test_group_commit(void)
{
	ma_err e;
	char host[MA_PATH_MAX], *data;
	size_t len;
	int changed;
	struct stat st;
	CHECK(ma_fs_write(root, "/g/old.conf", "v1", 2, 0644, NULL, &e) == 0, "%s", e.msg);
	ma_fs_group_begin();
	CHECK(ma_fs_group_active(), "group on");
	CHECK(ma_fs_write(root, "/g/pki/k.key", "key", 3, 0600, &changed, &e) == 0 && changed == 1, "%s", e.msg);
	CHECK(ma_fs_write(root, "/g/old.conf", "v2", 2, 0644, &changed, &e) == 0 && changed == 1, "%s", e.msg);
	CHECK(ma_fs_write(root, "/g/old.conf", "v3", 2, 0644, &changed, &e) == 0 && changed == 1, "%s", e.msg);
	/* a directory where a file is pending would fail the file's rename at commit: refused at once */
	CHECK(ma_fs_mkdir(root, "/g/old.conf", 0755, &e) != 0 && strstr(e.msg, "is a file"), "mkdir on a pending file");
	CHECK(ma_fs_mkdir(root, "/g/old.conf/sub", 0755, &e) != 0 && strstr(e.msg, "is a file"), "mkdir under one");
	CHECK(ma_fs_mkdir(root, "/g/old.conf.d", 0755, &e) == 0, "a sibling with the same prefix: %s", e.msg);
	CHECK(ma_fs_write(root, "/g/old.conf", "v3", 2, 0644, &changed, &e) == 0 && changed == 0, "same pending bytes");
	ma_fs_resolve(root, "/g/pki/k.key", host, sizeof host, &e);
	CHECK(stat(host, &st) != 0 && errno == ENOENT, "a pending file is not at its path before the commit");
	ma_fs_resolve(root, "/g/old.conf", host, sizeof host, &e);
	FILE *f = fopen(host, "r");
	char buf[8] = "";
	CHECK(f && fgets(buf, sizeof buf, f) && !strcmp(buf, "v1"), "the old bytes stay until the commit: %s", buf);
	if (f) fclose(f);
	CHECK(ma_fs_exists(root, "/g/pki/k.key", &e) == 1, "pending file exists for this process");
	CHECK(ma_fs_read(root, "/g/old.conf", &data, &len, &e) == 0 && len == 2 && !strcmp(data, "v3"), "read sees v3");
	free(data);
	char dir[MA_PATH_MAX], cmd[3 * MA_PATH_MAX];
	ma_fs_resolve(root, "/g", dir, sizeof dir, &e);
	/* one temp per pending file, already 0600 for the key */
	snprintf(cmd, sizeof cmd, "test $(ls -A %s | grep -c '^\\.old\\.conf\\.tmp-') -eq 1 && "
		 "test \"$(stat -c %%a %s/pki/.k.key.tmp-*)\" = 600", dir, dir);
	CHECK(system(cmd) == 0, "pending temps: %s", cmd);
	CHECK(ma_fs_group_end(&e) == 0, "%s", e.msg);
	CHECK(!ma_fs_group_active(), "group off");
	CHECK(ma_fs_read(root, "/g/old.conf", &data, &len, &e) == 0 && !strcmp(data, "v3"), "committed");
	free(data);
	ma_fs_resolve(root, "/g/pki/k.key", host, sizeof host, &e);
	CHECK(stat(host, &st) == 0 && (st.st_mode & 07777) == 0600, "key committed 0600");
	snprintf(cmd, sizeof cmd, "test -z \"$(find %s -name '.*.tmp-*')\"", dir);
	CHECK(system(cmd) == 0, "no temp file left after the commit");
	CHECK(ma_fs_group_commit(&e) == 0, "an empty commit is a no-op");
	/* outside a group, writes land at once again */
	CHECK(ma_fs_write(root, "/g/now", "x", 1, 0644, NULL, &e) == 0, "%s", e.msg);
	ma_fs_resolve(root, "/g/now", host, sizeof host, &e);
	CHECK(stat(host, &st) == 0, "immediate write");
}

static void test_errors(void)
{
	ma_err e;
	char *data;
	CHECK(ma_fs_read(root, "/nope", &data, NULL, &e) == -1, "missing file");
	CHECK(strstr(e.msg, "/nope") && strstr(e.msg, "No such file"), "%s", e.msg);
	CHECK(ma_fs_write(root, "/etc/kubernetes/pki/ca.key/sub", "x", 1, 0644, NULL, &e) == -1, "parent is a file");
	CHECK(strstr(e.msg, "not a directory") != NULL, "%s", e.msg);
	CHECK(ma_fs_exists(root, "/nope/deeper", &e) == 0, "missing");
	CHECK(ma_fs_exists(root, "/etc/kubernetes", &e) == 1, "exists");
}

static void test_mkdir_remove_copy(void)
{
	ma_err e;
	CHECK(ma_fs_mkdir(root, "/var/lib/etcd", 0700, &e) == 0, "%s", e.msg);
	char host[MA_PATH_MAX];
	struct stat st;
	ma_fs_resolve(root, "/var/lib/etcd", host, sizeof host, &e);
	CHECK(stat(host, &st) == 0 && (st.st_mode & 07777) == 0700, "mode %o", st.st_mode & 07777);
	CHECK(ma_fs_write(root, "/var/lib/etcd/member/wal", "w", 1, 0600, NULL, &e) == 0, "%s", e.msg);
	CHECK(ma_fs_copy(root, "/var/lib/etcd/member/wal", "/backup/wal", &e) == 0, "%s", e.msg);
	ma_fs_resolve(root, "/backup/wal", host, sizeof host, &e);
	CHECK(stat(host, &st) == 0 && (st.st_mode & 07777) == 0600, "copy keeps mode");
	CHECK(ma_fs_remove_tree(root, "/var/lib/etcd", 1, &e) == 0, "%s", e.msg);
	CHECK(ma_fs_exists(root, "/var/lib/etcd", &e) == 1, "top kept");
	CHECK(ma_fs_exists(root, "/var/lib/etcd/member", &e) == 0, "contents gone");
	CHECK(ma_fs_remove(root, "/backup/wal", &e) == 0, "%s", e.msg);
	CHECK(ma_fs_remove(root, "/backup/wal", &e) == 0, "removing a missing file is fine");
	CHECK(ma_fs_remove_tree("/", "/", 0, &e) == -1, "never rm -rf /");
}

/* issue 18.7: the root lock is exclusive, records the holder's pid, and is free once closed. */
static void test_lock(void)
{
	ma_err e;
	int fd = -1, fd2 = -1;
	long holder = -1;
	CHECK(ma_fs_mkdir(root, "/var/lib/moonadm", 0700, &e) == 0, "%s", e.msg);
	CHECK(ma_fs_lock(root, "/var/lib/moonadm/lock", &fd, &holder, &e) == 0, "%s", e.msg);
	CHECK(fd >= 0, "a descriptor");
	char host[MA_PATH_MAX];
	ma_fs_resolve(root, "/var/lib/moonadm/lock", host, sizeof host, &e);
	struct stat st;
	CHECK(stat(host, &st) == 0 && (st.st_mode & 07777) == 0600, "lock file mode %o", st.st_mode & 07777);
	/* a second open file description conflicts, even in this process */
	CHECK(ma_fs_lock(root, "/var/lib/moonadm/lock", &fd2, &holder, &e) == 1, "second lock must be refused");
	CHECK(fd2 == -1 && holder == (long)getpid(), "holder %ld, want %ld", holder, (long)getpid());
	close(fd); /* a crashed holder: the file stays, unlocked */
	CHECK(ma_fs_lock(root, "/var/lib/moonadm/lock", &fd2, &holder, &e) == 0, "free after close: %s", e.msg);
	/* a contender that opened the file before the holder released it must not win on the removed inode */
	int old = open(host, O_RDWR);
	ma_fs_unlock(root, "/var/lib/moonadm/lock", fd2);
	CHECK(access(host, F_OK) != 0, "the lock file goes on release");
	CHECK(old >= 0 && flock(old, LOCK_EX | LOCK_NB) == 0, "the old inode is free");
	CHECK(ma_fs_lock(root, "/var/lib/moonadm/lock", &fd, &holder, &e) == 0, "a new lock file: %s", e.msg);
	close(old);
	ma_fs_unlock(root, "/var/lib/moonadm/lock", fd);
	/* never through a symlink */
	unlink(host);
	CHECK(symlink("/etc/passwd", host) == 0, "symlink");
	CHECK(ma_fs_lock(root, "/var/lib/moonadm/lock", &fd, &holder, &e) == -1, "a symlinked lock file is refused");
	CHECK(strstr(e.msg, "symlink") != NULL, "%s", e.msg);
	unlink(host);
}

static void touch_old(const char *host, const char *data, time_t age)
{
	FILE *f = fopen(host, "w");
	if (f) {
		fputs(data, f);
		fclose(f);
	}
	if (!age) /* written now, after this process started: a live run's */
		return;
	struct utimbuf t = {time(NULL) - age, time(NULL) - age};
	utime(host, &t);
}

/* issue 18.9: a killed run's temp files go on the next run; live writers' and other files stay. */
static void test_clean_temps(void)
{
	ma_err e;
	char dir[MA_PATH_MAX], p[MA_PATH_MAX + 64];
	CHECK(ma_fs_mkdir(root, "/etc/kubernetes/pki/etcd", 0755, &e) == 0, "%s", e.msg);
	ma_fs_resolve(root, "/etc/kubernetes", dir, sizeof dir, &e);
	const char *dead[] = {"/.init.json.tmp-AbC123", "/pki/.ca.key.tmp-x9Y8z7", "/pki/etcd/.peer.key.tmp-000000"};
	const char *kept[] = {"/.fresh.tmp-QwErTy", "/pki/.ca.key.tmp-abc", "/pki/ca.key.tmp-AbC123", "/pki/.notes.tmp-AbC12!",
			      "/pki/ca.crt"};
	for (size_t i = 0; i < sizeof dead / sizeof *dead; i++) {
		snprintf(p, sizeof p, "%s%s", dir, dead[i]);
		touch_old(p, "x", 30);
	}
	for (size_t i = 0; i < sizeof kept / sizeof *kept; i++) {
		snprintf(p, sizeof p, "%s%s", dir, kept[i]);
		touch_old(p, "x", i == 0 ? 0 : 30);
	}
	/* a temp file a live writer holds */
	snprintf(p, sizeof p, "%s/pki/.sa.key.tmp-LiVe00", dir);
	touch_old(p, "x", 30);
	int held = open(p, O_RDONLY);
	CHECK(held >= 0 && flock(held, LOCK_EX | LOCK_NB) == 0, "hold %s", p);
	int removed = -1;
	/* depth 0: only the top dir */
	CHECK(ma_fs_clean_temps(root, "/etc/kubernetes", 0, &removed, &e) == 0, "%s", e.msg);
	CHECK(removed == 1, "removed %d at depth 0", removed);
	CHECK(ma_fs_clean_temps(root, "/etc/kubernetes", 2, &removed, &e) == 0, "%s", e.msg);
	CHECK(removed == 2, "removed %d at depth 2", removed);
	for (size_t i = 0; i < sizeof dead / sizeof *dead; i++) {
		snprintf(p, sizeof p, "%s%s", dir, dead[i]);
		CHECK(access(p, F_OK) != 0, "%s removed", p);
	}
	for (size_t i = 0; i < sizeof kept / sizeof *kept; i++) {
		snprintf(p, sizeof p, "%s%s", dir, kept[i]);
		CHECK(access(p, F_OK) == 0, "%s kept", p);
		unlink(p);
	}
	snprintf(p, sizeof p, "%s/pki/.sa.key.tmp-LiVe00", dir);
	CHECK(access(p, F_OK) == 0, "held temp kept");
	close(held);
	CHECK(ma_fs_clean_temps(root, "/etc/kubernetes", 2, &removed, &e) == 0 && removed == 1, "released: removed %d", removed);
	CHECK(ma_fs_clean_temps(root, "/no/such/dir", 2, &removed, &e) == 0 && removed == 0, "missing dir is fine");
}

/* A write onto a symlink replaces the link; it never follows it to clobber the target. */
static void test_write_symlink(void)
{
	ma_err e;
	char outside[MA_PATH_MAX], link[MA_PATH_MAX];
	snprintf(outside, sizeof outside, "%s.outside", root);
	touch_old(outside, "precious", 0);
	CHECK(ma_fs_mkdir(root, "/etc/kubernetes/pki", 0755, &e) == 0, "%s", e.msg);
	ma_fs_resolve(root, "/etc/kubernetes/pki/front-proxy-client.key", link, sizeof link, &e);
	unlink(link);
	CHECK(symlink(outside, link) == 0, "symlink");
	int changed = 0;
	CHECK(ma_fs_write(root, "/etc/kubernetes/pki/front-proxy-client.key", "precious", 8, 0644, &changed, &e) == 0,
	      "%s", e.msg);
	CHECK(changed == 1, "a symlink with the same bytes behind it is still replaced");
	struct stat st;
	CHECK(lstat(link, &st) == 0 && S_ISREG(st.st_mode), "the link became a regular file");
	CHECK(ma_fs_write(root, "/etc/kubernetes/pki/front-proxy-client.key", "KEY", 3, 0600, NULL, &e) == 0, "%s", e.msg);
	char *data;
	size_t len;
	CHECK(ma_fs_read("/", outside, &data, &len, &e) == 0, "%s", e.msg);
	CHECK(len == 8 && strcmp(data, "precious") == 0, "the link's target is untouched: %s", data);
	free(data);
	unlink(outside);
	unlink(link);
}

/* Issue 18, defect 10: --config DIR printed a Lua error, --config /dev/zero read until memory ran
 * out. The user's files are read as regular files only, up to a size. */
static void test_read_regular(void)
{
	ma_err e;
	char *data = NULL;
	size_t len = 0;
	char dir[MA_PATH_MAX], file[MA_PATH_MAX + 16], link[MA_PATH_MAX + 16], fifo[MA_PATH_MAX + 16];
	CHECK(ma_fs_mkdir(root, "/user", 0755, &e) == 0, "%s", e.msg);
	ma_fs_resolve(root, "/user", dir, sizeof dir, &e);
	snprintf(file, sizeof file, "%s/c.yaml", dir);
	snprintf(link, sizeof link, "%s/link.yaml", dir);
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	CHECK(ma_fs_write(root, "/user/c.yaml", "kind: x\n", 8, 0644, NULL, &e) == 0, "%s", e.msg);
	CHECK(ma_fs_read_regular(file, 8, &data, &len, &e) == 0 && len == 8 && strcmp(data, "kind: x\n") == 0, "%s", e.msg);
	free(data);
	CHECK(symlink(file, link) == 0, "symlink");
	CHECK(ma_fs_read_regular(link, 100, &data, &len, &e) == 0 && len == 8, "a symlink to a file: %s", e.msg);
	free(data);
	CHECK(ma_fs_read_regular(file, 7, &data, &len, &e) == -1 && e.code == EFBIG, "one byte too many");
	CHECK(strstr(e.msg, "c.yaml is 8 bytes, larger than the 7 bytes allowed") != NULL, "%s", e.msg);
	CHECK(ma_fs_read_regular(dir, 100, &data, &len, &e) == -1 && e.code == EISDIR, "a directory");
	CHECK(strstr(e.msg, "/user is a directory, not a regular file") != NULL, "%s", e.msg);
	CHECK(ma_fs_read_regular("/dev/zero", 100, &data, &len, &e) == -1 && e.code == EINVAL, "/dev/zero");
	CHECK_STR(e.msg, "/dev/zero is a character device, not a regular file");
	CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
	CHECK(ma_fs_read_regular(fifo, 100, &data, &len, &e) == -1, "a FIFO, refused without blocking");
	CHECK(strstr(e.msg, "fifo is a FIFO, not a regular file") != NULL, "%s", e.msg);
	CHECK(ma_fs_read_regular("/nonexistent/c.yaml", 100, &data, &len, &e) == -1 && e.code == ENOENT, "missing");
	CHECK_STR(e.msg, "open /nonexistent/c.yaml: No such file or directory");
	CHECK(ma_fs_read_regular("", 100, &data, &len, &e) == -1, "empty path");
	unlink(fifo);
	unlink(link);
}

/* A streamed atomic write: the temp file has its final mode from the start, nothing is at the
 * path before the commit, an existing file is never replaced, and every failure leaves no temp. */
static void test_stream(void)
{
	ma_err e = {0};
	char dir[MA_PATH_MAX], host[MA_PATH_MAX], cmd[MA_PATH_MAX + 64];
	CHECK(ma_fs_mkdir(root, "/snap", 0700, &e) == 0, "%s", e.msg);
	ma_fs_resolve(root, "/snap", dir, sizeof dir, &e);
	ma_fs_resolve(root, "/snap/a.db", host, sizeof host, &e);
	/* 0640: not mkostemp's own 0600, so the mode is the one asked for */
	ma_fs_stream *s = ma_fs_stream_open(root, "/snap/a.db", 0640, &e);
	CHECK(s, "%s", e.msg);
	if (!s)
		return;
	struct stat st;
	CHECK(fstat(ma_fs_stream_fd(s), &st) == 0 && (st.st_mode & 07777) == 0640, "temp mode %o", st.st_mode & 07777);
	CHECK(ma_fs_stream_write(s, "hello ", 6, &e) == 0 && ma_fs_stream_write(s, "world", 5, &e) == 0, "%s", e.msg);
	CHECK(access(host, F_OK) != 0, "nothing at the path before the commit");
	CHECK(ma_fs_stream_sync(s, &e) == 0, "%s", e.msg);
	CHECK(ma_fs_stream_commit(s, &e) == 0, "%s", e.msg);
	char *data = NULL;
	size_t len = 0;
	CHECK(ma_fs_read(root, "/snap/a.db", &data, &len, &e) == 0 && len == 11 && !memcmp(data, "hello world", 11),
	      "content");
	free(data);
	CHECK(stat(host, &st) == 0 && (st.st_mode & 07777) == 0640, "mode %o", st.st_mode & 07777);
	/* an existing file stays as it was, and the temp goes */
	s = ma_fs_stream_open(root, "/snap/a.db", 0600, &e);
	CHECK(s && ma_fs_stream_write(s, "other", 5, &e) == 0, "%s", e.msg);
	CHECK(ma_fs_stream_commit(s, &e) == -1 && e.code == EEXIST, "replaced: %s", e.msg);
	CHECK(strstr(e.msg, "already exists") != NULL, "%s", e.msg);
	CHECK(ma_fs_read(root, "/snap/a.db", &data, &len, &e) == 0 && len == 11, "the old file is kept");
	free(data);
	/* abort */
	s = ma_fs_stream_open(root, "/snap/b.db", 0600, &e);
	CHECK(s && ma_fs_stream_write(s, "x", 1, &e) == 0, "%s", e.msg);
	ma_fs_stream_abort(s);
	snprintf(cmd, sizeof cmd, "test \"$(ls -A %s)\" = a.db", dir);
	CHECK(system(cmd) == 0, "only a.db in %s: no temp file, no b.db", dir);
	/* no directory: an error, not a directory made */
	CHECK(!ma_fs_stream_open(root, "/nodir/c.db", 0600, &e) && e.code == ENOENT, "%s", e.msg);
	CHECK(!ma_fs_stream_open(root, "/snap/a.db/x", 0600, &e), "a file as the directory");
}

int main(void)
{
	snprintf(root, sizeof root, "%s/moonadm-test-fs-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(root))
		return 1;
	RUN(test_resolve);
	RUN(test_write_modes);
	RUN(test_group_commit);
	RUN(test_errors);
	RUN(test_mkdir_remove_copy);
	RUN(test_lock);
	RUN(test_clean_temps);
	RUN(test_write_symlink);
	RUN(test_read_regular);
	RUN(test_stream);
	ma_err e;
	ma_fs_remove_tree(root, "/", 0, &e);
	rmdir(root);
	DONE();
}
