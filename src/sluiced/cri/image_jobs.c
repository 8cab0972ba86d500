#include "cri/image_jobs.h"

#include <errno.h>
#include <jansson.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "sl_log.h"

/* A commit that found a layer gone (a removal ran meanwhile) begins anew
 * this many times before the import counts as failed. */
#define IMPORT_RETRIES 3
/* A running import says how far it is in sluiced's log this often. */
#define IMPORT_PROGRESS_LOG_MS 5000u

typedef enum job_kind { JOB_IMPORT, JOB_BARRIER } job_kind;

typedef struct job {
    struct job *next;
    job_kind kind;
    char *path, *want; /* import: the tarball, and the tag a pull wants */
    bool required;
    int tries;
    sl_waitq_fn fn; /* barrier */
    void *arg;
} job;

/* A tarball whose import failed: not tried again while unchanged. */
typedef struct failure {
    struct failure *next;
    char *path;
    struct stat st;
    char msg[SL_SYS_ERROR_MAX];
} failure;

typedef struct gc_work {
    uv_work_t req;
    char **paths;
} gc_work;

struct sl_imgq {
    uv_loop_t *loop;
    sl_image_store *s;
    job *head, *tail;
    job *cur; /* the import running, out of the list */
    sl_image_import *imp;
    uint64_t started_ms;
    uv_work_t work;
    uv_timer_t *log_timer; /* while an import runs */
    failure *failures;
    bool stopping, pumping;
    sl_imgq_fatal_fn fatal;
    void *fatal_arg;
};

static void free_job(job *j)
{
    free(j->path);
    free(j->want);
    free(j);
}

static bool same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static failure **find_failure(sl_imgq *q, const char *path)
{
    failure **pp = &q->failures;
    while (*pp && strcmp((*pp)->path, path))
        pp = &(*pp)->next;
    return pp;
}

static void forget_failure(sl_imgq *q, const char *path)
{
    failure **pp = find_failure(q, path);
    if (*pp) {
        failure *f = *pp;
        *pp = f->next;
        free(f->path);
        free(f);
    }
}

static void remember_failure(sl_imgq *q, const char *path, const sl_error *e)
{
    forget_failure(q, path);
    failure *f = calloc(1, sizeof(*f));
    if (!f || !(f->path = strdup(path)) || stat(path, &f->st) < 0) {
        if (f)
            free(f->path);
        free(f);
        return; /* a missing file is not tried again anyway */
    }
    snprintf(f->msg, sizeof(f->msg), "%s", e->msg);
    f->next = q->failures;
    q->failures = f;
}

/* It failed before, and is the same file still. */
static bool failed_before(sl_imgq *q, const char *path)
{
    failure *f = *find_failure(q, path);
    struct stat st;
    return f && stat(path, &st) == 0 && same_file(&f->st, &st);
}

/* ---- the queue ---- */

static void push(sl_imgq *q, job *j, bool front)
{
    if (front) {
        j->next = q->head;
        q->head = j;
        if (!q->tail)
            q->tail = j;
        return;
    }
    j->next = NULL;
    if (q->tail)
        q->tail->next = j;
    else
        q->head = j;
    q->tail = j;
}

static job *pop(sl_imgq *q)
{
    job *j = q->head;
    if (j) {
        q->head = j->next;
        if (!q->head)
            q->tail = NULL;
    }
    return j;
}

static void pump(sl_imgq *q);

static void import_failed(sl_imgq *q, const job *j, const sl_error *e)
{
    sl_log(SL_LOG_ERROR, "image import failed", "file", j->path, "error", e->msg, NULL);
    remember_failure(q, j->path, e);
    if (j->required && q->fatal && !q->stopping)
        q->fatal(q->fatal_arg, e);
}

/* The worker thread runs an import as SCHED_BATCH (same nice): the loop
 * thread, woken by a call, preempts it at once. A nice offset would do
 * that too but starves the import on a loaded machine (nice +10 got <1%
 * of a CPU at load 20). */
static void work_cb(uv_work_t *w)
{
    sl_imgq *q = w->data;
    pid_t tid = gettid();
    int was = sched_getscheduler(tid);
    struct sched_param prio = {0};
    bool batch = was == SCHED_OTHER && sched_setscheduler(tid, SCHED_BATCH, &prio) == 0;
    sl_image_import_run(q->imp);
    if (batch) /* the thread serves other work next */
        sched_setscheduler(tid, SCHED_OTHER, &prio);
}

static void log_imported(sl_imgq *q, const job *j, double commit_ms)
{
    char secs[32], ms[32];
    snprintf(secs, sizeof(secs), "%.1f", (double)(uv_now(q->loop) - q->started_ms) / 1000);
    snprintf(ms, sizeof(ms), "%.1f", commit_ms);
    sl_log(SL_LOG_INFO, "image imported", "file", j->path, "seconds", secs, "commit_on_loop_ms", ms,
           NULL);
}

static void fmt_mib(uint64_t bytes, char *buf, size_t n)
{
    snprintf(buf, n, "%.1f", (double)bytes / (1 << 20));
}

