#include "cri/ctr_devices.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"

static int check(size_t i, const Runtime__V1__Device *d, char access[4], sl_error *e)
{
    if (!*d->host_path)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT, "devices[%zu].host_path: empty", i);
    if (*d->host_path != '/')
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "devices[%zu].host_path: \"%s\" is not absolute", i, d->host_path);
    if (*d->container_path && *d->container_path != '/')
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "devices[%zu].container_path: \"%s\" is not absolute", i,
                             d->container_path);
    if (sl_oci_device_access(d->permissions, access) < 0)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "devices[%zu].permissions: \"%s\": one or more of r, w, m, each once",
                             i, d->permissions);
    return 0;
}

static int add(size_t i, const Runtime__V1__Device *d, sl_oci_devices *out, sl_error *e)
{
    char access[4];
    if (check(i, d, access, e) < 0)
        return -1;
    SL_AUTOFREE char *host = realpath(d->host_path, NULL);
    sl_error err = {0};
    if (!host)
        sl_error_set(&err, errno, "\"%s\"", d->host_path);
    else if (sl_oci_devices_add(out, host, d->container_path, access, &err) == 0)
        return 0;
    return sl_error_code(
        e, err.errnum == ENOMEM ? SL_GRPC_RESOURCE_EXHAUSTED : SL_GRPC_INVALID_ARGUMENT,
        "devices[%zu].host_path: %s", i, err.msg);
}

int sl_ctr_devices(const Runtime__V1__ContainerConfig *c, sl_oci_devices *out, sl_error *e)
{
    *out = (sl_oci_devices){0};
    if (c->n_cdi_devices)
        return sl_error_code(e, SL_GRPC_UNIMPLEMENTED,
                             "CDI_devices: CDI devices are not supported (\"%s\")",
                             c->cdi_devices[0]->name);
    for (size_t i = 0; i < c->n_devices; i++) {
        if (add(i, c->devices[i], out, e) < 0) {
            sl_oci_devices_fini(out);
            return -1;
        }
    }
    return 0;
}
