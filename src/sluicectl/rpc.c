/* CRI calls for the commands: connecting (with crictl's endpoint fallback
 * list), debug logging of requests and answers, errors with a hint saying
 * what to do, and ID-prefix resolution. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

static const char *const default_endpoints[] = {
    CTL_DEFAULT_ENDPOINT,
    "unix:///run/containerd/containerd.sock",
    "unix:///run/crio/crio.sock",
    "unix:///var/run/cri-dockerd.sock",
};
#define NDEFAULTS (sizeof default_endpoints / sizeof default_endpoints[0])

static void unreachable(ctl *c, const char *what, const sl_cri_err *e)
{
    ctl_err(c,
            "runtime not reachable: %s%s%s\n  Is sluiced (or your CRI runtime) running? Choose the "
            "endpoint with -r/--runtime-endpoint, $CONTAINER_RUNTIME_ENDPOINT or runtime-endpoint "
            "in %s.",
            what, e ? ": " : "", e ? e->msg : "",
            c->config_path ? c->config_path : CTL_DEFAULT_CONFIG);
}

static sl_cri_client *connect_one(ctl *c, const char *ep, sl_cri_err *e)
{
    sl_cri_client *cl = NULL;
    ctl_debug(c, "connecting to %s (timeout %u ms)", ep, c->timeout_ms);
    if (sl_cri_client_connect(ep, c->timeout_ms, &cl, e) < 0) {
        ctl_debug(c, "%s", e->msg);
        return NULL;
    }
    return cl;
}

static sl_cri_client *runtime_client(ctl *c)
{
    sl_cri_err e;
    if (c->rt)
        return c->rt;
    if (c->runtime_endpoint) {
        c->rt = connect_one(c, c->runtime_endpoint, &e);
        if (!c->rt)
            unreachable(c, c->runtime_endpoint, &e);
        c->rt_endpoint_used = c->runtime_endpoint;
        return c->rt;
    }
    for (size_t i = 0; i < NDEFAULTS && !c->rt; i++) {
        c->rt = connect_one(c, default_endpoints[i], &e);
        c->rt_endpoint_used = default_endpoints[i];
    }
    if (!c->rt)
        unreachable(c,
                    "none of the default endpoints answered (unix:///run/sluice/sluice.sock, "
                    "containerd, CRI-O, cri-dockerd; -D shows each error)",
                    NULL);
    else
        ctl_debug(c, "using runtime endpoint %s", c->rt_endpoint_used);
    return c->rt;
}

static sl_cri_client *image_client(ctl *c)
{
    if (!c->image_endpoint ||
        (c->runtime_endpoint && !strcmp(c->image_endpoint, c->runtime_endpoint)))
        return runtime_client(c);
    if (!c->img) {
        sl_cri_err e;
        c->img = connect_one(c, c->image_endpoint, &e);
        if (!c->img)
            unreachable(c, c->image_endpoint, &e);
    }
    return c->img;
}

const char *ctl_image_endpoint(ctl *c)
{
    if (!image_client(c))
        return NULL;
    return c->img ? c->image_endpoint : c->rt_endpoint_used;
}

void ctl_disconnect(ctl *c)
{
    sl_cri_client_free(c->rt);
    sl_cri_client_free(c->img);
    c->rt = c->img = NULL;
}

void ctl_free_msg(void *m)
{
    if (m)
        protobuf_c_message_free_unpacked(m, NULL);
}

static void debug_msg(ctl *c, const char *what, const char *method, const ProtobufCMessage *m)
{
    if (!c->debug)
        return;
    json_t *j = ctl_msg_to_json(m);
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    ctl_debug(c, "%s %s: %s", what, method, s ? s : "?");
    free(s);
    json_decref(j);
}

void ctl_print_call_err(ctl *c, const char *method, const sl_cri_err *e)
{
    const char *ep = c->rt_endpoint_used ? c->rt_endpoint_used : "the runtime";
    if (e->local && e->code == SL_CRI_UNAVAILABLE)
        ctl_err(c, "%s: lost the runtime at %s: %s", method, ep, e->msg);
    else if (e->code == SL_CRI_DEADLINE_EXCEEDED)
        ctl_err(c, "%s: %s (the runtime at %s is slow or stuck; raise --timeout)", method, e->msg,
                ep);
    else if (e->code == SL_CRI_UNIMPLEMENTED)
        ctl_err(c, "%s: the runtime at %s does not implement it: %s", method, ep, e->msg);
    else if (e->code == SL_CRI_NOT_FOUND)
        ctl_err(c, "%s: %s", method, e->msg);
    else
        ctl_err(c, "%s failed: %s (%s)", method, e->msg, sl_cri_code_name(e->code));
}

int ctl_call_raw(ctl *c, bool image, const char *method, const ProtobufCMessage *req,
                 const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp,
                 uint32_t timeout_ms, sl_cri_err *err)
{
    *resp = NULL;
    sl_cri_client *cl = image ? image_client(c) : runtime_client(c);
    if (!cl) {
        err->code = SL_CRI_UNAVAILABLE;
        err->local = true;
        snprintf(err->msg, sizeof err->msg, "not connected");
        return -2; /* already reported */
    }
    char path[128];
    snprintf(path, sizeof path, "/runtime.v1.%s/%s", image ? "ImageService" : "RuntimeService",
             method);
    debug_msg(c, "request", method, req);
    int rc = sl_cri_client_call(cl, path, req, resp_desc, resp, timeout_ms, err);
    if (rc == SL_CRI_OK)
        debug_msg(c, "answer", method, *resp);
    else
        ctl_debug(c, "%s: %s: %s", method, sl_cri_code_name(rc), err->msg);
    return rc;
}

