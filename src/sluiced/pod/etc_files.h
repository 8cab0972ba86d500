/* The pod's /etc/hostname, /etc/hosts and /etc/resolv.conf: written once
 * per pod at RunPodSandbox into <pod run dir>/etc and bind-mounted into
 * every container of the pod, unless the container config mounts that
 * path itself (the kubelet mounts its own /etc/hosts into most pods).
 *
 * Contents, as containerd and the kubelet make them:
 * - hostname: the pod's hostname, else the node's, and a newline;
 * - hosts: with the pod's own network, the localhost and IPv6 lines the
 *   kubelet writes plus "<pod ip>\t<hostname>"; with host network, a copy
 *   of the host's /etc/hosts;
 * - resolv.conf: search, nameserver and options lines from dns_config, or a
 *   copy of the host's /etc/resolv.conf when dns_config has none. */
#ifndef SL_POD_ETC_FILES_H
#define SL_POD_ETC_FILES_H

#include <stdbool.h>
#include <stddef.h>

#include "container/oci_spec.h"
#include "sys_error.h"

#define SL_HOSTNAME_MAX 64 /* HOST_NAME_MAX: what sethostname takes */
/* dns_config limits: the kubelet's (glibc's resolver: 3 servers; search
 * list of 32 names, 2048 characters), and our own for options. */
#define SL_DNS_MAX_SERVERS 3
#define SL_DNS_MAX_SEARCHES 32
#define SL_DNS_MAX_SEARCH_CHARS 2048
#define SL_DNS_MAX_NAME 253 /* one search domain, one server */
#define SL_DNS_MAX_OPTIONS 32
#define SL_DNS_MAX_OPTION 256
/* Largest host file (/etc/hosts, /etc/resolv.conf) copied into a pod. */
#define SL_POD_ETC_MAX_COPY (1024 * 1024)

#define SL_POD_ETC_DIR "etc" /* under the pod's run directory */
#define SL_POD_ETC_FILES 3   /* hostname, hosts, resolv.conf */

typedef struct sl_pod_dns {
    char *const *servers;
    size_t n_servers;
    char *const *searches;
    size_t n_searches;
    char *const *options;
    size_t n_options;
} sl_pod_dns;

/* hostname: 1..SL_HOSTNAME_MAX letters, digits, '-', '_' and '.'. Returns 0
 * or -1 with *e (INVALID_ARGUMENT, "hostname: ..."). */
int sl_pod_hostname_check(const char *hostname, sl_error *e);

/* dns_config within the limits above: servers are IP addresses, searches
 * domain names, options single words; nothing holds whitespace that would
 * add lines to resolv.conf. Returns 0 or -1 with *e (INVALID_ARGUMENT
 * naming the field, e.g. "dns_config.searches[3]: ..."). */
int sl_pod_dns_check(const sl_pod_dns *d, sl_error *e);

/* resolv.conf text for d (malloc'd), or NULL when d is NULL or has no
 * server, search or option (the host's file is used then). */
char *sl_pod_resolv_conf(const sl_pod_dns *d);

/* The managed /etc/hosts of a pod with its own network (malloc'd); ip may
 * be NULL or "" (no line for the pod then). NULL on ENOMEM. */
char *sl_pod_hosts(const char *ip, const char *hostname);

typedef struct sl_pod_etc {
    const char *dir;      /* where the files go (created) */
    const char *hostname; /* the pod's, or NULL/"" for the node's */
    const char *ip;       /* the pod IP, or NULL */
    bool host_network;
    const sl_pod_dns *dns; /* or NULL */
    const char *host_etc;  /* the host's /etc (tests point it elsewhere) */
} sl_pod_etc;

/* Writes dir/hostname, dir/hosts and dir/resolv.conf (mode 0644). Returns
 * 0 or -1 (*e). */
int sl_pod_etc_write(const sl_pod_etc *in, sl_error *e);

/* Adds to mounts[*n] (room for SL_POD_ETC_FILES more) a bind mount of each
 * file of dir that exists and whose container path no mount in
 * mounts[0..*n) has already. The host paths are malloc'd into keep[]
 * (SL_POD_ETC_FILES entries, NULL when unused; free them after the spec
 * is built). readonly: as the container's rootfs, like containerd. */
void sl_pod_etc_mounts(const char *dir, bool readonly, sl_oci_mount *mounts, size_t *n,
                       char **keep);

#endif
