/* Host-process runtime backend (tests and demo). */
#include "hostproc.h"

#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hp_connect.h"
#include "sluice/error.h"

typedef struct hp_container {
    struct hp_container *next;
    char *id;
    char **argv;
    bool tty;
} hp_container;

typedef struct hp_child {
    sl_hostproc *hp;
    sl_proc *proc;
    pid_t pid;
    int pidfd;
    int master; /* tty attach: our dup of the PTY master, else -1 */
    uv_poll_t poll;
} hp_child;

/* What a session asks of its process's stdio. */
typedef struct hp_stdio_req {
    bool tty, in, out, err;
    bool attach;
} hp_stdio_req;

struct sl_hostproc {
    uv_loop_t *loop;
    sl_runtime rt;
    hp_container *containers;
    size_t running;
};

/* Child side of fork(): only async-signal-safe calls until exec. */
static void child_exec(char *const *argv, int in, int out, int err, bool tty)
{
    sigset_t all;
    sigemptyset(&all);
    sigprocmask(SIG_SETMASK, &all, NULL);
    signal(SIGPIPE, SIG_DFL);
    setsid(); /* own process group, so cancel can kill every descendant */
    if (tty)
        ioctl(in, TIOCSCTTY, 0);
    if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
        _exit(127);
    execvp(argv[0], argv);
    static const char msg[] = "sluice-hostproc: exec failed\n";
    (void)!write(2, msg, sizeof(msg) - 1);
    _exit(127);
}

static void child_closed_cb(uv_handle_t *h)
{
    free(h->data);
}