int ctl_rt_stream(ctl *c, const char *method, const ProtobufCMessage *req,
                  const ProtobufCMessageDescriptor *resp_desc, const sl_cri_stream_cb *cb)
{
    sl_cri_client *cl = runtime_client(c);
    if (!cl)
        return -1;
    char path[128];
    snprintf(path, sizeof path, "/runtime.v1.RuntimeService/%s", method);
    debug_msg(c, "request", method, req);
    sl_cri_err e;
    int rc = sl_cri_client_stream(cl, path, req, resp_desc, cb, 0, &e);
    ctl_debug(c, "%s ended: %s: %s", method, sl_cri_code_name(rc), e.msg);
    if (rc == SL_CRI_OK || (rc == SL_CRI_CANCELLED && e.local))
        return 0;
    ctl_print_call_err(c, method, &e);
    return -1;
}

static ProtobufCMessage *call_tmo(ctl *c, bool image, const char *method,
                                  const ProtobufCMessage *req, const ProtobufCMessageDescriptor *d,
                                  uint32_t tmo)
{
    ProtobufCMessage *resp;
    sl_cri_err e;
    int rc = ctl_call_raw(c, image, method, req, d, &resp, tmo, &e);
    if (rc == -2)
        return NULL;
    if (rc != SL_CRI_OK)
        ctl_print_call_err(c, method, &e);
    return resp;
}

static ProtobufCMessage *call(ctl *c, bool image, const char *method, const ProtobufCMessage *req,
                              const ProtobufCMessageDescriptor *d)
{
    return call_tmo(c, image, method, req, d, c->timeout_ms);
}

ProtobufCMessage *ctl_rt_call(ctl *c, const char *method, const ProtobufCMessage *req,
                              const ProtobufCMessageDescriptor *d)
{
    return call(c, false, method, req, d);
}

ProtobufCMessage *ctl_rt_call_slow(ctl *c, const char *method, const ProtobufCMessage *req,
                                   const ProtobufCMessageDescriptor *d)
{
    uint32_t tmo = c->timeout_ms > CTL_SLOW_TIMEOUT_MS ? c->timeout_ms : CTL_SLOW_TIMEOUT_MS;
    return call_tmo(c, false, method, req, d, tmo);
}

ProtobufCMessage *ctl_img_call(ctl *c, const char *method, const ProtobufCMessage *req,
                               const ProtobufCMessageDescriptor *d)
{
    return call(c, true, method, req, d);
}

