#include "cri/pod_net.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cri/pod_config.h"
#include "sl_log.h"
#include "fsutil.h"
#include "pod/netns.h"

typedef struct waiter {
    struct waiter *next;
    sl_pod_net_done_fn fn;
    void *arg;
} waiter;

/* A DEL in flight, and the calls waiting for it. */
struct sl_net_release {
    sl_net_release *next;
    sl_rt *rt;
    char pod_id[SL_ID_HEX + 1];
    waiter *waiters; /* in arrival order */
};

bool sl_pod_host_network(const Runtime__V1__PodSandboxConfig *c)
{
    const Runtime__V1__LinuxPodSandboxConfig *l = c->linux;
    return l && l->security_context && l->security_context->namespace_options &&
           l->security_context->namespace_options->network == RUNTIME__V1__NAMESPACE_MODE__NODE;
}

bool sl_pod_host_ipc(const Runtime__V1__PodSandboxConfig *c)
{
    const Runtime__V1__LinuxPodSandboxConfig *l = c->linux;
    return l && l->security_context && l->security_context->namespace_options &&
           l->security_context->namespace_options->ipc == RUNTIME__V1__NAMESPACE_MODE__NODE;
}

void sl_pod_cni_opts(sl_rt *rt, const char *id, const char *netns,
                     const Runtime__V1__PodSandboxConfig *c, sl_cni_opts *o)
{
    const Runtime__V1__PodSandboxMetadata *md = c->metadata;
    sl_cni_portmap *maps;
    size_t n = sl_pod_config_portmaps(c, &maps);
    *o = (sl_cni_opts){.conf_dir = rt->cfg->cni_conf_dir,
                       .bin_dir = rt->cfg->cni_bin_dir,
                       .container_id = id,
                       .netns = netns,
                       .pod_namespace = md->namespace_,
                       .pod_name = md->name,
                       .pod_uid = md->uid,
                       .portmaps = maps,
                       .n_portmaps = n,
                       .plugin_timeout_ms = rt->cfg->cni_plugin_timeout_ms};
}

static sl_net_release *find_release(sl_rt *rt, const char *pod_id)
{
    for (sl_net_release *r = rt->net_releases; r; r = r->next)
        if (!strcmp(r->pod_id, pod_id))
            return r;
    return NULL;
}

static int add_waiter(sl_net_release *r, sl_pod_net_done_fn fn, void *arg)
{
    waiter *w = calloc(1, sizeof(*w));
    if (!w)
        return -1;
    w->fn = fn;
    w->arg = arg;
    waiter **pp = &r->waiters;
    while (*pp)
        pp = &(*pp)->next;
    *pp = w;
    return 0;
}

static void release_done(void *arg, int rc, const char *ip, const char *result, const sl_error *e)
{
    (void)ip;
    (void)result;
    sl_net_release *r = arg;
    sl_rt *rt = r->rt;
    if (rc < 0)
        sl_log(SL_LOG_WARN, "CNI DEL failed", "pod", r->pod_id, "error", e->msg, NULL);
    sl_pod *p = sl_model_pod(&rt->model, r->pod_id);
    if (p)
        json_object_set_new(p->rec, "cni_result", json_string(""));
    for (sl_net_release **pp = &rt->net_releases; *pp; pp = &(*pp)->next)
        if (*pp == r) {
            *pp = r->next;
            break;
        }
    while (r->waiters) {
        waiter *w = r->waiters;
        r->waiters = w->next;
        w->fn(w->arg);
        free(w);
    }
    free(r);
}

/* Starts DEL; false when it could not start (logged). */
static bool start_del(sl_rt *rt, sl_pod *p, sl_net_release *r)
{
    SL_AUTOFREE char *netns = sl_pod_ns_path(sl_rec_str(p->rec, "ns_dir"), "net");
    sl_cni_opts o;
    sl_pod_cni_opts(rt, p->id, netns, p->config, &o);
    sl_error e;
    int rc = sl_cni_del_start(rt->loop, &o, sl_rec_str(p->rec, "cni_result"), release_done, r, &e);
    free((void *)o.portmaps);
    if (rc < 0)
        sl_log(SL_LOG_WARN, "CNI DEL failed", "pod", p->id, "error", e.msg, NULL);
    return rc == 0;
}

void sl_pod_net_release(sl_rt *rt, sl_pod *p, sl_pod_net_done_fn fn, void *arg)
{
    sl_net_release *r = find_release(rt, p->id);
    if (r && add_waiter(r, fn, arg) == 0)
        return;
    if (r || sl_rec_bool(p->rec, "host_network") || !*sl_rec_str(p->rec, "cni_result")) {
        fn(arg); /* nothing to release, or no memory to wait: go on */
        return;
    }
    r = calloc(1, sizeof(*r));
    if (!r || add_waiter(r, fn, arg) < 0) {
        free(r);
        fn(arg);
        return;
    }
    r->rt = rt;
    snprintf(r->pod_id, sizeof(r->pod_id), "%s", p->id);
    if (!start_del(rt, p, r)) {
        json_object_set_new(p->rec, "cni_result", json_string(""));
        free(r->waiters);
        free(r);
        fn(arg);
        return;
    }
    r->next = rt->net_releases;
    rt->net_releases = r;
}
