/* CRI calls for the commands: connecting (with crictl's endpoint fallback
 * list), debug logging of requests and answers, errors with a hint saying
 * what to do, and ID-prefix resolution. Nothing here prints an error: each
 * failure comes back as an sl_error the command prints once. */
#include <errno.h>
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

static void unreachable(ctl *c, const char *what, const sl_error *ce, sl_error *e)
{
    sl_error_code(
        e, SL_CRI_UNAVAILABLE,
        "runtime not reachable: %s%s%s\n  Is sluiced (or your CRI runtime) running? Choose the "
        "endpoint with -r/--runtime-endpoint, $CONTAINER_RUNTIME_ENDPOINT or runtime-endpoint "
        "in %s.",
        what, ce ? ": " : "", ce ? ce->msg : "",
        c->config_path ? c->config_path : CTL_DEFAULT_CONFIG);
}

static sl_cri_client *connect_one(ctl *c, const char *ep, sl_error *e)
{
    sl_cri_client *cl = NULL;
    ctl_debug(c, "connecting to %s (timeout %u ms)", ep, c->timeout_ms);
    if (sl_cri_client_connect(ep, c->timeout_ms, &cl, e) < 0) {
        ctl_debug(c, "%s", e->msg);
        return NULL;
    }
    return cl;
}

static sl_cri_client *runtime_client(ctl *c, sl_error *e)
{
    sl_error ce;
    if (c->rt)
        return c->rt;
    if (c->runtime_endpoint) {
        c->rt = connect_one(c, c->runtime_endpoint, &ce);
        if (!c->rt)
            unreachable(c, c->runtime_endpoint, &ce, e);
        c->rt_endpoint_used = c->runtime_endpoint;
        return c->rt;
    }
    for (size_t i = 0; i < NDEFAULTS && !c->rt; i++) {
        c->rt = connect_one(c, default_endpoints[i], &ce);
        c->rt_endpoint_used = default_endpoints[i];
    }
    if (!c->rt)
        unreachable(c,
                    "none of the default endpoints answered (unix:///run/sluice/sluice.sock, "
                    "containerd, CRI-O, cri-dockerd; -D shows each error)",
                    NULL, e);
    else
        ctl_debug(c, "using runtime endpoint %s", c->rt_endpoint_used);
    return c->rt;
}

static sl_cri_client *image_client(ctl *c, sl_error *e)
{
    if (!c->image_endpoint ||
        (c->runtime_endpoint && !strcmp(c->image_endpoint, c->runtime_endpoint)))
        return runtime_client(c, e);
    if (!c->img) {
        sl_error ce;
        c->img = connect_one(c, c->image_endpoint, &ce);
        if (!c->img)
            unreachable(c, c->image_endpoint, &ce, e);
    }
    return c->img;
}

