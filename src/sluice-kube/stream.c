/* exec, attach and portforward: the apiserver's and kubelet's checks, the
 * CRI call, then the proxy to the runtime's URL. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/api.pb-c.h"
#include "kube.h"
#include "pods.h"

#define RT "/runtime.v1.RuntimeService/"

typedef struct stream_job {
    sk_job job;
    sk_stream_kind kind;
    char *ns, *name, *container;
    char **cmd;
    size_t ncmd;
    int32_t ports[SK_MAX_PORTS];
    size_t nports;
    bool in, out, err, tty;
    int code; /* 0: proxy to url */
    json_t *body;
    char *url;
    char extra[64];
} stream_job;

static void set_fail(stream_job *sj, int code, const char *msg, const char *name, const char *kind)
{
    sj->code = code;
    sj->body = sk_status_json(code, msg, name, kind);
}

static void cri_fail(stream_job *sj, const sl_error *e)
{
    char msg[SL_CRI_MAX_ERR + 64];
    sk_cri_err_text(e, msg, sizeof msg);
    int code = sk_cri_http_status(e->code);
    set_fail(sj, code, msg, NULL, NULL);
    if (code == 429)
        snprintf(sj->extra, sizeof sj->extra, "Retry-After: %d\r\n", SK_RETRY_AFTER_S);
}

static const sk_ctr *pick_ctr(stream_job *sj, const sk_pod *p)
{
    char msg[1024];
    const sk_ctr *c = sk_pod_pick(p, sj->container, msg, sizeof msg);
    if (!c)
        set_fail(sj, 400, msg, NULL, NULL);
    return c;
}

/* Exec, Attach and PortForward answer alike: {1: url}, read through the
 * descriptor so one call serves the three response types. */
static int call_url(stream_job *sj, sl_cri_client *cli, const char *method,
                    const ProtobufCMessage *req, const ProtobufCMessageDescriptor *d, char **url)
{
    ProtobufCMessage *r = NULL;
    int rc = sl_cri_client_call(cli, method, req, d, &r, SK_CRI_TIMEOUT_MS, &sj->job.err);
    if (rc == SL_CRI_OK) {
        const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(d, 1);
        *url = strdup(*(const char *const *)((const char *)r + f->offset));
        protobuf_c_message_free_unpacked(r, NULL);
    }
    return rc;
}

static int call_exec(stream_job *sj, sl_cri_client *cli, const sk_ctr *c, char **url)
{
    Runtime__V1__ExecRequest req = RUNTIME__V1__EXEC_REQUEST__INIT;
    req.container_id = c->id;
    req.cmd = sj->cmd;
    req.n_cmd = sj->ncmd;
    req.tty = sj->tty;
    req.stdin = sj->in;
    req.stdout = sj->out;
    req.stderr = sj->err;
    return call_url(sj, cli, RT "Exec", &req.base, &runtime__v1__exec_response__descriptor, url);
}

static int call_attach(stream_job *sj, sl_cri_client *cli, const sk_ctr *c, char **url)
{
    Runtime__V1__AttachRequest req = RUNTIME__V1__ATTACH_REQUEST__INIT;
    req.container_id = c->id;
    req.tty = sj->tty;
    req.stdin = sj->in;
    req.stdout = sj->out;
    req.stderr = sj->err;
    return call_url(sj, cli, RT "Attach", &req.base, &runtime__v1__attach_response__descriptor,
                    url);
}

static int call_pf(stream_job *sj, sl_cri_client *cli, const sk_pod *p, char **url)
{
    Runtime__V1__PortForwardRequest req = RUNTIME__V1__PORT_FORWARD_REQUEST__INIT;
    req.pod_sandbox_id = p->sandbox_id;
    req.port = sj->ports;
    req.n_port = sj->nports;
    return call_url(sj, cli, RT "PortForward", &req.base,
                    &runtime__v1__port_forward_response__descriptor, url);
}

static void stream_call(stream_job *sj, sl_cri_client *cli, const sk_pod *p)
{
    const sk_ctr *c = NULL;
    if (sj->kind != SK_PORTFORWARD && !(c = pick_ctr(sj, p)))
        return;
    if (sj->kind == SK_ATTACH) { /* the kubelet takes tty from the container's spec */
        sj->tty = c->tty;
        if (sj->tty)
            sj->err = false;
    }
    int rc = sj->kind == SK_EXEC     ? call_exec(sj, cli, c, &sj->url)
             : sj->kind == SK_ATTACH ? call_attach(sj, cli, c, &sj->url)
                                     : call_pf(sj, cli, p, &sj->url);
    if (rc != SL_CRI_OK)
        cri_fail(sj, &sj->job.err);
    else if (!sj->url)
        set_fail(sj, 500, "out of memory", NULL, NULL);
}

static void stream_run(sk_job *j, sl_cri_client *cli)
{
    stream_job *sj = (stream_job *)j;
    sk_pods ps;
    if (!cli || sk_pods_load(cli, sj->ns, sj->name, &ps, &j->err) != SL_CRI_OK) {
        cri_fail(sj, &j->err);
        return;
    }
    if (ps.n == 0) {
        char msg[512];
        snprintf(msg, sizeof msg, "pods \"%s\" not found", sj->name);
        set_fail(sj, 404, msg, sj->name, "pods");
    } else {
        stream_call(sj, cli, &ps.items[0]);
    }
    sk_pods_free(&ps);
}