static void exit_cb(uv_poll_t *h, int status, int events)
{
    (void)status;
    (void)events;
    hp_child *ch = h->data;
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    if (waitid(P_PIDFD, (id_t)ch->pidfd, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
        return; /* spurious wake-up */
    int code = si.si_code == CLD_EXITED ? si.si_status : 128 + si.si_status;
    uv_poll_stop(h);
    uv_close((uv_handle_t *)h, child_closed_cb);
    close(ch->pidfd);
    if (ch->master >= 0)
        close(ch->master);
    ch->hp->running--;
    sl_proc_set_data(ch->proc, NULL);
    sl_proc_exited(ch->proc, code, NULL);
}

static int nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

typedef struct stdio_set {
    int child[3];  /* what the child gets as 0, 1, 2 */
    int parent[4]; /* stdin, stdout, stderr, pty master (or -1) */
} stdio_set;

static void stdio_close(stdio_set *s, bool parent_too)
{
    for (int i = 0; i < 3; i++)
        if (s->child[i] >= 0 && (i == 0 || s->child[i] != s->child[i - 1]))
            close(s->child[i]);
    for (int i = 0; parent_too && i < 4; i++)
        if (s->parent[i] >= 0)
            close(s->parent[i]);
}

static int open_tty(stdio_set *s, const sl_term_size *size)
{
    int master, slave;
    struct winsize ws = {.ws_row = size ? size->height : 24, .ws_col = size ? size->width : 80};
    if (openpty(&master, &slave, NULL, NULL, &ws) < 0)
        return -1;
    fcntl(master, F_SETFD, FD_CLOEXEC);
    fcntl(slave, F_SETFD, FD_CLOEXEC);
    nonblock(master);
    s->parent[3] = master;
    s->child[0] = s->child[1] = s->child[2] = slave;
    return 0;
}

/* One pipe per requested stream; /dev/null for the others. */
static int open_pipes(stdio_set *s, bool in, bool out, bool err)
{
    bool want[3] = {in, out, err};
    for (int i = 0; i < 3; i++) {
        int p[2];
        if (!want[i]) {
            s->child[i] = open("/dev/null", O_RDWR | O_CLOEXEC);
            if (s->child[i] < 0)
                return -1;
            continue;
        }
        if (pipe2(p, O_CLOEXEC) < 0)
            return -1;
        s->child[i] = i == 0 ? p[0] : p[1];
        s->parent[i] = i == 0 ? p[1] : p[0];
        nonblock(s->parent[i]);
    }
    return 0;
}

static void start(sl_hostproc *hp, sl_proc *proc, char *const *argv, const hp_stdio_req *r,
                  const sl_term_size *size)
{
    stdio_set s = {{-1, -1, -1}, {-1, -1, -1, -1}};
    hp_child *ch = calloc(1, sizeof(*ch));
    int rc = !ch ? -1 : r->tty ? open_tty(&s, size) : open_pipes(&s, r->in, r->out, r->err);
    if (rc < 0) {
        char msg[128];
        snprintf(msg, sizeof(msg), "cannot set up stdio: %s", strerror(errno));
        stdio_close(&s, true);
        free(ch);
        sl_proc_failed(proc, msg);
        return;
    }
    pid_t pid = fork();
    if (pid == 0)
        child_exec(argv, s.child[0], s.child[1], s.child[2], r->tty);
    stdio_close(&s, false);
    int pidfd = pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
    if (pidfd < 0 || uv_poll_init(hp->loop, &ch->poll, pidfd) < 0) {
        char msg[128];
        snprintf(msg, sizeof(msg), "cannot start process: %s", strerror(errno));
        if (pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
        stdio_close(&s, true);
        free(ch);
        sl_proc_failed(proc, msg);
        return;
    }
    ch->hp = hp;
    ch->proc = proc;
    ch->pid = pid;
    ch->pidfd = pidfd;
    /* Each attach here runs its own process: the end of its client's input
     * is the end of that process's terminal input (attach_stdin_eof). */
    ch->master = r->tty && r->attach ? fcntl(s.parent[3], F_DUPFD_CLOEXEC, 3) : -1;
    ch->poll.data = ch;
    hp->running++;
    sl_proc_set_data(proc, ch);
    uv_poll_start(&ch->poll, UV_READABLE, exit_cb);
    sl_proc_endpoints ep = {s.parent[0], s.parent[1], s.parent[2], s.parent[3]};
    sl_proc_started(proc, &ep);
}

static void op_exec(void *rt, sl_proc *proc, const sl_exec_request *req, const sl_term_size *size)
{
    hp_stdio_req r = {req->tty, req->in, req->out, req->err, false};
    start(rt, proc, (char *const *)req->cmd, &r, size);
}

static void op_attach(void *rt, sl_proc *proc, const sl_attach_request *req,
                      const sl_term_size *size)
{
    sl_hostproc *hp = rt;
    for (hp_container *c = hp->containers; c; c = c->next) {
        if (strcmp(c->id, req->container_id) == 0) {
            hp_stdio_req r = {c->tty, req->in, req->out, req->err, true};
            start(hp, proc, c->argv, &r, size);
            return;
        }
    }
    sl_proc_failed(proc, "container not found");
}

static void op_cancel(void *rt, sl_proc *proc)
{
    (void)rt;
    hp_child *ch = sl_proc_data(proc);
    /* The whole process group; if the child has not reached setsid() yet
     * there is no group, but then it has not exec'd or forked either. */
    if (ch && kill(-ch->pid, SIGKILL) < 0)
        kill(ch->pid, SIGKILL);
}

static void op_attach_stdin_eof(void *rt, sl_proc *proc)
{
    (void)rt;
    hp_child *ch = sl_proc_data(proc);
    static const uint8_t eot = 4; /* VEOF, as a terminal user ends input */
    if (ch && ch->master >= 0)
        (void)!write(ch->master, &eot, 1);
}

static void op_release(void *rt, sl_proc *proc)
{
    (void)rt;
    sl_proc_set_data(proc, NULL);
}

static void op_pf_connect(void *rt, sl_pfconn *conn, const char *sandbox, uint16_t port)
{
    (void)rt;
    (void)sandbox;
    char err[160];
    int fd = sl_hp_connect_loopback(port, err, sizeof(err));
    if (fd < 0)
        sl_pfconn_failed(conn, err);
    else
        sl_pfconn_connected(conn, fd);
}

static const sl_runtime_ops hostproc_ops = {
    .struct_size = SL_STRUCT_SIZE(sl_runtime_ops),
    .exec_start = op_exec,
    .attach_start = op_attach,
    .resize = NULL, /* the library sets the size on the PTY master */
    .cancel = op_cancel,
    .release = op_release,
    .portforward_connect = op_pf_connect,
    .portforward_cancel = NULL,
    .attach_stdin_eof = op_attach_stdin_eof,
};

sl_hostproc *sl_hostproc_new(uv_loop_t *loop)
{
    sl_hostproc *hp = calloc(1, sizeof(*hp));
    if (!hp)
        return NULL;
    hp->loop = loop;
    hp->rt.ops = &hostproc_ops;
    hp->rt.data = hp;
    return hp;
}

const sl_runtime *sl_hostproc_runtime(sl_hostproc *hp)
{
    return &hp->rt;
}

int sl_hostproc_add_container(sl_hostproc *hp, const char *id, const char *const *argv, bool tty)
{
    size_t n = 0;
    while (argv[n])
        n++;
    hp_container *c = calloc(1, sizeof(*c));
    char **v = calloc(n + 1, sizeof(char *));
    if (!c || !v || !(c->id = strdup(id)))
        goto fail;
    c->argv = v;
    for (size_t i = 0; i < n; i++)
        if (!(v[i] = strdup(argv[i])))
            goto fail;
    c->tty = tty;
    c->next = hp->containers;
    hp->containers = c;
    return SL_OK;
fail:
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
    if (c)
        free(c->id);
    free(c);
    return SL_ERR_NOMEM;
}

size_t sl_hostproc_running(const sl_hostproc *hp)
{
    return hp->running;
}

void sl_hostproc_free(sl_hostproc *hp)
{
    if (!hp)
        return;
    while (hp->containers) {
        hp_container *c = hp->containers;
        hp->containers = c->next;
        for (size_t i = 0; c->argv[i]; i++)
            free(c->argv[i]);
        free(c->argv);
        free(c->id);
        free(c);
    }
    free(hp);
}
