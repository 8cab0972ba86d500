/* pods/log: the CRI log file (protocol notes §11) read the way the kubelet
 * reads it: P records joined to their F record, optional timestamps with
 * nine fraction digits, tailLines, sinceSeconds/sinceTime, limitBytes, and
 * follow until the container is no longer running. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cri_log.h"
#include "grpc/api.pb-c.h"
#include "kube.h"
#include "pods.h"
#include "sluice/error.h"

#define READ_CHUNK 65536u
#define TAIL_BLOCK 65536u

struct sk_logs {
    sk_conn *c;
    uv_timer_t timer;
    int fd;
    bool follow, timestamps, partial, ended, checking, timer_closed, exited;
    int64_t remaining; /* limitBytes left; -1 = no limit */
    int64_t since_ns;  /* records older are skipped; INT64_MIN = none */
    char *ctr_id;
    sl_bufq line;  /* bytes of a record not yet ended by '\n' */
    sl_bufq chunk; /* formatted output of one pump round */
    unsigned polls;
};

static void pump(sk_logs *l);

/* ---- lifetime ---- */

static void maybe_free(sk_logs *l)
{
    if (!l->timer_closed || l->checking)
        return;
    sl_bufq_fini(&l->line);
    sl_bufq_fini(&l->chunk);
    free(l->ctr_id);
    free(l);
}

static void timer_closed_cb(uv_handle_t *h)
{
    sk_logs *l = h->data;
    l->timer_closed = true;
    maybe_free(l);
}

static void logs_release(sk_logs *l)
{
    l->ended = true;
    if (l->fd >= 0)
        close(l->fd);
    l->fd = -1;
    if (l->c)
        l->c->logs = NULL;
    l->c = NULL;
    uv_close((uv_handle_t *)&l->timer, timer_closed_cb);
}

static void logs_end(sk_logs *l)
{
    sk_conn *c = l->c;
    logs_release(l);
    if (c && !sk_conn_gone(c)) {
        sk_conn_send(c, "0\r\n\r\n", 5);
        sk_conn_done(c);
    }
}

void sk_logs_conn_closed(sk_conn *c)
{
    sk_logs *l = c->logs;
    l->c = NULL;
    c->logs = NULL;
    logs_release(l);
}

void sk_logs_drained(sk_conn *c)
{
    if (c->logs)
        pump(c->logs);
}

/* ---- formatting ---- */

static void emit(sk_logs *l, const char *data, size_t len)
{
    if (l->remaining >= 0 && (int64_t)len > l->remaining)
        len = (size_t)l->remaining;
    sl_bufq_append(&l->chunk, data, len);
    if (l->remaining >= 0)
        l->remaining -= (int64_t)len;
}

/* One record without its '\n'. Lines that are not CRI records are
 * skipped, and so are records older than since (the line state moves on
 * all the same), as the kubelet does. */
static void record(sk_logs *l, const char *s, size_t len)
{
    sl_cri_log_rec rec;
    if (sl_cri_log_parse(s, len, &rec) < 0)
        return;
    bool continues = l->partial;
    l->partial = rec.partial;
    if (rec.ts_ns < l->since_ns)
        return;
    if (l->timestamps && !continues) {
        char ts[64];
        sl_cri_time_fixed(rec.ts, rec.ts_len, ts);
        emit(l, ts, strlen(ts));
        emit(l, " ", 1);
    }
    emit(l, rec.content, rec.content_len);
    if (!rec.partial)
        emit(l, "\n", 1);
}

/* Splits buffered bytes into records. */
static void take_lines(sk_logs *l, const char *data, size_t len)
{
    while (len > 0 && l->remaining != 0) {
        const char *nl = memchr(data, '\n', len);
        size_t n = nl ? (size_t)(nl - data) : len;
        if (sl_bufq_len(&l->line) + n <= SK_LOG_MAX_RECORD)
            sl_bufq_append(&l->line, data, n);
        if (!nl)
            return;
        size_t rl = sl_bufq_len(&l->line);
        char *rec = malloc(rl ? rl : 1);
        if (rec) {
            sl_bufq_copyout(&l->line, rec, rl);
            record(l, rec, rl);
            free(rec);
        }
        sl_bufq_consume(&l->line, rl);
        data += n + 1;
        len -= n + 1;
    }
}

