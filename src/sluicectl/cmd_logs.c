/* logs: print a container's CRI log file (protocol notes §11), as crictl
 * does through the kubelet's reader: the file named by
 * ContainerStatus.log_path is read on this host, lines that are not CRI
 * records are skipped, --tail counts lines from the end, --since drops
 * older records, --limit-bytes stops the output, -t prefixes the
 * kubelet's nine-digit timestamps. With -f it is followed (rotation
 * included) until the container stops running. Memory stays bounded: the
 * file is read in chunks and a record longer than LOGS_MAX_LINE is cut. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmd_util.h"
#include "cri_log.h"

#define LOGS_POLL_MS 100             /* how often a followed file is checked */
#define LOGS_STATUS_EVERY_MS 1000    /* how often the container's state is checked */
#define LOGS_MAX_LINE (1024u * 1024) /* a record longer than this is cut */
#define LOGS_READ_CHUNK 65536u

static const char logs_help[] =
    "Usage: sluicectl logs [FLAGS] CONTAINER-ID\n"
    "\n"
    "Prints a container's log (stdout records to stdout, stderr records to\n"
    "stderr), read from the CRI log file the runtime writes. Lines that are not\n"
    "CRI records are skipped, as the kubelet does.\n"
    "\n"
    "  -f, --follow          keep printing new lines until the container stops\n"
    "  -p, --previous        the log of the container's previous attempt\n"
    "  -r, --reopen          ask the runtime to reopen the log file first\n"
    "      --tail N          only the last N lines (P records join their F record;\n"
    "                        default -1: all)\n"
    "      --since WHEN      only records from WHEN on: a duration back from now\n"
    "                        (42m, 1h30m, 10s), a time (2013-01-02T13:23:37, local\n"
    "                        unless it ends in Z or +hh:mm; or just the date), or\n"
    "                        Unix seconds (1700000000.5)\n"
    "      --limit-bytes N   stop after N bytes of output (default -1: no limit)\n"
    "  -t, --timestamps      start each line with its timestamp (RFC 3339 with nine\n"
    "                        fraction digits, as the kubelet prints it)\n"
    "  -h, --help            this help\n";

enum { L_TAIL = 256, L_SINCE, L_LIMIT };

typedef struct logs_opts {
    ctl *c;
    bool follow, stamps, previous, reopen;
    int64_t tail;   /* -1 = all */
    int64_t limit;  /* bytes of output left; -1 = no limit */
    int64_t since;  /* ns; INT64_MIN = all */
    bool since_set; /* --since was given */
} logs_opts;

typedef struct reader {
    logs_opts *o;
    char *buf; /* bytes of a record not yet ended by '\n' */
    size_t len, cap;
    bool at_line_start, skip_to_nl;
} reader;

/* ---- flags ---- */

/* An integer; any negative one means -1 (all, no limit). */
static int parse_i64_min1(ctl *c, const char *flag, const char *val, int64_t *out)
{
    int rc = ctl_parse_int(c, flag, val, out);
    if (rc == 0 && *out < 0)
        *out = -1;
    return rc;
}

static int logs_opt(void *arg, int id, const char *val)
{
    logs_opts *o = arg;
    switch (id) {
    case 'f':
        o->follow = true;
        return 0;
    case 't':
        o->stamps = true;
        return 0;
    case 'p':
        o->previous = true;
        return 0;
    case 'r':
        o->reopen = true;
        return 0;
    case L_TAIL:
        return parse_i64_min1(o->c, "--tail", val, &o->tail);
    case L_LIMIT:
        return parse_i64_min1(o->c, "--limit-bytes", val, &o->limit);
    default:
        o->since_set = true;
        if (ctl_parse_since(val, &o->since) < 0)
            return ctl_usage(o->c,
                             "--since \"%s\": not a duration (42m), a time "
                             "(2013-01-02T13:23:37[Z]) or Unix seconds",
                             val);
        return 0;
    }
}

