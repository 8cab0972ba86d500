/* A pod's sysctls (LinuxPodSandboxConfig.sysctls): only the namespaced ones
 * can be set per pod, classified as the kubelet and runc do it — kernel.shm*,
 * kernel.msg*, kernel.sem and fs.mqueue.* live in the IPC namespace, net.*
 * in the network namespace. Names come in the dot form ("net.ipv4.ip_forward";
 * a '/' stands for a '.' inside one component, as in
 * "net.ipv4.conf.eth0/100.rp_filter") or the slash form
 * ("net/ipv4/conf/eth0.100/rp_filter"), told apart by the first separator.
 * Pure functions: the values are written by pod/netns.c. */
#ifndef SL_POD_SYSCTL_H
#define SL_POD_SYSCTL_H

#include <stdbool.h>
#include <stddef.h>

#include "sys_error.h"

#define SL_SYSCTL_NAME_MAX 253   /* the kubelet's limit on a sysctl name */
#define SL_SYSCTL_VALUE_MAX 4095 /* /proc/sys takes at most a page per write */
#define SL_POD_MAX_SYSCTLS 256   /* sysctls in one pod config */
/* "/proc/sys/" + the longest name + NUL. */
#define SL_SYSCTL_PATH_MAX (sizeof("/proc/sys/") + SL_SYSCTL_NAME_MAX)

typedef enum sl_sysctl_ns {
    SL_SYSCTL_NOT_NAMESPACED = 0,
    SL_SYSCTL_IPC,
    SL_SYSCTL_NET,
} sl_sysctl_ns;

/* The namespace a well-formed name belongs to (either form). */
sl_sysctl_ns sl_sysctl_classify(const char *name);

/* The file under /proc/sys of a well-formed name, into out (cap bytes):
 * "net/ipv4/conf/eth0.100/rp_filter" for both forms above. Returns 0, or
 * -1 when the name is malformed (empty components, "." or "..", characters
 * other than letters, digits, '_', '-', '.', '/') or longer than
 * SL_SYSCTL_NAME_MAX or cap. */
int sl_sysctl_path(const char *name, char *out, size_t cap);

/* Everything that can be said before writing: the name is well formed and
 * namespaced, its namespace is the pod's own (no net.* with host network,
 * no IPC sysctl with host IPC), the value fits and has no control
 * characters. Returns 0 or -1 with *e (code INVALID_ARGUMENT) naming the
 * field, e.g. `linux.sysctls["kernel.panic"]: ...`. */
int sl_sysctl_check(const char *name, const char *value, bool host_network, bool host_ipc,
                    sl_error *e);

#endif