static void flush_chunk(sk_logs *l)
{
    struct iovec iov[32];
    size_t total = sl_bufq_len(&l->chunk);
    if (total == 0 || !l->c)
        return;
    char head[24];
    int hn = snprintf(head, sizeof head, "%zx\r\n", total);
    sk_conn_send(l->c, head, (size_t)hn);
    while (l->c && sl_bufq_len(&l->chunk) > 0) {
        int n = sl_bufq_peek(&l->chunk, iov, 32);
        size_t sent = 0;
        for (int i = 0; i < n; i++) {
            sk_conn_send(l->c, iov[i].iov_base, iov[i].iov_len);
            sent += iov[i].iov_len;
        }
        sl_bufq_consume(&l->chunk, sent);
    }
    if (l->c)
        sk_conn_send(l->c, "\r\n", 2);
}

/* ---- follow: the container's state ---- */

typedef struct check_job {
    sk_job job;
    sk_logs *l;
    char *id;
    bool running;
} check_job;

static void check_run(sk_job *j, sl_cri_client *cli)
{
    check_job *cj = (check_job *)j;
    cj->running = true; /* a failing runtime ends nothing by itself */
    if (!cli)
        return;
    Runtime__V1__ContainerStatusRequest req = RUNTIME__V1__CONTAINER_STATUS_REQUEST__INIT;
    req.container_id = cj->id;
    Runtime__V1__ContainerStatusResponse *r = NULL;
    int rc = sl_cri_client_call(cli, "/runtime.v1.RuntimeService/ContainerStatus", &req.base,
                                &runtime__v1__container_status_response__descriptor,
                                (ProtobufCMessage **)&r, SK_CRI_TIMEOUT_MS, &j->err);
    if (rc == SL_CRI_NOT_FOUND)
        cj->running = false;
    if (rc == SL_CRI_OK) {
        cj->running =
            r->status && r->status->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING;
        protobuf_c_message_free_unpacked(&r->base, NULL);
    }
}

static void check_done(sk_job *j)
{
    check_job *cj = (check_job *)j;
    if (!cj->l->ended && !cj->running)
        cj->l->exited = true;
}

static void check_free(sk_job *j)
{
    check_job *cj = (check_job *)j;
    cj->l->checking = false;
    if (cj->l->ended)
        maybe_free(cj->l);
    free(cj->id);
    free(cj);
}

static void start_check(sk_logs *l)
{
    check_job *cj = calloc(1, sizeof(*cj));
    if (!cj || !(cj->id = strdup(l->ctr_id))) {
        free(cj);
        return;
    }
    cj->l = l;
    cj->job.c = l->c;
    cj->job.run = check_run;
    cj->job.done = check_done;
    cj->job.free = check_free;
    l->checking = true;
    if (sk_job_queue(l->c->srv, &cj->job) < 0) {
        l->checking = false;
        free(cj->id);
        free(cj);
    }
}

static void poll_cb(uv_timer_t *t)
{
    pump(t->data);
}

/* At the end of the file: wait (follow) or finish. */
static void at_eof(sk_logs *l)
{
    if (!l->follow || l->exited || l->remaining == 0) {
        logs_end(l);
        return;
    }
    if (++l->polls % (SK_LOG_STATE_CHECK_MS / SK_LOG_POLL_MS) == 0 && !l->checking)
        start_check(l);
    uv_timer_start(&l->timer, poll_cb, SK_LOG_POLL_MS, 0);
}

static void pump(sk_logs *l)
{
    char *buf = malloc(READ_CHUNK);
    if (!buf) {
        logs_end(l);
        return;
    }
    while (l->c && !sk_conn_congested(l->c) && l->remaining != 0) {
        ssize_t n = read(l->fd, buf, READ_CHUNK);
        if (n <= 0) { /* after an exit was seen, this read got the last bytes */
            free(buf);
            at_eof(l);
            return;
        }
        take_lines(l, buf, (size_t)n);
        flush_chunk(l);
    }
    free(buf);
    if (l->c && l->remaining == 0)
        logs_end(l);
}

/* ---- the request ---- */

typedef struct logs_job {
    sk_job job;
    char *ns, *name, *container;
    bool follow, timestamps, previous;
    int64_t tail, limit; /* -1: not given */
    int64_t since_ns;    /* INT64_MIN: not given */
    int code;
    json_t *body;
    int fd;
    char *ctr_id;
    bool running;
} logs_job;

static void logs_fail(logs_job *lj, int code, const char *msg)
{
    lj->code = code;
    lj->body = sk_status_json(code, msg, NULL, NULL);
}

