/* exec-server: a minimal runtime embedding libsluice through its public API
 * only (sluice/server.h, sluice/runtime.h, sluice/version.h), built against
 * the installed library:
 *
 *     cc -o exec-server exec-server.c $(pkg-config --cflags --libs sluice)
 *
 * It serves exec and port-forward for host processes: no containers, no
 * isolation, no tty. What a real runtime's CRI Exec and PortForward calls
 * would do, it does on stdin, one request per line, one answer per line:
 *
 *     exec ARG...      -> the URL of an exec of ARG... (stdin, stdout, stderr);
 *                         the ARGs are separated by tabs when the line has
 *                         one (an ARG may then hold spaces), else by spaces
 *     portforward [PORT...]
 *                      -> the URL of a port-forward to 127.0.0.1 (the
 *                         legacy WebSocket protocol forwards the PORTs
 *                         named here; SPDY forwards those its client asks)
 *     (anything else)  -> "error: ..."
 *
 * At stdin's end the server closes, the processes still running are killed,
 * and the program exits once they are reaped.
 *
 * Usage: exec-server [ADDRESS [PORT]]   (default 127.0.0.1, any free port) */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2 */
#endif
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>
#include <sluice/server.h>
#include <sluice/version.h>

#define MAX_LINE 4096
#define MAX_ARGS 64

typedef struct app {
    uv_loop_t *loop;
    sl_server *server;
    uv_pipe_t input;
    char line[MAX_LINE];
    size_t len;
    size_t running; /* exec'd processes not yet reaped */
    bool closing;
} app;

/* ---- the runtime: exec ---------------------------------------------------- */

typedef struct exec_proc {
    uv_process_t handle;
    sl_proc *proc;
    app *app;
    bool spawned; /* uv_spawn ran: the handle must be closed, even if it failed */
} exec_proc;

static void exec_closed(uv_handle_t *h)
{
    free(h->data);
}

static void exec_exited(uv_process_t *h, int64_t status, int term_signal)
{
    exec_proc *e = h->data;
    int code = term_signal ? 128 + term_signal : (int)status;
    sl_proc_set_data(e->proc, NULL); /* no cancel may reach e from now on */
    sl_proc_exited(e->proc, code, NULL);
    e->app->running--;
    uv_close((uv_handle_t *)h, exec_closed);
}

/* Each requested stream gets a pipe: child end in stdio[i], ours in *mine. */
static int make_pipe(bool wanted, int i, uv_stdio_container_t *stdio, int *mine, int child[3])
{
    int p[2];
    *mine = -1;
    if (!wanted) {
        stdio[i].flags = UV_IGNORE;
        return 0;
    }
    if (pipe2(p, O_CLOEXEC) != 0)
        return -errno;
    *mine = i == 0 ? p[1] : p[0];
    child[i] = i == 0 ? p[0] : p[1];
    stdio[i].flags = UV_INHERIT_FD;
    stdio[i].data.fd = child[i];
    return 0;
}

static int spawn_exec(exec_proc *e, const sl_exec_request *req, sl_proc_endpoints *ep)
{
    char *args[MAX_ARGS + 1];
    uv_stdio_container_t stdio[3];
    int child[3] = {-1, -1, -1}, rc = 0;
    if (req->ncmd == 0 || req->ncmd > MAX_ARGS)
        return UV_E2BIG;
    for (size_t i = 0; i < req->ncmd; i++)
        args[i] = (char *)req->cmd[i];
    args[req->ncmd] = NULL;
    if ((rc = make_pipe(req->in, 0, stdio, &ep->stdin_fd, child)) == 0 &&
        (rc = make_pipe(req->out, 1, stdio, &ep->stdout_fd, child)) == 0)
        rc = make_pipe(req->err, 2, stdio, &ep->stderr_fd, child);
    if (rc == 0) {
        uv_process_options_t o = {.exit_cb = exec_exited, .file = args[0], .args = args};
        o.stdio = stdio;
        o.stdio_count = 3;
        o.flags = UV_PROCESS_DETACHED; /* its own process group: cancel kills it all */
        e->spawned = true;
        rc = uv_spawn(e->app->loop, &e->handle, &o);
    }
    for (int i = 0; i < 3; i++)
        if (child[i] >= 0)
            close(child[i]);
    return rc;
}

