/* Image references and digests, normalised the way the kubelet, containerd
 * and docker do ("busybox" -> "docker.io/library/busybox:latest").
 *
 * Grammar (distribution's reference package): name [":" tag] ["@" digest];
 * name = [domain "/"] component ("/" component)*, components lowercase
 * [a-z0-9] runs joined by ".", "_", "__" or "-"s; the first part is a domain
 * when it holds "." or ":" or is "localhost"; tag = [A-Za-z0-9_][A-Za-z0-9_.-]
 * {0,127}; digest = "sha256:" + 64 lowercase hex (the only algorithm kept). */
#ifndef SL_IMAGE_REF_H
#define SL_IMAGE_REF_H

#include <stddef.h>

#include "image_tar.h"
#include "sys_error.h"

#define SL_IMAGE_DEFAULT_DOMAIN "docker.io"
#define SL_IMAGE_DEFAULT_TAG "latest"
#define SL_IMAGE_NAME_MAX 255 /* bytes of a full repository name */
#define SL_IMAGE_TAG_MAX 128
/* Longest normalised reference: name ":" tag "@" digest, NUL. */
#define SL_IMAGE_REF_MAX (SL_IMAGE_NAME_MAX + 1 + SL_IMAGE_TAG_MAX + 1 + SL_DIGEST_STR_LEN)
/* Shortest id prefix accepted as a reference (like docker's short ids). */
#define SL_IMAGE_ID_PREFIX_MIN 12

typedef struct sl_image_ref {
    char name[SL_IMAGE_NAME_MAX + 1]; /* "docker.io/library/busybox" */
    char tag[SL_IMAGE_TAG_MAX + 1];   /* "" only when a digest is given */
    char digest[SL_DIGEST_STR_LEN];   /* "" when none */
} sl_image_ref;

/* Parses and normalises s. The tag defaults to "latest" when neither tag nor
 * digest is given. Returns 0, or -1 with *e (EINVAL) naming what is wrong. */
int sl_image_ref_parse(const char *s, sl_image_ref *r, sl_error *e);
/* "name:tag" (tag empty -> "") into out; returns 0 or -1 when it does not fit. */
int sl_image_ref_name_tag(const sl_image_ref *r, char *out, size_t n);
/* "name@digest" for the given digest into out; 0 or -1 when it does not fit. */
int sl_image_ref_name_digest(const char *name, const char *digest, char *out, size_t n);
/* The normalised form of s: "name:tag", "name@digest" or "name:tag@digest". */
int sl_image_ref_normalize(const char *s, char *out, size_t n, sl_error *e);

/* "sha256:" + hex of a 32-byte SHA-256 into out. */
void sl_digest_format(const unsigned char md[32], char out[SL_DIGEST_STR_LEN]);
/* 1 when s is "sha256:" followed by exactly 64 lowercase hex digits. */
int sl_digest_valid(const char *s);
/* 1 when s is n lowercase hex digits (and nothing more when exact). */
int sl_hex_valid(const char *s, size_t n, int exact);

#endif
