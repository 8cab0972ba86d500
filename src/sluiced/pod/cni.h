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

#define SL_CNI_MAX_OUTPUT (1024 * 1024) /* bytes of one plugin answer */
#define SL_CNI_IFNAME "eth0"

typedef struct sl_cni_opts {
    const char *conf_dir;
    const char *bin_dir;
    const char *container_id;                       /* the pod sandbox id */
    const char *netns;                              /* path of the pinned network namespace */
    const char *pod_namespace, *pod_name, *pod_uid; /* for CNI_ARGS */
} sl_cni_opts;

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
