#include "fs.h"
#include "testhooks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int ma_fs_resolve(const char *root, const char *path, char *out, size_t outlen, ma_err *e)
{
	if (!path || !*path)
		return ma_fail(e, "empty path");
	/* Clean the node path lexically: drop "." and empty parts, resolve ".." without leaving "/". */
	char clean[MA_PATH_MAX];
	size_t n = 0;
	const char *p = path;
	while (*p) {
		while (*p == '/')
			p++;
		const char *s = p;
		while (*p && *p != '/')
			p++;
		size_t len = (size_t)(p - s);
		if (len == 0 || (len == 1 && s[0] == '.'))
			continue;
		if (len == 2 && s[0] == '.' && s[1] == '.') {
			if (n == 0)
				return ma_fail(e, "path %s climbs out of the root", path);
			while (n > 0 && clean[n - 1] != '/')
				n--;
			if (n > 0)
				n--; /* the slash */
			continue;
		}
		if (n + 1 + len >= sizeof clean)
			return ma_fail(e, "path too long: %s", path);
		clean[n++] = '/';
		memcpy(clean + n, s, len);
		n += len;
	}
	clean[n] = '\0';
	const char *r = (root && *root && strcmp(root, "/") != 0) ? root : "";
	size_t rlen = strlen(r);
	while (rlen > 0 && r[rlen - 1] == '/')
		rlen--;
	int w = snprintf(out, outlen, "%.*s%s", (int)rlen, r, n ? clean : "/");
	if (w < 0 || (size_t)w >= outlen)
		return ma_fail(e, "path too long: %s under %s", path, root);
	return 0;
}

static int mkdir_host(char *host, mode_t mode, ma_err *e)
{
	struct stat st;
	if (stat(host, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return 0;
		return ma_fail(e, "%s exists and is not a directory", host);
	}
	char *slash = strrchr(host, '/');
	if (slash && slash != host) {
		*slash = '\0';
		int rc = mkdir_host(host, mode, e);
		*slash = '/';
		if (rc)
			return rc;
	}
	if (mkdir(host, mode) != 0) {
		if (errno != EEXIST)
			return ma_fail_errno(e, errno, "mkdir %s", host);
		/* made meanwhile by someone else: a directory is used as it is, and nothing is done
		 * through a symlink planted there (a chmod would change its target) */
		if (lstat(host, &st) != 0 || !S_ISDIR(st.st_mode))
			return ma_fail(e, "%s appeared while it was being created and is not a directory", host);
		return 0;
	}
	if (chmod(host, mode) != 0) /* mkdir's mode is filtered by the umask */
		return ma_fail_errno(e, errno, "chmod %s", host);
	return 0;
}

static int pending_blocks_dir(const char *host, ma_err *e);

int ma_fs_mkdir(const char *root, const char *path, mode_t mode, ma_err *e)
{
	char host[MA_PATH_MAX];
	if (ma_fs_resolve(root, path, host, sizeof host, e))
		return -1;
	if (pending_blocks_dir(host, e))
		return -1;
	return mkdir_host(host, mode, e);
}

static int fsync_dir(const char *dir, ma_err *e)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return ma_fail_errno(e, errno, "open dir %s", dir);
	int rc = fsync(fd);
	int err = errno;
	close(fd);
	return rc ? ma_fail_errno(e, err, "fsync dir %s", dir) : 0;
}

