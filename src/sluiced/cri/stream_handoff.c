#include "cri/stream_handoff.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cri/mon_client.h"
#include "mon_session.h"
#include "sl_log.h"

struct sl_stream_handoff {
    sl_rt *rt;
    sl_mon_session_limits lim;
};

/* One hand-off waiting for the monitor's answer. */
typedef struct pending {
    sl_handoff *h;
    sl_monc *mon;
    sl_stream_handoff *ho;
} pending;

/* The bytes travel in a memfd: they may not fit a control message. */
static int bytes_fd(const uint8_t *buf, size_t len)
{
    int fd = memfd_create("sluice-handoff", MFD_CLOEXEC);
    size_t done = 0;
    while (fd >= 0 && done < len) {
        ssize_t n = write(fd, buf + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    return fd;
}

static void reply_cb(void *arg, const json_t *reply, int *fds, size_t nfds)
{
    pending *p = arg;
    for (size_t i = 0; i < nfds; i++)
        close(fds[i]);
    if (!reply)
        p->ho->rt->sess_stats.refused_gone++;
    else if (!json_is_true(json_object_get(reply, "ok")) && sl_monc_serves_sessions(p->mon))
        p->ho->rt->sess_stats.refused_monitor++;
    if (!reply)
        sl_handoff_done(p->h, 502, "the pod monitor went away");
    else if (json_is_true(json_object_get(reply, "ok")))
        sl_handoff_done(p->h, SL_HANDOFF_TAKEN, NULL);
    else if (!sl_monc_serves_sessions(p->mon)) /* its hello said so, before this reply */
        sl_handoff_done(p->h, SL_HANDOFF_LOCAL, NULL);
    else
        sl_handoff_done(p->h, 503, json_string_value(json_object_get(reply, "error")));
    free(p);
}

/* The pod whose monitor serves req, or NULL. */
static sl_pod *pod_of(sl_rt *rt, const sl_stream_request *req)
{
    if (req->kind == SL_STREAM_PORTFORWARD)
        return sl_model_pod(&rt->model, req->u.pf.pod_sandbox_id);
    const char *id =
        req->kind == SL_STREAM_EXEC ? req->u.exec.container_id : req->u.attach.container_id;
    sl_ctr *c = sl_model_ctr(&rt->model, id);
    return c ? sl_model_pod(&rt->model, c->pod_id) : NULL;
}

static json_t *message(const sl_stream_handoff *ho, const sl_stream_request *req, size_t len)
{
    sl_mon_session_limits lim = ho->lim;
    lim.attach_backlog = ho->rt->cfg->attach_backlog; /* read at each use (SIGHUP) */
    lim.exec_max_concurrent = ho->rt->cfg->exec_max_concurrent;
    lim.exec_queue_max = ho->rt->cfg->exec_queue_max;
    lim.exec_stdin_pipe_size = ho->rt->cfg->exec_stdin_pipe_size;
    lim.exec_native = !strcmp(ho->rt->cfg->exec_mode, "native");
    return json_pack("{s:s, s:o, s:o, s:I, s:[ss]}", "type", "session", "request",
                     sl_mon_session_request_json(req), "limits", sl_mon_session_limits_json(&lim),
                     "bytes", (json_int_t)len, "fds", "conn", "bytes");
}

static void handoff_cb(void *arg, sl_handoff *h, int fd, const uint8_t *head, size_t len,
                       const sl_stream_request *req)
{
    sl_stream_handoff *ho = arg;
    sl_pod *pod = pod_of(ho->rt, req);
    sl_error e;
    sl_monc *mon = pod ? sl_rt_pod_mon(ho->rt, pod, &e) : NULL;
    int fds[2] = {fd, mon ? bytes_fd(head, len) : -1};
    json_t *msg = fds[1] >= 0 ? message(ho, req, len) : NULL;
    pending *p = msg ? calloc(1, sizeof(*p)) : NULL;
    if (!p) {
        /* No monitor to serve it: here, where the session reports why. */
        json_decref(msg);
        for (int i = 0; i < 2; i++)
            if (fds[i] >= 0)
                close(fds[i]);
        sl_handoff_done(h, SL_HANDOFF_LOCAL, NULL);
        return;
    }
    *p = (pending){h, mon, ho};
    if (sl_monc_request(mon, msg, fds, 2, reply_cb, p, &e) < 0) {
        sl_log(SL_LOG_WARN, "streaming session served by sluiced, not by the pod monitor", "error",
               e.msg, NULL);
        free(p);
        sl_handoff_done(h, SL_HANDOFF_LOCAL, NULL); /* e.g. too large for one message */
    }
}

sl_stream_handoff *sl_stream_handoff_enable(sl_server *srv, sl_rt *rt, const sl_server_config *cfg,
                                            uint32_t pf_connect_timeout_ms)
{
    sl_stream_handoff *ho = calloc(1, sizeof(*ho));
    if (!ho)
        return NULL;
    ho->rt = rt;
    ho->lim.stream = *cfg;
    ho->lim.stream.address = ho->lim.stream.base_path = ho->lim.stream.advertise_host = NULL;
    ho->lim.pf_connect_timeout_ms = pf_connect_timeout_ms;
    sl_server_set_handoff(srv, handoff_cb, ho);
    /* Sessions no monitor takes are served here: counted the same way. */
    sl_server_set_session_observer(srv, sl_sess_stats_observe, &rt->sess_stats);
    return ho;
}

void sl_stream_handoff_free(sl_stream_handoff *h)
{
    free(h);
}
