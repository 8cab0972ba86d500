/* Container commands: create, start, stop, rm, inspect (ps: cmd_ps.c). */
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd_util.h"

/* ---- create ---- */

static const char create_help[] =
    "Usage: sluicectl create [FLAGS] POD-ID CONTAINER-CONFIG.[json|yaml] POD-CONFIG.[json|yaml]\n"
    "\n"
    "Creates a container in a pod sandbox and prints its ID. The configs are YAML\n"
    "or JSON (ContainerConfig and the PodSandboxConfig the pod was run with).\n"
    "\n"
    "      --with-pull               pull the image first when the runtime lacks it\n"
    "                                (the default with pull-image-on-create: true)\n"
    "      --no-pull                 do not pull (overrides pull-image-on-create)\n"
    "      --creds USER[:PASSWORD]   registry credentials for the pull\n"
    "      --auth AUTH               base64 of USER[:PASSWORD]\n"
    "      --username USER           registry user; the password is read from stdin\n"
    "      --pull-timeout, --pt D    deadline of the pull (default 0: none)\n"
    "  -T, --cancel-timeout D        deadline of CreateContainer (default 60 s, or the\n"
    "                                global timeout when that is longer)\n"
    "  -h, --help                    this help\n";

typedef struct create_opts {
    ctl *c;
    cu_pull p;
} create_opts;

static int create_opt(void *arg, int id, const char *val)
{
    create_opts *o = arg;
    return cu_pull_opt(o->c, &o->p, id == 'T' ? CU_CANCEL_TIMEOUT : id, val) ? -1 : 0;
}

/* A call's deadline: --cancel-timeout when given, else the slow default. */
uint32_t cu_slow_deadline(ctl *c, uint64_t cancel_ms)
{
    if (cancel_ms)
        return cancel_ms < CTL_NO_DEADLINE_MS ? (uint32_t)cancel_ms : CTL_NO_DEADLINE_MS;
    return c->timeout_ms > CTL_SLOW_TIMEOUT_MS ? c->timeout_ms : CTL_SLOW_TIMEOUT_MS;
}

/* Whether create/run pull: the flags, else the config file's default. */
int cu_want_pull(ctl *c, const cu_pull *p, bool dflt, bool *pull)
{
    if (p->with && p->without)
        return ctl_usage(c, "give --with-pull or --no-pull, not both");
    *pull = p->with || (!p->without && dflt);
    return 0;
}

char *cu_create_ctr(ctl *c, cu_pull *p, bool pull, const char *pod,
                    Runtime__V1__ContainerConfig *cfg, Runtime__V1__PodSandboxConfig *pcfg,
                    sl_error *e)
{
    if (pull && cfg->image && cfg->image->image && *cfg->image->image) {
        char *ref = cu_pull_image(c, p, cfg->image, pcfg, true, e);
        if (!ref)
            return NULL;
        free(ref);
    }
    Runtime__V1__CreateContainerRequest req = RUNTIME__V1__CREATE_CONTAINER_REQUEST__INIT;
    req.pod_sandbox_id = (char *)pod;
    req.config = cfg;
    req.sandbox_config = pcfg;
    ProtobufCMessage *r;
    sl_error ce;
    int st = ctl_call_raw(c, false, "CreateContainer", &req.base,
                          &runtime__v1__create_container_response__descriptor, &r,
                          cu_slow_deadline(c, p->cancel_ms), &ce, e);
    char *id =
        st == SL_CRI_OK ? strdup(((Runtime__V1__CreateContainerResponse *)r)->container_id) : NULL;
    if (st == SL_CRI_OK && !id)
        sl_error_set(e, ENOMEM, "CreateContainer");
    ctl_free_msg(r);
    return id;
}

