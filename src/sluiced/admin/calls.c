/* Per-call metrics and log lines (see calls.h). */
#include "admin/calls.h"

#include <stdlib.h>
#include <string.h>

#include "admin/prom.h"
#include "sl_log.h"

#define MAX_IDS 8 /* id pairs of one log line */

static const double bounds[SL_CALLS_NBUCKETS] = {SL_CALLS_BUCKETS};

/* A successful call that changes a pod's or container's life: info. */
static const struct {
    const char *method, *msg;
} lifecycle[] = {
    {"RunPodSandbox", "pod sandbox running"},
    {"StopPodSandbox", "pod sandbox stopped"},
    {"RemovePodSandbox", "pod sandbox removed"},
    {"CreateContainer", "container created"},
    {"StartContainer", "container started"},
    {"StopContainer", "container stopped"},
    {"RemoveContainer", "container removed"},
    {"UpdateContainerResources", "container resources updated"},
    {"PullImage", "image pulled"},
    {"RemoveImage", "image removed"},
};

int sl_calls_init(sl_calls *c, const sl_grpc_method *methods, size_t nmethods)
{
    c->methods = methods;
    c->nmethods = nmethods;
    c->stats = calloc(nmethods + 1, sizeof(*c->stats));
    return c->stats ? 0 : -1;
}

void sl_calls_fini(sl_calls *c)
{
    free(c->stats);
    c->stats = NULL;
}

/* "RunPodSandbox" of "/runtime.v1.RuntimeService/RunPodSandbox". */
static const char *method_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static size_t method_index(const sl_calls *c, const sl_grpc_method *m)
{
    if (m && m >= c->methods && m < c->methods + c->nmethods)
        return (size_t)(m - c->methods);
    return c->nmethods;
}

static void count(sl_calls *c, const sl_grpc_call_end *end)
{
    sl_call_stats *s = &c->stats[method_index(c, end->method)];
    int code = end->code >= 0 && end->code <= SL_GRPC_CODE_MAX ? end->code : SL_GRPC_UNKNOWN;
    s->codes[code]++;
    double secs = (double)end->duration_ns / 1e9;
    size_t b = 0;
    while (b < SL_CALLS_NBUCKETS && secs > bounds[b])
        b++;
    s->buckets[b]++;
    s->sum_ns += end->duration_ns;
}

/* ---- ids of a request and its answer (protobuf-c reflection) ---- */

static const void *field(const ProtobufCMessage *m, const char *name, ProtobufCType type)
{
    if (!m)
        return NULL;
    const ProtobufCFieldDescriptor *fd =
        protobuf_c_message_descriptor_get_field_by_name(m->descriptor, name);
    if (!fd || fd->type != type || fd->label == PROTOBUF_C_LABEL_REPEATED)
        return NULL;
    return *(const void *const *)((const char *)m + fd->offset);
}

static const char *str(const ProtobufCMessage *m, const char *name)
{
    const char *v = field(m, name, PROTOBUF_C_TYPE_STRING);
    return v && *v ? v : NULL;
}

static const ProtobufCMessage *sub(const ProtobufCMessage *m, const char *name)
{
    return field(m, name, PROTOBUF_C_TYPE_MESSAGE);
}

static void add(const char **kv, size_t *n, size_t max, const char *key, const char *value)
{
    for (size_t i = 0; i < *n; i++)
        if (!strcmp(kv[2 * i], key))
            return; /* the request's id wins over the answer's */
    if (value && *n < max) {
        kv[2 * *n] = key;
        kv[2 * *n + 1] = value;
        (*n)++;
    }
}

static void ids_of(const ProtobufCMessage *m, const char **kv, size_t *n, size_t max)
{
    add(kv, n, max, "pod", str(m, "pod_sandbox_id"));
    add(kv, n, max, "container", str(m, "container_id"));
    add(kv, n, max, "image", str(sub(m, "image"), "image"));
    add(kv, n, max, "image_ref", str(m, "image_ref"));
    const ProtobufCMessage *meta = sub(sub(m, "config"), "metadata");
    add(kv, n, max, "name", str(meta, "name"));
    add(kv, n, max, "namespace", str(meta, "namespace"));
}

