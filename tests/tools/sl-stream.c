/* sl-stream: a small command-line client over libsluice's client API, for
 * tests and debugging (sluicectl is the product CLI).
 *
 *   sl-stream exec|attach URL [--transport spdy|websocket] [-i] [-t]
 *             [--size WxH] [--resize WxH]... [--spdy-window N] [-D]
 *   sl-stream pf URL [--transport spdy|tunnel|legacy] --forward LOCAL:REMOTE...
 *             [--spdy-window N] [-D]
 *
 * exec/attach: stdin (-i), stdout and stderr (not with -t) are the
 * process's own; the exit code is the remote one (1 for a client-side
 * failure, with the reason on stderr). -t puts a terminal stdin in raw
 * mode and sends its size on SIGWINCH; --size sets the first size;
 * each SIGUSR1 sends the next --resize size.
 * pf: listens on 127.0.0.1:LOCAL (0 = any; the port is printed as
 * "Forwarding from 127.0.0.1:L -> R") and forwards every accepted
 * connection over one session, until SIGINT/SIGTERM (exit 0) or the
 * session's end (exit 1). --spdy-window announces SPDY flow control with
 * that per-stream window (bytes). */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>
#include <uv.h>

#include "sluice/client.h"

#define MAX_FORWARDS 16
#define MAX_RESIZES 16
#define EXIT_CLIENT 1

typedef struct forward {
    struct tool *t;
    uint16_t local, remote;
    int fd;
    uv_poll_t poll;
} forward;

typedef struct tool {
    uv_loop_t *loop;
    const char *mode, *url;
    sl_transport transport;
    bool in, tty, debug;
    uint16_t width, height;
    uint32_t spdy_window;
    uint16_t rw[MAX_RESIZES], rh[MAX_RESIZES];
    int nresize, next_resize;
    forward fwd[MAX_FORWARDS];
    int nfwd;
    sl_client_exec *exec;
    sl_client_pf *pf;
    uv_signal_t sig[4];
    int nsig;
    int code;
    bool raw;
    struct termios saved;
} tool;

static void usage(void)
{
    fprintf(stderr, "usage: sl-stream exec|attach URL [--transport spdy|websocket] [-i] [-t]\n"
                    "                 [--size WxH] [--resize WxH]... [--spdy-window N] [-D]\n"
                    "       sl-stream pf URL [--transport spdy|tunnel|legacy]\n"
                    "                 --forward LOCAL:REMOTE... [--spdy-window N] [-D]\n");
}

static int parse_size(const char *s, uint16_t *w, uint16_t *h)
{
    unsigned a, b;
    char x;
    if (sscanf(s, "%u%c%u", &a, &x, &b) != 3 || x != 'x' || a > 65535 || b > 65535)
        return -1;
    *w = (uint16_t)a;
    *h = (uint16_t)b;
    return 0;
}

static int parse_transport(const char *s, sl_transport *t)
{
    static const struct {
        const char *name;
        sl_transport t;
    } names[] = {{"spdy", SL_TRANSPORT_SPDY},
                 {"websocket", SL_TRANSPORT_WEBSOCKET},
                 {"tunnel", SL_TRANSPORT_WEBSOCKET_TUNNEL},
                 {"legacy", SL_TRANSPORT_WEBSOCKET_LEGACY}};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (!strcmp(s, names[i].name)) {
            *t = names[i].t;
            return 0;
        }
    }
    return -1;
}

static int parse_forward(tool *t, const char *s)
{
    unsigned l, r;
    char c;
    if (t->nfwd >= MAX_FORWARDS || sscanf(s, "%u%c%u", &l, &c, &r) != 3 || c != ':' || l > 65535 ||
        r < 1 || r > 65535)
        return -1;
    t->fwd[t->nfwd].local = (uint16_t)l;
    t->fwd[t->nfwd].remote = (uint16_t)r;
    t->nfwd++;
    return 0;
}

static int parse_opt(tool *t, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    const char *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!strcmp(a, "-i")) {
        t->in = true;
    } else if (!strcmp(a, "-t")) {
        t->tty = true;
    } else if (!strcmp(a, "-D")) {
        t->debug = true;
    } else if (!strcmp(a, "--transport") && v) {
        (*i)++;
        return parse_transport(v, &t->transport);
    } else if (!strcmp(a, "--size") && v) {
        (*i)++;
        return parse_size(v, &t->width, &t->height);
    } else if (!strcmp(a, "--resize") && v && t->nresize < MAX_RESIZES) {
        (*i)++;
        int k = t->nresize++;
        return parse_size(v, &t->rw[k], &t->rh[k]);
    } else if (!strcmp(a, "--spdy-window") && v) {
        (*i)++;
        char *end;
        unsigned long w = strtoul(v, &end, 10);
        t->spdy_window = (uint32_t)w;
        return *end || w < 1 || w > 0x7fffffffUL ? -1 : 0;
    } else if (!strcmp(a, "--forward") && v) {
        (*i)++;
        return parse_forward(t, v);
    } else {
        return -1;
    }
    return 0;
}