static void log_progress_cb(uv_timer_t *t)
{
    sl_imgq *q = t->data;
    if (!q->cur || !q->imp)
        return;
    sl_import_progress p;
    sl_image_import_progress(q->imp, &p);
    char rd[32], tot[32], secs[32];
    fmt_mib(p.bytes_read, rd, sizeof(rd));
    fmt_mib(p.bytes_total, tot, sizeof(tot));
    snprintf(secs, sizeof(secs), "%.0f", (double)(uv_now(q->loop) - q->started_ms) / 1000);
    sl_log(SL_LOG_INFO, "image import progress", "file", q->cur->path, "read_mib", rd, "total_mib",
           tot, "phase", p.unpacking ? "unpacking" : "reading", "seconds", secs, NULL);
}

static void start_log_timer(sl_imgq *q)
{
    q->log_timer = calloc(1, sizeof(*q->log_timer));
    if (!q->log_timer || uv_timer_init(q->loop, q->log_timer) < 0) {
        free(q->log_timer); /* no progress lines: the import goes on */
        q->log_timer = NULL;
        return;
    }
    q->log_timer->data = q;
    uv_timer_start(q->log_timer, log_progress_cb, IMPORT_PROGRESS_LOG_MS, IMPORT_PROGRESS_LOG_MS);
}

static void free_handle_cb(uv_handle_t *h)
{
    free(h);
}

static void stop_log_timer(sl_imgq *q)
{
    if (q->log_timer)
        uv_close((uv_handle_t *)q->log_timer, free_handle_cb);
    q->log_timer = NULL;
}

static void after_cb(uv_work_t *w, int status)
{
    sl_imgq *q = w->data;
    job *j = q->cur;
    q->cur = NULL;
    stop_log_timer(q);
    sl_error e = {0};
    uint64_t t0 = uv_hrtime();
    int rc = sl_image_import_commit(q->imp, NULL, &e);
    double commit_ms = (double)(uv_hrtime() - t0) / 1e6;
    sl_image_import_free(q->imp);
    q->imp = NULL;
    (void)status; /* never cancelled: uv_cancel is not used */
    if (rc < 0 && e.errnum == EAGAIN && ++j->tries < IMPORT_RETRIES && !q->stopping) {
        push(q, j, true);
    } else {
        if (rc < 0)
            import_failed(q, j, &e);
        else
            log_imported(q, j, commit_ms);
        if (rc == 0)
            forget_failure(q, j->path);
        free_job(j);
    }
    sl_imgq_collect(q);
    pump(q);
}

/* Begins the import of j and hands its slow half to a worker thread. */
static void start_import(sl_imgq *q, job *j)
{
    if (sl_image_store_file_unchanged(q->s, j->path, j->want)) {
        free_job(j); /* imported before, or meanwhile (a job queued twice) */
        return;
    }
    sl_error e = {0};
    q->imp = sl_image_import_begin(q->s, j->path, NULL, &e);
    int rc = q->imp ? uv_queue_work(q->loop, &q->work, work_cb, after_cb) : -1;
    if (rc == 0) {
        q->cur = j;
        q->started_ms = uv_now(q->loop);
        start_log_timer(q);
        return;
    }
    if (q->imp) {
        sl_error_set(&e, -rc, "import %s: worker thread", j->path);
        sl_image_import_free(q->imp);
        q->imp = NULL;
    }
    import_failed(q, j, &e);
    free_job(j);
}

static void pump(sl_imgq *q)
{
    if (q->pumping)
        return; /* a waiter queued more: the loop below takes it */
    q->pumping = true;
    while (!q->cur && q->head) {
        job *j = pop(q);
        if (j->kind == JOB_BARRIER) {
            j->fn(j->arg);
            free_job(j);
        } else if (q->stopping) {
            free_job(j);
        } else {
            start_import(q, j);
        }
    }
    q->pumping = false;
}

static bool queued(const sl_imgq *q, const char *path)
{
    for (const job *j = q->head; j; j = j->next)
        if (j->kind == JOB_IMPORT && !strcmp(j->path, path))
            return true;
    return false;
}

static void import_for(sl_imgq *q, const char *path, const char *want, bool required)
{
    if (q->stopping || queued(q, path) || (!required && failed_before(q, path)))
        return;
    job *j = calloc(1, sizeof(*j));
    if (!j || !(j->path = strdup(path)) || (want && !(j->want = strdup(want)))) {
        if (j)
            free_job(j);
        sl_log(SL_LOG_ERROR, "image import not queued", "file", path, "error", "out of memory",
               NULL);
        return;
    }
    j->kind = JOB_IMPORT;
    j->required = required;
    push(q, j, false);
    pump(q);
}

void sl_imgq_import(sl_imgq *q, const char *path, bool required)
{
    import_for(q, path, NULL, required);
}

int sl_imgq_scan(sl_imgq *q, const char *dir, const char *want, sl_error *e)
{
    char **paths;
    if (sl_image_store_dir_changes(q->s, dir, want, &paths, NULL, e) < 0)
        return -1;
    for (size_t i = 0; paths[i]; i++)
        import_for(q, paths[i], want, false);
    sl_image_ids_free(paths);
    return 0;
}

