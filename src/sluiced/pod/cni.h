/* CNI (container network interface) as the spec defines it: the plugins of
 * the first network configuration list in the config directory run in
 * order for ADD (each getting the previous result) and in reverse for DEL.
 * Plugins are executables in the bin directory, fed JSON on stdin and the
 * CNI_* environment; they answer JSON on stdout. */
#ifndef SL_POD_CNI_H
#define SL_POD_CNI_H

#include <jansson.h>
#include <stdbool.h>
#include "sys_error.h"

#include <jansson.h>
#include <stddef.h>

#define SL_CNI_MAX_OUTPUT (1024 * 1024) /* bytes of one plugin answer */
#define SL_CNI_IFNAME "eth0"
#define SL_CNI_MAX_IPS 16 /* pod addresses taken from a result */
/* The capability (CNI CONVENTIONS.md) that carries host ports. */
#define SL_CNI_CAP_PORTMAP "portMappings"

/* One host port, as the portmap plugin takes it. */
typedef struct sl_cni_portmap {
    int host_port;        /* 1..65535 */
    int container_port;   /* 1..65535 */
    const char *protocol; /* "tcp", "udp" or "sctp" */
    const char *host_ip;  /* "" = every host address */
} sl_cni_portmap;

typedef struct sl_cni_opts {
    const char *conf_dir;
    const char *bin_dir;
    const char *container_id;                       /* the pod sandbox id */
    const char *netns;                              /* path of the pinned network namespace */
    const char *pod_namespace, *pod_name, *pod_uid; /* for CNI_ARGS */
    /* Capability args: given as runtimeConfig.portMappings to each plugin
     * that declares "capabilities": {"portMappings": true}, on ADD and on
     * DEL alike (portmap removes its rules only when it gets them). */
    const sl_cni_portmap *portmaps;
    size_t n_portmaps;
} sl_cni_opts;

/* The capability args of o as a JSON object ({"portMappings": [...]}, or
 * {} without host ports); a new reference, NULL on ENOMEM. */
json_t *sl_cni_capability_args(const sl_cni_opts *o);

/* The plugin configuration plugin i of list gets on stdin: the plugin's
 * object with the list's name and cniVersion, prevResult when given, and
 * runtimeConfig holding the capability args it declares. A new reference,
 * NULL when the plugin has no type (*e). */
json_t *sl_cni_plugin_conf(const json_t *list, size_t i, const json_t *caps, json_t *prev,
                           sl_error *e);

/* Whether a plugin of conf_dir's network configuration declares the
 * capability cap: 1 or 0 (*path, when given, gets the file's path,
 * malloc'd), -1 (*e) when there is no usable configuration. */
int sl_cni_has_capability(const char *conf_dir, const char *cap, char **path, sl_error *e);

/* The pod's addresses in a result (JSON text): every "ips" entry of the
 * SL_CNI_IFNAME interface (or naming none), without the prefix length, in
 * order, malloc'd into ips (at most max). Returns how many. */
size_t sl_cni_result_ips(const char *result, char **ips, size_t max);

/* True when conf_dir holds a usable network configuration (Status's
 * NetworkReady). */
bool sl_cni_ready(const char *conf_dir);

/* The network configuration list ADD would use (a single .conf becomes a
 * list of one plugin), for Status verbose; *path gets its file (malloc'd).
 * NULL with *e when there is none or it does not parse. */
json_t *sl_cni_config(const char *conf_dir, char **path, sl_error *e);

/* Runs ADD. On success returns 0 and the pod IP (without prefix length)
 * in *ip and the final result JSON in *result (both malloc'd; *ip may be
 * NULL when the result has no address). Returns -1 (*e) on failure; the
 * plugins already run are then undone with DEL. */
int sl_cni_add(const sl_cni_opts *o, char **ip, char **result, sl_error *e);

/* Runs DEL in reverse order with the result ADD gave (may be NULL). Every
 * plugin runs even when one fails; returns -1 (*e, the first failure) or 0. */
int sl_cni_del(const sl_cni_opts *o, const char *result, sl_error *e);

#endif
