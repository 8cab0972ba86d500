/* image import FILE (sluiced only): sluiced pulls from no registry; it
 * imports the tarballs of its import directory when PullImage asks for a
 * name it lacks. So: read the image names in the tarball, copy it into the
 * import directory (atomically: a temporary name, then rename to *.tar),
 * then PullImage each name. Meanwhile it says on stderr how far the copy
 * is, and how far sluiced's import is: a second connection asks sluiced
 * (ImageStatus, verbose: the "importProgress" info) every progress
 * interval; a runtime that gives no such info gets a line saying how long
 * the import has taken every PROGRESS_EVERY_MS. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "cmd_util.h"
#include "import_line.h"

#define IMPORT_MAX_JSON (4u * 1024 * 1024) /* index.json / manifest.json */
#define IMPORT_MAX_NAMES 256u
#define IMPORT_DEFAULT_TIMEOUT_MS (10u * 60 * 1000)
#define COPY_CHUNK 65536u
/* How often the copy and the import say how far they are, by default. */
#define PROGRESS_DEFAULT_MS 1000u
/* Longest --progress-interval. */
#define PROGRESS_MAX_MS (3600u * 1000)
/* How long one progress question (ImageStatus) may take. */
#define PROGRESS_CALL_MS 5000u

static const char image_help[] =
    "Usage: sluicectl image import [--import-dir DIR] [--timeout DURATION]\n"
    "                              [--progress-interval DURATION] FILE.tar\n"
    "\n"
    "sluiced only. Imports an OCI image layout or docker-archive tarball (optionally\n"
    "gzip/zstd-compressed): copies it into sluiced's import directory and asks\n"
    "sluiced (PullImage) for every image name the tarball carries\n"
    "(io.containerd.image.name, org.opencontainers.image.ref.name or RepoTags).\n"
    "The copy stays in the import directory (sluiced's record of what it imports).\n"
    "While it waits it prints on stderr how far the copy and sluiced's import are\n"
    "(\"importing NAME: 123.4 MiB of 456.7 MiB (27%)\": bytes of the tarball read).\n"
    "\n"
    "      --import-dir DIR     sluiced's import directory (default: the global\n"
    "                           --import-dir, import-dir in the config file, else\n"
    "                           /var/lib/sluice/import)\n"
    "      --timeout DURATION   how long sluiced may take per image (default 10m)\n"
    "      --progress-interval DURATION\n"
    "                           how often to say how far it is (default 1s)\n"
    "  -h, --help               this help\n";

typedef struct import_opts {
    ctl *c;
    const char *dir;
    uint64_t timeout_ms, progress_ms;
} import_opts;

typedef struct names {
    char *v[IMPORT_MAX_NAMES];
    size_t n;
} names;

static void add_name(names *ns, const char *s)
{
    for (size_t i = 0; i < ns->n; i++)
        if (!strcmp(ns->v[i], s))
            return;
    if (ns->n < IMPORT_MAX_NAMES)
        ns->v[ns->n++] = strdup(s);
}

/* A whole reference names a repository: "a/b:t", "host:5000/x", "x:tag". */
static bool whole_ref(const char *s)
{
    return strchr(s, '/') || strchr(s, ':');
}

static void oci_names(json_t *idx, names *ns)
{
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(idx, "manifests"), i, m)
    {
        json_t *ann = json_object_get(m, "annotations");
        const char *a = json_string_value(json_object_get(ann, "io.containerd.image.name"));
        const char *b =
            json_string_value(json_object_get(ann, "org.opencontainers.image.ref.name"));
        if (a)
            add_name(ns, a);
        else if (b && whole_ref(b))
            add_name(ns, b);
    }
}

static void docker_names(json_t *man, names *ns)
{
    size_t i, k;
    json_t *m, *t;
    json_array_foreach(man, i, m)
    {
        json_array_foreach(json_object_get(m, "RepoTags"), k, t) if (json_is_string(t))
            add_name(ns, json_string_value(t));
    }
}

static json_t *read_json_entry(struct archive *ar, int64_t size)
{
    if (size < 0 || size > (int64_t)IMPORT_MAX_JSON)
        return NULL;
    char *buf = malloc((size_t)size + 1);
    if (!buf)
        return NULL;
    la_ssize_t n = archive_read_data(ar, buf, (size_t)size);
    json_t *j = n == size ? json_loadb(buf, (size_t)n, 0, NULL) : NULL;
    free(buf);
    return j;
}