/* ---- output ---- */

static void write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w, n -= (size_t)w;
    }
}

/* Writes within --limit-bytes; false once the limit is reached. */
static bool out(reader *r, int fd, const char *p, size_t n)
{
    if (r->o->limit >= 0 && (int64_t)n > r->o->limit)
        n = (size_t)r->o->limit;
    write_all(fd, p, n);
    if (r->o->limit >= 0)
        r->o->limit -= (int64_t)n;
    return r->o->limit != 0;
}

/* One line of the file (without its '\n'). */
static void record(reader *r, const char *line, size_t n)
{
    sl_cri_log_rec rec;
    if (r->o->limit == 0 || sl_cri_log_parse(line, n, &rec) < 0)
        return;
    bool line_start = r->at_line_start;
    r->at_line_start = !rec.partial; /* skipped or not, as the kubelet tracks it */
    if (r->o->since_set && rec.ts_ns < r->o->since)
        return;
    int fd = rec.is_stderr ? STDERR_FILENO : STDOUT_FILENO;
    bool go = true;
    if (r->o->stamps && line_start) {
        char ts[64];
        sl_cri_time_fixed(rec.ts, rec.ts_len, ts);
        go = out(r, fd, ts, strlen(ts)) && out(r, fd, " ", 1);
    }
    go = go && out(r, fd, rec.content, rec.content_len);
    if (go && !rec.partial)
        out(r, fd, "\n", 1);
}

/* Handles every complete line in r->buf and keeps the rest. */
static void drain(reader *r)
{
    size_t off = 0;
    const char *nl;
    while ((nl = memchr(r->buf + off, '\n', r->len - off))) {
        size_t n = (size_t)(nl - (r->buf + off));
        if (!r->skip_to_nl)
            record(r, r->buf + off, n);
        r->skip_to_nl = false;
        off += n + 1;
    }
    memmove(r->buf, r->buf + off, r->len - off);
    r->len -= off;
    if (r->len >= LOGS_MAX_LINE) { /* a runaway record: its start, then skip the rest */
        if (!r->skip_to_nl)
            record(r, r->buf, r->len);
        r->skip_to_nl = true;
        r->len = 0;
    }
}

