/* ContainerConfig.devices to OCI devices and allow rules (oci_devices.h):
 * host_path absolute (symlinks resolved), container_path absolute or empty
 * (then the host path), permissions a non-empty subset of "rwm". Refused
 * naming devices[i].<field>: a missing host path, a path that is neither a
 * device node nor a directory, bad permissions; cdi_devices (CDI is not
 * supported) as UNIMPLEMENTED. */
#ifndef SL_CTR_DEVICES_H
#define SL_CTR_DEVICES_H

#include "container/oci_devices.h"
#include "grpc/api.pb-c.h"
#include "grpc/grpc_status.h"
#include "sys_error.h"

/* Returns 0 (free out with sl_oci_devices_fini) or -1 (*e). */
int sl_ctr_devices(const Runtime__V1__ContainerConfig *c, sl_oci_devices *out, sl_error *e);

#endif