static int same_content(const char *host, const void *data, size_t len, mode_t mode)
{
	struct stat st;
	/* lstat: a symlink is never "the same file", it is replaced (rename never follows it). */
	if (lstat(host, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size != len ||
	    (st.st_mode & 07777) != (mode & 07777))
		return 0;
	FILE *f = fopen(host, "rb");
	if (!f)
		return 0;
	char buf[8192];
	size_t off = 0, got;
	int same = 1;
	while (same && (got = fread(buf, 1, sizeof buf, f)) > 0) {
		if (off + got > len || memcmp(buf, (const char *)data + off, got) != 0)
			same = 0;
		off += got;
	}
	fclose(f);
	return same && off == len;
}

/* ---- group commit (see fs.h): temp files written now, made durable and renamed together ---- */
struct pending {
	char *host, *tmp; /* allocated to size: a group holds up to GROUP_MAX of them (issue 19's memory) */
	int fd;           /* open until its rename: the flock tells ma_fs_clean_temps its writer lives */
};
enum { GROUP_MAX = 128 }; /* fds held at once; a bigger group commits early */
static struct pending *pend;
static size_t npend;
static int group_on;
static char group_lead[MA_PATH_MAX]; /* renamed first when pending (ma_fs_group_lead) */

/* A directory where a file of the group is pending (or under it) would fail that file's rename. */
static int pending_blocks_dir(const char *host, ma_err *e)
{
	for (size_t i = 0; i < npend; i++) {
		size_t n = strlen(pend[i].host);
		if (!strncmp(host, pend[i].host, n) && (host[n] == '\0' || host[n] == '/'))
			return ma_fail(e, "mkdir %s: %s is a file (written by this run)", host, pend[i].host);
	}
	return 0;
}

static struct pending *pending_find(const char *host)
{
	for (size_t i = 0; i < npend; i++)
		if (!strcmp(pend[i].host, host))
			return &pend[i];
	return NULL;
}

static void pending_free(struct pending *p)
{
	free(p->host);
	free(p->tmp);
	p->host = p->tmp = NULL;
}

static void pending_drop(struct pending *p)
{
	close(p->fd);
	unlink(p->tmp);
	pending_free(p);
}

void ma_fs_group_begin(void)
{
	group_on = 1;
}

int ma_fs_group_active(void)
{
	return group_on;
}

size_t ma_fs_group_size(void)
{
	return npend;
}

int ma_fs_group_full(void)
{
	return npend == GROUP_MAX;
}

int ma_fs_group_pending(const char *root, const char *path)
{
	char host[MA_PATH_MAX];
	ma_err e;
	return ma_fs_resolve(root, path, host, sizeof host, &e) == 0 && pending_find(host) != NULL;
}

int ma_fs_group_lead(const char *root, const char *path, ma_err *e)
{
	group_lead[0] = '\0';
	return path ? ma_fs_resolve(root, path, group_lead, sizeof group_lead, e) : 0;
}

void ma_fs_group_abort(void)
{
	for (size_t i = 0; i < npend; i++)
		pending_drop(&pend[i]);
	npend = 0;
	group_on = 0;
}

static void dir_of(const char *host, char *dir, size_t n)
{
	snprintf(dir, n, "%s", host);
	char *slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, n, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
}

int ma_fs_group_commit(ma_err *e)
{
	if (!npend)
		return 0;
	size_t n = npend, i;
	npend = 0; /* whatever happens below, nothing stays pending */
	/* the lead file moves to the front, the others keep their order */
	for (i = 1; group_lead[0] && i < n; i++)
		if (!strcmp(pend[i].host, group_lead)) {
			struct pending lead = pend[i];
			memmove(&pend[1], &pend[0], i * sizeof *pend);
			pend[0] = lead;
			break;
		}
	/* start every file's writeback, then wait for each: the journal commits coalesce */
	for (i = 0; i < n; i++)
		(void)sync_file_range(pend[i].fd, 0, 0, SYNC_FILE_RANGE_WRITE);
	for (i = 0; i < n; i++)
		if (fsync(pend[i].fd) != 0) {
			int err = errno;
			ma_fail_errno(e, err, "fsync %s", pend[i].host);
			for (size_t k = 0; k < n; k++)
				pending_drop(&pend[k]);
			return -1;
		}
	/* renames in the order of first write, the lead first: the journal lands ahead of the files it names */
	int rc = 0;
	for (i = 0; i < n; i++) {
		if (rename(pend[i].tmp, pend[i].host) != 0) {
			rc = ma_fail_errno(e, errno, "rename into %s", pend[i].host);
			for (size_t k = i; k < n; k++)
				pending_drop(&pend[k]);
			n = i; /* the files already renamed stay durable: their directories are synced below */
			break;
		}
		close(pend[i].fd);
		MA_HOOK_MUTATION("write", pend[i].host);
	}
	/* each directory once, in the order the renames touched them */
	for (i = 0; i < n; i++) {
		char dir[MA_PATH_MAX], seen[MA_PATH_MAX];
		dir_of(pend[i].host, dir, sizeof dir);
		int dup = 0;
		for (size_t k = 0; k < i && !dup; k++) {
			dir_of(pend[k].host, seen, sizeof seen);
			dup = !strcmp(seen, dir);
		}
		if (!dup && fsync_dir(dir, rc ? NULL : e))
			rc = -1;
	}
	for (i = 0; i < n; i++)
		pending_free(&pend[i]);
	return rc;
}

int ma_fs_group_end(ma_err *e)
{
	group_on = 0;
	return ma_fs_group_commit(e);
}

/* Creates the temp file of an atomic write of host in dir, locked and with host's final mode: its
 * descriptor (tmp holds its name), or -1 with e set. */
static int create_temp(const char *host, const char *dir, const char *base, mode_t mode, char tmp[MA_PATH_MAX],
		       ma_err *e)
{
	if (snprintf(tmp, MA_PATH_MAX, "%s/.%s.tmp-XXXXXX", dir, base) >= MA_PATH_MAX)
		return ma_fail(e, "path too long: %s", host);
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return ma_fail_errno(e, errno, "create temp file for %s", host);
	/* Held until close: ma_fs_clean_temps leaves a temp file alone while its writer lives. */
	(void)flock(fd, LOCK_EX | LOCK_NB);
	/* Final mode before any byte is written: a private key is never readable by others. */
	if (fchmod(fd, mode) != 0) {
		int err = errno;
		close(fd);
		unlink(tmp);
		return ma_fail_errno(e, err, "chmod %s", host);
	}
	return fd;
}

/* Writes all of data to fd: 0, or the errno of the write that failed. */
static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* Hands the written temp file of host (fd still open) to the group: a full group commits first; a
 * rewrite of a pending file replaces its first temp file. On failure the temp file is gone. */
static int group_add(const char *host, const char *tmp, int fd, ma_err *e)
{
	struct pending *p = pending_find(host);
	char *tmp_copy = strdup(tmp), *host_copy = p ? NULL : strdup(host);
	int oom = !tmp_copy || (!p && !host_copy);
	if (!oom && !p && npend == GROUP_MAX && ma_fs_group_commit(e)) {
		free(tmp_copy), free(host_copy);
		close(fd);
		unlink(tmp);
		return -1;
	}
	if (oom || (!pend && !(pend = calloc(GROUP_MAX, sizeof *pend)))) {
		free(tmp_copy), free(host_copy);
		close(fd);
		unlink(tmp);
		return ma_fail(e, "out of memory writing %s", host);
	}
	if (p) { /* rewritten: the newest bytes take the place of the first write */
		close(p->fd);
		unlink(p->tmp);
		free(p->tmp);
	} else {
		p = &pend[npend++];
		p->host = host_copy;
	}
	p->tmp = tmp_copy;
	p->fd = fd;
	return 0;
}

static int write_host(const char *host, const void *data, size_t len, mode_t mode, ma_err *e)
{
	char dir[MA_PATH_MAX], tmp[MA_PATH_MAX];
	snprintf(dir, sizeof dir, "%s", host);
	char *slash = strrchr(dir, '/');
	const char *base = slash ? slash + 1 : dir;
	if (slash == dir)
		dir[1] = '\0';
	else if (slash)
		*slash = '\0';
	if (slash && mkdir_host(dir, 0755, e))
		return -1;
	int fd = create_temp(host, slash ? dir : ".", base, mode, tmp, e);
	if (fd < 0)
		return -1;
	MA_HOOK_FIRST_BYTE(fd, host);
	int err = write_all(fd, data, len);
	if (err) {
		close(fd);
		unlink(tmp);
		return ma_fail_errno(e, err, "write %s", host);
	}
	if (group_on)
		return group_add(host, tmp, fd, e);
	if (fsync(fd) != 0) {
		err = errno;
		close(fd);
		unlink(tmp);
		return ma_fail_errno(e, err, "fsync %s", host);
	}
	close(fd);
	if (rename(tmp, host) != 0) {
		err = errno;
		unlink(tmp);
		return ma_fail_errno(e, err, "rename into %s", host);
	}
	if (fsync_dir(slash ? dir : ".", e))
		return -1;
	MA_HOOK_MUTATION("write", host);
	return 0;
}

int ma_fs_write(const char *root, const char *path, const void *data, size_t len, mode_t mode,
		int *changed, ma_err *e)
{
	char host[MA_PATH_MAX];
	if (ma_fs_resolve(root, path, host, sizeof host, e))
		return -1;
	struct pending *p = pending_find(host);
	if (same_content(p ? p->tmp : host, data, len, mode)) {
		if (changed)
			*changed = 0;
		return 0;
	}
	if (changed)
		*changed = 1;
	return write_host(host, data, len, mode, e);
}

/* ---- streamed atomic writes (fs.h) ---- */
struct ma_fs_stream {
	int fd, synced;
	char host[MA_PATH_MAX], dir[MA_PATH_MAX], tmp[MA_PATH_MAX];
};

ma_fs_stream *ma_fs_stream_open(const char *root, const char *path, mode_t mode, ma_err *e)
{
	ma_fs_stream *s = calloc(1, sizeof *s);
	if (!s) {
		ma_fail(e, "out of memory writing %s", path);
		return NULL;
	}
	struct stat st;
	if (ma_fs_resolve(root, path, s->host, sizeof s->host, e))
		goto fail;
	dir_of(s->host, s->dir, sizeof s->dir);
	const char *slash = strrchr(s->host, '/');
	if (stat(s->dir, &st) != 0) {
		ma_fail_errno(e, errno, "the directory of %s", s->host);
		goto fail;
	}
	if (!S_ISDIR(st.st_mode)) {
		ma_fail(e, "%s is not a directory (writing %s)", s->dir, s->host);
		goto fail;
	}
	if ((s->fd = create_temp(s->host, s->dir, slash ? slash + 1 : s->host, mode, s->tmp, e)) < 0)
		goto fail;
	MA_HOOK_FIRST_BYTE(s->fd, s->host);
	return s;
fail:
	free(s);
	return NULL;
}

int ma_fs_stream_write(ma_fs_stream *s, const void *data, size_t len, ma_err *e)
{
	int err = write_all(s->fd, data, len);
	s->synced = 0;
	if (err)
		return ma_fail_errno(e, err, "write %s (temp file %s)", s->host, s->tmp);
	MA_HOOK_MUTATION("write", s->tmp); /* a crash test may end the process in the middle of the stream */
	return 0;
}

int ma_fs_stream_sync(ma_fs_stream *s, ma_err *e)
{
	if (s->synced)
		return 0;
	if (fsync(s->fd) != 0)
		return ma_fail_errno(e, errno, "fsync %s (temp file %s)", s->host, s->tmp);
	s->synced = 1;
	return 0;
}

int ma_fs_stream_fd(const ma_fs_stream *s)
{
	return s->fd;
}

const char *ma_fs_stream_host(const ma_fs_stream *s)
{
	return s->host;
}

void ma_fs_stream_abort(ma_fs_stream *s)
{
	if (!s)
		return;
	close(s->fd);
	unlink(s->tmp);
	free(s);
}

int ma_fs_stream_commit(ma_fs_stream *s, ma_err *e)
{
	if (ma_fs_stream_sync(s, e)) {
		ma_fs_stream_abort(s);
		return -1;
	}
	if (renameat2(AT_FDCWD, s->tmp, AT_FDCWD, s->host, RENAME_NOREPLACE) != 0) {
		int err = errno;
		if (err == EEXIST)
			ma_fail(e, "%s already exists: it is not replaced (remove it, or name another file)", s->host);
		else
			ma_fail_errno(e, err, "rename into %s", s->host);
		if (e)
			e->code = err;
		ma_fs_stream_abort(s);
		return -1;
	}
	close(s->fd);
	int rc = fsync_dir(s->dir, e);
	MA_HOOK_MUTATION("write", s->host);
	free(s);
	return rc;
}

/* Reads fd to its end, at most max bytes (more is an error naming host). Closes fd. */
static int read_fd(int fd, const char *host, size_t max, char **data, size_t *len, ma_err *e)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	if (!buf) {
		close(fd);
		return ma_fail(e, "out of memory reading %s", host);
	}
	for (;;) {
		if (n + 1 >= cap) {
			char *nb = realloc(buf, cap *= 2);
			if (!nb) {
				free(buf);
				close(fd);
				return ma_fail(e, "out of memory reading %s", host);
			}
			buf = nb;
		}
		size_t want = cap - n - 1;
		if (want > max - n + 1) /* one byte past max tells a bigger file */
			want = max - n + 1;
		ssize_t r = read(fd, buf + n, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int err = errno;
			free(buf);
			close(fd);
			return ma_fail_errno(e, err, "read %s", host);
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			free(buf);
			close(fd);
			ma_fail(e, "%s is larger than the %zu bytes allowed", host, max);
			if (e)
				e->code = EFBIG;
			return -1;
		}
	}
	close(fd);
	buf[n] = '\0';
	*data = buf;
	if (len)
		*len = n;
	return 0;
}

