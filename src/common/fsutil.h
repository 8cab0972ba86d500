/* File-system helpers for system code: every state file is written
 * atomically (temp file, fsync, rename, fsync of the directory) so a
 * SIGKILL at any point leaves either the old or the new content. */
#ifndef SL_FSUTIL_H
#define SL_FSUTIL_H

#include <stddef.h>
#include "sys_error.h"

/* Writes len bytes to path atomically with mode. Returns 0 or -1 (*e). */
int sl_write_file_atomic(const char *path, const void *data, size_t len, int mode, sl_error *e);
/* Reads a whole file (at most max bytes) into a malloc'd, NUL-terminated
 * buffer. Returns 0 or -1 (*e; errnum ENOENT for a missing file, EFBIG
 * beyond max). */
int sl_read_file(const char *path, size_t max, char **data, size_t *len, sl_error *e);
/* mkdir -p with mode for created directories. Returns 0 or -1 (*e). */
int sl_mkdir_p(const char *path, int mode, sl_error *e);
/* rm -rf that stays on one file system and never follows symlinks.
 * A missing path is fine. Returns 0 or -1 (*e). */
int sl_rm_rf(const char *path, sl_error *e);
/* Joins a and b with one '/', into a malloc'd string (NULL on ENOMEM). */
char *sl_path_join(const char *a, const char *b);

/* Scoped cleanup helpers: `SL_AUTOFREE char *p = ...;` */
void sl_freep(void *p);
void sl_closep(int *fd);

/* Raises the soft open-file limit to the hard one (as Go programs do at
 * start): a daemon holds several fds per streaming session, and the
 * default soft limit (1024) would cap it near 300 sessions. Containers get
 * their own limit from the OCI spec. */
void sl_raise_nofile(void);

/* In a child forked from a threaded process: closes every fd from 3 up
 * but a and b (close_range, async-signal-safe), so it holds no copy of
 * pipes other threads' children wait on. */
void sl_close_fds_except(int a, int b);

/* The two O_CLOEXEC pipes of a helper child: ready (its report to the
 * parent) and done (the parent's word back; EOF lets it go). 0, or -1
 * (*e) with neither open. */
int sl_helper_pipes(int ready[2], int done[2], sl_error *e);
#define SL_AUTOFREE __attribute__((cleanup(sl_freep)))
#define SL_AUTOCLOSE __attribute__((cleanup(sl_closep)))

#endif