static void open_log(logs_job *lj, const sk_ctr *c)
{
    char msg[1024];
    if (!*c->log_path) {
        snprintf(msg, sizeof msg, "container %s has no log file", c->name);
        logs_fail(lj, 400, msg);
        return;
    }
    lj->fd = open(c->log_path, O_RDONLY | O_CLOEXEC);
    if (lj->fd < 0) {
        snprintf(msg, sizeof msg, "failed to open log file \"%s\": %s", c->log_path,
                 strerror(errno));
        logs_fail(lj, 500, msg);
        return;
    }
    if (lj->tail >= 0)
        lseek(lj->fd, sl_cri_log_tail_offset(lj->fd, lj->tail), SEEK_SET);
    lj->ctr_id = strdup(c->id);
    lj->running = c->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING;
}

static void pick_log(logs_job *lj, const sk_pod *p)
{
    char msg[1024];
    const sk_ctr *c = sk_pod_pick(p, lj->container, msg, sizeof msg);
    if (!c) {
        logs_fail(lj, 400, msg);
        return;
    }
    if (lj->previous && !c->prev) {
        snprintf(msg, sizeof msg, "previous terminated container \"%s\" in pod \"%s\" not found",
                 c->name, p->name);
        logs_fail(lj, 400, msg);
        return;
    }
    if (lj->previous)
        c = c->prev;
    if (c->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_CREATED) {
        snprintf(msg, sizeof msg,
                 "container \"%s\" in pod \"%s\" is waiting to start: ContainerCreating", c->name,
                 p->name);
        logs_fail(lj, 400, msg);
        return;
    }
    open_log(lj, c);
}

static void logs_run(sk_job *j, sl_cri_client *cli)
{
    logs_job *lj = (logs_job *)j;
    sk_pods ps;
    if (!cli || sk_pods_load(cli, lj->ns, lj->name, &ps, &j->err) != SL_CRI_OK) {
        char msg[SL_CRI_MAX_ERR + 64];
        sk_cri_err_text(&j->err, msg, sizeof msg);
        logs_fail(lj, 503, msg);
        return;
    }
    if (ps.n == 0) {
        char msg[512];
        snprintf(msg, sizeof msg, "pods \"%s\" not found", lj->name);
        lj->code = 404;
        lj->body = sk_status_json(404, msg, lj->name, "pods");
    } else {
        pick_log(lj, &ps.items[0]);
    }
    sk_pods_free(&ps);
}

static void logs_done(sk_job *j)
{
    logs_job *lj = (logs_job *)j;
    sk_conn *c = j->c;
    if (lj->code) {
        sk_respond_json(c, lj->code, lj->body, NULL);
        lj->body = NULL;
        return;
    }
    sk_logs *l = calloc(1, sizeof(*l));
    if (!l) {
        sk_respond_status(c, 500, "out of memory", NULL, NULL);
        return;
    }
    l->c = c;
    l->fd = lj->fd;
    lj->fd = -1;
    l->ctr_id = lj->ctr_id;
    lj->ctr_id = NULL;
    l->follow = lj->follow;
    l->exited = !lj->running;
    l->timestamps = lj->timestamps;
    l->remaining = lj->limit;
    l->since_ns = lj->since_ns;
    sl_bufq_init(&l->line);
    sl_bufq_init(&l->chunk);
    uv_timer_init(c->srv->loop, &l->timer);
    l->timer.data = l;
    c->logs = l;
    static const char head[] =
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
        "Transfer-Encoding: chunked\r\nCache-Control: no-cache, private\r\n\r\n";
    if (sk_conn_send(c, head, sizeof head - 1) == 0)
        pump(l);
}

static void logs_job_free(sk_job *j)
{
    logs_job *lj = (logs_job *)j;
    if (lj->fd >= 0)
        close(lj->fd);
    json_decref(lj->body);
    free(lj->ns);
    free(lj->name);
    free(lj->container);
    free(lj->ctr_id);
    free(lj);
}

/* An integer parameter into *v (untouched when absent); -1 when malformed. */
static int int_param(const sk_query *q, const char *key, int64_t *v, bool *given)
{
    const char *s = sk_query_get(q, key);
    *given = s != NULL;
    if (!s)
        return 0;
    char *end;
    errno = 0;
    long long n = strtoll(s, &end, 10);
    if (errno || *end || !*s)
        return -1;
    *v = n;
    return 0;
}

/* sinceTime: RFC 3339, as metav1.Time reads a query parameter. */
static int time_param(const sk_query *q, int64_t *ns, bool *given)
{
    const char *s = sk_query_get(q, "sinceTime");
    *given = s != NULL;
    return s ? sl_cri_time_parse(s, strlen(s), ns) : 0;
}

/* The query's numbers as given, for the apiserver's validation. */
typedef struct log_params {
    bool has_tail, has_limit, since_s, since_t;
    int64_t tail, limit, secs;
} log_params;