static void rt_exec_start(void *rt, sl_proc *proc, const sl_exec_request *req,
                          const sl_term_size *initial)
{
    (void)initial;
    app *a = rt;
    sl_proc_endpoints ep = {-1, -1, -1, -1};
    if (req->tty) {
        sl_proc_failed(proc, "exec-server runs no tty");
        return;
    }
    exec_proc *e = calloc(1, sizeof(*e));
    if (e == NULL) {
        sl_proc_failed(proc, "out of memory");
        return;
    }
    e->proc = proc;
    e->app = a;
    e->handle.data = e;
    int rc = spawn_exec(e, req, &ep);
    if (rc != 0) {
        int *fds[] = {&ep.stdin_fd, &ep.stdout_fd, &ep.stderr_fd};
        for (int i = 0; i < 3; i++)
            if (*fds[i] >= 0)
                close(*fds[i]);
        sl_proc_failed(proc, uv_strerror(rc));
        if (e->spawned)
            uv_close((uv_handle_t *)&e->handle, exec_closed);
        else
            free(e);
        return;
    }
    a->running++;
    sl_proc_set_data(proc, e);
    sl_proc_started(proc, &ep);
}

static void rt_attach_start(void *rt, sl_proc *proc, const sl_attach_request *req,
                            const sl_term_size *initial)
{
    (void)rt, (void)req, (void)initial;
    sl_proc_failed(proc, "exec-server has no containers to attach to");
}

static void rt_cancel(void *rt, sl_proc *proc)
{
    (void)rt;
    exec_proc *e = sl_proc_data(proc);
    if (e != NULL)
        uv_kill(-e->handle.pid, SIGKILL);
}

static void rt_release(void *rt, sl_proc *proc)
{
    (void)rt;
    sl_proc_set_data(proc, NULL);
}

/* ---- the runtime: port-forward to 127.0.0.1 ------------------------------ */

typedef struct pf_connect {
    uv_poll_t poll;
    sl_pfconn *conn;
    int fd;
} pf_connect;

static void pf_closed(uv_handle_t *h)
{
    free(h->data);
}

static void pf_finish(pf_connect *p, int err)
{
    uv_poll_stop(&p->poll);
    sl_pfconn_set_data(p->conn, NULL);
    if (err == 0) {
        sl_pfconn_connected(p->conn, p->fd);
    } else {
        close(p->fd);
        sl_pfconn_failed(p->conn, strerror(err));
    }
    uv_close((uv_handle_t *)&p->poll, pf_closed);
}

static void pf_writable(uv_poll_t *h, int status, int events)
{
    (void)events;
    pf_connect *p = h->data;
    int err = 0;
    socklen_t len = sizeof(err);
    if (status < 0)
        err = -status;
    else if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    pf_finish(p, err);
}

static void rt_pf_connect(void *rt, sl_pfconn *conn, const char *sandbox_id, uint16_t port)
{
    (void)sandbox_id;
    app *a = rt;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        sl_pfconn_failed(conn, strerror(errno));
        return;
    }
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
        sl_pfconn_connected(conn, fd);
        return;
    }
    int err = errno == EINPROGRESS ? 0 : errno;
    pf_connect *p = err == 0 ? calloc(1, sizeof(*p)) : NULL;
    if (p == NULL || uv_poll_init(a->loop, &p->poll, fd) != 0) {
        sl_pfconn_failed(conn, strerror(err != 0 ? err : ENOMEM));
        free(p);
        close(fd);
        return;
    }
    p->poll.data = p;
    p->conn = conn;
    p->fd = fd;
    sl_pfconn_set_data(conn, p);
    uv_poll_start(&p->poll, UV_WRITABLE, pf_writable);
}

static void rt_pf_cancel(void *rt, sl_pfconn *conn)
{
    (void)rt;
    pf_connect *p = sl_pfconn_data(conn);
    if (p != NULL)
        pf_finish(p, ECANCELED);
}

static const sl_runtime_ops ops = {
    .struct_size = SL_STRUCT_SIZE(sl_runtime_ops),
    .exec_start = rt_exec_start,
    .attach_start = rt_attach_start,
    .cancel = rt_cancel,
    .release = rt_release,
    .portforward_connect = rt_pf_connect,
    .portforward_cancel = rt_pf_cancel,
};

/* ---- the requests on stdin ------------------------------------------------ */

static void answer_exec(app *a, char *words)
{
    const char *argv[MAX_ARGS];
    size_t n = 0;
    const char *sep = strchr(words, '\t') ? "\t" : " ";
    for (char *save, *w = strtok_r(words, sep, &save); w && n < MAX_ARGS;
         w = strtok_r(NULL, sep, &save))
        argv[n++] = w;
    sl_exec_request req = {.struct_size = SL_STRUCT_SIZE(sl_exec_request),
                           .container_id = "host",
                           .cmd = argv,
                           .ncmd = n};
    req.in = req.out = req.err = true;
    char *url = NULL;
    const char *why = NULL;
    int rc = sl_server_get_exec(a->server, &req, &url, &why);
    if (rc == SL_OK)
        printf("%s\n", url);
    else
        printf("error: %s\n", why ? why : sl_strerror(rc));
    free(url);
}