/* Reads and handles what fd has now, a chunk at a time; bytes read or -1. */
static ssize_t pump(reader *r, int fd)
{
    ssize_t total = 0;
    while (r->o->limit != 0) {
        if (r->cap - r->len < LOGS_READ_CHUNK) {
            size_t cap = r->len + LOGS_READ_CHUNK;
            char *nb = realloc(r->buf, cap);
            if (!nb)
                return -1;
            r->buf = nb, r->cap = cap;
        }
        ssize_t n = read(fd, r->buf + r->len, LOGS_READ_CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? -1 : total;
        r->len += (size_t)n, total += n;
        drain(r);
    }
    return total;
}

/* ---- the container ---- */

/* The container's status, or NULL with e set. */
static Runtime__V1__ContainerStatus *ctr_status(ctl *c, const char *id, sl_error *e)
{
    Runtime__V1__ContainerStatusRequest req = RUNTIME__V1__CONTAINER_STATUS_REQUEST__INIT;
    req.container_id = (char *)id;
    Runtime__V1__ContainerStatusResponse *r = (void *)ctl_rt_call(
        c, "ContainerStatus", &req.base, &runtime__v1__container_status_response__descriptor, e);
    Runtime__V1__ContainerStatus *s = r ? r->status : NULL;
    if (r && !s)
        sl_error_set(e, 0, "ContainerStatus: the runtime answered no status for container %s", id);
    if (r)
        r->status = NULL; /* kept; the rest freed */
    ctl_free_msg(r);
    return s;
}

/* The container's state; -1 when the runtime cannot say (a warning: what
 * was shown stays shown, the follow ends). */
static int ctr_state(ctl *c, const char *id)
{
    sl_error e;
    Runtime__V1__ContainerStatus *s = ctr_status(c, id, &e);
    if (!s)
        ctl_warn(c, "stopped following the log: %s", e.msg);
    int st = s ? (int)s->state : -1;
    ctl_free_msg(s);
    return st;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Follows path until the container is no longer running (or the limit). */
static void follow(ctl *c, const char *id, const char *path, int fd, reader *r)
{
    struct stat st0;
    fstat(fd, &st0);
    int64_t next_check = 0;
    while (r->o->limit != 0) {
        if (pump(r, fd) > 0)
            continue;
        struct stat st;
        if (stat(path, &st) == 0 && (st.st_ino != st0.st_ino || st.st_dev != st0.st_dev)) {
            int nfd = open(path, O_RDONLY | O_CLOEXEC); /* rotated: the new file */
            if (nfd >= 0) {
                pump(r, fd);
                close(fd);
                fd = nfd;
                st0 = st;
                continue;
            }
        }
        if (mono_ms() >= next_check) {
            if (ctr_state(c, id) != RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING)
                break;
            next_check = mono_ms() + LOGS_STATUS_EVERY_MS;
        }
        usleep(LOGS_POLL_MS * 1000);
    }
    pump(r, fd);
    close(fd);
}

/* Prints path (then follows it while id runs, with -f); -1 with e set. */
static int show_file(ctl *c, logs_opts *o, const char *id, const char *path, sl_error *e)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sl_error_set(e, errno, "log file %s", path);
    if (o->tail >= 0)
        lseek(fd, sl_cri_log_tail_offset(fd, o->tail), SEEK_SET);
    reader r = {.o = o, .at_line_start = true};
    int rc = 0;
    if (pump(&r, fd) < 0)
        rc = sl_error_set(e, errno, "reading %s", path);
    if (rc == 0 && o->follow && id)
        follow(c, id, path, fd, &r);
    else
        close(fd);
    free(r.buf);
    return rc;
}

/* ---- --previous ---- */

/* The container of the same name in the same pod with the highest attempt
 * below cur's, from a ListContainers answer; NULL if none. */
static const Runtime__V1__Container *prev_attempt(const Runtime__V1__ListContainersResponse *l,
                                                  const char *cur_id)
{
    const Runtime__V1__Container *cur = NULL, *best = NULL;
    for (size_t i = 0; i < l->n_containers && !cur; i++)
        if (!strcmp(l->containers[i]->id, cur_id))
            cur = l->containers[i];
    if (!cur || !cur->metadata)
        return NULL;
    for (size_t i = 0; i < l->n_containers; i++) {
        const Runtime__V1__Container *x = l->containers[i];
        if (x->metadata && !strcmp(x->pod_sandbox_id, cur->pod_sandbox_id) &&
            !strcmp(x->metadata->name, cur->metadata->name) &&
            x->metadata->attempt < cur->metadata->attempt &&
            (!best || x->metadata->attempt > best->metadata->attempt))
            best = x;
    }
    return best;
}

/* crictl's rule when the runtime no longer lists it: DIR/<attempt-1>.EXT
 * next to the current log ("ctr/1.log" -> "ctr/0.log"). */
static char *prev_by_name(const Runtime__V1__ContainerStatus *s)
{
    const char *lp = s->log_path ? s->log_path : "";
    const char *slash = strrchr(lp, '/'), *dot = strrchr(lp, '.');
    char *p = NULL;
    if (!s->metadata || !s->metadata->attempt || !dot || (slash && dot < slash))
        return NULL;
    if (asprintf(&p, "%.*s%u%s", slash ? (int)(slash - lp + 1) : 0, lp, s->metadata->attempt - 1,
                 dot) < 0)
        return NULL;
    if (access(p, R_OK) == 0)
        return p;
    free(p);
    return NULL;
}

/* The previous attempt's log path (its container ID in *id when the
 * runtime still has it); NULL with e set (crictl's message when there is
 * none). */
static char *previous_log(ctl *c, const Runtime__V1__ContainerStatus *s, char **prev_id,
                          sl_error *e)
{
    Runtime__V1__ListContainersRequest req = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
    Runtime__V1__ListContainersResponse *l = (void *)ctl_rt_call(
        c, "ListContainers", &req.base, &runtime__v1__list_containers_response__descriptor, e);
    if (!l)
        return NULL;
    const Runtime__V1__Container *p = prev_attempt(l, s->id);
    char *path = NULL;
    if (p) {
        Runtime__V1__ContainerStatus *ps = ctr_status(c, p->id, e);
        path = ps ? strdup(ps->log_path ? ps->log_path : "") : NULL;
        *prev_id = ps ? strdup(p->id) : NULL;
        if (ps && (!path || !*prev_id))
            sl_error_set(e, ENOMEM, "container %s", p->id);
        ctl_free_msg(ps);
    } else if (!(path = prev_by_name(s))) {
        sl_error_code(e, SL_CRI_NOT_FOUND, "previous terminated container %s not found",
                      s->metadata ? s->metadata->name : s->id);
    }
    ctl_free_msg(l);
    return path;
}

static int reopen(ctl *c, const char *id, sl_error *e)
{
    Runtime__V1__ReopenContainerLogRequest req = RUNTIME__V1__REOPEN_CONTAINER_LOG_REQUEST__INIT;
    req.container_id = (char *)id;
    void *r = ctl_rt_call(c, "ReopenContainerLog", &req.base,
                          &runtime__v1__reopen_container_log_response__descriptor, e);
    ctl_free_msg(r);
    return r ? 0 : -1;
}

/* 0, or -1 with e set. */
static int show_logs(ctl *c, logs_opts *o, const char *id, sl_error *e)
{
    if (o->reopen && reopen(c, id, e) < 0)
        return -1;
    Runtime__V1__ContainerStatus *s = ctr_status(c, id, e);
    if (!s)
        return -1;
    char *prev = NULL;
    char *path =
        o->previous ? previous_log(c, s, &prev, e) : strdup(s->log_path ? s->log_path : "");
    int rc = -1;
    if (!path && !o->previous)
        sl_error_set(e, ENOMEM, "container %s", id);
    else if (path && !*path)
        sl_error_set(e, 0, "container %s has no log file (its config set no log_path)", id);
    else if (path) /* the previous attempt is over: nothing to follow */
        rc = show_file(c, o, o->previous ? prev : id, path, e);
    free(prev);
    free(path);
    ctl_free_msg(s);
    return rc;
}

int cmd_logs(ctl *c, int argc, char **argv)
{
    sl_error e;
    static const struct option lo[] = {{"follow", no_argument, NULL, 'f'},
                                       {"previous", no_argument, NULL, 'p'},
                                       {"reopen", no_argument, NULL, 'r'},
                                       {"tail", required_argument, NULL, L_TAIL},
                                       {"since", required_argument, NULL, L_SINCE},
                                       {"limit-bytes", required_argument, NULL, L_LIMIT},
                                       {"timestamps", no_argument, NULL, 't'},
                                       CTL_OPT_HELP,
                                       CTL_OPT_END};
    logs_opts o = {.c = c, .tail = -1, .limit = -1};
    int first, rc;
    if (ctl_parse(c, argc, argv, "fprt", lo, logs_help, logs_opt, &o, &first, &rc))
        return rc;
    if (argc - first != 1)
        return ctl_usage(c, "needs exactly one CONTAINER-ID (see sluicectl logs --help)");
    char *id = ctl_resolve_ctr(c, argv[first], &e);
    if (!id)
        return ctl_fail(c, &e);
    rc = show_logs(c, &o, id, &e) < 0 ? ctl_fail(c, &e) : 0;
    free(id);
    return rc;
}