/* Returns 0 with the names found, or -1 with e. */
static int tarball_names(const char *path, names *ns, sl_error *e)
{
    struct archive *ar = archive_read_new();
    archive_read_support_filter_all(ar);
    archive_read_support_format_tar(ar);
    if (archive_read_open_filename(ar, path, COPY_CHUNK) != ARCHIVE_OK) {
        sl_error_set(e, 0, "%s: not a readable tarball: %s", path, archive_error_string(ar));
        e->errnum = archive_errno(ar) > 0 ? archive_errno(ar) : 0;
        archive_read_free(ar);
        return -1;
    }
    struct archive_entry *ent;
    bool layout = false;
    int r;
    while ((r = archive_read_next_header(ar, &ent)) == ARCHIVE_OK) {
        const char *p = archive_entry_pathname(ent);
        if (p && !strncmp(p, "./", 2))
            p += 2;
        if (!p || (strcmp(p, "index.json") && strcmp(p, "manifest.json")))
            continue;
        json_t *j = read_json_entry(ar, archive_entry_size(ent));
        if (j && !strcmp(p, "index.json"))
            oci_names(j, ns);
        else if (j)
            docker_names(j, ns);
        layout = layout || j;
        json_decref(j);
    }
    if (r != ARCHIVE_EOF) {
        sl_error_set(e, 0, "%s: not a readable tarball: %s", path, archive_error_string(ar));
        archive_read_free(ar);
        return -1;
    }
    archive_read_free(ar);
    if (!layout)
        return sl_error_set(e, 0,
                            "%s: neither an OCI image layout (index.json) nor a docker-archive "
                            "(manifest.json)",
                            path);
    return 0;
}

/* Says how far the copy is every every_ms. */
typedef struct copy_meter {
    const char *name;
    uint64_t total, done, every_ms, start_ns, last_ns;
    uint64_t end_ns; /* the data copied (the fsync follows) */
} copy_meter;

static void copy_tick(copy_meter *m, size_t n)
{
    m->done += n;
    uint64_t now = uv_hrtime();
    if (now - m->last_ns < m->every_ms * 1000000 || m->done >= m->total)
        return;
    m->last_ns = now;
    fprintf(stderr, "sluicectl: copying %s: %.1f MiB of %.1f MiB (%.0f%%)\n", m->name,
            (double)m->done / (1 << 20), (double)m->total / (1 << 20),
            (double)m->done * 100 / (double)m->total);
}

static int copy_fd(int in, int out, copy_meter *m)
{
    char buf[COPY_CHUNK];
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            m->end_ns = uv_hrtime();
            return n < 0 ? -1 : 0;
        }
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0)
                return -1;
            off += w;
        }
        copy_tick(m, (size_t)n);
    }
}

/* Copies src into dir as NAME.tar (tmp file + fsync + rename); -1 with e. */
static int copy_in(const char *src, const import_opts *o, char *dst, size_t dstlen, sl_error *e)
{
    const char *dir = o->dir;
    struct stat st;
    int serr = stat(dir, &st) < 0 ? errno : S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
    if (serr) {
        sl_error_set(e, 0,
                     "import directory %s: %s. Is sluiced running with --import-dir %s? Point "
                     "sluicectl at sluiced's with --import-dir or import-dir in the config file.",
                     dir, strerror(serr), dir);
        e->errnum = serr; /* the hint follows the cause: not appended */
        return -1;
    }
    const char *base = strrchr(src, '/') ? strrchr(src, '/') + 1 : src;
    size_t bl = strlen(base);
    bool tar = bl > 4 && !strcmp(base + bl - 4, ".tar");
    char tmp[PATH_MAX];
    snprintf(dst, dstlen, "%s/%s%s", dir, base, tar ? "" : ".tar");
    snprintf(tmp, sizeof tmp, "%s/.%s.partial", dir, base);
    int in = open(src, O_RDONLY | O_CLOEXEC);
    copy_meter m = {base, 0, 0, o->progress_ms, uv_hrtime(), uv_hrtime(), 0};
    if (in >= 0 && fstat(in, &st) == 0) {
        m.total = (uint64_t)st.st_size;
        fprintf(stderr, "sluicectl: copying %s (%.1f MiB) into %s\n", base,
                (double)st.st_size / (1 << 20), dir);
    }
    int out = in < 0 ? -1 : open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int rc = in < 0 || out < 0 || copy_fd(in, out, &m) < 0 || fsync(out) < 0 ? -1 : 0;
    int saved = errno;
    if (out >= 0 && close(out) < 0)
        rc = -1;
    if (in >= 0)
        close(in);
    if (rc == 0 && rename(tmp, dst) < 0)
        rc = -1, saved = errno;
    if (rc < 0) {
        unlink(tmp);
        sl_error_set(e, saved, "copying %s into %s", src, dir);
    } else {
        fprintf(stderr, "sluicectl: copied %s in %.2f s\n", base,
                (double)(m.end_ns - m.start_ns) / 1e9);
    }
    return rc;
}

