/* Loading pods from CRI (on a thread-pool thread). JSON is in pods_json.c. */
#include "pods.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/api.pb-c.h"
#include "kube.h"

#define RT "/runtime.v1.RuntimeService/"

/* The error of a pod load that ran out of memory (an Internal status). */
static int no_memory(sl_error *err)
{
    sl_error_set(err, ENOMEM, "loading pods");
    err->code = SL_CRI_INTERNAL;
    return SL_CRI_INTERNAL;
}

static char *dup_s(const char *s)
{
    return strdup(s ? s : "");
}

static int call(sl_cri_client *cli, const char *method, const void *req,
                const ProtobufCMessageDescriptor *desc, void *resp, sl_error *err)
{
    char path[128];
    snprintf(path, sizeof path, RT "%s", method);
    return sl_cri_client_call(cli, path, req, desc, (ProtobufCMessage **)resp, SK_CRI_TIMEOUT_MS,
                              err);
}

static void ctr_free(sk_ctr *c)
{
    if (!c)
        return;
    free(c->id);
    free(c->name);
    free(c->image);
    free(c->image_ref);
    free(c->image_id);
    free(c->reason);
    free(c->message);
    free(c->log_path);
    ctr_free(c->prev);
    free(c->prev);
}

static void pod_free(sk_pod *p)
{
    free(p->name);
    free(p->ns);
    free(p->uid);
    free(p->sandbox_id);
    free(p->ip);
    json_decref(p->labels);
    json_decref(p->annotations);
    for (size_t i = 0; i < p->nctrs; i++)
        ctr_free(&p->ctrs[i]);
    free(p->ctrs);
}

void sk_pods_free(sk_pods *ps)
{
    for (size_t i = 0; i < ps->n; i++)
        pod_free(&ps->items[i]);
    free(ps->items);
    ps->items = NULL;
    ps->n = 0;
}

/* tty and stdin from the verbose info map (containerd: info["info"] is JSON
 * with the CRI config under "config"). */
static void parse_info(sk_ctr *c, const Runtime__V1__ContainerStatusResponse *r)
{
    for (size_t i = 0; i < r->n_info; i++) {
        if (strcmp(r->info[i]->key, "info") != 0)
            continue;
        json_t *j = json_loads(r->info[i]->value, 0, NULL);
        json_t *cfg = json_object_get(j, "config");
        c->tty = json_is_true(json_object_get(cfg, "tty"));
        c->stdin_open = json_is_true(json_object_get(cfg, "stdin"));
        json_decref(j);
    }
}

static void fill_status(sl_cri_client *cli, sk_ctr *c)
{
    Runtime__V1__ContainerStatusRequest req = RUNTIME__V1__CONTAINER_STATUS_REQUEST__INIT;
    req.container_id = c->id;
    req.verbose = true;
    Runtime__V1__ContainerStatusResponse *r = NULL;
    sl_error err;
    if (call(cli, "ContainerStatus", &req, &runtime__v1__container_status_response__descriptor, &r,
             &err) != SL_CRI_OK)
        return; /* gone meanwhile: keep what the list said */
    const Runtime__V1__ContainerStatus *s = r->status;
    if (s) {
        c->state = (int)s->state;
        c->started = s->started_at;
        c->finished = s->finished_at;
        c->exit_code = s->exit_code;
        free(c->reason);
        free(c->message);
        free(c->log_path);
        free(c->image_id);
        c->reason = dup_s(s->reason);
        c->message = dup_s(s->message);
        c->log_path = dup_s(s->log_path);
        c->image_id = dup_s(s->image_id);
        if (s->image_ref && *s->image_ref) {
            free(c->image_ref);
            c->image_ref = dup_s(s->image_ref);
        }
    }
    parse_info(c, r);
    protobuf_c_message_free_unpacked(&r->base, NULL);
}