static int read_host(const char *host, char **data, size_t *len, ma_err *e)
{
	int fd = open(host, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ma_fail_errno(e, errno, "open %s", host);
	return read_fd(fd, host, (size_t)-1 - 1, data, len, e);
}

static const char *file_kind(mode_t m)
{
	return S_ISDIR(m) ? "a directory" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
	     : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

static int not_regular(const char *path, mode_t m, ma_err *e)
{
	ma_fail(e, "%s is %s, not a regular file", path, file_kind(m));
	if (e)
		e->code = S_ISDIR(m) ? EISDIR : EINVAL;
	return -1;
}

int ma_fs_read_regular(const char *path, size_t max, char **data, size_t *len, ma_err *e)
{
	struct stat st;
	if (!path || !*path)
		return ma_fail(e, "empty path");
	/* stat before open: a device or FIFO is never opened (opening some has effects, a FIFO blocks) */
	if (stat(path, &st) != 0)
		return ma_fail_errno(e, errno, "open %s", path);
	if (!S_ISREG(st.st_mode))
		return not_regular(path, st.st_mode, e);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return ma_fail_errno(e, errno, "open %s", path);
	if (fstat(fd, &st) != 0) {
		int err = errno;
		close(fd);
		return ma_fail_errno(e, err, "stat %s", path);
	}
	if (!S_ISREG(st.st_mode)) { /* replaced between the stat and the open */
		close(fd);
		return not_regular(path, st.st_mode, e);
	}
	if ((unsigned long long)st.st_size > (unsigned long long)max) {
		close(fd);
		ma_fail(e, "%s is %lld bytes, larger than the %zu bytes allowed", path, (long long)st.st_size, max);
		if (e)
			e->code = EFBIG;
		return -1;
	}
	return read_fd(fd, path, max, data, len, e);
}

int ma_fs_read(const char *root, const char *path, char **data, size_t *len, ma_err *e)
{
	char host[MA_PATH_MAX];
	if (ma_fs_resolve(root, path, host, sizeof host, e))
		return -1;
	struct pending *p = pending_find(host);
	if (p) /* this run's own write, not yet renamed: read it from its temp file */
		return read_host(p->tmp, data, len, e);
	return read_host(host, data, len, e);
}

int ma_fs_exists(const char *root, const char *path, ma_err *e)
{
	char host[MA_PATH_MAX];
	struct stat st;
	if (ma_fs_resolve(root, path, host, sizeof host, e))
		return -1;
	if (pending_find(host) || lstat(host, &st) == 0)
		return 1;
	if (errno == ENOENT || errno == ENOTDIR)
		return 0;
	return ma_fail_errno(e, errno, "stat %s", host);
}

int ma_fs_remove(const char *root, const char *path, ma_err *e)
{
	char host[MA_PATH_MAX];
	if (ma_fs_resolve(root, path, host, sizeof host, e))
		return -1;
	if (remove(host) != 0 && errno != ENOENT)
		return ma_fail_errno(e, errno, "remove %s", host);
	return 0;
}

static int remove_tree_host(const char *host, int keep_top, ma_err *e)
{
	struct stat st;
	if (lstat(host, &st) != 0)
		return errno == ENOENT ? 0 : ma_fail_errno(e, errno, "stat %s", host);
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(host);
		if (!d)
			return ma_fail_errno(e, errno, "opendir %s", host);
		struct dirent *de;
		char child[MA_PATH_MAX];
		while ((de = readdir(d))) {
			if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
				continue;
			if (snprintf(child, sizeof child, "%s/%s", host, de->d_name) >= (int)sizeof child) {
				closedir(d);
				return ma_fail(e, "path too long under %s", host);
			}
			if (remove_tree_host(child, 0, e)) {
				closedir(d);
				return -1;
			}
		}
		closedir(d);
		if (!keep_top && rmdir(host) != 0)
			return ma_fail_errno(e, errno, "rmdir %s", host);
		return 0;
	}
	if (keep_top)
		return ma_fail(e, "%s is not a directory", host);
	if (unlink(host) != 0 && errno != ENOENT)
		return ma_fail_errno(e, errno, "unlink %s", host);
	return 0;
}

int ma_fs_remove_tree(const char *root, const char *path, int keep_top, ma_err *e)
{
	char host[MA_PATH_MAX];
	if (ma_fs_resolve(root, path, host, sizeof host, e))
		return -1;
	if (strcmp(host, "/") == 0 && !keep_top)
		return ma_fail(e, "refusing to remove /");
	return remove_tree_host(host, keep_top, e);
}

int ma_fs_copy(const char *root, const char *from, const char *to, ma_err *e)
{
	char hfrom[MA_PATH_MAX], hto[MA_PATH_MAX];
	struct stat st;
	char *data;
	size_t len;
	if (ma_fs_resolve(root, from, hfrom, sizeof hfrom, e) || ma_fs_resolve(root, to, hto, sizeof hto, e))
		return -1;
	if (stat(hfrom, &st) != 0)
		return ma_fail_errno(e, errno, "stat %s", hfrom);
	if (read_host(hfrom, &data, &len, e))
		return -1;
	int rc = write_host(hto, data, len, st.st_mode & 07777, e);
	free(data);
	return rc;
}

/* The directory part of a host path (for its fsync). */
static void parent_of(const char *host, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s", host);
	char *slash = strrchr(out, '/');
	if (slash == out)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		snprintf(out, outlen, ".");
}

int ma_fs_rename(const char *root, const char *from, const char *to, int exchange, ma_err *e)
{
	char hfrom[MA_PATH_MAX], hto[MA_PATH_MAX], dfrom[MA_PATH_MAX], dto[MA_PATH_MAX];
	if (ma_fs_resolve(root, from, hfrom, sizeof hfrom, e) || ma_fs_resolve(root, to, hto, sizeof hto, e))
		return -1;
	if (renameat2(AT_FDCWD, hfrom, AT_FDCWD, hto, exchange ? RENAME_EXCHANGE : RENAME_NOREPLACE) != 0) {
		int err = errno;
		if (err == EXDEV)
			return ma_fail(e, "%s %s and %s: they are on different file systems", exchange ? "exchange" : "rename",
				       hfrom, hto);
		return ma_fail_errno(e, err, "%s %s %s %s", exchange ? "exchange" : "rename", hfrom,
				     exchange ? "with" : "to", hto);
	}
	parent_of(hfrom, dfrom, sizeof dfrom);
	parent_of(hto, dto, sizeof dto);
	if (fsync_dir(dfrom, e))
		return -1;
	return strcmp(dfrom, dto) ? fsync_dir(dto, e) : 0;
}

static int lock_fail(int fd, int err, ma_err *e, const char *what, const char *host)
{
	close(fd);
	return ma_fail_errno(e, err, "%s %s", what, host);
}

int ma_fs_lock(const char *root, const char *path, int *fd_out, long *holder, ma_err *e)
{
	char host[MA_PATH_MAX];
	if (ma_fs_resolve(root, path, host, sizeof host, e))
		return -1;
	*fd_out = -1;
	if (holder)
		*holder = 0;
	/* A holder may remove the file (reset empties /var/lib/moonadm): a lock taken on an inode that
	 * is no longer at the path is no lock, so try again on the new one. */
	for (int attempt = 0; attempt < 8; attempt++) {
		int fd = open(host, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
		if (fd < 0) {
			if (errno == ELOOP)
				return ma_fail(e, "lock file %s is a symlink: remove it (moonadm creates a regular file)",
					       host);
			return ma_fail_errno(e, errno, "open lock file %s", host);
		}
		struct stat st, cur;
		if (fstat(fd, &st) != 0)
			return lock_fail(fd, errno, e, "stat lock file", host);
		if (!S_ISREG(st.st_mode)) {
			close(fd);
			return ma_fail(e, "lock file %s is not a regular file: remove it", host);
		}
		if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
			int err = errno;
			if (err != EWOULDBLOCK && err != EAGAIN)
				return lock_fail(fd, err, e, "flock", host);
			/* The holder writes its pid right after its flock: give it up to 100 ms to do so. */
			for (int tries = 0; holder && tries < 50; tries++) {
				char buf[32];
				ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
				if (n > 0) {
					buf[n] = '\0';
					char *end;
					long pid = strtol(buf, &end, 10);
					if (pid > 0 && *end == '\n') {
						*holder = pid;
						break;
					}
				}
				struct timespec ts = {0, 2 * 1000 * 1000};
				nanosleep(&ts, NULL);
			}
			close(fd);
			return 1;
		}
		if (stat(host, &cur) != 0 || cur.st_ino != st.st_ino || cur.st_dev != st.st_dev) {
			close(fd);
			continue;
		}
		if (st.st_uid == geteuid() && (st.st_mode & 07777) != 0600 && fchmod(fd, 0600) != 0)
			return lock_fail(fd, errno, e, "chmod", host);
		char pid[32];
		int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
		if (ftruncate(fd, 0) != 0)
			return lock_fail(fd, errno, e, "truncate lock file", host);
		/* Not fsync'd: the pid is for a contender to read now, through the page cache; after a crash
		 * the flock is gone with its holder and the pid means nothing (a disk flush on every run). */
		if (pwrite(fd, pid, (size_t)len, 0) != len)
			return lock_fail(fd, errno ? errno : EIO, e, "write pid into lock file", host);
		*fd_out = fd;
		return 0;
	}
	return ma_fail(e, "lock file %s keeps being replaced while locking it: is another program removing it?", host);
}

void ma_fs_unlock(const char *root, const char *path, int fd)
{
	if (fd < 0)
		return;
	char host[MA_PATH_MAX];
	ma_err e;
	struct stat st, cur;
	if (ma_fs_resolve(root, path, host, sizeof host, &e) == 0 && fstat(fd, &st) == 0 && lstat(host, &cur) == 0 &&
	    st.st_ino == cur.st_ino && st.st_dev == cur.st_dev)
		(void)unlink(host); /* best effort: a file left behind is an unlocked lock file */
	close(fd);
}

/* ".NAME.tmp-XXXXXX": the name write_host gives a temp file (mkostemp's six letters and digits). */
static int is_temp_name(const char *name)
{
	size_t n = strlen(name);
	if (n < 1 + 1 + 5 + 6 || name[0] != '.' || memcmp(name + n - 11, ".tmp-", 5) != 0)
		return 0;
	for (size_t i = n - 6; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
			return 0;
	}
	return 1;
}

/* This process's start (wall clock): a temp file written before it is no writer of ours, and a live
 * writer of another process holds its flock (taken the moment after mkostemp). Captured before main. */
static struct timespec process_start;
__attribute__((constructor)) static void note_process_start(void)
{
	clock_gettime(CLOCK_REALTIME, &process_start);
}

static int older(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

static int clean_temps_host(const char *host, int depth, const struct timespec *before, int *removed, ma_err *e)
{
	DIR *d = opendir(host);
	if (!d) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		return ma_fail_errno(e, errno, "opendir %s (cleaning temp files)", host);
	}
	struct dirent *de;
	char child[MA_PATH_MAX];
	int rc = 0;
	while (rc == 0 && (de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (snprintf(child, sizeof child, "%s/%s", host, de->d_name) >= (int)sizeof child)
			continue; /* write_host could never have made it */
		struct stat st;
		if (lstat(child, &st) != 0)
			continue; /* gone meanwhile */
		if (S_ISDIR(st.st_mode)) {
			if (depth > 0)
				rc = clean_temps_host(child, depth - 1, before, removed, e);
			continue;
		}
		if (!S_ISREG(st.st_mode) || !is_temp_name(de->d_name) || !older(&st.st_mtim, before))
			continue;
		int fd = open(child, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			if (unlink(child) != 0 && errno != ENOENT)
				rc = ma_fail_errno(e, errno, "remove the temp file %s left by an interrupted run", child);
			else if (removed)
				(*removed)++;
		}
		close(fd);
	}
	closedir(d);
	return rc;
}

int ma_fs_clean_temps(const char *root, const char *dir, int depth, int *removed, ma_err *e)
{
	char host[MA_PATH_MAX];
	if (ma_fs_resolve(root, dir, host, sizeof host, e))
		return -1;
	if (removed)
		*removed = 0;
	return clean_temps_host(host, depth, &process_start, removed, e);
}
