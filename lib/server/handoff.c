/* Hand-off of a connection whose token was consumed here to another
 * server (another process): a duplicate of the socket, the bytes read and
 * the request go to the server's hand-off function; this side writes
 * nothing until the receiver says what became of it. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http/http_response.h"
#include "server/conn_int.h"
#include "sluice/error.h"

struct sl_handoff {
    sl_conn *c; /* NULL once the connection closed */
};

void sl_server_set_handoff(sl_server *s, sl_server_handoff_fn fn, void *arg)
{
    s->handoff_fn = fn;
    s->handoff_arg = arg;
}

static void answer(sl_conn *c, int status, const char *text)
{
    char body[512];
    snprintf(body, sizeof(body), "%s\n", text);
    sl_http_write_error(&c->out, status, NULL, body);
    sl_conn_finish(c);
}

bool sl_conn_handoff(sl_conn *c, sl_stream_req *req, size_t len)
{
    if (!c->keep_raw || c->raw_len < len)
        return false;
    /* What the kernel still holds is the receiver's to read. */
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = false;
    uv_os_fd_t sock;
    int fd = uv_fileno((uv_handle_t *)&c->tcp, &sock) == 0 ? fcntl(sock, F_DUPFD_CLOEXEC, 3) : -1;
    sl_handoff *h = fd >= 0 ? calloc(1, sizeof(*h)) : NULL;
    if (!h) {
        if (fd >= 0)
            close(fd);
        sl_stream_req_free(req);
        answer(c, 500, "the session could not be handed over");
        return true;
    }
    h->c = c;
    c->handoff = h;
    c->hreq = req;
    c->hleft = len;
    c->state = CONN_HANDOFF;
    sl_server *s = c->srv;
    s->handoff_fn(s->handoff_arg, h, fd, c->raw, c->raw_len, req);
    return true;
}

void sl_conn_handoff_gone(sl_conn *c)
{
    if (c->handoff)
        c->handoff->c = NULL;
    c->handoff = NULL;
    sl_stream_req_free(c->hreq);
    c->hreq = NULL;
}

/* Serve it here after all: the head is still parsed in c->head. */
static void serve_here(sl_conn *c, sl_stream_req *req)
{
    c->state = CONN_HEAD;
    sl_conn_resume_reading(c);
    const uint8_t *left = c->raw + (c->raw_len - c->hleft);
    sl_server_upgrade(c->srv, c, &c->head.req, req, left, c->hleft);
}

void sl_handoff_done(sl_handoff *h, int outcome, const char *message)
{
    sl_conn *c = h->c;
    free(h);
    if (!c)
        return;
    c->handoff = NULL;
    sl_stream_req *req = c->hreq;
    c->hreq = NULL;
    if (outcome == SL_HANDOFF_LOCAL) {
        serve_here(c, req);
        return;
    }
    sl_stream_req_free(req);
    if (outcome == SL_HANDOFF_TAKEN) {
        sl_conn_close(c); /* the receiver holds the socket: no FIN goes out */
        return;
    }
    if (outcome < 500 || outcome > 599)
        outcome = 500;
    answer(c, outcome, message ? message : "the session could not be handed over");
}
