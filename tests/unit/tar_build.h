/* Building tar archives in tests (libarchive's writer), shared by the layer
 * unpacker's and the image store's tests. */
#ifndef TEST_TAR_BUILD_H
#define TEST_TAR_BUILD_H

#include <archive.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "image/image_ref.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

typedef struct tar_buf {
    unsigned char *p;
    size_t len, cap;
} tar_buf;

typedef struct tar_ent {
    const char *path;
    unsigned type; /* AE_IF* (0: AE_IFREG); 0 with link set: a hard link */
    unsigned mode; /* 0: 0644 */
    const char *data;
    const char *link; /* symlink or hard-link target */
    unsigned uid, gid;
    time_t mtime; /* 0: a fixed time */
    dev_t rdev;
    const char *xattr; /* "name" with value "v" */
} tar_ent;

/* Appends to b (a libarchive write callback too: arg is the tar_buf). */
la_ssize_t tar_buf_write(struct archive *a, void *arg, const void *data, size_t n);
/* Adds x with its data (strlen; none for a hard link). */
void tar_add(struct archive *a, const tar_ent *x);
/* Adds x with `size` bytes of `data` (which may hold NULs). */
void tar_add_bytes(struct archive *a, const tar_ent *x, const void *data, size_t size);
/* A whole archive of ents in memory, gzip-compressed or not. */
tar_buf tar_make(const tar_ent *ents, size_t n, int gzip);
void tar_sha256(const void *data, size_t len, char out[SL_DIGEST_STR_LEN]);
/* A hand-made ustar header (for sizes the writer would refuse or pad). */
void tar_raw_header(unsigned char h[512], const char *name, char type, const char *size_octal);

/* The file holds exactly `content`. */
void tar_assert_file(const char *path, const char *content);
/* The number a shell command prints (e.g. "ls -A dir | wc -l"). */
size_t tar_shell_count(const char *cmd);

#endif
