/* run: a pod sandbox, a container in it, started; as `crictl run`
 * (RunPodSandbox, PullImage unless told not to, CreateContainer,
 * StartContainer), printing the container's ID. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_util.h"

static const char run_help[] =
    "Usage: sluicectl run [FLAGS] CONTAINER-CONFIG.[json|yaml] POD-CONFIG.[json|yaml]\n"
    "\n"
    "Runs a new pod sandbox from POD-CONFIG, creates the container of\n"
    "CONTAINER-CONFIG in it and starts it; prints the container's ID. The image\n"
    "is pulled first when the runtime lacks it (unless --no-pull, or\n"
    "disable-pull-on-run: true in the config file). When a step after the pod\n"
    "fails, the pod is left and named: sluicectl rmp -f POD removes it.\n"
    "\n"
    "  -r, --runtime HANDLER         runtime handler (default: the runtime's default)\n"
    "      --with-pull               pull a missing image (overrides disable-pull-on-run)\n"
    "      --no-pull                 do not pull\n"
    "      --creds USER[:PASSWORD]   registry credentials for the pull\n"
    "      --auth AUTH               base64 of USER[:PASSWORD]\n"
    "      --username USER           registry user; the password is read from stdin\n"
    "      --pull-timeout, --pt D    deadline of the pull (default 0: none)\n"
    "  -T, --cancel-timeout D        deadline of RunPodSandbox and CreateContainer each\n"
    "                                (default 60 s, or the global timeout when longer)\n"
    "  -h, --help                    this help\n";

typedef struct run_opts {
    ctl *c;
    cu_pull p;
    const char *handler;
} run_opts;

static int run_opt(void *arg, int id, const char *val)
{
    run_opts *o = arg;
    if (id == 'r') {
        o->handler = val;
        return 0;
    }
    return cu_pull_opt(o->c, &o->p, id == 'T' ? CU_CANCEL_TIMEOUT : id, val) ? -1 : 0;
}

static int run(ctl *c, run_opts *o, bool pull, const char *ctr_file, const char *pod_file)
{
    ctl_arena *a = ctl_arena_new();
    sl_error e;
    Runtime__V1__ContainerConfig *cfg =
        (void *)ctl_doc_load(ctr_file, &runtime__v1__container_config__descriptor, a, &e);
    Runtime__V1__PodSandboxConfig *pcfg =
        cfg ? (void *)ctl_doc_load(pod_file, &runtime__v1__pod_sandbox_config__descriptor, a, &e)
            : NULL;
    char *pod = cfg && pcfg ? cu_run_pod(c, pcfg, o->handler, o->p.cancel_ms, &e) : NULL;
    char *id = pod ? cu_create_ctr(c, &o->p, pull, pod, cfg, pcfg, &e) : NULL;
    int rc = id && cu_start_ctr(c, id, &e) == 0 ? 0 : CTL_EXIT_FAIL;
    if (rc && pod) { /* one report: what failed, then what it left */
        size_t n = strlen(e.msg);
        snprintf(e.msg + n, sizeof e.msg - n,
                 "\n  pod sandbox %s was left behind (sluicectl rmp -f %s removes it)", pod, pod);
    }
    if (rc)
        ctl_fail(c, &e);
    free(id);
    free(pod);
    ctl_arena_free(a);
    return rc;
}

int cmd_run(ctl *c, int argc, char **argv)
{
    static const struct option lo[] = {
        {"runtime", required_argument, NULL, 'r'}, CU_PULL_CREATE_OPTS, CTL_OPT_HELP, CTL_OPT_END};
    run_opts o = {.c = c};
    int first, rc;
    bool pull = false;
    if (ctl_parse(c, argc, argv, "r:T:", lo, run_help, run_opt, &o, &first, &rc) == 0) {
        if (argc - first != 2)
            rc = ctl_usage(c, "needs CONTAINER-CONFIG and POD-CONFIG (see sluicectl run --help)");
        else if ((rc = cu_want_pull(c, &o.p, !c->no_pull_on_run, &pull)) == 0)
            rc = run(c, &o, pull, argv[first], argv[first + 1]);
    }
    cu_pull_fini(&o.p);
    return rc;
}