static void answer_portforward(app *a, char *words)
{
    uint16_t ports[MAX_ARGS];
    size_t n = 0;
    for (char *save, *w = strtok_r(words, " ", &save); w && n < MAX_ARGS;
         w = strtok_r(NULL, " ", &save))
        ports[n++] = (uint16_t)strtoul(w, NULL, 10); /* a bad one is 0: refused below */
    sl_portforward_request req = {.struct_size = SL_STRUCT_SIZE(sl_portforward_request),
                                  .pod_sandbox_id = "host",
                                  .ports = ports,
                                  .nports = n};
    char *url = NULL;
    const char *why = NULL;
    int rc = sl_server_get_portforward(a->server, &req, &url, &why);
    if (rc == SL_OK)
        printf("%s\n", url);
    else
        printf("error: %s\n", why ? why : sl_strerror(rc));
    free(url);
}

static void answer(app *a, char *line)
{
    if (strncmp(line, "exec ", 5) == 0 || strncmp(line, "exec\t", 5) == 0) {
        answer_exec(a, line + 5);
    } else if (strncmp(line, "portforward", 11) == 0 && (line[11] == '\0' || line[11] == ' ')) {
        answer_portforward(a, line + 11);
    } else {
        printf("error: unknown request (exec ARG... | portforward [PORT...])\n");
    }
    fflush(stdout);
}

static void server_closed(sl_server *s, void *arg)
{
    (void)s, (void)arg;
}

static void stop(app *a)
{
    if (a->closing)
        return;
    a->closing = true;
    uv_close((uv_handle_t *)&a->input, NULL);
    sl_server_close(a->server, server_closed, a); /* cancels (kills) every exec */
}

static void alloc_line(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)hint;
    app *a = h->data;
    *buf = uv_buf_init(a->line + a->len, (unsigned)(MAX_LINE - 1 - a->len));
}

static void on_input(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    (void)buf;
    app *a = s->data;
    if (n < 0) {
        stop(a);
        return;
    }
    a->len += (size_t)n;
    char *nl;
    while ((nl = memchr(a->line, '\n', a->len)) != NULL) {
        *nl = '\0';
        answer(a, a->line);
        a->len -= (size_t)(nl + 1 - a->line);
        memmove(a->line, nl + 1, a->len);
    }
    if (a->len == MAX_LINE - 1) {
        printf("error: line longer than %d bytes\n", MAX_LINE - 1);
        a->len = 0;
    }
}

int main(int argc, char **argv)
{
    static app a;
    sl_server_config cfg;
    static const sl_runtime runtime = {.ops = &ops, .data = &a};
    signal(SIGPIPE, SIG_IGN);
    a.loop = uv_default_loop();
    sl_server_config_init(&cfg);
    cfg.port = 0;
    if (argc > 1)
        cfg.address = argv[1];
    if (argc > 2)
        cfg.port = (uint16_t)atoi(argv[2]);
    int rc = sl_server_new(a.loop, &cfg, &runtime, &a.server);
    if (rc != SL_OK) {
        fprintf(stderr, "exec-server: %s\n", sl_strerror(rc));
        return 1;
    }
    if ((rc = sl_server_start(a.server)) != SL_OK) {
        /* e.g. "bind 127.0.0.1 port 80: permission denied" */
        fprintf(stderr, "exec-server: %s\n", sl_server_errmsg(a.server));
        sl_server_close(a.server, NULL, NULL);
        uv_run(a.loop, UV_RUN_DEFAULT); /* until the listener is closed */
        sl_server_free(a.server);
        return 1;
    }
    printf("exec-server %s (libsluice %s) on %s\n", SLUICE_VERSION, sl_version(),
           sl_server_base_url(a.server));
    fflush(stdout);
    uv_pipe_init(a.loop, &a.input, 0);
    a.input.data = &a;
    if (uv_pipe_open(&a.input, 0) != 0 ||
        uv_read_start((uv_stream_t *)&a.input, alloc_line, on_input) != 0) {
        fprintf(stderr, "exec-server: cannot read stdin\n");
        return 1;
    }
    uv_run(a.loop, UV_RUN_DEFAULT);
    sl_server_free(a.server);
    uv_loop_close(a.loop);
    return a.running == 0 ? 0 : 1;
}