static void stream_done(sk_job *j)
{
    stream_job *sj = (stream_job *)j;
    if (sj->code) {
        sk_respond_json(j->c, sj->code, sj->body, sj->extra[0] ? sj->extra : NULL);
        sj->body = NULL;
        return;
    }
    sk_proxy_start(j->c, &j->c->head.req, sj->url);
}

static void stream_free(sk_job *j)
{
    stream_job *sj = (stream_job *)j;
    for (size_t i = 0; i < sj->ncmd; i++)
        free(sj->cmd[i]);
    free(sj->cmd);
    free(sj->ns);
    free(sj->name);
    free(sj->container);
    free(sj->url);
    json_decref(sj->body);
    free(sj);
}

/* ---- query parameters ---- */

static int add_port(stream_job *sj, const char *s, size_t len)
{
    char buf[16];
    if (len == 0 || len >= sizeof buf || sj->nports == SK_MAX_PORTS)
        return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    errno = 0;
    long v = strtol(buf, &end, 10);
    if (errno || *end || v < 1 || v > 65535)
        return -1;
    sj->ports[sj->nports++] = (int32_t)v;
    return 0;
}

/* ports: repeated and/or comma-separated, each 1..65535. */
static const char *parse_ports(stream_job *sj, const sk_query *q)
{
    for (size_t i = 0; i < q->n; i++) {
        if (strcmp(q->p[i].key, "ports") != 0)
            continue;
        const char *s = q->p[i].value;
        for (;;) {
            const char *comma = strchr(s, ',');
            size_t len = comma ? (size_t)(comma - s) : strlen(s);
            if (add_port(sj, s, len) < 0)
                return q->p[i].value;
            if (!comma)
                break;
            s = comma + 1;
        }
    }
    return NULL;
}

static int parse_cmd(stream_job *sj, const sk_query *q)
{
    sj->cmd = calloc(q->n ? q->n : 1, sizeof(*sj->cmd));
    if (!sj->cmd)
        return -1;
    for (size_t i = 0; i < q->n; i++)
        if (!strcmp(q->p[i].key, "command") && !(sj->cmd[sj->ncmd++] = strdup(q->p[i].value)))
            return -1;
    return 0;
}

/* Fills sj from the query; on a bad request writes msg and returns -1. */
static int parse_stream(stream_job *sj, const sk_query *q, char *msg, size_t len)
{
    static const char *const names[] = {"stdin", "stdout", "stderr", "tty"};
    bool *vals[] = {&sj->in, &sj->out, &sj->err, &sj->tty};
    for (int i = 0; i < 4; i++) {
        if (sk_query_bool(q, names[i], false, vals[i]) < 0) {
            snprintf(msg, len, "invalid value for %s: %s", names[i], sk_query_get(q, names[i]));
            return -1;
        }
    }
    if (!sj->in && !sj->out && !sj->err) {
        snprintf(msg, len, "you must specify at least 1 of stdin, stdout, stderr");
        return -1;
    }
    if (sj->tty)
        sj->err = false; /* the kubelet drops stderr when tty */
    if (sj->kind == SK_EXEC && sj->ncmd == 0) {
        snprintf(msg, len, "you must specify at least one command for the container");
        return -1;
    }
    return 0;
}

static int parse_query(stream_job *sj, const sk_query *q, char *msg, size_t len)
{
    const char *ctr = sk_query_get(q, "container");
    if ((ctr && !(sj->container = strdup(ctr))) || parse_cmd(sj, q) < 0) {
        snprintf(msg, len, "out of memory");
        return -1;
    }
    if (sj->kind == SK_PORTFORWARD) {
        const char *bad = parse_ports(sj, q);
        if (bad) {
            snprintf(msg, len, "invalid port %s: ports must be 1-65535", bad);
            return -1;
        }
        return 0;
    }
    return parse_stream(sj, q, msg, len);
}

void sk_stream_handle(sk_conn *c, sk_stream_kind kind, const char *ns, const char *name,
                      const char *query)
{
    stream_job *sj = calloc(1, sizeof(*sj));
    sk_query q;
    char msg[512];
    if (!sj || sk_query_parse(query, &q) < 0) {
        free(sj);
        sk_respond_status(c, 400, "malformed or too long query string", NULL, NULL);
        return;
    }
    sj->kind = kind;
    sj->job.c = c;
    sj->job.run = stream_run;
    sj->job.done = stream_done;
    sj->job.free = stream_free;
    sj->ns = strdup(ns);
    sj->name = strdup(name);
    int rc = parse_query(sj, &q, msg, sizeof msg);
    sk_query_free(&q);
    if (rc < 0 || !sj->ns || !sj->name) {
        stream_free(&sj->job);
        sk_respond_status(c, 400, rc < 0 ? msg : "out of memory", NULL, NULL);
        return;
    }
    if (sk_job_queue(c->srv, &sj->job) < 0) {
        stream_free(&sj->job);
        sk_respond_status(c, 500, "cannot queue the request", NULL, NULL);
    }
}