static int create(ctl *c, create_opts *o, bool pull, char **args)
{
    sl_error e;
    char *pod = ctl_resolve_pod(c, args[0], &e);
    if (!pod)
        return ctl_fail(c, &e);
    ctl_arena *a = ctl_arena_new();
    Runtime__V1__ContainerConfig *cfg =
        (void *)ctl_doc_load(args[1], &runtime__v1__container_config__descriptor, a, &e);
    Runtime__V1__PodSandboxConfig *pcfg =
        cfg ? (void *)ctl_doc_load(args[2], &runtime__v1__pod_sandbox_config__descriptor, a, &e)
            : NULL;
    char *id = cfg && pcfg ? cu_create_ctr(c, &o->p, pull, pod, cfg, pcfg, &e) : NULL;
    if (id)
        puts(id);
    free(id);
    ctl_arena_free(a);
    free(pod);
    return id ? 0 : ctl_fail(c, &e);
}

int cmd_create(ctl *c, int argc, char **argv)
{
    static const struct option lo[] = {CU_PULL_CREATE_OPTS, CTL_OPT_HELP, CTL_OPT_END};
    create_opts o = {.c = c};
    int first, rc;
    bool pull = false;
    if (ctl_parse(c, argc, argv, "T:", lo, create_help, create_opt, &o, &first, &rc) == 0) {
        if (argc - first != 3)
            rc = ctl_usage(c, "needs POD-ID CONTAINER-CONFIG POD-CONFIG (see sluicectl create "
                              "--help)");
        else if ((rc = cu_want_pull(c, &o.p, c->pull_on_create, &pull)) == 0)
            rc = create(c, &o, pull, argv + first);
    }
    cu_pull_fini(&o.p);
    return rc;
}

/* ---- start / stop / rm ---- */

static const char start_help[] = "Usage: sluicectl start CONTAINER-ID...\n"
                                 "\n"
                                 "Starts created containers (ID, unique ID prefix or name).\n"
                                 "\n"
                                 "  -h, --help   this help\n";

int cu_start_ctr(ctl *c, const char *id, sl_error *e)
{
    Runtime__V1__StartContainerRequest req = RUNTIME__V1__START_CONTAINER_REQUEST__INIT;
    req.container_id = (char *)id;
    void *r = ctl_rt_call_slow(c, "StartContainer", &req.base,
                               &runtime__v1__start_container_response__descriptor, e);
    if (!r)
        return -1;
    ctl_free_msg(r);
    puts(id);
    return 0;
}

static int start_one(ctl *c, const char *id, void *arg, sl_error *e)
{
    (void)arg;
    return cu_start_ctr(c, id, e);
}

int cmd_start(ctl *c, int argc, char **argv)
{
    return cu_plain_cmd(c, argc, argv, start_help,
                        "needs at least one CONTAINER-ID (see sluicectl start --help)", CU_CTR,
                        start_one);
}

static const char stop_help[] =
    "Usage: sluicectl stop [-t SECONDS] CONTAINER-ID...\n"
    "\n"
    "Stops running containers: SIGTERM, then SIGKILL after the grace period.\n"
    "\n"
    "  -t, --timeout SECONDS   grace period (default 0: kill at once)\n"
    "  -h, --help              this help\n";

typedef struct stop_arg {
    ctl *c;
    uint64_t grace;
} stop_arg;

static int stop_opt(void *arg, int id, const char *val)
{
    stop_arg *s = arg;
    (void)id;
    return ctl_parse_uint(s->c, "--timeout", val, 86400, &s->grace);
}

static int stop_ctr(ctl *c, const char *id, uint64_t grace, sl_error *e)
{
    Runtime__V1__StopContainerRequest req = RUNTIME__V1__STOP_CONTAINER_REQUEST__INIT;
    req.container_id = (char *)id;
    req.timeout = (int64_t)grace;
    ProtobufCMessage *r;
    sl_error ce;
    /* The call lasts as long as the grace period, plus the usual timeout. */
    int st = ctl_call_raw(c, false, "StopContainer", &req.base,
                          &runtime__v1__stop_container_response__descriptor, &r,
                          CTL_SLOW_TIMEOUT_MS + c->timeout_ms + (uint32_t)grace * 1000u, &ce, e);
    if (st != SL_CRI_OK)
        return -1;
    ctl_free_msg(r);
    return 0;
}