int sl_imgq_after(sl_imgq *q, sl_waitq_fn fn, void *arg)
{
    if (!q->cur && !q->head) {
        fn(arg);
        return 0;
    }
    job *j = calloc(1, sizeof(*j));
    if (!j)
        return -1;
    j->kind = JOB_BARRIER;
    j->fn = fn;
    j->arg = arg;
    push(q, j, false);
    return 0;
}

void sl_imgq_retry(sl_imgq *q, sl_grpc_handler handler, sl_grpc_call *call, void *arg)
{
    void *r = sl_call_retry_new(handler, call, arg);
    if (r && sl_imgq_after(q, sl_call_retry_run, r) == 0)
        return;
    free(r);
    sl_grpc_call_fail(call, SL_GRPC_RESOURCE_EXHAUSTED, "out of memory");
}

static bool job_may_give(const sl_imgq *q, const job *j, const char *ref, bool unknown_counts)
{
    if (!j || j->kind != JOB_IMPORT)
        return false;
    int gave = sl_image_store_source_gave(q->s, j->path, ref);
    return gave > 0 || (gave < 0 && unknown_counts);
}

bool sl_imgq_may_give(const sl_imgq *q, const char *ref, bool unknown_counts)
{
    if (job_may_give(q, q->cur, ref, unknown_counts))
        return true;
    for (const job *j = q->head; j; j = j->next)
        if (job_may_give(q, j, ref, unknown_counts))
            return true;
    return false;
}

static char *progress_json(const char *file, const char *phase, const sl_import_progress *p,
                           double secs)
{
    json_t *j = json_pack("{s:s, s:s, s:I, s:I, s:f}", "file", file, "phase", phase, "bytesRead",
                          (json_int_t)p->bytes_read, "bytesTotal", (json_int_t)p->bytes_total,
                          "secondsElapsed", secs);
    char *text = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
    json_decref(j);
    return text;
}

char *sl_imgq_progress_json(const sl_imgq *q, const char *ref)
{
    sl_import_progress p = {0};
    if (job_may_give(q, q->cur, ref, true) && q->imp) {
        sl_image_import_progress(q->imp, &p);
        double secs = (double)(uv_now(q->loop) - q->started_ms) / 1000;
        return progress_json(q->cur->path, p.unpacking ? "unpacking" : "reading", &p, secs);
    }
    for (const job *j = q->head; j; j = j->next)
        if (job_may_give(q, j, ref, true)) {
            struct stat st;
            p.bytes_total = stat(j->path, &st) == 0 ? (uint64_t)st.st_size : 0;
            return progress_json(j->path, "queued", &p, 0);
        }
    return NULL;
}

const char *sl_imgq_failures(const sl_imgq *q, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (const failure *f = q->failures; f && used + 1 < n; f = f->next) {
        int w = snprintf(buf + used, n - used, "%s%s", used ? "; " : "", f->msg);
        used += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

/* ---- deletions ---- */

static void gc_work_cb(uv_work_t *w)
{
    gc_work *g = w->data;
    for (size_t i = 0; g->paths[i]; i++) {
        sl_error e;
        if (sl_rm_rf(g->paths[i], &e) < 0)
            sl_log(SL_LOG_WARN, "cannot delete", "error", e.msg, NULL); /* the next start retries */
    }
}

static void gc_after_cb(uv_work_t *w, int status)
{
    (void)status;
    gc_work *g = w->data;
    sl_image_ids_free(g->paths);
    free(g);
}

void sl_imgq_collect(sl_imgq *q)
{
    char **paths = sl_image_store_take_garbage(q->s);
    if (!paths)
        return;
    gc_work *g = calloc(1, sizeof(*g));
    if (g) {
        g->paths = paths;
        g->req.data = g;
        if (uv_queue_work(q->loop, &g->req, gc_work_cb, gc_after_cb) == 0)
            return;
        free(g);
    }
    sl_image_ids_free(paths); /* left in tmp/: the next start deletes them */
}

/* ---- life ---- */

sl_imgq *sl_imgq_new(uv_loop_t *loop, sl_image_store *s)
{
    sl_imgq *q = calloc(1, sizeof(*q));
    if (q) {
        q->loop = loop;
        q->s = s;
        q->work.data = q;
    }
    return q;
}

void sl_imgq_set_fatal(sl_imgq *q, sl_imgq_fatal_fn fn, void *arg)
{
    q->fatal = fn;
    q->fatal_arg = arg;
}

void sl_imgq_stop(sl_imgq *q)
{
    q->stopping = true;
    sl_image_store_cancel(q->s);
    if (!q->cur)
        pump(q); /* drops the imports, runs the waiters */
}

void sl_imgq_free(sl_imgq *q)
{
    if (!q)
        return;
    while (q->head)
        free_job(pop(q));
    while (q->failures) {
        failure *f = q->failures;
        q->failures = f->next;
        free(f->path);
        free(f);
    }
    free(q);
}
