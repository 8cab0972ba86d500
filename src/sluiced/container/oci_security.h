/* The security part of a container's OCI spec: capabilities, no new
 * privileges, additional groups, masked and read-only paths, seccomp, and
 * what "privileged" means (as containerd: every host device with rwm
 * access, /sys and /sys/fs/cgroup read-write, nothing masked). */
#ifndef SL_OCI_SECURITY_H
#define SL_OCI_SECURITY_H

#include <jansson.h>

#include "container/oci_spec.h"
#include "sys_error.h"

/* Host devices of one privileged container (a /dev with more is refused). */
#define SL_OCI_MAX_HOST_DEVICES 4096
/* Directory depth under /dev that is walked for devices. */
#define SL_OCI_MAX_DEV_DEPTH 8

/* Sets the security fields of spec (built by oci_spec.c) from in.
 * Returns 0 or -1 (*e). */
int sl_oci_security_apply(json_t *spec, const sl_oci_input *in, sl_error *e);

/* Every block and character device under dir (as containerd's
 * HostDevices: not pts, shm, fd, mqueue, nor the console), as OCI
 * linux.devices entries, appended to out. Returns 0 or -1 (*e). */
int sl_oci_host_devices(const char *dir, json_t *out, sl_error *e);

#endif
