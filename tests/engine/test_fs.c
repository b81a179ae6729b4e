/* engine/fs: paths under a root, atomic writes with final modes, reads, removal. */
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

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

int main(void)
{
	snprintf(root, sizeof root, "%s/moonadm-test-fs-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(root))
		return 1;
	RUN(test_resolve);
	RUN(test_write_modes);
	RUN(test_errors);
	RUN(test_mkdir_remove_copy);
	ma_err e;
	ma_fs_remove_tree(root, "/", 0, &e);
	rmdir(root);
	DONE();
}