/* A thread that asks sluiced how far the import is, on a connection of
 * its own, while the (blocking) PullImage waits for sluiced. */
typedef struct progress {
    uv_thread_t thread;
    uv_mutex_t mu;
    uv_cond_t cond;
    bool done, started;
    const char *name, *endpoint;
    uint64_t t0, every_ms;
    sl_cri_client *cl;
    ctl_import_seen seen;
} progress;

/* The "importProgress" info of a verbose ImageStatus (malloc'd), or NULL. */
static char *ask_progress(progress *p)
{
    sl_error e;
    if (!p->cl &&
        (!p->endpoint || sl_cri_client_connect(p->endpoint, PROGRESS_CALL_MS, &p->cl, &e) < 0))
        return NULL; /* the time lines say it is still going */
    Runtime__V1__ImageStatusRequest req = RUNTIME__V1__IMAGE_STATUS_REQUEST__INIT;
    Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
    spec.image = (char *)p->name;
    req.image = &spec;
    req.verbose = true;
    ProtobufCMessage *r;
    if (sl_cri_client_call(p->cl, "/runtime.v1.ImageService/ImageStatus", &req.base,
                           &runtime__v1__image_status_response__descriptor, &r, PROGRESS_CALL_MS,
                           &e) != SL_CRI_OK)
        return NULL;
    const Runtime__V1__ImageStatusResponse *st = (const void *)r;
    char *info = NULL;
    for (size_t i = 0; i < st->n_info && !info; i++)
        if (!strcmp(st->info[i]->key, "importProgress") && st->info[i]->value)
            info = strdup(st->info[i]->value);
    protobuf_c_message_free_unpacked(r, NULL);
    return info;
}

static void progress_say(progress *p)
{
    char *info = ask_progress(p);
    char line[512];
    uint64_t ms = (uv_hrtime() - p->t0) / 1000000;
    if (ctl_import_line(p->name, info, ms, &p->seen, line, sizeof line))
        fprintf(stderr, "%s\n", line);
    free(info);
}

static void progress_run(void *arg)
{
    progress *p = arg;
    uv_mutex_lock(&p->mu);
    while (!p->done) {
        if (uv_cond_timedwait(&p->cond, &p->mu, p->every_ms * 1000000) != UV_ETIMEDOUT || p->done)
            continue;
        uv_mutex_unlock(&p->mu); /* a question may take a while: stop must not wait */
        progress_say(p);
        uv_mutex_lock(&p->mu);
    }
    uv_mutex_unlock(&p->mu);
    sl_cri_client_free(p->cl);
}

/* Returns -1 with e set when sluiced is not reachable. */
static int progress_start(progress *p, ctl *c, const char *name, uint64_t every_ms, sl_error *e)
{
    *p = (progress){.name = name, .t0 = uv_hrtime(), .every_ms = every_ms};
    if (!(p->endpoint = ctl_image_endpoint(c, e)))
        return -1;
    fprintf(stderr, "sluicectl: %s: asking sluiced to import it\n", name);
    if (uv_mutex_init(&p->mu) < 0)
        return 0; /* no progress lines, the import goes on */
    if (uv_cond_init(&p->cond) < 0) {
        uv_mutex_destroy(&p->mu);
        return 0;
    }
    p->started = uv_thread_create(&p->thread, progress_run, p) == 0;
    if (!p->started) {
        uv_cond_destroy(&p->cond);
        uv_mutex_destroy(&p->mu);
    }
    return 0;
}