static int stop_one(ctl *c, const char *id, void *arg, sl_error *e)
{
    if (stop_ctr(c, id, ((stop_arg *)arg)->grace, e) < 0)
        return -1;
    puts(id);
    return 0;
}

int cmd_stop(ctl *c, int argc, char **argv)
{
    static const struct option lo[] = {
        {"timeout", required_argument, NULL, 't'}, CTL_OPT_HELP, CTL_OPT_END};
    stop_arg s = {c, 0};
    int first, rc;
    if (ctl_parse(c, argc, argv, "t:", lo, stop_help, stop_opt, &s, &first, &rc))
        return rc;
    return cu_each_arg(c, argc, argv, first,
                       "needs at least one CONTAINER-ID (see sluicectl stop --help)", CU_CTR,
                       stop_one, &s);
}

static const char rm_help[] =
    "Usage: sluicectl rm [-f] [-a] [-k] [CONTAINER-ID...]\n"
    "\n"
    "Removes containers (ID, unique ID prefix or name) and, as crictl does, their\n"
    "log file and its rotations (LOG.*). A running container is refused unless -f.\n"
    "\n"
    "  -f, --force       stop a running container first\n"
    "  -a, --all         remove every container\n"
    "  -k, --keep-logs   keep the log file and its rotations\n"
    "  -h, --help        this help\n";

typedef struct rm_arg {
    bool force, all, keep_logs;
} rm_arg;

static int rm_opt(void *arg, int id, const char *val)
{
    (void)val;
    rm_arg *o = arg;
    if (id == 'f')
        o->force = true;
    else if (id == 'k')
        o->keep_logs = true;
    else
        o->all = true;
    return 0;
}

/* The log file and its rotations (path.*), as crictl removes them. The
 * container is gone by then: a file left is a warning, not a failure. */
static void remove_logs(ctl *c, const char *id, const char *path)
{
    char pat[PATH_MAX + 4];
    glob_t g = {0};
    snprintf(pat, sizeof pat, "%s.*", path);
    if (glob(pat, GLOB_NOSORT, NULL, &g) != 0)
        g.gl_pathc = 0;
    for (size_t i = 0; i <= g.gl_pathc; i++) {
        const char *f = i < g.gl_pathc ? g.gl_pathv[i] : path;
        if (unlink(f) < 0 && errno != ENOENT)
            ctl_warn(c, "removing log file %s of container %s: %s", f, id, strerror(errno));
    }
    globfree(&g);
}

static int rm_one(ctl *c, const char *id, void *arg, sl_error *e)
{
    rm_arg *o = arg;
    Runtime__V1__ContainerStatusRequest sreq = RUNTIME__V1__CONTAINER_STATUS_REQUEST__INIT;
    sreq.container_id = (char *)id;
    Runtime__V1__ContainerStatusResponse *s = (void *)ctl_rt_call(
        c, "ContainerStatus", &sreq.base, &runtime__v1__container_status_response__descriptor, e);
    if (s && !s->status)
        sl_error_set(e, 0, "ContainerStatus: the runtime answered no status for container %s", id);
    if (!s || !s->status) {
        ctl_free_msg(s);
        return -1;
    }
    int rc = -1;
    bool running = s->status->state == RUNTIME__V1__CONTAINER_STATE__CONTAINER_RUNNING;
    if (running && !o->force)
        sl_error_set(e, 0, "container %s is running: stop it first, or rm -f", id);
    else if (!running || stop_ctr(c, id, 0, e) == 0) {
        Runtime__V1__RemoveContainerRequest req = RUNTIME__V1__REMOVE_CONTAINER_REQUEST__INIT;
        req.container_id = (char *)id;
        void *r = ctl_rt_call_slow(c, "RemoveContainer", &req.base,
                                   &runtime__v1__remove_container_response__descriptor, e);
        ctl_free_msg(r);
        if (r) {
            puts(id);
            if (!o->keep_logs && s->status->log_path && *s->status->log_path)
                remove_logs(c, id, s->status->log_path);
            rc = 0;
        }
    }
    ctl_free_msg(s);
    return rc;
}