const char *ctl_image_endpoint(ctl *c, sl_error *e)
{
    if (!image_client(c, e))
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

void ctl_call_error(ctl *c, const char *method, const sl_error *err, sl_error *e)
{
    const char *ep = c->rt_endpoint_used ? c->rt_endpoint_used : "the runtime";
    if (sl_cri_transport_failed(err))
        sl_error_code(e, err->code, "%s: lost the runtime at %s: %s", method, ep, err->msg);
    else if (err->code == SL_CRI_DEADLINE_EXCEEDED)
        sl_error_code(e, err->code, "%s: %s (the runtime at %s is slow or stuck; raise --timeout)",
                      method, err->msg, ep);
    else if (err->code == SL_CRI_UNIMPLEMENTED)
        sl_error_code(e, err->code, "%s: the runtime at %s does not implement it: %s", method, ep,
                      err->msg);
    else if (err->code == SL_CRI_NOT_FOUND)
        sl_error_code(e, err->code, "%s: %s", method, err->msg);
    else
        sl_error_code(e, err->code, "%s failed: %s (%s)", method, err->msg,
                      sl_cri_code_name(err->code));
}

int ctl_call_raw(ctl *c, bool image, const char *method, const ProtobufCMessage *req,
                 const ProtobufCMessageDescriptor *resp_desc, ProtobufCMessage **resp,
                 uint32_t timeout_ms, sl_error *err, sl_error *e)
{
    *resp = NULL;
    sl_cri_client *cl = image ? image_client(c, e) : runtime_client(c, e);
    if (!cl) {
        sl_error_code(err, SL_CRI_UNAVAILABLE, "not connected");
        err->errnum = ENOTCONN; /* local, as a refused connection is */
        return CTL_NOT_CONNECTED;
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
    if (rc != SL_CRI_OK)
        ctl_call_error(c, method, err, e);
    return rc;
}

int ctl_rt_stream(ctl *c, const char *method, const ProtobufCMessage *req,
                  const ProtobufCMessageDescriptor *resp_desc, const sl_cri_stream_cb *cb,
                  sl_error *e)
{
    sl_cri_client *cl = runtime_client(c, e);
    if (!cl)
        return -1;
    char path[128];
    snprintf(path, sizeof path, "/runtime.v1.RuntimeService/%s", method);
    debug_msg(c, "request", method, req);
    sl_error ce;
    int rc = sl_cri_client_stream(cl, path, req, resp_desc, cb, 0, &ce);
    ctl_debug(c, "%s ended: %s: %s", method, sl_cri_code_name(rc), ce.msg);
    if (rc == SL_CRI_OK || (rc == SL_CRI_CANCELLED && sl_cri_is_local(&ce)))
        return 0;
    ctl_call_error(c, method, &ce, e);
    return -1;
}

static ProtobufCMessage *call_tmo(ctl *c, bool image, const char *method,
                                  const ProtobufCMessage *req, const ProtobufCMessageDescriptor *d,
                                  uint32_t tmo, sl_error *e)
{
    ProtobufCMessage *resp;
    sl_error ce;
    ctl_call_raw(c, image, method, req, d, &resp, tmo, &ce, e);
    return resp;
}

ProtobufCMessage *ctl_rt_call(ctl *c, const char *method, const ProtobufCMessage *req,
                              const ProtobufCMessageDescriptor *d, sl_error *e)
{
    return call_tmo(c, false, method, req, d, c->timeout_ms, e);
}

ProtobufCMessage *ctl_rt_call_slow(ctl *c, const char *method, const ProtobufCMessage *req,
                                   const ProtobufCMessageDescriptor *d, sl_error *e)
{
    uint32_t tmo = c->timeout_ms > CTL_SLOW_TIMEOUT_MS ? c->timeout_ms : CTL_SLOW_TIMEOUT_MS;
    return call_tmo(c, false, method, req, d, tmo, e);
}

ProtobufCMessage *ctl_img_call(ctl *c, const char *method, const ProtobufCMessage *req,
                               const ProtobufCMessageDescriptor *d, sl_error *e)
{
    return call_tmo(c, true, method, req, d, c->timeout_ms, e);
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

static char *dup_id(const char *id, sl_error *e)
{
    char *d = strdup(id);
    if (!d)
        sl_error_set(e, ENOMEM, "ID %s", id);
    return d;
}

static char *pick(const char *kind, const char *lister, const char *ref, const cand *v, size_t n,
                  sl_error *e)
{
    size_t hits = 0, hit = 0, rl = strlen(ref);
    if (rl == 0) {
        sl_error_set(e, 0, "an empty %s ID names nothing (`sluicectl %s` lists them)", kind,
                     lister);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (!strcmp(v[i].id, ref))
            return dup_id(v[i].id, e);
    for (size_t i = 0; i < n; i++)
        if (!strncmp(v[i].id, ref, rl))
            hits++, hit = i;
    if (hits == 0)
        for (size_t i = 0; i < n; i++)
            if (v[i].name && !strcmp(v[i].name, ref))
                hits++, hit = i;
    if (hits == 1)
        return dup_id(v[hit].id, e);
    long newest = hits > 1 ? newest_attempt(v, n, ref) : -1;
    if (newest >= 0)
        return dup_id(v[newest].id, e);
    if (hits == 0)
        sl_error_code(e, SL_CRI_NOT_FOUND,
                      "%s \"%s\" not found: no %s has that ID, ID prefix or name (`sluicectl %s` "
                      "lists them)",
                      kind, ref, kind, lister);
    else
        sl_error_set(e, 0, "\"%s\" matches %zu of them (%s): give more of the ID (`sluicectl %s`)",
                     ref, hits, kind, lister);
    return NULL;
}

char *ctl_resolve_ctr(ctl *c, const char *ref, sl_error *e)
{
    Runtime__V1__ListContainersRequest req = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
    Runtime__V1__ListContainersResponse *r = (void *)ctl_rt_call(
        c, "ListContainers", &req.base, &runtime__v1__list_containers_response__descriptor, e);
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
        id = pick("container", "ps -a", ref, v, r->n_containers, e);
    } else {
        sl_error_set(e, ENOMEM, "resolving container %s", ref);
    }
    free(v);
    ctl_free_msg(r);
    return id;
}

char *ctl_resolve_pod(ctl *c, const char *ref, sl_error *e)
{
    Runtime__V1__ListPodSandboxRequest req = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
    Runtime__V1__ListPodSandboxResponse *r = (void *)ctl_rt_call(
        c, "ListPodSandbox", &req.base, &runtime__v1__list_pod_sandbox_response__descriptor, e);
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
        id = pick("pod sandbox", "pods", ref, v, r->n_items, e);
    } else {
        sl_error_set(e, ENOMEM, "resolving pod sandbox %s", ref);
    }
    free(v);
    ctl_free_msg(r);
    return id;
}