/* Appends one field error to errs ("a, b"), as field.ErrorList joins them. */
static void field_err(char *errs, size_t len, int *n, const char *err)
{
    size_t used = strlen(errs);
    snprintf(errs + used, len - used, "%s%s", (*n)++ ? ", " : "", err);
}

/* The apiserver's ValidatePodLogOptions; 0, or -1 with its message. */
static int validate(const char *pod, const log_params *p, char *msg, size_t len)
{
    char errs[512] = "", e[160];
    int n = 0;
    if (p->has_tail && p->tail < 0) {
        snprintf(e, sizeof e, "tailLines: Invalid value: %lld: must be greater than or equal to 0",
                 (long long)p->tail);
        field_err(errs, sizeof errs, &n, e);
    }
    if (p->has_limit && p->limit < 1) {
        snprintf(e, sizeof e, "limitBytes: Invalid value: %lld: must be greater than 0",
                 (long long)p->limit);
        field_err(errs, sizeof errs, &n, e);
    }
    if (p->since_s && p->since_t) {
        field_err(errs, sizeof errs, &n,
                  "Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified");
    } else if (p->since_s && p->secs < 1) {
        snprintf(e, sizeof e, "sinceSeconds: Invalid value: %lld: must be greater than 0",
                 (long long)p->secs);
        field_err(errs, sizeof errs, &n, e);
    }
    if (!n)
        return 0;
    snprintf(msg, len, "PodLogOptions \"%s\" is invalid: %s%s%s", pod, n > 1 ? "[" : "", errs,
             n > 1 ? "]" : "");
    return -1;
}

/* Returns 0, 400 (a value that does not parse) or 422 (the apiserver's
 * validation) with msg. */
static int parse_logs(logs_job *lj, const sk_query *q, char *msg, size_t len)
{
    static const char *const names[] = {"follow", "timestamps", "previous"};
    bool *vals[] = {&lj->follow, &lj->timestamps, &lj->previous};
    for (int i = 0; i < 3; i++) {
        if (sk_query_bool(q, names[i], false, vals[i]) < 0) {
            snprintf(msg, len, "invalid value for %s: %s", names[i], sk_query_get(q, names[i]));
            return 400;
        }
    }
    log_params p = {0};
    if (int_param(q, "tailLines", &p.tail, &p.has_tail) < 0 ||
        int_param(q, "limitBytes", &p.limit, &p.has_limit) < 0 ||
        int_param(q, "sinceSeconds", &p.secs, &p.since_s) < 0 ||
        time_param(q, &lj->since_ns, &p.since_t) < 0) {
        snprintf(msg, len,
                 "tailLines, limitBytes and sinceSeconds must be integers, sinceTime an RFC "
                 "3339 time");
        return 400;
    }
    if (validate(lj->name, &p, msg, len) < 0)
        return 422;
    lj->tail = p.has_tail ? p.tail : -1;
    lj->limit = p.has_limit ? p.limit : -1;
    if (p.since_s) /* the kubelet: now - sinceSeconds */
        lj->since_ns = sk_now_ns() - p.secs * 1000000000LL;
    const char *ctr = sk_query_get(q, "container");
    if (ctr && !(lj->container = strdup(ctr))) {
        snprintf(msg, len, "out of memory");
        return 500;
    }
    return 0;
}

void sk_logs_handle(sk_conn *c, const char *ns, const char *name, const char *query)
{
    logs_job *lj = calloc(1, sizeof(*lj));
    sk_query q;
    char msg[768];
    if (!lj || sk_query_parse(query, &q) < 0) {
        free(lj);
        sk_respond_status(c, 400, "malformed or too long query string", NULL, NULL);
        return;
    }
    lj->fd = -1;
    lj->job.c = c;
    lj->job.run = logs_run;
    lj->job.done = logs_done;
    lj->job.free = logs_job_free;
    lj->ns = strdup(ns);
    lj->name = strdup(name);
    lj->since_ns = INT64_MIN;
    int rc = lj->ns && lj->name ? parse_logs(lj, &q, msg, sizeof msg) : 500;
    sk_query_free(&q);
    if (rc) {
        logs_job_free(&lj->job);
        if (rc == 422)
            sk_respond_json(c, 422, sk_status_json(422, msg, name, "PodLogOptions"), NULL);
        else
            sk_respond_status(c, rc, rc == 400 ? msg : "out of memory", NULL, NULL);
        return;
    }
    if (sk_job_queue(c->srv, &lj->job) < 0) {
        logs_job_free(&lj->job);
        sk_respond_status(c, 500, "cannot queue the request", NULL, NULL);
    }
}
