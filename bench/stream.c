/* Exec/attach and port-forward sessions on libsluice's client, on the
 * default libuv loop, with the times of their milestones. */
#include "bench.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define TICK_MS 20 /* wake-up period while waiting for a flag */

static uint32_t spdy_window;

void bn_set_spdy_window(uint32_t w)
{
    spdy_window = w;
}

uv_loop_t *bn_loop(void)
{
    return uv_default_loop();
}

const char *bn_transport_name(sl_transport t)
{
    switch (t) {
    case SL_TRANSPORT_SPDY:
        return "spdy";
    case SL_TRANSPORT_WEBSOCKET:
        return "websocket";
    case SL_TRANSPORT_WEBSOCKET_TUNNEL:
        return "tunnel";
    case SL_TRANSPORT_WEBSOCKET_LEGACY:
        return "legacy";
    }
    return "?";
}

static void tick(uv_timer_t *t)
{
    (void)t;
}

bool bn_run_until(const volatile bool *flag, double timeout_s)
{
    uv_timer_t t;
    uv_timer_init(bn_loop(), &t);
    uv_timer_start(&t, tick, TICK_MS, TICK_MS);
    double end = bn_now() + timeout_s;
    while (!*flag && bn_now() < end)
        uv_run(bn_loop(), UV_RUN_ONCE);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(bn_loop(), UV_RUN_NOWAIT);
    return *flag;
}

void bn_run_for(double s)
{
    bool never = false;
    bn_run_until(&never, s);
}

/* ---- exec / attach ---- */

static void x_upgraded(void *arg, const char *protocol)
{
    bn_exec *x = arg;
    x->t_upgraded = bn_now();
    snprintf(x->proto, sizeof(x->proto), "%s", protocol ? protocol : "");
}

static void x_finish(bn_exec *x)
{
    x->t_end = bn_now();
    x->done = true;
    if (x->on_done)
        x->on_done(x, x->arg);
}

static void x_exit(void *arg, int code, const char *message)
{
    bn_exec *x = arg;
    x->exit_code = code;
    if (message)
        snprintf(x->err, sizeof(x->err), "%s", message);
    x_finish(x);
}

static void x_error(void *arg, const sl_client_error *e)
{
    bn_exec *x = arg;
    x->exit_code = -1;
    x->failed = true;
    snprintf(x->err, sizeof(x->err), "%s (%d): %s", sl_client_err_kind_str(e->kind), e->http_status,
             e->message ? e->message : "");
    x_finish(x);
}

int bn_exec_start(bn_exec *x, const char *url, sl_transport tr, int in, int out, int err)
{
    void (*cb_done)(bn_exec *, void *) = x->on_done;
    void *cb_arg = x->arg;
    memset(x, 0, sizeof(*x));
    x->on_done = cb_done;
    x->arg = cb_arg;
    x->t_new = bn_now();
    sl_client_exec_opts o = {.struct_size = SL_STRUCT_SIZE(sl_client_exec_opts),
                             .url = url,
                             .transport = tr,
                             .stdin_fd = in,
                             .stdout_fd = out,
                             .stderr_fd = err,
                             .spdy_window = spdy_window};
    sl_client_exec_cb cb = {.struct_size = SL_STRUCT_SIZE(sl_client_exec_cb),
                            .on_upgraded = x_upgraded,
                            .on_exit = x_exit,
                            .on_error = x_error};
    int rc = sl_client_exec_new(bn_loop(), &o, &cb, x, &x->h);
    if (rc != SL_OK) {
        snprintf(x->err, sizeof(x->err), "sl_client_exec_new: %d", rc);
        x->failed = x->done = true;
        x->exit_code = -1;
        return -1;
    }
    return 0;
}

void bn_exec_free(bn_exec *x)
{
    if (x->h)
        sl_client_exec_free(x->h);
    x->h = NULL;
}

/* ---- port-forward ---- */

static void p_upgraded(void *arg, const char *protocol)
{
    bn_pf *p = arg;
    p->upgraded = true;
    snprintf(p->proto, sizeof(p->proto), "%s", protocol ? protocol : "");
}

static void p_conn_end(void *arg, uint64_t id, const char *err)
{
    bn_pf *p = arg;
    (void)id;
    p->conns_ended++;
    if (err && !p->conn_err[0])
        snprintf(p->conn_err, sizeof(p->conn_err), "%s", err);
}

static void p_end(void *arg, const sl_client_error *e)
{
    bn_pf *p = arg;
    p->ended = true;
    if (e) {
        p->failed = true;
        snprintf(p->err, sizeof(p->err), "%s (%d): %s", sl_client_err_kind_str(e->kind),
                 e->http_status, e->message ? e->message : "");
    }
}

int bn_pf_start(bn_pf *p, const char *url, sl_transport tr)
{
    memset(p, 0, sizeof(*p));
    sl_client_pf_opts o = {.struct_size = SL_STRUCT_SIZE(sl_client_pf_opts),
                           .url = url,
                           .transport = tr,
                           .spdy_window = spdy_window};
    sl_client_pf_cb cb = {.struct_size = SL_STRUCT_SIZE(sl_client_pf_cb),
                          .on_upgraded = p_upgraded,
                          .on_conn_end = p_conn_end,
                          .on_end = p_end};
    int rc = sl_client_pf_new(bn_loop(), &o, &cb, p, &p->h);
    if (rc != SL_OK) {
        snprintf(p->err, sizeof(p->err), "sl_client_pf_new: %d", rc);
        p->failed = p->ended = true;
        return -1;
    }
    return 0;
}

int bn_pf_conn(bn_pf *p, uint16_t port, int *mine)
{
    int fds[2];
    if (bn_socketpair(fds) < 0)
        return -1;
    int rc = sl_client_pf_forward(p->h, port, fds[1], NULL);
    if (rc != SL_OK) {
        close(fds[0]);
        snprintf(p->err, sizeof(p->err), "sl_client_pf_forward: %d", rc);
        return -1;
    }
    *mine = fds[0];
    return 0;
}

bool bn_pf_wait_upgrade(bn_pf *p, double timeout_s)
{
    double end = bn_now() + timeout_s;
    while (!p->upgraded && !p->ended && bn_now() < end)
        bn_run_for(0.005);
    return p->upgraded && !p->ended;
}

/* Closes the session gracefully, waits a little for its end, frees. */
void bn_pf_end(bn_pf *p)
{
    if (!p->h)
        return;
    if (!p->ended) {
        sl_client_pf_close(p->h);
        bn_run_until(&p->ended, 5.0);
    }
    sl_client_pf_free(p->h);
    p->h = NULL;
    uv_run(bn_loop(), UV_RUN_NOWAIT);
}
