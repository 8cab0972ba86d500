/* Routing, authentication, discovery and pods get/list. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http/http_response.h"
#include "kube.h"
#include "pct.h"
#include "pods.h"

#define MAX_SEGS 8

static const char *reason_of(int code)
{
    switch (code) {
    case 400:
        return "BadRequest";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "NotFound";
    case 405:
        return "MethodNotAllowed";
    case 406:
        return "NotAcceptable";
    case 422:
        return "Invalid";
    case 429:
        return "TooManyRequests";
    case 503:
        return "ServiceUnavailable";
    default:
        return "InternalError";
    }
}

json_t *sk_status_json(int code, const char *message, const char *name, const char *kind)
{
    json_t *s = json_pack("{s:s, s:s, s:{}, s:s, s:s, s:s, s:i}", "kind", "Status", "apiVersion",
                          "v1", "metadata", "status", "Failure", "message", message, "reason",
                          reason_of(code), "code", code);
    if (s && (name || kind)) {
        json_t *d = json_object();
        if (name)
            json_object_set_new(d, "name", json_string(name));
        if (kind)
            json_object_set_new(d, "kind", json_string(kind));
        json_object_set_new(s, "details", d);
    }
    return s;
}

void sk_respond_raw(sk_conn *c, int code, const char *content_type, const void *body, size_t len,
                    const char *extra_headers)
{
    char head[1024];
    int n =
        snprintf(head, sizeof head,
                 "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                 "Cache-Control: no-cache, private\r\n%s%s\r\n",
                 code, sl_http_reason(code), content_type, len,
                 c->keep_alive ? "" : "Connection: close\r\n", extra_headers ? extra_headers : "");
    if (n < 0 || (size_t)n >= sizeof head)
        n = 0;
    if (sk_conn_send(c, head, (size_t)n) == 0 && len > 0)
        sk_conn_send(c, body, len);
    sk_conn_done(c);
}

void sk_respond_json(sk_conn *c, int code, json_t *body, const char *extra_headers)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text) {
        static const char oom[] = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":"
                                  "\"Failure\",\"message\":\"out of memory\",\"code\":500}";
        sk_respond_raw(c, 500, "application/json", oom, sizeof oom - 1, NULL);
        return;
    }
    sk_respond_raw(c, code, "application/json", text, strlen(text), extra_headers);
    free(text);
}

void sk_respond_status(sk_conn *c, int code, const char *message, const char *name,
                       const char *kind)
{
    sk_respond_json(c, code, sk_status_json(code, message, name, kind), NULL);
}

/* ---- discovery ---- */

static json_t *resource(const char *name, const char *kind, bool ns, const char *verbs)
{
    json_t *v = json_array();
    char buf[128];
    snprintf(buf, sizeof buf, "%s", verbs);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
        json_array_append_new(v, json_string(t));
    json_t *r = json_pack("{s:s, s:s, s:b, s:s, s:o}", "name", name, "singularName", "",
                          "namespaced", ns, "kind", kind, "verbs", v);
    if (r && !strcmp(name, "pods")) {
        json_object_set_new(r, "singularName", json_string("pod"));
        json_object_set_new(r, "shortNames", json_pack("[s]", "po"));
        json_object_set_new(r, "categories", json_pack("[s]", "all"));
    }
    return r;
}

static json_t *api_v1(void)
{
    json_t *res =
        json_pack("[o, o, o, o, o, o]", resource("pods", "Pod", true, "get,list"),
                  resource("pods/attach", "PodAttachOptions", true, "create,get"),
                  resource("pods/exec", "PodExecOptions", true, "create,get"),
                  resource("pods/log", "Pod", true, "get"),
                  resource("pods/portforward", "PodPortForwardOptions", true, "create,get"),
                  resource("namespaces", "Namespace", false, "get,list"));
    return json_pack("{s:s, s:s, s:s, s:o}", "kind", "APIResourceList", "apiVersion", "v1",
                     "groupVersion", "v1", "resources", res);
}

static json_t *version_json(void)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "major", "1", "minor", "32",
                     "gitVersion", "v1.32.0-sluice", "gitCommit", "", "gitTreeState", "clean",
                     "buildDate", "", "goVersion", "", "compiler", "", "platform", "linux/amd64");
}

static json_t *api_versions(sk_conn *c)
{
    char addr[128];
    snprintf(addr, sizeof addr, "%s:%d", c->srv->cfg.address, c->srv->bound_port);
    return json_pack("{s:s, s:[s], s:[{s:s, s:s}]}", "kind", "APIVersions", "versions", "v1",
                     "serverAddressByClientCIDRs", "clientCIDR", "0.0.0.0/0", "serverAddress",
                     addr);
}