static int parse_args(tool *t, int argc, char **argv)
{
    if (argc < 3)
        return -1;
    t->mode = argv[1];
    t->url = argv[2];
    for (int i = 3; i < argc; i++)
        if (parse_opt(t, argc, argv, &i) < 0)
            return -1;
    if (!strcmp(t->mode, "pf"))
        return t->nfwd > 0 && t->transport != SL_TRANSPORT_WEBSOCKET ? 0 : -1;
    if (strcmp(t->mode, "exec") && strcmp(t->mode, "attach"))
        return -1;
    return t->transport == SL_TRANSPORT_SPDY || t->transport == SL_TRANSPORT_WEBSOCKET ? 0 : -1;
}

/* ---- shutting down ---------------------------------------------------------- */

static void close_all(tool *t)
{
    for (int i = 0; i < t->nsig; i++)
        if (!uv_is_closing((uv_handle_t *)&t->sig[i]))
            uv_close((uv_handle_t *)&t->sig[i], NULL);
    for (int i = 0; i < t->nfwd; i++) {
        if (t->fwd[i].fd >= 0 && !uv_is_closing((uv_handle_t *)&t->fwd[i].poll)) {
            uv_close((uv_handle_t *)&t->fwd[i].poll, NULL);
            close(t->fwd[i].fd);
            t->fwd[i].fd = -1;
        }
    }
    if (t->exec)
        sl_client_exec_free(t->exec);
    t->exec = NULL;
    if (t->pf)
        sl_client_pf_free(t->pf);
    t->pf = NULL;
}

static void restore_tty(tool *t)
{
    if (t->raw)
        tcsetattr(0, TCSANOW, &t->saved);
    t->raw = false;
}

/* ---- exec / attach ------------------------------------------------------------- */

static void on_upgraded(void *arg, const char *protocol)
{
    tool *t = arg;
    if (t->debug)
        fprintf(stderr, "sl-stream: upgraded to %s\n", protocol);
}

static void on_exit_cb(void *arg, int code, const char *message)
{
    tool *t = arg;
    if (t->debug && message)
        fprintf(stderr, "sl-stream: %s\n", message);
    t->code = code;
    close_all(t);
}

static void on_error(void *arg, const sl_client_error *e)
{
    tool *t = arg;
    restore_tty(t);
    fprintf(stderr, "sl-stream: %s: %s\n", sl_client_err_kind_str(e->kind), e->message);
    t->code = EXIT_CLIENT;
    close_all(t);
}

static void send_terminal_size(tool *t)
{
    struct winsize ws;
    if (t->exec && (ioctl(0, TIOCGWINSZ, &ws) == 0 || ioctl(1, TIOCGWINSZ, &ws) == 0))
        sl_client_exec_resize(t->exec, ws.ws_col, ws.ws_row);
}

static void signal_cb(uv_signal_t *s, int signum)
{
    tool *t = s->data;
    if (signum == SIGWINCH) {
        send_terminal_size(t);
    } else if (signum == SIGUSR1) {
        if (t->exec && t->next_resize < t->nresize) {
            int k = t->next_resize++;
            sl_client_exec_resize(t->exec, t->rw[k], t->rh[k]);
        }
    } else { /* SIGINT, SIGTERM */
        if (t->pf) {
            sl_client_pf_close(t->pf); /* on_end(NULL) follows */
            return;
        }
        t->code = 128 + signum;
        close_all(t);
    }
}

static void watch_signal(tool *t, int signum)
{
    uv_signal_t *s = &t->sig[t->nsig++];
    uv_signal_init(t->loop, s);
    s->data = t;
    uv_signal_start(s, signal_cb, signum);
}

static int run_exec(tool *t)
{
    sl_client_exec_opts o = {
        .struct_size = SL_STRUCT_SIZE(sl_client_exec_opts),
        .url = t->url,
        .transport = t->transport,
        .tty = t->tty,
        .stdin_fd = t->in ? 0 : -1,
        .stdout_fd = 1,
        .stderr_fd = t->tty ? -1 : 2,
        .width = t->width,
        .height = t->height,
        .spdy_window = t->spdy_window,
    };
    struct winsize ws;
    if (t->tty && !t->width && ioctl(0, TIOCGWINSZ, &ws) == 0) {
        o.width = ws.ws_col;
        o.height = ws.ws_row;
    }
    if (t->tty && t->in && isatty(0) && tcgetattr(0, &t->saved) == 0) {
        struct termios raw = t->saved;
        cfmakeraw(&raw);
        t->raw = tcsetattr(0, TCSANOW, &raw) == 0;
    }
    sl_client_exec_cb cb = {.struct_size = SL_STRUCT_SIZE(sl_client_exec_cb),
                            .on_upgraded = on_upgraded,
                            .on_exit = on_exit_cb,
                            .on_error = on_error};
    int rc = sl_client_exec_new(t->loop, &o, &cb, t, &t->exec);
    if (rc != SL_OK) {
        restore_tty(t);
        fprintf(stderr, "sl-stream: %s\n", sl_strerror(rc));
        return EXIT_CLIENT;
    }
    watch_signal(t, SIGWINCH);
    watch_signal(t, SIGUSR1);
    watch_signal(t, SIGINT);
    watch_signal(t, SIGTERM);
    uv_run(t->loop, UV_RUN_DEFAULT);
    restore_tty(t);
    return t->code;
}

