#include "pod/sysctl.h"

#include <stdio.h>
#include <string.h>

#include "grpc/grpc_status.h"

/* The first separator tells the forms apart (the kubelet's NormalizeName). */
static bool slash_form(const char *name)
{
    const char *sep = strpbrk(name, "./");
    return sep && *sep == '/';
}

static bool name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
}

/* Every component of a /proc/sys relative path: non-empty, not "." or
 * "..", only name characters. */
static bool path_ok(const char *path)
{
    for (const char *p = path;;) {
        size_t n = strcspn(p, "/");
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        for (size_t i = 0; i < n; i++)
            if (!name_char(p[i]))
                return false;
        if (!p[n])
            return true;
        p += n + 1;
    }
}

/* Copies name, swapping '.' and '/' when swap. */
static int copy_swapped(const char *name, bool swap, char *out, size_t cap)
{
    size_t n = strlen(name);
    if (n == 0 || n > SL_SYSCTL_NAME_MAX || n >= cap)
        return -1;
    for (size_t i = 0; i <= n; i++)
        out[i] = !swap ? name[i] : name[i] == '.' ? '/' : name[i] == '/' ? '.' : name[i];
    return 0;
}

int sl_sysctl_path(const char *name, char *out, size_t cap)
{
    if (copy_swapped(name, !slash_form(name), out, cap) < 0 || !path_ok(out))
        return -1;
    return 0;
}

sl_sysctl_ns sl_sysctl_classify(const char *name)
{
    char dot[SL_SYSCTL_NAME_MAX + 1];
    if (copy_swapped(name, slash_form(name), dot, sizeof(dot)) < 0)
        return SL_SYSCTL_NOT_NAMESPACED;
    if (!strcmp(dot, "kernel.sem") || !strncmp(dot, "kernel.shm", 10) ||
        !strncmp(dot, "kernel.msg", 10) || !strncmp(dot, "fs.mqueue.", 10))
        return SL_SYSCTL_IPC;
    if (!strncmp(dot, "net.", 4))
        return SL_SYSCTL_NET;
    return SL_SYSCTL_NOT_NAMESPACED;
}

static int check_value(const char *name, const char *value, sl_error *e)
{
    size_t n = strlen(value);
    if (n == 0)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT, "linux.sysctls[\"%s\"]: empty value",
                             name);
    if (n > SL_SYSCTL_VALUE_MAX)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "linux.sysctls[\"%s\"]: value of %zu bytes, more than %d", name, n,
                             SL_SYSCTL_VALUE_MAX);
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)value[i] < 0x20 && value[i] != '\t') || value[i] == 0x7f)
            return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                                 "linux.sysctls[\"%s\"]: value has a control character", name);
    return 0;
}

int sl_sysctl_check(const char *name, const char *value, bool host_network, bool host_ipc,
                    sl_error *e)
{
    char path[SL_SYSCTL_PATH_MAX];
    if (sl_sysctl_path(name, path, sizeof(path)) < 0)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "linux.sysctls[\"%.*s\"]: not a sysctl name (components of letters, "
                             "digits, '_', '-', at most %d bytes)",
                             SL_SYSCTL_NAME_MAX, name, SL_SYSCTL_NAME_MAX);
    switch (sl_sysctl_classify(name)) {
    case SL_SYSCTL_NOT_NAMESPACED:
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "linux.sysctls[\"%s\"]: not a namespaced sysctl (a pod can set "
                             "kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.* and net.*)",
                             name);
    case SL_SYSCTL_NET:
        if (host_network)
            return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                                 "linux.sysctls[\"%s\"]: a net.* sysctl cannot be set on a pod "
                                 "with host network (namespace_options.network NODE)",
                                 name);
        break;
    case SL_SYSCTL_IPC:
        if (host_ipc)
            return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                                 "linux.sysctls[\"%s\"]: an IPC sysctl cannot be set on a pod "
                                 "with host IPC (namespace_options.ipc NODE)",
                                 name);
        break;
    }
    return check_value(name, value, e);
}
