/* Exec: `runc exec` as the monitor's child with a process.json made from
 * the container bundle's process (args, terminal and initial size set), so
 * the size applies before the process starts. The client ends of its pipes
 * (or a dup of the PTY master) go to sluiced with the reply, once runc exec
 * exited well: a process that could not be started (no such binary) is an
 * error reply with runc's reason, never a pipe carrying runc's log line and
 * a fake exit code. The monitor keeps only what it needs to resize and to
 * see the output end.
 *
 * Scratch: runc exec reads its process.json from, and writes its pid file
 * and log to, a directory of the exec's own (exec/ID in the run dir), made
 * and removed on the loop. The native path needs no file: its starter
 * writes the pid or its error into two memfds, so an exec there costs the
 * loop no filesystem work and leaves nothing to remove.
 *
 * Admission: at most max_concurrent execs of the pod are being started (a
 * runc exec runs) at once; the others wait in FIFO order, at most queue_max
 * of them, and beyond that the request is refused (code
 * SL_MON_ERR_EXHAUSTED). A queued exec that is killed (its client's
 * deadline passed, it went away) never starts. A runc exec still running
 * when its exec is killed is killed too: under load, runc execs of
 * timed-out probes otherwise pile up and starve the pod's other work. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mon.h"
#include "mon_nexec.h"
#include "sluice/error.h"

#define EXEC_MAX_ARGS 4096 /* elements of cmd */

static void maybe_finish(mon_exec *x);

