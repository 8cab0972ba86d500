#include "cri/pod_config.h"

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/grpc_status.h"

#define PORT_MAX 65535

static const char *const protocols[] = {"tcp", "udp", "sctp"}; /* by Runtime__V1__Protocol */

static bool ip_literal(const char *s)
{
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

static int check_one_mapping(const Runtime__V1__PortMapping *m, size_t i, bool host_network,
                             sl_error *e)
{
    if ((unsigned)m->protocol >= sizeof(protocols) / sizeof(protocols[0]))
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "port_mappings[%zu].protocol: unknown value %d", i, (int)m->protocol);
    if (m->container_port < 0 || m->container_port > PORT_MAX)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "port_mappings[%zu].container_port: %d is not a port (0 to %d)", i,
                             m->container_port, PORT_MAX);
    if (m->host_port < 0 || m->host_port > PORT_MAX)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "port_mappings[%zu].host_port: %d is not a port (0 to %d)", i,
                             m->host_port, PORT_MAX);
    if (m->host_port && !m->container_port)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "port_mappings[%zu].container_port: required with a host_port", i);
    if (*m->host_ip && !ip_literal(m->host_ip))
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "port_mappings[%zu].host_ip: \"%.64s\" is not an IP address", i,
                             m->host_ip);
    if (!host_network)
        return 0;
    /* The container binds the host's own ports: what it asks is what it
     * gets, so only a mapping that changes nothing can be honoured. */
    if (m->host_port && m->host_port != m->container_port)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "port_mappings[%zu].host_port: %d differs from container_port %d, "
                             "which a pod with host network cannot map (its ports are the host's)",
                             i, m->host_port, m->container_port);
    if (*m->host_ip)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "port_mappings[%zu].host_ip: cannot be enforced on a pod with host "
                             "network (the container binds the host's addresses itself)",
                             i);
    return 0;
}

static bool same_host_port(const Runtime__V1__PortMapping *a, const Runtime__V1__PortMapping *b)
{
    return a->host_port && a->host_port == b->host_port && a->protocol == b->protocol &&
           !strcmp(a->host_ip, b->host_ip);
}

static int check_port_mappings(const Runtime__V1__PodSandboxConfig *c, bool host_network,
                               sl_error *e)
{
    if (c->n_port_mappings > SL_POD_MAX_PORT_MAPPINGS)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "port_mappings: %zu mappings, more than %d", c->n_port_mappings,
                             SL_POD_MAX_PORT_MAPPINGS);
    for (size_t i = 0; i < c->n_port_mappings; i++) {
        const Runtime__V1__PortMapping *m = c->port_mappings[i];
        if (check_one_mapping(m, i, host_network, e) < 0)
            return -1;
        for (size_t k = 0; k < i; k++)
            if (same_host_port(c->port_mappings[k], m))
                return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                                     "port_mappings[%zu].host_port: %d/%s is mapped already by "
                                     "port_mappings[%zu]",
                                     i, m->host_port, protocols[m->protocol], k);
    }
    return 0;
}

static int check_sysctls(const Runtime__V1__PodSandboxConfig *c, bool host_network, bool host_ipc,
                         sl_error *e)
{
    size_t n = c->linux ? c->linux->n_sysctls : 0;
    if (n > SL_POD_MAX_SYSCTLS)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "linux.sysctls: %zu entries, more than %d", n, SL_POD_MAX_SYSCTLS);
    for (size_t i = 0; i < n; i++) {
        const Runtime__V1__LinuxPodSandboxConfig__SysctlsEntry *s = c->linux->sysctls[i];
        if (sl_sysctl_check(s->key, s->value, host_network, host_ipc, e) < 0)
            return -1;
    }
    return 0;
}

