/* The control socket: accepts sluiced's connections, decodes requests,
 * dispatches them, sends replies (possibly later) and broadcasts events. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "mon.h"
#include "sluice/error.h"

#define RECV_PER_WAKE 16 /* requests of one connection per turn */

typedef void (*handler_fn)(mon *m, mon_req *r, const json_t *msg);

static void hello(mon *m, mon_req *r, const json_t *msg);
static void shutdown_req(mon *m, mon_req *r, const json_t *msg);

static const struct {
    const char *type;
    handler_fn fn;
} handlers[] = {
    {"hello", hello},           {"create", mon_ctr_create},
    {"start", mon_ctr_start},   {"stop", mon_ctr_stop},
    {"remove", mon_ctr_remove}, {"reopen_log", mon_ctr_reopen_log},
    {"attach", mon_attach},     {"exec", mon_exec_start},
    {"resize", mon_resize},     {"kill_exec", mon_exec_kill},
    {"shutdown", shutdown_req}, {"update", mon_ctr_update},
    {"stdio", mon_ctr_stdio},
};

static bool takes_fds(const char *type)
{
    return strcmp(type, "session") == 0 || strcmp(type, "adopt") == 0;
}

mon_req *mon_req_new(uint64_t conn, const json_t *msg)
{
    mon_req *r = calloc(1, sizeof(*r));
    if (!r)
        return NULL;
    r->conn = conn;
    json_t *id = json_object_get(msg, "id");
    r->id = id ? json_incref(id) : json_null();
    return r;
}

void mon_req_free(mon_req *r)
{
    if (!r)
        return;
    json_decref(r->id);
    free(r);
}

static mon_conn *find_conn(mon *m, uint64_t id)
{
    for (mon_conn *c = m->conns; c; c = c->next)
        if (c->id == id && c->w)
            return c;
    return NULL;
}

static void conn_free(mon *m, mon_conn *c)
{
    for (mon_conn **pp = &m->conns; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    }
    sl_mwatch_free(c->w);
    sl_mon_conn_fini(&c->c);
    close(c->fd);
    m->nconns--;
    free(c);
}

static void reap_conns_cb(void *data)
{
    mon *m = data;
    m->conn_reap_timer = NULL;
    mon_conn *c = m->conns;
    while (c) {
        mon_conn *next = c->next;
        if (!c->w)
            conn_free(m, c);
        c = next;
    }
}

/* Closing waits for a zero-delay timer: the connection may be on the stack. */
static void conn_close_later(mon *m, mon_conn *c)
{
    if (!c->w)
        return;
    mon_log(MON_DEBUG, "connection %llu closed", (unsigned long long)c->id);
    sl_mwatch_free(c->w);
    c->w = NULL;
    mon_exec_conn_gone(m, c->id);
    if (!m->conn_reap_timer)
        m->conn_reap_timer = sl_mloop_timer(m->loop, 0, reap_conns_cb, m);
}

static void conn_sent(mon *m, mon_conn *c, int rc)
{
    if (rc != SL_OK && rc != SL_ERR_WOULDBLOCK) {
        mon_log(MON_WARN, "connection %llu: send: %s", (unsigned long long)c->id, sl_strerror(rc));
        conn_close_later(m, c);
        return;
    }
    sl_mwatch_set(c->w, EPOLLIN | (sl_mon_conn_want_write(&c->c) ? EPOLLOUT : 0));
}

static void send_to(mon *m, mon_conn *c, json_t *msg, const int *fds, size_t nfds)
{
    conn_sent(m, c, sl_mon_conn_send(&c->c, msg, fds, nfds));
}

/* A request the monitor made itself: the reply goes to its callback. */
static void reply_local(mon *m, mon_req *r, json_t *fields, const int *fds,
                        const char *const *names, size_t nfds)
{
    int own[SL_MON_MAX_FDS];
    for (size_t i = 0; i < nfds && i < SL_MON_MAX_FDS; i++)
        own[i] = fds[i];
    r->local(m, r->local_arg, true, fields, own, names, nfds, NULL);
    json_decref(fields);
    mon_req_free(r);
}

void mon_reply(mon *m, mon_req *r, json_t *fields, const int *fds, const char *const *names,
               size_t nfds)
{
    if (r->local) {
        reply_local(m, r, fields, fds, names, nfds);
        return;
    }
    mon_conn *c = find_conn(m, r->conn);
    json_t *reply = json_pack("{s:s, s:O, s:b}", "type", "reply", "id", r->id, "ok", 1);
    if (reply && fields)
        json_object_update(reply, fields);
    if (reply && nfds) {
        json_t *a = json_array();
        for (size_t i = 0; i < nfds; i++)
            json_array_append_new(a, json_string(names[i]));
        json_object_set_new(reply, "fds", a);
    }
    if (c && reply) {
        send_to(m, c, reply, fds, nfds);
    } else {
        for (size_t i = 0; i < nfds; i++)
            close(fds[i]);
    }
    json_decref(reply);
    json_decref(fields);
    mon_req_free(r);
}