/* ---- ID resolution ---- */

typedef struct cand {
    const char *id, *name;
    const char *group; /* name hits in one group are attempts of one thing */
    uint64_t rank;     /* the newest attempt ranks highest */
} cand;

/* Among several name hits that are attempts of one thing (same group),
 * the newest; else -1. */
static long newest_attempt(const cand *v, size_t n, const char *ref)
{
    long best = -1;
    for (size_t i = 0; i < n; i++) {
        if (!v[i].name || strcmp(v[i].name, ref))
            continue;
        if (best >= 0 && strcmp(v[best].group, v[i].group))
            return -1;
        if (best < 0 || v[i].rank > v[best].rank)
            best = (long)i;
    }
    return best;
}

static char *pick(ctl *c, const char *kind, const char *lister, const char *ref, const cand *v,
                  size_t n)
{
    size_t hits = 0, hit = 0, rl = strlen(ref);
    if (rl == 0) {
        ctl_err(c, "an empty %s ID names nothing (`sluicectl %s` lists them)", kind, lister);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i].id, ref))
            return strdup(v[i].id);
    for (size_t i = 0; i < n; i++)
        if (!strncmp(v[i].id, ref, rl))
            hits++, hit = i;
    if (hits == 0)
        for (size_t i = 0; i < n; i++)
            if (v[i].name && !strcmp(v[i].name, ref))
                hits++, hit = i;
    if (hits == 1)
        return strdup(v[hit].id);
    long newest = hits > 1 ? newest_attempt(v, n, ref) : -1;
    if (newest >= 0)
        return strdup(v[newest].id);
    if (hits == 0)
        ctl_err(c,
                "%s \"%s\" not found: no %s has that ID, ID prefix or name (`sluicectl %s` "
                "lists them)",
                kind, ref, kind, lister);
    else
        ctl_err(c, "\"%s\" matches %zu of them (%s): give more of the ID (`sluicectl %s`)", ref,
                hits, kind, lister);
    return NULL;
}

char *ctl_resolve_ctr(ctl *c, const char *ref)
{
    Runtime__V1__ListContainersRequest req = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
    Runtime__V1__ListContainersResponse *r = (void *)ctl_rt_call(
        c, "ListContainers", &req.base, &runtime__v1__list_containers_response__descriptor);
    if (!r)
        return NULL;
    cand *v = calloc(r->n_containers + 1, sizeof *v);
    char *id = NULL;
    if (v) {
        for (size_t i = 0; i < r->n_containers; i++) {
            const Runtime__V1__Container *x = r->containers[i];
            v[i].id = x->id;
            v[i].name = x->metadata ? x->metadata->name : NULL;
            v[i].group = x->pod_sandbox_id;
            v[i].rank = x->metadata ? x->metadata->attempt : 0;
        }
        id = pick(c, "container", "ps -a", ref, v, r->n_containers);
    }
    free(v);
    ctl_free_msg(r);
    return id;
}

char *ctl_resolve_pod(ctl *c, const char *ref)
{
    Runtime__V1__ListPodSandboxRequest req = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
    Runtime__V1__ListPodSandboxResponse *r = (void *)ctl_rt_call(
        c, "ListPodSandbox", &req.base, &runtime__v1__list_pod_sandbox_response__descriptor);
    if (!r)
        return NULL;
    cand *v = calloc(r->n_items + 1, sizeof *v);
    char *id = NULL;
    if (v) {
        for (size_t i = 0; i < r->n_items; i++) {
            const Runtime__V1__PodSandbox *x = r->items[i];
            v[i].id = x->id;
            v[i].name = x->metadata ? x->metadata->name : NULL;
            v[i].group = x->metadata ? x->metadata->namespace_ : "";
            v[i].rank = (uint64_t)x->created_at;
        }
        id = pick(c, "pod sandbox", "pods", ref, v, r->n_items);
    }
    free(v);
    ctl_free_msg(r);
    return id;
}