int cmd_rm(ctl *c, int argc, char **argv)
{
    static const struct option lo[] = {{"force", no_argument, NULL, 'f'},
                                       {"all", no_argument, NULL, 'a'},
                                       {"keep-logs", no_argument, NULL, 'k'},
                                       CTL_OPT_HELP,
                                       CTL_OPT_END};
    rm_arg o = {0};
    int first, rc;
    if (ctl_parse(c, argc, argv, "fak", lo, rm_help, rm_opt, &o, &first, &rc))
        return rc;
    if (!o.all && first >= argc)
        return ctl_usage(c, "needs at least one CONTAINER-ID, or -a (see sluicectl rm --help)");
    if (!o.all)
        return cu_each(c, argc - first, argv + first, CU_CTR, rm_one, &o);
    Runtime__V1__ListContainersRequest req = RUNTIME__V1__LIST_CONTAINERS_REQUEST__INIT;
    sl_error e;
    Runtime__V1__ListContainersResponse *r = (void *)ctl_rt_call(
        c, "ListContainers", &req.base, &runtime__v1__list_containers_response__descriptor, &e);
    if (!r)
        return ctl_fail(c, &e);
    rc = 0;
    for (size_t i = 0; i < r->n_containers; i++)
        if (rm_one(c, r->containers[i]->id, &o, &e) < 0)
            rc = ctl_fail(c, &e);
    ctl_free_msg(r);
    return rc;
}

/* ---- inspect ---- */

static const char inspect_help[] =
    "Usage: sluicectl inspect [-o json|yaml|table] [-q] CONTAINER-ID...\n"
    "\n"
    "Shows the status of containers (verbose ContainerStatus: {\"status\": ...,\n"
    "\"info\": ...}).\n"
    "\n"
    "  -o, --output FORMAT   json (default), yaml or table\n"
    "  -q, --quiet           the status only, not the runtime's verbose info\n"
    "  -h, --help            this help\n";

static void ctr_status_table(const Runtime__V1__ContainerStatus *s)
{
    char ago[64];
    ctl_ago(s->created_at, ago, sizeof ago);
    printf("ID: %s\n", s->id);
    if (s->metadata)
        printf("Name: %s\nAttempt: %u\n", s->metadata->name, s->metadata->attempt);
    printf("State: %s\nCreated: %s\n", ctl_ctr_state(s->state), ago);
    if (s->image)
        printf("Image: %s\n", s->image->image);
    printf("ImageRef: %s\n", s->image_ref);
    if (s->finished_at)
        printf("Exit Code: %d\n", s->exit_code);
    if (s->reason && *s->reason)
        printf("Reason: %s\n", s->reason);
    printf("LogPath: %s\n", s->log_path);
    cu_print_map("Labels", (void *)s->labels, s->n_labels);
    cu_print_map("Annotations", (void *)s->annotations, s->n_annotations);
}

static int inspect_one(ctl *c, const char *id, void *arg, sl_error *e)
{
    const cu_inspect *o = arg;
    ctl_out out = o->out;
    Runtime__V1__ContainerStatusRequest req = RUNTIME__V1__CONTAINER_STATUS_REQUEST__INIT;
    req.container_id = (char *)id;
    req.verbose = out != CTL_OUT_TABLE && !o->quiet;
    Runtime__V1__ContainerStatusResponse *r = (void *)ctl_rt_call(
        c, "ContainerStatus", &req.base, &runtime__v1__container_status_response__descriptor, e);
    if (!r)
        return -1;
    if (out == CTL_OUT_TABLE && r->status)
        ctr_status_table(r->status);
    else
        cu_print_status(&r->base, o);
    ctl_free_msg(r);
    return 0;
}

int cmd_inspect(ctl *c, int argc, char **argv)
{
    return cu_inspect_cmd(c, argc, argv, inspect_help,
                          "needs at least one CONTAINER-ID (see sluicectl inspect --help)", CU_CTR,
                          inspect_one);
}
