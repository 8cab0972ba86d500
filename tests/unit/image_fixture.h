/* The image store's test images and fixture: OCI and docker-archive
 * tarballs of two layers built in memory, and a store in a scratch root.
 * Shared by test_image_store.c, test_image_recovery.c and test_image_bad.c. */
#ifndef TEST_IMAGE_FIXTURE_H
#define TEST_IMAGE_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>

#include "image/image_store.h"
#include "tar_build.h"

/* Members of the outer tarball, written to a file. */
typedef struct member {
    char name[160];
    unsigned char *data;
    size_t len;
} member;

typedef struct opts {
    const char *name;  /* OCI: io.containerd.image.name; docker: RepoTags[0] */
    const char *cmd;   /* makes the config, so the id, unique */
    const tar_ent *l2; /* layer 2 (default L2), gzip-compressed */
    size_t nl2;
    int tamper_layer;  /* change layer 2's blob after naming it */
    int tamper_config; /* change the config after naming it */
    int wrong_diff_id; /* the config lists a wrong diff id for layer 2 */
    int second_image;  /* OCI: a second image (cmd "two") in the index */
    const char *alias; /* OCI: the first manifest listed again under this name */
} opts;

typedef struct built {
    char id[SL_DIGEST_STR_LEN], id2[SL_DIGEST_STR_LEN];
    char manifest[SL_DIGEST_STR_LEN];
    char d1[SL_DIGEST_STR_LEN], d2[SL_DIGEST_STR_LEN];
} built;

/* Writes an image tarball (OCI layout or docker-archive) to path; b gets
 * its digests. */
typedef void (*image_writer)(const char *path, const opts *o, built *b);
void write_oci(const char *path, const opts *o, built *b);
void write_docker(const char *path, const opts *o, built *b);
void write_outer(const char *path, const member *m, size_t n);

typedef struct fx {
    char root[64], work[64];
    sl_image_store *s;
} fx;

int fx_setup(void **state);
int fx_teardown(void **state);
/* The store needs root (chown, mknod, trusted xattrs): says so if not. */
bool image_tests_skipped(void);
/* A path in the work directory (one of four rotating buffers). */
char *wpath(const fx *f, const char *name);

void import_ok(fx *f, const char *path, const char *extra, size_t want_ids);
const sl_image *find_ok(fx *f, const char *ref);
void assert_absent(fx *f, const char *ref);
size_t count_dir(const char *dir);
/* Everything under the root (but the lock) and the index's bytes. */
char *snapshot(const fx *f);
/* img holds the two layers of b, unpacked as expected. */
void check_layers(const sl_image *img, const built *b);

#endif