__attribute__((format(printf, 4, 0))) static void reply_err(mon *m, mon_req *r, const char *code,
                                                            const char *fmt, va_list ap)
{
    char text[SL_MON_ERR_TEXT + 256];
    vsnprintf(text, sizeof(text), fmt, ap);
    mon_log(MON_ERR, "request failed: %s", text);
    if (r->local) {
        r->local(m, r->local_arg, false, NULL, NULL, NULL, 0, text);
        mon_req_free(r);
        return;
    }
    mon_conn *c = find_conn(m, r->conn);
    json_t *reply = json_pack("{s:s, s:O, s:b, s:s?, s:s*}", "type", "reply", "id", r->id, "ok", 0,
                              "error", text, "code", code);
    if (!reply) /* text was not UTF-8 */
        reply = json_pack("{s:s, s:O, s:b, s:s}", "type", "reply", "id", r->id, "ok", 0, "error",
                          "request failed");
    if (c && reply)
        send_to(m, c, reply, NULL, 0);
    json_decref(reply);
    mon_req_free(r);
}

void mon_reply_err(mon *m, mon_req *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    reply_err(m, r, NULL, fmt, ap);
    va_end(ap);
}

void mon_reply_err_code(mon *m, mon_req *r, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    reply_err(m, r, code, fmt, ap);
    va_end(ap);
}

void mon_reply_all(mon *m, mon_req **list, const json_t *fields)
{
    while (*list) {
        mon_req *r = *list;
        *list = r->next;
        mon_reply(m, r, fields ? json_deep_copy(fields) : NULL, NULL, NULL, 0);
    }
}

void mon_event(mon *m, json_t *ev)
{
    /* The sessions served here first: their clients wait for the status,
     * and waking sluiced before it was written would delay it. */
    if (ev)
        mon_sess_event(m, ev);
    for (mon_conn *c = m->conns; c; c = c->next)
        if (c->w && c->hello)
            send_to(m, c, ev, NULL, 0);
    json_decref(ev);
}

static void hello(mon *m, mon_req *r, const json_t *msg)
{
    int64_t version;
    if (sl_mon_int(msg, "version", 0, INT32_MAX, 0, &version) != SL_OK ||
        version != SL_MON_PROTO_VERSION) {
        mon_reply_err(m, r, "unsupported protocol version (this monitor speaks %d)",
                      SL_MON_PROTO_VERSION);
        return;
    }
    mon_conn *c = find_conn(m, r->conn);
    if (c)
        c->hello = true;
    json_t *list = json_array();
    for (mon_ctr *ctr = m->ctrs; ctr; ctr = ctr->next)
        if (ctr->state != CTR_CREATING)
            json_array_append_new(list, mon_ctr_json(ctr));
    /* sessions: this monitor serves streaming connections (`session`). */
    mon_reply(m, r,
              json_pack("{s:s, s:i, s:o, s:b, s:o}", "pod_id", m->pod_id, "pid", (int)getpid(),
                        "containers", list, "sessions", 1, "live_sessions",
                        mon_sess_live_sessions(m)),
              NULL, NULL, 0);
}

static void shutdown_req(mon *m, mon_req *r, const json_t *msg)
{
    (void)msg;
    mon_shutdown(m, r);
}

static handler_fn find_handler(const char *type)
{
    for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++)
        if (strcmp(handlers[i].type, type) == 0)
            return handlers[i].fn;
    return NULL;
}

static void close_fds(int *fds, size_t nfds)
{
    for (size_t k = 0; k < nfds; k++)
        close(fds[k]);
}

/* fds are taken. */
static void dispatch(mon *m, mon_conn *c, const json_t *msg, int *fds, size_t nfds)
{
    const char *type = sl_mon_str(msg, "type");
    mon_req *r = mon_req_new(c->id, msg);
    const char *why = !r                                        ? "out of memory"
                      : !json_is_integer(r->id)                 ? "request without a numeric id"
                      : !c->hello && strcmp(type, "hello") != 0 ? "the first request must be hello"
                      : m->shutting_down && strcmp(type, "hello") != 0
                          ? "the monitor is shutting down"
                          : NULL;
    if (why || !takes_fds(type))
        close_fds(fds, nfds); /* only a session and adopt carry fds */
    if (!r)
        return;
    if (why) {
        mon_reply_err(m, r, "%s", why);
        return;
    }
    mon_log(MON_DEBUG, "request %s", type);
    if (takes_fds(type)) {
        if (strcmp(type, "adopt") == 0)
            mon_ctr_adopt(m, r, msg, fds, nfds);
        else
            mon_sess_request(m, r, msg, fds, nfds);
        return;
    }
    handler_fn fn = find_handler(type);
    if (fn)
        fn(m, r, msg);
    else
        mon_reply_err(m, r, "unknown request type '%.64s'", type);
}

