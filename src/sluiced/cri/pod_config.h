/* The pod's identity and network fields of a PodSandboxConfig (hostname,
 * log_directory, dns_config, port_mappings, linux.sysctls), checked where
 * they enter (RunPodSandbox) and turned into what the pod/ modules take;
 * and the container's log_path, checked at CreateContainer. */
#ifndef SL_CRI_POD_CONFIG_H
#define SL_CRI_POD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "grpc/api.pb-c.h"
#include "pod/cni.h"
#include "pod/etc_files.h"
#include "pod/netns.h"
#include "pod/sysctl.h"
#include "sys_error.h"

#define SL_POD_MAX_PORT_MAPPINGS 1024 /* port_mappings of one pod */

/* Every check of those fields; host_network / host_ipc are the pod's
 * namespace modes (NODE). Returns 0 or -1 with *e (INVALID_ARGUMENT naming
 * the field, e.g. "port_mappings[1].host_ip: ..."). */
int sl_pod_config_check(const Runtime__V1__PodSandboxConfig *c, bool host_network, bool host_ipc,
                        sl_error *e);

/* linux.sysctls in order, into out (room for SL_POD_MAX_SYSCTLS). The
 * strings stay c's. Returns how many. */
size_t sl_pod_config_sysctls(const Runtime__V1__PodSandboxConfig *c, sl_pod_sysctl *out);

/* The mappings with a host port, as CNI portmap entries, in a malloc'd
 * array (*out; NULL when there are none). Returns how many; strings stay
 * c's. On ENOMEM returns 0 with *out NULL. */
size_t sl_pod_config_portmaps(const Runtime__V1__PodSandboxConfig *c, sl_cni_portmap **out);

/* Index of the first mapping with a host port, or -1. */
int sl_pod_config_first_host_port(const Runtime__V1__PodSandboxConfig *c);

/* dns_config as pod/etc_files.h takes it; NULL when the config has none. */
const sl_pod_dns *sl_pod_config_dns(const Runtime__V1__PodSandboxConfig *c, sl_pod_dns *buf);

/* A container's log_path: "" or a relative path that names a file inside
 * the pod's log_directory ("name/0.log"), never leaving it through "..".
 * Returns 0 or -1 with *e (INVALID_ARGUMENT naming log_path). */
int sl_cri_log_path_check(const char *log_path, sl_error *e);

#endif