/* Whether a path has a ".." component. */
static bool has_dotdot(const char *path)
{
    for (const char *p = path; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.')
            return true;
        p += n + (p[n] == '/');
    }
    return false;
}
static int check_identity(const Runtime__V1__PodSandboxConfig *c, bool host_network, sl_error *e)
{
    if (*c->hostname && host_network)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "hostname: cannot be set on a pod with host network (it keeps the "
                             "node's UTS namespace and hostname)");
    if (*c->hostname && sl_pod_hostname_check(c->hostname, e) < 0)
        return -1;
    if (*c->log_directory && c->log_directory[0] != '/')
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "log_directory: \"%.256s\" is not an absolute path", c->log_directory);
    if (has_dotdot(c->log_directory)) /* the kubelet's is /var/log/pods/<ns>_<name>_<uid> */
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "log_directory: \"%.256s\" has a \"..\" component", c->log_directory);
    return 0;
}

int sl_pod_config_check(const Runtime__V1__PodSandboxConfig *c, bool host_network, bool host_ipc,
                        sl_error *e)
{
    sl_pod_dns dns;
    if (check_identity(c, host_network, e) < 0 ||
        sl_pod_dns_check(sl_pod_config_dns(c, &dns), e) < 0 ||
        check_port_mappings(c, host_network, e) < 0 ||
        check_sysctls(c, host_network, host_ipc, e) < 0)
        return -1;
    return 0;
}

size_t sl_pod_config_sysctls(const Runtime__V1__PodSandboxConfig *c, sl_pod_sysctl *out)
{
    size_t n = 0;
    for (size_t i = 0; c->linux && i < c->linux->n_sysctls && n < SL_POD_MAX_SYSCTLS; i++)
        out[n++] = (sl_pod_sysctl){c->linux->sysctls[i]->key, c->linux->sysctls[i]->value};
    return n;
}

int sl_pod_config_first_host_port(const Runtime__V1__PodSandboxConfig *c)
{
    for (size_t i = 0; i < c->n_port_mappings; i++)
        if (c->port_mappings[i]->host_port > 0)
            return (int)i;
    return -1;
}

size_t sl_pod_config_portmaps(const Runtime__V1__PodSandboxConfig *c, sl_cni_portmap **out)
{
    *out = NULL;
    if (sl_pod_config_first_host_port(c) < 0 || !(*out = calloc(c->n_port_mappings, sizeof(**out))))
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < c->n_port_mappings; i++) {
        const Runtime__V1__PortMapping *m = c->port_mappings[i];
        if (m->host_port <= 0 || (unsigned)m->protocol >= sizeof(protocols) / sizeof(protocols[0]))
            continue;
        (*out)[n++] =
            (sl_cni_portmap){m->host_port, m->container_port, protocols[m->protocol], m->host_ip};
    }
    return n;
}

const sl_pod_dns *sl_pod_config_dns(const Runtime__V1__PodSandboxConfig *c, sl_pod_dns *buf)
{
    const Runtime__V1__DNSConfig *d = c->dns_config;
    if (!d)
        return NULL;
    *buf = (sl_pod_dns){d->servers,    d->n_servers, d->searches,
                        d->n_searches, d->options,   d->n_options};
    return buf;
}

int sl_cri_log_path_check(const char *log_path, sl_error *e)
{
    if (!*log_path)
        return 0;
    if (log_path[0] == '/')
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "log_path: \"%.256s\" is absolute; it must be relative to the pod's "
                             "log_directory",
                             log_path);
    long depth = 0;
    const char *last = log_path;
    for (const char *p = log_path; *p;) {
        size_t n = strcspn(p, "/");
        bool dots = n == 2 && p[0] == '.' && p[1] == '.';
        if (dots && --depth < 0)
            return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                                 "log_path: \"%.256s\" leaves the pod's log_directory", log_path);
        if (n && !dots && !(n == 1 && p[0] == '.'))
            depth++;
        last = p;
        p += n + (p[n] == '/');
    }
    size_t n = strcspn(last, "/");
    if (n == 0 || last[n] == '/' || (n == 1 && last[0] == '.') ||
        (n == 2 && last[0] == '.' && last[1] == '.'))
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "log_path: \"%.256s\" does not name a file", log_path);
    return 0;
}