/* ---- pods get / list ---- */

typedef struct pods_job {
    sk_job job;
    char *ns, *name; /* NULL: all */
    bool table, namespaces;
    int code;
    json_t *body;
} pods_job;

static json_t *namespace_json(const char *name)
{
    return json_pack("{s:s, s:s, s:{s:s}, s:{s:[s]}, s:{s:s}}", "kind", "Namespace", "apiVersion",
                     "v1", "metadata", "name", name, "spec", "finalizers", "kubernetes", "status",
                     "phase", "Active");
}

/* The namespaces of the pods there are, and "default". */
static json_t *namespace_list(const sk_pods *ps)
{
    json_t *items = json_array(), *seen = json_object();
    json_object_set_new(seen, "default", json_true());
    for (size_t i = 0; i < ps->n; i++)
        json_object_set_new(seen, ps->items[i].ns, json_true());
    const char *k;
    json_t *v;
    json_object_foreach(seen, k, v) json_array_append_new(items, namespace_json(k));
    json_decref(seen);
    return json_pack("{s:s, s:s, s:{s:s}, s:o}", "kind", "NamespaceList", "apiVersion", "v1",
                     "metadata", "resourceVersion", "1", "items", items);
}

static void pods_run(sk_job *j, sl_cri_client *cli)
{
    pods_job *pj = (pods_job *)j;
    sk_server *srv = j->c->srv;
    sk_pods ps;
    if (!cli || sk_pods_load(cli, pj->ns, pj->name, &ps, &j->err) != SL_CRI_OK) {
        char msg[SL_CRI_MAX_ERR + 64];
        sk_cri_err_text(&j->err, msg, sizeof msg);
        pj->code = 503;
        pj->body = sk_status_json(503, msg, NULL, NULL);
        return;
    }
    const char *node = srv->cfg.node_name;
    if (pj->namespaces) {
        pj->code = 200;
        pj->body = namespace_list(&ps);
    } else if (pj->name && ps.n == 0) {
        char msg[512];
        snprintf(msg, sizeof msg, "pods \"%s\" not found", pj->name);
        pj->code = 404;
        pj->body = sk_status_json(404, msg, pj->name, "pods");
    } else if (pj->table) {
        pj->code = 200;
        pj->body = sk_pod_table_json(&ps, node);
    } else {
        pj->code = 200;
        pj->body = pj->name ? sk_pod_json(&ps.items[0], srv->runtime_name, node)
                            : sk_pod_list_json(&ps, srv->runtime_name, node);
    }
    sk_pods_free(&ps);
}

static void pods_done(sk_job *j)
{
    pods_job *pj = (pods_job *)j;
    sk_respond_json(j->c, pj->code, pj->body, NULL);
    pj->body = NULL;
}

static void pods_free(sk_job *j)
{
    pods_job *pj = (pods_job *)j;
    json_decref(pj->body);
    free(pj->ns);
    free(pj->name);
    free(pj);
}

static void pods_get(sk_conn *c, const sl_http_request *req, const char *ns, const char *name,
                     bool namespaces)
{
    pods_job *pj = calloc(1, sizeof(*pj));
    if (!pj) {
        sk_respond_status(c, 500, "out of memory", NULL, NULL);
        return;
    }
    const char *accept = sl_http_header_get(req, "Accept");
    pj->table = accept && strstr(accept, "as=Table") != NULL && !namespaces;
    pj->namespaces = namespaces;
    pj->ns = ns ? strdup(ns) : NULL;
    pj->name = name ? strdup(name) : NULL;
    pj->job.c = c;
    pj->job.run = pods_run;
    pj->job.done = pods_done;
    pj->job.free = pods_free;
    if (sk_job_queue(c->srv, &pj->job) < 0) {
        pods_free(&pj->job);
        sk_respond_status(c, 500, "cannot queue the request", NULL, NULL);
    }
}

/* ---- routing ---- */

