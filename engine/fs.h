/* Files under a root prefix: every node path ("/etc/kubernetes/pki/ca.key") is resolved
 * under `root` ("/" on a real node, a temp dir in tests, a node dir in the lab).
 * Writes are atomic (temp file created with the final mode, fsync, rename, fsync dir),
 * so a crash leaves either the old file or the new one, never half of either. */
#ifndef MA_FS_H
#define MA_FS_H

#include <stddef.h>
#include <sys/types.h>

#include "err.h"

#define MA_PATH_MAX 4096

/* Joins root and a node path, lexically cleaned; refuses paths that climb out of root. */
int ma_fs_resolve(const char *root, const char *path, char *out, size_t outlen, ma_err *e);

/* Atomic write with final mode. *changed (if not NULL) tells whether the bytes or mode differed
 * from what was there; an identical file is left untouched. Parent dirs are created 0755. */
int ma_fs_write(const char *root, const char *path, const void *data, size_t len, mode_t mode,
		int *changed, ma_err *e);
/* Group commit: between ma_fs_group_begin and ma_fs_group_end, ma_fs_write writes each temp file
 * (final mode from its first byte, as always) but neither fsyncs nor renames it; ma_fs_read and
 * ma_fs_exists see the pending bytes. ma_fs_group_commit makes every pending file durable at once
 * (writeback started for all, then one fsync each: the file system's journal commits coalesce),
 * renames them in the order they were first written (a rewrite keeps its place) and fsyncs each
 * directory once: N files cost about one journal commit instead of 2N fsyncs. A crash before the
 * commit leaves the old files and stray temps (ma_fs_clean_temps), never a half-written file. The
 * bindings commit before anything another process could observe (a process, an API or etcd call,
 * a sleep, any other file operation): see bindings/commit.c. Not thread-safe (the Lua thread). */
void ma_fs_group_begin(void);
int ma_fs_group_active(void);
int ma_fs_group_commit(ma_err *e);
/* Files waiting for the commit, and whether this path is one of them. A write that finds the group
 * full (ma_fs_group_full) commits it first. */
size_t ma_fs_group_size(void);
int ma_fs_group_full(void);
int ma_fs_group_pending(const char *root, const char *path);
/* The file renamed first by every commit it is part of, whenever it was first written (the journal,
 * which must land ahead of the files it names); NULL path: none. */
int ma_fs_group_lead(const char *root, const char *path, ma_err *e);
/* Leaves group mode without landing anything: every pending temp file is removed (a run that cannot
 * make its records durable must not make the files they name visible). */
void ma_fs_group_abort(void);
/* Commits and leaves group mode. */
int ma_fs_group_end(ma_err *e);

/* An atomic write of bytes that come in pieces (a snapshot streamed from etcd): ma_fs_write's temp
 * file (".NAME.tmp-XXXXXX" beside path, flocked, its final mode before the first byte), filled piece
 * by piece. ma_fs_stream_commit makes it durable (fsync), renames it into place without replacing
 * an existing file (e->code EEXIST) and fsyncs the directory; ma_fs_stream_abort removes it. Both
 * free the handle, and a failed commit removes the temp file: nothing half-written is ever left at
 * path. The directory must exist. Not part of a group commit (fs.h's group is for small files). */
typedef struct ma_fs_stream ma_fs_stream;
ma_fs_stream *ma_fs_stream_open(const char *root, const char *path, mode_t mode, ma_err *e);
int ma_fs_stream_write(ma_fs_stream *s, const void *data, size_t len, ma_err *e);
/* fsync of the temp file: what it holds is on disk and may be read back (ma_fs_stream_fd) before
 * the commit. */
int ma_fs_stream_sync(ma_fs_stream *s, ma_err *e);
int ma_fs_stream_fd(const ma_fs_stream *s);
const char *ma_fs_stream_host(const ma_fs_stream *s); /* the target's host path */
int ma_fs_stream_commit(ma_fs_stream *s, ma_err *e);
void ma_fs_stream_abort(ma_fs_stream *s);

/* Reads a whole file into a malloc'd NUL-terminated buffer. */
int ma_fs_read(const char *root, const char *path, char **data, size_t *len, ma_err *e);
/* Reads a host path as given (relative to the working directory, under no root): the user's own
 * files (--config, --patches). Only a regular file (symlinks followed) of at most max bytes: a
 * directory, device, FIFO or socket is refused before it is opened (e->code EISDIR or EINVAL,
 * "PATH is a directory, not a regular file"), a bigger file without reading past max (EFBIG). */
int ma_fs_read_regular(const char *path, size_t max, char **data, size_t *len, ma_err *e);
/* mkdir -p; directories it creates get `mode`. */
int ma_fs_mkdir(const char *root, const char *path, mode_t mode, ma_err *e);
/* 1 if it exists, 0 if not, -1 on another error. */
int ma_fs_exists(const char *root, const char *path, ma_err *e);
/* Removes a file or an empty dir; a missing path is not an error. */
int ma_fs_remove(const char *root, const char *path, ma_err *e);
/* rm -rf; with keep_top, only the contents of the directory go. */
int ma_fs_remove_tree(const char *root, const char *path, int keep_top, ma_err *e);
/* Copies a file atomically (same mode), e.g. a backup before an upgrade rewrites it. */
int ma_fs_copy(const char *root, const char *from, const char *to, ma_err *e);
/* rename(2) of a file or directory, durable (both parent dirs fsynced); never replaces a non-empty
 * directory. With exchange, both paths must exist and swap atomically (renameat2 RENAME_EXCHANGE):
 * at every instant each path names one complete tree, so a directory restored this way is never
 * seen empty or half-copied, even by a crash between the two halves. Same file system only. */
int ma_fs_rename(const char *root, const char *from, const char *to, int exchange, ma_err *e);

/* The root lock (one moonadm at a time on a root): opens or creates `path` (0600, never through a
 * symlink), takes a non-blocking flock on it and records this process's pid in it. Returns 0 with
 * *fd set (close it to release; the kernel releases it when the process dies), 1 when another
 * process holds it (*holder = the pid it recorded, 0 if unreadable), -1 on an error. The file is
 * written in place, not renamed: a lock must stay on one inode. Its directory must exist. A
 * crashed holder leaves the file behind, unlocked: the next ma_fs_lock takes it. */
int ma_fs_lock(const char *root, const char *path, int *fd, long *holder, ma_err *e);
/* Releases a lock of ma_fs_lock: removes the lock file while still holding it (only if `path` is
 * still the locked inode), then closes fd. A contender that opened the old file sees, once it has
 * the flock, that the path no longer names it, and tries again on a new file: no two holders. */
void ma_fs_unlock(const char *root, const char *path, int fd);

/* Removes the temp files of atomic writes (".NAME.tmp-XXXXXX", see ma_fs_write) that a killed run
 * left in `dir` and, down to `depth` levels, its subdirectories (symlinks are not followed). A temp
 * file is removed only when no live writer holds it (each writer keeps an flock on its temp file
 * until the rename) and it was last written before this process started (a killed run's group
 * commit leaves the temps it had not renamed yet; the run that resumes it removes them at once). *removed (if not NULL)
 * counts them. A missing dir is not an error. */
int ma_fs_clean_temps(const char *root, const char *dir, int depth, int *removed, ma_err *e);

#endif
