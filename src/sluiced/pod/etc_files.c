#include "pod/etc_files.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "grpc/grpc_status.h"

/* The kubelet's lines for a pod with its own network namespace. */
static const char hosts_head[] = "# sluice-managed hosts file.\n"
                                 "127.0.0.1\tlocalhost\n"
                                 "::1\tlocalhost ip6-localhost ip6-loopback\n"
                                 "fe00::0\tip6-localnet\n"
                                 "fe00::0\tip6-mcastprefix\n"
                                 "fe00::1\tip6-allnodes\n"
                                 "fe00::2\tip6-allrouters\n";

static const struct {
    const char *name, *container_path;
} files[SL_POD_ETC_FILES] = {
    {"hostname", "/etc/hostname"},
    {"hosts", "/etc/hosts"},
    {"resolv.conf", "/etc/resolv.conf"},
};

static bool name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.';
}

static bool all_name_chars(const char *s)
{
    for (; *s; s++)
        if (!name_char(*s))
            return false;
    return true;
}

int sl_pod_hostname_check(const char *hostname, sl_error *e)
{
    size_t n = strlen(hostname);
    if (n > SL_HOSTNAME_MAX)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "hostname: %zu bytes, more than %d (what sethostname takes)", n,
                             SL_HOSTNAME_MAX);
    if (n == 0 || !all_name_chars(hostname))
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "hostname: \"%s\" is not a host name (letters, digits, '-', '_', '.')",
                             hostname);
    return 0;
}

/* An IPv4 or IPv6 address; IPv6 may carry a %zone (an interface name). */
static bool ip_literal(const char *s)
{
    unsigned char buf[sizeof(struct in6_addr)];
    char addr[INET6_ADDRSTRLEN + 1];
    const char *zone = strchr(s, '%');
    size_t n = zone ? (size_t)(zone - s) : strlen(s);
    if (n >= sizeof(addr))
        return false;
    memcpy(addr, s, n);
    addr[n] = '\0';
    if (!zone)
        return inet_pton(AF_INET, addr, buf) == 1 || inet_pton(AF_INET6, addr, buf) == 1;
    return inet_pton(AF_INET6, addr, buf) == 1 && zone[1] && strlen(zone + 1) < 16 &&
           all_name_chars(zone + 1);
}

static int check_servers(const sl_pod_dns *d, sl_error *e)
{
    if (d->n_servers > SL_DNS_MAX_SERVERS)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "dns_config.servers: %zu servers, more than %d (the resolver's limit)",
                             d->n_servers, SL_DNS_MAX_SERVERS);
    for (size_t i = 0; i < d->n_servers; i++)
        if (!ip_literal(d->servers[i]))
            return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                                 "dns_config.servers[%zu]: \"%.*s\" is not an IP address", i,
                                 SL_DNS_MAX_NAME, d->servers[i]);
    return 0;
}

static int check_searches(const sl_pod_dns *d, sl_error *e)
{
    if (d->n_searches > SL_DNS_MAX_SEARCHES)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "dns_config.searches: %zu domains, more than %d", d->n_searches,
                             SL_DNS_MAX_SEARCHES);
    size_t total = d->n_searches ? d->n_searches - 1 : 0; /* the spaces between */
    for (size_t i = 0; i < d->n_searches; i++) {
        const char *s = d->searches[i];
        size_t n = strlen(s);
        if (n == 0 || n > SL_DNS_MAX_NAME || !all_name_chars(s))
            return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                                 "dns_config.searches[%zu]: \"%.*s\" is not a domain name (1 to "
                                 "%d letters, digits, '-', '_', '.')",
                                 i, SL_DNS_MAX_NAME, s, SL_DNS_MAX_NAME);
        total += n;
    }
    if (total > SL_DNS_MAX_SEARCH_CHARS)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "dns_config.searches: %zu characters, more than %d", total,
                             SL_DNS_MAX_SEARCH_CHARS);
    return 0;
}

static int check_options(const sl_pod_dns *d, sl_error *e)
{
    if (d->n_options > SL_DNS_MAX_OPTIONS)
        return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                             "dns_config.options: %zu options, more than %d", d->n_options,
                             SL_DNS_MAX_OPTIONS);
    for (size_t i = 0; i < d->n_options; i++) {
        const char *o = d->options[i];
        size_t n = strlen(o);
        bool ok = n > 0 && n <= SL_DNS_MAX_OPTION;
        for (size_t k = 0; ok && k < n; k++)
            ok = o[k] > 0x20 && o[k] < 0x7f;
        if (!ok)
            return sl_error_code(e, SL_GRPC_INVALID_ARGUMENT,
                                 "dns_config.options[%zu]: \"%.*s\" is not a resolver option (1 "
                                 "to %d printable characters, no spaces)",
                                 i, SL_DNS_MAX_OPTION, o, SL_DNS_MAX_OPTION);
    }
    return 0;
}

int sl_pod_dns_check(const sl_pod_dns *d, sl_error *e)
{
    if (!d)
        return 0;
    if (check_servers(d, e) < 0 || check_searches(d, e) < 0 || check_options(d, e) < 0)
        return -1;
    return 0;
}

/* Appends "<prefix> w1 w2 ...\n" (one line) or, with per_line, one
 * "<prefix> w" line per word. */