static mon_exec *exec_find(mon *m, const char *id)
{
    for (mon_exec *x = m->execs; id && x; x = x->next)
        if (strcmp(x->id, id) == 0)
            return x;
    return NULL;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void close_scratch_fds(mon_exec *x)
{
    close_fd(&x->pid_fd);
    close_fd(&x->log_fd);
}

static void exec_free(mon_exec *x)
{
    mon *m = x->m;
    for (mon_exec **pp = &m->execs; *pp; pp = &(*pp)->next) {
        if (*pp == x) {
            *pp = x->next;
            break;
        }
    }
    mon_job_cancel(x->job);
    mon_console_free(x->console);
    sl_mtimer_cancel(x->drain_timer);
    sl_mtimer_cancel(x->kill_timer);
    for (int i = 0; i < 2; i++) {
        sl_mwatch_free(x->watch_w[i]);
        if (x->watch_fd[i] >= 0 && x->watch_fd[i] != x->master)
            close(x->watch_fd[i]);
    }
    if (x->master >= 0)
        close(x->master);
    for (int i = 0; i < 3; i++)
        if (x->client[i] >= 0)
            close(x->client[i]);
    if (x->reply)
        mon_reply_err(m, x->reply, "exec %s ended", x->id);
    close_scratch_fds(x);
    if (x->dir)
        sl_rm_rf(x->dir, NULL);
    json_decref(x->cmd);
    free(x->dir);
    free(x->pid_file);
    free(x);
}

static void drain_cb(void *data)
{
    mon_exec *x = data;
    x->drain_timer = NULL;
    for (int i = 0; i < 2; i++) {
        sl_mwatch_free(x->watch_w[i]);
        x->watch_w[i] = NULL;
    }
    maybe_finish(x);
}

/* exec_exited once runc exec exited and the process closed its output,
 * after the reply that handed out its ends. */
static void maybe_finish(mon_exec *x)
{
    if (!x->exited || x->reply)
        return;
    if (x->watch_w[0] || x->watch_w[1]) {
        if (!x->drain_timer)
            x->drain_timer = sl_mloop_timer(x->m->loop, SL_MON_DRAIN_MS, drain_cb, x);
        return;
    }
    mon *m = x->m;
    /* the event first: it ends the exec's session (its client waits) */
    mon_event(m, json_pack("{s:s, s:s, s:i}", "type", "exec_exited", "exec_id", x->id, "exit_code",
                           x->exit_code));
    mon_log(MON_INFO, "exec %s exited %d", x->id, x->exit_code);
    exec_free(x);
    mon_shutdown_check(m);
}

static void hup_cb(sl_mwatch *w, uint32_t events, void *data)
{
    (void)events;
    mon_exec *x = data;
    int i = w == x->watch_w[0] ? 0 : 1;
    sl_mwatch_free(w);
    x->watch_w[i] = NULL;
    maybe_finish(x);
}

static pid_t exec_pid(mon_exec *x);

/* The exec did not start (or its ends cannot be handed out): the reply is
 * the error; a process that runs anyway is killed. */
static void fail(mon_exec *x, const char *why)
{
    mon *m = x->m;
    if ((x->runc_ok || x->runc_killed) && exec_pid(x) > 0) {
        kill(-x->pid, SIGKILL);
        kill(x->pid, SIGKILL);
    }
    mon_reply_err(m, x->reply, "%s", why);
    x->reply = NULL;
    exec_free(x);
    mon_shutdown_check(m);
}

/* Sends sluiced its ends: the pipes, or a dup of the PTY master. */
static void maybe_reply(mon_exec *x)
{
    if (!x->reply || !x->runc_ok || (x->tty && x->master < 0))
        return;
    static const char *const all[3] = {"stdin", "stdout", "stderr"};
    int fds[3];
    const char *names[3];
    size_t n = 0;
    if (x->tty) {
        fds[n] = fcntl(x->master, F_DUPFD_CLOEXEC, 3), names[n++] = "tty";
        if (fds[0] < 0) {
            char why[160];
            snprintf(why, sizeof(why), "exec %s: %s", x->id, strerror(errno));
            fail(x, why);
            return;
        }
    }
    for (int i = 0; i < 3; i++)
        if (x->client[i] >= 0)
            fds[n] = x->client[i], names[n++] = all[i], x->client[i] = -1;
    mon_reply(x->m, x->reply, NULL, fds, names, n);
    x->reply = NULL;
    maybe_finish(x);
}

/* runc's reason from its log (the last msg="..."), else its other output. */
static void runc_reason(const mon_exec *x, int status, const char *err, char *out, size_t outlen)
{
    char text[SL_MON_ERR_TEXT] = "";
    SL_AUTOFREE char *log = x->dir ? sl_path_join(x->dir, "runc.log") : NULL;
    int fd = x->log_fd >= 0 ? x->log_fd : log ? open(log, O_RDONLY | O_CLOEXEC) : -1;
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0) {
        off_t off = st.st_size > (off_t)sizeof(text) - 1 ? st.st_size - (off_t)sizeof(text) + 1 : 0;
        ssize_t n = pread(fd, text, sizeof(text) - 1, off);
        text[n > 0 ? n : 0] = '\0';
    }
    if (fd >= 0 && fd != x->log_fd)
        close(fd);
    mon_runc_message(text[0] ? text : err, out, outlen);
    if (!out[0])
        snprintf(out, outlen, "runc exec exited %d", mon_exit_code(status));
}

static void admit_next(mon *m);

static void runc_ended(mon *m, int status, const char *err, mon_exec *x)
{
    if (x->runc_killed) {
        if (exec_pid(x) <= 0 && x->runc_start)
            mon_exec_sweep(m, x->ctr_id, x->runc_start, x->id);
        char why[256];
        snprintf(why, sizeof(why), "exec %s was cancelled while runc exec started it", x->id);
        mon_log(MON_INFO, "%s", why);
        fail(x, why);
        return;
    }
    if (status != 0 || exec_pid(x) <= 0) { /* runc could not start the process */
        /* killed by another hand (the OOM killer in the container's
         * memory cgroup, which a starter joins): what it may have started */
        if (WIFSIGNALED(status) && exec_pid(x) <= 0 && x->runc_start)
            mon_exec_sweep(m, x->ctr_id, x->runc_start, x->id);
        char reason[SL_MON_ERR_TEXT], why[SL_MON_ERR_TEXT + 200];
        runc_reason(x, status, err, reason, sizeof(reason));
        mon_log(MON_INFO, "exec %s in %s did not start: %s", x->id, x->ctr_id, reason);
        snprintf(why, sizeof(why), "failed to start exec \"%s\": OCI runtime exec failed: %s",
                 x->id, reason);
        fail(x, why);
        return;
    }
    x->runc_ok = true;
    close_scratch_fds(x); /* the pid is read: a live session holds no memfd */
    if (x->tty && x->master < 0 && !x->console) {
        fail(x, "no terminal came on the console socket");
        return;
    }
    maybe_reply(x);
    int st; /* the process is ours to reap now */
    if (mon_unclaimed_take(m, x->pid, &st))
        mon_exec_reaped(m, x->pid, st);
}

