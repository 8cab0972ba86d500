/* The gRPC server's connection limit and idle timeout.
 *
 * Open connections sit in a list ordered by their last activity (bytes
 * read or written), most recent first, so the longest idle is the tail:
 * moving a connection to the head on activity is O(1), and both the idle
 * sweep and the choice of whom to evict start from the tail. A busy
 * connection (a handler holds one of its calls, e.g. an open event
 * stream) is never idle: met at the tail, it is moved to the head. */
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <sys/resource.h>

#include "grpc/grpc_server_impl.h"

static uint64_t now_ms(const sl_grpc_server *s)
{
    return uv_now(s->loop);
}

static bool busy(const gconn *g)
{
    return sl_grpc_conn_busy(g->core);
}

static void push_head(gconn *g)
{
    sl_grpc_server *s = g->srv;
    g->lru_prev = NULL;
    g->lru_next = s->lru_head;
    if (s->lru_head)
        s->lru_head->lru_prev = g;
    else
        s->lru_tail = g;
    s->lru_head = g;
}

static void unlink_lru(gconn *g)
{
    sl_grpc_server *s = g->srv;
    if (g->lru_prev)
        g->lru_prev->lru_next = g->lru_next;
    else
        s->lru_head = g->lru_next;
    if (g->lru_next)
        g->lru_next->lru_prev = g->lru_prev;
    else
        s->lru_tail = g->lru_prev;
    g->lru_prev = g->lru_next = NULL;
}

static void idle_sweep_cb(uv_timer_t *t);

/* Arms the sweep for when the tail would reach the idle timeout. The tail
 * is the oldest, so an armed timer is never late; at worst early. */
static void arm_idle(sl_grpc_server *s)
{
    uint64_t limit = s->cfg.idle_timeout_ms;
    if (!limit || s->closing || !s->lru_tail || uv_is_active((uv_handle_t *)&s->idle_timer))
        return;
    uint64_t since = now_ms(s) - s->lru_tail->last_active;
    uv_timer_start(&s->idle_timer, idle_sweep_cb, since >= limit ? 0 : limit - since, 0);
}

void sl_gsrv_lru_add(gconn *g)
{
    g->in_lru = true;
    g->last_active = now_ms(g->srv);
    push_head(g);
    g->srv->nopen++;
    arm_idle(g->srv);
}

void sl_gsrv_lru_remove(gconn *g)
{
    if (!g->in_lru)
        return;
    unlink_lru(g);
    g->in_lru = false;
    g->srv->nopen--;
}

void sl_gsrv_touch(gconn *g)
{
    if (!g->in_lru)
        return;
    g->last_active = now_ms(g->srv);
    if (g->srv->lru_head != g) {
        unlink_lru(g);
        push_head(g);
    }
    arm_idle(g->srv);
}

static void idle_sweep_cb(uv_timer_t *t)
{
    sl_grpc_server *s = t->data;
    uint64_t limit = s->cfg.idle_timeout_ms, now = now_ms(s);
    char why[96];
    gconn *g;
    while ((g = s->lru_tail) && now - g->last_active >= limit) {
        if (busy(g)) {
            sl_gsrv_touch(g); /* not idle: look again a timeout later */
            continue;
        }
        snprintf(why, sizeof(why), "idle for %llu ms", (unsigned long long)(now - g->last_active));
        s->stats.idle_closed++;
        sl_gconn_goaway(g, NGHTTP2_NO_ERROR, why);
    }
    arm_idle(s);
}

bool sl_gsrv_make_room(sl_grpc_server *s)
{
    if (s->nopen < s->cfg.max_connections)
        return true;
    for (gconn *g = s->lru_tail; g; g = g->lru_prev) {
        if (busy(g))
            continue;
        char why[128];
        snprintf(why, sizeof(why), "closed to make room: %zu connections open (the limit)",
                 s->nopen);
        s->stats.evicted++;
        if (s->ngoaway < SL_GRPC_MAX_LINGERING)
            sl_gconn_goaway(g, NGHTTP2_NO_ERROR, why);
        else
            sl_gconn_evict(g, why);
        return true;
    }
    return false;
}

void sl_gsrv_limits_init(sl_grpc_server *s)
{
    uv_timer_init(s->loop, &s->idle_timer);
    s->idle_timer.data = s;
}

void sl_gsrv_limits_close(sl_grpc_server *s, uv_close_cb cb)
{
    uv_close((uv_handle_t *)&s->idle_timer, cb);
}

uint32_t sl_gsrv_fd_bound(uint32_t want)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
        return want;
    rlim_t share = rl.rlim_cur / SL_GRPC_FD_SHARE;
    if (share >= want)
        return want;
    return share > 0 ? (uint32_t)share : 1;
}

void sl_grpc_server_set_limits(sl_grpc_server *s, const sl_grpc_config *cfg)
{
    s->cfg.max_recv_message = cfg->max_recv_message;
    s->cfg.max_stream_backlog = cfg->max_stream_backlog;
    s->cfg.max_connections = sl_gsrv_fd_bound(cfg->max_connections);
    s->cfg.idle_timeout_ms = cfg->idle_timeout_ms;
    uv_timer_stop(&s->idle_timer); /* armed again for the new timeout */
    arm_idle(s);
}
