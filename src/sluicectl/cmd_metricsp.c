/* metricsp: CRI ListPodSandboxMetrics, as `crictl metricsp`: the pods'
 * cAdvisor-named metrics as JSON (default) or YAML, once or every
 * CU_WATCH_PERIOD_MS with -w until interrupted. */
#include <stdio.h>

#include "cmd_util.h"

static const char metricsp_help[] =
    "Usage: sluicectl metricsp [-o json|yaml] [-w]\n"
    "\n"
    "Shows the pods' metrics (CRI ListPodSandboxMetrics): the cAdvisor-named\n"
    "metrics of each pod's containers and interfaces, with their labels.\n"
    "\n"
    "  -o, --output FORMAT   json (default) or yaml\n"
    "  -w, --watch           repeat until interrupted (YAML documents start with ---)\n"
    "  -h, --help            this help\n";

typedef struct metricsp_opts {
    ctl *c;
    ctl_out out;
    bool watch;
} metricsp_opts;

static int metricsp_opt(void *arg, int id, const char *val)
{
    metricsp_opts *o = arg;
    if (id == 'w') {
        o->watch = true;
        return 0;
    }
    return ctl_parse_out(o->c, val, &o->out, false);
}

static int show(metricsp_opts *o)
{
    sl_error e;
    Runtime__V1__ListPodSandboxMetricsRequest req =
        RUNTIME__V1__LIST_POD_SANDBOX_METRICS_REQUEST__INIT;
    Runtime__V1__ListPodSandboxMetricsResponse *r =
        (void *)ctl_rt_call(o->c, "ListPodSandboxMetrics", &req.base,
                            &runtime__v1__list_pod_sandbox_metrics_response__descriptor, &e);
    if (!r)
        return ctl_fail(o->c, &e);
    if (o->watch && o->out == CTL_OUT_YAML)
        fputs("---\n", stdout);
    cu_print_msg(&r->base, o->out);
    ctl_free_msg(r);
    /* a reader that went away (SIGPIPE is ignored) ends the watch */
    return fflush(stdout) != 0 || ferror(stdout) ? CTL_EXIT_FAIL : 0;
}

int cmd_metricsp(ctl *c, int argc, char **argv)
{
    static const struct option lo[] = {{"output", required_argument, NULL, 'o'},
                                       {"watch", no_argument, NULL, 'w'},
                                       CTL_OPT_HELP,
                                       CTL_OPT_END};
    metricsp_opts o = {.c = c, .out = CTL_OUT_JSON};
    int first, rc;
    if (ctl_parse(c, argc, argv, "o:w", lo, metricsp_help, metricsp_opt, &o, &first, &rc))
        return rc;
    if (first < argc)
        return ctl_usage(c, "takes no arguments (see sluicectl metricsp --help)");
    if (o.watch)
        cu_catch_interrupts();
    do
        rc = show(&o);
    while (rc == 0 && o.watch && cu_sleep_ms(CU_WATCH_PERIOD_MS));
    return rc;
}