/* ---- port-forward --------------------------------------------------------------- */

static void pf_conn_end(void *arg, uint64_t id, const char *err)
{
    tool *t = arg;
    if (err)
        fprintf(stderr, "sl-stream: an error occurred forwarding connection %llu: %s\n",
                (unsigned long long)id, err);
    else if (t->debug)
        fprintf(stderr, "sl-stream: connection %llu done\n", (unsigned long long)id);
}

static void pf_end(void *arg, const sl_client_error *e)
{
    tool *t = arg;
    if (e) {
        fprintf(stderr, "sl-stream: lost connection to pod: %s: %s\n",
                sl_client_err_kind_str(e->kind), e->message);
        t->code = EXIT_CLIENT;
    }
    close_all(t);
}

static void accept_cb(uv_poll_t *p, int status, int events)
{
    forward *f = p->data;
    (void)events;
    if (status < 0)
        return;
    for (;;) {
        int fd = accept4(f->fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            return; /* EAGAIN, or a transient error */
        uint64_t id;
        int rc = sl_client_pf_forward(f->t->pf, f->remote, fd, &id);
        if (rc != SL_OK)
            fprintf(stderr, "sl-stream: cannot forward to port %u: %s\n", f->remote,
                    sl_strerror(rc));
        else if (f->t->debug)
            fprintf(stderr, "sl-stream: connection %llu -> %u\n", (unsigned long long)id,
                    f->remote);
    }
}

static int listen_on(tool *t, forward *f)
{
    f->t = t;
    f->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(f->local)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    socklen_t len = sizeof(a);
    if (f->fd < 0 || setsockopt(f->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
        bind(f->fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(f->fd, 128) < 0 ||
        getsockname(f->fd, (struct sockaddr *)&a, &len) < 0) {
        fprintf(stderr, "sl-stream: cannot listen on 127.0.0.1:%u: %s\n", f->local,
                strerror(errno));
        return -1;
    }
    f->local = ntohs(a.sin_port);
    uv_poll_init(t->loop, &f->poll, f->fd);
    f->poll.data = f;
    uv_poll_start(&f->poll, UV_READABLE, accept_cb);
    printf("Forwarding from 127.0.0.1:%u -> %u\n", f->local, f->remote);
    fflush(stdout);
    return 0;
}

static int run_pf(tool *t)
{
    sl_client_pf_opts o = {.struct_size = SL_STRUCT_SIZE(sl_client_pf_opts),
                           .url = t->url,
                           .transport = t->transport,
                           .spdy_window = t->spdy_window};
    sl_client_pf_cb cb = {.struct_size = SL_STRUCT_SIZE(sl_client_pf_cb),
                          .on_upgraded = on_upgraded,
                          .on_conn_end = pf_conn_end,
                          .on_end = pf_end};
    for (int i = 0; i < MAX_FORWARDS; i++)
        t->fwd[i].fd = -1;
    int rc = sl_client_pf_new(t->loop, &o, &cb, t, &t->pf);
    if (rc != SL_OK) {
        fprintf(stderr, "sl-stream: %s\n", sl_strerror(rc));
        return EXIT_CLIENT;
    }
    watch_signal(t, SIGINT);
    watch_signal(t, SIGTERM);
    for (int i = 0; i < t->nfwd; i++) {
        if (listen_on(t, &t->fwd[i]) < 0) {
            t->code = EXIT_CLIENT;
            close_all(t);
            break;
        }
    }
    uv_run(t->loop, UV_RUN_DEFAULT);
    return t->code;
}

int main(int argc, char **argv)
{
    tool t;
    memset(&t, 0, sizeof(t));
    if (parse_args(&t, argc, argv) < 0) {
        usage();
        return 2;
    }
    signal(SIGPIPE, SIG_IGN); /* the library's contract */
    t.loop = uv_default_loop();
    int code = !strcmp(t.mode, "pf") ? run_pf(&t) : run_exec(&t);
    uv_run(t.loop, UV_RUN_DEFAULT); /* let the handles close */
    uv_loop_close(t.loop);
    return code;
}