static int ctr_from(sk_ctr *c, const Runtime__V1__Container *x)
{
    memset(c, 0, sizeof(*c));
    c->id = dup_s(x->id);
    c->name = dup_s(x->metadata ? x->metadata->name : "");
    c->image = dup_s(x->image ? x->image->image : "");
    c->image_ref = dup_s(x->image_ref);
    c->image_id = dup_s(x->image_id);
    c->reason = dup_s("");
    c->message = dup_s("");
    c->log_path = dup_s("");
    c->state = (int)x->state;
    c->attempt = x->metadata ? x->metadata->attempt : 0;
    c->created = x->created_at;
    return c->id && c->name && c->image && c->image_ref && c->image_id && c->reason && c->message &&
                   c->log_path
               ? 0
               : -1;
}

static bool newer_ctr(const Runtime__V1__Container *a, const Runtime__V1__Container *b)
{
    uint32_t aa = a->metadata ? a->metadata->attempt : 0;
    uint32_t ba = b->metadata ? b->metadata->attempt : 0;
    return aa != ba ? aa > ba : a->created_at > b->created_at;
}

static int cmp_first(const void *a, const void *b)
{
    const Runtime__V1__Container *x = *(Runtime__V1__Container *const *)a;
    const Runtime__V1__Container *y = *(Runtime__V1__Container *const *)b;
    return x->created_at < y->created_at ? -1 : x->created_at > y->created_at;
}

static const char *cname(const Runtime__V1__Container *x)
{
    return x->metadata && x->metadata->name ? x->metadata->name : "";
}

/* For container k, the newest and the second newest attempt of its name. */
static void pick(Runtime__V1__Container **v, size_t n, size_t k, Runtime__V1__Container **newest,
                 Runtime__V1__Container **second)
{
    *newest = NULL;
    *second = NULL;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(cname(v[i]), cname(v[k])) != 0)
            continue;
        if (!*newest || newer_ctr(v[i], *newest)) {
            *second = *newest;
            *newest = v[i];
        } else if (!*second || newer_ctr(v[i], *second)) {
            *second = v[i];
        }
    }
}

/* True when v[k] is the first (oldest) container of its name. */
static bool first_of_name(Runtime__V1__Container **v, size_t k)
{
    for (size_t i = 0; i < k; i++)
        if (strcmp(cname(v[i]), cname(v[k])) == 0)
            return false;
    return true;
}

static int add_ctr(sl_cri_client *cli, sk_pod *p, Runtime__V1__Container *newest,
                   Runtime__V1__Container *second)
{
    sk_ctr *c = &p->ctrs[p->nctrs];
    if (ctr_from(c, newest) < 0) {
        ctr_free(c);
        return -1;
    }
    p->nctrs++;
    fill_status(cli, c);
    if (second && (c->prev = calloc(1, sizeof(*c->prev)))) {
        if (ctr_from(c->prev, second) == 0)
            fill_status(cli, c->prev);
    }
    return 0;
}

static int load_ctrs(sl_cri_client *cli, sk_pod *p, sl_error *err)
{
    Runtime__V1__ContainerFilter f = RUNTIME__V1__CONTAINER_FILTER__INIT;
    f.pod_sandbox_id = p->sandbox_id;
    Runtime__V1__ListContainersRequest req = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
    req.filter = &f;
    Runtime__V1__ListContainersResponse *r = NULL;
    int rc = call(cli, "ListContainers", &req, &runtime__v1__list_containers_response__descriptor,
                  &r, err);
    if (rc != SL_CRI_OK)
        return rc;
    size_t n = r->n_containers;
    Runtime__V1__Container **v = calloc(n ? n : 1, sizeof(*v));
    p->ctrs = calloc(n ? n : 1, sizeof(*p->ctrs));
    rc = v && p->ctrs ? SL_CRI_OK : SL_CRI_INTERNAL;
    size_t m = 0;
    for (size_t i = 0; rc == SL_CRI_OK && i < n; i++)
        if (!strcmp(r->containers[i]->pod_sandbox_id, p->sandbox_id)) /* filters are prefixes */
            v[m++] = r->containers[i];
    if (rc == SL_CRI_OK)
        qsort(v, m, sizeof(*v), cmp_first);
    for (size_t k = 0; rc == SL_CRI_OK && k < m; k++) {
        if (!first_of_name(v, k))
            continue;
        Runtime__V1__Container *newest, *second;
        pick(v, m, k, &newest, &second);
        if (add_ctr(cli, p, newest, second) < 0)
            rc = SL_CRI_INTERNAL;
    }
    free(v);
    protobuf_c_message_free_unpacked(&r->base, NULL);
    return rc == SL_CRI_OK ? SL_CRI_OK : no_memory(err);
}