static void progress_stop(progress *p)
{
    if (!p->started)
        return;
    uv_mutex_lock(&p->mu);
    p->done = true;
    uv_cond_signal(&p->cond);
    uv_mutex_unlock(&p->mu);
    uv_thread_join(&p->thread);
    uv_cond_destroy(&p->cond);
    uv_mutex_destroy(&p->mu);
}

static int pull(ctl *c, const import_opts *o, const char *name, sl_error *e)
{
    Runtime__V1__PullImageRequest req = RUNTIME__V1__PULL_IMAGE_REQUEST__INIT;
    Runtime__V1__ImageSpec spec = RUNTIME__V1__IMAGE_SPEC__INIT;
    spec.image = (char *)name;
    req.image = &spec;
    ProtobufCMessage *r;
    sl_error ce;
    progress p;
    if (progress_start(&p, c, name, o->progress_ms, e) < 0)
        return -1;
    int st =
        ctl_call_raw(c, true, "PullImage", &req.base, &runtime__v1__pull_image_response__descriptor,
                     &r, (uint32_t)o->timeout_ms, &ce, e);
    progress_stop(&p);
    if (st != SL_CRI_OK)
        return -1;
    printf("Imported %s: %s\n", name, ((Runtime__V1__PullImageResponse *)r)->image_ref);
    ctl_free_msg(r);
    return 0;
}

static int import_opt(void *arg, int id, const char *val)
{
    import_opts *o = arg;
    if (id == 'd') {
        o->dir = val;
        return 0;
    }
    if (id == 'p') {
        if (ctl_parse_duration_ms(val, &o->progress_ms) < 0 || !o->progress_ms ||
            o->progress_ms > PROGRESS_MAX_MS)
            return ctl_usage(o->c, "--progress-interval: \"%s\" is not a duration from 1ms to 1h",
                             val);
        return 0;
    }
    if (ctl_parse_duration_ms(val, &o->timeout_ms) < 0 || !o->timeout_ms ||
        o->timeout_ms > UINT32_MAX)
        return ctl_usage(o->c, "--timeout: \"%s\" is not a duration such as 10m", val);
    return 0;
}

static int do_import(ctl *c, const import_opts *o, const char *file)
{
    names ns = {0};
    char dst[PATH_MAX];
    int rc = CTL_EXIT_FAIL;
    sl_error e;
    if (tarball_names(file, &ns, &e) < 0 ||
        (!ns.n && sl_error_set(&e, 0,
                               "%s names no image (no io.containerd.image.name, "
                               "org.opencontainers.image.ref.name or RepoTags): nothing could "
                               "refer to it",
                               file)) ||
        copy_in(file, o, dst, sizeof dst, &e) < 0) {
        ctl_fail(c, &e); /* the one place these failures are printed */
        goto out;
    }
    ctl_debug(c, "copied %s to %s", file, dst);
    rc = 0;
    for (size_t i = 0; i < ns.n; i++)
        if (pull(c, o, ns.v[i], &e) < 0)
            rc = ctl_fail(c, &e); /* each name's failure; the others go on */
out:
    for (size_t i = 0; i < ns.n; i++)
        free(ns.v[i]);
    return rc;
}

int cmd_image(ctl *c, int argc, char **argv)
{
    static const struct option lo[] = {{"import-dir", required_argument, NULL, 'd'},
                                       {"timeout", required_argument, NULL, 't'},
                                       {"progress-interval", required_argument, NULL, 'p'},
                                       CTL_OPT_HELP,
                                       CTL_OPT_END};
    import_opts o = {c, c->import_dir, IMPORT_DEFAULT_TIMEOUT_MS, PROGRESS_DEFAULT_MS};
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fputs(image_help, argc < 2 ? stderr : stdout);
        return argc < 2 ? CTL_EXIT_USAGE : 0;
    }
    if (strcmp(argv[1], "import"))
        return ctl_usage(c, "unknown subcommand \"%s\": the only one is import", argv[1]);
    int first, rc;
    if (ctl_parse(c, argc - 1, argv + 1, "", lo, image_help, import_opt, &o, &first, &rc))
        return rc;
    if (argc - 1 - first != 1)
        return ctl_usage(c, "image import needs exactly one FILE (see sluicectl image --help)");
    return do_import(c, &o, argv[1 + first]);
}