static bool authorized(sk_conn *c, const sl_http_request *req)
{
    const char *want = c->srv->cfg.token;
    if (!want)
        return true;
    const char *h = sl_http_header_get(req, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return false;
    const char *got = h + 7;
    while (*got == ' ')
        got++;
    size_t gl = strlen(got), wl = strlen(want);
    unsigned diff = gl != wl;
    for (size_t i = 0; i < wl; i++)
        diff |= (unsigned)(want[i] ^ (i < gl ? got[i] : 0));
    return diff == 0;
}

/* Splits the path into percent-decoded segments; -1 when malformed. */
static int split_path(const char *path, char **segs, int max)
{
    int n = 0;
    const char *s = path;
    while (*s == '/')
        s++;
    while (*s) {
        const char *e = strchr(s, '/');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (n == max || !(segs[n] = sl_pct_decode_dup(s, len, SL_PCT_STRICT)))
            return -1;
        n++;
        if (!e)
            break;
        s = e + 1;
    }
    return n;
}

static bool is_get(const sl_http_request *r)
{
    return !strcmp(r->method, "GET");
}

static void not_allowed(sk_conn *c)
{
    sk_respond_status(c, 405, "the server does not allow this method on the requested resource",
                      NULL, NULL);
}

static void subresource(sk_conn *c, const sl_http_request *req, char **s)
{
    const char *ns = s[3], *name = s[5], *sub = s[6];
    bool get_post = is_get(req) || !strcmp(req->method, "POST");
    if (!strcmp(sub, "exec") || !strcmp(sub, "attach") || !strcmp(sub, "portforward")) {
        if (!get_post)
            return not_allowed(c);
        sk_stream_kind k = sub[0] == 'e' ? SK_EXEC : sub[0] == 'a' ? SK_ATTACH : SK_PORTFORWARD;
        return sk_stream_handle(c, k, ns, name, req->query);
    }
    if (!strcmp(sub, "log")) {
        if (!is_get(req))
            return not_allowed(c);
        return sk_logs_handle(c, ns, name, req->query);
    }
    sk_respond_status(c, 404, "the server could not find the requested resource", NULL, NULL);
}

/* /api/v1/... below the group version. */
static void route_v1(sk_conn *c, const sl_http_request *req, char **s, int n)
{
    bool get = is_get(req);
    if (n == 3 && !strcmp(s[2], "pods"))
        return get ? pods_get(c, req, NULL, NULL, false) : not_allowed(c);
    if (n == 3 && !strcmp(s[2], "namespaces"))
        return get ? pods_get(c, req, NULL, NULL, true) : not_allowed(c);
    /* Every namespace exists here: pods are whatever the runtime has. */
    if (n == 4 && !strcmp(s[2], "namespaces"))
        return get ? sk_respond_json(c, 200, namespace_json(s[3]), NULL) : not_allowed(c);
    if (n >= 5 && !strcmp(s[2], "namespaces") && !strcmp(s[4], "pods")) {
        if (n == 5)
            return get ? pods_get(c, req, s[3], NULL, false) : not_allowed(c);
        if (n == 6)
            return get ? pods_get(c, req, s[3], s[5], false) : not_allowed(c);
        if (n == 7)
            return subresource(c, req, s);
    }
    sk_respond_status(c, 404, "the server could not find the requested resource", NULL, NULL);
}

static void route(sk_conn *c, const sl_http_request *req, char **s, int n)
{
    bool get = is_get(req);
    if (n == 1 && !strcmp(s[0], "version"))
        return get ? sk_respond_json(c, 200, version_json(), NULL) : not_allowed(c);
    if (n == 1 && !strcmp(s[0], "api"))
        return get ? sk_respond_json(c, 200, api_versions(c), NULL) : not_allowed(c);
    if (n == 1 && !strcmp(s[0], "apis"))
        return get ? sk_respond_json(c, 200,
                                     json_pack("{s:s, s:s, s:[]}", "kind", "APIGroupList",
                                               "apiVersion", "v1", "groups"),
                                     NULL)
                   : not_allowed(c);
    if (n == 2 && !strcmp(s[0], "api") && !strcmp(s[1], "v1"))
        return get ? sk_respond_json(c, 200, api_v1(), NULL) : not_allowed(c);
    if (n >= 3 && !strcmp(s[0], "api") && !strcmp(s[1], "v1"))
        return route_v1(c, req, s, n);
    sk_respond_status(c, 404, "the server could not find the requested resource", NULL, NULL);
}

void sk_api_handle(sk_conn *c, const sl_http_request *req)
{
    if (!authorized(c, req)) {
        sk_respond_status(c, 401, "Unauthorized", NULL, NULL);
        return;
    }
    char *segs[MAX_SEGS] = {0};
    int n = split_path(req->path, segs, MAX_SEGS);
    if (n < 0)
        sk_respond_status(c, 404, "the server could not find the requested resource", NULL, NULL);
    else
        route(c, req, segs, n);
    for (int i = 0; i < MAX_SEGS; i++)
        free(segs[i]);
}