static void put_words(FILE *f, const char *prefix, char *const *w, size_t n, bool per_line)
{
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%s%s", per_line || i == 0 ? prefix : " ", w[i],
                per_line || i + 1 == n ? "\n" : "");
}

char *sl_pod_resolv_conf(const sl_pod_dns *d)
{
    if (!d || (!d->n_servers && !d->n_searches && !d->n_options))
        return NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    put_words(f, "search ", d->searches, d->n_searches, false);
    put_words(f, "nameserver ", d->servers, d->n_servers, true);
    put_words(f, "options ", d->options, d->n_options, false);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

char *sl_pod_hosts(const char *ip, const char *hostname)
{
    size_t n = sizeof(hosts_head) + (ip ? strlen(ip) : 0) + strlen(hostname) + 3;
    char *text = malloc(n);
    if (!text)
        return NULL;
    if (ip && *ip)
        snprintf(text, n, "%s%s\t%s\n", hosts_head, ip, hostname);
    else
        snprintf(text, n, "%s", hosts_head);
    return text;
}

/* The host's etc/<name> (a missing file is empty), malloc'd; NULL with *e. */
static char *host_file(const char *host_etc, const char *name, sl_error *e)
{
    SL_AUTOFREE char *path = sl_path_join(host_etc, name);
    char *text = NULL;
    if (!path) {
        sl_error_set(e, ENOMEM, "%s", name);
        return NULL;
    }
    if (sl_read_file(path, SL_POD_ETC_MAX_COPY, &text, NULL, e) == 0)
        return text;
    if (e->errnum != ENOENT)
        return NULL;
    text = strdup("");
    if (!text)
        sl_error_set(e, ENOMEM, "%s", name);
    return text;
}

static int put_file(const char *dir, const char *name, const char *text, sl_error *e)
{
    SL_AUTOFREE char *path = sl_path_join(dir, name);
    if (!path)
        return sl_error_set(e, ENOMEM, "pod file %s", name);
    return sl_write_file_atomic(path, text, strlen(text), 0644, e);
}

static bool dns_empty(const sl_pod_dns *d)
{
    return !d || (!d->n_servers && !d->n_searches && !d->n_options);
}

/* The three texts, malloc'd into out[] (hostname, hosts, resolv.conf). */
static int render(const sl_pod_etc *in, const char *hostname, char **out, sl_error *e)
{
    size_t n = strlen(hostname) + 2;
    if ((out[0] = malloc(n)))
        snprintf(out[0], n, "%s\n", hostname);
    if (in->host_network) {
        if (!(out[1] = host_file(in->host_etc, "hosts", e)))
            return -1;
    } else {
        out[1] = sl_pod_hosts(in->ip, hostname);
    }
    if (dns_empty(in->dns)) {
        if (!(out[2] = host_file(in->host_etc, "resolv.conf", e)))
            return -1;
    } else {
        out[2] = sl_pod_resolv_conf(in->dns);
    }
    if (!out[0] || !out[1] || !out[2])
        return sl_error_set(e, ENOMEM, "pod files");
    return 0;
}

int sl_pod_etc_write(const sl_pod_etc *in, sl_error *e)
{
    char node[SL_HOSTNAME_MAX + 2] = "";
    const char *hostname = in->hostname && *in->hostname ? in->hostname : node;
    if (hostname == node && gethostname(node, sizeof(node) - 1) < 0)
        return sl_error_set(e, errno, "gethostname");
    char *text[SL_POD_ETC_FILES] = {NULL};
    int rc = render(in, hostname, text, e);
    if (rc == 0)
        rc = sl_mkdir_p(in->dir, 0755, e);
    for (size_t i = 0; rc == 0 && i < SL_POD_ETC_FILES; i++)
        rc = put_file(in->dir, files[i].name, text[i], e);
    for (size_t i = 0; i < SL_POD_ETC_FILES; i++)
        free(text[i]);
    return rc < 0 ? sl_error_wrap(e, "pod files in %s", in->dir) : 0;
}

/* a and b name the same path, give or take repeated and trailing '/' and
 * "." components. */
static bool same_path(const char *a, const char *b)
{
    for (;;) {
        while (*a == '/' || (a[0] == '.' && (a[1] == '/' || !a[1])))
            a++;
        while (*b == '/' || (b[0] == '.' && (b[1] == '/' || !b[1])))
            b++;
        size_t na = strcspn(a, "/"), nb = strcspn(b, "/");
        if (na != nb || strncmp(a, b, na))
            return false;
        if (na == 0)
            return true;
        a += na;
        b += nb;
    }
}

static bool mounted(const sl_oci_mount *m, size_t n, const char *container_path)
{
    for (size_t i = 0; i < n; i++)
        if (m[i].container_path && same_path(m[i].container_path, container_path))
            return true;
    return false;
}

void sl_pod_etc_mounts(const char *dir, bool readonly, sl_oci_mount *mounts, size_t *n, char **keep)
{
    size_t given = *n;
    for (size_t i = 0; i < SL_POD_ETC_FILES; i++) {
        keep[i] = NULL;
        struct stat st;
        char *src = dir ? sl_path_join(dir, files[i].name) : NULL;
        if (!src || stat(src, &st) < 0 || !S_ISREG(st.st_mode) ||
            mounted(mounts, given, files[i].container_path)) {
            free(src);
            continue;
        }
        keep[i] = src;
        mounts[(*n)++] = (sl_oci_mount){files[i].container_path, src, readonly, 0, false};
    }
}
