/* pods/log: the CRI log file (protocol notes §11) read the way the kubelet
 * reads it: P records joined to their F record, optional timestamps with
 * nine fraction digits, tailLines, limitBytes, and follow until the
 * container is no longer running. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* "2016-10-06T00:17:09.669794202Z" from any fraction length. */
static void fixed_ts(const char *ts, size_t len, char *out, size_t outlen)
{
    size_t i = 0;
    while (i < len && ts[i] != '.' && ts[i] != 'Z' && ts[i] != '+' && (i < 10 || ts[i] != '-'))
        i++;
    size_t base = i, frac = 0;
    char digits[10] = "000000000";
    if (i < len && ts[i] == '.') {
        i++;
        while (i < len && ts[i] >= '0' && ts[i] <= '9') {
            if (frac < 9)
                digits[frac] = ts[i];
            frac++;
            i++;
        }
    }
    snprintf(out, outlen, "%.*s.%s%.*s", (int)base, ts, digits, (int)(len - i), ts + i);
}

static void emit(sk_logs *l, const char *data, size_t len)
{
    if (l->remaining >= 0 && (int64_t)len > l->remaining)
        len = (size_t)l->remaining;
    sl_bufq_append(&l->chunk, data, len);
    if (l->remaining >= 0)
        l->remaining -= (int64_t)len;
}

/* One record without its '\n': "<ts> <stream> <tags> <content>". Lines
 * that are not in the format are skipped, as the kubelet does. */
static void record(sk_logs *l, const char *s, size_t len)
{
    const char *sp1 = memchr(s, ' ', len);
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', len - (size_t)(sp1 + 1 - s)) : NULL;
    if (!sp2)
        return;
    const char *tag = sp2 + 1, *end = s + len;
    const char *sp3 = memchr(tag, ' ', (size_t)(end - tag));
    const char *content = sp3 ? sp3 + 1 : end;
    size_t stream_len = (size_t)(sp2 - sp1 - 1);
    if (!((stream_len == 6 && !memcmp(sp1 + 1, "stdout", 6)) ||
          (stream_len == 6 && !memcmp(sp1 + 1, "stderr", 6))) ||
        tag >= end || (*tag != 'P' && *tag != 'F'))
        return;
    bool partial = *tag == 'P';
    if (l->timestamps && !l->partial) {
        char ts[80];
        fixed_ts(s, (size_t)(sp1 - s), ts, sizeof ts);
        emit(l, ts, strlen(ts));
        emit(l, " ", 1);
    }
    emit(l, content, (size_t)(end - content));
    if (!partial)
        emit(l, "\n", 1);
    l->partial = partial;
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
    int code;
    json_t *body;
    int fd;
    char *ctr_id;
    bool running;
} logs_job;

/* True when the record starting at off has the F tag (ends a line). */
static bool record_full(int fd, off_t off)
{
    char b[128];
    ssize_t n = pread(fd, b, sizeof b, off);
    int spaces = 0;
    for (ssize_t i = 0; i < n; i++)
        if (b[i] == ' ' && ++spaces == 2)
            return i + 1 < n && b[i + 1] == 'F';
    return false;
}

/* Offset of the start of the last n lines of fd, a line being P records
 * and their F record (the kubelet counts records; users count lines). */
static off_t tail_offset(int fd, int64_t n)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return 0;
    off_t pos = st.st_size, next_nl = -1; /* the newline ending the record being looked at */
    if (n == 0)
        return pos;
    char *buf = malloc(TAIL_BLOCK);
    int64_t full = 0;
    while (buf && pos > 0) {
        size_t want = pos > (off_t)TAIL_BLOCK ? TAIL_BLOCK : (size_t)pos;
        pos -= (off_t)want;
        if (pread(fd, buf, want, pos) != (ssize_t)want)
            break;
        for (size_t i = want; i-- > 0;) {
            if (buf[i] != '\n')
                continue;
            off_t nl = pos + (off_t)i;
            if (next_nl >= 0 && record_full(fd, nl + 1) && ++full == n + 1) {
                free(buf);
                return next_nl + 1;
            }
            next_nl = nl;
        }
    }
    free(buf);
    if (next_nl >= 0 && record_full(fd, 0) && ++full == n + 1)
        return next_nl + 1;
    return 0;
}

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
        lseek(lj->fd, tail_offset(lj->fd, lj->tail), SEEK_SET);
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

/* A non-negative integer parameter; -1 when absent; -2 when malformed. */
static int64_t int_param(const sk_query *q, const char *key)
{
    const char *v = sk_query_get(q, key);
    if (!v)
        return -1;
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    return errno || *end || !*v || n < 0 ? -2 : (int64_t)n;
}

static int parse_logs(logs_job *lj, const sk_query *q, char *msg, size_t len)
{
    static const char *const names[] = {"follow", "timestamps", "previous"};
    bool *vals[] = {&lj->follow, &lj->timestamps, &lj->previous};
    for (int i = 0; i < 3; i++) {
        if (sk_query_bool(q, names[i], false, vals[i]) < 0) {
            snprintf(msg, len, "invalid value for %s: %s", names[i], sk_query_get(q, names[i]));
            return -1;
        }
    }
    lj->tail = int_param(q, "tailLines");
    lj->limit = int_param(q, "limitBytes");
    if (lj->tail == -2 || lj->limit == -2 || lj->limit == 0) {
        snprintf(msg, len, "tailLines and limitBytes must be positive integers");
        return -1;
    }
    const char *ctr = sk_query_get(q, "container");
    if (ctr && !(lj->container = strdup(ctr))) {
        snprintf(msg, len, "out of memory");
        return -1;
    }
    return 0;
}

void sk_logs_handle(sk_conn *c, const char *ns, const char *name, const char *query)
{
    logs_job *lj = calloc(1, sizeof(*lj));
    sk_query q;
    char msg[256];
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
    int rc = parse_logs(lj, &q, msg, sizeof msg);
    sk_query_free(&q);
    if (rc < 0 || !lj->ns || !lj->name) {
        logs_job_free(&lj->job);
        sk_respond_status(c, 400, rc < 0 ? msg : "out of memory", NULL, NULL);
        return;
    }
    if (sk_job_queue(c->srv, &lj->job) < 0) {
        logs_job_free(&lj->job);
        sk_respond_status(c, 500, "cannot queue the request", NULL, NULL);
    }
}