/* runc exec exited: its start slot goes to the next queued exec. */
static void exec_done(mon *m, int status, const char *err, void *data)
{
    mon_exec *x = data;
    x->job = NULL;
    runc_ended(m, status, err, x);
    mon_exec_sweep_deferred(m);
    admit_next(m);
}

bool mon_exec_reaped(mon *m, pid_t pid, int status)
{
    for (mon_exec *x = m->execs; x; x = x->next) {
        if (!x->exited && !x->job && x->pid == pid) {
            x->exited = true;
            x->exit_code = mon_exit_code(status);
            maybe_finish(x);
            return true;
        }
    }
    return false;
}

static int watch_hup(mon_exec *x, int i, int fd)
{
    x->watch_fd[i] = fd;
    /* no read interest: only HUP (writers gone) is reported */
    x->watch_w[i] = sl_mloop_watch(x->m->loop, fd, EPOLLRDHUP, hup_cb, x);
    return x->watch_w[i] ? 0 : -1;
}

static void console_cb(mon *m, int master, void *data)
{
    (void)m;
    mon_exec *x = data;
    mon_console_free(x->console);
    x->console = NULL;
    if (master < 0) {
        if (!x->job && x->reply) /* else exec_done reports runc's error */
            fail(x, "no terminal came on the console socket");
        return;
    }
    x->master = master;
    if (x->want_w > 0 && x->want_h > 0)
        mon_set_winsize(master, x->want_w, x->want_h);
    if (watch_hup(x, 0, master) < 0) {
        if (x->job)
            kill(mon_job_pid(x->job), SIGKILL); /* exec_done reports it */
        else
            fail(x, "cannot watch the terminal");
        return;
    }
    maybe_reply(x);
}

/* TERM=xterm in a process's env, replacing any TERM: what containerd gives
 * every exec with a terminal (oci.WithEnv in its execInternal). */
static void set_term(json_t *p)
{
    json_t *env = json_object_get(p, "env");
    if (!json_is_array(env)) {
        env = json_array();
        json_object_set_new(p, "env", env);
    }
    for (size_t i = json_array_size(env); i-- > 0;) {
        const char *v = json_string_value(json_array_get(env, i));
        if (v && !strncmp(v, "TERM=", 5))
            json_array_remove(env, i);
    }
    json_array_append_new(env, json_string("TERM=xterm"));
}

/* The bundle's process with args, terminal and consoleSize replaced (and
 * TERM set for a terminal). */
static char *process_json(const char *bundle, const json_t *cmd, bool tty, int w, int h,
                          sl_error *e)
{
    json_t *cfg = mon_bundle_config(bundle, e);
    if (!cfg)
        return NULL;
    json_t *p = json_deep_copy(json_object_get(cfg, "process"));
    json_decref(cfg);
    if (!json_is_object(p)) {
        json_decref(p);
        return sl_error_set(e, EINVAL, "%s/config.json has no process object", bundle), NULL;
    }
    json_object_set_new(p, "args", json_deep_copy(cmd));
    json_object_set_new(p, "terminal", json_boolean(tty));
    if (tty)
        set_term(p);
    if (tty && w > 0 && h > 0)
        json_object_set_new(p, "consoleSize", json_pack("{s:i, s:i}", "height", h, "width", w));
    else
        json_object_del(p, "consoleSize");
    char *out = json_dumps(p, JSON_COMPACT);
    json_decref(p);
    if (!out)
        sl_error_set(e, ENOMEM, "process.json");
    return out;
}

typedef struct exec_args {
    const char *id;
    mon_ctr *c;
    const json_t *cmd;
    bool tty, in, out, err;
    int64_t w, h;
    int64_t max_concurrent, queue_max, stdin_pipe_size;
    bool native;
} exec_args;

