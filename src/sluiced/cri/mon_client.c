#include "cri/mon_client.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fsutil.h"
#include "sluice/error.h"

typedef struct pending {
    struct pending *next;
    int64_t id;
    sl_monc_reply_fn fn;
    void *arg;
} pending;

struct sl_monc {
    uv_loop_t *loop;
    int fd;
    uv_poll_t poll;
    sl_mon_conn conn;
    sl_monc_event_fn on_event;
    void *event_arg;
    pending *pend;
    int64_t next_id;
    bool dead, closing;
    bool sessions;     /* the hello reply said "sessions": true */
    sl_sess_live live; /* sessions the monitor serves (hello, then events) */
};

/* ---- connection ---- */

static void fail_all(sl_monc *m)
{
    while (m->pend) {
        pending *p = m->pend;
        m->pend = p->next;
        if (p->fn)
            p->fn(p->arg, NULL, NULL, 0);
        free(p);
    }
}

static void lost(sl_monc *m)
{
    if (m->dead)
        return;
    m->dead = true;
    uv_poll_stop(&m->poll);
    fail_all(m);
    if (m->on_event)
        m->on_event(m->event_arg, NULL);
}

static void dispatch(sl_monc *m, json_t *msg, int *fds, size_t nfds)
{
    const char *type = sl_mon_str(msg, "type");
    if (type && !strcmp(type, "reply")) {
        int64_t id = json_integer_value(json_object_get(msg, "id"));
        for (pending **pp = &m->pend; *pp; pp = &(*pp)->next) {
            if ((*pp)->id != id)
                continue;
            pending *p = *pp;
            *pp = p->next;
            if (p->fn) {
                p->fn(p->arg, msg, fds, nfds);
                free(p);
                return;
            }
            free(p);
            break;
        }
    } else if (m->on_event) {
        sl_sess_live_event(&m->live, msg);
        m->on_event(m->event_arg, msg);
    }
    for (size_t i = 0; i < nfds; i++) /* nobody took them */
        close(fds[i]);
}

static void update_poll(sl_monc *m);

static void poll_cb(uv_poll_t *h, int status, int events)
{
    sl_monc *m = h->data;
    if (status < 0) {
        lost(m);
        return;
    }
    if (events & UV_WRITABLE) {
        int rc = sl_mon_conn_flush(&m->conn);
        if (rc < 0 && rc != SL_ERR_WOULDBLOCK) {
            lost(m);
            return;
        }
    }
    while (!m->dead && (events & UV_READABLE)) {
        json_t *msg = NULL;
        int fds[SL_MON_MAX_FDS];
        size_t nfds = 0;
        int rc = sl_mon_conn_recv(&m->conn, &msg, fds, &nfds);
        if (rc == SL_ERR_WOULDBLOCK)
            break;
        if (rc == SL_ERR_PROTO || rc == SL_ERR_TOO_LARGE)
            continue; /* that packet is dropped; the connection goes on */
        if (rc < 0) {
            lost(m);
            return;
        }
        dispatch(m, msg, fds, nfds);
        json_decref(msg);
    }
    update_poll(m);
}

static void update_poll(sl_monc *m)
{
    if (m->dead || m->closing)
        return;
    int ev = UV_READABLE | (sl_mon_conn_want_write(&m->conn) ? UV_WRITABLE : 0);
    uv_poll_start(&m->poll, ev, poll_cb);
}

static void hello_cb(void *arg, const json_t *reply, int *fds, size_t nfds)
{
    sl_monc *m = arg;
    for (size_t i = 0; i < nfds; i++)
        close(fds[i]);
    if (reply) {
        m->sessions = json_is_true(json_object_get(reply, "sessions"));
        sl_sess_live_hello(&m->live, reply);
    }
}

sl_monc *sl_monc_connect(uv_loop_t *loop, const char *run_dir, sl_monc_event_fn on_event,
                         void *event_arg, sl_error *e)
{
    SL_AUTOFREE char *path = sl_path_join(run_dir, "mon.sock");
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (!path || strlen(path) >= sizeof(sa.sun_path)) {
        sl_error_set(e, ENAMETOOLONG, "monitor socket %s", path ? path : run_dir);
        return NULL;
    }
    strcpy(sa.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        sl_error_set(e, errno, "connect to the pod monitor at %s", path);
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    sl_monc *m = calloc(1, sizeof(*m));
    if (!m || uv_poll_init(loop, &m->poll, fd) < 0) {
        free(m);
        close(fd);
        sl_error_set(e, ENOMEM, "monitor connection");
        return NULL;
    }
    m->loop = loop;
    m->fd = fd;
    m->poll.data = m;
    m->on_event = on_event;
    m->event_arg = event_arg;
    m->next_id = 1;
    sl_mon_conn_init(&m->conn, fd);
    update_poll(m);
    /* Every connection starts with hello (the protocol's version check);
     * requests after it are ordered behind it, and so are their replies. */
    if (sl_monc_request(m,
                        json_pack("{s:s, s:i}", "type", "hello", "version", SL_MON_PROTO_VERSION),
                        NULL, 0, hello_cb, m, e) < 0) {
        sl_monc_close(m);
        return NULL;
    }
    return m;
}

int sl_monc_request(sl_monc *m, json_t *req, const int *fds, size_t nfds, sl_monc_reply_fn fn,
                    void *arg, sl_error *e)
{
    pending *p = m->dead ? NULL : calloc(1, sizeof(*p));
    if (!p) {
        json_decref(req);
        for (size_t i = 0; i < nfds; i++)
            close(fds[i]);
        return sl_error_set(e, m->dead ? EPIPE : ENOMEM, "pod monitor");
    }
    p->id = m->next_id++;
    p->fn = fn;
    p->arg = arg;
    json_object_set_new(req, "id", json_integer(p->id));
    int rc = sl_mon_conn_send(&m->conn, req, fds, nfds);
    json_decref(req);
    if (rc < 0 && rc != SL_ERR_WOULDBLOCK) {
        free(p);
        return sl_error_set(e, rc == SL_ERR_SYS ? errno : EPIPE, "send to the pod monitor: %s",
                            sl_strerror(rc));
    }
    p->next = m->pend;
    m->pend = p;
    update_poll(m);
    return 0;
}

bool sl_monc_alive(const sl_monc *m)
{
    return m && !m->dead;
}

bool sl_monc_serves_sessions(const sl_monc *m)
{
    return m && m->sessions;
}

const sl_sess_live *sl_monc_live_sessions(const sl_monc *m)
{
    return m && !m->dead ? &m->live : NULL;
}

static void closed_cb(uv_handle_t *h)
{
    sl_monc *m = h->data;
    sl_mon_conn_fini(&m->conn);
    close(m->fd);
    free(m);
}

void sl_monc_close(sl_monc *m)
{
    if (!m || m->closing)
        return;
    m->on_event = NULL;
    lost(m);
    m->closing = true;
    uv_close((uv_handle_t *)&m->poll, closed_cb);
}
