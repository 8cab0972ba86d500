/* The mounts array of the OCI spec: the standard mounts, less those a
 * container mount replaces (same destination, or anything under /dev when
 * /dev itself is mounted, as containerd does), then the container's binds. */
#ifndef SL_OCI_MOUNTS_H
#define SL_OCI_MOUNTS_H

#include <jansson.h>

#include "container/oci_spec.h"

/* Takes std (an array of OCI mounts, stolen) and returns the full array,
 * or NULL on ENOMEM. */
json_t *sl_oci_mounts_json(json_t *std, const sl_oci_mount *binds, size_t n);

/* Copies p into out (cap bytes) without repeated or trailing slashes and
 * "." components, so equal destinations compare equal. */
void sl_oci_path_clean(const char *p, char *out, size_t cap);

#endif
