/* Host device nodes for a container: linux.devices entries (type, major and
 * minor from a stat of the host node, its mode and owner) and the matching
 * linux.resources.devices allow rules with the requested access. A host
 * directory adds every device node under it, as containerd does (skipping
 * pts, shm, fd, mqueue, console, symlinks and FIFOs). */
#ifndef SL_OCI_DEVICES_H
#define SL_OCI_DEVICES_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "sys_error.h"

#define SL_DEVICES_MAX 1024 /* device nodes of one container */
#define SL_DEVICES_DEPTH 8  /* directory levels walked under a host directory */
#define SL_DEVICE_PATH_MAX 4096

typedef struct sl_oci_device {
    char *path; /* in the container (owned) */
    char type;  /* 'c' or 'b' */
    int64_t major, minor;
    uint32_t mode, uid, gid; /* permission bits, owner */
    char access[4];          /* a subset of "rwm", in that order */
} sl_oci_device;

typedef struct sl_oci_devices {
    sl_oci_device *v;
    size_t n, cap;
} sl_oci_devices;

/* Normalises a cgroup permission string ("mrw" -> "rwm"). Returns 0, or -1
 * when it is empty or holds another letter or a letter twice. */
int sl_oci_device_access(const char *perm, char out[4]);

/* Adds the device node host (absolute, symlinks resolved before) as ctr in
 * the container (NULL or "": the host path), or every node under the
 * directory host (ctr is then their parent). Returns 0, or -1 with *e
 * (errnum ENOENT: missing; ENODEV: neither a device node nor a directory;
 * E2BIG: over SL_DEVICES_MAX). */
int sl_oci_devices_add(sl_oci_devices *d, const char *host, const char *ctr, const char *access,
                       sl_error *e);
void sl_oci_devices_fini(sl_oci_devices *d);

/* Adds linux.devices and the allow rules under linux.resources.devices
 * (after what is there: the deny-all rule first) to the linux object. */
void sl_oci_devices_json(json_t *linux_section, const sl_oci_device *v, size_t n);

#endif