size_t sl_calls_ids(const ProtobufCMessage *req, const ProtobufCMessage *resp, const char **kv,
                    size_t max)
{
    size_t n = 0;
    ids_of(req, kv, &n, max);
    ids_of(resp, kv, &n, max);
    return n;
}

/* ---- the log line ---- */

static const char *lifecycle_msg(const char *method)
{
    for (size_t i = 0; i < sizeof(lifecycle) / sizeof(lifecycle[0]); i++)
        if (!strcmp(lifecycle[i].method, method))
            return lifecycle[i].msg;
    return NULL;
}

static void log_call(const sl_grpc_call_end *end)
{
    const char *method = method_name(end->path);
    const char *life = end->code == SL_GRPC_OK ? lifecycle_msg(method) : NULL;
    int level = end->code != SL_GRPC_OK ? SL_LOG_WARN : life ? SL_LOG_INFO : SL_LOG_DEBUG;
    if (!sl_log_enabled(level))
        return;
    const char *kv[2 * (MAX_IDS + 4)];
    char ms[32];
    snprintf(ms, sizeof(ms), "%.3f", (double)end->duration_ns / 1e6);
    size_t n = 0;
    kv[2 * n] = "method", kv[2 * n + 1] = method, n++;
    if (end->code != SL_GRPC_OK) {
        kv[2 * n] = "code", kv[2 * n + 1] = sl_grpc_code_name(end->code), n++;
        kv[2 * n] = "error", kv[2 * n + 1] = end->message, n++;
    }
    n += sl_calls_ids(end->request, end->response, kv + 2 * n, MAX_IDS);
    kv[2 * n] = "duration_ms", kv[2 * n + 1] = ms, n++;
    const char *msg = end->code != SL_GRPC_OK ? "CRI call failed" : life ? life : "CRI call";
    sl_log_kv(level, msg, kv, n);
}

void sl_calls_on_end(const sl_grpc_call_end *end, void *arg)
{
    count(arg, end);
    log_call(end);
}

/* ---- /metrics ---- */

void sl_calls_write_metrics(const sl_calls *c, FILE *f)
{
    sl_prom_family(f, "sluice_cri_requests_total", "counter",
                   "CRI calls answered, by method and gRPC status code.");
    for (size_t i = 0; i <= c->nmethods; i++) {
        const char *m = i < c->nmethods ? method_name(c->methods[i].path) : SL_CALLS_UNKNOWN_METHOD;
        for (int code = 0; code <= SL_GRPC_CODE_MAX; code++) {
            if (!c->stats[i].codes[code])
                continue;
            const char *labels[] = {"method", m, "code", sl_grpc_code_name(code), NULL};
            sl_prom_sample(f, "sluice_cri_requests_total", labels, c->stats[i].codes[code]);
        }
    }
    sl_prom_family(f, "sluice_cri_request_duration_seconds", "histogram",
                   "Time from a CRI call's request headers to its answer, by method.");
    for (size_t i = 0; i <= c->nmethods; i++) {
        const char *m = i < c->nmethods ? method_name(c->methods[i].path) : SL_CALLS_UNKNOWN_METHOD;
        const sl_call_stats *s = &c->stats[i];
        uint64_t total = 0;
        for (size_t b = 0; b <= SL_CALLS_NBUCKETS; b++)
            total += s->buckets[b];
        if (!total)
            continue;
        const char *labels[] = {"method", m, NULL};
        sl_prom_histogram(f, "sluice_cri_request_duration_seconds", labels, bounds,
                          SL_CALLS_NBUCKETS, s->buckets, (double)s->sum_ns / 1e9);
    }
}