static const char *exec_parse(mon *m, const json_t *msg, exec_args *a)
{
    a->id = sl_mon_str(msg, "exec_id");
    a->c = mon_ctr_find(m, sl_mon_str(msg, "container_id"));
    a->cmd = json_object_get(msg, "cmd");
    if (!sl_mon_valid_id(a->id))
        return "invalid exec_id";
    if (sl_mon_bool(msg, "tty", false, &a->tty) || sl_mon_bool(msg, "stdin", false, &a->in) ||
        sl_mon_bool(msg, "stdout", false, &a->out) || sl_mon_bool(msg, "stderr", false, &a->err))
        return "tty, stdin, stdout and stderr must be booleans";
    if (sl_mon_int(msg, "width", 0, 65535, 0, &a->w) ||
        sl_mon_int(msg, "height", 0, 65535, 0, &a->h))
        return "width and height must be 0..65535";
    if (sl_mon_int(msg, "max_concurrent", 1, SL_MON_EXEC_MAX_CONCURRENT_LIMIT,
                   SL_MON_EXEC_MAX_CONCURRENT, &a->max_concurrent) ||
        sl_mon_int(msg, "queue_max", 0, SL_MON_EXEC_QUEUE_MAX_LIMIT, SL_MON_EXEC_QUEUE_MAX,
                   &a->queue_max))
        return "max_concurrent must be 1..1024 and queue_max 0..4096";
    if (sl_mon_int(msg, "stdin_pipe_size", SL_MON_EXEC_STDIN_PIPE_SIZE_MIN,
                   SL_MON_EXEC_STDIN_PIPE_SIZE_MAX, SL_MON_EXEC_STDIN_PIPE_SIZE,
                   &a->stdin_pipe_size))
        return "stdin_pipe_size must be 4096..1048576";
    const char *mode = sl_mon_str(msg, "exec_mode");
    if (mode && strcmp(mode, "native") && strcmp(mode, "runc"))
        return "exec_mode must be native or runc";
    a->native = mode && !strcmp(mode, "native");
    size_t n = json_array_size(a->cmd);
    if (!json_is_array(a->cmd) || n == 0 || n > EXEC_MAX_ARGS)
        return "cmd must be a non-empty array";
    for (size_t i = 0; i < n; i++)
        if (!json_is_string(json_array_get(a->cmd, i)))
            return "cmd must be an array of strings";
    if (a->tty && a->err)
        return "a tty exec has no separate stderr";
    if (!a->c)
        return "no such container";
    if (a->c->state != CTR_RUNNING || a->c->reaped || a->c->removing)
        return "container is not running";
    if (exec_find(m, a->id))
        return "exec exists";
    return NULL;
}

typedef struct exec_counts {
    unsigned all, starting, queued;
} exec_counts;

static exec_counts counts(const mon *m)
{
    exec_counts n = {0};
    for (const mon_exec *x = m->execs; x; x = x->next) {
        n.all++;
        n.starting += x->job != NULL;
        n.queued += x->queued;
    }
    return n;
}

/* The exec admitted first among those that wait. */
static mon_exec *oldest_queued(mon *m)
{
    mon_exec *best = NULL;
    for (mon_exec *x = m->execs; x; x = x->next)
        if (x->queued && (!best || x->seq < best->seq))
            best = x;
    return best;
}

/* Pipes of a non-tty exec: child[] for runc exec, client[] for sluiced.
 * The stdin pipe gets the request's size; the kernel may refuse it (over
 * fs.pipe-user-pages-hard without CAP_SYS_RESOURCE), and then the exec runs
 * with the default pipe and the monitor's log says so. */
static int exec_pipes(mon_exec *x, int child[3], int client[3])
{
    mon *m = x->m;
    const bool *want = x->want;
    for (int i = 0; i < 3; i++) {
        int p[2];
        child[i] = m->devnull;
        client[i] = -1;
        if (!want[i])
            continue;
        if (pipe2(p, O_CLOEXEC) < 0)
            return -1;
        child[i] = i == 0 ? p[0] : p[1];
        client[i] = i == 0 ? p[1] : p[0];
        if (i == 0 && fcntl(p[1], F_SETPIPE_SZ, x->stdin_pipe_size) < 0)
            mon_log(MON_WARN, "exec %s: stdin pipe of %d bytes (exec-stdin-pipe-size): %s", x->id,
                    x->stdin_pipe_size, strerror(errno));
    }
    return 0;
}

