/* CNI (container network interface) as the spec defines it: the plugins of
 * the first network configuration list in the config directory run in
 * order for ADD (each getting the previous result) and in reverse for DEL.
 * Plugins are executables in the bin directory, fed JSON on stdin and the
 * CNI_* environment; they answer JSON on stdout. */
#ifndef SL_POD_CNI_H
#define SL_POD_CNI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "sys_error.h"

#define SL_CNI_MAX_OUTPUT (1024 * 1024) /* bytes of one plugin answer */
/* How long one plugin may run (config cni-plugin-timeout-ms). */
#define SL_CNI_DEFAULT_PLUGIN_TIMEOUT_MS 60000u
#define SL_CNI_TIMEOUT_KEY "cni-plugin-timeout-ms"
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
    /* Each plugin is killed (its process group) when it runs longer; 0:
     * no limit. */
    uint32_t plugin_timeout_ms;
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

/* The addresses in a parsed result (see sl_cni_result_ips). */
size_t sl_cni_result_obj_ips(json_t *res, char **ips, size_t max);

/* The end of an ADD or DEL: rc 0 with (ADD) the pod IP (without prefix
 * length; NULL when the result has none) and the final result JSON, or rc
 * -1 with *e. Everything is borrowed for the callback's duration. */
typedef void (*sl_cni_done_fn)(void *arg, int rc, const char *ip, const char *result,
                               const sl_error *e);

/* Starts ADD on loop: the plugins run one after the other as children of
 * the loop (proc/child.h), each with o->plugin_timeout_ms. Everything of
 * o is copied. Returns 0 and calls done once later, or -1 (*e) when
 * nothing ran (no usable configuration, ENOMEM). On a failure (a plugin
 * not found, failing, timing out) the plugins are undone with DEL before
 * done gets the error, which names the plugin. */
int sl_cni_add_start(uv_loop_t *loop, const sl_cni_opts *o, sl_cni_done_fn done, void *arg,
                     sl_error *e);

/* Starts DEL in reverse order with the result ADD gave (may be NULL).
 * Every plugin runs even when one fails; done gets the first failure.
 * Returns 0 (done comes later) or -1 (*e) when nothing ran. */
int sl_cni_del_start(uv_loop_t *loop, const sl_cni_opts *o, const char *result, sl_cni_done_fn done,
                     void *arg, sl_error *e);

/* ADD and DEL waiting for the end on a private loop (tests and tools; not
 * for sluiced's loop). ADD: 0 with *ip (may be NULL) and *result
 * malloc'd, or -1 (*e). */
int sl_cni_add(const sl_cni_opts *o, char **ip, char **result, sl_error *e);
int sl_cni_del(const sl_cni_opts *o, const char *result, sl_error *e);

#endif
