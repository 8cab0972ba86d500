/* Pods as the API shows them, built from CRI sandboxes and containers:
 * the newest ready sandbox of a name/namespace (else the newest one) and
 * the newest attempt of each container name in it. */
#ifndef SK_PODS_H
#define SK_PODS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "cri_client.h"

typedef struct sk_ctr {
    char *id, *name, *image, *image_ref, *image_id, *reason, *message, *log_path;
    int state; /* CRI ContainerState */
    uint32_t attempt;
    int exit_code;
    int64_t created, started, finished; /* unix ns */
    bool tty, stdin_open;               /* from verbose info when the runtime has it */
    struct sk_ctr *prev;                /* the attempt before (for logs?previous) */
} sk_ctr;

typedef struct sk_pod {
    char *name, *ns, *uid, *sandbox_id, *ip;
    bool ready;
    int64_t created;
    json_t *labels, *annotations; /* objects */
    sk_ctr *ctrs;                 /* newest attempt per name, creation order */
    size_t nctrs;
} sk_pod;

typedef struct sk_pods {
    sk_pod *items;
    size_t n;
} sk_pods;

/* Lists the pods of namespace ns (NULL: all) and, when name is not NULL,
 * only that one. Returns SL_CRI_OK, or the CRI error (err filled). */
int sk_pods_load(sl_cri_client *cli, const char *ns, const char *name, sk_pods *out, sl_error *err);
void sk_pods_free(sk_pods *p);

/* The pod's container named name, or NULL. */
const sk_ctr *sk_pod_ctr(const sk_pod *p, const char *name);
/* The apiserver's validateContainer: the named container, or the only one;
 * NULL with the apiserver's message in msg otherwise. */
const sk_ctr *sk_pod_pick(const sk_pod *p, const char *name, char *msg, size_t len);
/* "Running", "Succeeded", "Failed" or "Pending". */
const char *sk_pod_phase(const sk_pod *p);

json_t *sk_pod_json(const sk_pod *p, const char *runtime, const char *node);
json_t *sk_pod_list_json(const sk_pods *ps, const char *runtime, const char *node);
/* meta.k8s.io/v1 Table with the columns kubectl get shows. */
json_t *sk_pod_table_json(const sk_pods *ps, const char *node);

#endif