static void close_fds(mon *m, int *fds, int n)
{
    for (int i = 0; i < n; i++)
        if (fds[i] >= 0 && fds[i] != m->devnull)
            close(fds[i]);
}

static mon_exec *exec_new(mon *m, const exec_args *a, sl_error *e)
{
    mon_exec *x = calloc(1, sizeof(*x));
    if (!x)
        return sl_error_set(e, ENOMEM, "exec"), NULL;
    x->m = m;
    snprintf(x->id, sizeof(x->id), "%s", a->id);
    snprintf(x->ctr_id, sizeof(x->ctr_id), "%s", a->c->id);
    x->tty = a->tty;
    x->want[0] = a->in, x->want[1] = a->out, x->want[2] = a->err;
    x->max_concurrent = (unsigned)a->max_concurrent;
    x->stdin_pipe_size = (int)a->stdin_pipe_size;
    x->native = a->native;
    x->master = x->watch_fd[0] = x->watch_fd[1] = -1;
    x->client[0] = x->client[1] = x->client[2] = -1;
    x->pid_fd = x->log_fd = -1;
    x->cmd = json_incref((json_t *)a->cmd);
    x->want_w = (int)a->w, x->want_h = (int)a->h;
    x->next = m->execs;
    m->execs = x;
    return x;
}

/* A scratch file for runc: no fsync, unlike the records that must survive
 * (a queue of probes would wait on the disk). */
