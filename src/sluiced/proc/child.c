#include "proc/child.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bytes asked from the pipe per read (the buffer grows towards max). */
#define READ_CHUNK 65536

typedef enum end_kind { END_NATURAL, END_TIMEOUT, END_TOO_MUCH, END_KILLED } end_kind;

struct sl_child {
    uv_process_t proc;
    uv_pipe_t in, out;
    uv_timer_t timer;
    uv_write_t wreq;
    int handles; /* still open */
    char *what, *timeout_key;
    uint32_t timeout_ms;
    char *input;
    size_t input_len;
    char *buf;
    size_t len, cap, max;
    bool exited, eof, finished;
    end_kind end;
    int64_t exit_status;
    int term_signal;
    sl_child_done_fn done;
    void *arg;
};

static void free_child(sl_child *c)
{
    free(c->what);
    free(c->timeout_key);
    free(c->input);
    free(c->buf);
    free(c);
}

static void closed_cb(uv_handle_t *h)
{
    sl_child *c = h->data;
    if (--c->handles == 0)
        free_child(c);
}

/* Closes h unless it was never initialised (data unset) or is closing. */
static void close_handle(uv_handle_t *h)
{
    if (h->data && !uv_is_closing(h))
        uv_close(h, closed_cb);
}

static void close_all(sl_child *c)
{
    close_handle((uv_handle_t *)&c->timer);
    close_handle((uv_handle_t *)&c->in);
    close_handle((uv_handle_t *)&c->out);
    close_handle((uv_handle_t *)&c->proc);
}

static void kill_group(sl_child *c)
{
    if (c->exited && c->eof)
        return; /* nothing of it is left to kill */
    pid_t pid = c->proc.pid;
    if (pid > 0) {
        kill(-pid, SIGKILL); /* its session (setsid): what it started too */
        if (!c->exited)
            kill(pid, SIGKILL);
    }
}

/* The message reads without an errno text; the errno is kept for callers. */
static void fill_error(const sl_child *c, sl_error *e)
{
    int err = 0;
    switch (c->end) {
    case END_TIMEOUT:
        err = ETIMEDOUT;
        sl_error_set(e, 0, "%s did not finish within %u ms (%s): killed", c->what, c->timeout_ms,
                     c->timeout_key ? c->timeout_key : "timeout");
        break;
    case END_TOO_MUCH:
        err = EFBIG;
        sl_error_set(e, 0, "%s printed more than %zu bytes: killed", c->what, c->max);
        break;
    case END_KILLED:
        err = ECANCELED;
        sl_error_set(e, 0, "%s: killed", c->what);
        break;
    case END_NATURAL:
        sl_error_clear(e);
        break;
    }
    e->errnum = err;
}

static void finish(sl_child *c)
{
    if (c->finished || !c->exited || !c->eof)
        return;
    c->finished = true;
    uv_timer_stop(&c->timer);
    sl_child_result r = {.ran = true,
                         .timed_out = c->end == END_TIMEOUT,
                         .too_much = c->end == END_TOO_MUCH,
                         .exit_status = c->exit_status,
                         .term_signal = c->term_signal,
                         .output = c->buf ? c->buf : "",
                         .output_len = c->len,
                         .pid = c->proc.pid};
    fill_error(c, &r.error);
    if (c->buf)
        c->buf[c->len] = '\0';
    c->done(c->arg, &r);
    close_all(c);
}

/* Ends the wait for output: after a kill, a grandchild that escaped the
 * group could hold the pipe open for ever. */
static void stop_output(sl_child *c)
{
    if (!c->eof) {
        uv_read_stop((uv_stream_t *)&c->out);
        c->eof = true;
    }
}

static void end_early(sl_child *c, end_kind why)
{
    if (c->finished || c->end != END_NATURAL)
        return;
    c->end = why;
    kill_group(c);
    stop_output(c);
    finish(c); /* when it had exited already; else at its exit */
}

static void exit_cb(uv_process_t *p, int64_t status, int sig)
{
    sl_child *c = p->data;
    c->exited = true;
    c->exit_status = status;
    c->term_signal = sig;
    finish(c);
}

static void alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    (void)hint;
    sl_child *c = h->data;
    /* Room for max + 1 bytes, so printing more than max is seen. */
    size_t want = c->len + READ_CHUNK;
    if (want > c->max + 1)
        want = c->max + 1;
    if (want > c->cap) {
        char *nb = realloc(c->buf, want + 1);
        if (nb) {
            c->buf = nb;
            c->cap = want;
        }
    }
    *b = uv_buf_init(c->buf ? c->buf + c->len : NULL, (unsigned)(c->cap - c->len));
}