void mon_local_request(mon *m, const json_t *msg, mon_local_fn fn, void *arg)
{
    mon_req *r = mon_req_new(0, msg);
    if (!r) {
        fn(m, arg, false, NULL, NULL, NULL, 0, "out of memory");
        return;
    }
    r->local = fn;
    r->local_arg = arg;
    handler_fn h = find_handler(sl_mon_str(msg, "type"));
    if (m->shutting_down)
        mon_reply_err(m, r, "the monitor is shutting down");
    else if (!h)
        mon_reply_err(m, r, "unknown request type");
    else
        h(m, r, msg);
}

static void conn_read(mon *m, mon_conn *c)
{
    for (int i = 0; i < RECV_PER_WAKE && c->w; i++) {
        json_t *msg;
        int fds[SL_MON_MAX_FDS];
        size_t nfds;
        int rc = sl_mon_conn_recv(&c->c, &msg, fds, &nfds);
        if (rc == SL_ERR_WOULDBLOCK)
            return;
        if (rc == SL_ERR_PROTO || rc == SL_ERR_TOO_LARGE) {
            /* Without a readable id there is nothing to answer: say why, then end. */
            json_t *e = json_pack("{s:s, s:n, s:b, s:s}", "type", "reply", "id", "ok", 0, "error",
                                  sl_strerror(rc));
            if (e)
                sl_mon_conn_send(&c->c, e, NULL, 0);
            json_decref(e);
            conn_close_later(m, c);
            return;
        }
        if (rc != SL_OK) {
            conn_close_later(m, c);
            return;
        }
        dispatch(m, c, msg, fds, nfds);
        json_decref(msg);
    }
}

static void conn_cb(sl_mwatch *w, uint32_t events, void *data)
{
    (void)w;
    mon_conn *c = data;
    mon *m = c->m;
    if (events & EPOLLOUT) {
        conn_sent(m, c, sl_mon_conn_flush(&c->c));
        if (!c->w)
            return;
    }
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
        conn_read(m, c);
}

static void accept_cb(sl_mwatch *w, uint32_t events, void *data)
{
    (void)w;
    (void)events;
    mon *m = data;
    for (;;) {
        int fd = accept4(m->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                mon_log(MON_WARN, "accept: %s", strerror(errno));
            return;
        }
        mon_conn *c = m->nconns < SL_MON_MAX_CONNS ? calloc(1, sizeof(*c)) : NULL;
        if (!c) {
            mon_log(MON_WARN, "refusing a control connection (limit %d)", SL_MON_MAX_CONNS);
            close(fd);
            continue;
        }
        c->m = m;
        c->id = ++m->next_conn;
        c->fd = fd;
        sl_mon_conn_init(&c->c, fd);
        if (!(c->w = sl_mloop_watch(m->loop, fd, EPOLLIN, conn_cb, c))) {
            close(fd);
            free(c);
            continue;
        }
        c->next = m->conns;
        m->conns = c;
        m->nconns++;
        mon_log(MON_DEBUG, "connection %llu accepted", (unsigned long long)c->id);
    }
}

int mon_server_start(mon *m, sl_error *e)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(m->sock_path) >= sizeof(sa.sun_path))
        return sl_error_set(e, ENAMETOOLONG, "socket path %s", m->sock_path);
    memcpy(sa.sun_path, m->sock_path, strlen(m->sock_path) + 1);
    m->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (m->listen_fd < 0)
        return sl_error_set(e, errno, "socket");
    unlink(m->sock_path);
    mode_t old = umask(0177);
    int rc = bind(m->listen_fd, (struct sockaddr *)&sa, sizeof(sa));
    umask(old);
    if (rc < 0 || chmod(m->sock_path, 0600) < 0 || listen(m->listen_fd, SL_MON_MAX_CONNS) < 0)
        return sl_error_set(e, errno, "listen on %s", m->sock_path);
    m->listen_w = sl_mloop_watch(m->loop, m->listen_fd, EPOLLIN, accept_cb, m);
    if (!m->listen_w)
        return sl_error_set(e, errno, "watch %s", m->sock_path);
    return 0;
}

void mon_server_stop(mon *m)
{
    while (m->conns) {
        mon_conn *c = m->conns;
        sl_mon_conn_flush(&c->c); /* last replies, best effort */
        conn_free(m, c);
    }
    sl_mtimer_cancel(m->conn_reap_timer);
    m->conn_reap_timer = NULL;
    if (m->listen_w) {
        sl_mwatch_close(m->listen_w);
        m->listen_w = NULL;
        m->listen_fd = -1;
        unlink(m->sock_path);
    }
}