static int write_scratch(const char *path, const char *text, sl_error *e)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    size_t len = strlen(text), off = 0;
    while (fd >= 0 && off < len) {
        ssize_t n = write(fd, text + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    int err = errno;
    if (fd >= 0)
        close(fd);
    if (fd < 0 || off < len)
        return sl_error_set(e, err, "cannot write %s", path);
    return 0;
}

/* The exec's container, if it still runs. */
static mon_ctr *exec_ctr(mon_exec *x, sl_error *e)
{
    mon_ctr *c = mon_ctr_find(x->m, x->ctr_id);
    if (!c || c->state != CTR_RUNNING || c->reaped || c->removing || c->pid <= 0)
        return sl_error_set(e, ESRCH, "container is not running"), NULL;
    return c;
}

/* runc exec's dir (its pid file named) with its process.json, made when
 * it is about to start. */
static int exec_prepare(mon_exec *x, sl_error *e)
{
    mon_ctr *c = exec_ctr(x, e);
    if (!c)
        return -1;
    SL_AUTOFREE char *base = sl_path_join(x->m->run_dir, "exec");
    x->dir = base ? sl_path_join(base, x->id) : NULL;
    x->pid_file = x->dir ? sl_path_join(x->dir, "pid") : NULL;
    SL_AUTOFREE char *proc = x->dir ? sl_path_join(x->dir, "process.json") : NULL;
    SL_AUTOFREE char *pj = NULL;
    if (!x->pid_file || !proc)
        return sl_error_set(e, ENOMEM, "exec dir"), -1;
    if (sl_mkdir_p(x->dir, 0700, e) < 0 ||
        !(pj = process_json(c->bundle, x->cmd, x->tty, x->want_w, x->want_h, e)))
        return -1;
    return write_scratch(proc, pj, e);
}

/* The native starter's pid and log: memfds, read with pread once it
 * exited (or, for its pid, earlier by kill_exec and the sweep). */
static int open_scratch_fds(mon_exec *x, sl_error *e)
{
    x->pid_fd = memfd_create("sluice-exec-pid", MFD_CLOEXEC);
    x->log_fd = x->pid_fd >= 0 ? memfd_create("sluice-exec-log", MFD_CLOEXEC) : -1;
    if (x->log_fd >= 0)
        return 0;
    sl_error_set(e, errno, "memfd for the exec's pid and log");
    close_scratch_fds(x);
    return -1;
}

/* tty: a connection to the exec's console socket for the starter, which
 * reaches it before it enters the container's mount namespace. */
static int console_conn(mon_exec *x, sl_error *e)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", mon_console_path(x->console));
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        sl_error_set(e, errno, "console socket");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* The native path's starter for x (mon_nexec.h): NULL with e->code 0 when
 * the path does not cover the exec (then runc starts it). */
static mon_job *spawn_native(mon_exec *x, const int child[3], sl_error *e)
{
    mon_ctr *c = exec_ctr(x, e);
    if (!c)
        return e->code = e->code ? e->code : ESRCH, NULL;
    mon_nexec_plan *p =
        mon_nexec_plan_new(c->bundle, c->pid, x->cmd, x->tty, x->want_w, x->want_h, e);
    if (!p)
        return NULL;
    int ok = open_scratch_fds(x, e);
    int con_fd = ok == 0 && x->tty ? console_conn(x, e) : -1;
    pid_t pid = -1;
    if (ok == 0 && (!x->tty || con_fd >= 0))
        pid = mon_nexec_spawn(p, child, con_fd, x->pid_fd, x->log_fd, e);
    if (con_fd >= 0)
        close(con_fd);
    mon_nexec_plan_free(p);
    if (pid < 0) {
        close_scratch_fds(x); /* runc, if it falls back, has its pid file */
        return NULL;
    }
    mon_job *j = mon_job_add(x->m, pid, exec_done, x, e);
    if (!j)
        kill(pid, SIGKILL); /* reaped as an unknown child */
    return j;
}

static mon_job *spawn_runc(mon_exec *x, const int child[3], sl_error *e);

/* Native when asked and covered, else runc (which then needs its
 * process.json). */
static mon_job *spawn(mon_exec *x, const int child[3], sl_error *e)
{
    if (x->native) {
        mon_job *j = spawn_native(x, child, e);
        if (j || e->code)
            return j;
        mon_log(MON_DEBUG, "exec %s in %s: runc exec, not native: %s", x->id, x->ctr_id, e->msg);
        x->native = false;
        if (exec_prepare(x, e) < 0)
            return NULL;
    }
    return spawn_runc(x, child, e);
}

static mon_job *spawn_runc(mon_exec *x, const int child[3], sl_error *e)
{
    SL_AUTOFREE char *proc = sl_path_join(x->dir, "process.json");
    SL_AUTOFREE char *log = sl_path_join(x->dir, "runc.log");
    /* runc's reason when it cannot start the process: its stderr is the
     * process's, so it is read from its log instead. */
    const char *args[16] = {"--log", log, "exec", "--process", proc, "--pid-file", x->pid_file};
    int n = 7;
    /* Detached: runc exits once the process runs, so no runc (about 7 MiB)
     * is kept per session, and the process's exit reaches us (its
     * subreaper) at once instead of after runc's own teardown. Pipes pass
     * straight through to the process. */
    args[n++] = "--detach";
    if (x->console) {
        args[n++] = "--console-socket";
        args[n++] = mon_console_path(x->console);
    }
    args[n++] = x->ctr_id;
    args[n] = NULL;
    return mon_runc(x->m, args, child, exec_done, x, e);
}

/* Starts runc exec for x (admitted): pipes or console socket, then runc.
 * On failure the reply is the error and x is gone. */
static void launch(mon_exec *x)
{
    mon *m = x->m;
    sl_error e = {0};
    int child[3] = {-1, -1, -1}, client[3] = {-1, -1, -1};
    x->queued = false;
    bool ready = x->native ? exec_ctr(x, &e) != NULL : exec_prepare(x, &e) == 0;
    if (ready && x->tty) {
        child[0] = m->devnull; /* runc's own errors go to the capture */
        if ((x->console = mon_console_new(m, console_cb, x, &e)))
            x->job = spawn(x, child, &e);
    } else if (ready && exec_pipes(x, child, client) == 0) {
        x->job = spawn(x, child, &e);
    } else if (ready) {
        sl_error_set(&e, errno, "exec pipes");
    }
    close_fds(m, child, 3);
    if (!x->job) {
        close_fds(m, client, 3);
        char why[sizeof(e.msg) + 16];
        snprintf(why, sizeof(why), "exec: %s", e.msg);
        fail(x, why);
        return;
    }
    mon_log(MON_INFO, "exec %s in %s: %s pid %d", x->id, x->ctr_id, x->native ? "starter" : "runc",
            (int)mon_job_pid(x->job));
    /* not reaped before we return to the loop: its /proc entry is there */
    if (mon_proc_starttime(mon_job_pid(x->job), &x->runc_start) < 0)
        x->runc_start = 0;
    for (int i = 0; i < 3; i++)
        x->client[i] = client[i];
    for (int i = 1; i < 3; i++)
        if (client[i] >= 0)
            watch_hup(x, i - 1, fcntl(client[i], F_DUPFD_CLOEXEC, 3));
}

/* Starts queued execs while their limit of starts at once allows. */
static void admit_next(mon *m)
{
    mon_exec *x;
    while (!m->shutting_down && (x = oldest_queued(m)) && counts(m).starting < x->max_concurrent)
        launch(x);
}

/* Why the exec is refused now (a limit is reached), or NULL; *now: it
 * may start at once rather than wait. */
static const char *admission(mon *m, const exec_args *a, bool *now, char *buf, size_t len)
{
    exec_counts n = counts(m);
    *now = n.queued == 0 && n.starting < a->max_concurrent;
    if (n.all >= SL_MON_MAX_EXECS)
        return snprintf(buf, len, "too many execs in this pod (%u)", n.all), buf;
    if (*now || n.queued < a->queue_max)
        return NULL;
    snprintf(buf, len,
             "too many execs in this pod: %u wait to start, the limit exec-queue-max is %lld "
             "(%u start at once, exec-max-concurrent-per-pod %lld)",
             n.queued, (long long)a->queue_max, n.starting, (long long)a->max_concurrent);
    return buf;
}

void mon_exec_start(mon *m, mon_req *r, const json_t *msg)
{
    static uint64_t next_seq;
    exec_args a = {0};
    const char *why = exec_parse(m, msg, &a);
    if (why) {
        mon_reply_err(m, r, "%s", why);
        return;
    }
    char buf[SL_MON_ERR_TEXT];
    bool now;
    if ((why = admission(m, &a, &now, buf, sizeof(buf)))) {
        mon_reply_err_code(m, r, SL_MON_ERR_EXHAUSTED, "%s", why);
        return;
    }
    sl_error e = {0};
    mon_exec *x = exec_new(m, &a, &e);
    if (!x) {
        mon_reply_err(m, r, "exec: %s", e.msg);
        return;
    }
    x->conn = r->conn;
    x->reply = r; /* once runc exec exited well: maybe_reply */
    x->seq = ++next_seq;
    if (now) {
        launch(x);
        return;
    }
    x->queued = true;
    mon_log(MON_DEBUG, "exec %s in %s waits for a start slot", x->id, x->ctr_id);
}

static pid_t exec_pid(mon_exec *x)
{
    if (x->pid > 0)
        return x->pid;
    char buf[32], *text = NULL;
    size_t len = 0;
    if (x->pid_fd >= 0) { /* native: its starter's memfd */
        ssize_t n = pread(x->pid_fd, buf, sizeof(buf) - 1, 0);
        len = n > 0 ? (size_t)n : 0;
        buf[len] = '\0';
        text = buf;
    } else if (x->pid_file) { /* runc's pid file; text stays NULL if unread */
        (void)sl_read_file(x->pid_file, 64, &text, &len, NULL);
    }
    long v = text ? strtol(text, NULL, 10) : 0;
    x->pid = v > 0 && v <= INT_MAX ? (pid_t)v : 0;
    if (text != buf)
        free(text);
    return x->pid;
}

void mon_exec_pids_refresh(mon *m)
{
    for (mon_exec *x = m->execs; x; x = x->next)
        if (!x->queued && x->pid <= 0)
            exec_pid(x);
}

static void kill_cb(void *data);

/* SIGKILL the exec'd process and its process group: runc makes it a
 * session leader, so children it left in the background go too, also once
 * it exited itself (the monitor still waits for their output then). Before
 * its pid file exists, retry. */
static void kill_exec(mon_exec *x)
{
    if (x->job && !x->runc_killed) { /* runc_ended kills what it may have started */
        x->runc_killed = true;
        kill(mon_job_pid(x->job), SIGKILL);
    }
    if (x->exited && x->pid > 0) {
        kill(-x->pid, SIGKILL);
        return;
    }
    if (x->exited)
        return;
    if (exec_pid(x) > 0) {
        kill(-x->pid, SIGKILL);
        kill(x->pid, SIGKILL);
        return;
    }
    if (!x->kill_timer)
        x->kill_timer = sl_mloop_timer(x->m->loop, SL_MON_KILL_RETRY_MS, kill_cb, x);
}

static void kill_cb(void *data)
{
    mon_exec *x = data;
    x->kill_timer = NULL;
    kill_exec(x);
}

/* A queued exec that is killed never starts: its reply is the error. */
static void drop_queued(mon_exec *x)
{
    char why[SL_MON_MAX_ID + 64];
    snprintf(why, sizeof(why), "exec %s was cancelled before it started", x->id);
    mon_log(MON_INFO, "%s", why);
    fail(x, why);
}

/* The first queued exec of ctr_id (NULL: any) asked for over conn (0:
 * any). Looked up afresh after each drop: a reply may end other execs. */
static mon_exec *queued_of(mon *m, const char *ctr_id, uint64_t conn)
{
    for (mon_exec *x = m->execs; x; x = x->next)
        if (x->queued && (!ctr_id || !strcmp(x->ctr_id, ctr_id)) && (!conn || x->conn == conn))
            return x;
    return NULL;
}

void mon_exec_kill(mon *m, mon_req *r, const json_t *msg)
{
    mon_exec *x = exec_find(m, sl_mon_str(msg, "exec_id"));
    if (x && x->queued)
        drop_queued(x);
    else if (x)
        kill_exec(x);
    mon_reply(m, r, NULL, NULL, NULL, 0);
}

void mon_exec_kill_all(mon *m, const char *ctr_id)
{
    for (mon_exec *q; (q = queued_of(m, ctr_id, 0));)
        drop_queued(q);
    for (mon_exec *x = m->execs; x; x = x->next)
        if (!ctr_id || strcmp(x->ctr_id, ctr_id) == 0)
            kill_exec(x);
}

void mon_exec_conn_gone(mon *m, uint64_t conn)
{
    for (mon_exec *q; conn && (q = queued_of(m, NULL, conn));)
        drop_queued(q);
    for (mon_exec *x = m->execs; x; x = x->next) {
        if (x->conn != conn || !conn)
            continue;
        mon_log(MON_INFO, "exec %s: its connection closed, killing it", x->id);
        kill_exec(x);
    }
}

void mon_resize(mon *m, mon_req *r, const json_t *msg)
{
    int64_t w, h;
    if (sl_mon_int(msg, "width", 0, 65535, 0, &w) || sl_mon_int(msg, "height", 0, 65535, 0, &h)) {
        mon_reply_err(m, r, "width and height must be 0..65535");
        return;
    }
    const char *exec_id = sl_mon_str(msg, "exec_id"), *session = sl_mon_str(msg, "session");
    const char *err = NULL;
    mon_exec *x = exec_find(m, exec_id);
    if (exec_id && !x)
        err = "no such exec";
    else if (x && !x->tty)
        err = "the exec has no terminal";
    else if (!x && !session)
        err = "resize needs exec_id or session";
    if (err || w == 0 || h == 0) { /* a 0-sized window is ignored */
        if (err)
            mon_reply_err(m, r, "%s", err);
        else
            mon_reply(m, r, NULL, NULL, NULL, 0);
        return;
    }
    if (x) {
        x->want_w = (int)w;
        x->want_h = (int)h;
        if (x->master >= 0)
            mon_set_winsize(x->master, (int)w, (int)h);
    } else if (mon_attach_resize(m, session, (int)w, (int)h, &err) < 0) {
        mon_reply_err(m, r, "%s", err);
        return;
    }
    mon_reply(m, r, NULL, NULL, NULL, 0);
}

void mon_exec_release_all(mon *m)
{
    while (m->execs)
        exec_free(m->execs);
}