static void load_ip(sl_cri_client *cli, sk_pod *p)
{
    Runtime__V1__PodSandboxStatusRequest req = RUNTIME__V1__POD_SANDBOX_STATUS_REQUEST__INIT;
    req.pod_sandbox_id = p->sandbox_id;
    Runtime__V1__PodSandboxStatusResponse *r = NULL;
    sl_error err;
    if (call(cli, "PodSandboxStatus", &req, &runtime__v1__pod_sandbox_status_response__descriptor,
             &r, &err) != SL_CRI_OK)
        return;
    if (r->status && r->status->network && r->status->network->ip && *r->status->network->ip) {
        free(p->ip);
        p->ip = dup_s(r->status->network->ip);
    }
    protobuf_c_message_free_unpacked(&r->base, NULL);
}

static json_t *kv_object(Runtime__V1__PodSandbox__LabelsEntry **kv, size_t n)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < n; i++)
        json_object_set_new(o, kv[i]->key, json_string(kv[i]->value));
    return o;
}

static int pod_from(sk_pod *p, const Runtime__V1__PodSandbox *s)
{
    memset(p, 0, sizeof(*p));
    p->name = dup_s(s->metadata->name);
    p->ns = dup_s(s->metadata->namespace_);
    p->uid = dup_s(s->metadata->uid);
    p->sandbox_id = dup_s(s->id);
    p->ip = dup_s("");
    p->ready = s->state == RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY;
    p->created = s->created_at;
    p->labels = kv_object(s->labels, s->n_labels);
    p->annotations =
        kv_object((Runtime__V1__PodSandbox__LabelsEntry **)s->annotations, s->n_annotations);
    return p->name && p->ns && p->uid && p->sandbox_id && p->ip && p->labels && p->annotations ? 0
                                                                                               : -1;
}

/* Is a the better sandbox for a pod: ready first, then the newest. */
static bool better(const Runtime__V1__PodSandbox *a, const Runtime__V1__PodSandbox *b)
{
    bool ar = a->state == RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY;
    bool br = b->state == RUNTIME__V1__POD_SANDBOX_STATE__SANDBOX_READY;
    if (ar != br)
        return ar;
    return a->created_at > b->created_at;
}

static bool same_pod(const Runtime__V1__PodSandbox *a, const Runtime__V1__PodSandbox *b)
{
    return !strcmp(a->metadata->name, b->metadata->name) &&
           !strcmp(a->metadata->namespace_, b->metadata->namespace_);
}

static int cmp_pods(const void *a, const void *b)
{
    const Runtime__V1__PodSandbox *x = *(Runtime__V1__PodSandbox *const *)a;
    const Runtime__V1__PodSandbox *y = *(Runtime__V1__PodSandbox *const *)b;
    int c = strcmp(x->metadata->namespace_, y->metadata->namespace_);
    return c ? c : strcmp(x->metadata->name, y->metadata->name);
}

static bool wanted(const Runtime__V1__PodSandbox *s, const char *ns, const char *name)
{
    if (!s->metadata || !s->metadata->name || !s->metadata->namespace_)
        return false;
    if (ns && strcmp(s->metadata->namespace_, ns) != 0)
        return false;
    return !name || !strcmp(s->metadata->name, name);
}