static void read_cb(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    (void)b;
    sl_child *c = s->data;
    if (n > 0) {
        c->len += (size_t)n;
        if (c->len > c->max) {
            c->len = c->max;
            end_early(c, END_TOO_MUCH);
        }
        return;
    }
    if (n == 0)
        return;
    stop_output(c); /* EOF, or an error: either way nothing more comes */
    finish(c);
}

static void write_cb(uv_write_t *w, int status)
{
    (void)status; /* a child that does not read its input gets EPIPE: its business */
    sl_child *c = w->data;
    close_handle((uv_handle_t *)&c->in);
}

static void timer_cb(uv_timer_t *t)
{
    end_early(t->data, END_TIMEOUT);
}

static int copy_opts(sl_child *c, const sl_child_opts *o)
{
    c->what = strdup(o->what ? o->what : o->file);
    c->timeout_key = o->timeout_key ? strdup(o->timeout_key) : NULL;
    c->timeout_ms = o->timeout_ms;
    c->max = o->max_output;
    c->input_len = o->input ? o->input_len : 0;
    c->input = o->input ? malloc(c->input_len + 1) : NULL;
    if (c->input)
        memcpy(c->input, o->input, c->input_len);
    if (!c->what || (o->timeout_key && !c->timeout_key) || (o->input && !c->input))
        return -1;
    return 0;
}

static void init_handle(sl_child *c, uv_handle_t *h)
{
    h->data = c;
    c->handles++;
}

/* uv_spawn with stdout (and stderr when merged) on a pipe we read. */
static int spawn(uv_loop_t *loop, sl_child *c, const sl_child_opts *o, sl_error *e)
{
    uv_file fds[2];
    int rc = uv_pipe(fds, 0, 0);
    if (rc < 0)
        return sl_error_set(e, -rc, "%s: pipe", c->what);
    uv_stdio_container_t io[3];
    io[0].flags = o->input ? UV_CREATE_PIPE | UV_READABLE_PIPE : UV_IGNORE;
    io[0].data.stream = (uv_stream_t *)&c->in;
    io[1].flags = UV_INHERIT_FD;
    io[1].data.fd = fds[1];
    io[2].flags = UV_INHERIT_FD;
    io[2].data.fd = o->merge_stderr ? fds[1] : 2;
    uv_process_options_t po = {.exit_cb = exit_cb,
                               .file = o->file,
                               .args = (char **)o->argv,
                               .env = (char **)o->env,
                               .flags = UV_PROCESS_DETACHED,
                               .stdio_count = 3,
                               .stdio = io};
    if (o->input) {
        uv_pipe_init(loop, &c->in, 0);
        init_handle(c, (uv_handle_t *)&c->in);
    }
    uv_pipe_init(loop, &c->out, 0);
    init_handle(c, (uv_handle_t *)&c->out);
    uv_timer_init(loop, &c->timer);
    init_handle(c, (uv_handle_t *)&c->timer);
    rc = uv_spawn(loop, &c->proc, &po);
    init_handle(c, (uv_handle_t *)&c->proc); /* closed even when the spawn failed */
    close(fds[1]);
    if (rc < 0) {
        close(fds[0]);
        return sl_error_set(e, -rc, "cannot run %s (%s)", c->what, o->file);
    }
    uv_pipe_open(&c->out, fds[0]);
    return 0;
}

int sl_child_start(uv_loop_t *loop, const sl_child_opts *o, sl_child_done_fn done, void *arg,
                   sl_child **out, sl_error *e)
{
    sl_child *c = calloc(1, sizeof(*c));
    if (!c || copy_opts(c, o) < 0) {
        if (c)
            free_child(c);
        return sl_error_set(e, ENOMEM, "run %s", o->what ? o->what : o->file);
    }
    c->done = done;
    c->arg = arg;
    if (spawn(loop, c, o, e) < 0) {
        c->finished = true; /* no callback */
        if (c->handles)
            close_all(c); /* the last close frees it */
        else
            free_child(c);
        return -1;
    }
    uv_read_start((uv_stream_t *)&c->out, alloc_cb, read_cb);
    if (c->input) {
        c->wreq.data = c;
        uv_buf_t b = uv_buf_init(c->input, (unsigned)c->input_len);
        if (uv_write(&c->wreq, (uv_stream_t *)&c->in, &b, 1, write_cb) < 0)
            close_handle((uv_handle_t *)&c->in);
    }
    if (c->timeout_ms)
        uv_timer_start(&c->timer, timer_cb, c->timeout_ms, 0);
    if (out)
        *out = c;
    return 0;
}

void sl_child_kill(sl_child *c)
{
    end_early(c, END_KILLED);
}

const char *sl_child_status_text(const sl_child_result *r, char *buf, size_t n)
{
    if (r->term_signal)
        snprintf(buf, n, "was killed by signal %d (%s)", r->term_signal, strsignal(r->term_signal));
    else
        snprintf(buf, n, "exited with status %lld", (long long)r->exit_status);
    return buf;
}