/* The best sandbox of each pod, sorted by namespace and name. */
static size_t choose(Runtime__V1__ListPodSandboxResponse *r, const char *ns, const char *name,
                     Runtime__V1__PodSandbox **best)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n_items; i++) {
        Runtime__V1__PodSandbox *s = r->items[i];
        if (!wanted(s, ns, name))
            continue;
        size_t k = 0;
        while (k < n && !same_pod(best[k], s))
            k++;
        if (k == n)
            best[n++] = s;
        else if (better(s, best[k]))
            best[k] = s;
    }
    qsort(best, n, sizeof(*best), cmp_pods);
    return n;
}

static int build(sl_cri_client *cli, Runtime__V1__PodSandbox **best, size_t n, sk_pods *out,
                 sl_error *err)
{
    out->items = calloc(n ? n : 1, sizeof(*out->items));
    if (!out->items)
        return no_memory(err);
    for (size_t i = 0; i < n; i++) {
        sk_pod *p = &out->items[out->n];
        if (pod_from(p, best[i]) < 0) {
            pod_free(p);
            return no_memory(err);
        }
        out->n++;
        load_ip(cli, p);
        int rc = load_ctrs(cli, p, err);
        if (rc != SL_CRI_OK)
            return rc;
    }
    return SL_CRI_OK;
}

int sk_pods_load(sl_cri_client *cli, const char *ns, const char *name, sk_pods *out, sl_error *err)
{
    memset(out, 0, sizeof(*out));
    Runtime__V1__ListPodSandboxRequest req = RUNTIME__V1__LIST_POD_SANDBOX_REQUEST__INIT;
    Runtime__V1__ListPodSandboxResponse *r = NULL;
    int rc = call(cli, "ListPodSandbox", &req, &runtime__v1__list_pod_sandbox_response__descriptor,
                  &r, err);
    if (rc != SL_CRI_OK)
        return rc;
    Runtime__V1__PodSandbox **best = calloc(r->n_items ? r->n_items : 1, sizeof(*best));
    if (best) {
        size_t n = choose(r, ns, name, best);
        rc = build(cli, best, n, out, err);
    } else {
        rc = no_memory(err);
    }
    free(best);
    protobuf_c_message_free_unpacked(&r->base, NULL);
    if (rc != SL_CRI_OK)
        sk_pods_free(out);
    return rc;
}

const sk_ctr *sk_pod_ctr(const sk_pod *p, const char *name)
{
    for (size_t i = 0; i < p->nctrs; i++)
        if (strcmp(p->ctrs[i].name, name) == 0)
            return &p->ctrs[i];
    return NULL;
}

const char *sk_pod_phase(const sk_pod *p)
{
    bool running = false, all_exited = p->nctrs > 0, failed = false;
    for (size_t i = 0; i < p->nctrs; i++) {
        const sk_ctr *c = &p->ctrs[i];
        running |= c->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING;
        all_exited &= c->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED;
        failed |= c->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_EXITED && c->exit_code != 0;
    }
    if (p->ready && running)
        return "Running";
    if (all_exited)
        return failed ? "Failed" : "Succeeded";
    return "Pending";
}

const sk_ctr *sk_pod_pick(const sk_pod *p, const char *name, char *msg, size_t len)
{
    if (name && *name) {
        const sk_ctr *c = sk_pod_ctr(p, name);
        if (!c)
            snprintf(msg, len, "container %s is not valid for pod %s", name, p->name);
        return c;
    }
    if (p->nctrs == 1)
        return &p->ctrs[0];
    if (p->nctrs == 0) {
        snprintf(msg, len, "pod %s does not have a container", p->name);
        return NULL;
    }
    size_t o = (size_t)snprintf(
        msg, len, "a container name must be specified for pod %s, choose one of: [", p->name);
    for (size_t i = 0; i < p->nctrs && o < len; i++)
        o += (size_t)snprintf(msg + o, len - o, "%s%s", i ? " " : "", p->ctrs[i].name);
    if (o < len)
        snprintf(msg + o, len - o, "]");
    return NULL;
}
